package dev.gpushare.gpu.pod;

/** {@link PodSideScenarios} on the library as it ships. */
class PodSideTest extends PodSideScenarios {
  @Override
  NativeBuild build() {
    return NativeBuild.plain();
  }
}
