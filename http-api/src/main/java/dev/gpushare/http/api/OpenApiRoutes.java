package dev.gpushare.http.api;

import dev.gpushare.http.server.ApiDirectives;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.CacheControl;
import org.apache.pekko.http.javadsl.model.headers.CacheDirectives;
import org.apache.pekko.http.javadsl.server.PathMatchers;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code GET /v1/openapi.json}: the OpenAPI 3.1 description of API v1, the class path resource
 * {@value #RESOURCE}, served as it is. Public (no token): it holds no data. The end-to-end test
 * {@code OpenApiTest} checks it against the running server: every endpoint in it, every status,
 * content type and body the server answers.
 */
public final class OpenApiRoutes extends ApiDirectives {
  /** Where the document lives on the class path. */
  public static final String RESOURCE = "openapi/gpushare-v1.json";

  private final byte[] document;

  public OpenApiRoutes() {
    this.document = load();
  }

  /** The document's bytes, as served. */
  public static byte[] load() {
    try (InputStream in = OpenApiRoutes.class.getClassLoader().getResourceAsStream(RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(RESOURCE + " is missing from the class path");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + RESOURCE, e);
    }
  }

  public Route route() {
    HttpResponse response =
        HttpResponse.create()
            .addHeader(CacheControl.create(CacheDirectives.NO_CACHE))
            .withEntity(HttpEntities.create(ContentTypes.APPLICATION_JSON, document));
    return path(
        PathMatchers.segment("v1").slash("openapi.json"), () -> get(() -> complete(response)));
  }
}
