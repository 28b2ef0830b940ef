package dev.gpushare.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.gpushare.gpu.ChildProcess;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The docs check: every command in a fenced shell block ({@code bash}, {@code sh}, {@code shell},
 * {@code console}) of every Markdown file in the repository is either run here or listed in {@link
 * #LISTED} with the test, harness or CI step that covers it, and every relative link and anchor
 * resolves. A command added to a README without either fails the build.
 *
 * <p><b>Run.</b> A block preceded by {@code <!-- docs: run NAME -->} is run in session {@code
 * NAME}: the session's blocks, in document order ({@code README.md} first, then the other files by
 * path), as one {@code bash -eo pipefail} script — one terminal, so the shell functions a block
 * defines serve the next — in a fresh directory, against a real server on a random port ({@code
 * 127.0.0.1:8080} and {@code localhost:8080} in the text become its address; {@code gpu-actors/}
 * and {@code deploy/} there are the repository's, built). Session {@code walkthrough} runs on the
 * server as the README's first command starts it (the embedded default, the system clock, {@code
 * ./data}); another session starts its server from its block preceded by {@code <!-- docs: server
 * NAME -->} (a {@code java -jar http-api/target/gpushare.jar} command whose {@code --clock} and
 * {@code --data} are used). A command whose comment starts with {@code # ->} must print each {@code
 * …}-separated fragment of that comment, in order; no answer may be a problem with a 4xx or 5xx
 * status.
 *
 * <p><b>Standing alone.</b> A clone on its own runs every command: no file of the repository points
 * outside it (the project folder that once lay beside it, a relative path up out of the root), and
 * no doc names one machine's paths ({@link #OUTSIDE}, {@link #MACHINE_PATH}).
 */
class DocsTest {

  /** The repository root: src-test's parent. */
  static final Path ROOT = root();

  static final Set<String> SHELL = Set.of("bash", "sh", "shell", "console");

  static final Pattern FENCE = Pattern.compile("^(\\s*)(```+|~~~+)\\s*([\\w+-]*).*$");
  static final Pattern MARKER = Pattern.compile("^<!--\\s*docs:\\s*(run|server)\\s+(\\w+)\\s*-->$");
  static final Pattern HEREDOC = Pattern.compile("<<-?\\s*['\"]?(\\w+)['\"]?");
  static final Pattern LINK =
      Pattern.compile("(?<!!)\\[[^\\]]*\\]\\(([^)\\s]+)\\)|!\\[[^\\]]*\\]\\(([^)\\s]+)\\)");
  static final Pattern PROBLEM = Pattern.compile("\"status\"\\s*:\\s*[45]\\d\\d");

