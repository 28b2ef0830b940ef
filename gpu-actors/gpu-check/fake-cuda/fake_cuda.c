/*
 * A fake libcuda.so.1 for the tests: the driver functions that dev.gpushare.gpu.cuda.CudaDriver
 * calls (CudaFakeDriverTest), and the ones libgpushare.so stands in front of (devices, contexts,
 * allocations, launches, copies, waits, cuGetProcAddress), with the real signatures, exported names
 * and CUresult codes. Not how a real driver behaves beyond that: nothing runs (with FAKE_GPU_FILE,
 * kernels occupy a virtual GPU's time, see fake_cuda_mem.c), addresses are made up, and the
 * checkpoint state machine RUNNING -> LOCKED -> CHECKPOINTED -> LOCKED -> RUNNING is kept in this
 * library's memory (one process).
 *
 * Built from two files:
 *   gcc -shared -fPIC -O1 -Wl,-soname,libcuda.so.1 -o libcuda.so.1 fake_cuda.c fake_cuda_mem.c
 * The exported functions bind within the library (protected), as a real driver's do: the pointer
 * cuGetProcAddress gives is the library's own, whatever a preloaded library defines. Like a real
 * driver, cuGetProcAddress hands back internal entry points for some functions, not the address
 * dlsym gives for the exported name: cuInit, cuMemAlloc_v2, cuMemFree_v2, cuMemGetInfo_v2,
 * cuLaunchKernel, cuLaunchKernel_ptsz and cuCtxSynchronize_v2 come back as this file's static
 * entry points (internal_*), which do what the exported ones do; so do cuCtxCreate_v2, _v3 and
 * _v4 (the last two take other arguments: an affinity list, a params struct).
 *
 * Environment:
 *   FAKE_CUDA_VERSION=12090      what cuDriverGetVersion answers
 *   FAKE_CUDA_UUIDS=GPU-…,GPU-…  the node's devices (default two: GPU-fa4e0000-…-000000000000
 *                                and …-000000000001); cuInit keeps those CUDA_VISIBLE_DEVICES
 *                                names, by UUID or index, up to the first it does not know, as
 *                                the driver does
 *   FAKE_CUDA_MEMORY=bytes       each device's memory (default 80 GiB)
 *   FAKE_CUDA_CONTEXT_BYTES=n    what each context takes of its device (default 0): a real driver
 *                                takes a few hundred MiB at a context's creation (a primary
 *                                context's first retain, each cuCtxCreate), shown in cuMemGetInfo
 *                                and NVML's used memory
 *   FAKE_CUDA_MODULE_BYTES=n     what each cuModuleLoad* / cuLibraryLoad* takes until its unload
 *                                (default 0), as a real driver's eager loading takes
 *   FAKE_CUDA_LAZY_BYTES=n       what a process's first kernel launch takes of its device until it
 *                                ends (default 0): lazily loaded code, which no call returns
 *   FAKE_GPU_KERNEL=/abs/socket  where the stand-in for the kernel answers a process's host PID
 *                                (fake_cuda_mem.c): the PID the driver names the process by in the
 *                                virtual GPU's files, and so in NVML; unset, getpid()
 *   FAKE_CUDA_TRACE=1            a line on stderr per call: "fake libcuda: <exported name>(<arg>)"
 *   FAKE_CUDA_PROC_ADDRESS=global  cuGetProcAddress hands back each variant's exported name as
 *                                the process's global scope resolves it (dlsym(RTLD_DEFAULT)), as a
 *                                driver or a shim built without -Bsymbolic does: under LD_PRELOAD
 *                                that is the preloaded library's function of the name
 *   FAKE_GPU_CONFIG=/abs/path    KEY=VALUE lines of these settings (default /dev/fake-gpu/config),
 *                                each taken unless the environment sets it: a device folder's
 *                                settings, which a process `kubectl exec` starts finds too
 *   FAKE_CUDA_NEWER=name@v,...   cuGetProcAddress(name) at version v or later hands back a variant
 *                                newer than any table knows (it traces "a newer variant")
 *   FAKE_CUDA_FAIL=call:code,... make a call fail with that CUresult, e.g. lock:909 restore:2;
 *                                call is init, state, lock, checkpoint, restore or unlock;
 *                                call:code:N fails only the first N times
 *   FAKE_GPU_FILE=/abs/path      a virtual GPU shared by every process (and the fake
 *                                libnvidia-ml.so.1): kernels take time, a full launch queue blocks,
 *                                synchronisation waits (fake_cuda_mem.c says how); unset, launches
 *                                and waits do nothing and return at once
 *   FAKE_GPU_KERNEL_US=1000      with FAKE_GPU_FILE: how long each kernel occupies its GPU
 *   FAKE_GPU_QUEUE_US=2000       with FAKE_GPU_FILE: the most work a launch may leave queued
 * Built with -DFAKE_OLD_DRIVER it exports no cuCheckpointProcess* function (a driver before 12.8).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#pragma GCC visibility push(protected)

#include "../fake_config.h"

typedef int CUresult;
typedef int CUdevice;
typedef struct fake_ctx *CUcontext;
typedef struct { char bytes[16]; } CUuuid;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_ILLEGAL_STATE 401
#define CUDA_ERROR_NOT_FOUND 500
#define CUDA_ERROR_NOT_SUPPORTED 801

/* shared with fake_cuda_mem.c */
__attribute__((visibility("hidden"))) void fake_trace(const char *fmt, ...);
__attribute__((visibility("hidden"))) CUresult fake_ready(void);
__attribute__((visibility("hidden"))) unsigned long long fake_memory(void);
__attribute__((visibility("hidden"))) void *fake_mem_fn(const char *name);
__attribute__((visibility("hidden"))) const char *fake_current_uuid(void);
__attribute__((visibility("hidden"))) int fake_current_device(void);
__attribute__((visibility("hidden"))) void fake_context_taken(int sign);

