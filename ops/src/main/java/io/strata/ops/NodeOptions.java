package io.strata.ops;

import io.strata.node.NodeConfig;
import io.strata.sdk.node.NodeClient;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** The options of every command that talks to a cache node: where it is and how to authenticate. */
final class NodeOptions {
  @Option(names = "--node", paramLabel = "URL",
      description = "Node URL (default: $STRATA_NODE, the node started from the default home, or http://127.0.0.1:7070).")
  String node;

  @Option(names = "--token-file", paramLabel = "FILE",
      description = "File holding the node's token for changes (default: $STRATA_TOKEN).")
  Path tokenFile;

  /** A client of the node these options name. */
  NodeClient client() throws IOException {
    String token = System.getenv("STRATA_TOKEN");
    if (tokenFile != null) {
      if (!Files.isRegularFile(tokenFile)) {
        throw new NoSuchFileException(tokenFile.toString(), null, "no token file");
      }
      NodeConfig.requirePrivate(tokenFile, "token file");
      token = Files.readString(tokenFile, StandardCharsets.UTF_8).strip();
      if (token.isEmpty()) {
        throw new IllegalArgumentException("token file " + tokenFile + " is empty");
      }
    }
    return new NodeClient(NodeCommand.nodeUrl(node), token == null || token.isBlank() ? null : token);
  }
}
