/*
 * A fake libnvidia-ml.so.1 for machines without a GPU: just enough of NVML's C ABI (the functions
 * dev.gpushare.gpu.nvml.NvmlBackend calls, with nvml.h's struct layouts) to drive the real JNI
 * wrapper (libjninvml.so from the JavaCPP CUDA presets) and the Java code above it.
 *
 * It proves the loading path (no CUDA runtime needed), the JavaCPP bindings and the backend's
 * handling of processes, MIG, lost GPUs and Xid events. It proves nothing about a real driver.
 *
 *   gcc -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -o libnvidia-ml.so.1 fake_nvml.c
 *   gcc -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -DFAKE_OLD_DRIVER -o ... fake_nvml.c
 *
 * FAKE_OLD_DRIVER leaves out what old drivers lack (_v3 process queries, nvmlDeviceGetMigMode,
 * nvmlDeviceGetProcessUtilization, nvmlEventSetWait_v2, nvmlSystemGetCudaDriverVersion_v2).
 *
 * FAKE_GPU_CONFIG (default /dev/fake-gpu/config): KEY=VALUE lines of these settings, each taken
 * unless the environment sets it (a device folder's settings: a process `kubectl exec` starts
 * lacks the environment the container runtime added).
 * Environment: FAKE_NVML_GPUS (default 2), FAKE_NVML_INIT_RC (what nvmlInit_v2 returns),
 * FAKE_NVML_LOST=i (device i answers NVML_ERROR_GPU_IS_LOST after discovery), FAKE_NVML_XID=i:n
 * (one Xid n event for device i), FAKE_NVML_MIG=i (MIG enabled on device i),
 * FAKE_NVML_UUIDS=a,b,... (device i's UUID is entry i; the count defaults to the list's length),
 * FAKE_NVML_UTIL=i:gpu:mem (device i's utilisation, and one process sample of FAKE_NVML_PID,
 * default 4242, with smUtil = gpu; without it device 0 says 42/17 and has two samples).
 *
 * The virtual GPU, with FAKE_GPU_FILE=/abs/path: the timelines the fake libcuda.so.1 keeps of its
 * kernels (fake-cuda/fake_cuda_mem.c; this file is created when it is not there yet), found by the
 * device's UUID. Over the last FAKE_NVML_WINDOW_MS (default 100) ms, counting only what lies in
 * [now - window, now] (work queued after now is not busy yet):
 *   nvmlDeviceGetUtilizationRates       gpu = the GPU's busy percent (rounded), memory = 0
 *   nvmlDeviceGetProcessUtilization     one sample per pid that ran in the window: smUtil its busy
 *                                       percent (rounded), timeStamp now in µs (CLOCK_MONOTONIC);
 *                                       NVML_ERROR_NOT_FOUND when none ran or lastSeen >= now
 *   nvmlDeviceGetComputeRunningProcesses_v2/_v3  the processes holding memory on the GPU (a
 *                                       context at least) with what each holds, and those pids
 *                                       without it, memory NVML_VALUE_NOT_AVAILABLE
 *                                       (FAKE_NVML_PROC_MEMORY=unavailable: for every process)
 *   nvmlDeviceGetMemoryInfo             total FAKE_CUDA_MEMORY (default 80 GiB), used what the
 *                                       fake libcuda.so.1's live processes hold on the device
 *                                       (<FAKE_GPU_FILE>.mem: contexts, allocations, pools)
 * A device FAKE_NVML_UTIL scripts keeps its scripted utilisation and sample; lost and MIG devices
 * answer as without the file. Unset, none of this happens.
 *
 * A container, as the real driver shows it to one (with the virtual GPU):
 *   FAKE_NVML_PID_OFFSET=N      every pid NVML reports (process lists, utilisation samples) is the
 *                               process's pid + N: the real NVML names processes by their host
 *                               PIDs, and the driver has no PID namespaces, so a process in a pod
 *                               without hostPID never finds its own getpid() there
 *   FAKE_NVML_NO_PERMISSION=1   the per-process queries (nvmlDeviceGetProcessUtilization,
 *                               nvmlDeviceGetComputeRunningProcesses_v2/_v3) answer
 *                               NVML_ERROR_NO_PERMISSION, as they may in a container that lacks
 *                               the capability the driver asks for them; the device-wide ones still
 *                               answer
 *   FAKE_NVML_PROC_RC=N         the same queries answer nvmlReturn_t N instead (another failure:
 *                               NVML_ERROR_UNKNOWN 999, NVML_ERROR_TIMEOUT 10, ...)
 *
 * Its functions never call each other through their exported names: a library preloaded in
 * front of it (libgpushare.so) would otherwise see the calls.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* F_OFD_SETLKW */
