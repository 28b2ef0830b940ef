package dev.gpushare.http.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.gpushare.http.server.Json;
import dev.gpushare.http.tls.ServerTls;
import dev.gpushare.http.tls.ServerTlsTest;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.file.Files;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The webhook served as the API server calls it: HTTPS on a free port with the test certificate, a
 * client that trusts only that certificate (as {@code caBundle} does), real review bodies.
 */
class AdmissionHttpsTest {
  private static ActorTestKit testKit;
  private static ServerBinding binding;
  private static HttpClient client;
  private static Certificate served;

  @BeforeAll
  static void start() throws Exception {
    testKit = ActorTestKit.create("AdmissionHttpsTest");
    ServerTls tls =
        ServerTls.load(
            "webhook", ServerTlsTest.tls("webhook.crt"), ServerTlsTest.tls("webhook.key"));
    binding =
        new AdmissionRoutes()
            .bindHttps(testKit.system(), "127.0.0.1", 0, tls)
            .toCompletableFuture()
            .get();
    try (InputStream in = Files.newInputStream(ServerTlsTest.tls("webhook.crt"))) {
      served = CertificateFactory.getInstance("X.509").generateCertificate(in);
    }
    KeyStore trusted = KeyStore.getInstance("PKCS12");
    trusted.load(null, null);
    trusted.setCertificateEntry("ca", served);
    TrustManagerFactory trust =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    trust.init(trusted);
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(null, trust.getTrustManagers(), null);
    client =
        HttpClient.newBuilder().sslContext(context).connectTimeout(Duration.ofSeconds(10)).build();
  }

  @AfterAll
  static void stop() throws Exception {
    binding.unbind().toCompletableFuture().get();
    testKit.shutdownTestKit();
  }

  private static HttpResponse<String> send(
      String method, String path, String contentType, String body) throws Exception {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(
                URI.create("https://127.0.0.1:" + binding.localAddress().getPort() + path))
            .timeout(Duration.ofSeconds(10))
            .method(method, body == null ? BodyPublishers.noBody() : BodyPublishers.ofString(body));
    if (contentType != null) {
      request.header("Content-Type", contentType);
    }
    return client.send(request.build(), BodyHandlers.ofString());
  }

  private static String resource(String file) {
    return AdmissionReviewerTest.review(file).toString();
  }

  @Test
  void theDemoPodIsMutatedOverTls() throws Exception {
    HttpResponse<String> r =
        send("POST", AdmissionRoutes.MUTATE_PATH, "application/json", resource("demo-create.json"));
    assertEquals(200, r.statusCode(), r.body());
    assertEquals("application/json", r.headers().firstValue("Content-Type").orElse(""));
    assertEquals(served, r.sslSession().orElseThrow().getPeerCertificates()[0]);
    JsonNode answer = Json.mapper().readTree(r.body());
    assertEquals("AdmissionReview", answer.path("kind").asText());
    assertTrue(answer.at("/response/allowed").asBoolean());
    assertEquals(3, AdmissionReviewerTest.decodedPatch(answer).size());
  }

  @Test
  void aDenialIsAnAnswerNotAnHttpError() throws Exception {
    HttpResponse<String> r =
        send(
            "POST",
            AdmissionRoutes.VALIDATE_PATH,
            "application/json; charset=utf-8",
            resource("many-violations.json"));
    assertEquals(200, r.statusCode(), r.body());
    JsonNode answer = Json.mapper().readTree(r.body());
    assertFalse(answer.at("/response/allowed").asBoolean(true));
    assertEquals(422, answer.at("/response/status/code").asInt());
  }

  @Test
  void aMalformedReviewIsA400Problem() throws Exception {
    HttpResponse<String> r =
        send("POST", AdmissionRoutes.MUTATE_PATH, "application/json", "{\"apiVersion\":");
    assertEquals(400, r.statusCode());
    assertEquals("application/problem+json", r.headers().firstValue("Content-Type").orElse(""));
    JsonNode problem = Json.mapper().readTree(r.body());
    assertEquals("body", problem.path("field").asText());
    assertTrue(problem.path("detail").asText().startsWith("body is not valid JSON"));
  }

  @Test
  void otherMediaTypesMethodsAndPathsAreProblems() throws Exception {
    HttpResponse<String> yaml =
        send("POST", AdmissionRoutes.VALIDATE_PATH, "application/yaml", "kind: AdmissionReview");
    assertEquals(415, yaml.statusCode());
    assertEquals("Content-Type", Json.mapper().readTree(yaml.body()).path("field").asText());
    HttpResponse<String> get = send("GET", AdmissionRoutes.MUTATE_PATH, null, null);
    assertEquals(405, get.statusCode());
    assertEquals("application/problem+json", get.headers().firstValue("Content-Type").orElse(""));
    HttpResponse<String> large =
        send(
            "POST",
            AdmissionRoutes.MUTATE_PATH,
            "application/json",
            "[" + " ".repeat((int) AdmissionRoutes.MAX_BODY_BYTES) + "]");
    assertEquals(400, large.statusCode(), large.body());
    JsonNode tooLarge = Json.mapper().readTree(large.body());
    assertEquals("body", tooLarge.path("field").asText());
    assertTrue(
        tooLarge.path("detail").asText().startsWith("body: Request too large: Request of size "),
        tooLarge.toString());
    HttpResponse<String> chunked =
        client.send(
            HttpRequest.newBuilder(
                    URI.create(
                        "https://127.0.0.1:"
                            + binding.localAddress().getPort()
                            + AdmissionRoutes.MUTATE_PATH))
                .header("Content-Type", "application/json")
                .POST(
                    BodyPublishers.ofInputStream(
                        () ->
                            new ByteArrayInputStream(
                                new byte[(int) AdmissionRoutes.MAX_BODY_BYTES + 1])))
                .build(),
            BodyHandlers.ofString());
    assertEquals(413, chunked.statusCode(), chunked.body());
    assertEquals("body", Json.mapper().readTree(chunked.body()).path("field").asText());
    HttpResponse<String> other = send("POST", "/admission/other", "application/json", "{}");
    assertEquals(404, other.statusCode());
    assertEquals("application/problem+json", other.headers().firstValue("Content-Type").orElse(""));
  }
}
