/*
 * The NVML view (SPEC §7, §10): a process of a pod that holds a GPU sees that GPU alone, with its
 * real index and UUID, and its compute utilisation relative to the pod's core limit; a pod that
 * holds none sees no GPU. Memory figures stay absolute (they are the GPU's, not the share's).
 *
 * The view is decided when the process initialises NVML, from the grant the CUDA side already
 * has or, in a process that made no CUDA call (nvidia-smi), from one look-up of the pod's state.
 * Until then, and in an inert library, every call passes straight through.
 *
 * Device handles are the real library's: NVML's handles are stable while it stays initialised,
 * so "is this the granted GPU" is a pointer comparison with the handle found at initialisation.
 */
#include "gpushare.h"

#include <pthread.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

#define NVML_ERROR_LIBRARY_NOT_FOUND 12
#define NVML_ERROR_FUNCTION_NOT_FOUND 13

/* nvml.h's layouts */
typedef struct {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

typedef struct {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

typedef struct {
  unsigned long long timeStamp;
  unsigned int pid;
  unsigned int smUtil, memUtil, encUtil, decUtil, jpgUtil, ofaUtil;
} nvmlProcessUtilizationInfo_v1_t;

typedef struct {
  unsigned int version;
  unsigned int processSamplesCount;
  unsigned long long lastSeenTimeStamp;
  nvmlProcessUtilizationInfo_v1_t *procUtilArray;
} nvmlProcessesUtilizationInfo_t;

/* ------------------------------------------------------------------ the real functions */

enum {
  F_INIT, F_INIT_V2, F_INIT_FLAGS,
  F_COUNT, F_COUNT_V2,
  F_BY_INDEX, F_BY_INDEX_V2,
  F_BY_UUID, F_BY_PCI, F_BY_PCI_V2, F_BY_SERIAL,
  F_UTIL, F_PROC_UTIL, F_PROCS_UTIL_INFO,
  F_N
};

static const char *const names[F_N] = {
  [F_INIT] = "nvmlInit",
  [F_INIT_V2] = "nvmlInit_v2",
  [F_INIT_FLAGS] = "nvmlInitWithFlags",
  [F_COUNT] = "nvmlDeviceGetCount",
  [F_COUNT_V2] = "nvmlDeviceGetCount_v2",
  [F_BY_INDEX] = "nvmlDeviceGetHandleByIndex",
  [F_BY_INDEX_V2] = "nvmlDeviceGetHandleByIndex_v2",
  [F_BY_UUID] = "nvmlDeviceGetHandleByUUID",
  [F_BY_PCI] = "nvmlDeviceGetHandleByPciBusId",
  [F_BY_PCI_V2] = "nvmlDeviceGetHandleByPciBusId_v2",
  [F_BY_SERIAL] = "nvmlDeviceGetHandleBySerial",
  [F_UTIL] = "nvmlDeviceGetUtilizationRates",
  [F_PROC_UTIL] = "nvmlDeviceGetProcessUtilization",
  [F_PROCS_UTIL_INFO] = "nvmlDeviceGetProcessesUtilizationInfo",
};

static void *_Atomic reals[F_N];

static void *real(int f) {
  void *p = atomic_load_explicit(&reals[f], memory_order_acquire);
  if (GS_UNLIKELY(p == NULL)) {
    p = gs_real_nvml(names[f]);
    if (p) atomic_store_explicit(&reals[f], p, memory_order_release);
  }
  return p;
}

/* What a wrapper answers when the real library lacks the function it forwards to. */
static nvmlReturn_t absent(void) {
  return gs_real_nvml("nvmlInit_v2") ? NVML_ERROR_FUNCTION_NOT_FOUND : NVML_ERROR_LIBRARY_NOT_FOUND;
}

typedef nvmlReturn_t (*init_fn)(void);
typedef nvmlReturn_t (*init_flags_fn)(unsigned int);
typedef nvmlReturn_t (*count_fn)(unsigned int *);
typedef nvmlReturn_t (*by_index_fn)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*by_key_fn)(const char *, nvmlDevice_t *);
typedef nvmlReturn_t (*util_fn)(nvmlDevice_t, nvmlUtilization_t *);
typedef nvmlReturn_t (*proc_util_fn)(nvmlDevice_t, nvmlProcessUtilizationSample_t *,
                                     unsigned int *, unsigned long long);
typedef nvmlReturn_t (*procs_util_info_fn)(nvmlDevice_t, nvmlProcessesUtilizationInfo_t *);

/* ------------------------------------------------------------------ the view */

enum { VIEW_ALL = 0, VIEW_GRANTED = 1, VIEW_NONE = 2 };

/* Written under view_lock at initialisation, handle and limit before the mode (release), so that
 * a reader that loads the mode (acquire) sees the handle and limit that go with it. */
static pthread_mutex_t view_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int view_mode = VIEW_ALL;
static nvmlDevice_t _Atomic view_handle;
static _Atomic int view_core_limit = 100;
/* The real nvmlInit may enter the real nvmlInit_v2 through our export: decide once, outermost. */
static _Thread_local int init_depth;

static int mode(void) { return atomic_load_explicit(&view_mode, memory_order_acquire); }

static int is_granted(nvmlDevice_t d) {
  return d != NULL && mode() == VIEW_GRANTED && d == atomic_load_explicit(&view_handle,
                                                                          memory_order_relaxed);
}

static unsigned int relative(unsigned int absolute) {
  unsigned long long limit = (unsigned long long) atomic_load_explicit(&view_core_limit,
                                                                        memory_order_relaxed);
  unsigned long long v = (unsigned long long) absolute * 100ULL / limit;
  return v > 100 ? 100 : (unsigned int) v;
}

static void set_view(int m, nvmlDevice_t handle, int core_limit) {
  atomic_store_explicit(&view_handle, handle, memory_order_relaxed);
  atomic_store_explicit(&view_core_limit, core_limit, memory_order_relaxed);
  atomic_store_explicit(&view_mode, m, memory_order_release);
}

static void decide(void) {
  pthread_mutex_lock(&view_lock);
  int holds = gs_grant_known() ? 1 : gs_grant_lookup();
  if (holds < 0) {
    set_view(VIEW_ALL, NULL, 100);
  } else if (holds == 0) {
    set_view(VIEW_NONE, NULL, 100);
  } else {
    const struct gs_grant *g = gs_grant_get();
    by_key_fn by_uuid = (by_key_fn) real(F_BY_UUID);
    nvmlDevice_t h = NULL;
    nvmlReturn_t rc = by_uuid ? by_uuid(g->uuid, &h) : absent();
    int limit = g->core_limit >= 1 && g->core_limit < 100 ? g->core_limit : 100;
    if (rc == GS_NVML_SUCCESS && h != NULL) {
      set_view(VIEW_GRANTED, h, limit);
    } else {
      gs_say("NVML does not know the GPU granted to this pod (%s, index %d; NVML error %d), so "
             "NVML shows this process no GPU; the container must see the node's GPUs "
             "(NVIDIA_VISIBLE_DEVICES)",
             g->uuid, g->index, rc);
      set_view(VIEW_NONE, NULL, 100);
    }
  }
  int m = mode();
  gs_debug("NVML view: %s", m == VIEW_GRANTED ? "the granted GPU" : m == VIEW_NONE ? "no GPU"
                                                                                   : "every GPU");
  pthread_mutex_unlock(&view_lock);
}

static nvmlReturn_t init(int f, int with_flags, unsigned int flags) {
  void *p = real(f);
  if (p == NULL) return absent();
  init_depth++;
  nvmlReturn_t rc = with_flags ? ((init_flags_fn) p)(flags) : ((init_fn) p)();
  init_depth--;
  if (rc == GS_NVML_SUCCESS && gs_cfg.active && init_depth == 0) decide();
  return rc;
}

GS_EXPORT nvmlReturn_t nvmlInit(void) { return init(F_INIT, 0, 0); }
GS_EXPORT nvmlReturn_t nvmlInit_v2(void) { return init(F_INIT_V2, 0, 0); }
GS_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
  return init(F_INIT_FLAGS, 1, flags);
}