  /**
   * Commands that are not run here, each with what covers it: a test or benchmark class of this
   * repository (its source must exist) or {@code .ci/run}. Compared after comments are removed and
   * white space is collapsed; heredoc bodies are data, not commands. Every entry must still appear
   * in some Markdown file.
   */
  static final List<Listed> LISTED =
      List.of(
          // README.md: the two commands. .ci/run is `mvn -B verify` (which packages the jar); the
          // walkthrough session starts the server on the same main class and defaults.
          listed(
              ".ci/run",
              "mvn -B -q -DskipTests package && java -jar http-api/target/gpushare.jar",
              "mvn -B verify"),
          listed("DataPlaneTest", "curl -sN $API/v1/namespaces/default/pods/c/watch"),
          // deploy/README.md: the install, run against a real kube-apiserver
          listed(
              "KubeManifestsTest",
              "kubectl create namespace gpushare-system",
              "kubectl -n gpushare-system create secret generic gpushare-postgres"
                  + " --from-literal=password='…'",
              "kubectl apply -k deploy/",
              "deploy/bootstrap-tls.sh"),
          listed("KubeWebhookTest", "kubectl apply -f deploy/examples/gpu-share-demo.yaml"),
          // deploy/README.md, "Watch it": on what the Kubernetes-mode scenarios wrote
          listed(
              "KubernetesModeOnARealApiServerTest",
              "kubectl get node <node> -o jsonpath='{.status.allocatable}{\"\\n\"}'",
              "kubectl get node <node> -o jsonpath='{range .status.conditions[?(@.type==\"GPUSharePolicyValid\")]}{.status} {.reason}: {.message}{\"\\n\"}{end}'",
              "kubectl get pod gpu-share-demo -o jsonpath='{.metadata.annotations}{\"\\n\"}{.status.conditions}{\"\\n\"}'",
              "kubectl get events -A --field-selector reason=GPUSharePreempted -w",
              "kubectl describe pod gpu-share-demo"),
          // src-test/kube/README.md: .ci/run's Maven build runs build.sh before src-test's tests
          // (src-test/pom.xml); the tests ask with --check
          listed(".ci/run", "bash src-test/kube/build.sh"),
          listed("KubeManifestsTest", "bash src-test/kube/build.sh --check"),
          listed(
              "RealNodeTest",
              "bash src-test/kube/build.sh --node --check",
              "deploy/bootstrap-tls.sh my-gpushare/"),
          // src-test/BENCHMARKS.md "A real API server at scale": the benchmark itself
          listed(
              "KubeScaleBenchmark",
              "bash src-test/kube/build.sh --with-kwok",
              "mvn -B -o -q -pl src-test test -Dtest=KubeScaleBenchmark"
                  + " -Dsurefire.failIfNoSpecifiedTests=false"),
          // deploy/README.md
          listed(
              "DeployManifestsTest",
              "mvn -B -DskipTests install && mvn -B -pl http-api -DskipTests package jib:buildTar",
              "kubectl label node <node> alibabacloud.com/gpu-share-policy=share-pool",
              "kubectl annotate node <node> alibabacloud.com/gpu-share-qos-config='{\"preemptEnabled\": true, \"podMaxDurationMinutes\": 120, \"reservedEphemeralStorage\": \"1.5Ti\"}'",
              "kubectl get node <node> -o yaml",
              "kubectl get pod gpu-share-demo -o yaml",
              "kubectl -n gpushare-system wait --for=condition=complete job/gpushare-init-schema --timeout=10m",
              "kubectl -n gpushare-system logs job/gpushare-init-schema",
              "kubectl -n gpushare-system rollout status daemonset/gpushare",
              "mvn -B -DskipTests install",
              "mvn -B -pl http-api -DskipTests package jib:buildTar",
              "mvn -B -pl http-api -DskipTests package jib:build -Dimage=registry.example.com/gpushare:0.1.0",
              "kubectl -n gpushare-system get certificate,pods -o wide",
              "kubectl get node -l alibabacloud.com/node-type=reserved",
              "kubectl -n gpushare-system get pods -o wide --field-selector spec.nodeName=<node>",
              "kubectl -n gpushare-system logs -f <member-pod>",
              "kubectl -n gpushare-system port-forward <member-pod> 8080 &",
              "kubectl delete -k deploy/",
              "kubectl delete mutatingwebhookconfiguration,validatingwebhookconfiguration gpushare",
              "kubectl delete namespace gpushare-system",
              "kubectl delete clusterrolebinding,clusterrole gpushare"),
          // deploy/monitoring/README.md
          listed(
              "MonitoringRulesTest",
              "kubectl apply -k deploy/monitoring/",
              "mvn -B -pl src-test -am test -Dtest=MonitoringRulesTest"
                  + " -Dsurefire.failIfNoSpecifiedTests=false",
              "cd src-test/target/monitoring && promtool test rules *.test.yaml"),
          listed(
              "PrometheusTest",
              "mvn -B -pl src-test -am test -Dtest=PrometheusTest"
                  + " -Dsurefire.failIfNoSpecifiedTests=false"),
          // deploy/README.md
          listed("KubernetesModeTest", "curl -s http://127.0.0.1:8080/v1/nodes/<node>; echo"),
          // deploy/README.md "The pod side": the namespace step, run against a real API server
          listed(
              "KubeWebhookTest",
              "kubectl label namespace <namespace> pod-security.kubernetes.io/enforce=privileged"
                  + " --overwrite"),
          // deploy/README.md: the library's lines on the workload's stderr
          listed("PodSideTest", "kubectl logs -f <pod>"),
          // README.md "On Kubernetes": the reference manifest through the real webhook, run by a
          // kubelet-like harness, its CUDA program granted through the socket
          listed(
              "PodSideWebhookTest",
              "kubectl apply -f gpu-share-demo.yaml",
              "kubectl exec gpu-share-demo -- python3 train.py"),
          // deploy/mps/README.md
          listed(
              "DeployManifestsTest",
              "kubectl apply -k my-gpushare/",
              "kubectl -n gpushare-system logs daemonset/gpushare -c mps-control",
              "kubectl -n gpushare-system logs <member-pod> -c mps-control",
              "kubectl -n gpushare-system exec <member-pod> -c mps-control -- sh -c 'echo get_server_list | CUDA_MPS_PIPE_DIRECTORY=/run/gpushare/mps/<uuid>/pipe nvidia-cuda-mps-control'",
              "echo get_server_list | CUDA_MPS_PIPE_DIRECTORY=/run/gpushare/mps/<uuid>/pipe nvidia-cuda-mps-control",
              "ls /run/gpushare/mps/<uuid>/pipe",
              "tail /run/gpushare/mps/<uuid>/log/control.log /run/gpushare/mps/<uuid>/log/server.log",
              "nvidia-smi"),
          // http-api/README.md
          listed(
              "GpuTelemetryE2ETest",
              "POD=$(curl -s $API/v1/namespaces/default/pods/gpu-share-demo)",
              "curl -s -X PUT \"$API/v1/nodes/$NODE/gpus/$GPU/processes\" -H 'Content-Type: application/json' -d '{\"processes\":[{\"pid\":4242,\"podUid\":\"'\"$UID_\"'\",\"usedMemoryMiB\":20480,\"smUtilizationPercent\":35}]}'",
              "curl -s $API/v1/namespaces/default/pods/gpu-share-demo | jq .usage",
              "curl -s -X PUT \"$API/v1/nodes/$NODE/gpus/$GPU/processes\" -H 'Content-Type: application/json' -d '{\"processes\":[]}'"),
          // http-api/README.md
          listed(
              "CliTest",
              "UID_=$(echo \"$POD\" | jq -r .uid); GPU=$(echo \"$POD\" | jq -r .gpu.index); NODE=$(echo \"$POD\" | jq -r .node)",
              "alias gpushare=$PWD/http-api/src/main/scripts/gpushare",
              "gpushare nodes",
              "gpushare node demo",
              "gpushare queue demo",
              "gpushare pods --node demo",
              "gpushare pod default/d",
              "gpushare demand default/c",
              "gpushare release default/c",
              "gpushare journal 'NodeArbiter|demo' --from 1 --limit 20",
              "gpushare history default/d",
              "gpushare pods -o json",
              "gpushare run [--pod NS/NAME] [--interval 10s] [--grace 30s] -- CMD ARGS…",
              "gpushare run --pod default/old --interval 1s -- sh -c 'trap \"echo checkpointing; exit 0\" USR1; echo on $CUDA_VISIBLE_DEVICES; while true; do sleep 1; done'"),
          // http-api/README.md
          listed(
              "DashboardTest",
              "curl -sN $API/v1/watch -H \"Authorization: Bearer $(cat data/admin-token)\""),
          // http-api/README.md
          listed(
              "OpenApiTest",
              "curl -s localhost:8080/v1/openapi.json | jq '.paths | keys'",
              "curl -s localhost:8080/v1/openapi.json > gpushare-v1.json"),
          // http-api/README.md
          listed(".ci/run", "mvn -B -q -DskipTests package"),
          // http-api/src/test/resources/admission/tls/README.md
          listed(
              "ServerTlsTest",
              "keytool -genkeypair -alias webhook -keyalg RSA -keysize 2048 -dname CN=gpushare-webhook-test -ext san=dns:localhost,ip:127.0.0.1 -startdate 2000/01/01 -validity 45000 -keystore webhook.p12 -storetype PKCS12 -storepass changeit",
              "openssl pkcs12 -in webhook.p12 -nocerts -nodes -passin pass:changeit | openssl pkey -out webhook.key",
              "keytool -exportcert -rfc -alias webhook -keystore webhook.p12 -storepass changeit > webhook.crt"),
          // http-api/src/test/resources/extender/tls/README.md
          listed(
              "SchedulerExtenderServerTest",
              "keytool -genkeypair -alias ca -keyalg RSA -keysize 2048 -dname CN=gpushare-scheduler-test-ca -ext bc:c -startdate 2000/01/01 -validity 45000 -keystore ca.p12 -storetype PKCS12 -storepass changeit",
              "keytool -exportcert -rfc -alias ca -keystore ca.p12 -storepass changeit > client-ca.crt",
              "keytool -genkeypair -alias scheduler -keyalg RSA -keysize 2048 -dname CN=system:kube-scheduler -startdate 2000/01/01 -validity 45000 -keystore scheduler.p12 -storetype PKCS12 -storepass changeit",
              "keytool -certreq -alias scheduler -keystore scheduler.p12 -storepass changeit | keytool -gencert -alias ca -keystore ca.p12 -storepass changeit -ext eku=clientAuth -ext ku=digitalSignature,keyEncipherment -startdate 2000/01/01 -validity 45000 -rfc > leaf.crt",
              "cat leaf.crt client-ca.crt > scheduler.crt",
              "openssl pkcs12 -in scheduler.p12 -nocerts -nodes -passin pass:changeit | openssl pkey -out scheduler.key"),
          // node-actors/README.md
          listed(
              "ClusterFormationTest",
              "kubectl -n gpushare-system get pods -l app.kubernetes.io/name=gpushare -o wide",
              "kubectl -n gpushare-system port-forward pod/<a member pod> 7626 &",
              "curl -s localhost:7626/cluster/members; echo",
              "curl -s localhost:7626/cluster/shards/NodeArbiter; echo",
              "curl -s localhost:7626/ready; echo"),
          // node-actors/README.md
          listed(
              "ClusterFailoverTest",
              "for i in 1 2 3; do cat > member-$i.conf <<EOF",
              "done",
              "java -jar http-api/target/gpushare.jar init-schema --config member-1.conf",
              "for i in 1 2 3; do",
              "java -jar http-api/target/gpushare.jar --config member-$i.conf --port 808$i --data data-$i > member-$i.log 2>&1 &",
              "curl -s -X PUT localhost:808$i/v1/nodes/n$i -H 'Content-Type: application/json' -d '{\"metadata\":",
              "{\"name\":\"n'$i'\",\"labels\":{\"alibabacloud.com/gpu-share-policy\":\"share-pool\"}},\"status\":{\"capacity\":",
              "{\"cpu\":\"32\",\"memory\":\"256Gi\",\"nvidia.com/gpu\":\"2\"}}}'; echo"),
          // persistence-config/README.md
          listed(
              "PostgresReferenceExampleTest",
              "export PGPASSWORD=…",
              "java -jar http-api/target/gpushare.jar init-schema --config gpushare-postgres.conf",
              "java -jar http-api/target/gpushare.jar --config gpushare-postgres.conf"),
          // persistence-config/README.md
          listed(
              "JournalCommandTest",
              "java -jar http-api/target/gpushare.jar journal --ids --config gpushare-postgres.conf",
              "java -jar http-api/target/gpushare.jar journal 'NodeArbiter|demo' --from 1 --limit 20 --data ./data",
              "java -jar http-api/target/gpushare.jar journal --pod default/a --data ./data"),
          // src-test/BENCHMARKS.md
          listed(
              "JournalBenchmark",
              "cd \"$(git rev-parse --show-toplevel)\"",
              "mvn -B -q -pl persistence-config -am install -DskipTests",
              "cd persistence-config",
              "mvn -B -q -o dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/bench.classpath",
              "java -cp target/test-classes:target/classes:$(cat target/bench.classpath) dev.gpushare.persistence.JournalBenchmark"),
          // src-test/BENCHMARKS.md "What counting HTTP requests costs"
          listed(
              "HttpMetricsBenchmark",
              "mvn -B -q -pl http-api -am install -DskipTests",
              "mvn -B -q -o -pl http-api dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/bench.classpath",
              "java -cp http-api/target/test-classes:http-api/target/classes:$(cat http-api/target/bench.classpath) dev.gpushare.http.api.HttpMetricsBenchmark"),
          // src-test/BENCHMARKS.md "A pod's history"
          listed(
              "HistoryBenchmark",
              "cd persistence-config",
              "java -cp target/test-classes:target/classes:$(cat target/bench.classpath) dev.gpushare.persistence.HistoryBenchmark --pods 2000 --events 100 --nodes 64 --limit 100"),
          // src-test/BENCHMARKS.md
          listed(
              "CheckpointWaitSimulation",
              "java -cp arbiter/target/test-classes:arbiter/target/classes:$(cat arbiter/target/bench.classpath) dev.gpushare.arbiter.bench.CheckpointWaitSimulation"),
          // src-test/BENCHMARKS.md
          listed(
              "LoadBenchmark",
              "mvn -B -q install -DskipTests",
              "mvn -B -q -o -pl arbiter,src-test dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/bench.classpath",
              "java -cp arbiter/target/test-classes:arbiter/target/classes:$(cat arbiter/target/bench.classpath) dev.gpushare.arbiter.bench.ShareBookBenchmark",
              "java -Xmx4g -cp src-test/target/test-classes:$(cat src-test/target/bench.classpath) dev.gpushare.bench.LoadBenchmark",
              "java -Xmx4g -cp src-test/target/test-classes:$(cat src-test/target/bench.classpath) dev.gpushare.bench.PodHeapBenchmark",
              "java -Xmx4g -cp src-test/target/test-classes:$(cat src-test/target/bench.classpath) dev.gpushare.bench.PodHeapBenchmark --passivate-after 1d",
              "java -Xmx2g -cp src-test/target/test-classes:$(cat src-test/target/bench.classpath) dev.gpushare.bench.KubeWritesBenchmark",
              "git worktree add /tmp/before 935bba6",
              "(cd /tmp/before && mvn -B -q -o -DskipTests test-compile)",
              "tr ':' '\\n' < src-test/target/bench.classpath | sed -E 's#^.*/dev/gpushare/([a-z-]+)/0.1.0-SNAPSHOT/.*\\.jar$#/tmp/before/\\1/target/classes#' | paste -sd: > /tmp/before.classpath",
              "java -Xmx4g -Djava.util.concurrent.ForkJoinPool.common.parallelism=2 -cp /tmp/before/src-test/target/test-classes:$(cat /tmp/before.classpath) dev.gpushare.bench.LoadBenchmark"),
          // src-test/BENCHMARKS.md
          listed(
              "ShareBookBenchmark",
              "git worktree add /tmp/before 44fda3f && (cd /tmp/before && mvn -B -q -o -DskipTests test-compile)",
              "for m in src-test arbiter; do",
              "tr ':' '\\n' < $m/target/bench.classpath | sed -E 's#^.*/dev/gpushare/([a-z-]+)/0.1.0-SNAPSHOT/.*\\.jar$#/tmp/before/\\1/target/classes#' | paste -sd: > /tmp/before-$m.classpath",
              "J='ShareBookBenchmark\\.(grant|preempt|round)$'",
              "java -cp arbiter/target/test-classes:arbiter/target/classes:$(cat arbiter/target/bench.classpath) dev.gpushare.arbiter.bench.ShareBookBenchmark \"$J\" -p queued=10,1000,100000 -wi 2 -w 1 -i 3 -r 1 -f 1",
              "java -cp /tmp/before/arbiter/target/test-classes:/tmp/before/arbiter/target/classes:$(cat /tmp/before-arbiter.classpath) dev.gpushare.arbiter.bench.ShareBookBenchmark \"$J\" -p queued=10,1000 -wi 2 -w 1 -i 3 -r 1 -f 1",
              "java -Xmx4g -cp src-test/target/test-classes:$(cat src-test/target/bench.classpath) dev.gpushare.bench.LoadBenchmark --seconds 10 --warmup 3 --rates 100,1000",
              "java -Xmx4g -cp /tmp/before/src-test/target/test-classes:$(cat /tmp/before-src-test.classpath) dev.gpushare.bench.LoadBenchmark --seconds 10 --warmup 3 --mode closed"),
          // src-test/BENCHMARKS.md
          listed(
              "ClusterFailoverTest",
              "bash src-test/under-load.sh 20 'ClusterFailoverTest,ClusterPartitionTest'"),
          // src-test/BENCHMARKS.md
          listed(
              "SoakBenchmark",
              "java -cp src-test/target/test-classes:$(cat src-test/target/bench.classpath) dev.gpushare.bench.SoakBenchmark --minutes 30 --rate 100"),
          // src-test/BENCHMARKS.md
          listed(
              "PodSideBenchmark",
              "java -cp src-test/target/test-classes:$(cat src-test/target/bench.classpath) dev.gpushare.bench.PodSideBenchmark"),
          // src-test/BENCHMARKS.md
          listed(
              "AdversarialInputTest",
              "mvn -B -o -pl http-api -am test -Dtest='Adversarial*Test' -Dsurefire.failIfNoSpecifiedTests=false",
              "cat http-api/target/adversarial-figures-*.txt"));

