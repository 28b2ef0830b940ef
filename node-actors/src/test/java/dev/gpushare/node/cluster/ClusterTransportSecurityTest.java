package dev.gpushare.node.cluster;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.node.GpuShareRuntime;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Cluster transport security (issue 13, {@link ClusterTransport}): members with the cluster's
 * certificate form a cluster over mutual TLS; a member with a certificate from another CA, or one
 * without TLS, can neither join nor deliver a message; trusting a new CA takes effect without a
 * restart once the files change. The certificates are test fixtures ({@code
 * src/test/resources/cluster-tls}, RSA, valid for a century, made with openssl): {@code member} and
 * {@code member-rotated} signed by {@code cluster-ca}, {@code foreign} by {@code foreign-ca}; all
 * three have the subject name {@code gpushare-cluster}.
 */
class ClusterTransportSecurityTest {

  private static final Duration JOIN = Duration.ofSeconds(60);
  private static final Duration REFUSED = Duration.ofSeconds(6);

  @TempDir Path temp;
  private final List<ActorTestKit> kits = new ArrayList<>();

  /**
   * Stops every member. A TLS stream torn down mid-handshake (the foreign member's refused
   * connection) can keep a system's shutdown waiting past the test kit's 10 s default on a busy
   * machine; what this test checks is decided before that, so the shutdown gets longer and a slow
   * one does not fail the test.
   */
  @AfterEach
  void stop() {
    kits.forEach(kit -> ActorTestKit.shutdown(kit.system(), Duration.ofSeconds(30), false));
  }

  @Test
  void theLauncherGateRefusesPlainRemotingBeyondLoopbackAndMissingCertificates() throws Exception {
    Config embedded = resolved(ConfigFactory.empty());
    assertDoesNotThrow(() -> ClusterTransport.check(embedded));

    Config exposed =
        resolved(
            ConfigFactory.parseMap(Map.of("pekko.remote.artery.canonical.hostname", "10.1.2.3")));
    IllegalArgumentException plain =
        assertThrows(IllegalArgumentException.class, () -> ClusterTransport.check(exposed));
    assertTrue(
        plain
            .getMessage()
            .startsWith(
                "cluster remoting would listen on 10.1.2.3 with"
                    + " pekko.remote.artery.transport = tcp"),
        plain.getMessage());
    assertTrue(plain.getMessage().contains("tls-tcp"), plain.getMessage());

    // Kubernetes mode inside a pod: mutual TLS from GPUSHARE_CLUSTER_TLS_DIR (or the default
    // mount).
    Path missing = temp.resolve("no-secret");
    Config pod = kubernetesMember(missing);
    assertEquals("tls-tcp", pod.getString("pekko.remote.artery.transport"));
    assertEquals(
        ClusterTransport.ROTATING_PROVIDER,
        pod.getString("pekko.remote.artery.ssl.ssl-engine-provider"));
    assertEquals(
        missing.resolve("tls.key").toString(),
        pod.getString("pekko.remote.artery.ssl.rotating-keys-engine.key-file"));
    IllegalArgumentException noFiles =
        assertThrows(IllegalArgumentException.class, () -> ClusterTransport.check(pod));
    assertTrue(
        noFiles
            .getMessage()
            .contains(
                "pekko.remote.artery.ssl.rotating-keys-engine.key-file = "
                    + missing.resolve("tls.key")
                    + " is not a readable file"),
        noFiles.getMessage());
    assertTrue(noFiles.getMessage().contains("GPUSHARE_CLUSTER_TLS_DIR"), noFiles.getMessage());

    assertDoesNotThrow(() -> ClusterTransport.check(kubernetesMember(secret("member"))));
  }

  @Test
  void onlyMembersWithTheClustersCertificateJoinOrSendAndANewCaIsTrustedWithoutARestart()
      throws Exception {
    Path seedSecret = secret("member");
    ActorSystem<Void> seed = member("seed", tls(seedSecret));
    Cluster.get(seed).manager().tell(Join.create(Cluster.get(seed).selfMember().address()));
    awaitUp(seed, seed);
    TestProbe<String> inbox = TestProbe.create(seed);
    seed.systemActorOf(
        Behaviors.<String>receiveMessage(
            m -> {
              inbox.ref().tell(m);
              return Behaviors.same();
            }),
        "inbox",
        org.apache.pekko.actor.typed.Props.empty());

    // A second member with another key pair from the same CA joins.
    ActorSystem<Void> peer = member("peer", tls(secret("member-rotated")));
    join(peer, seed);
    awaitUp(seed, peer);

    // A member whose certificate another CA signed: no join, no message.
    ActorSystem<Void> foreign = member("foreign", tls(secret("foreign")));
    join(foreign, seed);
    // A member without TLS at all: neither.
    ActorSystem<Void> plain = member("plain", ConfigFactory.empty());
    join(plain, seed);
    tellInbox(foreign, seed, "from the foreign member");
    tellInbox(plain, seed, "from the plain member");
    inbox.expectNoMessage(REFUSED);
    assertEquals(2, upMembers(seed), "the seed sees itself and the peer only");
    assertTrue(
        Cluster.get(foreign).selfMember().status() != MemberStatus.up(),
        "the foreign member is not Up");
    assertTrue(
        Cluster.get(plain).selfMember().status() != MemberStatus.up(),
        "the plain member is not Up");

    // Rotation without a restart: the seed's Secret is replaced (here by a certificate and CA of
    // another authority, so that the change shows). A member of that authority is refused until
    // the running seed re-reads its files (ssl-context-cache-ttl), then its messages arrive.
    Path otherSecret = secret("other", "foreign", "foreign-ca/ca.crt");
    ActorSystem<Void> other = member("other", tls(otherSecret));
    tellInbox(other, seed, "before the rotation");
    inbox.expectNoMessage(REFUSED);
    for (String file : List.of("tls.key", "tls.crt", "ca.crt")) {
      Path next = temp.resolve("next-" + file);
      Files.copy(otherSecret.resolve(file), next);
      Files.move(next, seedSecret.resolve(file), StandardCopyOption.REPLACE_EXISTING);
    }
    long deadline = System.nanoTime() + JOIN.toNanos();
    String received = null;
    while (received == null && System.nanoTime() < deadline) {
      tellInbox(other, seed, "after the rotation");
      try {
        received = inbox.expectMessage(Duration.ofSeconds(1), "after the rotation");
      } catch (AssertionError notYet) {
        received = null;
      }
    }
    assertEquals("after the rotation", received, "the seed took its new certificate while running");
  }

