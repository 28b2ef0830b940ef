package dev.gpushare.http.extender;

import static dev.gpushare.http.extender.ExtenderViews.gpu;
import static dev.gpushare.http.extender.ExtenderViews.node;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.http.launch.LaunchException;
import dev.gpushare.http.server.Json;
import dev.gpushare.http.tls.ServerTls;
import dev.gpushare.node.fake.FakeGpuShareReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The extender's own listener over mutual TLS: a client certificate of the client CA is what lets
 * kube-scheduler in (its extender client cannot send a bearer token); no certificate, one of
 * another CA, or one not meant for client authentication fails the handshake, and nothing but the
 * two extender paths is served.
 */
class SchedulerExtenderServerTest {
  static final FakeGpuShareReader SERVICE = new FakeGpuShareReader();
  static ActorTestKit kit;
  static ServerBinding binding;

  static final String ARGS =
      """
      {"Pod": {"metadata": {"name": "p", "namespace": "default",
                            "labels": {"alibabacloud.com/compute-class": "gpu-hpn",
                                       "alibabacloud.com/gpu-share-policy": "share-pool"}},
               "spec": {"containers": [{"name": "main", "resources": {
                 "requests": {"alibabacloud.com/gpu-core.percentage": "10",
                              "alibabacloud.com/gpu-memory.percentage": "10"},
                 "limits": {"alibabacloud.com/gpu-core.percentage": "50",
                            "alibabacloud.com/gpu-memory.percentage": "50"}}}]}},
       "Nodes": null, "NodeNames": ["gpu-a", "gpu-static"]}
      """;

  @BeforeAll
  static void start() throws Exception {
    kit = ActorTestKit.create("SchedulerExtenderServerTest");
    SERVICE.setNode(node("gpu-a", SharePolicy.SHARE_POOL, gpu(0, 50, 50), gpu(1, 0, 0)));
    SERVICE.setNode(node("gpu-static", SharePolicy.STATIC, gpu(0, 0, 0)));
    ServerTls tls =
        ServerTls.mutual(
            "scheduler extender",
            resource("admission/tls/webhook.crt"),
            resource("admission/tls/webhook.key"),
            resource("extender/tls/client-ca.crt"));
    binding =
        SchedulerExtenderServer.bind(kit.system(), SERVICE, "127.0.0.1", 0, tls)
            .toCompletableFuture()
            .get();
  }

  @AfterAll
  static void stop() throws Exception {
    binding.unbind().toCompletableFuture().get();
    kit.shutdownTestKit();
  }

  @Test
  void theSchedulersClientCertificateGetsTheExtender() throws Exception {
    HttpClient scheduler = client("scheduler");
    HttpResponse<String> filter = post(scheduler, "/scheduler/filter", ARGS);
    assertEquals(200, filter.statusCode(), filter.body());
    JsonNode result = Json.mapper().readTree(filter.body());
    assertEquals(List.of("gpu-a"), SchedulerExtenderHttpTest.texts(result.get("NodeNames")));
    assertTrue(result.at("/FailedAndUnresolvableNodes/gpu-static").isTextual());

    HttpResponse<String> scores = post(scheduler, "/scheduler/prioritize?policy=bestfit", ARGS);
    assertEquals(200, scores.statusCode(), scores.body());
    assertEquals(
        "[{\"Host\":\"gpu-a\",\"Score\":5},{\"Host\":\"gpu-static\",\"Score\":0}]", scores.body());
  }