void fake_trace(const char *fmt, ...) {
  const char *t = getenv("FAKE_CUDA_TRACE");
  if (!t || strcmp(t, "1") != 0) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = snprintf(line, sizeof line, "fake libcuda: ");
  n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  /* one write: the lines of processes sharing stderr stay whole */
  ssize_t w = write(2, line, (size_t)n);
  (void)w;
}

static int failed_times[8];

/* the CUresult FAKE_CUDA_FAIL scripts for call number `which` named `call`, or 0 */
static CUresult scripted(int which, const char *call) {
  const char *spec = getenv("FAKE_CUDA_FAIL");
  if (!spec) return 0;
  size_t n = strlen(call);
  for (const char *p = spec; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : 0) {
    if (strncmp(p, call, n) == 0 && p[n] == ':') {
      int code = atoi(p + n + 1);
      const char *times = strchr(p + n + 1, ':');
      const char *comma = strchr(p + n + 1, ',');
      if (times && (!comma || times < comma)) {
        if (failed_times[which] >= atoi(times + 1)) return 0;
      }
      failed_times[which]++;
      return code;
    }
  }
  return 0;
}

/* ------------------------------------------------------------------ devices */

#define MAX_DEVICES 16
struct fake_ctx { int device; };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static char uuids[MAX_DEVICES][80];
static int devices;
static int visible[MAX_DEVICES]; /* CUdevice ordinal -> index in uuids */
static int visible_count;
static struct fake_ctx primary[MAX_DEVICES];
static __thread CUcontext current;

CUresult fake_ready(void) { return initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED; }

/* The node UUID of the GPU the calling thread's current context is on (device 0's without one);
 * NULL before cuInit. The virtual GPU (fake_cuda_mem.c) keys its queues by it, as NVML does. */
const char *fake_current_uuid(void) {
  if (!initialized) return NULL;
  int dev = current ? current->device : 0;
  return dev >= 0 && dev < visible_count ? uuids[visible[dev]] : NULL;
}

/* The calling thread's current context's device (0 without one). */
int fake_current_device(void) { return current ? current->device : 0; }

unsigned long long fake_memory(void) {
  const char *m = getenv("FAKE_CUDA_MEMORY");
  return m ? strtoull(m, NULL, 10) : 80ULL << 30;
}

/* The device an entry of CUDA_VISIBLE_DEVICES names, by UUID or index; -1 when none. */
static int named(const char *entry, size_t len) {
  for (int i = 0; i < devices; i++) {
    if (strlen(uuids[i]) == len && strncmp(uuids[i], entry, len) == 0) return i;
  }
  char *end;
  long index = strtol(entry, &end, 10);
  return end == entry + len && len > 0 && index >= 0 && index < devices ? (int)index : -1;
}