  // ---- helpers ----

  private static Config resolved(Config above) {
    return above
        .withFallback(ClusterFormation.embedded().config())
        .withFallback(GpuShareRuntime.config())
        .withFallback(ConfigFactory.load())
        .resolve();
  }

  /** What a member inside a pod gets, with the certificate directory {@code dir}. */
  private static Config kubernetesMember(Path dir) {
    // A root key stands in for the environment variable of the same name (HOCON looks there
    // first).
    return ConfigFactory.parseMap(Map.of("GPUSHARE_CLUSTER_TLS_DIR", dir.toString()))
        .withFallback(
            ClusterFormation.kubernetes(Optional.of("n1"), Optional.of("10.1.2.3")).config())
        .withFallback(GpuShareRuntime.config())
        .withFallback(ConfigFactory.load())
        .resolve();
  }

  /** TLS as Kubernetes mode sets it, with the files of {@code dir} re-read every second. */
  private static Config tls(Path dir) {
    return ConfigFactory.parseString(
        """
            pekko.remote.artery {
              transport = tls-tcp
              ssl.ssl-engine-provider = "%s"
              ssl.rotating-keys-engine {
                key-file = "%s"
                cert-file = "%s"
                ca-cert-file = "%s"
                ssl-context-cache-ttl = 1s
              }
            }
            """
            .formatted(
                ClusterTransport.ROTATING_PROVIDER,
                dir.resolve("tls.key"),
                dir.resolve("tls.crt"),
                dir.resolve("ca.crt")));
  }

  private ActorSystem<Void> member(String label, Config transport) {
    Config config =
        transport
            .withFallback(
                ConfigFactory.parseString(
                    """
                    pekko.cluster.retry-unsuccessful-join-after = 1s
                    pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
                    pekko.remote.artery.canonical.port = 0
                    pekko.cluster.downing-provider-class = ""
                    pekko.loglevel = WARNING
                    """))
            .withFallback(resolved(ConfigFactory.empty()))
            .resolve();
    ClusterTransport.check(config);
    ActorTestKit kit = ActorTestKit.create("tls", config);
    kits.add(kit);
    return kit.system();
  }

  private static void join(ActorSystem<?> member, ActorSystem<?> seed) {
    Cluster.get(member).manager().tell(Join.create(Cluster.get(seed).selfMember().address()));
  }

  private static void tellInbox(ActorSystem<?> from, ActorSystem<?> to, String message) {
    from.classicSystem()
        .actorSelection(Cluster.get(to).selfMember().address() + "/system/inbox")
        .tell(message, org.apache.pekko.actor.ActorRef.noSender());
  }

  private static long upMembers(ActorSystem<?> system) {
    long n = 0;
    for (org.apache.pekko.cluster.Member m : Cluster.get(system).state().getMembers()) {
      if (m.status() == MemberStatus.up()) {
        n++;
      }
    }
    return n;
  }

  /** Waits until {@code observer} sees {@code member} Up. */
  private static void awaitUp(ActorSystem<?> observer, ActorSystem<?> member)
      throws InterruptedException {
    org.apache.pekko.actor.Address address = Cluster.get(member).selfMember().address();
    long deadline = System.nanoTime() + JOIN.toNanos();
    while (System.nanoTime() < deadline) {
      for (org.apache.pekko.cluster.Member m : Cluster.get(observer).state().getMembers()) {
        if (m.address().equals(address) && m.status() == MemberStatus.up()) {
          return;
        }
      }
      Thread.sleep(50);
    }
    throw new AssertionError(address + " did not come Up within " + JOIN);
  }

  /** A copy of the fixture secret {@code name} in its own directory (tests rewrite files). */
  private Path secret(String name) throws IOException {
    return secret(name, name, name + "/ca.crt");
  }

  /** A secret {@code name}: the key and certificate of fixture {@code keys}, the CA {@code ca}. */
  private Path secret(String name, String keys, String ca) throws IOException {
    Path dir = Files.createDirectories(temp.resolve(name));
    Files.writeString(dir.resolve("tls.key"), fixture(keys + "/tls.key"));
    Files.writeString(dir.resolve("tls.crt"), fixture(keys + "/tls.crt"));
    Files.writeString(dir.resolve("ca.crt"), fixture(ca));
    return dir;
  }

  private static String fixture(String path) throws IOException {
    try (InputStream in =
        ClusterTransportSecurityTest.class.getResourceAsStream("/cluster-tls/" + path)) {
      if (in == null) {
        throw new IOException("no test fixture /cluster-tls/" + path);
      }
      return new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    }
  }
}
