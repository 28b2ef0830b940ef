package dev.gpushare.e2e;

import dev.gpushare.e2e.PodSide.Proc;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.VolumeProjection;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A kubelet in a test: runs a pod spec, as the admission webhook left it, as local processes on
 * this machine. It does what the kubelet and the container runtime do for the spec, with the
 * liberties a test without containers must take:
 *
 * <ul>
 *   <li><b>Volumes.</b> An {@code emptyDir} is a fresh folder; a {@code projected} volume's {@code
 *       serviceAccountToken} sources are files holding the token {@code tokens} issues for the
 *       source's audience and the pod (what the kubelet asks the API server's TokenRequest for),
 *       its other sources files with placeholder content; a {@code hostPath} is the host's own
 *       path, which must exist when its type says {@code Directory} (else the pod does not start,
 *       as on a node).
 *   <li><b>Mounts.</b> There is no mount namespace: a path under a container's {@code mountPath} is
 *       translated to the volume's folder wherever the container's command, arguments and
 *       environment name it (each {@code :}-separated part of a value).
 *   <li><b>The environment.</b> The container's {@code env} in order: values, the downward API's
 *       {@code metadata.name} and {@code metadata.namespace}, and {@code $(VAR)} references to
 *       variables defined before (Kubernetes' expansion rule: an unknown reference stays as
 *       written). Nothing of this JVM's environment leaks in but {@code PATH}.
 *   <li><b>The NVIDIA container runtime.</b> A container whose environment has {@code
 *       NVIDIA_VISIBLE_DEVICES} gets the node's driver libraries: here, the fake driver's folder on
 *       {@code LD_LIBRARY_PATH}, seeing the node's GPUs ({@code FAKE_CUDA_UUIDS}).
 *   <li><b>Images.</b> An image's entrypoint comes from {@code entrypoints} (the product's image:
 *       the launcher, {@code java -cp … dev.gpushare.http.Main}); a container with a {@code
 *       command} runs that command from the host's {@code PATH}.
 * </ul>
 */
final class Kubelet {

  private static final Pattern REFERENCE = Pattern.compile("\\$\\(([A-Za-z_][A-Za-z0-9_.-]*)\\)");

  private final Pod pod;
  private final Path root;
  private final Map<String, List<String>> entrypoints;
  private final Path driver;
  private final List<String> gpus;
  private final Map<String, Path> volumes = new LinkedHashMap<>();

  /**
   * @param tokens the token for an audience and the pod ({@code namespace/name}), as TokenRequest
   *     would issue it; audience {@code null}: the API server's own (the pod's API token)
   * @param driver the fake driver's folder (the NVIDIA runtime's libraries)
   * @param gpus the node's GPUs' UUIDs (what the runtime shows with {@code NVIDIA_VISIBLE_DEVICES})
   */
  Kubelet(
      Pod pod,
      Path root,
      Map<String, List<String>> entrypoints,
      BiFunction<String, String, String> tokens,
      Path driver,
      List<String> gpus) {
    this.pod = pod;
    this.root = root;
    this.entrypoints = entrypoints;
    this.driver = driver;
    this.gpus = List.copyOf(gpus);
    prepareVolumes(tokens);
  }

  Pod pod() {
    return pod;
  }

  /** The folder of a pod volume. */
  Path volume(String name) {
    Path p = volumes.get(name);
    if (p == null) {
      throw new IllegalArgumentException("the pod has no volume " + name + ": " + volumes.keySet());
    }
    return p;
  }