CUresult cuInit(unsigned int flags) {
  (void)flags;
  const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
  fake_trace("cuInit CUDA_VISIBLE_DEVICES=%s", cvd ? cvd : "unset");
  const char *pipe_dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
  if (pipe_dir) fake_trace("cuInit CUDA_MPS_PIPE_DIRECTORY=%s", pipe_dir);
  CUresult rc = scripted(5, "init");
  if (rc) return rc;
  pthread_mutex_lock(&mu);
  if (!initialized) {
    devices = visible_count = 0;
    const char *list = getenv("FAKE_CUDA_UUIDS");
    if (!list) {
      list = "GPU-fa4e0000-0000-4000-8000-000000000000,GPU-fa4e0000-0000-4000-8000-000000000001";
    }
    for (const char *p = list; *p && devices < MAX_DEVICES; p += *p == ',') {
      size_t n = strcspn(p, ",");
      snprintf(uuids[devices++], sizeof uuids[0], "%.*s", (int)(n < 79 ? n : 79), p);
      p += n;
    }
    for (const char *p = cvd; p && *p && visible_count < MAX_DEVICES; p += *p == ',') {
      size_t n = strcspn(p, ",");
      int d = named(p, n);
      if (d < 0) break;
      visible[visible_count++] = d;
      p += n;
    }
    if (!cvd) {
      for (int i = 0; i < devices; i++) visible[visible_count++] = i;
    }
    for (int i = 0; i < MAX_DEVICES; i++) primary[i].device = i;
    initialized = visible_count > 0;
  }
  rc = initialized ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
  pthread_mutex_unlock(&mu);
  return rc;
}

CUresult cuDriverGetVersion(int *version) {
  const char *v = getenv("FAKE_CUDA_VERSION");
  *version = v ? atoi(v) : 12090;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  switch (error) {
    case 0: *name = "CUDA_SUCCESS"; return 0;
    case 1: *name = "CUDA_ERROR_INVALID_VALUE"; return 0;
    case 2: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
    case 3: *name = "CUDA_ERROR_NOT_INITIALIZED"; return 0;
    case 100: *name = "CUDA_ERROR_NO_DEVICE"; return 0;
    case 101: *name = "CUDA_ERROR_INVALID_DEVICE"; return 0;
    case 401: *name = "CUDA_ERROR_ILLEGAL_STATE"; return 0;
    case 500: *name = "CUDA_ERROR_NOT_FOUND"; return 0;
    case 600: *name = "CUDA_ERROR_NOT_READY"; return 0;
    case 801: *name = "CUDA_ERROR_NOT_SUPPORTED"; return 0;
    case 909: *name = "CUDA_ERROR_TIMEOUT"; return 0;
    default: *name = 0; return CUDA_ERROR_INVALID_VALUE;
  }
}

