package dev.gpushare.gpu.nvml;

import static org.bytedeco.cuda.global.nvml.NVML_DEVICE_MIG_ENABLE;
import static org.bytedeco.cuda.global.nvml.NVML_DEVICE_NAME_V2_BUFFER_SIZE;
import static org.bytedeco.cuda.global.nvml.NVML_DEVICE_UUID_V2_BUFFER_SIZE;
import static org.bytedeco.cuda.global.nvml.NVML_ERROR_INSUFFICIENT_SIZE;
import static org.bytedeco.cuda.global.nvml.NVML_ERROR_NOT_FOUND;
import static org.bytedeco.cuda.global.nvml.NVML_SUCCESS;
import static org.bytedeco.cuda.global.nvml.NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE;
import static org.bytedeco.cuda.global.nvml.nvmlDeviceGetComputeRunningProcesses_v2;
import static org.bytedeco.cuda.global.nvml.nvmlDeviceGetComputeRunningProcesses_v3;
import static org.bytedeco.cuda.global.nvml.nvmlDeviceGetCount_v2;
import static org.bytedeco.cuda.global.nvml.nvmlDeviceGetHandleByIndex_v2;
import static org.bytedeco.cuda.global.nvml.nvmlDeviceGetIndex;
import static org.bytedeco.cuda.global.nvml.nvmlDeviceGetMemoryInfo;
import static org.bytedeco.cuda.global.nvml.nvmlDeviceGetMigMode;
import static org.bytedeco.cuda.global.nvml.nvmlDeviceGetName;
import static org.bytedeco.cuda.global.nvml.nvmlDeviceGetProcessUtilization;
import static org.bytedeco.cuda.global.nvml.nvmlDeviceGetUUID;
import static org.bytedeco.cuda.global.nvml.nvmlDeviceGetUtilizationRates;
import static org.bytedeco.cuda.global.nvml.nvmlDeviceRegisterEvents;
import static org.bytedeco.cuda.global.nvml.nvmlEventSetCreate;
import static org.bytedeco.cuda.global.nvml.nvmlEventSetFree;
import static org.bytedeco.cuda.global.nvml.nvmlEventSetWait_v2;
import static org.bytedeco.cuda.global.nvml.nvmlEventTypeXidCriticalError;
import static org.bytedeco.cuda.global.nvml.nvmlInit_v2;
import static org.bytedeco.cuda.global.nvml.nvmlShutdown;
import static org.bytedeco.cuda.global.nvml.nvmlSystemGetCudaDriverVersion_v2;
import static org.bytedeco.cuda.global.nvml.nvmlSystemGetDriverVersion;

import dev.gpushare.gpu.GpuBackend;
import dev.gpushare.gpu.GpuDevice;
import dev.gpushare.gpu.GpuHealth;
import dev.gpushare.gpu.GpuProcessSample;
import dev.gpushare.gpu.GpuSample;
import dev.gpushare.gpu.proc.ProcessPods;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import org.bytedeco.cuda.nvml.nvmlDevice_st;
import org.bytedeco.cuda.nvml.nvmlEventData_t;
import org.bytedeco.cuda.nvml.nvmlEventSet_st;
import org.bytedeco.cuda.nvml.nvmlMemory_t;
import org.bytedeco.cuda.nvml.nvmlProcessInfo_v2_t;
import org.bytedeco.cuda.nvml.nvmlProcessUtilizationSample_t;
import org.bytedeco.cuda.nvml.nvmlUtilization_t;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.IntPointer;