#endif
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef int nvmlReturn_t;

#include "../fake_config.h"
#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NO_PERMISSION 4
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_TIMEOUT 10
#define NVML_ERROR_GPU_IS_LOST 15
#define MIB (1024ULL * 1024ULL)

typedef struct fake_device { unsigned int index; } *nvmlDevice_t;
typedef struct fake_event_set { int unused; } *nvmlEventSet_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
typedef struct {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;
typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType, eventData;
  unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

static struct fake_device devices[16];
static struct fake_event_set event_set;

static int env_int(const char *name, int fallback) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}
/* Entry i of FAKE_NVML_UUIDS into out; 0 when there is none. */
static int listed_uuid(unsigned int i, char *out, size_t length) {
  const char *p = getenv("FAKE_NVML_UUIDS");
  if (!p || !*p) return 0;
  for (; i > 0; i--) {
    p = strchr(p, ',');
    if (!p) return 0;
    p++;
  }
  size_t n = strcspn(p, ",");
  if (out) snprintf(out, length, "%.*s", (int) n, p);
  return 1;
}
static unsigned int count(void) {
  unsigned int listed = 0;
  while (listed < 16 && listed_uuid(listed, NULL, 0)) listed++;
  int n = env_int("FAKE_NVML_GPUS", listed ? (int) listed : 2);
  return n < 0 ? 0 : n > 16 ? 16 : (unsigned int) n;
}
static nvmlDevice_t handle(unsigned int i) {
  devices[i].index = i;
  return &devices[i];
}
static void uuid_of(unsigned int i, char *uuid, size_t length) {
  if (!listed_uuid(i, uuid, length)) snprintf(uuid, length, "GPU-fa4e0000-0000-4000-8000-%012u", i);
}
static void bus_id_of(unsigned int i, char *bus, size_t length) {
  snprintf(bus, length, "00000000:%02X:00.0", 0x10 + i);
}
/* FAKE_NVML_UTIL=i:gpu:mem: 1 when it scripts device d. */
static int scripted(nvmlDevice_t d, unsigned int *gpu, unsigned int *mem) {
  const char *v = getenv("FAKE_NVML_UTIL");
  unsigned int i, g, m;
  if (!d || !v || sscanf(v, "%u:%u:%u", &i, &g, &m) != 3 || i != d->index) return 0;
  *gpu = g;
  *mem = m;
  return 1;
}
static int lost(nvmlDevice_t d) { return d && (int) d->index == env_int("FAKE_NVML_LOST", -1); }
static int mig(nvmlDevice_t d) { return d && (int) d->index == env_int("FAKE_NVML_MIG", -1); }

/* ------------------------------------------------------------------ the virtual GPU's file
 * The same layout as fake-cuda/fake_cuda_mem.c's (keep them in step), locked the same way: an
 * open-file-description write lock on the whole file (so that the fake libcuda.so.1 in the same
 * process excludes this library too) and this library's mutex. */

#ifndef F_OFD_SETLKW
#define F_OFD_SETLKW 38
#endif
#define GPU_MAGIC 0x55504746u /* "FGPU" */
#define GPU_VERSION 1u
#define GPU_MAX 16
#define GPU_RING 4096
#define GPU_PIDS 64
struct gpu_interval { uint64_t start_ns, end_ns; uint32_t pid, unused; };
struct gpu_timeline {
  char uuid[96];
  uint64_t busy_until_ns;
  uint32_t next, filled;
  struct gpu_interval ring[GPU_RING];
};
struct gpu_file { uint32_t magic, version, gpus, unused; struct gpu_timeline gpu[GPU_MAX]; };

static pthread_mutex_t gpu_mu = PTHREAD_MUTEX_INITIALIZER;
static int gpu_opened; /* 0 not yet, 1 open, -1 none */
static int gpu_fd = -1;
static struct gpu_file *gpu;

