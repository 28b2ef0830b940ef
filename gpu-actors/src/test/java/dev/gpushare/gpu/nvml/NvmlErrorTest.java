package dev.gpushare.gpu.nvml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The NVML return codes and the one checker: pure Java, no native code. */
class NvmlErrorTest {

  @Test
  void everyNvmlErrorCodeOfThePresetsHasAConstant() throws ClassNotFoundException {
    // Loaded, not initialized: its static initializer would load native code.
    Class<?> nvml =
        Class.forName("org.bytedeco.cuda.global.nvml", false, getClass().getClassLoader());
    List<String> presets =
        Arrays.stream(nvml.getDeclaredFields())
            .filter(f -> Modifier.isStatic(f.getModifiers()) && f.getType() == int.class)
            .map(Field::getName)
            .filter(n -> n.startsWith("NVML_ERROR_"))
            .sorted()
            .toList();
    List<String> ours =
        Arrays.stream(NvmlError.values()).map(NvmlError::nvmlName).sorted().toList();

    assertEquals(30, presets.size(), presets.toString());
    assertEquals(presets, ours);
  }

  @Test
  void everyCodeMapsBackToItsConstantAndTheCodesAreNvmlHs() {
    for (NvmlError e : NvmlError.values()) {
      assertEquals(e, NvmlError.ofCode(e.code()));
      assertTrue(NvmlError.isKnown(e.code()));
      assertFalse(e.message().isBlank(), e.name());
      assertEquals(e.message() + " (NVML_ERROR_" + e.name() + ")", e.describe());
    }
    assertEquals(
        NvmlError.values().length,
        Arrays.stream(NvmlError.values()).map(NvmlError::code).collect(Collectors.toSet()).size());
    assertEquals(3, NvmlError.NOT_SUPPORTED.code());
    assertEquals(4, NvmlError.NO_PERMISSION.code());
    assertEquals(15, NvmlError.GPU_IS_LOST.code());
    assertEquals(29, NvmlError.INVALID_STATE.code());
    assertEquals(999, NvmlError.UNKNOWN.code());
    assertEquals("GPU is lost (NVML_ERROR_GPU_IS_LOST)", NvmlError.GPU_IS_LOST.describe());
  }

  @Test
  void anUnknownCodeIsUnknownButKeepsItsValue() {
    assertFalse(NvmlError.isKnown(1234));
    assertEquals(NvmlError.UNKNOWN, NvmlError.ofCode(1234));
    assertEquals(NvmlError.UNKNOWN, NvmlError.ofCode(-1));

    NvmlException e = new NvmlException("nvmlDeviceGetFoo", 1234);
    assertEquals(NvmlError.UNKNOWN, e.error());
    assertEquals(1234, e.code());
    assertEquals(
        "nvmlDeviceGetFoo failed: unknown NVML return code 1234 (treated as NVML_ERROR_UNKNOWN)",
        e.getMessage());
  }

  @Test
  void successIsNotAnError() {
    assertThrows(IllegalArgumentException.class, () -> NvmlError.ofCode(0));
  }

  @Test
  void theCheckerPassesSuccessAndThrowsTypedErrorsNamingTheFunction() {
    NvmlCheck.require("nvmlInit_v2", 0);
    assertTrue(NvmlCheck.optional("nvmlDeviceGetMigMode", 0));
    assertTrue(NvmlCheck.optionalPerProcess("nvmlDeviceGetProcessUtilization", 0));

    NvmlException lost =
        assertThrows(
            NvmlException.class,
            () -> NvmlCheck.optional("nvmlDeviceGetMemoryInfo", NvmlError.GPU_IS_LOST.code()));
    assertEquals(NvmlError.GPU_IS_LOST, lost.error());
    assertEquals(15, lost.code());
    assertEquals("nvmlDeviceGetMemoryInfo", lost.function());
    assertEquals(
        "nvmlDeviceGetMemoryInfo failed: GPU is lost (NVML_ERROR_GPU_IS_LOST)", lost.getMessage());
  }

  @Test
  void notSupportedIsAValueUnlessTheCallIsRequired() {
    int notSupported = NvmlError.NOT_SUPPORTED.code();
    assertFalse(NvmlCheck.optional("nvmlDeviceGetMigMode", notSupported));
    assertFalse(NvmlCheck.optionalPerProcess("nvmlDeviceGetProcessUtilization", notSupported));

    NvmlException required =
        assertThrows(NvmlException.class, () -> NvmlCheck.require("nvmlDeviceGetUUID", 3));
    assertEquals(NvmlError.NOT_SUPPORTED, required.error());
    assertEquals("nvmlDeviceGetUUID", required.function());
  }

  @Test
  void noPermissionIsAValueOnlyForPerProcessCalls() {
    int noPermission = NvmlError.NO_PERMISSION.code();
    assertFalse(
        NvmlCheck.optionalPerProcess("nvmlDeviceGetComputeRunningProcesses_v3", noPermission));
    assertEquals(
        NvmlError.NO_PERMISSION,
        assertThrows(
                NvmlException.class,
                () -> NvmlCheck.optional("nvmlDeviceGetUtilizationRates", noPermission))
            .error());
  }

  @Test
  void theCallerChoosesWhichErrorsAreValuesButAnUnknownCodeAlwaysThrows() {
    Set<NvmlError> noEvent = EnumSet.of(NvmlError.TIMEOUT);
    assertFalse(NvmlCheck.check("nvmlEventSetWait_v2", NvmlError.TIMEOUT.code(), noEvent));
    assertThrows(
        NvmlException.class,
        () -> NvmlCheck.check("nvmlEventSetWait_v2", NvmlError.NOT_SUPPORTED.code(), noEvent));

    NvmlException unknown =
        assertThrows(
            NvmlException.class,
            () -> NvmlCheck.check("nvmlX", 4321, EnumSet.allOf(NvmlError.class)));
    assertEquals(NvmlError.UNKNOWN, unknown.error());
    assertEquals(4321, unknown.code());
  }

  @Test
  void criticalXidsMakeAReasonOthersDoNot() {
    for (long xid : new long[] {48, 62, 63, 64, 74, 79, 92, 94, 95}) {
      String reason = Xid.unhealthyReason(xid).orElseThrow();
      assertTrue(reason.startsWith("Xid " + xid + " reported ("), reason);
    }
    assertEquals(
        "Xid 79 reported (GPU has fallen off the bus)", Xid.unhealthyReason(79).orElseThrow());
    for (long xid : new long[] {13, 31, 43, 45, 0, 999}) {
      assertTrue(Xid.unhealthyReason(xid).isEmpty(), "Xid " + xid);
    }
  }
}
