/*
 * What the driver says this process holds on its GPU (SPEC §10: the pod's count is the pod's own).
 * NVML's used memory of the process, by its host PID, counts for the pod beyond what the library
 * counts itself (allocations and pools): a context's own memory, loaded modules, lazily loaded
 * code, the driver's growth. The process knows its host PID from the member (limiter.c: its PID
 * here and its start time among the member's answer). Until then, and where NVML gives no
 * per-process figure (NVML_VALUE_NOT_AVAILABLE, a refusal), a context's and a module's own memory
 * is measured around its making instead (cuda_wrappers.c): the GPU's used memory before and after,
 * which other pods' allocations and frees in between also move.
 *
 * A thread of the process takes the figure once a second (after cuInit's grant, where the pod's
 * memory limit is counted); a context or module made, an allocation, and the free memory asked
 * take it at once. Taking it is a local driver call: never a request to the data plane. Said once
 * under GPUSHARE_DEBUG when the figure comes into use, and once when the driver gives none for
 * this process.
 */
#include "gpushare.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
/* nvml.h's nvmlProcessInfo_t (the _v2 and _v3 queries) */
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
} proc_info;
typedef nvmlReturn_t (*init_fn)(void);
typedef nvmlReturn_t (*by_uuid_fn)(const char *, nvmlDevice_t *);
typedef nvmlReturn_t (*procs_fn)(nvmlDevice_t, unsigned int *, proc_info *);

#define NOT_AVAILABLE (~0ULL)
#define EVERY_MS 1000
#define MAX_PROCS 512

static pthread_mutex_t dm_mu = PTHREAD_MUTEX_INITIALIZER; /* the device, one query at a time */
static nvmlDevice_t device;
static procs_fn procs;
static int device_tried;
static _Atomic int started;
static int said_none;
static proc_info infos[MAX_PROCS]; /* under dm_mu */

/* Under dm_mu: the granted GPU's NVML handle, found once. */
static int open_device(void) {
  if (device_tried) return device != NULL;
  device_tried = 1;
  init_fn init = (init_fn)gs_real_nvml("nvmlInit_v2");
  by_uuid_fn by_uuid = (by_uuid_fn)gs_real_nvml("nvmlDeviceGetHandleByUUID");
  procs = (procs_fn)gs_real_nvml("nvmlDeviceGetComputeRunningProcesses_v3");
  if (!procs) procs = (procs_fn)gs_real_nvml("nvmlDeviceGetComputeRunningProcesses_v2");
  if (!init || !by_uuid || !procs || init() != 0 ||
      by_uuid(gs_grant_get()->uuid, &device) != 0) {
    gs_debug("memory: NVML cannot give GPU %s's processes: contexts and modules are measured "
             "around their making", gs_grant_get()->uuid);
    device = NULL;
  }
  return device != NULL;
}

int gs_driver_memory_now(void) {
  if (!gs_cfg.active || !gs_grant_known()) return 0;
  unsigned host = gs_self_host_pid();
  if (!host) return 0; /* the member has not named this process yet */
  unsigned long long used = NOT_AVAILABLE;
  int listed = 0;
  pthread_mutex_lock(&dm_mu);
  if (open_device()) {
    unsigned int n = MAX_PROCS;
    if (procs(device, &n, infos) == 0) {
      for (unsigned int i = 0; i < n && i < MAX_PROCS; i++) {
        if (infos[i].pid == host) used = infos[i].usedGpuMemory, listed = 1;
      }
    }
  }
  int say = !said_none && listed && used == NOT_AVAILABLE;
  if (say) said_none = 1;
  pthread_mutex_unlock(&dm_mu);
  if (say) {
    gs_debug("memory: NVML lists this process (host pid %u) without its memory: contexts and "
             "modules are measured around their making", host);
  }
  if (used == NOT_AVAILABLE) return 0;
  int first = !gs_mem_driver_counts();
  gs_mem_driver_figure(used);
  if (first) {
    gs_debug("memory: the driver's figure for this process (host pid %u: %llu bytes) counts from "
             "now", host, used);
  }
  return 1;
}

static void *keep(void *arg) {
  (void)arg;
  for (;;) {
    unsigned none[1];
    gs_pod_host_pids(none, 0, NULL); /* asks the member when its answer is a second old */
    gs_driver_memory_now();
    struct timespec t = {EVERY_MS / 1000, (EVERY_MS % 1000) * 1000000L};
    nanosleep(&t, NULL);
  }
  return NULL;
}

void gs_driver_memory_start(void) {
  if (!gs_cfg.active || atomic_exchange(&started, 1)) return;
  pthread_t t;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* the workload's signals are for its own threads */
  if (pthread_create(&t, &a, keep, NULL) != 0) atomic_store(&started, 0);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&a);
}

void gs_driver_memory_after_fork(void) {
  /* the child has no thread of its own yet, and its own driver state */
  pthread_mutex_init(&dm_mu, NULL);
  atomic_store(&started, 0);
  device = NULL;
  device_tried = 0;
  said_none = 0;
}
