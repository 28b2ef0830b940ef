/*
 * The NVML view (SPEC §7, §10): a process of a sharing pod sees one GPU, with its real index and
 * UUID: the GPU granted to the pod while it holds one; before (Hibernation, Ready) the GPU it would
 * get, that is a static pod's pinned GPU or else the node's first GPU, because frameworks (vLLM
 * and others) decide "is there a GPU" from nvmlDeviceGetCount() > 0 before the CUDA call that
 * raises the pod's demand. The GPU's memory is the share's (memory limit % x the GPU's), used what
 * the pod's count says; its compute utilisation is the pod's own (the samples of its processes,
 * by the host PIDs the member names, limiter.c) relative to the core limit, never the whole GPU's;
 * process lists and per-process samples show the pod's processes only.
 *
 * The view never waits on the data plane but once, briefly: nvmlInit waits up to 2 s for the pod's
 * view (a look-up on a thread of its own), and when none came (a member restarting, one that
 * accepts and does not answer) shows the GPU a share-pool pod would get, the node's first, until the
 * answer comes: a framework that decides "is there a GPU" from NVML never sees 0 for a pod that may
 * get one. Afterwards the view follows the pod in the background, looked up again at most every
 * 2 s when NVML is used, so an NVML-only process (nvidia-smi -l) sees grants come and go; a process
 * whose CUDA call took a grant shows that GPU for good (its driver runs there). The pod's host PIDs
 * (the member's, limiter.c) are refreshed the same way: an NVML call reads what was last answered.
 * In an inert library every call passes straight through.
 *
 * Device handles are the real library's: NVML's handles are stable while it stays initialised,
 * so "is this the shown GPU" is a pointer comparison with the handle found when deciding.
 */
#include "gpushare.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_LIBRARY_NOT_FOUND 12
#define NVML_ERROR_FUNCTION_NOT_FOUND 13
#define POD_PIDS 128
#define INIT_WAIT_MS 2000  /* how long nvmlInit waits for the data plane's first answer */
#define LOOK_EVERY_MS 2000 /* how often the view is looked up again, in the background */

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

typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
  unsigned int version;
  unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

/* nvmlProcessInfo_v1_t (the unversioned calls) and nvmlProcessInfo_t (_v2, _v3): pid first */
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_v2_t;

/* ------------------------------------------------------------------ the real functions */