/* The driver's private tables, which the CUDA runtime needs: none here, so it stops at them. */
CUresult cuGetExportTable(const void **table, const CUuuid *id) {
  (void)id;
  fake_trace("cuGetExportTable()");
  *table = NULL;
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuDeviceGetCount(int *count) {
  fake_trace("cuDeviceGetCount()");
  if (fake_ready()) return fake_ready();
  *count = visible_count;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  fake_trace("cuDeviceGet(%d)", ordinal);
  if (fake_ready()) return fake_ready();
  if (ordinal < 0 || ordinal >= visible_count) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

static int hex(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The UUID's 16 bytes are its hex digits (after "GPU-"), so they print back as the same name. */
static CUresult uuid_of(const char *call, CUuuid *uuid, CUdevice dev) {
  fake_trace("%s(%d)", call, dev);
  if (fake_ready()) return fake_ready();
  if (dev < 0 || dev >= visible_count) return CUDA_ERROR_INVALID_DEVICE;
  const char *text = uuids[visible[dev]];
  if (strncmp(text, "GPU-", 4) == 0) text += 4;
  memset(uuid->bytes, 0, sizeof uuid->bytes);
  for (int n = 0; *text && n < 32; text++) {
    int v = hex(*text);
    if (v < 0) continue;
    uuid->bytes[n / 2] = (char)(uuid->bytes[n / 2] | v << (n % 2 ? 0 : 4));
    n++;
  }
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
  return uuid_of("cuDeviceGetUuid", uuid, dev);
}
CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) {
  return uuid_of("cuDeviceGetUuid_v2", uuid, dev);
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  fake_trace("cuDeviceGetName(%d)", dev);
  if (fake_ready()) return fake_ready();
  if (dev < 0 || dev >= visible_count) return CUDA_ERROR_INVALID_DEVICE;
  snprintf(name, (size_t)len, "Fake GPU %d", visible[dev]);
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  fake_trace("cuDeviceTotalMem_v2(%d)", dev);
  if (fake_ready()) return fake_ready();
  if (dev < 0 || dev >= visible_count) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = (size_t)fake_memory();
  return CUDA_SUCCESS;
}
CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev) {
  fake_trace("cuDeviceTotalMem(%d)", dev);
  if (fake_ready()) return fake_ready();
  if (dev < 0 || dev >= visible_count) return CUDA_ERROR_INVALID_DEVICE;
  unsigned long long m = fake_memory();
  *bytes = m > 0xffffffffULL ? 0xffffffffU : (unsigned)m;
  return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ contexts: one per device */

static int retained[MAX_DEVICES]; /* the primary contexts' retains */

/* Each creation takes the context's memory (FAKE_CUDA_CONTEXT_BYTES) from the device, as a real
 * driver does: the primary context at its first retain (later ones share it) until its last
 * release or a reset, a created context (one of its own) until cuCtxDestroy. */
static CUresult context(const char *call, CUcontext *pctx, CUdevice dev, int make_current) {
  fake_trace("%s(%d)", call, dev);
  if (fake_ready()) return fake_ready();
  if (dev < 0 || dev >= visible_count) return CUDA_ERROR_INVALID_DEVICE;
  if (make_current) {
    CUcontext c = malloc(sizeof *c);
    if (!c) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    c->device = dev;
    *pctx = current = c;
    fake_context_taken(1);
    return CUDA_SUCCESS;
  }
  pthread_mutex_lock(&mu);
  int first = retained[dev]++ == 0;
  pthread_mutex_unlock(&mu);
  *pctx = &primary[dev];
  CUcontext was = current;
  current = *pctx; /* the memory is the context's device's */
  if (first) fake_context_taken(1);
  current = was;
  return CUDA_SUCCESS;
}
static int is_primary(CUcontext c) { return c >= primary && c < primary + MAX_DEVICES; }
static CUresult destroy(const char *call, CUcontext c) {
  fake_trace("%s()", call);
  if (fake_ready()) return fake_ready();
  if (!c || is_primary(c)) return CUDA_ERROR_INVALID_VALUE;
  CUcontext was = current;
  current = c;
  fake_context_taken(-1);
  current = was == c ? NULL : was;
  free(c);
  return CUDA_SUCCESS;
}
CUresult cuCtxDestroy(CUcontext c) { return destroy("cuCtxDestroy", c); }
CUresult cuCtxDestroy_v2(CUcontext c) { return destroy("cuCtxDestroy_v2", c); }
static CUresult release(const char *call, CUdevice dev, int reset) {
  fake_trace("%s(%d)", call, dev);
  if (fake_ready()) return fake_ready();
  if (dev < 0 || dev >= visible_count) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&mu);
  int was_retained = retained[dev] > 0;
  int last = was_retained && (reset || retained[dev] == 1);
  if (was_retained) retained[dev] = reset ? 0 : retained[dev] - 1;
  pthread_mutex_unlock(&mu);
  if (!was_retained) return reset ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (last) {
    CUcontext was = current;
    current = &primary[dev];
    fake_context_taken(-1);
    current = was == &primary[dev] ? NULL : was;
  }
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return release("cuDevicePrimaryCtxRelease", dev, 0);
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return release("cuDevicePrimaryCtxRelease_v2", dev, 0);
}
CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  return release("cuDevicePrimaryCtxReset", dev, 1);
}
CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  return release("cuDevicePrimaryCtxReset_v2", dev, 1);
}
CUresult cuCtxGetDevice(CUdevice *dev) {
  fake_trace("cuCtxGetDevice()");
  if (fake_ready()) return fake_ready();
  *dev = current ? current->device : 0;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  return context("cuDevicePrimaryCtxRetain", pctx, dev, 0);
}
CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev) {
  (void)flags;
  return context("cuCtxCreate", pctx, dev, 1);
}
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
  (void)flags;
  return context("cuCtxCreate_v2", pctx, dev, 1);
}
CUresult cuCtxCreate_v3(CUcontext *pctx, void *affinity, int n, unsigned int flags, CUdevice dev) {
  (void)affinity, (void)n, (void)flags;
  return context("cuCtxCreate_v3", pctx, dev, 1);
}
CUresult cuCtxCreate_v4(CUcontext *pctx, void *params, unsigned int flags, CUdevice dev) {
  (void)flags;
  fake_trace("cuCtxCreate_v4 params=%p", params); /* a caller's pointer, as it reached the driver */
  return context("cuCtxCreate_v4", pctx, dev, 1);
}
CUresult cuCtxSetCurrent(CUcontext ctx) {
  fake_trace("cuCtxSetCurrent(%d)", ctx ? ctx->device : -1);
  if (fake_ready()) return fake_ready();
  current = ctx;
  return CUDA_SUCCESS;
}
CUresult cuCtxGetCurrent(CUcontext *pctx) {
  fake_trace("cuCtxGetCurrent()");
  if (fake_ready()) return fake_ready();
  *pctx = current;
  return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ checkpoints */

#ifndef FAKE_OLD_DRIVER
typedef struct { unsigned int timeoutMs; unsigned int reserved0; unsigned long reserved1[7]; } CUcheckpointLockArgs;
typedef struct { unsigned long reserved[8]; } CUcheckpointCheckpointArgs;
typedef struct { unsigned long reserved[8]; } CUcheckpointRestoreArgs;
typedef struct { unsigned long reserved[8]; } CUcheckpointUnlockArgs;

#define MAX_PIDS 64
static int pids[MAX_PIDS];
static int states[MAX_PIDS]; /* 0 running, 1 locked, 2 checkpointed */
static int count;

static int slot(int pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d", pid);
  if (access(path, F_OK) != 0) return -1; /* no such process */
  for (int i = 0; i < count; i++) if (pids[i] == pid) return i;
  if (count == MAX_PIDS) return -1;
  pids[count] = pid;
  states[count] = 0;
  return count++;
}

CUresult cuCheckpointProcessGetState(int pid, int *state) {
  CUresult rc = scripted(0, "state");
  if (rc) return rc;
  int i = slot(pid);
  if (i < 0) return CUDA_ERROR_INVALID_VALUE;
  *state = states[i];
  return CUDA_SUCCESS;
}

static CUresult step(int which, const char *call, int pid, int from, int to) {
  CUresult rc = scripted(which, call);
  if (rc) return rc;
  int i = slot(pid);
  if (i < 0) return CUDA_ERROR_INVALID_VALUE;
  if (states[i] != from) return CUDA_ERROR_ILLEGAL_STATE;
  states[i] = to;
  fprintf(stderr, "fake libcuda: %s(%d) -> state %d\n", call, pid, to);
  return CUDA_SUCCESS;
}

CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs *args) {
  (void)args;
  return step(1, "lock", pid, 0, 1);
}
CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs *args) {
  (void)args;
  return step(2, "checkpoint", pid, 1, 2);
}
CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs *args) {
  (void)args;
  return step(3, "restore", pid, 2, 1);
}
CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs *args) {
  (void)args;
  return step(4, "unlock", pid, 1, 0);
}
CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int *tid) {
  *tid = pid;
  return CUDA_SUCCESS;
}
#endif

