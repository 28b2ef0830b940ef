package dev.gpushare.gpu.pod;

/**
 * {@link ComputeLimitTest} once more with the library and the test programs built with
 * AddressSanitizer and UndefinedBehaviorSanitizer (a finding ends the process and fails the test):
 * the limiter's shared bucket, its controller thread and its reports under the sanitizers.
 */
class ComputeLimitSanitizedTest extends ComputeLimitTest {
  @Override
  NativeBuild build() {
    return NativeBuild.asan();
  }
}