  record Listed(String coveredBy, List<String> commands) {}

  static Listed listed(String coveredBy, String... commands) {
    return new Listed(coveredBy, List.of(commands));
  }

  /** A fenced block: file, line of its opening fence, language, marker (or null), its lines. */
  record Block(Path file, int line, String lang, String marker, List<String> lines) {
    String where() {
      return ROOT.relativize(file) + ":" + line;
    }
  }

  /** A logical command: its text as bash reads it, its normal form, an expected output or null. */
  record Command(String text, String normal, String expect) {}

  @Test
  void everyShellCommandIsRunOrListed() {
    Map<String, Listed> listed = new LinkedHashMap<>();
    for (Listed l : LISTED) {
      assertCovererExists(l.coveredBy());
      for (String c : l.commands()) {
        listed.put(normalize(c), l);
      }
    }
    Set<String> seen = new LinkedHashSet<>();
    List<String> missing = new ArrayList<>();
    for (Block b : shellBlocks()) {
      for (Command c : commands(b.lines())) {
        seen.add(c.normal());
        if (b.marker() == null && !listed.containsKey(c.normal())) {
          missing.add(b.where() + ": " + c.normal());
        }
        if (b.marker() != null && listed.containsKey(c.normal())) {
          missing.add(b.where() + ": run here and also listed: " + c.normal());
        }
      }
    }
    List<String> stale =
        listed.keySet().stream().filter(c -> !seen.contains(c)).collect(Collectors.toList());
    if (!missing.isEmpty() || !stale.isEmpty()) {
      fail(
          "commands in fenced shell blocks must be run by DocsTest (<!-- docs: run NAME --> before"
              + " the block) or listed in DocsTest.LISTED with what covers them;\nneither:\n  "
              + String.join("\n  ", missing)
              + "\nlisted but in no Markdown file any more:\n  "
              + String.join("\n  ", stale));
    }
  }