/**
 * The GPUs of this node as the NVIDIA driver reports them, through NVML (JavaCPP's CUDA presets;
 * loaded by {@link NvmlLibrary}, which needs {@code libnvidia-ml.so.1} but no CUDA runtime).
 *
 * <p><b>Discovery</b> ({@link #open()}, once): {@code nvmlInit_v2}, {@code nvmlDeviceGetCount_v2},
 * then per device {@code nvmlDeviceGetHandleByIndex_v2}, its real index ({@code
 * nvmlDeviceGetIndex}), UUID, name and total memory ({@code nvmlDeviceGetMemoryInfo}). A device
 * that is lost already at discovery cannot be named and is left out (see {@link #notes()}).
 *
 * <p><b>Telemetry</b> ({@link #sample()}): memory used, utilisation ({@code
 * nvmlDeviceGetUtilizationRates}), MIG mode ({@code nvmlDeviceGetMigMode}), the compute processes
 * and their memory ({@code nvmlDeviceGetComputeRunningProcesses_v3}, or {@code _v2} on drivers
 * without {@code _v3}) and their SM utilisation ({@code nvmlDeviceGetProcessUtilization}, with the
 * last seen sample timestamp kept per device, so each sample shows the processes' utilisation since
 * the previous one: NVML samples only the processes that ran, so a listed process without a newer
 * sample, or every one when NVML answers NVML_ERROR_NOT_FOUND, ran nothing: 0 %; none is known only
 * where the query is not supported or not permitted).
 *
 * <p><b>Health</b>: a device is unhealthy from the first call that returns {@code
 * NVML_ERROR_GPU_IS_LOST} or {@code NVML_ERROR_RESET_REQUIRED}, or the first critical Xid (see
 * {@link Xid}) that the event set reports, and stays so for the life of this backend. Xid events
 * are read without waiting ({@code nvmlEventSetWait_v2} with timeout 0) at each {@link #sample()}
 * and {@link #healthy(String)}.
 *
 * <p><b>Errors</b>: NVML return codes go through {@link NvmlCheck}. "Not supported" (and, for
 * per-process queries, "no permission") is a value: {@code Optional.empty()}, no processes. Any
 * other error fails the call with an {@link NvmlException}. Functions that older drivers lack are
 * looked up first ({@link NvmlSymbols}) and skipped when absent.
 *
 * <p><b>Thread-safety</b>: all methods are safe to call from any thread; {@link #sample()}, {@link
 * #healthy(String)} and {@link #close()} are synchronized (one NVML conversation at a time), and
 * all of them block in the driver: call them from a blocking dispatcher. {@link #devices()} is the
 * immutable discovery result.
 */
public final class NvmlBackend implements GpuBackend, AutoCloseable {

  /** The host's processes as this member sees them: NVML's PIDs are host PIDs. */
  private final ProcessPods processes;

  @Override
  public ProcessPods processes() {
    return processes;
  }

  private static final long MIB = 1024L * 1024L;
  private static final int MAX_EVENTS_PER_DRAIN = 64;
  private static final int MAX_SIZE_RETRIES = 3;
  private static final Set<NvmlError> PROCESS_UTILIZATION_VALUES =
      EnumSet.of(NvmlError.NOT_SUPPORTED, NvmlError.NO_PERMISSION, NvmlError.NOT_FOUND);
  private static final Set<NvmlError> NO_EVENT = EnumSet.of(NvmlError.TIMEOUT);
  private static final Set<NvmlError> EVENT_REGISTRATION_VALUES =
      EnumSet.of(NvmlError.NOT_SUPPORTED, NvmlError.NO_PERMISSION);

  /** One discovered device and what this backend remembers of it. */
  private static final class Device {
    final GpuDevice info;
    final nvmlDevice_st handle;
    long lastSeenTimeStamp;
    String unhealthy;

    Device(GpuDevice info, nvmlDevice_st handle) {
      this.info = info;
      this.handle = handle;
    }
  }

  private final List<Device> devices;
  private final List<GpuDevice> gpuDevices;
  private final String driverVersion;
  private final Optional<String> cudaVersion;
  private final List<String> notes = new ArrayList<>();
  private nvmlEventSet_st events;
  private boolean closed;

  /**
   * Loads NVML, initializes it and discovers the devices.
   *
   * @throws NvmlException when NVML returns an error (for example {@code
   *     NVML_ERROR_DRIVER_NOT_LOADED}) or lacks a function every supported driver has
   * @throws LinkageError when NVML cannot be loaded (see {@link NvmlLibrary}); {@code
   *     GpuBackends.select} turns both into a {@code GpuBackendUnavailable}
   */
  public static NvmlBackend open() {
    return open(SYSTEM_PROCESSES);
  }

  /**
   * {@link #open()}, mapping the processes NVML reports (by host PID) to pods through {@code
   * processes} (the host's {@code /proc} as this member sees it).
   */
  public static NvmlBackend open(ProcessPods processes) {
    NvmlLibrary.load();
    NvmlSymbols.requireBaseline();
    NvmlCheck.require("nvmlInit_v2", nvmlInit_v2());
    try {
      return new NvmlBackend(processes);
    } catch (RuntimeException e) {
      nvmlShutdown();
      throw e;
    }
  }