/* ------------------------------------------------------------------ cuGetProcAddress */

/* What the driver resolves a name to: for each name, its exported variants and the CUDA version
 * each came with (cudaTypedefs.h's PFN_<name>_v<version>); per_thread marks the per-thread default
 * stream's (_ptds, _ptsz), picked by CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM. */
struct variant { const char *base, *name; int version, per_thread; };
#define R(b, n, v, pt) {#b, #n, v, pt},
#define ONE(b, v) R(b, b, v, 0)
#define PT(b, v, ptv, sfx) R(b, b, v, 0) R(b, b##sfx, ptv, 1)
#define V2(b, v) R(b, b, v, 0) R(b, b##_v2, 3020, 0)
#define V2PT(b, v, sfx) V2(b, v) R(b, b##_v2##sfx, 7000, 1)
static const struct variant variants[] = {
  ONE(cuInit, 2000) ONE(cuDriverGetVersion, 2020) ONE(cuGetErrorName, 6000)
  ONE(cuGetExportTable, 3000) R(cuGetProcAddress, cuGetProcAddress, 11030, 0)
  R(cuGetProcAddress, cuGetProcAddress_v2, 12000, 0) ONE(cuDeviceGet, 2000)
  ONE(cuDeviceGetCount, 2000) ONE(cuDeviceGetName, 2000)
  R(cuDeviceGetUuid, cuDeviceGetUuid, 9020, 0) R(cuDeviceGetUuid, cuDeviceGetUuid_v2, 11040, 0)
  V2(cuDeviceTotalMem, 2000) V2(cuCtxCreate, 2000)
  R(cuCtxCreate, cuCtxCreate_v3, 11040, 0) R(cuCtxCreate, cuCtxCreate_v4, 12050, 0)
  ONE(cuDevicePrimaryCtxRetain, 7000) ONE(cuCtxSetCurrent, 4000) ONE(cuCtxGetCurrent, 4000)
  R(cuCtxDestroy, cuCtxDestroy, 2000, 0) R(cuCtxDestroy, cuCtxDestroy_v2, 4000, 0)
  ONE(cuDevicePrimaryCtxRelease, 7000)
  R(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, 11000, 0)
  ONE(cuDevicePrimaryCtxReset, 7000)
  R(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset_v2, 11000, 0)
  ONE(cuCtxGetDevice, 2000) ONE(cuDeviceGetDefaultMemPool, 11020) ONE(cuDeviceGetMemPool, 11020)
  ONE(cuDeviceSetMemPool, 11020) ONE(cuMemPoolCreate, 11020) ONE(cuMemPoolDestroy, 11020)
  ONE(cuMemPoolTrimTo, 11020) ONE(cuMemPoolSetAttribute, 11020) ONE(cuMemPoolGetAttribute, 11020)
  ONE(cuModuleLoad, 2000) ONE(cuModuleLoadData, 2000) ONE(cuModuleLoadDataEx, 2010)
  ONE(cuModuleLoadFatBinary, 2000) ONE(cuModuleUnload, 2000) ONE(cuLibraryLoadData, 12000)
  ONE(cuLibraryLoadFromFile, 12000) ONE(cuLibraryUnload, 12000)
#ifndef FAKE_OLD_DRIVER
  ONE(cuCheckpointProcessGetState, 12080) ONE(cuCheckpointProcessLock, 12080)
  ONE(cuCheckpointProcessCheckpoint, 12080) ONE(cuCheckpointProcessRestore, 12080)
  ONE(cuCheckpointProcessUnlock, 12080) ONE(cuCheckpointProcessGetRestoreThreadId, 12080)
#endif
  V2(cuMemGetInfo, 2000) V2(cuMemAlloc, 2000) V2(cuMemAllocPitch, 2000) ONE(cuMemAllocManaged, 6000)
  PT(cuMemAllocAsync, 11020, 11020, _ptsz) PT(cuMemAllocFromPoolAsync, 11020, 11020, _ptsz)
  ONE(cuMemCreate, 10020) V2(cuArrayCreate, 2000) V2(cuArray3DCreate, 2000)
  ONE(cuMipmappedArrayCreate, 5000) V2(cuMemFree, 2000) PT(cuMemFreeAsync, 11020, 11020, _ptsz)
  ONE(cuMemRelease, 10020) ONE(cuArrayDestroy, 2000) ONE(cuMipmappedArrayDestroy, 5000)
  PT(cuLaunchKernel, 4000, 7000, _ptsz) PT(cuLaunchKernelEx, 11060, 11060, _ptsz)
  PT(cuLaunchCooperativeKernel, 9000, 9000, _ptsz) PT(cuLaunchHostFunc, 10000, 10000, _ptsz)
  PT(cuGraphLaunch, 10000, 10000, _ptsz) ONE(cuGraphCreate, 10000)
  R(cuGraphAddKernelNode, cuGraphAddKernelNode, 10000, 0)
  R(cuGraphAddKernelNode, cuGraphAddKernelNode_v2, 12030, 0) ONE(cuGraphInstantiateWithFlags, 11040)
  ONE(cuGraphDestroy, 10000) ONE(cuGraphExecDestroy, 10000)
  PT(cuMemcpy, 4000, 7000, _ptds) PT(cuMemcpyAsync, 4000, 7000, _ptsz)
  V2PT(cuMemcpyHtoD, 2000, _ptds) V2PT(cuMemcpyDtoH, 2000, _ptds) V2PT(cuMemcpyDtoD, 2000, _ptds)
  V2PT(cuMemcpyHtoDAsync, 2000, _ptsz) V2PT(cuMemcpyDtoHAsync, 2000, _ptsz)
  V2PT(cuMemcpyDtoDAsync, 3000, _ptsz) V2PT(cuMemcpy2D, 2000, _ptds)
  V2PT(cuMemcpy2DAsync, 2000, _ptsz) V2PT(cuMemcpy3D, 2000, _ptds)
  V2PT(cuMemcpy3DAsync, 2000, _ptsz) PT(cuMemcpyPeer, 4000, 7000, _ptds)
  PT(cuMemcpyPeerAsync, 4000, 7000, _ptsz) V2PT(cuMemsetD8, 2000, _ptds)
  V2PT(cuMemsetD16, 2000, _ptds) V2PT(cuMemsetD32, 2000, _ptds)
  PT(cuMemsetD8Async, 3020, 7000, _ptsz) PT(cuMemsetD16Async, 3020, 7000, _ptsz)
  PT(cuMemsetD32Async, 3020, 7000, _ptsz) R(cuCtxSynchronize, cuCtxSynchronize, 2000, 0)
  R(cuCtxSynchronize, cuCtxSynchronize_v2, 13000, 0) PT(cuStreamSynchronize, 2000, 7000, _ptsz)
  PT(cuStreamWaitEvent, 3020, 7000, _ptsz) ONE(cuEventSynchronize, 2000)
  PT(cuStreamQuery, 2000, 7000, _ptsz) PT(cuEventRecord, 2000, 7000, _ptsz)
};

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                             unsigned long long flags, int *symbolStatus);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                          unsigned long long flags);