  private void prepareVolumes(BiFunction<String, String, String> tokens) {
    String ref = pod.getMetadata().getNamespace() + "/" + pod.getMetadata().getName();
    try {
      for (var v : pod.getSpec().getVolumes()) {
        if (v.getEmptyDir() != null) {
          Path dir = Files.createDirectories(root.resolve("volumes").resolve(v.getName()));
          dir.toFile().setWritable(true, false);
          volumes.put(v.getName(), dir);
        } else if (v.getProjected() != null) {
          Path dir = Files.createDirectories(root.resolve("volumes").resolve(v.getName()));
          for (VolumeProjection source : v.getProjected().getSources()) {
            if (source.getServiceAccountToken() != null) {
              var t = source.getServiceAccountToken();
              Files.writeString(dir.resolve(t.getPath()), tokens.apply(t.getAudience(), ref));
            } else if (source.getConfigMap() != null) {
              for (var item : source.getConfigMap().getItems()) {
                Files.writeString(dir.resolve(item.getPath()), "(configMap " + item.getKey() + ")");
              }
            } else if (source.getDownwardAPI() != null) {
              for (var item : source.getDownwardAPI().getItems()) {
                Files.writeString(
                    dir.resolve(item.getPath()), field(item.getFieldRef().getFieldPath()));
              }
            }
          }
          volumes.put(v.getName(), dir);
        } else if (v.getHostPath() != null) {
          Path host = Path.of(v.getHostPath().getPath());
          if ("Directory".equals(v.getHostPath().getType()) && !Files.isDirectory(host)) {
            throw new IllegalStateException(
                "MountVolume.SetUp failed for volume \""
                    + v.getName()
                    + "\": hostPath type check failed: "
                    + host
                    + " is not a directory");
          }
          volumes.put(v.getName(), host);
        } else {
          throw new IllegalStateException("this kubelet cannot set up volume " + v);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private String field(String path) {
    return switch (path) {
      case "metadata.name" -> pod.getMetadata().getName();
      case "metadata.namespace" -> pod.getMetadata().getNamespace();
      case "metadata.uid" -> pod.getMetadata().getUid();
      default -> throw new IllegalStateException("this kubelet has no downward API for " + path);
    };
  }

  /** Runs the init containers in order, each to its end; the first that fails is an error. */
  List<PodSide.Result> runInitContainers() {
    List<PodSide.Result> results = new ArrayList<>();
    for (Container c : pod.getSpec().getInitContainers()) {
      PodSide.Result r = PodSide.run(argv(c, List.of()), environment(c), true);
      results.add(r);
      if (r.status() != 0) {
        throw new IllegalStateException(
            "init container " + c.getName() + " exited " + r.status() + ":\n" + r.out());
      }
    }
    return results;
  }

  /** Starts a container's own command (its {@code command} and {@code args}). */
  Proc start(String container) {
    Container c = container(container);
    return Proc.start(c.getName(), argv(c, List.of()), environment(c), true);
  }

  /**
   * {@code kubectl exec POD -c CONTAINER -- argv}: another process in the container, with its
   * environment (and {@code extra}, as a shell in the container would export it).
   */
  Proc exec(String container, List<String> argv, Map<String, String> extra) {
    Container c = container(container);
    Map<String, String> env = environment(c);
    env.putAll(extra);
    List<String> cmd = new ArrayList<>();
    for (String a : argv) {
      cmd.add(translate(c, a));
    }
    return Proc.start(c.getName() + "-exec", cmd, env, true);
  }

  Container container(String name) {
    for (Container c : pod.getSpec().getContainers()) {
      if (c.getName().equals(name)) {
        return c;
      }
    }
    throw new IllegalArgumentException("no container " + name);
  }

  private List<String> argv(Container c, List<String> extra) {
    Map<String, String> env = environment(c);
    List<String> cmd = new ArrayList<>();
    if (c.getCommand() != null && !c.getCommand().isEmpty()) {
      for (String s : c.getCommand()) {
        cmd.add(translate(c, expand(s, env)));
      }
    } else {
      List<String> entry = entrypoints.get(c.getImage());
      if (entry == null) {
        throw new IllegalStateException(
            "ErrImagePull: this kubelet has no image "
                + c.getImage()
                + " ("
                + entrypoints.keySet()
                + ")");
      }
      cmd.addAll(entry);
    }
    if (c.getArgs() != null) {
      for (String s : c.getArgs()) {
        cmd.add(translate(c, expand(s, env)));
      }
    }
    cmd.addAll(extra);
    return cmd;
  }

  /** The container's environment as the kubelet and the runtime give it. */
  Map<String, String> environment(Container c) {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("PATH", System.getenv().getOrDefault("PATH", "/usr/bin:/bin"));
    env.put("HOSTNAME", pod.getMetadata().getName());
    for (EnvVar e : c.getEnv()) {
      String value;
      if (e.getValueFrom() != null) {
        if (e.getValueFrom().getFieldRef() == null) {
          throw new IllegalStateException("this kubelet has no source for " + e);
        }
        value = field(e.getValueFrom().getFieldRef().getFieldPath());
      } else {
        value = expand(e.getValue() == null ? "" : e.getValue(), env);
      }
      env.put(e.getName(), value);
    }
    env.replaceAll((name, value) -> name.equals("PATH") ? value : translate(c, value));
    if (env.containsKey("NVIDIA_VISIBLE_DEVICES")) {
      env.put("LD_LIBRARY_PATH", driver.toString());
      env.put("FAKE_CUDA_UUIDS", String.join(",", gpus));
    }
    return env;
  }

  /** Kubernetes' {@code $(VAR)}: a variable defined before, else the text as written. */
  static String expand(String value, Map<String, String> defined) {
    Matcher m = REFERENCE.matcher(value);
    StringBuilder out = new StringBuilder();
    while (m.find()) {
      String v = defined.get(m.group(1));
      m.appendReplacement(out, Matcher.quoteReplacement(v == null ? m.group() : v));
    }
    m.appendTail(out);
    return out.toString();
  }

  /** Each {@code :}-separated part of {@code value} under a mount, as the volume's folder. */
  String translate(Container c, String value) {
    List<VolumeMount> mounts = new ArrayList<>(c.getVolumeMounts());
    mounts.sort(Comparator.comparingInt((VolumeMount m) -> m.getMountPath().length()).reversed());
    String[] parts = value.split(":", -1);
    for (int i = 0; i < parts.length; i++) {
      for (VolumeMount m : mounts) {
        String mp = m.getMountPath().replaceAll("/+$", "");
        if (parts[i].equals(mp) || parts[i].startsWith(mp + "/")) {
          parts[i] = volume(m.getName()) + parts[i].substring(mp.length());
          break;
        }
      }
    }
    return String.join(":", parts);
  }
}
