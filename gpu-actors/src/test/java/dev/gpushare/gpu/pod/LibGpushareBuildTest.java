package dev.gpushare.gpu.pod;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.gpushare.gpu.ChildProcess;
import dev.gpushare.gpu.ChildProcess.Result;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * libgpushare.so as the build makes it (src/main/native/build.sh, run by Maven at {@code compile}):
 * there, exporting the driver's and NVML's entry points and nothing of its own, needing nothing
 * beyond libc, libdl and libpthread, and warning-free also under the sanitizers. Skipped where
 * there is no C compiler (the build then says so in one line and makes no library).
 */
class LibGpushareBuildTest {
  static final List<String> TABLE =
      List.of(
          "cuInit",
          "cuGetProcAddress",
          "cuGetProcAddress_v2",
          "dlsym",
          "cuMemAlloc_v2",
          "nvmlInit_v2",
          "nvmlDeviceGetCount_v2");
  static final Pattern ALLOWED =
      Pattern.compile("libc\\.so\\.6|libdl\\.so\\.2|libpthread\\.so\\.0|ld-linux.*");

  @BeforeAll
  static void needsACompiler() {
    assumeTrue(NativeBuild.hasCompiler(), "no C compiler (gcc): libgpushare.so is not built here");
  }

  @Test
  void theBuildMadeTheLibraryAndPutItIntoTheJar() throws Exception {
    Path library = NativeBuild.module().resolve("target/native/libgpushare.so");
    assertTrue(Files.isRegularFile(library), "no " + library + ": did the Maven build run?");
    assertNotNull(
        getClass().getResource("/dev/gpushare/native/libgpushare.so"),
        "the library is not among this module's resources (target/classes)");
  }

  @Test
  void itExportsTheEntryPointsAndNothingOfItsOwn() throws Exception {
    Set<String> exported = exported(NativeBuild.plain().library());

    assertTrue(exported.containsAll(TABLE), "missing: " + missing(exported) + " in " + exported);
    assertEquals(
        List.of(),
        exported.stream().filter(s -> s.startsWith("gs_")).toList(),
        "internals must stay hidden (GS_EXPORT only on the driver's and NVML's names)");
  }

  @Test
  void itNeedsOnlyLibcLibdlAndLibpthread() throws Exception {
    Result r =
        ChildProcess.run(
            List.of("readelf", "-d", NativeBuild.plain().library().toString()), Map.of());
    assumeTrue(r.rc() != -1, "no readelf");
    assertEquals(0, r.rc(), r.out());
    Matcher m = Pattern.compile("\\(NEEDED\\).*\\[(.*)]").matcher(r.out());
    Set<String> needed = new TreeSet<>();
    while (m.find()) {
      needed.add(m.group(1));
    }
    assertTrue(needed.contains("libc.so.6"), r.out());
    assertEquals(
        List.of(), needed.stream().filter(n -> !ALLOWED.matcher(n).matches()).toList(), r.out());
  }

  @Test
  void theSourcesCompileWarningFreeAlsoUnderTheSanitizers() throws Exception {
    // build.sh compiles with -Wall -Wextra -Werror; --force compiles even when up to date.
    Result plain = NativeBuild.runBuildScript("--force");
    assertEquals(0, plain.rc(), plain.out());
    Result asan = NativeBuild.runBuildScript("--force", "--sanitize");
    assertEquals(0, asan.rc(), asan.out());
    assertEquals("", plain.out() + asan.out(), "a build says nothing when it succeeds");
    Set<String> exported = exported(NativeBuild.asan().library());
    assertTrue(exported.containsAll(TABLE), "missing: " + missing(exported));
  }

  @Test
  void withoutACompilerTheBuildSaysSoInOneLineAndSucceeds() throws Exception {
    Path library = NativeBuild.plain().library();
    FileTime before = Files.getLastModifiedTime(library);
    Result r =
        ChildProcess.run(
            List.of("bash", NativeBuild.buildScript().toString(), "--force"),
            Map.of("CC", "/nonexistent/cc"));

    assertEquals(0, r.rc(), r.out());
    assertEquals(
        "[gpushare] libgpushare.so skipped: no C compiler (set CC or install gcc)\n", r.out());
    assertEquals(before, Files.getLastModifiedTime(library), "the library stays as it was");
  }

  private static Set<String> exported(Path library) throws Exception {
    Result r =
        ChildProcess.run(List.of("nm", "-D", "--defined-only", library.toString()), Map.of());
    assumeTrue(r.rc() != -1, "no nm");
    assertEquals(0, r.rc(), r.out());
    Set<String> names = new TreeSet<>();
    for (String line : r.out().split("\n")) {
      String[] f = line.trim().split("\\s+");
      if (f.length == 3) {
        names.add(f[2].replaceFirst("@.*", ""));
      }
    }
    return names;
  }

  private static List<String> missing(Set<String> exported) {
    return TABLE.stream().filter(s -> !exported.contains(s)).toList();
  }
}
