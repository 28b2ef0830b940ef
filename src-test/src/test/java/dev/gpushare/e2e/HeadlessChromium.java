package dev.gpushare.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A headless Chromium driven through chromedriver with the plain W3C WebDriver protocol (JSON over
 * HTTP, no client library): the Debian packages {@code chromium} and {@code chromium-driver}.
 * {@link #find()} says whether both are installed. Everything started here (chromedriver, the
 * browser it starts, the temporary profile) is stopped and removed by {@link #close()}; every call
 * is bounded in time.
 */
final class HeadlessChromium implements AutoCloseable {
  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(60);
  private static final Duration START_TIMEOUT = Duration.ofSeconds(30);
  private static final HttpClient HTTP =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(5))
          .build();

  /** The two executables. */
  record Binaries(Path chromium, Path chromedriver) {}

  private final Process driver;
  private final Path profile;
  private final URI base;
  private final String session;

  /** Both executables on the PATH (or the usual Debian places), or empty. */
  static Optional<Binaries> find() {
    Optional<Path> browser = executable("chromium", "chromium-browser", "google-chrome");
    Optional<Path> driver = executable("chromedriver");
    if (browser.isEmpty() || driver.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(new Binaries(browser.get(), driver.get()));
  }

  private static Optional<Path> executable(String... names) {
    List<Path> dirs = new ArrayList<>();
    for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
      if (!dir.isBlank()) {
        dirs.add(Path.of(dir));
      }
    }
    dirs.add(Path.of("/usr/bin"));
    dirs.add(Path.of("/usr/lib/chromium"));
    for (String name : names) {
      for (Path dir : dirs) {
        Path p = dir.resolve(name);
        if (Files.isRegularFile(p) && Files.isExecutable(p)) {
          return Optional.of(p);
        }
      }
    }
    return Optional.empty();
  }

  /** Starts chromedriver and a browser session with a window of {@code width × height}. */
  static HeadlessChromium start(Binaries binaries, int width, int height, Path logFile) {
    Path profile;
    try {
      profile = Files.createTempDirectory("gpushare-chromium-");
      Files.createDirectories(logFile.getParent());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    int port = freePort();
    Process driver;
    try {
      driver =
          new ProcessBuilder(
                  binaries.chromedriver().toString(),
                  "--port=" + port,
                  "--allowed-ips=127.0.0.1",
                  "--log-path=" + logFile)
              .redirectErrorStream(true)
              .redirectOutput(logFile.resolveSibling(logFile.getFileName() + ".out").toFile())
              .start();
    } catch (IOException e) {
      deleteTree(profile);
      throw new UncheckedIOException("cannot start " + binaries.chromedriver(), e);
    }
    URI base = URI.create("http://127.0.0.1:" + port);
    try {
      awaitReady(driver, base);
      ObjectNode options = Api.JSON.createObjectNode();
      options.put("binary", binaries.chromium().toString());
      ArrayNode args = options.putArray("args");
      for (String a :
          List.of(
              "--headless=new",
              "--no-sandbox",
              "--disable-gpu",
              "--disable-dev-shm-usage",
              "--disable-extensions",
              "--no-first-run",
              "--no-default-browser-check",
              "--hide-scrollbars",
              "--force-device-scale-factor=1",
              "--window-size=" + width + "," + height,
              "--user-data-dir=" + profile)) {
        args.add(a);
      }
      ObjectNode caps = Api.JSON.createObjectNode();
      ObjectNode always = caps.putObject("capabilities").putObject("alwaysMatch");
      always.put("browserName", "chrome");
      always.set("goog:chromeOptions", options);
      always.putObject("goog:loggingPrefs").put("browser", "ALL");
      JsonNode created = call(base, "POST", "/session", caps);
      String session = created.path("sessionId").asText();
      if (session.isEmpty()) {
        throw new IllegalStateException("no session: " + created);
      }
      return new HeadlessChromium(driver, profile, base, session);
    } catch (RuntimeException e) {
      stop(driver);
      deleteTree(profile);
      throw e;
    }
  }

  private HeadlessChromium(Process driver, Path profile, URI base, String session) {
    this.driver = driver;
    this.profile = profile;
    this.base = base;
    this.session = session;
  }

  void navigate(String url) {
    command("POST", "/url", Api.JSON.createObjectNode().put("url", url));
  }

  /** Runs {@code script} (a function body; {@code arguments} are {@code args}) in the page. */
  JsonNode execute(String script, Object... args) {
    ObjectNode body = Api.JSON.createObjectNode().put("script", script);
    ArrayNode a = body.putArray("args");
    for (Object arg : args) {
      a.add(Api.JSON.valueToTree(arg));
    }
    return command("POST", "/execute/sync", body);
  }

  /**
   * The text the user sees in the first element matching {@code css} (its rendered {@code
   * innerText}: hidden parts are left out), or empty when nothing matches. One script, so that a
   * re-render between finding the element and reading it cannot leave a stale reference.
   */
  Optional<String> visibleText(String css) {
    JsonNode text =
        execute(
            "const e = document.querySelector(arguments[0]); return e ? e.innerText : null;", css);
    return text == null || text.isNull() ? Optional.empty() : Optional.of(text.asText());
  }

  /** Types {@code text} into the first element matching {@code css}. */
  void type(String css, String text) {
    command(
        "POST",
        "/element/" + element(css) + "/value",
        Api.JSON.createObjectNode().put("text", text));
  }

  /** Clicks the first element matching {@code css}. */
  void click(String css) {
    command("POST", "/element/" + element(css) + "/click", Api.JSON.createObjectNode());
  }

  private String element(String css) {
    JsonNode found =
        command(
            "POST",
            "/element",
            Api.JSON.createObjectNode().put("using", "css selector").put("value", css));
    return found.elements().next().asText();
  }

  void resize(int width, int height) {
    command(
        "POST",
        "/window/rect",
        Api.JSON.createObjectNode().put("width", width).put("height", height));
  }

  /** A PNG of the viewport, written to {@code file}. */
  void screenshot(Path file) {
    byte[] png = Base64.getDecoder().decode(command("GET", "/screenshot", null).asText());
    try {
      Files.createDirectories(file.getParent());
      Files.write(file, png);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The page's console messages so far (chromedriver's browser log), for failure reports. */
  String consoleLog() {
    try {
      JsonNode entries =
          command("POST", "/se/log", Api.JSON.createObjectNode().put("type", "browser"));
      StringBuilder b = new StringBuilder();
      for (JsonNode e : entries) {
        b.append(e.path("level").asText())
            .append(' ')
            .append(e.path("message").asText())
            .append('\n');
      }
      return b.toString();
    } catch (RuntimeException e) {
      return "(no browser log: " + e.getMessage() + ")";
    }
  }

  @Override
  public void close() {
    try {
      call(base, "DELETE", "/session/" + session, null);
    } catch (RuntimeException e) {
      // the browser is killed below anyway
    } finally {
      stop(driver);
      deleteTree(profile);
    }
  }

  private JsonNode command(String method, String path, JsonNode body) {
    return call(base, method, "/session/" + session + path, body);
  }

  private static JsonNode call(URI base, String method, String path, JsonNode body) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(base.resolve(path))
            .timeout(CALL_TIMEOUT)
            .header("Content-Type", "application/json; charset=utf-8");
    if (body == null && !method.equals("POST")) {
      b.method(method, HttpRequest.BodyPublishers.noBody());
    } else {
      b.method(method, HttpRequest.BodyPublishers.ofString(body == null ? "{}" : body.toString()));
    }
    HttpResponse<String> r;
    try {
      r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException("WebDriver " + method + " " + path + ": " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
    JsonNode json;
    try {
      json = Api.JSON.readTree(r.body());
    } catch (IOException e) {
      throw new IllegalStateException(
          "WebDriver " + method + " " + path + " → " + r.statusCode() + ": " + r.body(), e);
    }
    JsonNode value = json.path("value");
    if (r.statusCode() != 200) {
      throw new IllegalStateException(
          "WebDriver "
              + method
              + " "
              + path
              + " → "
              + r.statusCode()
              + ": "
              + value.path("error").asText()
              + ": "
              + value.path("message").asText());
    }
    return value;
  }

  private static void awaitReady(Process driver, URI base) {
    long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
    RuntimeException last = null;
    while (System.nanoTime() < deadline) {
      if (!driver.isAlive()) {
        throw new IllegalStateException("chromedriver exited with " + driver.exitValue());
      }
      try {
        HttpResponse<String> r =
            HTTP.send(
                HttpRequest.newBuilder(base.resolve("/status"))
                    .timeout(Duration.ofSeconds(2))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() == 200
            && Api.JSON.readTree(r.body()).path("value").path("ready").asBoolean()) {
          return;
        }
      } catch (IOException e) {
        last = new UncheckedIOException(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
      sleep(100);
    }
    throw new IllegalStateException("chromedriver not ready within " + START_TIMEOUT, last);
  }

  /** Kills the browser processes first (chromedriver's children), then chromedriver. */
  private static void stop(Process driver) {
    // listed while chromedriver lives: once it is gone its children are no longer its descendants
    List<ProcessHandle> children = driver.descendants().toList();
    children.forEach(ProcessHandle::destroy);
    driver.destroy();
    try {
      if (!driver.waitFor(10, TimeUnit.SECONDS)) {
        driver.destroyForcibly();
        driver.waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    children.stream().filter(ProcessHandle::isAlive).forEach(ProcessHandle::destroyForcibly);
  }

  private static int freePort() {
    try (ServerSocket s = new ServerSocket(0)) {
      s.setReuseAddress(true);
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static void deleteTree(Path dir) {
    try (Stream<Path> paths = Files.walk(dir)) {
      paths
          .sorted(Comparator.reverseOrder())
          .forEach(
              p -> {
                try {
                  Files.deleteIfExists(p);
                } catch (IOException e) {
                  // a browser still writing: leave the rest to the OS
                }
              });
    } catch (IOException e) {
      // already gone
    }
  }
}
