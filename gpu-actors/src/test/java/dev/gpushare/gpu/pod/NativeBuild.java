package dev.gpushare.gpu.pod;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.gpushare.gpu.ChildProcess;
import dev.gpushare.gpu.ChildProcess.Result;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * What the pod-side tests run, compiled once per JVM with gcc (skipped, as a JUnit assumption,
 * where there is none): {@code libgpushare.so} (by {@code src/main/native/build.sh}, the one place
 * that holds its flags), the fake drivers {@code libcuda.so.1} ({@code
 * gpu-check/fake-cuda/fake_cuda.c} and any {@code fake_cuda_*.c} beside it) and {@code
 * libnvidia-ml.so.1} ({@code gpu-check/fake-nvml/fake_nvml.c}), and the test programs {@code
 * src/test/native/*.c}, into {@code target/native-test/<flavour>/lib} and {@code .../bin}.
 *
 * <p>A test program is compiled with build.sh's compile flags ({@code --print-cflags}) and {@code
 * -L} the fakes' folder; what it links is read from its opening comment ({@link #buildLine}): the
 * {@code gcc} command shown there, or a line {@code build: ARGS} (where {@code <dir>} stands for
 * the fakes' folder). {@link #program(Path)} compiles another module's program the same way.
 *
 * <p>Two flavours: {@link Flavour#PLAIN}, and {@link Flavour#ASAN} where the library ({@code
 * build.sh --sanitize}) and the programs carry AddressSanitizer and UBSan ({@link #preload()} puts
 * the ASan runtime first). {@link #current()} is the flavour that {@code
 * -Dgpushare.native.sanitize=true} asks for.
 */
public final class NativeBuild {
  /** Which build: plain, or with {@code -fsanitize=address,undefined}. */
  public enum Flavour {
    PLAIN,
    ASAN;

    String dir() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** The system property that makes {@link #current()} the ASan flavour. */
  public static final String SANITIZE_PROPERTY = "gpushare.native.sanitize";

  private static final Pattern BUILD_LINE =
      Pattern.compile("^\\s*(?:/\\*+|\\*|//)?\\s*build:\\s*(.*?)\\s*(?:\\*/)?\\s*$");
  private static final Pattern GCC_LINE =
      Pattern.compile("^\\s*(?:/\\*+|\\*|//)?\\s*(?:\\$\\s*)?(gcc\\s.*?)\\s*(?:\\*/)?\\s*$");
  private static final Pattern COMMENT_LEAD = Pattern.compile("^\\s*(?:\\*|//)?\\s*");
  private static final Map<Flavour, Object> BUILT = new EnumMap<>(Flavour.class);
  private static Boolean compiler;

  private final Flavour flavour;
  private final Path library;
  private final Path lib;
  private final Path bin;
  private final List<String> preload;
  private final List<String> flags;

  private NativeBuild(
      Flavour flavour, Path library, Path lib, Path bin, List<String> preload, List<String> flags) {
    this.flavour = flavour;
    this.library = library;
    this.lib = lib;
    this.bin = bin;
    this.preload = preload;
    this.flags = flags;
  }

  /** The flavour that {@code -Dgpushare.native.sanitize=true} asks for, else plain. */
  public static NativeBuild current() {
    return of(Boolean.getBoolean(SANITIZE_PROPERTY) ? Flavour.ASAN : Flavour.PLAIN);
  }

  public static NativeBuild plain() {
    return of(Flavour.PLAIN);
  }

  public static NativeBuild asan() {
    return of(Flavour.ASAN);
  }

  /**
   * The build of that flavour, made at the first call in this JVM. Skips the calling test where
   * there is no gcc; fails it (every time) where the build failed.
   */
  public static synchronized NativeBuild of(Flavour flavour) {
    assumeTrue(hasCompiler(), "no C compiler (gcc): the pod-side library is not built here");
    Object built = BUILT.get(flavour);
    if (built == null) {
      try {
        built = build(flavour);
      } catch (AssertionError | Exception e) {
        built = new AssertionError("the " + flavour.dir() + " native build failed: " + e, e);
      }
      BUILT.put(flavour, built);
    }
    if (built instanceof AssertionError e) {
      throw e;
    }
    return (NativeBuild) built;
  }

  /** Whether gcc runs here. */
  public static synchronized boolean hasCompiler() {
    if (compiler == null) {
      try {
        compiler = ChildProcess.run(List.of("gcc", "--version"), Map.of()).rc() == 0;
      } catch (Exception e) {
        compiler = false;
      }
    }
    return compiler;
  }

  /**
   * The gpu-actors module's folder (its tests run in it; an IDE may run them from the root; another
   * module's tests run beside it).
   */
  public static Path module() {
    Path here = Path.of("").toAbsolutePath();
    List<Path> candidates = new ArrayList<>(List.of(here, here.resolve("gpu-actors")));
    if (here.getParent() != null) {
      candidates.add(here.getParent().resolve("gpu-actors"));
    }
    for (Path p : candidates) {
      if (Files.exists(p.resolve("src/main/native/build.sh"))) {
        return p;
      }
    }
    throw new IllegalStateException("not in gpu-actors (no src/main/native/build.sh): " + here);
  }

  public static Path buildScript() {
    return module().resolve("src/main/native/build.sh");
  }

  /**
   * Runs {@code build.sh} with these arguments (gcc as the compiler); rc and output together. The
   * script builds incrementally, so a call after an up-to-date build is cheap.
   */
  public static Result runBuildScript(String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of("bash", buildScript().toString()));
    cmd.addAll(Arrays.asList(args));
    return ChildProcess.run(cmd, Map.of("CC", "gcc"));
  }

  /** build.sh's compile flags for that flavour, as one list. */
  public static List<String> compileFlags(Flavour flavour) throws Exception {
    Result r =
        flavour == Flavour.ASAN
            ? runBuildScript("--print-cflags", "--sanitize")
            : runBuildScript("--print-cflags");
    check(r, "build.sh --print-cflags");
    return List.of(r.out().strip().split("\\s+"));
  }

  public Flavour flavour() {
    return flavour;
  }

  public boolean sanitized() {
    return flavour == Flavour.ASAN;
  }

  /** libgpushare.so of this flavour. */
  public Path library() {
    return library;
  }

  /** The fakes' folder: libcuda.so.1, libnvidia-ml.so.1 (and their .so links). */
  public Path fakes() {
    return lib;
  }

  /** A compiled test program, by its source's name without {@code .c}. */
  public Path program(String name) {
    Path p = bin.resolve(name);
    if (!Files.isExecutable(p)) {
      throw new IllegalArgumentException(
          "no test program " + name + " (src/test/native/" + name + ".c) in " + bin);
    }
    return p;
  }

  /**
   * Another module's test program ({@code source}, a {@code .c} file), compiled at the first call
   * (and again when its source, a header beside it, the fakes or build.sh changed) into this
   * build's folder of programs, as {@code src/test/native}'s are: build.sh's compile flags, {@code
   * -I} its folder, {@code -L} the fakes, what its opening comment says it links ({@link
   * #buildLine}).
   */
  public Path program(Path source) {
    try {
      synchronized (NativeBuild.class) {
        return compileProgram(source.toAbsolutePath().normalize(), lib, bin, flags);
      }
    } catch (AssertionError | RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new AssertionError("cannot compile " + source + ": " + e, e);
    }
  }

  /** What goes into {@code LD_PRELOAD}, in order (ASan's runtime first where sanitized). */
  public List<String> preload() {
    return preload;
  }

  /**
   * The environment that puts the library into a process: {@code LD_PRELOAD}, {@code
   * LD_LIBRARY_PATH} (the fakes), and where sanitized the sanitizers' options (a finding ends the
   * process with a report on stderr; leaks are reported at exit).
   */
  public Map<String, String> environment() {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("LD_PRELOAD", String.join(":", preload));
    env.put("LD_LIBRARY_PATH", lib.toString());
    if (sanitized()) {
      env.put("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:halt_on_error=1:exitcode=86");
      env.put("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1:exitcode=87");
    }
    return env;
  }

  // ---- the build ----

  private static NativeBuild build(Flavour flavour) throws Exception {
    Path module = module();
    Path out = module.resolve("target/native-test").resolve(flavour.dir());
    Path lib = Files.createDirectories(out.resolve("lib"));
    Path bin = Files.createDirectories(out.resolve("bin"));

    Result r =
        flavour == Flavour.ASAN ? runBuildScript("--sanitize") : runBuildScript(new String[0]);
    check(r, "build.sh");
    if (r.out().contains("skipped")) {
      throw new AssertionError("gcc runs, yet build.sh built nothing: " + r.out());
    }
    Path library = module.resolve(flavour == Flavour.ASAN ? "target/native-asan" : "target/native");
    library = library.resolve("libgpushare.so");

    Path fakeCuda = module.resolve("gpu-check/fake-cuda");
    List<Path> cuda = new ArrayList<>(List.of(fakeCuda.resolve("fake_cuda.c")));
    try (Stream<Path> s = Files.list(fakeCuda)) {
      s.filter(p -> p.getFileName().toString().matches("fake_cuda_.+\\.c"))
          .sorted()
          .forEach(cuda::add);
    }
    fake(lib, "libcuda.so.1", "libcuda.so", cuda);
    fake(
        lib,
        "libnvidia-ml.so.1",
        "libnvidia-ml.so",
        List.of(module.resolve("gpu-check/fake-nvml/fake_nvml.c")));

    List<String> flags = compileFlags(flavour);
    Path sources = module.resolve("src/test/native");
    if (Files.isDirectory(sources)) {
      List<Path> programs;
      try (Stream<Path> s = Files.list(sources)) {
        programs = s.filter(p -> p.toString().endsWith(".c")).sorted().toList();
      }
      for (Path source : programs) {
        compileProgram(source, lib, bin, flags);
      }
    }

    List<String> preload = new ArrayList<>();
    if (flavour == Flavour.ASAN) {
      Result asan = ChildProcess.run(List.of("gcc", "-print-file-name=libasan.so"), Map.of());
      check(asan, "gcc -print-file-name=libasan.so");
      Path runtime = Path.of(asan.out().strip());
      if (!runtime.isAbsolute() || !Files.exists(runtime)) {
        throw new AssertionError("gcc has no libasan.so (install libasan): " + asan.out());
      }
      preload.add(runtime.toString());
    }
    preload.add(library.toString());
    return new NativeBuild(flavour, library, lib, bin, List.copyOf(preload), flags);
  }

  /**
   * A test program into {@code bin} (its source's name without {@code .c}), unless it is newer than
   * its source, the headers beside it, the fakes and build.sh.
   */
  private static Path compileProgram(Path source, Path lib, Path bin, List<String> flags)
      throws Exception {
    Path sources = source.getParent();
    String name = source.getFileName().toString().replaceFirst("\\.c$", "");
    Path exe = bin.resolve(name);
    List<Path> inputs = new ArrayList<>(List.of(buildScript()));
    try (Stream<Path> s = Files.list(lib)) {
      s.forEach(inputs::add);
    }
    try (Stream<Path> s = Files.list(sources)) {
      s.filter(p -> p.toString().endsWith(".h")).forEach(inputs::add);
    }
    inputs.add(source);
    if (upToDate(exe, inputs)) {
      return exe;
    }
    List<String> cmd = new ArrayList<>(List.of("gcc"));
    cmd.addAll(flags);
    cmd.addAll(List.of("-I" + sources, "-o", "{out}", source.toString(), "-L" + lib));
    for (String arg : buildLine(source)) {
      cmd.add(arg.replace("<dir>", lib.toString()));
    }
    compile(cmd, exe, source.toString());
    return exe;
  }

  /**
   * A fake driver: a shared library with its soname and the unversioned link beside it. Not
   * sanitized in either flavour: it stands in for the real driver, which is not either.
   */
  private static void fake(Path lib, String soname, String link, List<Path> sources)
      throws Exception {
    Path so = lib.resolve(soname);
    if (!upToDate(so, sources)) {
      List<String> cmd =
          new ArrayList<>(
              List.of(
                  "gcc",
                  "-shared",
                  "-fPIC",
                  "-O1",
                  "-g",
                  "-D_GNU_SOURCE",
                  "-Wl,-soname," + soname,
                  "-o",
                  "{out}"));
      sources.forEach(s -> cmd.add(s.toString()));
      cmd.addAll(List.of("-ldl", "-lpthread"));
      compile(cmd, so, soname);
    }
    Path l = lib.resolve(link);
    if (!Files.isSymbolicLink(l)) {
      Files.deleteIfExists(l);
      Files.createSymbolicLink(l, Path.of(soname));
    }
  }

  /**
   * What a program's opening comment says it links: the arguments of a {@code build: ARGS} line as
   * they are, else of the first {@code gcc ...} command (continued over lines ending in {@code \})
   * those that say what to link or define ({@code -l…}, {@code -Wl,…}, {@code -pthread}, {@code
   * -D…}); the rest (output, source, {@code -L}, warnings, optimisation) is NativeBuild's.
   */
  static List<String> buildLine(Path source) throws IOException {
    List<String> lines = Files.readAllLines(source, StandardCharsets.UTF_8);
    List<String> head = new ArrayList<>();
    for (String line : lines) {
      head.add(line);
      if (line.contains("*/")) {
        break;
      }
    }
    for (String line : head) {
      Matcher m = BUILD_LINE.matcher(line);
      if (m.matches()) {
        String args = m.group(1).strip();
        return args.isEmpty() ? List.of() : List.of(args.split("\\s+"));
      }
    }
    for (int i = 0; i < head.size(); i++) {
      Matcher m = GCC_LINE.matcher(head.get(i));
      if (!m.matches()) {
        continue;
      }
      StringBuilder command = new StringBuilder(m.group(1));
      while (command.toString().endsWith("\\") && ++i < head.size()) {
        command.setLength(command.length() - 1);
        command.append(' ').append(COMMENT_LEAD.matcher(head.get(i)).replaceFirst(""));
      }
      List<String> args = new ArrayList<>();
      for (String arg : command.toString().split("\\s+")) {
        if (arg.matches("-l.+|-Wl,.+|-pthread|-D.+")) {
          args.add(arg);
        }
      }
      return args;
    }
    return List.of();
  }

  /**
   * Compiles into a file beside {@code out} and renames it, so that a failed or concurrent build
   * never leaves half a file; {@code {out}} in the command stands for that file.
   */
  private static void compile(List<String> cmd, Path out, String what) throws Exception {
    Path tmp = out.resolveSibling("." + out.getFileName() + "." + ProcessHandle.current().pid());
    List<String> real = cmd.stream().map(a -> a.equals("{out}") ? tmp.toString() : a).toList();
    Result r = ChildProcess.run(real, Map.of());
    if (r.rc() != 0) {
      Files.deleteIfExists(tmp);
    }
    check(r, what + ": " + String.join(" ", real));
    Files.move(tmp, out, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  private static boolean upToDate(Path out, List<Path> inputs) throws IOException {
    if (!Files.exists(out)) {
      return false;
    }
    FileTime built = Files.getLastModifiedTime(out);
    for (Path in : inputs) {
      if (Files.getLastModifiedTime(in).compareTo(built) > 0) {
        return false;
      }
    }
    return true;
  }

  private static void check(Result r, String what) {
    if (r.rc() != 0) {
      throw new AssertionError(what + " failed (rc " + r.rc() + "):\n" + r.out());
    }
  }
}