/* This file's exported functions by name (fake_cuda_mem.c has its own). */
#define SELF(n) {#n, (void *)n},
static const struct { const char *name; void *fn; } self[] = {
  SELF(cuInit) SELF(cuDriverGetVersion) SELF(cuGetErrorName) SELF(cuGetExportTable)
  SELF(cuGetProcAddress) SELF(cuGetProcAddress_v2) SELF(cuDeviceGet) SELF(cuDeviceGetCount)
  SELF(cuDeviceGetName) SELF(cuDeviceGetUuid) SELF(cuDeviceGetUuid_v2) SELF(cuDeviceTotalMem)
  SELF(cuDeviceTotalMem_v2) SELF(cuCtxCreate) SELF(cuCtxCreate_v2) SELF(cuCtxCreate_v3)
  SELF(cuCtxCreate_v4) SELF(cuDevicePrimaryCtxRetain) SELF(cuCtxSetCurrent) SELF(cuCtxGetCurrent)
  SELF(cuCtxGetDevice) SELF(cuCtxDestroy) SELF(cuCtxDestroy_v2) SELF(cuDevicePrimaryCtxRelease)
  SELF(cuDevicePrimaryCtxRelease_v2) SELF(cuDevicePrimaryCtxReset) SELF(cuDevicePrimaryCtxReset_v2)
#ifndef FAKE_OLD_DRIVER
  SELF(cuCheckpointProcessGetState) SELF(cuCheckpointProcessLock)
  SELF(cuCheckpointProcessCheckpoint) SELF(cuCheckpointProcessRestore)
  SELF(cuCheckpointProcessUnlock)
  SELF(cuCheckpointProcessGetRestoreThreadId)
#endif
};