/* What a window of one GPU holds: its busy time and each pid's, in ns. */
struct gpu_window {
  uint64_t now_ns, length_ns, busy_ns;
  unsigned int pids;
  struct { unsigned int pid; uint64_t busy_ns; } pid[GPU_PIDS];
};

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t) t.tv_sec * 1000000000ULL + (uint64_t) t.tv_nsec;
}

static int file_lock(int fd, short type) {
  struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0, .l_pid = 0};
  while (fcntl(fd, F_OFD_SETLKW, &l) != 0) {
    if (errno != EINTR) return -1;
  }
  return 0;
}

/* Opens (creating) FAKE_GPU_FILE once, with gpu_mu held; 1 when the virtual GPU is there. */
static int gpu_open(void) {
  if (gpu_opened) return gpu_opened > 0;
  gpu_opened = -1;
  const char *path = getenv("FAKE_GPU_FILE");
  if (!path || !*path) return 0;
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd >= 0) fchmod(fd, 0666); /* every container's processes use it, whatever uid and umask */
  if (fd < 0) {
    fprintf(stderr, "fake libnvidia-ml: cannot open FAKE_GPU_FILE %s: %s\n", path, strerror(errno));
    return 0;
  }
  struct stat st;
  void *m = MAP_FAILED;
  const char *why = NULL;
  if (file_lock(fd, F_WRLCK) != 0 || fstat(fd, &st) != 0) {
    why = strerror(errno);
  } else if (st.st_size == 0 && ftruncate(fd, sizeof(struct gpu_file)) != 0) {
    why = strerror(errno);
  } else if (st.st_size != 0 && st.st_size != (off_t) sizeof(struct gpu_file)) {
    why = "not a fake GPU file of this version (another size)";
  } else if ((m = mmap(NULL, sizeof(struct gpu_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                       0)) == MAP_FAILED) {
    why = strerror(errno);
  } else {
    struct gpu_file *f = m;
    if (st.st_size == 0) f->magic = GPU_MAGIC, f->version = GPU_VERSION;
    if (f->magic != GPU_MAGIC || f->version != GPU_VERSION) why = "not a fake GPU file (magic)";
  }
  file_lock(fd, F_UNLCK);
  if (why) {
    fprintf(stderr, "fake libnvidia-ml: FAKE_GPU_FILE %s: %s; no virtual GPU\n", path, why);
    if (m != MAP_FAILED) munmap(m, sizeof(struct gpu_file));
    close(fd);
    return 0;
  }
  gpu_fd = fd; /* kept open: closing it would drop the lock's owner */
  gpu = m;
  gpu_opened = 1;
  return 1;
}

/* 1 when there is a virtual GPU (FAKE_GPU_FILE), with device d's last window in *w (all zero for
 * a GPU no kernel ran on yet); 0 without one. */
static int gpu_window(nvmlDevice_t d, struct gpu_window *w) {
  char uuid[96];
  memset(w, 0, sizeof *w);
  pthread_mutex_lock(&gpu_mu);
  if (!gpu_open()) {
    pthread_mutex_unlock(&gpu_mu);
    return 0;
  }
  uuid_of(d->index, uuid, sizeof uuid);
  int ms = env_int("FAKE_NVML_WINDOW_MS", 100);
  w->length_ns = (uint64_t) (ms > 0 ? ms : 1) * 1000000ULL;
  file_lock(gpu_fd, F_WRLCK);
  uint64_t now = w->now_ns = now_ns();
  uint64_t from = now > w->length_ns ? now - w->length_ns : 0;
  for (uint32_t i = 0; i < gpu->gpus && i < GPU_MAX; i++) {
    struct gpu_timeline *t = &gpu->gpu[i];
    if (strncmp(t->uuid, uuid, sizeof t->uuid - 1) != 0) continue;
    /* newest first; the queue is serial, so the intervals end in order */
    for (uint32_t k = 0; k < t->filled && k < GPU_RING; k++) {
      struct gpu_interval *e = &t->ring[(t->next + 2 * GPU_RING - 1 - k) % GPU_RING];
      if (e->end_ns <= from) break;
      uint64_t a = e->start_ns > from ? e->start_ns : from;
      uint64_t b = e->end_ns < now ? e->end_ns : now;
      if (b <= a) continue; /* queued, not begun */
      w->busy_ns += b - a;
      unsigned int p = 0;
      while (p < w->pids && w->pid[p].pid != e->pid) p++;
      if (p == w->pids) {
        if (p == GPU_PIDS) continue;
        w->pid[w->pids].pid = e->pid;
        w->pid[w->pids++].busy_ns = 0;
      }
      w->pid[p].busy_ns += b - a;
    }
    break;
  }
  file_lock(gpu_fd, F_UNLCK);
  pthread_mutex_unlock(&gpu_mu);
  return 1;
}