enum {
  F_INIT, F_INIT_V2, F_INIT_FLAGS,
  F_COUNT, F_COUNT_V2,
  F_BY_INDEX, F_BY_INDEX_V2,
  F_BY_UUID, F_BY_PCI, F_BY_PCI_V2, F_BY_SERIAL,
  F_UTIL, F_PROC_UTIL, F_PROCS_UTIL_INFO,
  F_MEM, F_MEM_V2,
  F_COMPUTE, F_COMPUTE_V2, F_COMPUTE_V3,
  F_GRAPHICS, F_GRAPHICS_V2, F_GRAPHICS_V3,
  F_MPS, F_MPS_V2, F_MPS_V3,
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
  [F_MEM] = "nvmlDeviceGetMemoryInfo",
  [F_MEM_V2] = "nvmlDeviceGetMemoryInfo_v2",
  [F_COMPUTE] = "nvmlDeviceGetComputeRunningProcesses",
  [F_COMPUTE_V2] = "nvmlDeviceGetComputeRunningProcesses_v2",
  [F_COMPUTE_V3] = "nvmlDeviceGetComputeRunningProcesses_v3",
  [F_GRAPHICS] = "nvmlDeviceGetGraphicsRunningProcesses",
  [F_GRAPHICS_V2] = "nvmlDeviceGetGraphicsRunningProcesses_v2",
  [F_GRAPHICS_V3] = "nvmlDeviceGetGraphicsRunningProcesses_v3",
  [F_MPS] = "nvmlDeviceGetMPSComputeRunningProcesses",
  [F_MPS_V2] = "nvmlDeviceGetMPSComputeRunningProcesses_v2",
  [F_MPS_V3] = "nvmlDeviceGetMPSComputeRunningProcesses_v3",
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
typedef nvmlReturn_t (*mem_fn)(nvmlDevice_t, nvmlMemory_t *);
typedef nvmlReturn_t (*mem_v2_fn)(nvmlDevice_t, nvmlMemory_v2_t *);
typedef nvmlReturn_t (*procs_fn)(nvmlDevice_t, unsigned int *, void *);

/* ------------------------------------------------------------------ the view */

enum { VIEW_ALL = 0, VIEW_ONE = 1, VIEW_NONE = 2 };

/* Written handle and limits before the mode (release), so that a reader that loads the mode
 * (acquire) sees the handle and limits that go with it. */
static _Atomic int view_mode = VIEW_ALL;
static nvmlDevice_t _Atomic view_handle;
static _Atomic int view_core_limit = 100;
static _Atomic int view_memory_limit = 100;
static _Atomic int view_granted;  /* the view is this process's CUDA grant's (its driver's GPU) */
static _Atomic int view_decided;  /* NVML was initialised and a view shown */
static _Atomic int view_answered; /* the view is the data plane's answer, not the provisional one */
static _Atomic long view_looked_ms = -LOOK_EVERY_MS; /* when the last look-up began */
/* The real nvmlInit may enter the real nvmlInit_v2 through our export: decide once, outermost. */
static _Thread_local int init_depth;

/* The look-ups run on a thread of their own, one at a time: no NVML caller waits for the data
 * plane but nvmlInit, and that for INIT_WAIT_MS at most. */
static pthread_mutex_t look_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t look_cv; /* CLOCK_MONOTONIC (view_at_fork) */
static int looking;       /* a look-up thread runs */
static unsigned looks_done; /* look-ups finished, answered or not */

static int mode(void) { return atomic_load_explicit(&view_mode, memory_order_acquire); }

static long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

static void set_view(int m, nvmlDevice_t handle, int core_limit, int memory_limit, int granted) {
  atomic_store_explicit(&view_handle, handle, memory_order_relaxed);
  atomic_store_explicit(&view_core_limit, core_limit, memory_order_relaxed);
  atomic_store_explicit(&view_memory_limit, memory_limit, memory_order_relaxed);
  atomic_store(&view_granted, granted);
  atomic_store_explicit(&view_mode, m, memory_order_release);
}

static int percent(long long v) { return v >= 1 && v < 100 ? (int) v : 100; }

/* The node's first GPU as the real NVML counts them (the GPU a share-pool pod would get). */
static nvmlDevice_t first_gpu(void) {
  by_index_fn first = (by_index_fn) real(F_BY_INDEX_V2);
  if (!first) first = (by_index_fn) real(F_BY_INDEX);
  nvmlDevice_t h = NULL;
  return first && first(0, &h) == GS_NVML_SUCCESS ? h : NULL;
}

static nvmlDevice_t by_uuid_real(const char *uuid, nvmlReturn_t *rc) {
  by_key_fn by_uuid = (by_key_fn) real(F_BY_UUID);
  nvmlDevice_t h = NULL;
  *rc = by_uuid ? by_uuid(uuid, &h) : absent();
  return *rc == GS_NVML_SUCCESS ? h : NULL;
}

/* This process's CUDA grant: its driver runs on that GPU, so NVML shows it for good. */
static void show_grant(void) {
  const struct gs_grant *g = gs_grant_get();
  nvmlReturn_t rc;
  nvmlDevice_t h = by_uuid_real(g->uuid, &rc);
  if (h) {
    set_view(VIEW_ONE, h, percent(g->core_limit), percent(g->memory_limit), 1);
  } else {
    gs_say("NVML does not know the GPU granted to this pod (%s, index %d; NVML error %d), so "
           "NVML shows this process no GPU; the container must see the node's GPUs "
           "(NVIDIA_VISIBLE_DEVICES)", g->uuid, g->index, rc);
    set_view(VIEW_NONE, NULL, 100, 100, 1);
  }
}

/* Until the data plane answers (a member restarting, one that does not answer): the GPU a
 * share-pool pod would get, so that a framework that decides "is there a GPU" from NVML makes the
 * CUDA call whose demand waits for the member. Never "no GPU" for a pod that may get one. */
static void show_provisional(void) {
  if (atomic_load(&view_answered) || atomic_load(&view_granted)) return;
  nvmlDevice_t h = first_gpu();
  set_view(h ? VIEW_ONE : VIEW_NONE, h, 100, 100, 0);
}

/* The data plane's answer (no CUDA grant in this process): a pod without a share sees every GPU;
 * one Running sees its granted GPU, one pinned (static) its GPU, any other the node's first; with
 * the pod's limits. It follows the pod: an NVML-only process (nvidia-smi) sees the grant come and
 * go. */
static void show_answer(const struct gs_pod_brief *b) {
  if (atomic_load(&view_granted)) return;
  if (strcmp(b->policy, "share-pool") != 0 && strcmp(b->policy, "static") != 0) {
    set_view(VIEW_ALL, NULL, 100, 100, 0);
  } else {
    nvmlReturn_t rc = GS_NVML_SUCCESS;
    nvmlDevice_t h = b->uuid[0] ? by_uuid_real(b->uuid, &rc) : first_gpu();
    if (!h && b->uuid[0]) {
      gs_debug("NVML view: NVML does not know GPU %s (NVML error %d)", b->uuid, rc);
    }
    set_view(h ? VIEW_ONE : VIEW_NONE, h, percent(b->core), percent(b->memory), 0);
  }
  atomic_store(&view_answered, 1);
}

static void *look(void *arg) {
  (void) arg;
  struct gs_pod_brief b;
  char err[1000];
  int answered = gs_pod_brief_get(&b, err, sizeof err) == 0;
  /* the member's host PIDs of the pod, which the process lists and samples are filtered by */
  unsigned none[1];
  gs_pod_host_pids(none, 0, NULL);
  if (answered && !gs_grant_known()) show_answer(&b);
  if (!answered) gs_debug("NVML view: no answer from the data plane (%s): the view stays", err);
  pthread_mutex_lock(&look_mu);
  looking = 0;
  looks_done++;
  pthread_cond_broadcast(&look_cv);
  pthread_mutex_unlock(&look_mu);
  return NULL;
}

/* Starts a look-up unless one runs; waits for it up to wait_ms. */
static void look_up(long wait_ms) {
  pthread_mutex_lock(&look_mu);
  unsigned before = looks_done;
  if (!looking) {
    atomic_store(&view_looked_ms, now_ms());
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the workload's signals are for its threads */
    looking = pthread_create(&t, &a, look, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&a);
  }
  if (looking && wait_ms > 0) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += wait_ms / 1000;
    until.tv_nsec += (wait_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    while (looks_done == before && pthread_cond_timedwait(&look_cv, &look_mu, &until) == 0) {
    }
  }
  pthread_mutex_unlock(&look_mu);
}

/* At nvmlInit: the grant when this process holds one, else the data plane's answer if it comes
 * within INIT_WAIT_MS, else the provisional view while the look-up goes on. */
static void decide(void) {
  if (gs_grant_known()) {
    show_grant();
  } else if (gs_cfg.error[0]) {
    set_view(VIEW_NONE, NULL, 100, 100, 0); /* said by the CUDA side; no look-up */
  } else {
    look_up(INIT_WAIT_MS);
    if (!atomic_load(&view_answered) && !gs_grant_known()) show_provisional();
    if (gs_grant_known()) show_grant(); /* a CUDA call of this process took it meanwhile */
  }
  atomic_store_explicit(&view_decided, 1, memory_order_release);
  int m = mode();
  gs_debug("NVML view: %s", m == VIEW_ONE ? (atomic_load(&view_granted) ? "the granted GPU"
                                             : atomic_load(&view_answered) ? "the pod's GPU"
                                                                           : "the node's first GPU, until the data plane answers")
                            : m == VIEW_NONE ? "no GPU" : "every GPU");
}

/* The view follows the pod without an NVML caller ever waiting: once this process's CUDA grant is
 * known it is shown for good; until then the pod is looked up again in the background at most
 * every LOOK_EVERY_MS (a grant may come or go while an NVML-only tool runs), and the pod's host
 * PIDs are kept as fresh. */
static void follow(void) {
  if (!atomic_load_explicit(&view_decided, memory_order_acquire)) return;
  if (gs_grant_known()) {
    if (!atomic_load(&view_granted)) show_grant();
    if (now_ms() - atomic_load(&view_looked_ms) >= LOOK_EVERY_MS) look_up(0);
    return;
  }
  if (now_ms() - atomic_load(&view_looked_ms) >= LOOK_EVERY_MS) look_up(0);
}

/* A thread of the parent may have held look_mu at a fork; its look-up thread is not the child's. */
static void view_after_fork(void) {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  look_mu = fresh;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&look_cv, &ca);
  pthread_condattr_destroy(&ca);
  looking = 0;
}

