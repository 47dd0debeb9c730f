package io.strata.node;

import java.util.List;
import java.util.Objects;

/**
 * How a node joins a cluster of nodes (docs/API.md, "Clustered nodes"): the address of this
 * host's cluster traffic (its private network), the addresses of the members to join (TCP, no
 * multicast), the cluster's port and its name. A node without these runs alone.
 *
 * @param host this host's address on the cluster network; cluster traffic binds to it alone
 * @param members addresses of the hosts of the cluster (this one may be among them)
 * @param port the cluster (Hazelcast) port, the same on every host
 * @param name the cluster's name: nodes of another name do not join
 */
public record ClusterSettings(String host, List<String> members, int port, String name) {
  public static final int DEFAULT_PORT = 5701;

  public ClusterSettings {
    Objects.requireNonNull(host, "cluster host");
    members = List.copyOf(members);
    if (host.isBlank()) {
      throw new IllegalArgumentException("the cluster host must be an address");
    }
    if (members.isEmpty()) {
      throw new IllegalArgumentException("a cluster needs its members' addresses (\"members\")");
    }
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("the cluster port must be in 1..65535, got " + port);
    }
    if (name == null || !name.matches("[A-Za-z0-9_.-]{1,64}")) {
      throw new IllegalArgumentException("the cluster name must be 1-64 letters, digits, '_', '.' or '-', got '" + name + "'");
    }
  }
}
