package dev.gpushare.gpu.pod;

/**
 * {@link PodSideScenarios} once more with the library and the test programs built with
 * AddressSanitizer and UndefinedBehaviorSanitizer (a finding ends the process and fails the test).
 */
class PodSideSanitizedTest extends PodSideScenarios {
  @Override
  NativeBuild build() {
    return NativeBuild.asan();
  }
}