  private NvmlBackend(ProcessPods processes) {
    this.processes = java.util.Objects.requireNonNull(processes, "processes");
    driverVersion = queryDriverVersion();
    cudaVersion = queryCudaVersion();
    List<Device> found = new ArrayList<>();
    int count;
    try (IntPointer n = new IntPointer(1)) {
      NvmlCheck.require("nvmlDeviceGetCount_v2", nvmlDeviceGetCount_v2(n));
      count = n.get();
    }
    for (int i = 0; i < count; i++) {
      try {
        found.add(discover(i));
      } catch (NvmlException e) {
        if (!takesTheDeviceOut(e.error())) {
          throw e;
        }
        notes.add("device at NVML index " + i + " left out: " + e.getMessage());
      }
    }
    found.sort(Comparator.comparingInt(d -> d.info.index()));
    devices = List.copyOf(found);
    gpuDevices = devices.stream().map(d -> d.info).toList();
    registerXidEvents();
  }

  private static Device discover(int i) {
    nvmlDevice_st handle = new nvmlDevice_st();
    NvmlCheck.require("nvmlDeviceGetHandleByIndex_v2", nvmlDeviceGetHandleByIndex_v2(i, handle));
    int index;
    try (IntPointer p = new IntPointer(1)) {
      NvmlCheck.require("nvmlDeviceGetIndex", nvmlDeviceGetIndex(handle, p));
      index = p.get();
    }
    String uuid;
    try (BytePointer p = new BytePointer(NVML_DEVICE_UUID_V2_BUFFER_SIZE)) {
      NvmlCheck.require(
          "nvmlDeviceGetUUID", nvmlDeviceGetUUID(handle, p, NVML_DEVICE_UUID_V2_BUFFER_SIZE));
      uuid = cString(p);
    }
    String name;
    try (BytePointer p = new BytePointer(NVML_DEVICE_NAME_V2_BUFFER_SIZE)) {
      NvmlCheck.require(
          "nvmlDeviceGetName", nvmlDeviceGetName(handle, p, NVML_DEVICE_NAME_V2_BUFFER_SIZE));
      name = cString(p);
    }
    long totalMiB;
    try (nvmlMemory_t m = new nvmlMemory_t()) {
      NvmlCheck.require("nvmlDeviceGetMemoryInfo", nvmlDeviceGetMemoryInfo(handle, m));
      totalMiB = m.total() / MIB;
    }
    return new Device(new GpuDevice(index, uuid, name, totalMiB), handle);
  }

  /** The NUL-terminated string NVML wrote into {@code p} (not the whole buffer). */
  private static String cString(BytePointer p) {
    return new String(p.position(0).limit(0).getStringBytes(), StandardCharsets.UTF_8);
  }

  private static String queryDriverVersion() {
    try (BytePointer p = new BytePointer(NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE)) {
      NvmlCheck.require(
          "nvmlSystemGetDriverVersion",
          nvmlSystemGetDriverVersion(p, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE));
      return cString(p);
    }
  }

  private static Optional<String> queryCudaVersion() {
    if (!NvmlSymbols.has(NvmlSymbols.CUDA_DRIVER_VERSION)) {
      return Optional.empty();
    }
    try (IntPointer p = new IntPointer(1)) {
      if (!NvmlCheck.optional(
          NvmlSymbols.CUDA_DRIVER_VERSION, nvmlSystemGetCudaDriverVersion_v2(p))) {
        return Optional.empty();
      }
      int v = p.get();
      return Optional.of(v / 1000 + "." + (v % 1000) / 10);
    }
  }

