package dev.gpushare.http.api;

import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.http.server.ApiDirectives;
import dev.gpushare.http.server.ManifestReader;
import dev.gpushare.node.api.GpuShareService;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.model.headers.Location;
import org.apache.pekko.http.javadsl.server.PathMatchers;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * Pods (API.md "Pods"): {@code GET /v1/pods} (optionally {@code ?node=}), {@code GET
 * /v1/namespaces/{ns}/pods/{name}}; in embedded mode {@code POST /v1/pods} from a Pod manifest in
 * JSON or YAML ({@code 201} and the PodView; the namespace defaults to {@code default}) and {@code
 * DELETE /v1/namespaces/{ns}/pods/{name}} ({@code 200} and the pod's last view).
 */
public final class PodRoutes extends ApiDirectives {
  private final GpuShareService service;

  public PodRoutes(GpuShareService service) {
    this.service = service;
  }

  public Route route() {
    return concat(
        path(
            PathMatchers.segment("v1").slash("pods"),
            () ->
                concat(
                    get(
                        () ->
                            parameterOptional(
                                "node",
                                node ->
                                    answerOk(
                                        () ->
                                            service
                                                .pods(node.filter(n -> !n.isBlank()))
                                                .thenApply(Items::new)))),
                    post(() -> withBody(this::createPod)))),
        podPath(
            (namespace, name) ->
                pathEnd(
                    () ->
                        concat(
                            get(() -> answerOk(() -> service.pod(namespace, name))),
                            delete(() -> answerOk(() -> service.deletePod(namespace, name)))))));
  }

  private Route createPod(HttpEntity.Strict body) {
    PodManifest manifest = ManifestReader.pod(body.getData().toArray(), manifestFormat(body));
    return answer(
        () -> service.createPod(manifest),
        pod ->
            json(StatusCodes.CREATED, pod)
                .addHeader(
                    Location.create("/v1/namespaces/" + pod.namespace() + "/pods/" + pod.name())));
  }
}
