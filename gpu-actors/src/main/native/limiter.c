/*
 * The compute limit (SPEC §10, issue 26): a pod's share of its GPU's time is kept at or under its
 * core limit when the node runs no MPS (the pod view's computeLimit.mode is "library").
 *
 * A token bucket, pod-wide, in a small shared file beside the memory count ("limit" in the pod's
 * directory, pod_files.c): a kernel launch takes one token with one atomic
 * fetch-and-subtract and goes on while the bucket held one; else it waits (the slow path sleeps in
 * 1 ms steps, adding the time to the pod's held-back total). One process of the pod (whichever
 * holds the file's controller lock, taken over by another when it exits) refills the bucket every
 * 10 ms at the pod's rate and, every period (100 ms), compares the pod's measured utilisation
 * (NVML's per-process samples of the pod's processes, summed) with its aim (the core limit) and
 * corrects the rate:
 *
 *   rate <- rate * (aim / measured)^(1/2), the factor clamped to [1/2, 2],
 *
 * when the pod is over its aim, or under it while its launches were held back (in this period and
 * the one before: a window that still holds idle time is no reason) and the bucket is still low at
 * the period's end (the limit is what stops it); a pod under its aim that was not held, or that
 * stopped launching in the period (its bucket filled up again: it went idle), keeps its rate, so
 * going idle never earns a pod a burst. The refill carries the fraction of a token a tick does not
 * give, so that rates under one launch a tick (long kernels, graphs) hold too. While launches are
 * held the pod's utilisation is the rate times the GPU time of a launch, u = k r: the measured
 * window is the period the rate applied to, so the log-error e = ln(u / aim) obeys e' = e / 2 and
 * halves every period; from 100 % down to a limit of 30 (e = 1.2) it is inside ±5 points
 * (|e| < 0.15) after 3 periods, about 0.3 s (the factor's clamp adds none here: the first step is
 * 0.55), and a change of the pod's kernels (k) is corrected as fast. The bucket holds at most 50 ms
 * of the rate, so a pod that comes back from idle runs over its aim for at most that long, inside
 * one sampling window. A pod whose limit is 100 is never limited (its launches never touch the
 * bucket).
 *
 * Which samples are the pod's: NVML names processes by their host PIDs and the driver knows no PID
 * namespaces, so in a pod without hostPID none of NVML's PIDs is a getpid() of the pod. The member
 * maps host PIDs to pods through their cgroups; the controller asks it (data plane GET …/processes)
 * once a second, off every CUDA call's path, and matches NVML's samples against that list. Until
 * the member names any (a new pod, before its first telemetry sample) and where it cannot say (an
 * older member), the pod's own PIDs are matched: right where the pod shares the host's PID
 * namespace, and the blind case below otherwise.
 *
 * Every way NVML can fail has one outcome, said once on stderr when it first applies:
 *
 *   NVML answer                          outcome
 *   SUCCESS, the pod's samples           measured: the rate follows the pod's use (above)
 *   NOT_FOUND (no sample since last)     0 % when the pod was not held; when it was, a missing
 *                                        sample: the rate stays; 1 s of it is the blind case
 *   SUCCESS, but none of the pod's PIDs  blind (its PIDs are not known): after 1 s while held,
 *     while its launches were held         measured through the member's figure (below)
 *   NO_PERMISSION, NOT_SUPPORTED         the per-process query is not allowed in this container:
 *                                        measured through the member's figure
 *   library or function missing, the     NVML cannot measure this GPU: the member's figure
 *     GPU not found by its UUID
 *   UNINITIALIZED                        NVML was shut down under the library (the workload's
 *                                        nvmlShutdown): initialised again at the next period; if
 *                                        that fails, as a missing library
 *   GPU_IS_LOST                          unlimited: the GPU is gone (the member revokes the pod)
 *   any other error (TIMEOUT, UNKNOWN…)  the last rate is kept for 1 s, then the member's figure
 *
 * The member's figure is the pod's SM percent in the member's last telemetry sample (the same
 * answer as the PIDs): the rate is corrected by it when it changes, or every 5 s, as slowly as the
 * member samples. Where the member has no figure either, the pod is not limited (rather than held
 * at a rate nothing measures), and that is said.
 */
