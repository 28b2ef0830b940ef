package dev.gpushare.e2e;

import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.io.TempDir;

/**
 * The live dashboard ({@code GET /dashboard}) in a real headless Chromium against a real server:
 * what the API does shows up on the page by itself (the page follows {@code GET /v1/watch}), queue
 * wait times tick, and a preemption is marked on the timeline. Screenshots go to {@code
 * target/dashboard/}. Skipped when the Debian packages {@code chromium} and {@code chromium-driver}
 * are not installed ({@code .ci/run} installs them).
 */
class DashboardTest {
  private static final Duration SHOWN_WITHIN = Duration.ofSeconds(20);
  private static final int WIDTH = 1440;

  private final Path artifacts =
      Path.of(System.getProperty("basedir", "."), "target", "dashboard").toAbsolutePath();
  private ServerProcess server;
  private HeadlessChromium browser;
  private String testName;
  private final StringBuilder console = new StringBuilder();

  @BeforeEach
  void start(@TempDir Path dir, TestInfo info) {
    Optional<HeadlessChromium.Binaries> binaries = HeadlessChromium.find();
    Assumptions.assumeTrue(
        binaries.isPresent(),
        "chromium and chromedriver are not installed (Debian: apt-get install chromium"
            + " chromium-driver; .ci/run does it): the dashboard browser test is skipped");
    testName = info.getTestMethod().orElseThrow().getName();
    server = ServerProcess.start("DashboardTest", dir.resolve("data"));
    browser =
        HeadlessChromium.start(
            binaries.get(), WIDTH, 1000, artifacts.resolve("chromedriver-" + testName + ".log"));
  }

  @AfterEach
  void stop() {
    try {
      if (browser != null) {
        saveConsoleLog("console-" + testName + ".txt");
        browser.close();
      }
    } finally {
      if (server != null) {
        server.stop();
      }
    }
  }