  @Test
  void markedBlocksRunAgainstARealServer(@TempDir Path tmp) throws Exception {
    Map<String, List<Block>> sessions = new LinkedHashMap<>();
    Map<String, Block> servers = new LinkedHashMap<>();
    for (Block b : shellBlocks()) {
      if (b.marker() == null) {
        continue;
      }
      String[] m = b.marker().split(" ");
      if (m[0].equals("server")) {
        assertTrue(servers.put(m[1], b) == null, "two servers for session " + m[1]);
      } else {
        sessions.computeIfAbsent(m[1], k -> new ArrayList<>()).add(b);
      }
    }
    assertTrue(sessions.containsKey("walkthrough"), "the README walkthrough is marked to run");
    for (String name : servers.keySet()) {
      assertTrue(sessions.containsKey(name), "a server without blocks to run: " + name);
    }
    Path work = Files.createDirectories(tmp.resolve("work"));
    // what the build made, the tests' sources and the reference manifests, where a block run from
    // the repository finds them (the README's pod-side walkthrough builds the fake driver and runs
    // the library; its API walkthrough posts deploy/examples/gpu-share-demo.yaml)
    Files.createSymbolicLink(work.resolve("gpu-actors"), ROOT.resolve("gpu-actors"));
    Files.createSymbolicLink(work.resolve("deploy"), ROOT.resolve("deploy"));
    for (Map.Entry<String, List<Block>> session : sessions.entrySet()) {
      runSession(session.getKey(), session.getValue(), servers.get(session.getKey()), work);
    }
  }