#include "gpushare.h"

#include <fcntl.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LIMIT_STAMP ((uint64_t)0x67736c6d << 32 | 1) /* "gslm", layout version 1 */
#define LIMIT_PIDS 128
#define TICK_MS 10
#define PERIOD_MS 100
#define REPORT_MS 5000
#define DEADBAND 1.5     /* points of utilisation inside which the rate is left alone */
#define BURST_MS 50      /* the bucket holds at most this much of the rate */
#define RATE_MIN 1.0     /* launches per second */
#define RATE_MAX 1.0e9
#define RATE_START 1000.0

struct limit_file {
  _Atomic uint64_t stamp;
  _Atomic int64_t tokens;          /* launches that may start now; at or below 0: wait */
  _Atomic uint64_t rate_milli;     /* refill rate, launches per second x 1000 */
  _Atomic uint64_t held_ns;        /* the pod's launches' time spent waiting, all together */
  _Atomic uint64_t waits;          /* launches that had to wait */
  _Atomic uint32_t measured_centi; /* the last measured utilisation, percent x 100 */
  _Atomic int aim;                 /* the percent the controller aims at; 0: not limited */
  _Atomic int pid[LIMIT_PIDS];     /* the pod's GPU processes (as NVML names them) */
};

static struct limit_file local_limit; /* when the shared file cannot be had: this process alone */
static struct limit_file *lf;
static int lf_fd = -1;
_Atomic(int64_t) *gs_limit_tokens = &local_limit.tokens;
static _Atomic int aim;         /* this process's aim: 0 = unlimited */
static _Atomic int running;     /* the controller thread was started */
static int my_pid_slot = -1;
static pthread_mutex_t limit_mu = PTHREAD_MUTEX_INITIALIZER;

#define PIDS_EVERY_MS 1000   /* how often the member is asked for the pod's host PIDs */
#define MEMBER_EVERY_MS 5000 /* the member's figure, when it does not change, is used this often */
#define FAIL_PERIODS 10      /* periods (1 s) a transient NVML error keeps the last rate */

/* ------------------------------------------------------------------ NVML, the real one */

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil, memUtil, encUtil, decUtil;
} sample_t;
typedef nvmlReturn_t (*init_fn)(void);
typedef nvmlReturn_t (*by_uuid_fn)(const char *, nvmlDevice_t *);
typedef nvmlReturn_t (*proc_util_fn)(nvmlDevice_t, sample_t *, unsigned int *, unsigned long long);
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NO_PERMISSION 4
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_GPU_IS_LOST 15

static long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* ------------------------------------------------------------------ the shared file */

static void open_file(void) {
  char why[1400];
  void *m = NULL;
  int fd = gs_pod_file_open("limit", sizeof(struct limit_file), LIMIT_STAMP, &m, why, sizeof why);
  if (fd < 0) {
    gs_say("%s: this process is limited alone", why);
    lf = &local_limit;
    return;
  }
  lf = m;
  lf_fd = fd;
  uint64_t zero = 0;
  atomic_compare_exchange_strong(&lf->stamp, &zero, LIMIT_STAMP);
}

/* The controller's lock: byte 0 of the file, held by one process of the pod at a time. */
static int try_control(void) {
  if (lf_fd < 0) return 1;
  struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
  return fcntl(lf_fd, F_SETLK, &l) == 0;
}

/* A pid slot's owner holds a record lock on the slot's bytes (as memory.c's slots): the kernel
 * drops it however the process ends, so "is the owner alive" holds across the pod's containers,
 * which need not share a PID namespace (kill(pid, 0) would ask another namespace's process). */
static int pid_lock(int i, short type, int cmd) {
  if (lf_fd < 0) return 0; /* this process alone */
  struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_len = (off_t)sizeof lf->pid[0],
                    .l_start = (off_t)(GS_POD_FILE_HEADER + offsetof(struct limit_file, pid) +
                                       (size_t)i * sizeof lf->pid[0])};
  if (fcntl(lf_fd, cmd, &l) != 0) return -1;
  return cmd == F_GETLK && l.l_type != F_UNLCK;
}

