package dev.gpushare.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Follows one pod through {@code GET …/watch} (Server-Sent Events, one PodView now and one per
 * change) for as long as it is open, whatever happens to the connection: a stream that ends (a
 * server restart, a fail-over), fails or stays silent longer than {@link #SILENCE} (the server
 * sends a comment every 15 s) is opened again after {@link #RETRY}; its first event is the pod as
 * it is then, so nothing is missed for long. A 404 means the pod was deleted: {@code onGone}, and
 * the watch ends.
 */
final class PodWatch implements AutoCloseable {
  static final Duration SILENCE = Duration.ofSeconds(45);
  static final Duration RETRY = Duration.ofSeconds(1);

  private final ApiClient client;
  private final String path;
  private final Consumer<JsonNode> onView;
  private final Runnable onGone;
  private final Consumer<RuntimeException> onTrouble;
  private final Thread reader;
  private final ScheduledExecutorService watchdog;
  private volatile boolean closed;
  private volatile InputStream current;
  private volatile long lastActivityNanos = System.nanoTime();

  PodWatch(
      ApiClient client,
      PodRef pod,
      Consumer<JsonNode> onView,
      Runnable onGone,
      Consumer<RuntimeException> onTrouble) {
    this.client = client;
    this.path = ApiClient.podPath(pod) + "/watch";
    this.onView = onView;
    this.onGone = onGone;
    this.onTrouble = onTrouble;
    this.reader = new Thread(this::follow, "gpushare-watch-" + pod);
    this.reader.setDaemon(true);
    this.watchdog =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "gpushare-watchdog-" + pod);
              t.setDaemon(true);
              return t;
            });
  }

  PodWatch start() {
    reader.start();
    watchdog.scheduleWithFixedDelay(this::checkSilence, 1, 1, TimeUnit.SECONDS);
    return this;
  }

  @Override
  public void close() {
    closed = true;
    watchdog.shutdownNow();
    drop();
    reader.interrupt();
  }

  private void checkSilence() {
    if (System.nanoTime() - lastActivityNanos > SILENCE.toNanos()) {
      lastActivityNanos = System.nanoTime();
      drop();
      reader.interrupt();
    }
  }

  private void drop() {
    InputStream in = current;
    if (in != null) {
      try {
        in.close();
      } catch (IOException e) {
        // closing a stream that failed already
      }
    }
  }

  private void follow() {
    while (!closed) {
      Thread.interrupted();
      lastActivityNanos = System.nanoTime();
      try (InputStream in = client.openStream(path)) {
        current = in;
        if (closed) {
          return;
        }
        read(in);
      } catch (ApiException e) {
        if (e.status() == 404) {
          if (!closed) {
            onGone.run();
          }
          return;
        }
        if (!closed) {
          onTrouble.accept(e);
        }
      } catch (UnreachableException e) {
        if (!closed) {
          onTrouble.accept(e);
        }
      } catch (IOException | RuntimeException e) {
        // the stream broke while reading: open it again
      } finally {
        current = null;
      }
      if (closed) {
        return;
      }
      try {
        Thread.sleep(RETRY.toMillis());
      } catch (InterruptedException e) {
        // closed, or the watchdog: the loop decides
      }
    }
  }

  private void read(InputStream in) throws IOException {
    BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
    StringBuilder data = new StringBuilder();
    String line;
    while (!closed && (line = r.readLine()) != null) {
      lastActivityNanos = System.nanoTime();
      if (line.isEmpty()) {
        if (data.length() > 0) {
          JsonNode view = Output.JSON.readTree(data.toString());
          data.setLength(0);
          if (!closed) {
            onView.accept(view);
          }
        }
      } else if (line.startsWith("data:")) {
        String part = line.substring(5);
        if (data.length() > 0) {
          data.append('\n');
        }
        data.append(part.startsWith(" ") ? part.substring(1) : part);
      }
      // comments (":") and other fields are keep-alives only
    }
  }
}
