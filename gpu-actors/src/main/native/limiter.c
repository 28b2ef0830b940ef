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
 * when the pod is over its aim, or under it while its launches were held back and the bucket is
 * still low at the period's end (the limit is what stops it); a pod under its aim that was not held,
 * or that stopped launching in the period (its bucket filled up again: it went idle), keeps its
 * rate, so going idle never earns a pod a burst. While launches are held the pod's utilisation is the rate times the GPU
 * time of a launch, u = k r: the measured window is the period the rate applied to, so the log-error
 * e = ln(u / aim) obeys e' = e / 2 and halves every period; from 100 % down to a limit of 30
 * (e = 1.2) it is inside ±5 points (|e| < 0.15) after 3 periods, about 0.3 s (the factor's clamp
 * adds none here: the first step is 0.55), and a change of the pod's kernels (k) is corrected as
 * fast. The bucket holds at most 50 ms of the rate, so a pod that
 * comes back from idle runs over its aim for at most that long, inside one sampling window. A pod
 * whose limit is 100 is never limited (its launches never touch the bucket).
 */
#include "gpushare.h"

#include <fcntl.h>
#include <errno.h>
#include <signal.h>
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
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_NOT_FOUND 6

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

static void register_pid(void) {
  int pid = (int)getpid();
  for (int i = 0; i < LIMIT_PIDS; i++) {
    int seen = atomic_load(&lf->pid[i]);
    if (seen == pid) {
      my_pid_slot = i;
      return;
    }
  }
  for (int i = 0; i < LIMIT_PIDS; i++) {
    int zero = 0;
    if (atomic_compare_exchange_strong(&lf->pid[i], &zero, pid)) {
      my_pid_slot = i;
      return;
    }
  }
}

/* A pid slot of a process that is gone: kill(pid, 0) cannot tell across PID namespaces, but all
 * of the pod's processes share one (a container's), so it can here. */
static void sweep_pids(void) {
  for (int i = 0; i < LIMIT_PIDS; i++) {
    int pid = atomic_load(&lf->pid[i]);
    if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) {
      atomic_compare_exchange_strong(&lf->pid[i], &pid, 0);
    }
  }
}

static int is_pod_pid(unsigned int pid) {
  for (int i = 0; i < LIMIT_PIDS; i++)
    if ((unsigned int)atomic_load(&lf->pid[i]) == pid && pid != 0) return 1;
  return 0;
}

/* ------------------------------------------------------------------ measuring */

struct meter {
  int ready;
  nvmlDevice_t device;
  proc_util_fn proc_util;
  unsigned long long last_seen;
  sample_t samples[256];
};

static int meter_open(struct meter *m) {
  if (m->ready) return 1;
  init_fn init = (init_fn)gs_real_nvml("nvmlInit_v2");
  by_uuid_fn by_uuid = (by_uuid_fn)gs_real_nvml("nvmlDeviceGetHandleByUUID");
  m->proc_util = (proc_util_fn)gs_real_nvml("nvmlDeviceGetProcessUtilization");
  const struct gs_grant *g = gs_grant_get();
  if (!init || !by_uuid || !m->proc_util || !g || init() != 0) return 0;
  if (by_uuid(g->uuid, &m->device) != 0) return 0;
  m->ready = 1;
  return 1;
}

/* The pod's utilisation of its GPU since the last call, in percent; -1 when NVML cannot say. */
static double measure(struct meter *m) {
  if (!meter_open(m)) return -1;
  unsigned int n = sizeof m->samples / sizeof m->samples[0];
  nvmlReturn_t rc = m->proc_util(m->device, m->samples, &n, m->last_seen);
  if (rc == NVML_ERROR_NOT_FOUND) return 0; /* no process sampled since: the pod ran nothing */
  if (rc != 0) return -1;
  double sum = 0;
  unsigned long long newest = m->last_seen;
  for (unsigned int i = 0; i < n; i++) {
    if (m->samples[i].timeStamp > newest) newest = m->samples[i].timeStamp;
    if (is_pod_pid(m->samples[i].pid)) sum += m->samples[i].smUtil;
  }
  m->last_seen = newest;
  return sum > 100 ? 100 : sum;
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
  int blind = 0, blind_said = 0;
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
      waits_before = atomic_load(&lf->waits);
    }
    long t = now_ms();
    double rate = atomic_load(&lf->rate_milli) / 1000.0;
    /* refill */
    double cap = rate * BURST_MS / 1000.0;
    if (cap < 1) cap = 1;
    int64_t add = (int64_t)(rate * (double)(t - last_tick) / 1000.0 + 0.5);
    if (add > 0) {
      last_tick = t;
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
      double u = measure(&m);
      uint64_t waits = atomic_load(&lf->waits);
      int held = waits != waits_before;
      waits_before = waits;
      /* Held back for a second, yet none of the pod's processes in NVML's samples: NVML names
       * them by PIDs this namespace does not know (host PIDs); or NVML cannot be used at all. The
       * pod cannot be measured, so it is not limited, rather than limited blindly. Said once. */
      blind = (held && u == 0) || !m.ready ? blind + 1 : 0;
      if (blind >= 10) {
        if (!blind_said) {
          blind_said = 1;
          if (m.ready) {
            gs_say("compute limit: NVML reports none of pod %s/%s's processes (it names them by "
                   "PIDs this container does not see): the pod's compute is not limited here",
                   gs_cfg.ns, gs_cfg.name);
          } else {
            gs_say("compute limit: NVML cannot measure pod %s/%s's GPU (libnvidia-ml.so.1, or "
                   "its GPU by UUID, not found): the pod's compute is not limited here",
                   gs_cfg.ns, gs_cfg.name);
          }
        }
        atomic_store(&lf->rate_milli, (uint64_t)(RATE_MAX * 1000));
        u = -1;
      }
      /* nothing measured although the pod's launches were held: a missing sample (NVML had none
       * newer), not an idle pod; the rate stays (and a lasting one is the blind case above) */
      if (u == 0 && held) u = -1;
      if (u >= 0) {
        atomic_store(&lf->measured_centi, (uint32_t)(u * 100));
        double factor = 1;
        if (u > a + DEADBAND) {
          factor = root(a / u);
        } else if (held && atomic_load(&lf->tokens) < (int64_t)(cap / 2) && u < a - DEADBAND) {
          factor = root(a / (u < 1 ? 1 : u));
        }
        if (factor < 0.5) factor = 0.5;
        if (factor > 2) factor = 2;
        rate *= factor;
        if (rate < RATE_MIN) rate = RATE_MIN;
        if (rate > RATE_MAX) rate = RATE_MAX;
        atomic_store(&lf->rate_milli, (uint64_t)(rate * 1000));
        gs_debug("compute limit: measured %.1f%% (aim %d%%), held %d, rate %.0f/s", u, a, held, rate);
      }
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
  pthread_mutex_init(&limit_mu, NULL); /* a parent's thread may have held it across fork */
  atomic_store(&running, 0);
  atomic_store(&aim, 0);
  my_pid_slot = -1;
}