/* The pid NVML names a process by: its host PID (FAKE_NVML_PID_OFFSET). */
static unsigned int host_pid(unsigned int pid) {
  return pid + (unsigned int) env_int("FAKE_NVML_PID_OFFSET", 0);
}
/* What the per-process queries answer instead of their figures; 0: their figures. */
static nvmlReturn_t refused(void) {
  int rc = env_int("FAKE_NVML_PROC_RC", 0);
  return rc ? rc : env_int("FAKE_NVML_NO_PERMISSION", 0) == 1 ? NVML_ERROR_NO_PERMISSION : 0;
}

/* Busy time as a rounded percent of the window, at most 100. */
static unsigned int percent(const struct gpu_window *w, uint64_t busy_ns) {
  uint64_t p = (busy_ns * 100 + w->length_ns / 2) / w->length_ns;
  return p > 100 ? 100 : (unsigned int) p;
}

nvmlReturn_t nvmlInit_v2(void) { return env_int("FAKE_NVML_INIT_RC", NVML_SUCCESS); }
nvmlReturn_t nvmlShutdown(void) { return NVML_SUCCESS; }
const char *nvmlErrorString(nvmlReturn_t r) { return r == 0 ? "Success" : "fake error"; }

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
  snprintf(version, length, "%s", "999.99.99-fake");
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) { *n = count(); return NVML_SUCCESS; }
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *device) {
  if (i >= count()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = handle(i);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
  char mine[96];
  if (!uuid || !device) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned int i = 0; i < count(); i++) {
    uuid_of(i, mine, sizeof mine);
    if (strcmp(uuid, mine) == 0) { *device = handle(i); return NVML_SUCCESS; }
  }
  return NVML_ERROR_NOT_FOUND;
}
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *device) {
  char mine[32];
  if (!bus || !device) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned int i = 0; i < count(); i++) {
    bus_id_of(i, mine, sizeof mine);
    if (strcasecmp(bus, mine) == 0) { *device = handle(i); return NVML_SUCCESS; }
  }
  return NVML_ERROR_NOT_FOUND;
}
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci) {
  if (!d || !pci) return NVML_ERROR_INVALID_ARGUMENT;
  memset(pci, 0, sizeof *pci);
  pci->bus = 0x10 + d->index;
  pci->pciDeviceId = 0x232910de; /* device 0x2329 (H20), vendor NVIDIA */
  pci->pciSubSystemId = 0x198b10de;
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", pci->bus);
  bus_id_of(d->index, pci->busId, sizeof pci->busId);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *index) {
  *index = d->index;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int length) {
  uuid_of(d->index, uuid, length);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int length) {
  snprintf(name, length, "%s", "NVIDIA H20 (fake)");
  return NVML_SUCCESS;
}
/* The virtual GPU's memory: what the fake libcuda.so.1's processes hold on the device, as they
 * publish it in <FAKE_GPU_FILE>.mem (fake_cuda_mem.c declares the layout: a record per process,
 * its owner holding a lock on the record's byte past the file's data, which the kernel drops when
 * it ends), the dead ones' not counted. A process is named by the PID the fake driver knows it
 * by (its host PID, fake_cuda_mem.c). */
struct mem_proc { char uuid[96]; int32_t pid; uint32_t unused; uint64_t bytes; };
struct mem_file { uint32_t magic, version; uint64_t unused; struct mem_proc proc[256]; };
#define MEM_LIVE_AT ((off_t) sizeof(struct mem_file))
struct mem_user { unsigned int pid; unsigned long long bytes; };

