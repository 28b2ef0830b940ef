package dev.gpushare.e2e;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.gpushare.gpu.ChildProcess;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitOption;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.GZIPOutputStream;

/**
 * The real node's images, made here without a registry (the node has none to pull from) and
 * imported with {@code ctr images import} under the names the manifests use:
 *
 * <ul>
 *   <li>{@link #PAUSE}: the sandbox image, one static program ({@code src/test/native/pause.c}).
 *   <li>{@link #WORKLOAD}: Debian's static busybox and the test's programs, with the glibc they
 *       need at its real paths; {@link #STRESS}, the image of {@code
 *       deploy/examples/gpu-share-demo.yaml}, the same with a GPU stress tool's {@code sleep}.
 *   <li>{@link #MEMBER}: the product's own image, built by http-api's Jib plugin ({@code
 *       jib:buildTar}) on a local base ({@link #memberBase}) instead of {@code
 *       eclipse-temurin:17-jre}, which cannot be pulled here: busybox as {@code /bin/sh} and
 *       coreutils, this machine's Java 17 runtime at {@code /opt/java/openjdk} (as Temurin's image
 *       has it) and the shared libraries it loads.
 * </ul>
 *
 * <p>Images that depend only on this machine (pause, workload, the base) are cached under the kube
 * cache ({@code ~/.cache/gpushare-kube/images}, named by a hash of their inputs); the member's
 * image, which holds the code under test, under {@code target/real-node-images}, rebuilt when a
 * module's classes change.
 */
final class NodeImages {

  static final String PAUSE = "gpushare.test/pause:1";
  static final String WORKLOAD = "gpushare.test/workload:1";
  static final String STRESS = "registry-cn-wulanchabu-vpc.ack.aliyuncs.com/acs/stress:v1.0.4";
  static final String MEMBER = "gpushare:0.1.0";
  static final String MEMBER_BASE = "gpushare.test/jre:17";
  static final String JIB = "com.google.cloud.tools:jib-maven-plugin:3.5.2:buildTar";

  /** Bumped when what an image holds changes, so that cached images are made again. */
  private static final String FORMAT = "4";

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Path BUSYBOX = Path.of("/bin/busybox");
  private static final Pattern LDD = Pattern.compile("(?:=>\\s*)?(/\\S+)\\s+\\(0x");

  private final Path cache;
  private final Path work;

  NodeImages(Path cache, Path work) {
    this.cache = cache;
    this.work = work;
  }

  /** The static busybox the images are made of; skips the caller where there is none. */
  static Path busybox() {
    boolean isStatic =
        Files.isExecutable(BUSYBOX)
            && run(List.of("ldd", BUSYBOX.toString()), null).out().contains("not a dynamic");
    assumeTrue(
        isStatic,
        "no static /bin/busybox: the real node's images are made from Debian's busybox-static"
            + " (apt-get install busybox-static; .ci/run installs it)");
    return BUSYBOX;
  }

  /** The pause image ({@code pause}: the static program) as an OCI layout tar. */
  Path pause(Path pause) throws IOException {
    String key = hash(FORMAT, digest(pause));
    return cached(
        "pause-" + key + ".tar",
        out -> {
          Path rootfs = fresh(work.resolve("pause-rootfs"));
          copy(pause, rootfs.resolve("pause"), "rwxr-xr-x");
          ObjectNode config = JSON.createObjectNode();
          config.putArray("Entrypoint").add("/pause");
          oci(rootfs, config, List.of(PAUSE), out);
          KubeControlPlane.deleteTree(rootfs);
        });
  }

  /**
   * The workload image: busybox (every applet under {@code /bin}) and {@code programs} (a name
   * under {@code /usr/local/bin} for each host file), with the shared libraries they load.
   */
  Path workload(Map<String, Path> programs) throws IOException {
    return image(WORKLOAD, programs);
  }

  /**
   * The stand-in for the reference pod's image ({@link #STRESS}): the workload image's busybox with
   * {@code programs} before it on PATH; its {@code sleep}, the command of
   * deploy/examples/gpu-share-demo.yaml, is a GPU stress tool's (src/test/native/gpu_sleep.c).
   */
  Path stress(Map<String, Path> programs) throws IOException {
    return image(STRESS, programs);
  }

