package io.strata.ops;

import io.strata.ops.common.Messages;
import io.strata.sdk.files.Locations;
import io.strata.sdk.node.NodeClient;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import java.util.ServiceLoader;
import picocli.CommandLine.Command;
import picocli.CommandLine;

/** The {@code strata} command. */
@Command(
    name = "strata",
    mixinStandardHelpOptions = true,
    versionProvider = Main.Version.class,
    description = "Strata: a tiered feature cache for machine-learning training.",
    subcommands = {
      NodeCommand.class,
      TierCommand.class,
      PolicyCommand.class,
      PinCommands.Pin.class,
      PinCommands.Unpin.class,
      PromoteCommand.class,
      PinCommands.Evict.class,
      DatasetCommand.class,
      FeaturesCommand.class,
      LoaderCommand.class,
      SegmentCommand.class,
      DemoCommand.class
    })
public final class Main implements Runnable {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  /** Exit code of a failed command. */
  public static final int FAILURE = Messages.FAILURE;

  /** Exit code of wrong usage. */
  public static final int USAGE = Messages.USAGE;

  /** {@code strata} alone: the help. */
  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  /** Runs the command line and returns its exit code. */
  public static int run(String[] args, PrintWriter out, PrintWriter err) {
    CommandLine cli = new CommandLine(new Main());
    // Commands of other packages (the benchmarks, the soak) come through the service loader: the
    // command line does not depend on them, they depend on it.
    for (CommandProvider p : ServiceLoader.load(CommandProvider.class)) {
      for (Object command : p.commands()) {
        cli.addSubcommand(command);
      }
    }
    cli.addSubcommand(new CommandLine.HelpCommand());
    cli.setOut(out);
    cli.setErr(err);
    cli.setCaseInsensitiveEnumValuesAllowed(true);
    // Every path option also takes a file:// URI; other file systems are refused by name.
    cli.registerConverter(Path.class, Locations::local);
    cli.setParameterExceptionHandler(
        (ex, a) -> {
          CommandLine c = ex.getCommandLine();
          c.getErr().println("strata: " + usageMessage(ex));
          c.getErr().println("Try '" + c.getCommandSpec().qualifiedName() + " --help' for more information.");
          c.getErr().flush();
          return USAGE;
        });
    cli.setExecutionExceptionHandler(
        (ex, c, parsed) -> {
          c.getErr().println("strata: " + describe(ex));
          if (System.getenv("STRATA_DEBUG") != null) {
            ex.printStackTrace(c.getErr());
          }
          c.getErr().flush();
          return exitCode(ex);
        });
    return cli.execute(args);
  }

  /**
   * The usage error in one line; an unknown command or option names the closest ones (picocli's
   * suggestions) or, for a command, the commands there are.
   */
  static String usageMessage(CommandLine.ParameterException ex) {
    if (ex instanceof CommandLine.UnmatchedArgumentException u && !u.getUnmatched().isEmpty()) {
      String arg = u.getUnmatched().getFirst();
      CommandLine c = u.getCommandLine();
      List<String> near = u.getSuggestions();
      if (arg.startsWith("-")) {
        return "unknown option '" + arg + "' for '" + c.getCommandSpec().qualifiedName() + "'"
            + (near.isEmpty() ? "" : " (did you mean " + String.join(" or ", near) + "?)");
      }
      if (!c.getSubcommands().isEmpty()) {
        List<String> names = c.getSubcommands().keySet().stream().filter(n -> !n.equals("help")).toList();
        return "unknown command '" + arg + "' for '" + c.getCommandSpec().qualifiedName() + "'"
            + (near.isEmpty() ? " (commands: " + String.join(", ", names) + ")"
                : " (did you mean " + String.join(" or ", near) + "?)");
      }
      return "unexpected argument '" + arg + "' for '" + c.getCommandSpec().qualifiedName() + "'";
    }
    return ex.getMessage();
  }

  /**
   * 2 for wrong usage: a bad argument here, or one the node refused as bad (400) or unknown
   * (404: no such dataset, feature or chunk); 1 for every other failure.
   */
  static int exitCode(Exception ex) {
    if (ex instanceof UncheckedIOException u && u.getCause() != null) {
      return exitCode(u.getCause());
    }
    if (ex instanceof IllegalArgumentException) {
      return USAGE;
    }
    if (ex instanceof NodeClient.NodeRequestException r && (r.status() == 400 || r.status() == 404)) {
      return USAGE;
    }
    return FAILURE;
  }

  /** One line naming the problem, without a stack trace (see {@link Messages#describe}). */
  static String describe(Throwable ex) {
    return Messages.describe(ex);
  }

  public static void main(String[] args) {
    ProcessTemp.claim(); // first: libraries unpack into the temporary directory as they load
    PrintWriter out = new PrintWriter(System.out, true, java.nio.charset.Charset.defaultCharset());
    PrintWriter err = new PrintWriter(System.err, true, java.nio.charset.Charset.defaultCharset());
    int code;
    try {
      code = run(args, out, err);
    } catch (OutOfMemoryError e) {
      err.println(
          "strata: out of Java heap (max " + Runtime.getRuntime().maxMemory() / (1 << 20)
              + " MiB); ORC decoding holds one stripe on the heap: raise it with STRATA_JAVA_OPTS=-Xmx...");
      code = FAILURE;
    }
    out.flush();
    err.flush();
    System.exit(code);
  }

  /** The version, from the jar manifest when packaged. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = Main.class.getPackage().getImplementationVersion();
      return new String[] {"strata " + (v == null ? "0.1.0-SNAPSHOT" : v)};
    }
  }
}