/* Device d's live processes and what each holds (up to max); -1 without FAKE_GPU_FILE. */
static int memory_users(nvmlDevice_t d, struct mem_user *out, int max) {
  const char *gpu_path = getenv("FAKE_GPU_FILE");
  if (!gpu_path || !*gpu_path) return -1;
  char path[4096], uuid[96];
  snprintf(path, sizeof path, "%s.mem", gpu_path);
  uuid_of(d->index, uuid, sizeof uuid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0; /* no process has taken any yet */
  static struct mem_file f;
  static pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;
  int n = 0;
  pthread_mutex_lock(&mem_mu);
  struct flock l = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = MEM_LIVE_AT};
  while (fcntl(fd, F_OFD_SETLKW, &l) != 0 && errno == EINTR) {
  }
  if (pread(fd, &f, sizeof f, 0) == (ssize_t) sizeof f && f.magic == 0x4d454d46u) {
    for (int i = 0; i < 256 && n < max; i++) {
      struct flock live = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = MEM_LIVE_AT + i,
                           .l_len = 1};
      if (strncmp(f.proc[i].uuid, uuid, sizeof uuid) != 0 || f.proc[i].pid <= 0 ||
          fcntl(fd, F_OFD_GETLK, &live) != 0 || live.l_type == F_UNLCK) {
        continue;
      }
      out[n].pid = (unsigned int) f.proc[i].pid;
      out[n++].bytes = f.proc[i].bytes;
    }
  }
  pthread_mutex_unlock(&mem_mu);
  close(fd); /* drops the lock */
  return n;
}

/* 1 with *used, 0 without FAKE_GPU_FILE. */
static int virtual_memory(nvmlDevice_t d, unsigned long long *used) {
  struct mem_user users[256];
  int n = memory_users(d, users, 256);
  if (n < 0) return 0;
  *used = 0;
  for (int i = 0; i < n; i++) *used += users[i].bytes;
  return 1;
}

static int discovered = 0; /* GPU_IS_LOST only after discovery, as when a GPU falls off the bus */
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
  if (lost(d) && discovered++ > 0) return NVML_ERROR_GPU_IS_LOST;
  unsigned long long used;
  if (virtual_memory(d, &used)) { /* the fake libcuda.so.1's device: FAKE_CUDA_MEMORY */
    const char *total = getenv("FAKE_CUDA_MEMORY");
    m->total = total ? strtoull(total, NULL, 10) : 80ULL << 30;
    m->used = used < m->total ? used : m->total;
    m->free = m->total - m->used;
    return NVML_SUCCESS;
  }
  m->total = 97871ULL * MIB;
  m->used = d->index == 0 ? 1536ULL * MIB : 0;
  m->free = m->total - m->used;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
  if (lost(d)) return NVML_ERROR_GPU_IS_LOST;
  if (mig(d)) return NVML_ERROR_NOT_SUPPORTED;
  if (scripted(d, &u->gpu, &u->memory)) return NVML_SUCCESS;
  struct gpu_window w;
  if (gpu_window(d, &w)) {
    u->gpu = percent(&w, w.busy_ns);
    u->memory = 0;
    return NVML_SUCCESS;
  }
  u->gpu = d->index == 0 ? 42 : 0;
  u->memory = d->index == 0 ? 17 : 0;
  return NVML_SUCCESS;
}

/* Device 0 runs two processes; the second does not report its memory. On the virtual GPU: the
 * processes that hold memory on it (a context at least), each with what it holds
 * (FAKE_NVML_PROC_MEMORY=unavailable: NVML_VALUE_NOT_AVAILABLE, as some drivers and MPS answer),
 * and those that ran in the window without a record, not reporting theirs. */
static nvmlReturn_t processes(nvmlDevice_t d, unsigned int *n, nvmlProcessInfo_t *infos) {
  if (lost(d)) return NVML_ERROR_GPU_IS_LOST;
  struct gpu_window w;
  if (gpu_window(d, &w)) {
    if (refused()) return refused();
    struct mem_user users[256];
    int held = memory_users(d, users, 256);
    if (held < 0) held = 0;
    const char *m = getenv("FAKE_NVML_PROC_MEMORY");
    int hidden = m && strcmp(m, "unavailable") == 0;
    unsigned int have = (unsigned int) held;
    for (unsigned int i = 0; i < w.pids && have < 256; i++) {
      int known = 0;
      for (int k = 0; k < held; k++) known |= users[k].pid == w.pid[i].pid;
      if (!known) users[have].pid = w.pid[i].pid, users[have++].bytes = ~0ULL;
    }
    if (*n < have) { *n = have; return NVML_ERROR_INSUFFICIENT_SIZE; }
    *n = have;
    if (have) memset(infos, 0, have * sizeof *infos);
    for (unsigned int i = 0; i < have; i++) {
      infos[i].pid = host_pid(users[i].pid);
      infos[i].usedGpuMemory = hidden ? ~0ULL /* NVML_VALUE_NOT_AVAILABLE */ : users[i].bytes;
    }
    return NVML_SUCCESS;
  }
  unsigned int have = d->index == 0 ? 2 : 0;
  if (*n < have) { *n = have; return NVML_ERROR_INSUFFICIENT_SIZE; }
  *n = have;
  if (have) {
    memset(infos, 0, have * sizeof *infos);
    infos[0].pid = 4242; infos[0].usedGpuMemory = 1024ULL * MIB;
    infos[1].pid = 4343; infos[1].usedGpuMemory = ~0ULL; /* NVML_VALUE_NOT_AVAILABLE */
  }
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned int *n,
                                                     nvmlProcessInfo_t *infos) {
  return processes(d, n, infos);
}