  private Path image(String name, Map<String, Path> programs) throws IOException {
    List<String> parts = new ArrayList<>(List.of(FORMAT, name, digest(busybox())));
    for (var e : programs.entrySet()) {
      parts.add(e.getKey() + "=" + digest(e.getValue()));
    }
    return cached(
        "workload-" + hash(parts.toArray(String[]::new)) + ".tar",
        out -> {
          Path rootfs = fresh(work.resolve("workload-rootfs"));
          busyboxInto(rootfs);
          List<Path> elves = new ArrayList<>();
          for (var e : programs.entrySet()) {
            Path to = rootfs.resolve("usr/local/bin").resolve(e.getKey());
            copy(e.getValue(), to, "rwxr-xr-x");
            elves.add(e.getValue());
          }
          libraries(rootfs, elves);
          ObjectNode config = JSON.createObjectNode();
          config.putArray("Env").add("PATH=/usr/local/bin:/bin");
          config.putArray("Cmd").add("/bin/sh");
          oci(rootfs, config, List.of(name), out);
          KubeControlPlane.deleteTree(rootfs);
        });
  }

  /**
   * The base of the member's image, as a {@code docker save} tar for Jib's {@code tar://}: busybox,
   * the running JVM's Java 17 runtime at {@code /opt/java/openjdk} (JAVA_HOME, on PATH) with the
   * libraries it loads, {@code /etc/passwd} with root, and {@code /tmp}.
   */
  Path memberBase() throws IOException {
    Path javaHome = Path.of(System.getProperty("java.home")).toRealPath();
    String release = Files.readString(javaHome.resolve("release"));
    return cached(
        "jre-" + hash(FORMAT, digest(busybox()), javaHome.toString(), release) + ".tar",
        out -> {
          Path rootfs = fresh(work.resolve("jre-rootfs"));
          busyboxInto(rootfs);
          Path java = rootfs.resolve("opt/java/openjdk");
          copyRuntime(javaHome, java);
          List<Path> elves = new ArrayList<>();
          try (var walk = Files.walk(java)) {
            walk.filter(Files::isRegularFile)
                .filter(p -> p.toString().endsWith(".so") || p.getParent().endsWith("bin"))
                .forEach(elves::add);
          }
          libraries(rootfs, elves);
          Files.writeString(
              Files.createDirectories(rootfs.resolve("etc")).resolve("passwd"),
              "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n");
          Files.writeString(rootfs.resolve("etc/group"), "root:x:0:\nnogroup:x:65534:\n");
          Files.createDirectories(rootfs.resolve("root"));
          Path tmp = Files.createDirectories(rootfs.resolve("tmp"));
          Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwxrwxrwx"));
          ObjectNode config = JSON.createObjectNode();
          config
              .putArray("Env")
              .add(
                  "PATH=/opt/java/openjdk/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/bin")
              .add("JAVA_HOME=/opt/java/openjdk")
              .add("LANG=C.UTF-8");
          dockerArchive(rootfs, config, MEMBER_BASE, out);
          KubeControlPlane.deleteTree(rootfs);
        });
  }