  @Test
  void everyRelativeLinkAndAnchorResolves() throws IOException {
    List<String> broken = new ArrayList<>();
    for (Path md : markdownFiles()) {
      List<String> lines = Files.readAllLines(md, StandardCharsets.UTF_8);
      boolean inFence = false;
      for (int i = 0; i < lines.size(); i++) {
        String line = lines.get(i);
        if (FENCE.matcher(line).matches()) {
          inFence = !inFence;
          continue;
        }
        if (inFence) {
          continue;
        }
        Matcher m = LINK.matcher(line.replaceAll("`[^`]*`", ""));
        while (m.find()) {
          String target = m.group(1) != null ? m.group(1) : m.group(2);
          String problem = checkLink(md, target);
          if (problem != null) {
            broken.add(ROOT.relativize(md) + ":" + (i + 1) + ": " + target + " (" + problem + ")");
          }
        }
      }
    }
    assertEquals(List.of(), broken, "broken relative links or anchors");
  }

  @Test
  void theReadmeIsShortAndStartsWithTheTwoCommands() throws IOException {
    List<String> readme = Files.readAllLines(ROOT.resolve("README.md"), StandardCharsets.UTF_8);
    assertTrue(readme.size() <= 250, "README.md has " + readme.size() + " lines; at most 250");
    assertEquals(
        List.of(
            "```bash",
            "mvn -B -q -DskipTests package && java -jar http-api/target/gpushare.jar",
            "mvn -B verify",
            "```"),
        readme.subList(2, 6));
    String ci = Files.readString(ROOT.resolve(".ci/run"), StandardCharsets.UTF_8);
    assertTrue(ci.contains("exec mvn -B verify"), ".ci/run runs the README's second command");
  }

  @Test
  void theParserSeesWhatBashSees() {
    List<Command> cs =
        commands(
            List.of(
                "# a comment",
                "curl -s $API/x \\",
                "  -d '{\"a\":\"#b\"}'; echo   # -> \"a\"…\"b\"",
                "cat <<'EOF'",
                "not a command",
                "EOF",
                "",
                "kubectl get pods -o wide   # trailing"));
    assertEquals(3, cs.size(), cs.toString());
    assertEquals("curl -s $API/x -d '{\"a\":\"#b\"}'; echo", cs.get(0).normal());
    assertEquals("\"a\"…\"b\"", cs.get(0).expect());
    assertEquals("cat <<'EOF'", cs.get(1).normal());
    assertTrue(cs.get(1).text().endsWith("not a command\nEOF"), cs.get(1).text());
    assertEquals("kubectl get pods -o wide", cs.get(2).normal());
    assertEquals("github-flavoured-anchor-3-x", slug("GitHub-flavoured `anchor` (§3) x"));
  }

  @Test
  void nothingPointsOutsideTheRepository() {
    List<String> found = pointingOutside(ROOT, repositoryFiles(ROOT));
    for (Path md : markdownFiles()) {
      found.addAll(docPathsOutside(ROOT, md));
    }
    assertTrue(
        found.isEmpty(),
        "these lines point outside the repository, which a clone on its own does not have; keep"
            + " what they name in the repository (the reference manifests are in deploy/examples/,"
            + " the specification in arbiter/SPEC.md, the HTTP contract in http-api/API.md, the"
            + " design in node-actors/ARCHITECTURE.md) and refer to it there, or name public data"
            + " by its public name:\n  "
            + String.join("\n  ", found));
  }

  @Test
  void noDocNamesAMachinesPaths() {
    List<String> found = machinePaths(ROOT, markdownFiles());
    assertTrue(
        found.isEmpty(),
        "these lines of the docs name one machine's paths (/work/…, /home/USER, /root/, /Users/,"
            + " C:\\…); write a path relative to the repository root instead (e.g. \"from the"
            + " repository root\", cd \"$(git rev-parse --show-toplevel)\"):\n  "
            + String.join("\n  ", found));
  }

  @Test
  void theStandAloneChecksFindWhatTheyMustAndNothingElse(@TempDir Path tmp) throws IOException {
    String up = "..";
    Files.createDirectories(tmp.resolve("deploy/examples"));
    Files.writeString(tmp.resolve("deploy/examples/pod.yaml"), "kind: Pod\n");
    Files.createDirectories(tmp.resolve("src/main/java"));
    Files.writeString(
        tmp.resolve("README.md"),
        String.join(
            "\n",
            "# sample",
            "The manifest is `deploy/examples/pod.yaml`; /dev/shm is shared with the MPS servers.",
            "PodSharing.shared(policy) and https://example.com/work/x and `/run/gpushare/mps`.",
            "dlsym:\\n and items:\\n are not drive letters.",
            "The design is in `" + "shared/` beside this " + "repository.",
            "Post `@" + up + "/shared/examples/gpu-share-demo.yaml` here.",
            "See `deploy/examples/missing.yaml` and `src-test/.../SomeTest` and `arbiter/NAME.csv`.",
            "```bash",
            "cd /" + "work/main",
            "kubectl apply -f " + up + "/elsewhere/pod.yaml",
            "kubectl apply -f deploy/examples/pod.yaml",
            "```",
            "```yaml",
            "resources:",
            "- " + up + "/deploy",
            "```",
            "Files under /"
                + "home/alice/gpushare, /"
                + "root/x, /"
                + "Users/bob and C:\\"
                + "Users\\carol.",
            ""));
    Files.writeString(
        tmp.resolve("src/main/java/A.java"),
        "// reads shared/" + "traces/alibaba-gpu-v2023\nclass A {}\n");
    List<Path> files = repositoryFiles(tmp);
    assertEquals(
        List.of(
            "README.md:5: The design is in `" + "shared/` beside this " + "repository.",
            "README.md:6: Post `@" + up + "/shared/examples/gpu-share-demo.yaml` here.",
            "src/main/java/A.java:1: // reads shared/" + "traces/alibaba-gpu-v2023"),
        pointingOutside(tmp, files));
    assertEquals(
        List.of(
            "README.md:6: " + up + "/shared/examples/gpu-share-demo.yaml (outside the repository)",
            "README.md:7: deploy/examples/missing.yaml (no such file)",
            "README.md:10: " + up + "/elsewhere/pod.yaml (outside the repository)"),
        docPathsOutside(tmp, tmp.resolve("README.md")));
    assertEquals(
        List.of(
            "README.md:9: cd /" + "work/main",
            "README.md:17: Files under /"
                + "home/alice/gpushare, /"
                + "root/x, /"
                + "Users/bob and C:\\"
                + "Users\\carol."),
        machinePaths(tmp, List.of(tmp.resolve("README.md"))));
  }