  private void registerXidEvents() {
    List<String> missing =
        List.of(
                NvmlSymbols.EVENT_SET_CREATE,
                NvmlSymbols.REGISTER_EVENTS,
                NvmlSymbols.EVENT_SET_WAIT_V2,
                NvmlSymbols.EVENT_SET_FREE)
            .stream()
            .filter(s -> !NvmlSymbols.has(s))
            .toList();
    if (!missing.isEmpty()) {
      notes.add("Xid monitoring off: this driver lacks " + String.join(", ", missing));
      return;
    }
    nvmlEventSet_st set = new nvmlEventSet_st();
    if (!NvmlCheck.optional("nvmlEventSetCreate", nvmlEventSetCreate(set))) {
      notes.add("Xid monitoring off: nvmlEventSetCreate is not supported");
      return;
    }
    int registered = 0;
    for (Device d : devices) {
      try {
        if (NvmlCheck.check(
            "nvmlDeviceRegisterEvents",
            nvmlDeviceRegisterEvents(d.handle, nvmlEventTypeXidCriticalError, set),
            EVENT_REGISTRATION_VALUES)) {
          registered++;
        } else {
          notes.add("Xid monitoring off for GPU " + d.info.index() + ": not supported");
        }
      } catch (NvmlException e) {
        if (takesTheDeviceOut(e.error())) {
          d.unhealthy = e.error().describe();
        } else {
          notes.add("Xid monitoring off for GPU " + d.info.index() + ": " + e.getMessage());
        }
      }
    }
    if (registered == 0) {
      nvmlEventSetFree(set);
      return;
    }
    events = set;
  }

  @Override
  public String name() {
    return "nvml";
  }

  /** The devices found at {@link #open()}, ordered by index. */
  @Override
  public List<GpuDevice> devices() {
    return gpuDevices;
  }

  /**
   * Whether the device can take work: false for a UUID this node does not have, and for a device
   * that is lost, needs a reset or reported a critical Xid. Reads pending Xid events and probes the
   * device with one {@code nvmlDeviceGetMemoryInfo}.
   *
   * @throws NvmlException when NVML returns an error that says nothing about the device's health
   */
  @Override
  public synchronized boolean healthy(String uuid) {
    ensureOpen();
    Device d = devices.stream().filter(x -> x.info.uuid().equals(uuid)).findFirst().orElse(null);
    if (d == null) {
      return false;
    }
    drainXidEvents();
    if (d.unhealthy == null) {
      try (nvmlMemory_t m = new nvmlMemory_t()) {
        NvmlCheck.require("nvmlDeviceGetMemoryInfo", nvmlDeviceGetMemoryInfo(d.handle, m));
      } catch (NvmlException e) {
        if (!takesTheDeviceOut(e.error())) {
          throw e;
        }
        d.unhealthy = e.error().describe();
      }
    }
    return d.unhealthy == null;
  }

  /**
   * One sample of every device (see the class comment). Blocking; one caller at a time.
   *
   * @throws NvmlException when NVML returns an error that is neither a value nor a health verdict
   * @throws IllegalStateException after {@link #close()}
   */
  @Override
  public synchronized List<GpuSample> sample() {
    ensureOpen();
    drainXidEvents();
    List<GpuSample> samples = new ArrayList<>(devices.size());
    for (Device d : devices) {
      samples.add(sample(d));
    }
    return samples;
  }

  private GpuSample sample(Device d) {
    long usedMiB = 0;
    long totalMiB = d.info.memoryMiB();
    OptionalInt utilization = OptionalInt.empty();
    Optional<Boolean> mig = Optional.empty();
    List<GpuProcessSample> processes = null; // null: not listed
    try {
      try (nvmlMemory_t m = new nvmlMemory_t()) {
        NvmlCheck.require("nvmlDeviceGetMemoryInfo", nvmlDeviceGetMemoryInfo(d.handle, m));
        usedMiB = m.used() / MIB;
        totalMiB = m.total() / MIB;
      }
      utilization = utilization(d);
      mig = migMode(d);
      processes = processes(d);
    } catch (NvmlException e) {
      if (!takesTheDeviceOut(e.error())) {
        throw e;
      }
      if (d.unhealthy == null) {
        d.unhealthy = e.error().describe();
      }
    }
    GpuHealth health = d.unhealthy == null ? GpuHealth.HEALTHY : GpuHealth.unhealthy(d.unhealthy);
    return new GpuSample(
        d.info.index(),
        d.info.uuid(),
        usedMiB,
        totalMiB,
        utilization,
        processes == null ? List.of() : processes,
        health,
        mig,
        processes != null);
  }

  private static OptionalInt utilization(Device d) {
    try (nvmlUtilization_t u = new nvmlUtilization_t()) {
      return NvmlCheck.optional(
              "nvmlDeviceGetUtilizationRates", nvmlDeviceGetUtilizationRates(d.handle, u))
          ? OptionalInt.of(u.gpu())
          : OptionalInt.empty();
    }
  }

