package dev.gpushare.e2e;

import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The cluster's network as the control plane reaches it, on loopback: what kube-proxy and cluster
 * DNS do for a real API server and kube-scheduler. It is an HTTP {@code CONNECT} proxy that
 * resolves a Service — by its cluster IP ({@code 10.96.x.y:443}, what the API server dials for a
 * webhook's {@code clientConfig.service}) or by its DNS name ({@code name.ns.svc:port}, what the
 * scheduler's extender URL names) — to the Service's {@code targetPort}, and sends the connection
 * to the loopback port of the process that plays the pod serving that port ({@link #route}).
 *
 * <p>The API server reaches it through its egress selector (network context {@code cluster}, over
 * the Unix socket {@link #socket()}); other components through {@code HTTPS_PROXY} ({@link
 * #tcpPort()}). Nothing is rewritten: the TLS inside the tunnel is end to end, so the caller checks
 * the server's certificate against the Service's name exactly as in a cluster. Every {@code
 * CONNECT} is recorded ({@link #connects()}).
 *
 * <p>Where a real node is attached ({@link #attach}, {@link RealNode}), its pods are real: a
 * Service without a loopback route goes to a ready endpoint of its EndpointSlices (the pod's IP and
 * port, as kube-proxy would send it), and an address of the node's own (the kubelet's, a pod's) is
 * dialled as it is — both through the node's network ({@link NodeNetwork#dial}).
 */
final class ClusterNetwork implements AutoCloseable {

  /**
   * One {@code CONNECT}: the target asked for, and the loopback port it went to (0: refused, or a
   * node's address: {@code endpoint} then says which).
   */
  record Connect(
      String target, String service, int loopbackPort, String endpoint, String refusal) {}

  /** A node's network, where its kubelet and pods are reached (a network namespace of its own). */
  interface NodeNetwork {
    /** Whether {@code ip} is the node's or one of its pods'. */
    boolean owns(String ip);

    /** A connection to {@code ip:port} inside the node's network. */
    SocketChannel dial(String ip, int port) throws IOException;
  }

  private volatile KubernetesClient admin;
  private final Path socket;
  private final ServerSocketChannel unix;
  private final ServerSocketChannel tcp;
  private final Map<String, Integer> routes = new ConcurrentHashMap<>();
  private final List<NodeNetwork> nodes = new CopyOnWriteArrayList<>();
  private final List<Connect> connects = new CopyOnWriteArrayList<>();
  private final List<SocketChannel> open = new CopyOnWriteArrayList<>();
  private volatile boolean closed;

  ClusterNetwork(KubernetesClient admin, Path socket) {
    this.admin = admin;
    this.socket = socket;
    try {
      Files.deleteIfExists(socket);
      unix = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
      unix.bind(UnixDomainSocketAddress.of(socket));
      tcp = ServerSocketChannel.open();
      tcp.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    } catch (IOException e) {
      throw new UncheckedIOException("cluster network on " + socket, e);
    }
    acceptLoop(unix, "cluster-network-unix");
    acceptLoop(tcp, "cluster-network-tcp");
  }

  /** The client that reads Services (the API server's own, once it is up). */
  void useClient(KubernetesClient client) {
    this.admin = client;
  }

  /** The Unix socket of the API server's egress selector. */
  Path socket() {
    return socket;
  }

  /** The loopback port for {@code HTTPS_PROXY=http://127.0.0.1:PORT}. */
  int tcpPort() {
    return ((InetSocketAddress) localAddress(tcp)).getPort();
  }

  /**
   * Connections to Service {@code namespace/service} on any of its ports whose {@code targetPort}
   * is {@code targetPort} (a container port's name or number, as the Service writes it) go to
   * {@code 127.0.0.1:loopbackPort}: that process plays the pod behind the Service.
   */
  void route(String namespace, String service, String targetPort, int loopbackPort) {
    routes.put(key(namespace, service, targetPort), loopbackPort);
  }

  /** Connections to {@code node}'s addresses, and to Services' endpoints there, go through it. */
  void attach(NodeNetwork node) {
    nodes.add(node);
  }

  void detach(NodeNetwork node) {
    nodes.remove(node);
  }

  /** Every {@code CONNECT} so far, in order. */
  List<Connect> connects() {
    return List.copyOf(connects);
  }

  @Override
  public void close() {
    closed = true;
    for (var c : List.of(unix, tcp)) {
      try {
        c.close();
      } catch (IOException e) {
        // closing anyway
      }
    }
    for (SocketChannel c : open) {
      try {
        c.close();
      } catch (IOException e) {
        // closing anyway
      }
    }
    try {
      Files.deleteIfExists(socket);
    } catch (IOException e) {
      // the test's temporary directory goes anyway
    }
  }

  // ---------------------------------------------------------------- the proxy

  private void acceptLoop(ServerSocketChannel server, String name) {
    Thread t =
        new Thread(
            () -> {
              while (!closed) {
                SocketChannel client;
                try {
                  client = server.accept();
                } catch (IOException e) {
                  return; // closed
                }
                open.add(client);
                Thread c = new Thread(() -> serve(client), name + "-connection");
                c.setDaemon(true);
                c.start();
              }
            },
            name);
    t.setDaemon(true);
    t.start();
  }

  private void serve(SocketChannel client) {
    SocketChannel upstream = null;
    try {
      String head = readHead(client);
      String[] request = head.split("\r\n", 2)[0].split(" ");
      if (request.length < 2 || !request[0].equals("CONNECT")) {
        reply(client, "405 Method Not Allowed", "only CONNECT: " + request[0]);
        return;
      }
      String target = request[1];
      Resolution r = resolve(target);
      connects.add(
          new Connect(
              target,
              r.service,
              r.node == null ? r.port : 0,
              r.node == null ? null : r.ip + ":" + r.port,
              r.refusal));
      if (r.port == 0) {
        reply(client, "502 Bad Gateway", r.refusal);
        return;
      }
      try {
        upstream =
            r.node != null
                ? r.node.dial(r.ip, r.port)
                : SocketChannel.open(
                    new InetSocketAddress(InetAddress.getLoopbackAddress(), r.port));
      } catch (IOException e) {
        reply(client, "502 Bad Gateway", "cannot reach " + r.ip + ":" + r.port + ": " + e);
        return;
      }
      open.add(upstream);
      client.write(
          ByteBuffer.wrap(
              "HTTP/1.1 200 Connection established\r\n\r\n".getBytes(StandardCharsets.US_ASCII)));
      SocketChannel up = upstream;
      Thread back = new Thread(() -> pipe(up, client), "cluster-network-pipe");
      back.setDaemon(true);
      back.start();
      pipe(client, upstream);
      back.join(60_000); // the answer to what the client sent before it half-closed
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (IOException | RuntimeException e) {
      // the peer went away, or the network is closing
    } finally {
      closeQuietly(client);
      if (upstream != null) {
        closeQuietly(upstream);
      }
    }
  }

  /** Where a connection goes: a loopback port ({@code node} null), or {@code ip:port} on a node. */
  private record Resolution(String service, int port, NodeNetwork node, String ip, String refusal) {
    Resolution(String service, int port, String refusal) {
      this(service, port, null, null, refusal);
    }
  }

  /** {@code host:port} to the loopback port of the Service's target, or why not. */
  private Resolution resolve(String target) {
    int colon = target.lastIndexOf(':');
    if (colon < 0) {
      return new Resolution("", 0, "no port in " + target);
    }
    String bare = target.substring(0, colon).replace("[", "").replace("]", "");
    for (NodeNetwork node : nodes) {
      if (node.owns(bare)) {
        try {
          return new Resolution(
              "", Integer.parseInt(target.substring(colon + 1)), node, bare, null);
        } catch (NumberFormatException e) {
          return new Resolution("", 0, "bad port in " + target);
        }
      }
    }
    String host = target.substring(0, colon);
    int port;
    try {
      port = Integer.parseInt(target.substring(colon + 1));
    } catch (NumberFormatException e) {
      return new Resolution("", 0, "bad port in " + target);
    }
    Optional<Service> svc = serviceFor(host);
    if (svc.isEmpty()) {
      return new Resolution("", 0, "no Service has the address " + host);
    }
    Service s = svc.get();
    String name = s.getMetadata().getNamespace() + "/" + s.getMetadata().getName();
    for (ServicePort p : s.getSpec().getPorts()) {
      if (p.getPort() != port) {
        continue;
      }
      IntOrString tp = p.getTargetPort();
      String targetPort =
          tp == null
              ? Integer.toString(port)
              : tp.getStrVal() != null ? tp.getStrVal() : Integer.toString(tp.getIntVal());
      Integer loopback =
          routes.get(key(s.getMetadata().getNamespace(), s.getMetadata().getName(), targetPort));
      if (loopback == null && !nodes.isEmpty()) {
        return endpoint(s, p, name);
      }
      if (loopback == null) {
        return new Resolution(name, 0, "no endpoint for " + name + " targetPort " + targetPort);
      }
      return new Resolution(name, loopback, null);
    }
    return new Resolution(name, 0, "Service " + name + " has no port " + port);
  }

  /**
   * A ready endpoint of Service {@code s}'s port {@code port} on an attached node, from its
   * EndpointSlices (the endpoint slice controller's, as kube-proxy reads them).
   */
  private Resolution endpoint(Service s, ServicePort port, String name) {
    KubernetesClient admin = this.admin;
    var slices =
        admin
            .discovery()
            .v1()
            .endpointSlices()
            .inNamespace(s.getMetadata().getNamespace())
            .withLabel("kubernetes.io/service-name", s.getMetadata().getName())
            .list()
            .getItems();
    for (var slice : slices) {
      Integer number = null;
      for (var p :
          slice.getPorts() == null
              ? List.<io.fabric8.kubernetes.api.model.discovery.v1.EndpointPort>of()
              : slice.getPorts()) {
        if (java.util.Objects.equals(p.getName(), port.getName()) || slice.getPorts().size() == 1) {
          number = p.getPort();
        }
      }
      if (number == null || slice.getEndpoints() == null) {
        continue;
      }
      for (var e : slice.getEndpoints()) {
        boolean ready =
            e.getConditions() == null || !Boolean.FALSE.equals(e.getConditions().getReady());
        if (!ready) {
          continue;
        }
        for (String ip : e.getAddresses()) {
          for (NodeNetwork node : nodes) {
            if (node.owns(ip)) {
              return new Resolution(name, number, node, ip, null);
            }
          }
        }
      }
    }
    return new Resolution(name, 0, "no ready endpoint for " + name + " port " + port.getPort());
  }

  /** A Service by cluster IP, or by {@code name.namespace.svc[.cluster.local]}. */
  private Optional<Service> serviceFor(String host) {
    KubernetesClient admin = this.admin;
    if (admin == null) {
      return Optional.empty();
    }
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    String[] labels = host.split("\\.");
    boolean dnsName =
        labels.length >= 3
            && labels[2].equals("svc")
            && (labels.length == 3
                || (labels.length == 5
                    && labels[3].equals("cluster")
                    && labels[4].equals("local")));
    if (dnsName) {
      return Optional.ofNullable(admin.services().inNamespace(labels[1]).withName(labels[0]).get());
    }
    String ip = host;
    return admin.services().inAnyNamespace().list().getItems().stream()
        .filter(s -> ip.equals(s.getSpec().getClusterIP()))
        .findFirst();
  }

  private static String readHead(ByteChannel c) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    ByteBuffer one = ByteBuffer.allocate(1);
    while (head.size() < 16 * 1024) {
      one.clear();
      if (c.read(one) < 0) {
        throw new IOException("closed before the request ended");
      }
      head.write(one.get(0));
      byte[] b = head.toByteArray();
      int n = b.length;
      if (n >= 4 && b[n - 4] == '\r' && b[n - 3] == '\n' && b[n - 2] == '\r' && b[n - 1] == '\n') {
        return head.toString(StandardCharsets.US_ASCII);
      }
    }
    throw new IOException("request head over 16 KiB");
  }

  private static void reply(ByteChannel c, String status, String why) throws IOException {
    byte[] body = (why + "\n").getBytes(StandardCharsets.UTF_8);
    String head =
        "HTTP/1.1 "
            + status
            + "\r\nContent-Type: text/plain\r\nContent-Length: "
            + body.length
            + "\r\nConnection: close\r\n\r\n";
    c.write(ByteBuffer.wrap(head.getBytes(StandardCharsets.US_ASCII)));
    c.write(ByteBuffer.wrap(body));
  }

  /** Copies until {@code from} ends, then half-closes {@code to}'s output. */
  private static void pipe(SocketChannel from, SocketChannel to) {
    ByteBuffer buf = ByteBuffer.allocate(64 * 1024);
    try {
      while (from.read(buf) >= 0) {
        buf.flip();
        while (buf.hasRemaining()) {
          to.write(buf);
        }
        buf.clear();
      }
      to.shutdownOutput();
    } catch (IOException e) {
      closeQuietly(from);
      closeQuietly(to);
    }
  }

  private static void closeQuietly(SocketChannel c) {
    try {
      c.close();
    } catch (IOException e) {
      // already gone
    }
  }

  private static java.net.SocketAddress localAddress(ServerSocketChannel c) {
    try {
      return c.getLocalAddress();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String key(String namespace, String service, String targetPort) {
    return namespace + "/" + service + ":" + targetPort;
  }

  /** For failure messages: the routes and what was asked. */
  @Override
  public String toString() {
    List<String> lines = new ArrayList<>();
    routes.forEach((k, v) -> lines.add("route " + k + " -> 127.0.0.1:" + v));
    connects.forEach(c -> lines.add("CONNECT " + c));
    return String.join("\n", lines);
  }
}