  @Test
  void thePageFollowsTheArbiterLive() {
    Api api = server.api();
    try {
      browser.navigate(dashboardUrl());
      await("the change stream is live", () -> "live".equals(connection()));
      if (adminToken().isPresent()) {
        assertEquals(
            "",
            browser.execute("return window.location.hash;").asText(),
            "the token leaves the address bar");
      }

      // A node appears, a pod runs on GPU 0 with a 50 % share: its name and share in that bar.
      api.putNode("gpu-a", 2, "share-pool", null);
      api.createPod(sharePod("notebook-a", "gpu-a", 50, 50));
      JsonNode a = api.demand("notebook-a");
      assertEquals("Running", a.path("state").asText(), a::toString);
      assertEquals(0, a.path("gpu").path("index").asInt(), a::toString);
      String bar = "[data-gpu='gpu-a/0'] .seg[data-pod='default/notebook-a']";
      await(
          "notebook-a with 50% in the bar of gpu-a GPU 0",
          () -> text(bar).map(t -> t.contains("notebook-a") && t.contains("50%")).orElse(false));
      assertTrue(
          text("[data-gpu='gpu-a/1'] .seg").isEmpty(), "nothing on GPU 1: " + text("#nodes"));

      // GPU 1 taken whole, a second pod beside notebook-a on GPU 0, then two pods must wait.
      api.createPod(sharePod("train-c", "gpu-a", 50, 100));
      api.demand("train-c");
      api.createPod(Manifests.pod("infer-b", "gpu-a", "share-pool", 30, 20, 40, 30));
      api.demand("infer-b");
      api.createPod(sharePod("train-w", "gpu-a", 50, 100));
      assertEquals("Ready", api.demand("train-w").path("state").asText());
      api.createPod(sharePod("eval-x", "gpu-a", 10, 10));
      assertEquals("Ready", api.demand("eval-x").path("state").asText());
      api.createPod(sharePod("sleepy-z", "gpu-a", 10, 10));

      await(
          "infer-b with 40% on GPU 0 and train-c with 100% on GPU 1",
          () ->
              text("[data-gpu='gpu-a/0'] .seg[data-pod='default/infer-b']")
                      .map(t -> t.contains("infer-b") && t.contains("40%"))
                      .orElse(false)
                  && text("[data-gpu='gpu-a/1'] .seg[data-pod='default/train-c']")
                      .map(t -> t.contains("100%"))
                      .orElse(false));
      String waiting = "[data-node='gpu-a'] li[data-queue-pod='default/train-w']";
      await(
          "train-w first in the queue of gpu-a, eval-x behind it",
          () ->
              text(waiting).map(t -> t.startsWith("1") && t.contains("train-w")).orElse(false)
                  && text("[data-node='gpu-a'] li[data-queue-pod='default/eval-x']")
                      .map(t -> t.startsWith("2"))
                      .orElse(false));
      long before = waitSeconds(waiting + " .wait");
      await(
          "the wait time of train-w increases",
          () -> waitSeconds(waiting + " .wait") >= before + 2);
      browser.screenshot(artifacts.resolve("1-shares-and-queue.png"));

      // Preemption (manual clock): old runs, new waits, a minute passes, new preempts old.
      api.putNode("gpu-b", 1, "share-pool", Manifests.qos(true, 1));
      api.createPod(sharePod("batch-old", "gpu-b", 10, 100));
      api.demand("batch-old");
      api.createPod(sharePod("batch-new", "gpu-b", 10, 100));
      api.demand("batch-new");
      await(
          "batch-old on gpu-b GPU 0",
          () -> text("[data-gpu='gpu-b/0'] .seg[data-pod='default/batch-old']").isPresent());
      HeadlessChromium.sleep(2000); // a visible stretch of batch-old on the timeline
      api.advance(61);
      JsonNode fresh = api.pod("batch-new");
      assertEquals("Running", fresh.path("state").asText(), fresh::toString);
      await(
          "a preemption of batch-old by batch-new marked on the timeline of gpu-b GPU 0",
          () ->
              browser
                  .execute(
                      "return !!document.querySelector("
                          + "\"#timeline g[data-gpu='gpu-b/0']"
                          + " [data-preemption='batch-old>batch-new']\");")
                  .asBoolean());
      await(
          "batch-new now holds gpu-b GPU 0, batch-old waits again",
          () ->
              text("[data-gpu='gpu-b/0'] .seg[data-pod='default/batch-new']").isPresent()
                  && text("[data-node='gpu-b'] li[data-queue-pod='default/batch-old']")
                      .isPresent());
      HeadlessChromium.sleep(1500);
      fullPageScreenshot(artifacts.resolve("2-dashboard.png"));

      // A fresh page starts current holders at their grant (runningSeconds: notebook-a has held
      // GPU 0 for the 61 s the clock moved) and finds the preemption in the pods' Events.
      browser.navigate("about:blank");
      browser.navigate(dashboardUrl());
      await("the change stream is live again", () -> "live".equals(connection()));
      await(
          "the preemption on gpu-b GPU 0, from the Events",
          () ->
              browser
                  .execute(
                      "return !!document.querySelector("
                          + "\"#timeline g[data-gpu='gpu-b/0']"
                          + " [data-preemption='batch-old>batch-new']\");")
                  .asBoolean());
      await(
          "notebook-a on the timeline since its grant, 61 s ago (most of the fitted window)",
          () ->
              browser
                  .execute(
                      "const r = document.querySelector("
                          + "\"#timeline g[data-gpu='gpu-a/0'] rect[data-pod='default/notebook-a']\");"
                          + " const row = document.querySelector("
                          + "\"#timeline g[data-gpu='gpu-a/0'] rect.tl-row\");"
                          + " return !!r && r.width.baseVal.value > 0.8 * row.width.baseVal.value;")
                  .asBoolean());
      fullPageScreenshot(artifacts.resolve("3-fresh-page.png"));
      assertNoScriptErrors();
    } catch (RuntimeException | AssertionError e) {
      saveFailure();
      throw e;
    }
  }