static void register_pid(void) {
  int pid = (int)getpid();
  for (int i = 0; i < LIMIT_PIDS; i++) {
    if (pid_lock(i, F_WRLCK, F_SETLK) != 0) continue; /* a live process owns it */
    atomic_store(&lf->pid[i], pid);                    /* free, or its owner is gone */
    my_pid_slot = i;
    return;
  }
}

/* Slots whose owner is gone (its lock dropped), emptied. A new owner locks before it writes its
 * pid, so the compare-and-swap of the gone owner's pid never empties a slot taken meanwhile. */
static void sweep_pids(void) {
  for (int i = 0; i < LIMIT_PIDS; i++) {
    int pid = atomic_load(&lf->pid[i]);
    if (pid > 0 && i != my_pid_slot && pid_lock(i, F_WRLCK, F_GETLK) == 0)
      atomic_compare_exchange_strong(&lf->pid[i], &pid, 0);
  }
}

/* ------------------------------------------------------------------ the pod's host PIDs */

/* The member's answer, kept: pids_mu guards it and is never held across a request (an NVML call
 * reads it; only one thread asks at a time, pids_asking). */
static pthread_mutex_t pids_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int pids_asking;
static long pids_at_ms = -PIDS_EVERY_MS;
static int pids_n = -1, pids_sm = -1;
static unsigned pids_host[LIMIT_PIDS];
/* how each of those processes knows itself (its own namespace's PID, its start time); -1: unknown */
static long long pids_ns[LIMIT_PIDS], pids_start[LIMIT_PIDS];

/* No lock held. An answer replaces what was known (a refusal, an older member's 404: -1); no
 * answer in time keeps it, as the PIDs seldom change between two asks. The short timeout bounds
 * how long the controller's refill stands still on a member that does not answer (the member is on
 * the node: its answers take a millisecond or so). */
static void ask_member(void) {
  char path[600], err[200];
  gs_pod_path(path, sizeof path, "/processes");
  struct gs_response r;
  int n = -1, sm = -1;
  unsigned got_pids[LIMIT_PIDS];
  long long ns[LIMIT_PIDS], start[LIMIT_PIDS];
  if (gs_http("GET", path, 500, &r, err, sizeof err) == 0) {
    long long got[LIMIT_PIDS], pct = -1;
    int k = r.status == 200 ? gs_json_longs(r.body, r.len, "hostPids", got, LIMIT_PIDS) : -1;
    if (k >= 0) {
      n = k < LIMIT_PIDS ? k : LIMIT_PIDS;
      for (int i = 0; i < n; i++) got_pids[i] = (unsigned)got[i];
      /* an older member says nothing of them: unknown */
      int kn = gs_json_longs(r.body, r.len, "nsPids", ns, LIMIT_PIDS);
      int ks = gs_json_longs(r.body, r.len, "startTimes", start, LIMIT_PIDS);
      for (int i = 0; i < n; i++) {
        if (kn != k || ks != k) ns[i] = start[i] = -1;
      }
      if (gs_json_long(r.body, r.len, "smPercent", &pct) == 1 && pct >= 0 && pct <= 100)
        sm = (int)pct;
    } else {
      gs_debug("the member's processes of the pod: HTTP %d", r.status);
    }
    free(r.body);
  } else {
    gs_debug("the member's processes of the pod: %s", err);
    return;
  }
  pthread_mutex_lock(&pids_mu);
  pids_n = n;
  pids_sm = sm;
  for (int i = 0; i < n; i++) {
    pids_host[i] = got_pids[i];
    pids_ns[i] = ns[i];
    pids_start[i] = start[i];
  }
  pthread_mutex_unlock(&pids_mu);
}

/* This process's start time in clock ticks after boot (/proc/self/stat, field 22); -1 unknown. */
static _Atomic long long own_start_cached = -1; /* a forked child starts later: reset there */

static long long own_start(void) {
  long long t = atomic_load(&own_start_cached);
  if (t >= 0) return t;
  char buf[1024];
  int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  for (int field = 2; p && field < 22; field++) p = strchr(p + 1, ' ');
  if (!p) return -1;
  t = strtoll(p + 1, NULL, 10);
  atomic_store(&own_start_cached, t);
  return t;
}

