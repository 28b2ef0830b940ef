package dev.gpushare.gpu;

import java.util.List;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The last line of "no test can hang the build": once every test of this JVM (a Surefire fork) has
 * run, each process a test left running is killed with its whole tree ({@link
 * ChildProcess#killTree}), and a line on standard error names it. A process that outlives its test
 * keeps the fork's output open, and Maven waits for that output to end whatever its fork timeouts
 * say (forkedProcessTimeoutInSeconds has no fork left to kill). Tests still end what they start;
 * this catches what one of them missed.
 *
 * <p>Registered for every test class by JUnit's extension auto-detection ({@code
 * junit.jupiter.extensions.autodetection.enabled} in junit-platform.properties and this module's
 * {@code META-INF/services}), in this module and, through its test-jar, in http-api and src-test.
 * The kill runs when JUnit closes the root context's store: after the last test class.
 */
public final class LeftProcesses implements BeforeAllCallback {

  @Override
  public void beforeAll(ExtensionContext context) {
    context
        .getRoot()
        .getStore(ExtensionContext.Namespace.GLOBAL)
        .getOrComputeIfAbsent(
            LeftProcesses.class,
            k -> (ExtensionContext.Store.CloseableResource) LeftProcesses::killAll,
            ExtensionContext.Store.CloseableResource.class);
  }

  /** Kills every child of this JVM and its descendants; answers those that were still running. */
  static List<ProcessHandle> killAll() {
    List<ProcessHandle> left = ProcessHandle.current().children().toList();
    for (ProcessHandle p : left) {
      System.err.println(
          "gpushare tests: pid "
              + p.pid()
              + " ("
              + p.info().commandLine().orElse("?")
              + ") was left running by a test: killed with its descendants");
      ChildProcess.killTree(p);
    }
    return left;
  }
}