static void *function(const char *name);

/* The internal entry points (see the header): the same work, another address. */
typedef unsigned long long CUdeviceptr;
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total);
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *s, void **params, void **extra);
CUresult cuLaunchKernel_ptsz(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shared, void *s, void **params,
                             void **extra);
CUresult cuCtxSynchronize_v2(CUcontext ctx);
static CUresult internal_cuInit(unsigned int flags) { return cuInit(flags); }
static CUresult internal_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) {
  return cuMemAlloc_v2(dptr, bytes);
}
static CUresult internal_cuMemFree_v2(CUdeviceptr dptr) { return cuMemFree_v2(dptr); }
static CUresult internal_cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  return cuMemGetInfo_v2(free_bytes, total);
}
static CUresult internal_cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                                        unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                        void *s, void **params, void **extra) {
  return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, s, params, extra);
}
static CUresult internal_cuLaunchKernel_ptsz(void *f, unsigned gx, unsigned gy, unsigned gz,
                                             unsigned bx, unsigned by, unsigned bz,
                                             unsigned shared, void *s, void **params,
                                             void **extra) {
  return cuLaunchKernel_ptsz(f, gx, gy, gz, bx, by, bz, shared, s, params, extra);
}
static CUresult internal_cuCtxSynchronize_v2(CUcontext ctx) { return cuCtxSynchronize_v2(ctx); }
static CUresult internal_cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
  return cuCtxCreate_v2(pctx, flags, dev);
}
static CUresult internal_cuCtxCreate_v3(CUcontext *pctx, void *affinity, int n, unsigned int flags,
                                        CUdevice dev) {
  return cuCtxCreate_v3(pctx, affinity, n, flags, dev);
}
static CUresult internal_cuCtxCreate_v4(CUcontext *pctx, void *params, unsigned int flags,
                                        CUdevice dev) {
  return cuCtxCreate_v4(pctx, params, flags, dev);
}
#define INTERNAL(n) {#n, (void *)internal_##n},
static const struct { const char *name; void *fn; } internal[] = {
  INTERNAL(cuInit) INTERNAL(cuMemAlloc_v2) INTERNAL(cuMemFree_v2) INTERNAL(cuMemGetInfo_v2)
  INTERNAL(cuLaunchKernel) INTERNAL(cuLaunchKernel_ptsz) INTERNAL(cuCtxSynchronize_v2)
  INTERNAL(cuCtxCreate_v2) INTERNAL(cuCtxCreate_v3) INTERNAL(cuCtxCreate_v4)
};

