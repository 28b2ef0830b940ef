package dev.gpushare.e2e;

/**
 * Every scenario of {@link KubernetesModeTest} again, against a real kube-apiserver built from the
 * Kubernetes v1.37.2 modules (issue 33, items 2 and 6) instead of the fabric8 mock: real
 * validation, defaulting, admission, optimistic locking and watch semantics, and the member on the
 * shipped ServiceAccount's RBAC only ({@link RealKubeApiServer}; an RBAC denial in its log fails
 * the class). Node status and the {@code GPUSharePolicy*} conditions as {@code
 * deploy/examples/node-status-reference.yaml} shows them, pod annotations and conditions, Events;
 * the member SIGKILLed and restarted (status and conditions written again, no Event twice, no write
 * lost).
 */
class KubernetesModeOnARealApiServerTest extends KubernetesModeTest {

  @Override
  KubeApiServer apiServer() {
    return RealKubeApiServer.start();
  }
}