/* The real count is asked even when the view overrides it: its answer says whether NVML is
 * initialised (and the argument valid), as the caller would learn without the view. */
static nvmlReturn_t count(int f, unsigned int *n) {
  count_fn c = (count_fn) real(f);
  if (c == NULL) return absent();
  nvmlReturn_t rc = c(n);
  int m = mode();
  if (rc != GS_NVML_SUCCESS || m == VIEW_ALL) return rc;
  *n = m == VIEW_GRANTED ? 1 : 0;
  return GS_NVML_SUCCESS;
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *n) { return count(F_COUNT, n); }
GS_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) { return count(F_COUNT_V2, n); }

static nvmlReturn_t by_index(int f, int count_f, unsigned int index, nvmlDevice_t *device) {
  int m = mode();
  if (m == VIEW_ALL) {
    by_index_fn b = (by_index_fn) real(f);
    return b ? b(index, device) : absent();
  }
  unsigned int n = 0;
  nvmlReturn_t rc = count(count_f, &n);
  if (rc != GS_NVML_SUCCESS) return rc;
  if (device == NULL || index >= n) return GS_NVML_ERROR_INVALID_ARGUMENT;
  *device = atomic_load_explicit(&view_handle, memory_order_relaxed);
  return GS_NVML_SUCCESS;
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
  return by_index(F_BY_INDEX, F_COUNT, index, device);
}
GS_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
  return by_index(F_BY_INDEX_V2, F_COUNT_V2, index, device);
}

