package dev.gpushare.node.cluster;

import com.typesafe.config.Config;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Who may talk to a member's remoting port (ARCHITECTURE.md: every port is authenticated or bound
 * to loopback). Pekko remoting carries cluster membership and every sharded entity's messages; a
 * peer that reaches the port can join the cluster and send any of them. So:
 *
 * <ul>
 *   <li>a member whose remoting binds to a loopback address (embedded mode, the end-to-end clusters
 *       on one machine) may use plain TCP: only this machine reaches it;
 *   <li>any other member must use Artery {@code tls-tcp} with mutual authentication: Pekko's {@code
 *       RotatingKeysSSLEngineProvider} reads {@code tls.key}, {@code tls.crt} and {@code ca.crt}
 *       (PEM, the layout of a cert-manager or {@code kubernetes.io/tls} Secret) from one directory,
 *       re-reads them after {@code ssl-context-cache-ttl} (a renewed Secret is picked up without a
 *       restart), accepts only peers whose certificate the CA signed, and checks that the peer's
 *       certificate shares a subject name (CN or SAN) with its own.
 * </ul>
 *
 * {@link #check(Config)} is the launcher's gate: a member that would listen beyond loopback without
 * it does not start.
 */
public final class ClusterTransport {

  private static final String ARTERY = "pekko.remote.artery";
  private static final String ROTATING = ARTERY + ".ssl.rotating-keys-engine";
  static final String ROTATING_PROVIDER =
      "org.apache.pekko.remote.artery.tcp.ssl.RotatingKeysSSLEngineProvider";

  private ClusterTransport() {}

  /**
   * Refuses a resolved actor-system config whose remoting would accept peers beyond loopback
   * without mutual TLS, or whose TLS files are missing or unreadable.
   *
   * @throws IllegalArgumentException naming the setting, its value and what is accepted
   */
  public static void check(Config system) {
    if (!system.hasPath("pekko.actor.provider")
        || !"cluster".equals(system.getString("pekko.actor.provider"))) {
      return;
    }
    String transport = system.getString(ARTERY + ".transport");
    String bind = bindHostname(system);
    if (!"tls-tcp".equals(transport)) {
      if (isLoopback(bind)) {
        return;
      }
      throw new IllegalArgumentException(
          "cluster remoting would listen on "
              + bind
              + " with "
              + ARTERY
              + ".transport = "
              + transport
              + ": anyone who reaches that address could join the cluster and send its messages;"
              + " bind it to loopback (127.0.0.1) or use transport = tls-tcp with mutual"
              + " authentication (the Kubernetes mode's default: README \"Cluster transport"
              + " security\")");
    }
    String provider = system.getString(ARTERY + ".ssl.ssl-engine-provider");
    if (provider.equals(ROTATING_PROVIDER)) {
      List<String> problems = new ArrayList<>();
      for (String key : List.of("key-file", "cert-file", "ca-cert-file")) {
        String file = system.getString(ROTATING + "." + key);
        Path path = Path.of(file);
        if (!Files.isRegularFile(path) || !Files.isReadable(path)) {
          problems.add(ROTATING + "." + key + " = " + file + " is not a readable file");
        }
      }
      if (!problems.isEmpty()) {
        throw new IllegalArgumentException(
            "cluster remoting uses mutual TLS but "
                + String.join("; ", problems)
                + "; mount the cluster's certificate Secret (tls.key, tls.crt, ca.crt) at "
                + system.getString(ROTATING + ".secret-mount-point")
                + " or set GPUSHARE_CLUSTER_TLS_DIR to the directory that holds them");
      }
    } else if (system.hasPath(ARTERY + ".ssl.config-ssl-engine.require-mutual-authentication")
        && !system.getBoolean(ARTERY + ".ssl.config-ssl-engine.require-mutual-authentication")) {
      throw new IllegalArgumentException(
          ARTERY
              + ".ssl.config-ssl-engine.require-mutual-authentication = off: a peer without the"
              + " cluster's certificate could join; accepted: on");
    }
  }

  /** Where remoting listens: {@code bind.hostname}, or the canonical one when that is empty. */
  static String bindHostname(Config system) {
    String bind = system.getString(ARTERY + ".bind.hostname");
    return bind.isBlank() ? system.getString(ARTERY + ".canonical.hostname") : bind;
  }

  static boolean isLoopback(String host) {
    if (host.isBlank()) {
      // Pekko then takes the machine's address: not loopback.
      return false;
    }
    try {
      for (InetAddress a : InetAddress.getAllByName(host)) {
        if (!a.isLoopbackAddress()) {
          return false;
        }
      }
      return true;
    } catch (UnknownHostException e) {
      return false;
    }
  }
}
