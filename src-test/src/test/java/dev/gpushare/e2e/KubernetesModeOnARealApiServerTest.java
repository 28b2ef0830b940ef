package dev.gpushare.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.regex.Pattern;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;

/**
 * Every scenario of {@link KubernetesModeTest} again, against a real kube-apiserver built from the
 * Kubernetes v1.37.2 modules (issue 33, items 2 and 6) instead of the fabric8 mock: real
 * validation, defaulting, admission, optimistic locking and watch semantics, and the member on the
 * shipped ServiceAccount's RBAC only ({@link RealKubeApiServer}; an RBAC denial in its log fails
 * the class). Node status and the {@code GPUSharePolicy*} conditions as {@code
 * deploy/examples/node-status-reference.yaml} shows them, pod annotations and conditions, Events;
 * the member SIGKILLed and restarted (status and conditions written again, no Event twice, no write
 * lost). Last, what those scenarios wrote is read back with the real kubectl, with the commands of
 * deploy/README.md's "Watch it".
 */
class KubernetesModeOnARealApiServerTest extends KubernetesModeTest {

  @Override
  KubeApiServer apiServer() {
    return RealKubeApiServer.start();
  }

  /** deploy/README.md, "Watch it", on what the ordered scenarios left in the main cluster. */
  @Test
  @Order(100)
  void kubectlShowsWhatTheScenariosWroteAsTheReadmeSays() {
    var kubectl = ((RealKubeApiServer) main.kube).plane().kubectl();

    // kubectl get node <node> -o jsonpath='{.status.allocatable}{"\n"}'
    String allocatable =
        kubectl
            .run("get", "node", "ref-example", "-o", "jsonpath={.status.allocatable}{\"\\n\"}")
            .ok()
            .out();
    assertTrue(
        allocatable.contains("\"alibabacloud.com/gpu-core.percentage\":\"200\"")
            && allocatable.contains("\"alibabacloud.com/gpu-memory.percentage\":\"200\""),
        () -> "two GPUs: 200 % of each percentage resource: " + allocatable);

    // kubectl get node <node> -o jsonpath='{range
    // .status.conditions[?(@.type=="GPUSharePolicyValid")]}…'
    String valid =
        kubectl
            .run(
                "get",
                "node",
                "ref-example",
                "-o",
                "jsonpath={range .status.conditions[?(@.type==\"GPUSharePolicyValid\")]}{.status}"
                    + " {.reason}: {.message}{\"\\n\"}{end}")
            .ok()
            .out();
    assertEquals("True Valid: gpu share policy config is valid.\n", valid);

    // kubectl get pod … -o jsonpath='{.metadata.annotations}{"\n"}{.status.conditions}{"\n"}'
    String pod =
        kubectl
            .run(
                "get",
                "pod",
                "old",
                "-o",
                "jsonpath={.metadata.annotations}{\"\\n\"}{.status.conditions}{\"\\n\"}")
            .ok()
            .out();
    assertTrue(
        pod.contains("\"alibabacloud.com/gpu-core-limit\":\"100\"")
            && pod.contains("\"type\":\"" + RECLAIM + "\"")
            && pod.contains("\"reason\":\"GPUSharePreempted\"")
            && pod.contains("\"message\":\"GPU is preempted by new.\""),
        () -> "the preempted pod's annotations and condition: " + pod);

    // kubectl describe pod … : the condition and the Events, source gpushare
    String described = kubectl.run("describe", "pod", "old").ok().out();
    assertTrue(
        Pattern.compile("(?m)^\\s+" + Pattern.quote(RECLAIM) + "\\s+True\\s*$")
            .matcher(described)
            .find(),
        () -> "describe lists the condition: " + described);
    assertTrue(
        Pattern.compile("(?m)^\\s+Warning\\s+GPUSharePreempted\\s.*GPU is preempted by new\\.$")
            .matcher(described)
            .find(),
        () -> "describe lists the Event: " + described);

    // kubectl get events -A --field-selector reason=GPUSharePreempted   (the README adds -w)
    String events =
        kubectl
            .run("get", "events", "-A", "--field-selector", "reason=GPUSharePreempted")
            .ok()
            .out();
    assertEquals(
        1,
        events
            .lines()
            .filter(l -> l.contains("pod/old") && l.contains("GPU is preempted by new."))
            .count(),
        () -> "one GPUSharePreempted Event, for old: " + events);
  }
}