unsigned gs_self_host_pid(void) {
  long long start = own_start();
  long long me = (long long)getpid();
  unsigned host = 0;
  pthread_mutex_lock(&pids_mu);
  for (int i = 0; i < pids_n && start >= 0; i++) {
    if (pids_ns[i] == me && pids_start[i] == start) host = pids_host[i];
  }
  pthread_mutex_unlock(&pids_mu);
  return host;
}

int gs_pod_host_pids_known(unsigned *pids, int max, int *sm_percent) {
  pthread_mutex_lock(&pids_mu);
  int n = pids_n;
  for (int i = 0; i < n && i < max; i++) pids[i] = pids_host[i];
  if (sm_percent) *sm_percent = pids_sm;
  pthread_mutex_unlock(&pids_mu);
  return n;
}

int gs_pod_host_pids(unsigned *pids, int max, int *sm_percent) {
  long t = now_ms();
  pthread_mutex_lock(&pids_mu);
  int stale = t - pids_at_ms >= PIDS_EVERY_MS;
  if (stale) pids_at_ms = t;
  pthread_mutex_unlock(&pids_mu);
  if (stale && !atomic_exchange(&pids_asking, 1)) {
    ask_member();
    atomic_store(&pids_asking, 0);
  }
  return gs_pod_host_pids_known(pids, max, sm_percent);
}

int gs_pod_nvml_pids(unsigned *pids, int max, int ask) {
  int n = ask ? gs_pod_host_pids(pids, max, NULL) : gs_pod_host_pids_known(pids, max, NULL);
  if (n > 0) return n < max ? n : max;
  n = 0;
  struct limit_file *f = lf;
  if (f == NULL) {
    if (max > 0) pids[n++] = (unsigned)getpid();
    return n;
  }
  for (int i = 0; i < LIMIT_PIDS && n < max; i++) {
    int pid = atomic_load(&f->pid[i]);
    if (pid > 0) pids[n++] = (unsigned)pid;
  }
  return n;
}

static int in(const unsigned *set, int n, unsigned pid) {
  for (int i = 0; i < n; i++)
    if (set[i] == pid && pid != 0) return 1;
  return 0;
}

/* ------------------------------------------------------------------ measuring */

struct meter {
  int ready;
  int open_rc; /* why it is not ready: the NVML error, or -1 for a missing library or function */
  nvmlDevice_t device;
  proc_util_fn proc_util;
  unsigned long long last_seen;
  sample_t samples[256];
  unsigned pids[LIMIT_PIDS];
};

static int meter_open(struct meter *m) {
  if (m->ready) return 1;
  init_fn init = (init_fn)gs_real_nvml("nvmlInit_v2");
  by_uuid_fn by_uuid = (by_uuid_fn)gs_real_nvml("nvmlDeviceGetHandleByUUID");
  m->proc_util = (proc_util_fn)gs_real_nvml("nvmlDeviceGetProcessUtilization");
  const struct gs_grant *g = gs_grant_get();
  m->open_rc = -1;
  if (!init || !by_uuid || !m->proc_util || !g) return 0;
  nvmlReturn_t rc = init();
  if (rc == 0) rc = by_uuid(g->uuid, &m->device);
  if (rc != 0) {
    m->open_rc = rc == NVML_ERROR_GPU_IS_LOST ? rc : -1;
    return 0;
  }
  m->ready = 1;
  return 1;
}

/* What one period's look at NVML found. */
struct measured {
  double u;    /* the pod's utilisation in percent; -1 when NVML did not say */
  int rc;      /* NVML's answer (0, or the error); -1: NVML cannot be used at all */
  int matched; /* samples of the pod's processes were among them */
  int others;  /* samples of other processes were */
};