__attribute__((constructor)) static void view_at_fork(void) {
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&look_cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_atfork(NULL, NULL, view_after_fork);
}

static int is_shown(nvmlDevice_t d) {
  follow();
  return d != NULL && mode() == VIEW_ONE &&
         d == atomic_load_explicit(&view_handle, memory_order_relaxed);
}

static unsigned int relative(unsigned int absolute) {
  unsigned long long limit = (unsigned long long) atomic_load_explicit(&view_core_limit,
                                                                        memory_order_relaxed);
  unsigned long long v = (unsigned long long) absolute * 100ULL / limit;
  return v > 100 ? 100 : (unsigned int) v;
}

/* The share of `total` the memory limit gives, as state.c computes the pod's limit. */
static unsigned long long share_of(unsigned long long total) {
  unsigned long long pct = (unsigned long long) atomic_load(&view_memory_limit);
  return total / 100 * pct + total % 100 * pct / 100;
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
  follow();
  int m = mode();
  if (rc != GS_NVML_SUCCESS || m == VIEW_ALL) return rc;
  *n = m == VIEW_ONE ? 1 : 0;
  return GS_NVML_SUCCESS;
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *n) { return count(F_COUNT, n); }
GS_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) { return count(F_COUNT_V2, n); }

static nvmlReturn_t by_index(int f, int count_f, unsigned int index, nvmlDevice_t *device) {
  follow();
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
  follow();
  if (mode() == VIEW_ALL || device == NULL) return b(key, device);
  nvmlDevice_t h = NULL;
  nvmlReturn_t rc = b(key, &h);
  if (rc != GS_NVML_SUCCESS) return rc;
  if (!is_shown(h)) return GS_NVML_ERROR_NOT_FOUND;
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

/* ------------------------------------------------------------------ the pod's use */

/* The pod's processes as NVML names them (limiter.c: the member's host PIDs, else its own). */
struct pod_pids {
  int n;
  unsigned pid[POD_PIDS];
};

static void pod_pids(struct pod_pids *p) { p->n = gs_pod_nvml_pids(p->pid, POD_PIDS, 0); }

static int of_pod(const struct pod_pids *p, unsigned pid) {
  for (int i = 0; i < p->n; i++)
    if (p->pid[i] == pid && pid != 0) return 1;
  return 0;
}

/* The pod's SM percent of the whole GPU: its processes' newest samples added up; where NVML does
 * not give per-process samples, the member's figure; rc is the per-process query's error when
 * neither can say. */
static nvmlReturn_t pod_use(nvmlDevice_t device, unsigned int *percent_out) {
  proc_util_fn p = (proc_util_fn) real(F_PROC_UTIL);
  nvmlProcessUtilizationSample_t samples[256];
  unsigned int n = sizeof samples / sizeof samples[0];
  nvmlReturn_t rc = p ? p(device, samples, &n, 0) : absent();
  if (rc == GS_NVML_ERROR_NOT_FOUND) {
    *percent_out = 0; /* nothing sampled: nothing ran */
    return GS_NVML_SUCCESS;
  }
  if (rc != GS_NVML_SUCCESS) {
    unsigned none[1];
    int sm = -1;
    gs_pod_host_pids_known(none, 0, &sm);
    if (sm < 0) return rc;
    *percent_out = (unsigned int) sm;
    return GS_NVML_SUCCESS;
  }
  struct pod_pids pod;
  pod_pids(&pod);
  unsigned long long newest[POD_PIDS] = {0};
  unsigned int sm[POD_PIDS] = {0};
  for (unsigned int i = 0; i < n; i++) {
    for (int k = 0; k < pod.n; k++) {
      if (samples[i].pid != pod.pid[k] || samples[i].timeStamp < newest[k]) continue;
      newest[k] = samples[i].timeStamp;
      sm[k] = samples[i].smUtil;
    }
  }
  unsigned int sum = 0;
  for (int k = 0; k < pod.n; k++) sum += sm[k];
  *percent_out = sum > 100 ? 100 : sum;
  return GS_NVML_SUCCESS;
}

/* Compute utilisation: the pod's own, over its core limit (SPEC §7); the memory controller's
 * stays the GPU's (NVML does not give it per process). */
GS_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                     nvmlUtilization_t *utilization) {
  util_fn u = (util_fn) real(F_UTIL);
  if (u == NULL) return absent();
  nvmlReturn_t rc = u(device, utilization);
  if (rc == GS_NVML_SUCCESS && utilization != NULL && is_shown(device)) {
    unsigned int own = 0;
    rc = pod_use(device, &own);
    if (rc == GS_NVML_SUCCESS) utilization->gpu = relative(own);
  }
  return rc;
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                                       nvmlProcessUtilizationSample_t *samples,
                                                       unsigned int *n,
                                                       unsigned long long lastSeen) {
  proc_util_fn p = (proc_util_fn) real(F_PROC_UTIL);
  if (p == NULL) return absent();
  nvmlReturn_t rc = p(device, samples, n, lastSeen);
  if (rc != GS_NVML_SUCCESS || samples == NULL || n == NULL || !is_shown(device)) return rc;
  struct pod_pids pod;
  pod_pids(&pod);
  unsigned int kept = 0;
  for (unsigned int i = 0; i < *n; i++) {
    if (!of_pod(&pod, samples[i].pid)) continue;
    samples[kept] = samples[i];
    samples[kept++].smUtil = relative(samples[i].smUtil);
  }
  *n = kept;
  return kept ? GS_NVML_SUCCESS : GS_NVML_ERROR_NOT_FOUND; /* as NVML: no sample of interest */
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(
    nvmlDevice_t device, nvmlProcessesUtilizationInfo_t *info) {
  procs_util_info_fn p = (procs_util_info_fn) real(F_PROCS_UTIL_INFO);
  if (p == NULL) return absent();
  nvmlReturn_t rc = p(device, info);
  if (rc != GS_NVML_SUCCESS || info == NULL || info->procUtilArray == NULL || !is_shown(device))
    return rc;
  struct pod_pids pod;
  pod_pids(&pod);
  unsigned int kept = 0;
  for (unsigned int i = 0; i < info->processSamplesCount; i++) {
    if (!of_pod(&pod, info->procUtilArray[i].pid)) continue;
    info->procUtilArray[kept] = info->procUtilArray[i];
    info->procUtilArray[kept++].smUtil = relative(info->procUtilArray[i].smUtil);
  }
  info->processSamplesCount = kept;
  return rc;
}

/* The shown GPU's memory is the share's: its total the limit, used what the pod's count says
 * (memory.c; 0 in a process that keeps none), free the rest. */
static void share_memory(unsigned long long *total, unsigned long long *free_bytes,
                         unsigned long long *used) {
  unsigned long long t = share_of(*total), u = gs_mem_used();
  if (u > t) u = t;
  *total = t;
  *used = u;
  *free_bytes = t - u;
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
  mem_fn m = (mem_fn) real(F_MEM);
  if (m == NULL) return absent();
  nvmlReturn_t rc = m(device, memory);
  if (rc == GS_NVML_SUCCESS && memory != NULL && is_shown(device))
    share_memory(&memory->total, &memory->free, &memory->used);
  return rc;
}

GS_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
  mem_v2_fn m = (mem_v2_fn) real(F_MEM_V2);
  if (m == NULL) return absent();
  nvmlReturn_t rc = m(device, memory);
  if (rc == GS_NVML_SUCCESS && memory != NULL && is_shown(device)) {
    share_memory(&memory->total, &memory->free, &memory->used);
    memory->reserved = 0;
  }
  return rc;
}