  private static Optional<Boolean> migMode(Device d) {
    if (!NvmlSymbols.has(NvmlSymbols.MIG_MODE)) {
      return Optional.empty();
    }
    try (IntPointer current = new IntPointer(1);
        IntPointer pending = new IntPointer(1)) {
      return NvmlCheck.optional(
              NvmlSymbols.MIG_MODE, nvmlDeviceGetMigMode(d.handle, current, pending))
          ? Optional.of(current.get() == NVML_DEVICE_MIG_ENABLE)
          : Optional.empty();
    }
  }

  /** The device's compute processes, or null when the driver does not list them. */
  private List<GpuProcessSample> processes(Device d) {
    String function =
        NvmlSymbols.has(NvmlSymbols.COMPUTE_PROCESSES_V3)
            ? NvmlSymbols.COMPUTE_PROCESSES_V3
            : NvmlSymbols.has(NvmlSymbols.COMPUTE_PROCESSES_V2)
                ? NvmlSymbols.COMPUTE_PROCESSES_V2
                : null;
    if (function == null) {
      return null; // a driver without the process queries: not listed
    }
    List<long[]> found = new ArrayList<>(); // {pid, usedMiB}
    try (IntPointer count = new IntPointer(1)) {
      count.put(0);
      int rc = computeProcesses(function, d.handle, count, null);
      for (int attempt = 0;
          attempt < MAX_SIZE_RETRIES && rc == NVML_ERROR_INSUFFICIENT_SIZE;
          attempt++) {
        int capacity = count.get() + 8; // processes may start between the two calls
        try (nvmlProcessInfo_v2_t infos = new nvmlProcessInfo_v2_t(capacity)) {
          count.put(capacity);
          rc = computeProcesses(function, d.handle, count, infos);
          if (rc == NVML_SUCCESS) {
            for (int i = 0; i < count.get(); i++) {
              nvmlProcessInfo_v2_t info = infos.getPointer(i);
              long used = info.usedGpuMemory(); // NVML_VALUE_NOT_AVAILABLE reads as < 0
              found.add(new long[] {Integer.toUnsignedLong(info.pid()), used < 0 ? 0 : used / MIB});
            }
          }
        }
      }
      if (!NvmlCheck.optionalPerProcess(function, rc)) {
        return null; // not supported, or no permission: not listed
      }
    }
    if (found.isEmpty()) {
      return List.of();
    }
    Map<Long, Integer> sm = processUtilization(d);
    List<GpuProcessSample> processes = new ArrayList<>(found.size());
    for (long[] p : found) {
      // NVML samples only the processes that ran since the last sample: a listed process without
      // one ran nothing (0), where NVML gives samples at all
      processes.add(
          new GpuProcessSample(
              p[0],
              p[1],
              sm == null ? OptionalInt.empty() : OptionalInt.of(sm.getOrDefault(p[0], 0))));
    }
    return processes;
  }

  private static int computeProcesses(
      String function, nvmlDevice_st handle, IntPointer count, nvmlProcessInfo_v2_t infos) {
    return function.equals(NvmlSymbols.COMPUTE_PROCESSES_V3)
        ? nvmlDeviceGetComputeRunningProcesses_v3(handle, count, infos)
        : nvmlDeviceGetComputeRunningProcesses_v2(handle, count, infos);
  }