  // ------------------------------------------------------------------------------ the sessions

  private static void runSession(String name, List<Block> blocks, Block serverBlock, Path work)
      throws Exception {
    Path data = work.resolve("data");
    String clock = "system";
    List<String> extra = new ArrayList<>();
    if (serverBlock != null) {
      List<Command> cs = commands(serverBlock.lines());
      assertEquals(1, cs.size(), serverBlock.where() + ": a server block holds one command");
      List<String> words = List.of(cs.get(0).normal().split(" "));
      assertEquals(
          List.of("java", "-jar", "http-api/target/gpushare.jar"),
          words.subList(0, 3),
          serverBlock.where());
      for (int i = 3; i < words.size(); i++) {
        switch (words.get(i)) {
          case "--clock" -> clock = words.get(++i);
          case "--data" -> data = work.resolve(words.get(++i)).normalize();
          case "--port" -> fail(serverBlock.where() + ": the check picks the port");
          default -> extra.add(words.get(i));
        }
      }
    }
    try (ServerProcess server =
        ServerProcess.startWithClock(
            "docs-" + name, data, clock, List.of(), Map.of(), extra.toArray(String[]::new))) {
      String port = String.valueOf(server.baseUri().getPort());
      Path out = Files.createDirectories(work.resolve("docs-out-" + name));
      StringBuilder script = new StringBuilder("set -eo pipefail\n");
      List<String[]> expectations = new ArrayList<>();
      for (Block b : blocks) {
        script.append("# ---- ").append(b.where()).append('\n');
        for (Command c : commands(b.lines())) {
          String text = c.text();
          if (c.expect() != null) {
            int n = expectations.size();
            expectations.add(new String[] {b.where() + ": " + c.normal(), c.expect()});
            int at = text.lastIndexOf("# ->");
            int eol = text.indexOf('\n', at);
            text = text.substring(0, at) + (eol < 0 ? "" : text.substring(eol));
            text = "{ " + text + "\n} > \"$DOCS_OUT/" + n + "\"; cat \"$DOCS_OUT/" + n + "\"";
          }
          script.append(text).append('\n');
        }
      }
      String s =
          script
              .toString()
              .replace("http://127.0.0.1:8080", "http://127.0.0.1:" + port)
              .replace("localhost:8080", "127.0.0.1:" + port);
      Path file = work.resolve("docs-" + name + ".sh");
      Files.writeString(file, s, StandardCharsets.UTF_8);
      Path log = out.resolve("output");
      ProcessBuilder pb =
          new ProcessBuilder("bash", file.toString())
              .directory(work.toFile())
              .redirectErrorStream(true)
              .redirectOutput(log.toFile())
              .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
      pb.environment().put("DOCS_OUT", out.toString());
      Process p = pb.start();
      boolean ended = false;
      try {
        ended = p.waitFor(90, TimeUnit.SECONDS);
      } finally {
        // the session's background processes too (a server, `gpushare run`), on every path
        ChildProcess.killTree(p.toHandle());
      }
      if (!ended) {
        fail("session " + name + " did not finish in 90 s; output:\n" + Files.readString(log));
      }
      String output = Files.readString(log, StandardCharsets.UTF_8);
      String context = "session " + name + " (" + file + "), output:\n" + output;
      assertEquals(0, p.exitValue(), context);
      Matcher problem = PROBLEM.matcher(output);
      assertTrue(!problem.find(), "an answer is a problem: " + context);
      for (int n = 0; n < expectations.size(); n++) {
        String got = Files.readString(out.resolve(String.valueOf(n)), StandardCharsets.UTF_8);
        int from = 0;
        for (String fragment : expectations.get(n)[1].split("…")) {
          String f = fragment.strip();
          int at = got.indexOf(f, from);
          assertTrue(
              at >= 0,
              expectations.get(n)[0]
                  + "\n  expected, in order: "
                  + expectations.get(n)[1]
                  + "\n  missing from here: "
                  + f
                  + "\n  output: "
                  + got);
          from = at + f.length();
        }
      }
    }
  }

  // ------------------------------------------------------------------------------ the parsing