  /**
   * The product's image {@link #MEMBER}, built by http-api's own pom and Jib configuration ({@code
   * jib:buildTar}) with only the base image replaced ({@code -Djib.from.image=tar://…}). The
   * modules it packs are the ones on this test's class path ({@link JibRepository}).
   */
  Path member() throws IOException {
    Path base = memberBase();
    JibRepository repo = JibRepository.of(work.resolve("m2"));
    Path out = work.resolve("gpushare-0.1.0.tar");
    Path keyFile = work.resolve("gpushare-0.1.0.key");
    String key = hash(FORMAT, base.toString(), repo.key());
    if (Files.isRegularFile(out)
        && Files.isRegularFile(keyFile)
        && Files.readString(keyFile).equals(key)) {
      return out;
    }
    Files.deleteIfExists(keyFile);
    Path pom = repo.project(work.resolve("project"));
    List<String> cmd = new ArrayList<>(List.of("mvn", "-B", "-q"));
    if (repo.resolved()) {
      cmd.add("-o");
    }
    cmd.addAll(
        List.of(
            "-f",
            pom.toString(),
            "-Dmaven.repo.local=" + repo.root(),
            JIB,
            "-Djib.from.image=tar://" + base,
            "-Djib.outputPaths.tar=" + out,
            "-Djib.outputPaths.digest=" + work.resolve("gpushare-0.1.0.digest"),
            "-Djib.outputPaths.imageId=" + work.resolve("gpushare-0.1.0.id"),
            "-Djib.outputPaths.imageJson=" + work.resolve("gpushare-0.1.0.json"),
            "-Djib.applicationCache=" + work.resolve("jib-cache"),
            "-Djib.baseImageCache=" + work.resolve("jib-base-cache")));
    var r = run(cmd, pom.getParent());
    if (r.status() != 0 || !Files.isRegularFile(out)) {
      throw new AssertionError("jib:buildTar of http-api failed: " + cmd + "\n" + r.out());
    }
    repo.markResolved();
    Files.writeString(keyFile, key);
    return out;
  }

  // ---------------------------------------------------------------- rootfs

  private static void busyboxInto(Path rootfs) throws IOException {
    Path bin = Files.createDirectories(rootfs.resolve("bin"));
    copy(busybox(), bin.resolve("busybox"), "rwxr-xr-x");
    for (String applet : run(List.of(BUSYBOX.toString(), "--list"), null).out().split("\\s+")) {
      if (!applet.isBlank() && !Files.exists(bin.resolve(applet), LinkOption.NOFOLLOW_LINKS)) {
        Files.createSymbolicLink(bin.resolve(applet), Path.of("busybox"));
      }
    }
    Path usrBin = Files.createDirectories(rootfs.resolve("usr/bin"));
    Files.createSymbolicLink(usrBin.resolve("env"), Path.of("/bin/busybox"));
  }

  /** The Java runtime of {@code home} (links followed), without what only a JDK's tools use. */
  private static void copyRuntime(Path home, Path to) throws IOException {
    List<String> skip = List.of("jmods", "include", "man", "demo", "lib/src.zip", "lib/ct.sym");
    try (var walk = Files.walk(home, FileVisitOption.FOLLOW_LINKS)) {
      for (Path p : walk.toList()) {
        String rel = home.relativize(p).toString();
        if (skip.stream().anyMatch(s -> rel.equals(s) || rel.startsWith(s + "/"))) {
          continue;
        }
        Path target = to.resolve(rel);
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else if (Files.exists(p)) {
          Files.copy(p, target, StandardCopyOption.REPLACE_EXISTING);
        }
      }
    }
  }

  /** The shared libraries {@code elves} load (ldd), at the paths they have here. */
  private static void libraries(Path rootfs, List<Path> elves) throws IOException {
    TreeSet<String> libs = new TreeSet<>();
    for (Path elf : elves) {
      String out = run(List.of("ldd", elf.toString()), null).out();
      Matcher m = LDD.matcher(out);
      while (m.find()) {
        libs.add(m.group(1));
      }
    }
    for (String lib : libs) {
      mirror(rootfs, Path.of(lib));
    }
  }

  /**
   * {@code host} at the same path under {@code rootfs}: each symbolic link on the way as the same
   * link (e.g. Debian's {@code /lib -> usr/lib}), then the file.
   */
  private static void mirror(Path rootfs, Path host) throws IOException {
    Path done = Path.of("/");
    for (Path part : host) {
      Path here = done.resolve(part);
      Path inside = rootfs.resolve(Path.of("/").relativize(here).toString());
      if (Files.isSymbolicLink(here)) {
        Path link = Files.readSymbolicLink(here);
        if (!Files.exists(inside, LinkOption.NOFOLLOW_LINKS)) {
          Files.createDirectories(inside.getParent());
          Files.createSymbolicLink(inside, link);
        }
        Path target = here.getParent().resolve(link).normalize();
        mirror(rootfs, target);
        done = target;
      } else if (Files.isDirectory(here)) {
        Files.createDirectories(inside);
        done = here;
      } else {
        if (!Files.exists(inside, LinkOption.NOFOLLOW_LINKS)) {
          Files.createDirectories(inside.getParent());
          Files.copy(here, inside, StandardCopyOption.COPY_ATTRIBUTES);
        }
        done = here;
      }
    }
  }

