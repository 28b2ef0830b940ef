package dev.gpushare.cli;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

/** {@code gpushare run}: the options and the help text; the work is {@link WorkloadRunner}'s. */
@Command(
    name = "run",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Run CMD as the pod's GPU workload: raise the pod's demand, wait for a GPU, run CMD on it,"
          + " release it when CMD exits.",
      "",
      "While the pod waits (Ready), this prints on stderr every --interval, the first at once:",
      "  You have been waiting for $${1} seconds. Approximate position: $${2}",
      "($${1} seconds in Ready, $${2} the 1-based position in the node's ready queue).",
      "",
      "When the pod is Running, CMD starts with the pod's workload environment:"
          + " CUDA_VISIBLE_DEVICES (the GPU's UUID), CUDA_MPS_ACTIVE_THREAD_PERCENTAGE,"
          + " CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (and the MPS directories when the node runs MPS),"
          + " plus GPUSHARE_GPU_INDEX and GPUSHARE_GPU_UUID, and LD_PRELOAD without"
          + " libgpushare.so (this command's signal contract replaces the library's). Its stdin,"
          + " stdout and stderr are this command's.",
      "",
      "Signals:",
      "  SIGINT, SIGTERM, SIGHUP sent to this command are forwarded to CMD; when CMD exits the"
          + " demand is released and this command exits with CMD's status. Received while"
          + " waiting, they withdraw the demand (exit 128 + the signal's number).",
      "  SIGUSR1 is sent to CMD when the pod leaves Running while CMD runs (preempted by a"
          + " waiting pod, or its share revoked or released): \"your GPU share was preempted"
          + " or revoked: checkpoint and exit\". If CMD still runs --grace later it gets SIGTERM,"
          + " and --grace after that SIGKILL.",
      "  Then, if the pod still wants a GPU (Ready), this waits for the grant again and starts"
          + " CMD again, maybe on another GPU (new environment); if the pod is in Hibernation"
          + " (released or revoked) or deleted, it exits with CMD's status.",
      "",
      "The pod: --pod, else $GPUSHARE_POD (NS/NAME), else $POD_NAMESPACE and $POD_NAME (the"
          + " downward API). Options end at CMD (or at --).",
    })
final class RunCommand implements Callable<Integer> {

  @ParentCommand GpushareCli cli;

  @Option(names = "--pod", paramLabel = "NS/NAME", description = "the pod this workload is for")
  String pod;

  @Option(
      names = "--interval",
      paramLabel = "DURATION",
      converter = Durations.Converter.class,
      defaultValue = "10s",
      description = "how often the waiting line is printed, at least 1s; default ${DEFAULT-VALUE}")
  Duration interval;

  @Option(
      names = "--grace",
      paramLabel = "DURATION",
      converter = Durations.Converter.class,
      defaultValue = "30s",
      description =
          "after SIGUSR1, how long CMD may take to exit before SIGTERM (and SIGKILL after as"
              + " long again); default ${DEFAULT-VALUE}")
  Duration grace;

  @Parameters(paramLabel = "CMD", arity = "1..*", description = "the command and its arguments")
  List<String> command;

  @Override
  public Integer call() throws Exception {
    if (interval.compareTo(Duration.ofSeconds(1)) < 0) {
      throw new CliException("--interval " + interval.toMillis() + "ms: give 1s or more");
    }
    PodRef ref = PodRef.ofWorkload(pod, cli.env());
    return new WorkloadRunner(
            cli.client(), ref, command, interval, grace, cli.signals(), cli.err(), cli.env())
        .run();
  }
}
