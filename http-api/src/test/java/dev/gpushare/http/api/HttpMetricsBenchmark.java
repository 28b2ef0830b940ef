package dev.gpushare.http.api;

import dev.gpushare.http.auth.AdminToken;
import dev.gpushare.http.server.HttpLimits;
import dev.gpushare.node.api.GpuShareMetrics;
import dev.gpushare.node.fake.FakeGpuShareService;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse.BodyHandlers;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;

/**
 * The HTTP metrics benchmark of {@code src-test/BENCHMARKS.md} ("What counting HTTP requests
 * costs"), a plain {@code main} (not a test: {@code mvn verify} never runs it). In one run:
 *
 * <ol>
 *   <li><b>counting</b>: what {@code HttpApi}'s measuring wrapper adds to each request — the route
 *       template of the path ({@link RouteTemplates#of}) and {@link GpuShareMetrics#httpRequest} (a
 *       counter and a histogram) — for a mix of the API's paths, in ns per request, against the
 *       same loop without them (picking the path and making the duration: the loop's own cost);
 *   <li><b>a request</b>: the latency of {@code GET /v1/nodes} with the admin token over loopback
 *       against the real {@link HttpApi} (Pekko HTTP, a fake service behind it), one request at a
 *       time on a kept-alive connection: what one request costs in all.
 * </ol>
 *
 * Arguments: {@code [--calls N] [--requests N]} (default 5,000,000 and 20,000).
 */
public final class HttpMetricsBenchmark {

  private HttpMetricsBenchmark() {}

  private static final List<String[]> MIX =
      List.of(
          new String[] {"GET", "/v1/nodes"},
          new String[] {"GET", "/v1/nodes/node-1"},
          new String[] {"GET", "/v1/namespaces/default/pods/a"},
          new String[] {"POST", "/v1/namespaces/default/pods/a/demand"},
          new String[] {"POST", "/v1/namespaces/default/pods/a/release"},
          new String[] {"GET", "/v1/namespaces/default/pods/a/grant"},
          new String[] {"GET", "/v1/namespaces/default/pods/a/history"},
          new String[] {"GET", "/metrics"},
          new String[] {"GET", "/healthz"},
          new String[] {"GET", "/no/such/path"});

  public static void main(String[] args) throws Exception {
    long calls = 5_000_000;
    int requests = 20_000;
    for (int i = 0; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--calls" -> calls = Long.parseLong(args[i + 1]);
        case "--requests" -> requests = Integer.parseInt(args[i + 1]);
        default -> throw new IllegalArgumentException(args[i] + ": give --calls or --requests");
      }
    }
    RouteTemplates routes = RouteTemplates.ofApi();
    GpuShareMetrics metrics = new GpuShareMetrics();
    // warm-up, then three alternating rounds of each
    counting(routes, metrics, calls / 5, true);
    counting(routes, metrics, calls / 5, false);
    double[] withMetrics = new double[3];
    double[] floor = new double[3];
    for (int r = 0; r < 3; r++) {
      withMetrics[r] = counting(routes, metrics, calls, true);
      floor[r] = counting(routes, metrics, calls, false);
    }
    Arrays.sort(withMetrics);
    Arrays.sort(floor);

    double[] latencies = requests(requests);
    Arrays.sort(latencies);
    double median = latencies[latencies.length / 2];
    double added = withMetrics[1] - floor[1];
    System.out.println();
    System.out.println("| measured | value |");
    System.out.println("|---|---|");
    System.out.printf(
        Locale.ROOT,
        "| the loop with route + counting, ns/request (median of 3) | %.1f |%n",
        withMetrics[1]);
    System.out.printf(
        Locale.ROOT, "| the loop alone, ns/request (median of 3) | %.1f |%n", floor[1]);
    System.out.printf(Locale.ROOT, "| added by counting, ns/request | %.1f |%n", added);
    System.out.printf(
        Locale.ROOT,
        "| GET /v1/nodes over loopback, median µs (p90 %.1f) | %.1f |%n",
        latencies[(int) (latencies.length * 0.9)],
        median);
    System.out.printf(
        Locale.ROOT,
        "| counting as a share of the request | %.3f %% |%n",
        100 * added / (median * 1000));
  }

  /**
   * ns per simulated request: with {@code count}, the route and the metrics; else the loop only.
   */
  private static double counting(
      RouteTemplates routes, GpuShareMetrics metrics, long calls, boolean count) {
    long sink = 0;
    long start = System.nanoTime();
    for (long i = 0; i < calls; i++) {
      String[] request = MIX.get((int) (i % MIX.size()));
      Duration elapsed = Duration.ofNanos(100_000 + (i & 0xffff));
      if (count) {
        metrics.httpRequest(request[0], routes.of(request[1]), 200, elapsed);
      } else {
        sink += request[1].length() + elapsed.getNano();
      }
    }
    double ns = (System.nanoTime() - start) / (double) calls;
    if (sink == 42) {
      System.out.println(); // keeps the floor's work from being optimised away
    }
    return ns;
  }

  /** Latencies in µs of sequential {@code GET /v1/nodes} against the real HttpApi. */
  private static double[] requests(int requests) throws Exception {
    String token = "http-metrics-benchmark";
    FakeGpuShareService service = new FakeGpuShareService();
    service.nodes.put("node-1", FakeGpuShareService.node("node-1", Map.of(), Map.of()));
    ActorTestKit kit = ActorTestKit.create("HttpMetricsBenchmark");
    try {
      ServerBinding binding =
          new HttpApi(
                  service,
                  new FakeJournalInspector(),
                  now -> {},
                  AdminToken.of(token),
                  new HttpLimits(Duration.ofSeconds(30), 4096, 1024, 128))
              .bind(kit.system(), "127.0.0.1", 0)
              .toCompletableFuture()
              .get(10, TimeUnit.SECONDS);
      HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      HttpRequest get =
          HttpRequest.newBuilder(
                  URI.create("http://127.0.0.1:" + binding.localAddress().getPort() + "/v1/nodes"))
              .header("Authorization", "Bearer " + token)
              .build();
      for (int i = 0; i < requests / 4; i++) { // warm-up
        client.send(get, BodyHandlers.discarding());
      }
      double[] micros = new double[requests];
      for (int i = 0; i < requests; i++) {
        long t0 = System.nanoTime();
        int status = client.send(get, BodyHandlers.discarding()).statusCode();
        micros[i] = (System.nanoTime() - t0) / 1e3;
        if (status != 200) {
          throw new IllegalStateException("GET /v1/nodes answered " + status);
        }
      }
      binding.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
      return micros;
    } finally {
      kit.shutdownTestKit();
    }
  }
}
