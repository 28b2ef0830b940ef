package dev.gpushare.http.api;

import com.fasterxml.jackson.databind.JsonNode;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.gpu.GpuProcess;
import dev.gpushare.http.server.ApiDirectives;
import dev.gpushare.http.server.ManifestReader;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.Views.Health;
import dev.gpushare.node.api.Views.NodeView;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.model.headers.Location;
import org.apache.pekko.http.javadsl.server.PathMatchers;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * Nodes (API.md "Nodes"): {@code GET /v1/nodes}, {@code GET /v1/nodes/{node}}, {@code GET
 * /v1/nodes/{node}/queue}; in embedded mode {@code PUT /v1/nodes/{node}} from a Node manifest in
 * JSON or YAML ({@code 201} when the node is new, {@code 200} when replaced; the body is the
 * NodeView either way) and {@code PATCH /v1/nodes/{node}}, a JSON merge patch of labels and
 * annotations ({@link NodeMergePatch}); {@code PUT /v1/nodes/{node}/gpus/{index}/health}; and
 * {@code PUT /v1/nodes/{node}/gpus/{index}/processes}, a simulated GPU's compute processes.
 */
public final class NodeRoutes extends ApiDirectives {
  static final List<String> PATCH_MEDIA_TYPES =
      List.of("application/merge-patch+json", "application/json");

  private final GpuShareService service;

  public NodeRoutes(GpuShareService service) {
    this.service = service;
  }

  public Route route() {
    return pathPrefix(
        "v1",
        () ->
            pathPrefix(
                "nodes",
                () ->
                    concat(
                        pathEnd(
                            () -> get(() -> answerOk(() -> service.nodes().thenApply(Items::new)))),
                        pathPrefix(
                            name ->
                                concat(
                                    pathEnd(
                                        () ->
                                            concat(
                                                get(() -> answerOk(() -> service.node(name))),
                                                put(() -> withBody(body -> putNode(name, body))),
                                                patch(
                                                    () ->
                                                        withBody(body -> patchNode(name, body))))),
                                    path(
                                        PathMatchers.segment("gpus")
                                            .slash(PathMatchers.integerSegment())
                                            .slash("health"),
                                        index ->
                                            put(
                                                () ->
                                                    withBody(
                                                        body -> setHealth(name, index, body)))),
                                    path(
                                        PathMatchers.segment("gpus")
                                            .slash(PathMatchers.integerSegment())
                                            .slash("processes"),
                                        index ->
                                            put(
                                                () ->
                                                    withBody(
                                                        body -> scriptGpu(name, index, body)))),
                                    path(
                                        "queue",
                                        () ->
                                            get(
                                                () ->
                                                    answerOk(
                                                        () ->
                                                            service
                                                                .queue(name)
                                                                .thenApply(Items::new)))))))));
  }

  /**
   * Embedded mode: {@code PUT /v1/nodes/{node}/gpus/{index}/health} with {@code
   * {"health":"Healthy"|"Unhealthy"}} — the simulator's way to fail a GPU or bring it back.
   */
  private Route setHealth(String name, int index, HttpEntity.Strict body) {
    JsonNode root =
        ManifestReader.parse(
            body.getData().toArray(),
            ManifestReader.Format.JSON,
            "{\"health\":\"Healthy\"} or {\"health\":\"Unhealthy\"}");
    JsonNode health = root == null ? null : root.get("health");
    Optional<Health> value =
        health == null || !health.isTextual()
            ? Optional.empty()
            : Health.fromDisplay(health.asText());
    if (value.isEmpty()) {
      String given = health == null ? null : health.toString();
      throw ServiceException.of(
          ServiceException.Kind.INVALID,
          new FieldError(
              "health", given, "health is " + given + "; want \"Healthy\" or \"Unhealthy\""));
    }
    return answerOk(() -> service.setGpuHealth(name, index, value.get().healthy()));
  }

  /**
   * {@code PUT /v1/nodes/{node}/gpus/{index}/processes} with {@code {"processes":[…]}} ({@link
   * GpuProcessesBody}): a simulated GPU's compute processes from now on, which the next telemetry
   * samples report; {@code []} makes the GPU idle again. Answers the NodeView.
   */
  private Route scriptGpu(String name, int index, HttpEntity.Strict body) {
    JsonNode root =
        ManifestReader.parse(
            body.getData().toArray(), ManifestReader.Format.JSON, GpuProcessesBody.EXPECTED);
    List<GpuProcess> processes = GpuProcessesBody.read(root);
    return answerOk(() -> service.scriptGpu(name, index, processes));
  }

  private Route putNode(String name, HttpEntity.Strict body) {
    NodeManifest manifest =
        ManifestReader.node(body.getData().toArray(), manifestFormat(body), name);
    return answer(
        () -> service.putNode(manifest),
        result ->
            json(result.created() ? StatusCodes.CREATED : StatusCodes.OK, result.node())
                .addHeader(Location.create("/v1/nodes/" + name)));
  }

  private Route patchNode(String name, HttpEntity.Strict body) {
    if (!isOneOf(body, PATCH_MEDIA_TYPES)) {
      throw unsupportedMediaType(body.getContentType(), PATCH_MEDIA_TYPES);
    }
    JsonNode root =
        ManifestReader.parse(
            body.getData().toArray(),
            ManifestReader.Format.JSON,
            "a JSON merge patch of metadata.labels and metadata.annotations");
    NodeMergePatch patch = NodeMergePatch.of(root);
    return answerOk(() -> apply(name, patch));
  }

  /** Removing a whole map needs the keys the node has now; other patches go straight through. */
  private CompletionStage<NodeView> apply(String name, NodeMergePatch patch) {
    if (!patch.clearLabels() && !patch.clearAnnotations()) {
      return service.patchNode(name, patch.labels(), patch.annotations());
    }
    return service
        .node(name)
        .thenCompose(
            current ->
                service.patchNode(
                    name,
                    NodeMergePatch.changes(
                        patch.labels(), patch.clearLabels(), current.labels().keySet()),
                    NodeMergePatch.changes(
                        patch.annotations(),
                        patch.clearAnnotations(),
                        current.annotations().keySet())));
  }
}