/* The process lists of the shown GPU: the pod's processes only, moved to the front. */
static nvmlReturn_t processes(int f, size_t size, nvmlDevice_t device, unsigned int *n,
                              void *infos) {
  procs_fn p = (procs_fn) real(f);
  if (p == NULL) return absent();
  nvmlReturn_t rc = p(device, n, infos);
  if (rc != GS_NVML_SUCCESS || n == NULL || infos == NULL || !is_shown(device)) return rc;
  struct pod_pids pod;
  pod_pids(&pod);
  unsigned int kept = 0;
  for (unsigned int i = 0; i < *n; i++) {
    char *from = (char *) infos + (size_t) i * size;
    unsigned int pid;
    memcpy(&pid, from, sizeof pid);
    if (!of_pod(&pod, pid)) continue;
    if (kept != i) memmove((char *) infos + (size_t) kept * size, from, size);
    kept++;
  }
  *n = kept;
  return rc;
}

#define PROCESSES(name, f, type)                                                              \
  GS_EXPORT nvmlReturn_t name(nvmlDevice_t device, unsigned int *n, type *infos) {           \
    return processes(f, sizeof(type), device, n, infos);                                      \
  }
PROCESSES(nvmlDeviceGetComputeRunningProcesses, F_COMPUTE, nvmlProcessInfo_v1_t)
PROCESSES(nvmlDeviceGetComputeRunningProcesses_v2, F_COMPUTE_V2, nvmlProcessInfo_v2_t)
PROCESSES(nvmlDeviceGetComputeRunningProcesses_v3, F_COMPUTE_V3, nvmlProcessInfo_v2_t)
PROCESSES(nvmlDeviceGetGraphicsRunningProcesses, F_GRAPHICS, nvmlProcessInfo_v1_t)
PROCESSES(nvmlDeviceGetGraphicsRunningProcesses_v2, F_GRAPHICS_V2, nvmlProcessInfo_v2_t)
PROCESSES(nvmlDeviceGetGraphicsRunningProcesses_v3, F_GRAPHICS_V3, nvmlProcessInfo_v2_t)
PROCESSES(nvmlDeviceGetMPSComputeRunningProcesses, F_MPS, nvmlProcessInfo_v1_t)
PROCESSES(nvmlDeviceGetMPSComputeRunningProcesses_v2, F_MPS_V2, nvmlProcessInfo_v2_t)
PROCESSES(nvmlDeviceGetMPSComputeRunningProcesses_v3, F_MPS_V3, nvmlProcessInfo_v2_t)

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
  [F_MEM] = (void *) nvmlDeviceGetMemoryInfo,
  [F_MEM_V2] = (void *) nvmlDeviceGetMemoryInfo_v2,
  [F_COMPUTE] = (void *) nvmlDeviceGetComputeRunningProcesses,
  [F_COMPUTE_V2] = (void *) nvmlDeviceGetComputeRunningProcesses_v2,
  [F_COMPUTE_V3] = (void *) nvmlDeviceGetComputeRunningProcesses_v3,
  [F_GRAPHICS] = (void *) nvmlDeviceGetGraphicsRunningProcesses,
  [F_GRAPHICS_V2] = (void *) nvmlDeviceGetGraphicsRunningProcesses_v2,
  [F_GRAPHICS_V3] = (void *) nvmlDeviceGetGraphicsRunningProcesses_v3,
  [F_MPS] = (void *) nvmlDeviceGetMPSComputeRunningProcesses,
  [F_MPS_V2] = (void *) nvmlDeviceGetMPSComputeRunningProcesses_v2,
  [F_MPS_V3] = (void *) nvmlDeviceGetMPSComputeRunningProcesses_v3,
};

void *gs_nvml_wrapper(const char *name) {
  if (name == NULL || strncmp(name, "nvml", 4) != 0) return NULL;
  for (int f = 0; f < F_N; f++)
    if (strcmp(name, names[f]) == 0) return real(f) ? wrappers[f] : NULL;
  return NULL;
}