/* By UUID, PCI bus id or serial: the real library resolves the key (its formats, its errors);
 * the view answers only for the granted GPU. */
static nvmlReturn_t by_key(int f, const char *key, nvmlDevice_t *device) {
  by_key_fn b = (by_key_fn) real(f);
  if (b == NULL) return absent();
  if (mode() == VIEW_ALL || device == NULL) return b(key, device);
  nvmlDevice_t h = NULL;
  nvmlReturn_t rc = b(key, &h);
  if (rc != GS_NVML_SUCCESS) return rc;
  if (!is_granted(h)) return GS_NVML_ERROR_NOT_FOUND;
  *device = h;
  return GS_NVML_SUCCESS;
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
  return by_key(F_BY_UUID, uuid, device);
}
GS_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *bus, nvmlDevice_t *device) {
  return by_key(F_BY_PCI, bus, device);
}
GS_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *device) {
  return by_key(F_BY_PCI_V2, bus, device);
}
GS_EXPORT nvmlReturn_t nvmlDeviceGetHandleBySerial(const char *serial, nvmlDevice_t *device) {
  return by_key(F_BY_SERIAL, serial, device);
}

/* Compute utilisation over the pod's limit (SPEC §7); the memory controller's stays absolute. */
GS_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                     nvmlUtilization_t *utilization) {
  util_fn u = (util_fn) real(F_UTIL);
  if (u == NULL) return absent();
  nvmlReturn_t rc = u(device, utilization);
  if (rc == GS_NVML_SUCCESS && utilization != NULL && is_granted(device))
    utilization->gpu = relative(utilization->gpu);
  return rc;
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                                       nvmlProcessUtilizationSample_t *samples,
                                                       unsigned int *n,
                                                       unsigned long long lastSeen) {
  proc_util_fn p = (proc_util_fn) real(F_PROC_UTIL);
  if (p == NULL) return absent();
  nvmlReturn_t rc = p(device, samples, n, lastSeen);
  if (rc == GS_NVML_SUCCESS && samples != NULL && n != NULL && is_granted(device))
    for (unsigned int i = 0; i < *n; i++) samples[i].smUtil = relative(samples[i].smUtil);
  return rc;
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(
    nvmlDevice_t device, nvmlProcessesUtilizationInfo_t *info) {
  procs_util_info_fn p = (procs_util_info_fn) real(F_PROCS_UTIL_INFO);
  if (p == NULL) return absent();
  nvmlReturn_t rc = p(device, info);
  if (rc == GS_NVML_SUCCESS && info != NULL && info->procUtilArray != NULL && is_granted(device))
    for (unsigned int i = 0; i < info->processSamplesCount; i++)
      info->procUtilArray[i].smUtil = relative(info->procUtilArray[i].smUtil);
  return rc;
}

/* ------------------------------------------------------------------ look-ups by name
 * (dlsym on the libnvidia-ml handle: nvidia-smi and most tools dlopen NVML). A function the real
 * library lacks stays absent, so that a tool probing for it sees the driver as it is. */

static void *const wrappers[F_N] = {
  [F_INIT] = (void *) nvmlInit,
  [F_INIT_V2] = (void *) nvmlInit_v2,
  [F_INIT_FLAGS] = (void *) nvmlInitWithFlags,
  [F_COUNT] = (void *) nvmlDeviceGetCount,
  [F_COUNT_V2] = (void *) nvmlDeviceGetCount_v2,
  [F_BY_INDEX] = (void *) nvmlDeviceGetHandleByIndex,
  [F_BY_INDEX_V2] = (void *) nvmlDeviceGetHandleByIndex_v2,
  [F_BY_UUID] = (void *) nvmlDeviceGetHandleByUUID,
  [F_BY_PCI] = (void *) nvmlDeviceGetHandleByPciBusId,
  [F_BY_PCI_V2] = (void *) nvmlDeviceGetHandleByPciBusId_v2,
  [F_BY_SERIAL] = (void *) nvmlDeviceGetHandleBySerial,
  [F_UTIL] = (void *) nvmlDeviceGetUtilizationRates,
  [F_PROC_UTIL] = (void *) nvmlDeviceGetProcessUtilization,
  [F_PROCS_UTIL_INFO] = (void *) nvmlDeviceGetProcessesUtilizationInfo,
};

void *gs_nvml_wrapper(const char *name) {
  if (name == NULL || strncmp(name, "nvml", 4) != 0) return NULL;
  for (int f = 0; f < F_N; f++)
    if (strcmp(name, names[f]) == 0) return real(f) ? wrappers[f] : NULL;
  return NULL;
}

/* After fork the child makes view_lock anew: a thread of the parent may have held it. */
static void nvml_after_fork_child(void) { pthread_mutex_init(&view_lock, NULL); }
__attribute__((constructor)) static void nvml_fork_safe(void) {
  pthread_atfork(NULL, NULL, nvml_after_fork_child);
}