  // ---------------------------------------------------------------- image formats

  /** One layer, {@code rootfs} as root:root with its modes, as a tar. */
  private static Path layer(Path rootfs) {
    Path tar = rootfs.resolveSibling(rootfs.getFileName() + ".layer.tar");
    var r =
        run(
            List.of(
                "tar",
                "--numeric-owner",
                "--owner=0",
                "--group=0",
                "--sort=name",
                "--mtime=@0",
                "-C",
                rootfs.toString(),
                "-cf",
                tar.toString(),
                "."),
            null);
    if (r.status() != 0) {
      throw new AssertionError("tar of " + rootfs + ": " + r.out());
    }
    return tar;
  }

  private static ObjectNode imageConfig(ObjectNode config, String diffId) {
    ObjectNode image = JSON.createObjectNode();
    image.put("architecture", "amd64").put("os", "linux");
    image.set("config", config);
    ObjectNode rootfs = image.putObject("rootfs");
    rootfs.put("type", "layers").putArray("diff_ids").add(diffId);
    return image;
  }

  /** An OCI image layout (one gzipped layer) as a tar, one index entry per name. */
  private static void oci(Path rootfs, ObjectNode config, List<String> names, Path out)
      throws IOException {
    Path layout = fresh(rootfs.resolveSibling(rootfs.getFileName() + ".oci"));
    Path blobs = Files.createDirectories(layout.resolve("blobs/sha256"));
    Path tar = layer(rootfs);
    String diffId = "sha256:" + digest(tar);
    Path gz = blobs.resolve("layer.tmp");
    try (InputStream in = Files.newInputStream(tar);
        OutputStream o = new GZIPOutputStream(Files.newOutputStream(gz), 1 << 16)) {
      in.transferTo(o);
    }
    String layerDigest = digest(gz);
    Files.move(gz, blobs.resolve(layerDigest));
    Files.delete(tar);
    byte[] configBytes = JSON.writeValueAsBytes(imageConfig(config, diffId));
    String configDigest = sha256(configBytes);
    Files.write(blobs.resolve(configDigest), configBytes);
    ObjectNode manifest = JSON.createObjectNode();
    manifest.put("schemaVersion", 2).put("mediaType", "application/vnd.oci.image.manifest.v1+json");
    manifest
        .putObject("config")
        .put("mediaType", "application/vnd.oci.image.config.v1+json")
        .put("digest", "sha256:" + configDigest)
        .put("size", configBytes.length);
    manifest
        .putArray("layers")
        .addObject()
        .put("mediaType", "application/vnd.oci.image.layer.v1.tar+gzip")
        .put("digest", "sha256:" + layerDigest)
        .put("size", Files.size(blobs.resolve(layerDigest)));
    byte[] manifestBytes = JSON.writeValueAsBytes(manifest);
    String manifestDigest = sha256(manifestBytes);
    Files.write(blobs.resolve(manifestDigest), manifestBytes);
    ObjectNode index = JSON.createObjectNode();
    index.put("schemaVersion", 2);
    ArrayNode manifests = index.putArray("manifests");
    for (String name : names) {
      ObjectNode m = manifests.addObject();
      m.put("mediaType", "application/vnd.oci.image.manifest.v1+json")
          .put("digest", "sha256:" + manifestDigest)
          .put("size", manifestBytes.length);
      m.putObject("platform").put("architecture", "amd64").put("os", "linux");
      m.putObject("annotations")
          .put("io.containerd.image.name", name)
          .put("org.opencontainers.image.ref.name", name.substring(name.lastIndexOf(':') + 1));
    }
    Files.write(layout.resolve("index.json"), JSON.writeValueAsBytes(index));
    Files.writeString(layout.resolve("oci-layout"), "{\"imageLayoutVersion\":\"1.0.0\"}");
    tarOf(layout, out);
    KubeControlPlane.deleteTree(layout);
  }