/* The pod's utilisation of its GPU since the last call. */
static struct measured measure(struct meter *m) {
  struct measured r = {-1, 0, 0, 0};
  if (!meter_open(m)) {
    r.rc = m->open_rc;
    return r;
  }
  unsigned int n = sizeof m->samples / sizeof m->samples[0];
  r.rc = m->proc_util(m->device, m->samples, &n, m->last_seen);
  if (r.rc == NVML_ERROR_NOT_FOUND) r.u = 0; /* no process sampled since: the pod ran nothing */
  if (r.rc == NVML_ERROR_UNINITIALIZED) m->ready = 0; /* shut down under us: again next period */
  if (r.rc != 0) return r;
  int pods = gs_pod_nvml_pids(m->pids, LIMIT_PIDS, 1);
  double sum = 0;
  unsigned long long newest = m->last_seen;
  for (unsigned int i = 0; i < n; i++) {
    if (m->samples[i].timeStamp > newest) newest = m->samples[i].timeStamp;
    if (in(m->pids, pods, m->samples[i].pid)) {
      sum += m->samples[i].smUtil;
      r.matched = 1;
    } else {
      r.others = 1;
    }
  }
  m->last_seen = newest;
  r.u = sum > 100 ? 100 : sum;
  return r;
}

/* ------------------------------------------------------------------ the outcomes, said once */

enum outcome { O_MEASURED, O_MEMBER, O_UNLIMITED, O_KEPT };
enum why { W_NONE, W_BLIND, W_NO_PERMISSION, W_NO_NVML, W_LOST, W_ERROR };

/* Said once per cause, with the outcome it had then: measured through the member's figure when
 * `member`, else not limited. */
static void say_once(enum why w, int rc, int member) {
  static unsigned said; /* the controller thread's alone */
  if (w == W_NONE || (said & 1u << w)) return;
  said |= 1u << w;
  char cause[sizeof gs_cfg.ns + sizeof gs_cfg.name + 200];
  const char *ns = gs_cfg.ns, *name = gs_cfg.name;
  switch (w) {
    case W_BLIND:
      snprintf(cause, sizeof cause, "NVML reports none of pod %s/%s's processes (it names them by "
               "host PIDs, and the member has not named them)", ns, name);
      break;
    case W_NO_PERMISSION:
      snprintf(cause, sizeof cause, "NVML does not give this container pod %s/%s's per-process "
               "use (NVML error %d)", ns, name, rc);
      break;
    case W_NO_NVML:
      snprintf(cause, sizeof cause, "NVML cannot measure pod %s/%s's GPU (libnvidia-ml.so.1, or "
               "its GPU by UUID, not found)", ns, name);
      break;
    case W_ERROR:
      snprintf(cause, sizeof cause, "NVML answered error %d for pod %s/%s's use for 1 s (the last "
               "rate was kept meanwhile)", rc, ns, name);
      break;
    case W_LOST:
      gs_say("compute limit: NVML says pod %s/%s's GPU is lost: the pod's compute is not limited "
             "here", ns, name);
      return;
    default:
      return;
  }
  if (member)
    gs_say("compute limit: %s: its use is measured through the member's figure", cause);
  else
    gs_say("compute limit: %s, and the member has no figure of it either: the pod's compute is "
           "not limited here until one of them measures it", cause);
}

/* ------------------------------------------------------------------ reporting */

static void report(void) {
  char path[600], body[200];
  gs_pod_path(path, sizeof path, "/compute");
  double held = (double)atomic_load(&lf->held_ns) / 1e9;
  snprintf(body, sizeof body, "{\"aimPercent\":%d,\"measuredPercent\":%.1f,\"heldSeconds\":%.3f}",
           atomic_load(&aim), atomic_load(&lf->measured_centi) / 100.0, held);
  struct gs_response r;
  char err[200];
  if (gs_http_body("POST", path, body, 5000, &r, err, sizeof err) == 0) free(r.body);
}

/* ------------------------------------------------------------------ the controller */

/* The square root (the gain of 1/2), without libm: Newton's iteration, x > 0. */
static double root(double x) {
  double r = x > 1 ? x : 1;
  for (int i = 0; i < 30; i++) r = 0.5 * (r + x / r);
  return r;
}