  private static void assertCovererExists(String coveredBy) {
    if (coveredBy.equals(".ci/run")) {
      assertTrue(Files.isExecutable(ROOT.resolve(".ci/run")), ".ci/run");
      return;
    }
    try (Stream<Path> files = Files.walk(ROOT)) {
      boolean found =
          files
              .filter(p -> !p.toString().contains("/target/"))
              .anyMatch(
                  p ->
                      p.getFileName().toString().equals(coveredBy + ".java")
                          && p.toString().contains("/src/test/java/"));
      assertTrue(found, "DocsTest.LISTED names " + coveredBy + ", which is no test source here");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static List<Path> markdownFiles() {
    try (Stream<Path> files = Files.walk(ROOT)) {
      List<Path> all =
          files
              .filter(
                  p -> {
                    Path rel = ROOT.relativize(p);
                    for (Path part : rel) {
                      String s = part.toString();
                      if (s.equals("target") || s.startsWith(".") || s.equals("node_modules")) {
                        return false;
                      }
                    }
                    return p.toString().endsWith(".md") && Files.isRegularFile(p);
                  })
              .sorted()
              .collect(Collectors.toCollection(ArrayList::new));
      Path readme = ROOT.resolve("README.md");
      all.remove(readme);
      all.add(0, readme);
      return all;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static List<Block> shellBlocks() {
    List<Block> blocks = new ArrayList<>();
    for (Path md : markdownFiles()) {
      List<String> lines;
      try {
        lines = Files.readAllLines(md, StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      for (int i = 0; i < lines.size(); i++) {
        Matcher open = FENCE.matcher(lines.get(i));
        if (!open.matches()) {
          continue;
        }
        String indent = open.group(1);
        String fence = open.group(2);
        String lang = open.group(3).toLowerCase(Locale.ROOT);
        String marker = null;
        for (int j = i - 1; j >= 0; j--) {
          String prev = lines.get(j).strip();
          if (prev.isEmpty()) {
            continue;
          }
          Matcher m = MARKER.matcher(prev);
          if (m.matches()) {
            marker = m.group(1) + " " + m.group(2);
          }
          break;
        }
        int start = i;
        List<String> body = new ArrayList<>();
        for (i++; i < lines.size(); i++) {
          String l = lines.get(i);
          if (l.strip().startsWith(fence)
              && l.strip().replace(fence.substring(0, 1), "").isEmpty()) {
            break;
          }
          body.add(l.startsWith(indent) ? l.substring(indent.length()) : l.stripLeading());
        }
        if (SHELL.contains(lang)) {
          blocks.add(new Block(md, start + 1, lang, marker, body));
        } else if (marker != null) {
          fail(ROOT.relativize(md) + ":" + (start + 1) + ": a docs marker on a " + lang + " block");
        }
      }
    }
    return blocks;
  }

  /** The logical commands of a block: continuations joined, heredoc bodies attached. */
  static List<Command> commands(List<String> lines) {
    List<Command> out = new ArrayList<>();
    int i = 0;
    while (i < lines.size()) {
      String line = lines.get(i);
      if (line.isBlank() || line.strip().startsWith("#")) {
        i++;
        continue;
      }
      List<String> physical = new ArrayList<>();
      physical.add(line);
      while (code(physical.get(physical.size() - 1)).endsWith("\\") && i + 1 < lines.size()) {
        physical.add(lines.get(++i));
      }
      i++;
      String last = physical.get(physical.size() - 1);
      String comment = last.substring(code(last).length()).strip();
      String expect = comment.startsWith("# ->") ? comment.substring(4).strip() : null;
      String normal =
          physical.stream()
              .map(l -> stripSlash(code(l)))
              .collect(Collectors.joining(" "))
              .replaceAll("\\s+", " ")
              .strip();
      StringBuilder text = new StringBuilder(String.join("\n", physical));
      Matcher h = HEREDOC.matcher(normal);
      if (h.find()) {
        String delimiter = h.group(1);
        while (i < lines.size() && !lines.get(i).strip().equals(delimiter)) {
          text.append('\n').append(lines.get(i++));
        }
        if (i < lines.size()) {
          text.append('\n').append(lines.get(i++));
        }
      }
      out.add(new Command(text.toString(), normal, expect));
    }
    return out;
  }

  static String normalize(String command) {
    return commands(List.of(command.split("\n"))).get(0).normal();
  }

  private static String stripSlash(String s) {
    String t = s.stripTrailing();
    return t.endsWith("\\") ? t.substring(0, t.length() - 1) : t;
  }

  /** The line without its comment, as bash reads it: a # that starts a word, outside quotes. */
  static String code(String line) {
    boolean single = false;
    boolean dbl = false;
    for (int i = 0; i < line.length(); i++) {
      char c = line.charAt(i);
      if (c == '\\' && !single) {
        i++;
      } else if (c == '\'' && !dbl) {
        single = !single;
      } else if (c == '"' && !single) {
        dbl = !dbl;
      } else if (c == '#'
          && !single
          && !dbl
          && (i == 0 || Character.isWhitespace(line.charAt(i - 1)))) {
        return line.substring(0, i).stripTrailing();
      }
    }
    return line.stripTrailing();
  }

  // ------------------------------------------------------------------------------ standing alone

  /**
   * What names something outside the repository: the project folder "shared" that once lay beside
   * it (the path up to it, its sub-folders, the folder by name) or the words that send a reader
   * there.
   */
  static final Pattern OUTSIDE =
      Pattern.compile(
          "\\.\\./shared\\b"
              + "|(?<![\\w./-])shared/(?:examples|traces|notes|hooks|[A-Z]+\\.md)"
              + "|`shared/[`]"
              + "|beside (?:this|the) repositor(?:y|ies)");

  /** One machine's paths (the letters in brackets keep this line from naming them). */
  static final Pattern MACHINE_PATH =
      Pattern.compile(
          "(?<![\\w.-])(?:/wor[k]/|/hom[e]/[a-z_][\\w.-]*|/roo[t]/|/User[s]/)"
              + "|(?<![\\w\\\\])[A-Z]:\\\\(?![nrt\\\\\"'])[A-Za-z]");

  /** A relative path in a doc: one up out of its folder, or one from the repository's root. */
  static final Pattern DOC_PATH =
      Pattern.compile(
          "(?<![\\w./@-])@?((?:\\.\\./)+[\\w./-]*"
              + "|(?:arbiter|node-actors|gpu-actors|http-api|persistence-config|deploy|src-test)"
              + "/[\\w./-]*)");

  static final Pattern CODE_SPAN = Pattern.compile("`([^`]+)`");

  /** Placeholders and build output in a path: not a file to look for. */
  static final Pattern NOT_A_FILE = Pattern.compile("target/|/\\.\\.\\./|\\bNAME\\b|\\bNN\\b");

  /**
   * The repository's files: what git tracks or would track (not ignored) where the root is a
   * checkout (has its own .git), else every file but build output and data; text only (no NUL
   * byte).
   */
  static List<Path> repositoryFiles(Path root) {
    List<String> names = null;
    try {
      if (!Files.exists(root.resolve(".git"))) {
        throw new IOException("not a git checkout: " + root);
      }
      Process git =
          new ProcessBuilder(
                  "git",
                  "-C",
                  root.toString(),
                  "ls-files",
                  "-z",
                  "--cached",
                  "--others",
                  "--exclude-standard")
              .redirectError(ProcessBuilder.Redirect.DISCARD)
              .start();
      byte[] out = git.getInputStream().readAllBytes();
      if (git.waitFor(60, TimeUnit.SECONDS) && git.exitValue() == 0) {
        names = List.of(new String(out, StandardCharsets.UTF_8).split("\0"));
      }
    } catch (IOException e) {
      // no checkout or no git here: walk the tree
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
    List<Path> files = new ArrayList<>();
    if (names != null) {
      names.stream().filter(n -> !n.isEmpty()).map(root::resolve).forEach(files::add);
    } else {
      try (Stream<Path> all = Files.walk(root)) {
        all.filter(
                p -> {
                  for (Path part : root.relativize(p)) {
                    String s = part.toString();
                    if (s.equals("target")
                        || s.equals("node_modules")
                        || s.equals("data")
                        || s.startsWith("data-")
                        || (s.startsWith(".") && !s.equals(".ci"))) {
                      return false;
                    }
                  }
                  return true;
                })
            .forEach(files::add);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return files.stream()
        .filter(Files::isRegularFile)
        .filter(DocsTest::isText)
        .sorted()
        .collect(Collectors.toList());
  }

  private static boolean isText(Path p) {
    try {
      for (byte b : Files.readAllBytes(p)) {
        if (b == 0) {
          return false;
        }
      }
      return true;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Every line of {@code files} that {@link #OUTSIDE} matches, as {@code path:line: text}. */
  static List<String> pointingOutside(Path root, List<Path> files) {
    List<String> found = new ArrayList<>();
    for (Path f : files) {
      List<String> lines = textLines(f);
      for (int i = 0; i < lines.size(); i++) {
        if (OUTSIDE.matcher(lines.get(i)).find()) {
          found.add(root.relativize(f) + ":" + (i + 1) + ": " + lines.get(i).strip());
        }
      }
    }
    return found;
  }

  /**
   * The relative paths of a doc that leave the repository, and the paths of its prose ({@code code}
   * spans) that name no file. A prose path is resolved from the doc's folder and from the root, a
   * path in a shell block from the root (its commands run there); other blocks (a user's own files)
   * are not looked at, nor placeholders and build output. Links are {@link #checkLink}'s.
   */
  static List<String> docPathsOutside(Path root, Path md) {
    List<String> found = new ArrayList<>();
    List<String> lines = textLines(md);
    String fence = null; // the language of the open block, "" for none
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      Matcher open = FENCE.matcher(line);
      if (open.matches()) {
        fence = fence == null ? open.group(3).toLowerCase(Locale.ROOT) : null;
        continue;
      }
      List<String> texts = new ArrayList<>();
      if (fence == null) {
        Matcher span = CODE_SPAN.matcher(line);
        while (span.find()) {
          texts.add(span.group(1));
        }
      } else if (SHELL.contains(fence)) {
        texts.add(code(line));
      }
      for (String text : texts) {
        Matcher m = DOC_PATH.matcher(text);
        while (m.find()) {
          String path = m.group(1).replaceAll("[.,;:]+$", "");
          if (NOT_A_FILE.matcher(path).find() || (fence != null && !path.startsWith("../"))) {
            continue;
          }
          List<Path> candidates =
              (fence == null
                      ? Stream.of(md.getParent().resolve(path), root.resolve(path))
                      : Stream.of(root.resolve(path)))
                  .map(Path::normalize)
                  .filter(p -> p.startsWith(root))
                  .toList();
          String problem =
              candidates.isEmpty()
                  ? "outside the repository"
                  : fence == null && candidates.stream().noneMatch(Files::exists)
                      ? "no such file"
                      : null;
          if (problem != null) {
            found.add(root.relativize(md) + ":" + (i + 1) + ": " + path + " (" + problem + ")");
          }
        }
      }
    }
    return found;
  }

  /** Every line of {@code docs} that {@link #MACHINE_PATH} matches, as {@code path:line: text}. */
  static List<String> machinePaths(Path root, List<Path> docs) {
    List<String> found = new ArrayList<>();
    for (Path f : docs) {
      List<String> lines = textLines(f);
      for (int i = 0; i < lines.size(); i++) {
        if (MACHINE_PATH.matcher(lines.get(i)).find()) {
          found.add(root.relativize(f) + ":" + (i + 1) + ": " + lines.get(i).strip());
        }
      }
    }
    return found;
  }

  private static List<String> textLines(Path f) {
    try {
      return List.of(new String(Files.readAllBytes(f), StandardCharsets.UTF_8).split("\n", -1));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  // ------------------------------------------------------------------------------ the links

  private static String checkLink(Path md, String target) {
    if (target.matches("^[a-z][a-z0-9+.-]*:.*") || target.startsWith("//")) {
      return null; // http(s), mailto: not checked offline
    }
    int hash = target.indexOf('#');
    String file = hash < 0 ? target : target.substring(0, hash);
    String anchor = hash < 0 ? null : target.substring(hash + 1);
    Path p = file.isEmpty() ? md : md.getParent().resolve(file).normalize();
    if (!p.startsWith(ROOT)) {
      return "outside the repository";
    }
    if (!Files.exists(p)) {
      return "no such file";
    }
    if (anchor == null) {
      return null;
    }
    if (!p.toString().endsWith(".md")) {
      return "an anchor into a file that is not Markdown";
    }
    return anchors(p).contains(anchor) ? null : "no such heading";
  }

  static Set<String> anchors(Path md) {
    Set<String> out = new TreeSet<>();
    Map<String, Integer> counts = new LinkedHashMap<>();
    boolean inFence = false;
    try {
      for (String line : Files.readAllLines(md, StandardCharsets.UTF_8)) {
        if (FENCE.matcher(line).matches()) {
          inFence = !inFence;
        }
        if (inFence || !line.startsWith("#")) {
          continue;
        }
        String heading = line.replaceFirst("^#+\\s*", "");
        String s = slug(heading);
        int n = counts.merge(s, 1, Integer::sum);
        out.add(n == 1 ? s : s + "-" + (n - 1));
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }

  /** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
  static String slug(String heading) {
    return heading
        .strip()
        .toLowerCase(Locale.ROOT)
        .replaceAll("[^\\p{L}\\p{N}\\s_-]", "")
        .replace(' ', '-');
  }

  private static Path root() {
    Path here = Path.of(System.getProperty("basedir", ".")).toAbsolutePath().normalize();
    Path root = here.getFileName().toString().equals("src-test") ? here.getParent() : here;
    if (!Files.isRegularFile(root.resolve("README.md"))
        || !Files.isRegularFile(root.resolve("pom.xml"))) {
      throw new IllegalStateException("not the repository root: " + root);
    }
    return root;
  }
}