  /**
   * SM utilisation by PID since the device's last seen sample: the processes that ran (an empty map
   * when none did: NVML_ERROR_NOT_FOUND); {@code null} when NVML cannot say (no such function, not
   * supported, no permission).
   */
  private static Map<Long, Integer> processUtilization(Device d) {
    if (!NvmlSymbols.has(NvmlSymbols.PROCESS_UTILIZATION)) {
      return null;
    }
    String function = NvmlSymbols.PROCESS_UTILIZATION;
    try (IntPointer count = new IntPointer(1)) {
      count.put(0);
      int rc = nvmlDeviceGetProcessUtilization(d.handle, null, count, d.lastSeenTimeStamp);
      if ((rc == NVML_SUCCESS && count.get() == 0) || rc == NVML_ERROR_NOT_FOUND) {
        return Map.of(); // no process ran since the last sample
      }
      if (rc == NVML_SUCCESS || rc == NVML_ERROR_INSUFFICIENT_SIZE) {
        int capacity = count.get();
        try (nvmlProcessUtilizationSample_t samples =
            new nvmlProcessUtilizationSample_t(capacity)) {
          count.put(capacity);
          rc = nvmlDeviceGetProcessUtilization(d.handle, samples, count, d.lastSeenTimeStamp);
          if (rc == NVML_ERROR_NOT_FOUND) {
            return Map.of();
          }
          if (!NvmlCheck.check(function, rc, PROCESS_UTILIZATION_VALUES)) {
            return null;
          }
          Map<Long, Integer> byPid = new HashMap<>();
          Map<Long, Long> newest = new HashMap<>();
          long lastSeen = d.lastSeenTimeStamp;
          for (int i = 0; i < count.get(); i++) {
            nvmlProcessUtilizationSample_t s = samples.getPointer(i);
            long pid = Integer.toUnsignedLong(s.pid());
            long at = s.timeStamp();
            if (at >= newest.getOrDefault(pid, Long.MIN_VALUE)) {
              newest.put(pid, at);
              byPid.put(pid, s.smUtil());
            }
            lastSeen = Math.max(lastSeen, at);
          }
          d.lastSeenTimeStamp = lastSeen;
          return byPid;
        }
      }
      NvmlCheck.check(function, rc, PROCESS_UTILIZATION_VALUES);
      return null;
    }
  }

  /** Reads every pending Xid event without waiting; critical ones mark their device unhealthy. */
  private void drainXidEvents() {
    if (events == null) {
      return;
    }
    try (nvmlEventData_t data = new nvmlEventData_t()) {
      for (int i = 0; i < MAX_EVENTS_PER_DRAIN; i++) {
        int rc = nvmlEventSetWait_v2(events, data, 0);
        try {
          if (!NvmlCheck.check(NvmlSymbols.EVENT_SET_WAIT_V2, rc, NO_EVENT)) {
            return;
          }
        } catch (NvmlException e) {
          if (takesTheDeviceOut(e.error())) {
            return; // the per-device calls tell which device is lost
          }
          throw e;
        }
        if ((data.eventType() & nvmlEventTypeXidCriticalError) == 0) {
          continue;
        }
        long xid = data.eventData();
        long address = data.device() == null ? 0 : data.device().address();
        for (Device d : devices) {
          if (d.handle.address() == address && d.unhealthy == null) {
            Xid.unhealthyReason(xid).ifPresent(reason -> d.unhealthy = reason);
          }
        }
      }
    }
  }

  private static boolean takesTheDeviceOut(NvmlError error) {
    return error == NvmlError.GPU_IS_LOST || error == NvmlError.RESET_REQUIRED;
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("the NVML backend is closed");
    }
  }

  /** The driver version, for example {@code "550.54.15"}. */
  public String driverVersion() {
    return driverVersion;
  }

  /** The highest CUDA version the driver supports, for example {@code "12.4"}; empty if unknown. */
  public Optional<String> cudaDriverVersion() {
    return cudaVersion;
  }

  /** What works less than fully on this driver: devices left out, Xid monitoring off. */
  public synchronized List<String> notes() {
    return List.copyOf(notes);
  }

  /** Whether critical Xid events are being read for at least one device. */
  public synchronized boolean xidMonitoring() {
    return events != null;
  }

  /** Where the JNI wrapper and NVML were loaded from. */
  public String libraries() {
    return NvmlLibrary.jniLibrary() + ", " + NvmlLibrary.nvmlLibrary();
  }

  /** {@code "NVML, driver 550.54.15 (CUDA 12.4), 8 GPUs, Xid monitoring on"}. */
  public synchronized String describe() {
    return "NVML, driver "
        + driverVersion
        + cudaVersion.map(v -> " (CUDA " + v + ")").orElse("")
        + ", "
        + devices.size()
        + (devices.size() == 1 ? " GPU" : " GPUs")
        + ", Xid monitoring "
        + (events != null ? "on" : "off");
  }

  /** Frees the event set and shuts NVML down (NVML counts inits: other users are unaffected). */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      if (events != null) {
        nvmlEventSetFree(events);
        events = null;
      }
    } finally {
      NvmlCheck.require("nvmlShutdown", nvmlShutdown());
    }
  }
}
