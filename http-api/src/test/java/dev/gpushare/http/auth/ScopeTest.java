package dev.gpushare.http.auth;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ScopeTest {

  @Test
  void healthReadinessOpenApiAndTheDashboardsFilesArePublic() {
    for (String path :
        new String[] {
          "/healthz", "/readyz", "/v1/openapi.json", "/dashboard", "/dashboard/app.js"
        }) {
      assertTrue(Scope.of("GET", path).isPublic(), path);
    }
    assertFalse(Scope.of("POST", "/dashboard").isPublic());
    assertFalse(Scope.of("GET", "/metrics").isPublic());
    assertFalse(Scope.of("GET", "/v1/nodes").isPublic());
    assertFalse(Scope.of("GET", "/healthz/../v1/nodes").isPublic());
  }

  @Test
  void everyEndpointIsAVerbOnAResource() {
    assertEquals("get metrics", Scope.of("GET", "/metrics").describe());
    assertEquals("list nodes", Scope.of("GET", "/v1/nodes").describe());
    assertEquals("get nodes \"n1\"", Scope.of("GET", "/v1/nodes/n1").describe());
    assertEquals("get nodes/queue \"n1\"", Scope.of("GET", "/v1/nodes/n1/queue").describe());
    assertEquals("update nodes \"n1\"", Scope.of("PUT", "/v1/nodes/n1").describe());
    assertEquals("update nodes \"n1\"", Scope.of("PATCH", "/v1/nodes/n1").describe());
    assertEquals(
        "update nodes/gpus \"n1\"", Scope.of("PUT", "/v1/nodes/n1/gpus/0/health").describe());
    assertEquals("list pods", Scope.of("GET", "/v1/pods").describe());
    assertEquals("create pods", Scope.of("POST", "/v1/pods").describe());
    assertEquals(
        "delete pods \"team/a\"", Scope.of("DELETE", "/v1/namespaces/team/pods/a").describe());
    assertEquals(
        "create pods/demand \"team/a\"",
        Scope.of("POST", "/v1/namespaces/team/pods/a/demand").describe());
    assertEquals(
        "delete pods/demand \"team/a\"",
        Scope.of("DELETE", "/v1/namespaces/team/pods/a/demand").describe());
    assertEquals(
        "create pods/compute \"team/a\"",
        Scope.of("POST", "/v1/namespaces/team/pods/a/compute").describe());
    assertEquals("get journal", Scope.of("GET", "/v1/journal/events").describe());
    assertEquals(
        "get pods/history \"team/a\"",
        Scope.of("GET", "/v1/namespaces/team/pods/a/history").describe());
    assertEquals("create clock", Scope.of("POST", "/v1/clock/advance").describe());
    assertEquals("watch changes", Scope.of("GET", "/v1/watch").describe());
  }

  @Test
  void aPodsDataPlaneIsItsViewDemandGrantWatchAndComputeReportOnly() {
    assertTrue(Scope.of("GET", "/v1/namespaces/t/pods/a").podDataPlane());
    assertTrue(Scope.of("POST", "/v1/namespaces/t/pods/a/demand").podDataPlane());
    assertTrue(Scope.of("DELETE", "/v1/namespaces/t/pods/a/demand").podDataPlane());
    assertTrue(Scope.of("GET", "/v1/namespaces/t/pods/a/grant").podDataPlane());
    assertTrue(Scope.of("GET", "/v1/namespaces/t/pods/a/watch").podDataPlane());
    assertTrue(Scope.of("POST", "/v1/namespaces/t/pods/a/compute").podDataPlane());
    assertFalse(Scope.of("GET", "/v1/namespaces/t/pods/a/compute").podDataPlane(), "only a report");
    assertFalse(Scope.of("DELETE", "/v1/namespaces/t/pods/a/compute").podDataPlane());
    assertTrue(Scope.of("GET", "/v1/namespaces/t/pods/a/processes").podDataPlane());
    assertFalse(Scope.of("POST", "/v1/namespaces/t/pods/a/processes").podDataPlane(), "only read");
    assertFalse(Scope.of("DELETE", "/v1/namespaces/t/pods/a").podDataPlane(), "deleting a pod");
    assertFalse(
        Scope.of("GET", "/v1/namespaces/t/pods/a/history").podDataPlane(),
        "its history names other pods");
    assertFalse(Scope.of("GET", "/v1/pods").podDataPlane());
    assertFalse(Scope.of("PUT", "/v1/nodes/n1").podDataPlane());
  }
}