static void *controller(void *arg) {
  (void)arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL); /* the workload's signals are for its own threads */
  struct meter m;
  memset(&m, 0, sizeof m);
  int controlling = 0;
  long last_tick = now_ms(), last_period = last_tick, last_report = last_tick;
  uint64_t waits_before = atomic_load(&lf->waits);
  int blind = 0, failing = 0, member_last = -1;
  double owed = 0; /* tokens earned but not yet given, a fraction of one */
  int held_before = 0;
  long member_at = 0;
  for (;;) {
    struct timespec pause = {0, TICK_MS * 1000000L};
    nanosleep(&pause, NULL);
    int a = atomic_load(&aim);
    if (a <= 0 || a >= 100) continue;
    if (!controlling) {
      controlling = try_control();
      if (!controlling) continue;
      atomic_store(&lf->aim, a);
      if (atomic_load(&lf->rate_milli) == 0)
        atomic_store(&lf->rate_milli, (uint64_t)(RATE_START * 1000));
      measure(&m); /* starts NVML's window here */
      last_tick = last_period = now_ms();
      owed = 0;
      waits_before = atomic_load(&lf->waits);
    }
    long t = now_ms();
    double rate = atomic_load(&lf->rate_milli) / 1000.0;
    /* refill */
    double cap = rate * BURST_MS / 1000.0;
    if (cap < 1) cap = 1;
    /* the fraction of a token a tick does not give is carried: at rates under 1 per tick (long
     * kernels, graphs) rounding each tick would give a launch every tick, whatever the rate */
    owed += rate * (double)(t - last_tick) / 1000.0;
    last_tick = t;
    int64_t add = (int64_t)owed;
    if (add > 0) {
      owed -= (double)add;
      int64_t cur = atomic_load(&lf->tokens);
      int64_t want;
      /* a refill that comes late (this thread was not scheduled) may fill more than the cap:
       * the time it stood still is GPU time the pod was owed, not a burst it saved up */
      int64_t top = add > (int64_t)cap ? add : (int64_t)cap;
      do {
        want = cur + add;
        if (want > top) want = top;
        if (want < cur) want = cur; /* never take back what a launch gave back */
      } while (!atomic_compare_exchange_weak(&lf->tokens, &cur, want));
    }
    if (t - last_period >= PERIOD_MS) {
      last_period = t;
      struct measured got = measure(&m);
      uint64_t waits = atomic_load(&lf->waits);
      int held = waits != waits_before;
      waits_before = waits;
      double u = got.u;
      /* the table in this file's opening comment, case by case */
      enum outcome o = O_MEASURED;
      enum why w = W_NONE;
      if (got.rc == 0 || got.rc == NVML_ERROR_NOT_FOUND) {
        failing = 0;
        /* held, yet nothing of the pod's: a missing sample, or PIDs that are not the pod's */
        blind = held && !got.matched ? blind + 1 : 0;
        if (blind >= 10) o = O_MEMBER, w = W_BLIND;
        else if (held && !got.matched) u = -1;
      } else if (got.rc == NVML_ERROR_NO_PERMISSION || got.rc == NVML_ERROR_NOT_SUPPORTED) {
        o = O_MEMBER, w = W_NO_PERMISSION;
      } else if (got.rc == NVML_ERROR_GPU_IS_LOST) {
        o = O_UNLIMITED, w = W_LOST;
      } else if (got.rc < 0) {
        o = O_MEMBER, w = W_NO_NVML;
      } else if (got.rc == NVML_ERROR_UNINITIALIZED) {
        o = O_KEPT; /* initialised again at the next period (measure) */
      } else {
        o = ++failing >= FAIL_PERIODS ? O_MEMBER : O_KEPT;
        if (o == O_MEMBER) w = W_ERROR;
      }
      if (o == O_MEMBER) {
        int sm = -1;
        unsigned none[1];
        gs_pod_host_pids(none, 0, &sm);
        say_once(w, got.rc, sm >= 0);
        if (sm < 0) {
          o = O_UNLIMITED;
        } else if (sm != member_last || t - member_at >= MEMBER_EVERY_MS) {
          u = sm, member_last = sm, member_at = t;
        } else {
          u = -1; /* the member's last figure was used already */
        }
      }
      if (o != O_MEMBER) say_once(w, got.rc, 0);
      if (o == O_KEPT) u = -1;
      if (o == O_UNLIMITED) {
        atomic_store(&lf->rate_milli, (uint64_t)(RATE_MAX * 1000));
        u = -1;
      }
      if (u >= 0) {
        atomic_store(&lf->measured_centi, (uint32_t)(u * 100));
        double factor = 1;
        if (u > a + DEADBAND) {
          factor = root(a / u);
        } else if (held && held_before && atomic_load(&lf->tokens) < (int64_t)(cap / 2) &&
                   u < a - DEADBAND) {
          /* held in the period before too: a pod back from idle is measured over a window that
           * still holds its idle time, which is no reason to raise its rate */
          factor = root(a / (u < 1 ? 1 : u));
        }
        if (factor < 0.5) factor = 0.5;
        if (factor > 2) factor = 2;
        rate *= factor;
        if (rate < RATE_MIN) rate = RATE_MIN;
        if (rate > RATE_MAX) rate = RATE_MAX;
        atomic_store(&lf->rate_milli, (uint64_t)(rate * 1000));
        gs_debug("compute limit: measured %.1f%% (aim %d%%, %s), held %d, rate %.0f/s", u, a,
                 o == O_MEMBER ? "the member's figure" : "NVML", held, rate);
      }
      held_before = held;
      if (t % 1000 < PERIOD_MS) sweep_pids();
    }
    if (t - last_report >= REPORT_MS) {
      last_report = t;
      report();
    }
  }
  return NULL;
}

