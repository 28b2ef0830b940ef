package dev.gpushare.http.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import dev.gpushare.http.server.ApiDirectives;
import dev.gpushare.http.server.HttpLimits;
import dev.gpushare.http.server.Json;
import dev.gpushare.http.server.WatchLimits;
import dev.gpushare.node.api.GpuShareReader;
import dev.gpushare.node.api.GpuShareReader.ChangeListener;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import org.apache.pekko.NotUsed;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.MediaTypes;
import org.apache.pekko.http.javadsl.model.headers.CacheControl;
import org.apache.pekko.http.javadsl.model.headers.CacheDirectives;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.http.javadsl.server.PathMatchers;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.stream.BoundedSourceQueue;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * The live dashboard and the change stream it listens to.
 *
 * <ul>
 *   <li>{@code GET /dashboard} (and {@code /dashboard/}): the page; {@code GET /dashboard/<file>}:
 *       its static assets, plain files from the class path folder {@code dashboard/} (no build
 *       step, nothing loaded from elsewhere). An unknown asset is the usual {@code 404} problem.
 *   <li>{@code GET /v1/watch}: Server-Sent Events, one {@code change} event whenever a node or a
 *       pod changes ({@link GpuShareReader#subscribe}): {@code {"kind":"node","node":"…"}} or
 *       {@code {"kind":"pod","namespace":"…","name":"…", "deleted":false}}. The events say only
 *       <em>what</em> changed: a client reads the views it shows again. A client slower than the
 *       changes gets each changed object once (repeats are merged while it is behind): nothing is
 *       lost, and no backlog grows. An idle stream carries a comment line every {@link #HEARTBEAT}.
 *       Streams count against {@link WatchLimits}.
 * </ul>
 */
public final class DashboardRoutes extends ApiDirectives {
  static final Duration HEARTBEAT = DataPlaneRoutes.HEARTBEAT;

  private static final String RESOURCES = "dashboard";

  /**
   * The page runs only its own script and style and talks only to this server (its token must not
   * leave it).
   */
  private static final List<HttpHeader> PAGE_HEADERS =
      List.of(
          CacheControl.create(CacheDirectives.NO_CACHE),
          RawHeader.create(
              "Content-Security-Policy",
              "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self';"
                  + " connect-src 'self'; frame-ancestors 'none'; base-uri 'none';"
                  + " form-action 'none'"),
          RawHeader.create("X-Content-Type-Options", "nosniff"),
          RawHeader.create("Referrer-Policy", "no-referrer"));

  /** One {@code change} event's payload. */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  record Change(String kind, String node, String namespace, String name, Boolean deleted) {
    static Change node(String node) {
      return new Change("node", node, null, null, null);
    }

    static Change pod(String namespace, String name, boolean deleted) {
      return new Change("pod", null, namespace, name, deleted);
    }
  }

  private final GpuShareReader service;
  private final Duration heartbeat;
  private final WatchLimits watches;

  /** With the default {@link HttpLimits}. */
  public DashboardRoutes(GpuShareReader service) {
    this(service, HEARTBEAT, WatchLimits.of(HttpLimits.DEFAULT));
  }

  /** With another heartbeat period (tests). */
  DashboardRoutes(GpuShareReader service, Duration heartbeat) {
    this(service, heartbeat, WatchLimits.of(HttpLimits.DEFAULT));
  }

  /** {@code /v1/watch} streams count against {@code watches}. */
  DashboardRoutes(GpuShareReader service, Duration heartbeat, WatchLimits watches) {
    this.service = service;
    this.heartbeat = heartbeat;
    this.watches = watches;
  }

  public Route route() {
    return concat(
        path(
            PathMatchers.segment("v1").slash("watch"),
            () ->
                get(
                    () ->
                        asWatch(
                            watches,
                            () ->
                                complete(
                                    HttpResponse.create()
                                        .addHeader(CacheControl.create(CacheDirectives.NO_CACHE))
                                        .withEntity(
                                            HttpEntities.create(
                                                MediaTypes.TEXT_EVENT_STREAM.toContentType(),
                                                changes())))))),
        pathPrefix(
            RESOURCES,
            () ->
                get(
                    () ->
                        respondWithHeaders(
                            PAGE_HEADERS,
                            () ->
                                concat(
                                    pathEndOrSingleSlash(
                                        () -> getFromResource(RESOURCES + "/index.html")),
                                    getFromResourceDirectory(RESOURCES))))));
  }

  /**
   * The SSE stream of one client: subscribed when the response is materialized, unsubscribed when
   * it ends (the client went away or the server stops). Changes wait in a {@link PendingChanges}
   * set, which a one-slot queue of wake-ups drains as fast as the client reads: nothing is dropped,
   * and an object that changes again before it was sent is sent once.
   */
  Source<ByteString, NotUsed> changes() {
    PendingChanges pending = new PendingChanges();
    return Source.<Boolean>queue(1)
        .mapMaterializedValue(wakeUps -> subscribe(pending, wakeUps))
        .watchTermination(
            (subscription, done) -> {
              done.whenComplete((d, failure) -> close(subscription));
              return NotUsed.getInstance();
            })
        .mapConcat(wakeUp -> pending.drain())
        .map(change -> ByteString.fromString("event: change\ndata: " + Json.text(change) + "\n\n"))
        .prepend(Source.single(ByteString.fromString(": watching nodes and pods\n\n")))
        .keepAlive(heartbeat, () -> ByteString.fromString(":\n\n"));
  }

  private AutoCloseable subscribe(PendingChanges pending, BoundedSourceQueue<Boolean> wakeUps) {
    return service.subscribe(
        new ChangeListener() {
          @Override
          public void nodeChanged(String node) {
            pending.add(Change.node(node));
            wakeUps.offer(Boolean.TRUE); // dropped when a wake-up is pending already: fine
          }

          @Override
          public void podChanged(String namespace, String name, boolean deleted) {
            pending.add(Change.pod(namespace, name, deleted));
            wakeUps.offer(Boolean.TRUE);
          }
        });
  }

  /**
   * The changes of one stream not yet sent, in the order they first happened; a change equal to a
   * pending one is not added again. At most one entry per node and pod (and deletion flag).
   */
  static final class PendingChanges {
    private LinkedHashSet<Change> changes = new LinkedHashSet<>();

    synchronized void add(Change change) {
      changes.add(change);
    }

    /** Everything pending, oldest first; empty afterwards. */
    synchronized List<Change> drain() {
      List<Change> all = List.copyOf(changes);
      changes = new LinkedHashSet<>();
      return all;
    }
  }

  private static void close(AutoCloseable subscription) {
    try {
      subscription.close();
    } catch (Exception e) {
      // nothing more to stop
    }
  }
}