/* What cuGetProcAddress hands back for an exported variant: an internal entry point, the
 * variant's own function, or with FAKE_CUDA_PROC_ADDRESS=global the exported name as the process's
 * global scope resolves it (a driver or shim that takes its exported functions' addresses through
 * the GOT: under LD_PRELOAD, the preloaded library's function of that name). */
static void *entry_point(const char *name) {
  const char *mode = getenv("FAKE_CUDA_PROC_ADDRESS");
  if (mode && strcmp(mode, "global") == 0) {
    void *p = dlsym(RTLD_DEFAULT, name);
    if (p) return p;
  }
  for (size_t i = 0; i < sizeof internal / sizeof internal[0]; i++) {
    if (strcmp(internal[i].name, name) == 0) return internal[i].fn;
  }
  return function(name);
}

static void *function(const char *name) {
  for (size_t i = 0; i < sizeof self / sizeof self[0]; i++) {
    if (strcmp(self[i].name, name) == 0) return self[i].fn;
  }
  return fake_mem_fn(name);
}

/* FAKE_CUDA_NEWER=name@version,...: a variant of `name` newer than any other table knows, for
 * versions from `version` on: an internal entry point that says it was called. */
static CUresult newer_variant(void *a, void *b) {
  (void)a, (void)b;
  fake_trace("a newer variant");
  return CUDA_SUCCESS;
}

static int newer(const char *symbol, int cudaVersion) {
  const char *spec = getenv("FAKE_CUDA_NEWER");
  size_t n = symbol ? strlen(symbol) : 0;
  for (const char *p = spec; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
    if (n && strncmp(p, symbol, n) == 0 && p[n] == '@' && cudaVersion >= atoi(p + n + 1)) return 1;
  }
  return 0;
}

/* The newest variant not newer than cudaVersion; the per-thread one when asked for and there. */
static CUresult resolve(const char *call, const char *symbol, void **pfn, int cudaVersion,
                        unsigned long long flags, int *status) {
  const struct variant *legacy = NULL, *per_thread = NULL;
  int known = 0;
  if (newer(symbol, cudaVersion)) {
    fake_trace("%s(%s, %d, %llu) -> a newer variant", call, symbol, cudaVersion, flags);
    if (pfn) *pfn = (void *)newer_variant;
    if (status) *status = 0;
    return CUDA_SUCCESS;
  }
  for (size_t i = 0; symbol && i < sizeof variants / sizeof variants[0]; i++) {
    const struct variant *v = &variants[i];
    if (strcmp(v->base, symbol) != 0) continue;
    known = 1;
    if (v->version > cudaVersion) continue;
    const struct variant **best = v->per_thread ? &per_thread : &legacy;
    if (!*best || (*best)->version < v->version) *best = v;
  }
  const struct variant *v = (flags & 2) && per_thread ? per_thread : legacy;
  void *fn = v ? entry_point(v->name) : NULL;
  fake_trace("%s(%s, %d, %llu) -> %s", call, symbol ? symbol : "(null)", cudaVersion, flags,
             fn ? v->name : known ? "version not sufficient" : "not found");
  if (pfn) *pfn = fn;
  if (status) *status = fn ? 0 : known ? 2 : 1;
  return fn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                             unsigned long long flags, int *symbolStatus) {
  return resolve("cuGetProcAddress_v2", symbol, pfn, cudaVersion, flags, symbolStatus);
}
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                          unsigned long long flags) {
  return resolve("cuGetProcAddress", symbol, pfn, cudaVersion, flags, NULL);
}
