package io.strata.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;
import org.apache.hadoop.hdfs.server.datanode.DataNode;

/**
 * The processes behind {@link HdfsLab}: a real HDFS from Hadoop's own daemons, each role a JVM of
 * its own, meant to run in a host of their own (a network namespace of {@link ClusterLab}, whose
 * only interfaces are its loopback and its link to the lab) and reached by the other hosts at that
 * host's {@code --address}.
 *
 * <ul>
 *   <li>{@code namenode --address IP --base DIR --block-size BYTES}: a NameNode (the minicluster's,
 *       started with no DataNodes of its own), its RPC server on every address of its host.
 *   <li>{@code datanode --namenode URI --base DIR}: a DataNode ({@link DataNode#createDataNode})
 *       registering with that NameNode, its data-transfer server on every address of its host; the
 *       NameNode hands it to clients by the address it connected from, the host's.
 * </ul>
 *
 * <p>Protocol (lines): on stdout {@code strata-hdfs ready [uri]} once the daemon serves, then one
 * {@code strata-hdfs ok <command>} or {@code strata-hdfs error <command>: <reason>} per command read
 * from stdin. The NameNode takes {@code await-datanodes <n>} (until n DataNodes are live), {@code
 * put <local-dir> <hdfs-dir>} (a copy, every block on every live DataNode) and {@code
 * restart-namenode} (stopped and started again on the same port; answered once it is active).
 * End of stdin shuts a daemon down; killing it (SIGKILL) is the other way, and the point of a
 * process per DataNode. Hadoop's own logging goes nowhere (slf4j-nop on the class path) or to
 * stderr.
 *
 * <p>Threads: main alone (Hadoop's daemons run their own).
 */
public final class HdfsDaemons {
  static final String PREFIX = "strata-hdfs ";

  private HdfsDaemons() {}

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    String role = args.length > 0 ? args[0] : "";
    String address = null;
    String nameNode = null;
    Path base = null;
    long blockSize = 8L << 20;
    for (int i = 1; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--address" -> address = args[i + 1];
        case "--namenode" -> nameNode = args[i + 1];
        case "--base" -> base = Path.of(args[i + 1]);
        case "--block-size" -> blockSize = Long.parseLong(args[i + 1]);
        default -> usage(out, "unknown argument " + args[i]);
      }
    }
    if (base == null) {
      usage(out, "--base is required");
    }
    switch (role) {
      case "namenode" -> {
        if (address == null) {
          usage(out, "--address is required");
        }
        nameNode(out, address, base, blockSize);
      }
      case "datanode" -> {
        if (nameNode == null) {
          usage(out, "--namenode is required");
        }
        dataNode(out, nameNode, base);
      }
      default -> usage(out, "the role is namenode or datanode, not '" + role + "'");
    }
  }

  private static void usage(PrintStream out, String why) {
    out.println(PREFIX + "error " + why);
    System.exit(2);
  }

  private static void nameNode(PrintStream out, String address, Path base, long blockSize) throws Exception {
    Configuration conf = new Configuration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.toString());
    conf.setLong("dfs.blocksize", blockSize);
    conf.set("dfs.namenode.rpc-bind-host", "0.0.0.0");
    // The lab's addresses have no names; the NameNode must not refuse a DataNode for that.
    conf.setBoolean("dfs.namenode.datanode.registration.ip-hostname-check", false);
    MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf).numDataNodes(0).build();
    try {
      String uri = "hdfs://" + address + ":" + cluster.getNameNodePort();
      out.println(PREFIX + "ready " + uri);
      Configuration client = new Configuration(conf);
      client.set("fs.defaultFS", uri);
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      for (String line; (line = in.readLine()) != null; ) {
        String c = line.strip();
        String[] w = c.split("\\s+");
        try {
          switch (w[0]) {
            case "await-datanodes" -> awaitDataNodes(URI.create(uri), client, Integer.parseInt(w[1]));
            case "put" -> put(URI.create(uri), client, Path.of(w[1]), w[2]);
            case "restart-namenode" -> cluster.restartNameNode(true);
            default -> throw new IllegalArgumentException("unknown command " + w[0]);
          }
          out.println(PREFIX + "ok " + c);
        } catch (RuntimeException | IOException e) {
          out.println(PREFIX + "error " + c + ": " + e);
        }
      }
    } finally {
      cluster.shutdown(true);
    }
  }

  private static void awaitDataNodes(URI uri, Configuration conf, int n) throws IOException, InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    try (FileSystem fs = FileSystem.newInstance(uri, conf)) {
      while (((DistributedFileSystem) fs).getDataNodeStats(DatanodeReportType.LIVE).length < n) {
        if (System.nanoTime() > end) {
          throw new IOException("fewer than " + n + " DataNodes registered within 120 s");
        }
        Thread.sleep(100);
      }
    }
  }

  private static void put(URI uri, Configuration conf, Path local, String dir) throws IOException {
    Configuration c = new Configuration(conf);
    try (FileSystem fs = FileSystem.newInstance(uri, c)) {
      int live = ((DistributedFileSystem) fs).getDataNodeStats(DatanodeReportType.LIVE).length;
      c.setInt("dfs.replication", live);
      try (FileSystem writer = FileSystem.newInstance(uri, c)) {
        org.apache.hadoop.fs.Path to = new org.apache.hadoop.fs.Path(dir);
        writer.mkdirs(to.getParent());
        writer.copyFromLocalFile(false, true, new org.apache.hadoop.fs.Path(local.toUri()), to);
      }
    }
  }

  private static void dataNode(PrintStream out, String nameNode, Path base) throws Exception {
    Configuration conf = new Configuration();
    conf.set("fs.defaultFS", nameNode);
    conf.set("dfs.datanode.data.dir", base.resolve("data").toUri().toString());
    conf.set("dfs.datanode.address", "0.0.0.0:0");
    conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
    conf.set("dfs.datanode.http.address", "127.0.0.1:0");
    DataNode dn = DataNode.createDataNode(new String[0], conf);
    try {
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
      while (!dn.isDatanodeFullyStarted()) {
        if (System.nanoTime() > end) {
          throw new IOException("the DataNode did not register with " + nameNode + " within 120 s");
        }
        Thread.sleep(100);
      }
      out.println(PREFIX + "ready");
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      while (in.readLine() != null) {
        out.println(PREFIX + "error a DataNode takes no commands");
      }
    } catch (IOException e) {
      out.println(PREFIX + "error " + e);
      throw e;
    } finally {
      dn.shutdown();
    }
  }
}