/* ------------------------------------------------------------------ the process's side */

int gs_limit_word(void) {
  return atomic_load(&aim) > 0 ? GS_GATE_LIMITED : 0;
}

void gs_limit_set(int core_limit, int enabled) {
  int a = enabled && core_limit > 0 && core_limit < 100 ? core_limit : 0;
  pthread_mutex_lock(&limit_mu);
  if (a && lf == NULL) {
    open_file();
    gs_limit_tokens = &lf->tokens;
  }
  if (a && my_pid_slot < 0) register_pid();
  atomic_store(&aim, a);
  if (a && !atomic_load(&running)) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, controller, NULL) == 0) atomic_store(&running, 1);
    pthread_attr_destroy(&attr);
  }
  pthread_mutex_unlock(&limit_mu);
}

int gs_limit_wait(void) {
  atomic_fetch_add(gs_limit_tokens, 1); /* the token this launch did not get */
  uint64_t t0 = now_ns();
  for (;;) {
    int g = atomic_load_explicit(&gs_gate_word, memory_order_acquire);
    if (g != GS_GATE_LIMITED) {
      if (g != 0) {
        int rc = gs_gate_slow();
        if (rc) return rc;
      }
      break;
    }
    struct timespec pause = {0, 1000000L};
    nanosleep(&pause, NULL);
    if (atomic_fetch_sub(gs_limit_tokens, 1) > 0) break;
    atomic_fetch_add(gs_limit_tokens, 1);
  }
  if (lf) {
    atomic_fetch_add(&lf->held_ns, now_ns() - t0);
    atomic_fetch_add(&lf->waits, 1);
  }
  return 0;
}

void gs_limit_at_exit(void) {
  if (lf == NULL || !atomic_load(&aim)) return;
  if (my_pid_slot >= 0) {
    int pid = (int)getpid();
    atomic_compare_exchange_strong(&lf->pid[my_pid_slot], &pid, 0);
  }
  if (try_control()) report(); /* the pod's figures as they end, once */
}

void gs_limit_after_fork(void) {
  /* the child has no controller thread and no pid slot of its own; its grant sets its limit */
  atomic_store(&running, 0);
  atomic_store(&aim, 0);
  my_pid_slot = -1;
  /* a thread of the parent may have held them at the fork (asking the member, say): the child's
   * copies would stay locked for ever */
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER, fresh_pids = PTHREAD_MUTEX_INITIALIZER;
  limit_mu = fresh;
  pids_mu = fresh_pids;
  atomic_store(&pids_asking, 0); /* the asker was a thread of the parent */
  atomic_store(&own_start_cached, -1);
}