  @Test
  void aNodeOrPodThatGoesAwayLeavesThePage() {
    Api api = server.api();
    try {
      Optional<String> token = adminToken();
      if (token.isPresent()) {
        // without the token in the address, the page asks for it
        browser.navigate(server.baseUri().resolve("/dashboard").toString());
        await("the token form", () -> "token".equals(connection()));
        browser.type("#token-input", token.get());
        browser.click("#token-form button[type='submit']");
      } else {
        browser.navigate(dashboardUrl());
      }
      await("the change stream is live", () -> "live".equals(connection()));
      api.putNode("gone", 1, "share-pool", null);
      api.createPod(sharePod("brief", "gone", 20, 20));
      api.demand("brief");
      String seg = "[data-gpu='gone/0'] .seg[data-pod='default/brief']";
      await("brief on GPU 0 of gone", () -> text(seg).isPresent());
      // The timeline is built from the pod list the page has read, the bars from the node's
      // holders: both must have seen brief before it goes (with both cores loaded the pod list
      // could come after the delete, and the page would never have seen brief run).
      String briefOnTimeline =
          "return !!document.querySelector(\"#timeline rect[data-pod='default/brief']\");";
      await("brief on the timeline", () -> browser.execute(briefOnTimeline).asBoolean());
      api.deletePod("brief");
      await("brief leaves the bar", () -> text(seg).isEmpty());
      await(
          "the timeline keeps brief's past occupancy",
          () -> browser.execute(briefOnTimeline).asBoolean());
      assertNoScriptErrors();
    } catch (RuntimeException | AssertionError e) {
      saveFailure();
      throw e;
    }
  }

  // ---- helpers ----

  /** The page, with the admin token in the fragment when the server made one. */
  private String dashboardUrl() {
    String url = server.baseUri().resolve("/dashboard").toString();
    return adminToken().map(t -> url + "#token=" + Api.enc(t)).orElse(url);
  }

  /** {@code <data>/admin-token}, which a server with access control writes at its first start. */
  private Optional<String> adminToken() {
    Path tokenFile = server.dataDir().resolve("admin-token");
    if (!Files.exists(tokenFile)) {
      return Optional.empty();
    }
    try {
      return Optional.of(Files.readString(tokenFile).strip());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private String connection() {
    return browser.execute("return document.getElementById('conn').dataset.state;").asText();
  }

  private Optional<String> text(String css) {
    return browser.visibleText(css);
  }

  private long waitSeconds(String css) {
    JsonNode v =
        browser.execute(
            "const e = document.querySelector(arguments[0]);"
                + " return e ? Number(e.dataset.seconds) : -1;",
            css);
    return v.asLong(-1);
  }

  private void await(String what, Supplier<Boolean> shown) {
    long deadline = System.nanoTime() + SHOWN_WITHIN.toNanos();
    while (!shown.get()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError(
            "the page did not show "
                + what
                + " within "
                + SHOWN_WITHIN.toSeconds()
                + " s; page text:\n"
                + text("body").orElse("(none)"));
      }
      HeadlessChromium.sleep(200);
    }
  }

  /** The whole page, not just the window: the window is made as tall as the page first. */
  private void fullPageScreenshot(Path file) {
    int height =
        browser.execute("return Math.ceil(document.documentElement.scrollHeight);").asInt(1000);
    browser.resize(WIDTH, Math.max(800, Math.min(height + 120, 4000)));
    HeadlessChromium.sleep(1200); // the timeline is redrawn every second at the new width
    browser.screenshot(file);
  }

  private void saveFailure() {
    try {
      browser.screenshot(artifacts.resolve("failure-" + testName + ".png"));
    } catch (RuntimeException e) {
      // the failure itself is what matters
    }
  }

  /** The page's console so far (chromedriver hands each entry out once). */
  private String console() {
    console.append(browser.consoleLog());
    return console.toString();
  }

  /** No script failed: the only errors allowed are the 401s of requests without a token. */
  private void assertNoScriptErrors() {
    List<String> errors =
        console()
            .lines()
            .filter(l -> l.startsWith("SEVERE") || l.startsWith("ERROR"))
            .filter(l -> !l.contains("status of 401"))
            .toList();
    assertEquals(List.of(), errors, "errors in the page's console");
  }

  /** The page's console (errors of its scripts, failed requests) beside the screenshots. */
  private void saveConsoleLog(String name) {
    try {
      Files.createDirectories(artifacts);
      Files.writeString(artifacts.resolve(name), console());
    } catch (RuntimeException | IOException e) {
      // a missing log is no test failure
    }
  }
}