  @Test
  void onlyTheExtenderIsServedThere() throws Exception {
    HttpClient scheduler = client("scheduler");
    HttpResponse<String> r =
        scheduler.send(
            HttpRequest.newBuilder(uri("/v1/nodes")).GET().build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(404, r.statusCode());
    assertEquals("application/problem+json", r.headers().firstValue("Content-Type").orElseThrow());
    assertEquals(400, post(scheduler, "/scheduler/filter", "not json").statusCode());
  }

  @Test
  void noCertificateAnotherCaOrAServerCertificateIsRefusedInTheHandshake() throws Exception {
    SERVICE.calls.clear();
    assertThrows(IOException.class, () -> post(client(null), "/scheduler/filter", ARGS));
    assertThrows(IOException.class, () -> post(client("rogue"), "/scheduler/filter", ARGS));
    assertThrows(IOException.class, () -> post(client("serverauth"), "/scheduler/filter", ARGS));
    assertEquals(List.of(), SERVICE.calls, "no request got through");
  }

  @Test
  void unusableFilesStopTheLauncherNamingTheFile() throws Exception {
    Path missing = Path.of("no-such-ca.crt");
    LaunchException e =
        assertThrows(
            LaunchException.class,
            () ->
                ServerTls.mutual(
                    "scheduler extender",
                    resource("admission/tls/webhook.crt"),
                    resource("admission/tls/webhook.key"),
                    missing));
    assertTrue(
        e.getMessage().startsWith("--extender-client-ca no-such-ca.crt: no such file"),
        e.getMessage());
    // One loader with the webhook: a PKCS#1 key (tls.key as openssl genrsa writes it) serves.
    assertTrue(
        ServerTls.mutual(
                "scheduler extender",
                resource("admission/tls/webhook.crt"),
                resource("admission/tls/webhook-rsa.key"),
                resource("extender/tls/client-ca.crt"))
            .requiresClientCertificate());
    LaunchException notCas =
        assertThrows(
            LaunchException.class,
            () ->
                ServerTls.mutual(
                    "scheduler extender",
                    resource("admission/tls/webhook.crt"),
                    resource("admission/tls/webhook.key"),
                    resource("admission/tls/webhook.key")));
    assertTrue(
        notCas.getMessage().startsWith("--extender-client-ca ")
            && notCas.getMessage().contains("BEGIN CERTIFICATE"),
        notCas.getMessage());
  }

  // ---- helpers ----

  static Path resource(String name) throws Exception {
    return Path.of(SchedulerExtenderServerTest.class.getResource("/" + name).toURI());
  }

  static URI uri(String path) {
    return URI.create("https://localhost:" + binding.localAddress().getPort() + path);
  }

  static HttpResponse<String> post(HttpClient client, String path, String body)
      throws IOException, InterruptedException {
    return client.send(
        HttpRequest.newBuilder(uri(path))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** A client that trusts the server and presents {@code identity}'s certificate (or none). */
  static HttpClient client(String identity) throws Exception {
    CertificateFactory x509 = CertificateFactory.getInstance("X.509");
    KeyStore trust = KeyStore.getInstance("PKCS12");
    trust.load(null, null);
    trust.setCertificateEntry(
        "server",
        x509.generateCertificate(Files.newInputStream(resource("admission/tls/webhook.crt"))));
    TrustManagerFactory tmf = TrustManagerFactory.getInstance("PKIX");
    tmf.init(trust);
    KeyManagerFactory kmf = null;
    if (identity != null) {
      List<Certificate> chain =
          List.copyOf(
              x509.generateCertificates(
                  new ByteArrayInputStream(
                      Files.readAllBytes(resource("extender/tls/" + identity + ".crt")))));
      String pem = Files.readString(resource("extender/tls/" + identity + ".key"));
      byte[] der =
          Base64.getMimeDecoder()
              .decode(
                  pem.replace("-----BEGIN PRIVATE KEY-----", "")
                      .replace("-----END PRIVATE KEY-----", ""));
      PrivateKey key = KeyFactory.getInstance("RSA").generatePrivate(new PKCS8EncodedKeySpec(der));
      KeyStore keys = KeyStore.getInstance("PKCS12");
      keys.load(null, null);
      keys.setKeyEntry("client", key, new char[0], chain.toArray(Certificate[]::new));
      kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(keys, new char[0]);
    }
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(
        kmf == null ? null : kmf.getKeyManagers(), tmf.getTrustManagers(), new SecureRandom());
    return HttpClient.newBuilder()
        .sslContext(context)
        .connectTimeout(Duration.ofSeconds(10))
        .build();
  }
}