#ifndef FAKE_OLD_DRIVER
static int xid_pending = 1;

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version) { *version = 13000; return 0; }
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *n,
                                                     nvmlProcessInfo_t *infos) {
  return processes(d, n, infos);
}
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending) {
  if (lost(d)) return NVML_ERROR_GPU_IS_LOST;
  if (d->index == 1 && !mig(d)) return NVML_ERROR_NOT_SUPPORTED; /* a GPU without MIG */
  *current = *pending = mig(d) ? 1 : 0;
  return NVML_SUCCESS;
}
/* Two samples of pid 4242 on device 0 (the newer says 55 %), none of 4343; nothing newer than 2000. */
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d,
                                             nvmlProcessUtilizationSample_t *samples,
                                             unsigned int *n, unsigned long long lastSeen) {
  unsigned int gpu, mem;
  if (lost(d)) return NVML_ERROR_GPU_IS_LOST;
  if (scripted(d, &gpu, &mem)) {
    if (lastSeen >= 1000) return NVML_ERROR_NOT_FOUND;
    if (samples == NULL || *n < 1) { *n = 1; return NVML_ERROR_INSUFFICIENT_SIZE; }
    memset(samples, 0, sizeof *samples);
    samples[0].pid = (unsigned int) env_int("FAKE_NVML_PID", 4242);
    samples[0].timeStamp = 1000;
    samples[0].smUtil = gpu;
    samples[0].memUtil = mem;
    *n = 1;
    return NVML_SUCCESS;
  }
  struct gpu_window w;
  if (gpu_window(d, &w)) {
    if (refused()) return refused();
    unsigned long long now_us = w.now_ns / 1000;
    if (w.pids == 0 || lastSeen >= now_us) return NVML_ERROR_NOT_FOUND;
    if (samples == NULL || *n < w.pids) { *n = w.pids; return NVML_ERROR_INSUFFICIENT_SIZE; }
    memset(samples, 0, w.pids * sizeof *samples);
    for (unsigned int i = 0; i < w.pids; i++) {
      samples[i].pid = host_pid(w.pid[i].pid);
      samples[i].timeStamp = now_us;
      samples[i].smUtil = percent(&w, w.pid[i].busy_ns);
    }
    *n = w.pids;
    return NVML_SUCCESS;
  }
  if (d->index != 0 || lastSeen >= 2000) return NVML_ERROR_NOT_FOUND;
  if (samples == NULL || *n < 2) { *n = 2; return NVML_ERROR_INSUFFICIENT_SIZE; }
  memset(samples, 0, 2 * sizeof *samples);
  samples[0].pid = 4242; samples[0].timeStamp = 1000; samples[0].smUtil = 30;
  samples[1].pid = 4242; samples[1].timeStamp = 2000; samples[1].smUtil = 55;
  *n = 2;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int ms) {
  const char *xid = getenv("FAKE_NVML_XID");
  unsigned int device, n;
  if (!xid_pending || !xid || sscanf(xid, "%u:%u", &device, &n) != 2 || device >= count())
    return NVML_ERROR_TIMEOUT;
  xid_pending = 0;
  memset(data, 0, sizeof *data);
  data->device = &devices[device];
  data->eventType = 8; /* nvmlEventTypeXidCriticalError */
  data->eventData = n;
  return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) { *set = &event_set; return NVML_SUCCESS; }
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types,
                                      nvmlEventSet_t set) {
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) { return NVML_SUCCESS; }
