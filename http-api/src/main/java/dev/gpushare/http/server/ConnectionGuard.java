package dev.gpushare.http.server;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.pekko.NotUsed;
import org.apache.pekko.http.javadsl.model.AttributeKey;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.stream.Attributes;
import org.apache.pekko.stream.BidiShape;
import org.apache.pekko.stream.Inlet;
import org.apache.pekko.stream.Outlet;
import org.apache.pekko.stream.javadsl.BidiFlow;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.stage.AbstractInHandler;
import org.apache.pekko.stream.stage.AbstractOutHandler;
import org.apache.pekko.stream.stage.AsyncCallback;
import org.apache.pekko.stream.stage.GraphStage;
import org.apache.pekko.stream.stage.GraphStageLogic;
import org.apache.pekko.stream.stage.TimerGraphStageLogic;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One HTTP connection's guard, between the server's parser and the routes: a connection with no
 * request in flight for {@code headerReadTimeout} is closed. That covers a connection that never
 * sends a byte, one that sends a request head slower than that (a request reaches the routes only
 * once its head is complete), and a keep-alive connection left idle after its last response.
 *
 * <p>pekko-http has no such timeout of its own: its {@code idle-timeout} counts silence in both
 * directions, so it must stay longer than the longest grant long poll (which is silent until it
 * answers) and would let a connection that says nothing hold its place that long. Here a request is
 * in flight from the end of its head until its response has been sent completely (a watch: until
 * its stream ends), so neither long polls nor watches are cut.
 *
 * <p>Every request carries its {@link Connection} ({@link #CONNECTION}): what a request holds for
 * as long as it runs (a {@link WatchLimits.Permit}) is given back when the connection ends, even
 * when the response never reached the client.
 */
public final class ConnectionGuard
    extends GraphStage<BidiShape<HttpRequest, HttpRequest, HttpResponse, HttpResponse>> {

  /** The request's connection. */
  public static final AttributeKey<Connection> CONNECTION =
      AttributeKey.create("gpushare-connection", Connection.class);

  private static final Logger LOG = LoggerFactory.getLogger(ConnectionGuard.class);
  private static final String IDLE = "idle";

  private final Duration headerReadTimeout;
  private final Inlet<HttpRequest> requestIn = Inlet.create("ConnectionGuard.requestIn");
  private final Outlet<HttpRequest> requestOut = Outlet.create("ConnectionGuard.requestOut");
  private final Inlet<HttpResponse> responseIn = Inlet.create("ConnectionGuard.responseIn");
  private final Outlet<HttpResponse> responseOut = Outlet.create("ConnectionGuard.responseOut");
  private final BidiShape<HttpRequest, HttpRequest, HttpResponse, HttpResponse> shape =
      BidiShape.of(requestIn, requestOut, responseIn, responseOut);

  private ConnectionGuard(Duration headerReadTimeout) {
    this.headerReadTimeout = headerReadTimeout;
  }

  /** {@code handler} behind a guard: the flow to materialize once per connection. */
  public static Flow<HttpRequest, HttpResponse, NotUsed> around(
      Duration headerReadTimeout, Flow<HttpRequest, HttpResponse, ?> handler) {
    return BidiFlow.fromGraph(new ConnectionGuard(headerReadTimeout))
        .join(handler)
        .mapMaterializedValue(m -> NotUsed.getInstance());
  }

  @Override
  public BidiShape<HttpRequest, HttpRequest, HttpResponse, HttpResponse> shape() {
    return shape;
  }

  @Override
  public GraphStageLogic createLogic(Attributes inheritedAttributes) {
    return new TimerGraphStageLogic(shape) {
      private final Connection connection = new Connection();
      private int inFlight;
      private AsyncCallback<NotUsed> responseSent;

      {
        setHandler(
            requestIn,
            new AbstractInHandler() {
              @Override
              public void onPush() {
                HttpRequest request = grab(requestIn);
                inFlight++;
                cancelTimer(IDLE);
                push(requestOut, request.addAttribute(CONNECTION, connection));
              }

              @Override
              public void onUpstreamFinish() {
                // the client sent its last request; the responses still go out
                complete(requestOut);
              }
            });
        setHandler(
            requestOut,
            new AbstractOutHandler() {
              @Override
              public void onPull() {
                pull(requestIn);
              }
            });
        setHandler(
            responseIn,
            new AbstractInHandler() {
              @Override
              public void onPush() {
                HttpResponse response = grab(responseIn);
                if (response.entity().isStrict()) {
                  push(responseOut, response);
                  sent();
                } else {
                  push(
                      responseOut,
                      response.transformEntityDataBytes(
                          Flow.of(ByteString.class)
                              .watchTermination(
                                  (mat, done) -> {
                                    done.whenComplete(
                                        (d, failure) -> responseSent.invoke(NotUsed.getInstance()));
                                    return mat;
                                  })));
                }
              }
            });
        setHandler(
            responseOut,
            new AbstractOutHandler() {
              @Override
              public void onPull() {
                pull(responseIn);
              }
            });
      }

      @Override
      public void preStart() {
        responseSent = createAsyncCallback(n -> sent());
        scheduleOnce(IDLE, headerReadTimeout);
      }

      private void sent() {
        inFlight--;
        if (inFlight == 0) {
          scheduleOnce(IDLE, headerReadTimeout);
        }
      }

      @Override
      public void onTimer(Object key) {
        if (inFlight == 0) {
          LOG.debug(
              "closing a connection without a request for {} (gpushare.http.header-read-timeout)",
              headerReadTimeout);
          completeStage();
        }
      }

      @Override
      public void postStop() {
        connection.close();
      }
    };
  }

  /**
   * One connection, as its requests see it: what they hold is released when it ends (at the
   * latest).
   */
  static final class Connection {
    private final Set<WatchLimits.Permit> held = new HashSet<>();
    private boolean closed;

    /** Keeps {@code permit} until it is released, or this connection ends. */
    void hold(WatchLimits.Permit permit) {
      synchronized (this) {
        if (!closed) {
          held.add(permit);
          permit.onRelease(() -> forget(permit));
          return;
        }
      }
      permit.release();
    }

    private synchronized void forget(WatchLimits.Permit permit) {
      held.remove(permit);
    }

    void close() {
      List<WatchLimits.Permit> left;
      synchronized (this) {
        closed = true;
        left = new ArrayList<>(held);
        held.clear();
      }
      left.forEach(WatchLimits.Permit::release);
    }
  }
}