  /** A {@code docker save} archive (one uncompressed layer) tagged {@code name}. */
  private static void dockerArchive(Path rootfs, ObjectNode config, String name, Path out)
      throws IOException {
    Path archive = fresh(rootfs.resolveSibling(rootfs.getFileName() + ".docker"));
    Path tar = layer(rootfs);
    String diffId = "sha256:" + digest(tar);
    Files.move(tar, archive.resolve("layer.tar"));
    Files.write(
        archive.resolve("config.json"), JSON.writeValueAsBytes(imageConfig(config, diffId)));
    ArrayNode manifest = JSON.createArrayNode();
    ObjectNode m = manifest.addObject();
    m.put("Config", "config.json");
    m.putArray("RepoTags").add(name);
    m.putArray("Layers").add("layer.tar");
    Files.write(archive.resolve("manifest.json"), JSON.writeValueAsBytes(manifest));
    tarOf(archive, out);
    KubeControlPlane.deleteTree(archive);
  }

  /** The files of {@code dir} as a tar, named without a leading "./" (Jib refuses that entry). */
  private static void tarOf(Path dir, Path out) throws IOException {
    List<String> cmd = new ArrayList<>(List.of("tar", "-C", dir.toString(), "-cf", out.toString()));
    try (var files = Files.list(dir)) {
      files.map(f -> f.getFileName().toString()).sorted().forEach(cmd::add);
    }
    var r = run(cmd, null);
    if (r.status() != 0) {
      throw new AssertionError("tar of " + dir + ": " + r.out());
    }
  }

  // ---------------------------------------------------------------- helpers

  private interface Maker {
    void make(Path out) throws IOException;
  }

  /**
   * {@code name} in the cache, made by {@code maker} (into a scratch file, then moved) if absent.
   */
  private Path cached(String name, Maker maker) throws IOException {
    Path file = cache.resolve(name);
    if (Files.isRegularFile(file)) {
      return file;
    }
    Files.createDirectories(cache);
    Files.createDirectories(work);
    Path scratch = Files.createTempFile(cache, ".image", ".tar");
    try {
      maker.make(scratch);
      Files.move(scratch, file, StandardCopyOption.ATOMIC_MOVE);
      return file;
    } finally {
      Files.deleteIfExists(scratch);
    }
  }

  private static Path fresh(Path dir) throws IOException {
    KubeControlPlane.deleteTree(dir);
    return Files.createDirectories(dir);
  }

  private static void copy(Path from, Path to, String mode) throws IOException {
    Files.createDirectories(to.getParent());
    Files.copy(from, to, StandardCopyOption.REPLACE_EXISTING);
    Files.setPosixFilePermissions(to, PosixFilePermissions.fromString(mode));
  }

  static String digest(Path file) throws IOException {
    try (InputStream in = Files.newInputStream(file)) {
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      byte[] buf = new byte[1 << 16];
      for (int n; (n = in.read(buf)) > 0; ) {
        md.update(buf, 0, n);
      }
      return HexFormat.of().formatHex(md.digest());
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  static String hash(String... parts) {
    return sha256(String.join("\n", parts).getBytes(StandardCharsets.UTF_8)).substring(0, 16);
  }

  record Result(int status, String out) {}

  /** Runs {@code cmd} (in {@code dir}, null: here) to its end, within 10 minutes. */
  static Result run(List<String> cmd, Path dir) {
    try {
      Path log = Files.createTempFile("node-images", ".log");
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
      pb.redirectOutput(log.toFile());
      pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
      if (dir != null) {
        pb.directory(dir.toFile());
      }
      Process p = pb.start();
      boolean done;
      try {
        done = p.waitFor(10, java.util.concurrent.TimeUnit.MINUTES);
      } finally {
        ChildProcess.killTree(p.toHandle());
      }
      String out = Files.readString(log);
      Files.delete(log);
      if (!done) {
        throw new AssertionError(String.join(" ", cmd) + ": no end within 10 minutes\n" + out);
      }
      return new Result(p.exitValue(), out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted: " + cmd, e);
    }
  }
}
