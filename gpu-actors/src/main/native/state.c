/*
 * The pod's state as this process follows it (SPEC §4, §10): the state word every CUDA call loads,
 * the demand at the first GPU use and the wait for the grant (with SPEC §4's waiting line), the
 * watch thread that keeps the state word current, and the grant this process is bound to.
 *
 * The state word is 0 only while the pod is Running on the GPU this process's driver was started
 * on, with its GPU state in place (not checkpointed). Anything else sends a call to the slow path,
 * which asks (demand) and waits; the Java side decides. The process's driver is bound to one GPU:
 * CUDA_VISIBLE_DEVICES is set to the granted GPU's UUID before the real cuInit, and a later grant
 * on another GPU is not this process's to use (the member restores checkpointed pods on their own
 * GPU; a pod under the signal contract is being stopped).
 *
 * Locks. `mu` guards the state below and is never held during a request to the data plane: a
 * request lets it go and takes it again (call()), so a CUDA call's slow path, NVML and fork() never
 * wait for the network. `order_mu` (taken before mu) is held across a request whose answer becomes
 * the view and the view's application, and across a watch event's application with its re-check,
 * so that views are applied in the order they were asked for. After fork the child initialises
 * every lock anew (a thread of the parent may have held one): nothing is held across fork.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpushare.h"

_Atomic int gs_gate_word = 1;

#define RETRY_MS 2000
#define WATCH_IDLE_MS 45000 /* the server sends a heartbeat every 15 s */

enum phase { P_NEW, P_INERT, P_WAITING, P_RUNNING, P_HELD, P_STOPPING };

struct view {
  int known;
  char state[16], policy[16], ckpt[16];
  int has_gpu, gpu_index, core, memory;
  char uuid[96];
  long long position, waiting;
  long received_ms;
  /* workload.env's MPS variables (MPS on: the pipe and log directories of the granted GPU's
   * control daemon; always: the two limits an MPS client reads) */
  char mps[GS_MPS_VARS][512];
  char limit_mode[16]; /* computeLimit.mode: library, mps, off; "" when the member says nothing */
};

/* The variables of the pod view's workload.env an MPS client reads at its first CUDA call. */
static const char *const mps_vars[GS_MPS_VARS] = {
    "CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
    "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t order_mu = PTHREAD_MUTEX_INITIALIZER;
/* cuInit's: held from the environment set for the real cuInit until it is restored */
static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int init_held;
static pthread_cond_t cv; /* a new view came (CLOCK_MONOTONIC) */
static enum phase phase = P_NEW;
static struct view view;
static int watching;
static char bound_uuid[96]; /* the GPU this process's driver runs on, once cuInit went through */
static struct gs_grant grant;
static _Atomic int grant_known;
static long next_line_ms = -1, last_post_ms = -100000;
static char last_problem[64];
static int config_said, unpinned_said;
/* This process wants or uses the pod's GPU (share-pool): its exit may be the pod's release. */
static int user;
/* The real cuInit succeeded under the grant's CUDA_VISIBLE_DEVICES (it reads it no more). */
static int cuinit_ok;
/* Watch opens answered 404 and confirmed by a fresh GET, in a row. */
static int gone_seen;
/* P_STOPPING (the signal contract's grace): 1 while this process's GPU state is its own on the GPU,
 * so its calls go on; 0 when that state was checkpointed and given up (the calls fail). */
static int grace_open;

static long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

void gs_pod_path(char *out, size_t n, const char *suffix) {
  snprintf(out, n, "/v1/namespaces/%s/pods/%s%s", gs_cfg.ns, gs_cfg.name, suffix);
}

/* ------------------------------------------------------------------ reading answers */

static int parse_view(const char *body, size_t len, struct view *v) {
  struct view x;
  memset(&x, 0, sizeof x);
  long long n = 0;
  if (gs_json_string(body, len, "state", x.state, sizeof x.state) != 1) return -1;
  if (gs_json_string(body, len, "policy", x.policy, sizeof x.policy) < 0) return -1;
  if (gs_json_string(body, len, "checkpoint.phase", x.ckpt, sizeof x.ckpt) < 0) return -1;
  int has_uuid = gs_json_string(body, len, "gpu.uuid", x.uuid, sizeof x.uuid);
  int has_index = gs_json_long(body, len, "gpu.index", &n);
  if (has_uuid < 0 || has_index < 0) return -1;
  x.has_gpu = has_uuid == 1 && has_index == 1 && x.uuid[0];
  x.gpu_index = (int)n;
  if (gs_json_long(body, len, "limits.core", &n) < 0) return -1;
  x.core = n > 0 && n <= 100 ? (int)n : 100;
  n = 0;
  if (gs_json_long(body, len, "limits.memory", &n) < 0) return -1;
  x.memory = n > 0 && n <= 100 ? (int)n : 100;
  if (gs_json_long(body, len, "queuePosition", &x.position) < 0) return -1;
  if (gs_json_long(body, len, "waitingSeconds", &x.waiting) < 0) return -1;
  if (gs_json_string(body, len, "computeLimit.mode", x.limit_mode, sizeof x.limit_mode) < 0)
    return -1;
  for (int i = 0; i < GS_MPS_VARS; i++) {
    char key[64];
    snprintf(key, sizeof key, "workload.env.%s", mps_vars[i]);
    if (gs_json_string(body, len, key, x.mps[i], sizeof x.mps[i]) < 0) return -1;
  }
  char uid[64]; /* names the pod's files (pod_files.c) */
  if (gs_json_string(body, len, "uid", uid, sizeof uid) == 1) gs_pod_set_uid(uid);
  x.known = 1;
  x.received_ms = now_ms();
  *v = x;
  return 0;
}

/* The problem+json detail of an answer, else its start. */
static void detail_of(const struct gs_response *r, char *out, size_t n) {
  if (r->body && gs_json_string(r->body, r->len, "detail", out, n) == 1) return;
  snprintf(out, n, "%.*s", (int)(r->len > 200 ? 200 : r->len), r->body ? r->body : "");
}

/* Says a problem once (until an answer comes through), with what happens next. */
static void problem(const char *kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(const char *kind, const char *fmt, ...) {
  if (strcmp(kind, last_problem) == 0) return;
  snprintf(last_problem, sizeof last_problem, "%s", kind);
  char line[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  gs_say("%s; %s", line,
         gs_cfg.on_error == GS_ON_ERROR_FAIL
             ? "the CUDA call fails with CUDA_ERROR_NO_DEVICE (GPUSHARE_ON_ERROR=fail)"
             : "CUDA calls wait, retrying every 2s");
}

/* What a failed call() says, once (problem()). */
struct failure {
  char kind[16];
  char line[900];
};

static void fail(struct failure *f, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(struct failure *f, const char *kind, const char *fmt, ...) {
  snprintf(f->kind, sizeof f->kind, "%s", kind);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->line, sizeof f->line, fmt, ap);
  va_end(ap);
}

/* One request to the data plane that must answer a PodView, with no lock held: 0 with *v, or -1
 * with *f (and the HTTP status in *status, 0 when no answer came). */
static int fetch(const char *method, const char *suffix, struct view *v, struct failure *f,
                 int *status) {
  char path[600], err[256], detail[300];
  gs_pod_path(path, sizeof path, suffix);
  struct gs_response r;
  *status = 0;
  if (gs_http(method, path, 10000, &r, err, sizeof err) < 0) {
    fail(f, "unreachable", "cannot reach the gpushare data plane at %s (%s): set GPUSHARE_SERVER "
         "to the node's data-plane address", gs_cfg.server, err);
    return -1;
  }
  *status = r.status;
  detail_of(&r, detail, sizeof detail);
  int rc = -1;
  if (r.status == 401 || r.status == 403) {
    fail(f, "token", "the data plane at %s refused the token (HTTP %d: %s): set "
         "GPUSHARE_TOKEN_FILE to a file holding a token it accepts (now %s)", gs_cfg.server,
         r.status, detail, gs_cfg.token_file[0] ? gs_cfg.token_file : "unset");
  } else if (r.status == 404) {
    fail(f, "unknown", "the arbiter does not know pod %s/%s (HTTP 404: %s): set GPUSHARE_POD, or "
         "POD_NAMESPACE and POD_NAME, to this pod", gs_cfg.ns, gs_cfg.name, detail);
  } else if (r.status < 200 || r.status > 299) {
    fail(f, "status", "the data plane answered %s %s with HTTP %d: %s", method, path, r.status,
         detail);
  } else if (parse_view(r.body, r.len, v) < 0) {
    fail(f, "unreadable", "cannot read the data plane's answer to %s %s (not a pod view: %.80s): "
         "check that GPUSHARE_SERVER=%s is the gpushare data plane", method, path,
         r.body ? r.body : "", gs_cfg.server);
  } else {
    rc = 0;
  }
  free(r.body);
  return rc;
}

/* Under mu: one request, with mu let go while it is under way (the caller checks again what it
 * decided on: the state may have moved meanwhile); a failure is said. 0 with *v, or -1. */
static int call_status(const char *method, const char *suffix, struct view *v, int *status) {
  struct failure f;
  int st;
  pthread_mutex_unlock(&mu);
  int rc = fetch(method, suffix, v, &f, &st);
  pthread_mutex_lock(&mu);
  if (status) *status = st;
  if (rc < 0) problem(f.kind, "%s", f.line);
  else last_problem[0] = '\0';
  return rc;
}

static int call(const char *method, const char *suffix, struct view *v) {
  return call_status(method, suffix, v, NULL);
}

/* Under mu: takes order_mu too (before mu, as everywhere), for a request whose answer becomes the
 * view. The state may have moved while mu was let go. */
static void order_begin(void) {
  pthread_mutex_unlock(&mu);
  pthread_mutex_lock(&order_mu);
  pthread_mutex_lock(&mu);
}

static void order_end(void) { pthread_mutex_unlock(&order_mu); }

/* ------------------------------------------------------------------ the state word */

static int granted_here(const struct view *v) {
  return v->known && strcmp(v->state, "Running") == 0 && v->has_gpu && !v->ckpt[0] &&
         (!bound_uuid[0] || strcmp(bound_uuid, v->uuid) == 0);
}

/* The grant as this process holds it; with_limit: a CUDA user's, whose launches the compute limit
 * paces (an NVML-only process, nvidia-smi or a monitoring agent, starts no limiter). */
static void take_grant(const struct view *v, int with_limit) {
  grant.index = v->gpu_index;
  snprintf(grant.uuid, sizeof grant.uuid, "%s", v->uuid);
  grant.core_limit = v->core;
  grant.memory_limit = v->memory;
  grant.is_static = strcmp(v->policy, "static") == 0;
  memcpy(grant.mps, v->mps, sizeof grant.mps);
  atomic_store(&grant_known, 1);
  if (with_limit) gs_limit_set(v->core, strcmp(v->limit_mode, "library") == 0);
}

/* A new view of the pod, under order_mu and mu: the state word follows it, and the signal
 * contract or the checkpoint hold begins when the pod leaves Running under this process. A view
 * from the watch that would take such a step is looked at again first (a fresh GET, mu let go
 * meanwhile): the stream may have fetched it before this process's own demand was decided, and an
 * answer may be newer than the stream. */
static void follow(const struct view *v, int from_watch) {
  view = *v;
  gs_debug("view (%s): %s%s%s", from_watch ? "watch" : "answer", v->state, v->ckpt[0] ? ", checkpoint " : "", v->ckpt);
  pthread_cond_broadcast(&cv);
  if (phase == P_STOPPING || atomic_load(&gs_left_pod)) return;
  if (granted_here(v)) {
    if (phase == P_HELD) {
      gs_say("pod %s/%s is Running again on GPU %d (%s): its GPU state was restored; %s goes on",
             gs_cfg.ns, gs_cfg.name, v->gpu_index, v->uuid, program_invocation_short_name);
    }
    if (phase == P_HELD || phase == P_RUNNING) {
      phase = P_RUNNING;
      if (bound_uuid[0]) gs_limit_set(v->core, strcmp(v->limit_mode, "library") == 0);
      atomic_store(&gs_gate_word, gs_limit_word());
    }
    return;
  }
  atomic_store(&gs_gate_word, 1);
  if (from_watch == 1 && (phase == P_HELD || (phase == P_RUNNING && bound_uuid[0]))) {
    struct view fresh;
    if (call("GET", "", &fresh) == 0) {
      follow(&fresh, 0);
      return;
    }
    /* mu was let go meanwhile */
    if (phase == P_STOPPING || atomic_load(&gs_left_pod)) return;
  }
  if (phase == P_HELD && !v->ckpt[0]) {
    phase = P_STOPPING;
    grace_open = 0; /* its GPU state is in no GPU: a call cannot run, it fails (it never waits) */
    char why[120];
    snprintf(why, sizeof why, "is %s and its GPU state is no longer held (the pod's Events say why)",
             v->state);
    gs_contract_begin(why);
    return;
  }
  if (phase != P_RUNNING) return;
  if (!bound_uuid[0]) { /* granted, but its driver never started: nothing to stop */
    phase = P_WAITING;
    return;
  }
  int left = strcmp(v->state, "Running") != 0 || !v->has_gpu || strcmp(v->uuid, bound_uuid) != 0;
  if (v->ckpt[0]) {
    if (left) {
      phase = P_HELD;
      gs_say("pod %s/%s left Running (now %s): its GPU state is checkpointed in host memory; %s "
             "keeps running without a signal and goes on when the pod runs again", gs_cfg.ns,
             gs_cfg.name, v->state, program_invocation_short_name);
    }
    return; /* still Running while the member checkpoints: the calls wait, nothing more */
  }
  /* The grace, as Kubernetes means it: the process may save its work. Its memory on the GPU is
   * its own until it exits or releases, so its calls go on within the pod's limits until then (a
   * call that waited would hold a Python main thread out of the interpreter, where its SIGUSR1 or
   * SIGTERM handler runs, and the handler's own copy off the GPU would wait too). */
  phase = P_STOPPING;
  grace_open = 1;
  atomic_store(&gs_gate_word, gs_limit_word());
  char why[200];
  if (strcmp(v->state, "Running") == 0 && v->has_gpu) {
    snprintf(why, sizeof why, "was granted a GPU again (%s): its share changed", v->uuid);
  } else {
    snprintf(why, sizeof why, "left Running (now %s): its GPU share was preempted or revoked",
             v->state);
  }
  gs_contract_begin(why);
}

/* ------------------------------------------------------------------ the watch thread */

/* The watch's open stream, reachable from here so that a forked child can let go of it. */
static struct gs_stream *_Atomic watch_stream;

static void *watch_main(void *arg) {
  (void)arg;
  char path[600], err[256];
  gs_pod_path(path, sizeof path, "/watch");
  for (;;) {
    struct gs_stream *s = NULL;
    int status = 0;
    gs_debug("opening the watch");
    if (gs_watch_open(path, &s, &status, err, sizeof err) < 0 || status != 200) {
      pthread_mutex_lock(&order_mu);
      pthread_mutex_lock(&mu);
      if (s == NULL) {
        problem("unreachable", "cannot reach the gpushare data plane at %s (%s): set "
                "GPUSHARE_SERVER to the node's data-plane address", gs_cfg.server, err);
      } else if (status == 404) {
        /* The member answers 404 while it (re)creates a pod too: the pod is gone only when a fresh
         * GET says so as well, at two watch opens in a row. Anything else is a view to follow. */
        struct view fresh;
        int st = 0;
        if (call_status("GET", "", &fresh, &st) == 0) {
          gone_seen = 0;
          follow(&fresh, 0);
        } else if (st == 404 && ++gone_seen >= 2) {
          gs_debug("the pod is gone (404 on the watch and on a fresh GET, twice)");
          /* nothing of it is this process's any more */
          struct view gone = view;
          snprintf(gone.state, sizeof gone.state, "Deleted");
          gone.has_gpu = 0;
          gone.ckpt[0] = '\0';
          follow(&gone, 2);
        }
      }
      pthread_mutex_unlock(&mu);
      pthread_mutex_unlock(&order_mu);
      gs_watch_close(s);
      usleep(RETRY_MS * 1000);
      continue;
    }
    atomic_store(&watch_stream, s);
    pthread_mutex_lock(&mu);
    gone_seen = 0;
    pthread_mutex_unlock(&mu);
    char *data;
    size_t len;
    int got;
    while ((got = gs_watch_next(s, &data, &len, WATCH_IDLE_MS)) == 1) {
      struct view v;
      int ok = parse_view(data, len, &v) == 0;
      pthread_mutex_lock(&order_mu);
      pthread_mutex_lock(&mu);
      if (ok) {
        last_problem[0] = '\0';
        follow(&v, 1);
      } else {
        problem("unreadable", "cannot read an event of the data plane's watch (not a pod view: "
                "%.80s): check that GPUSHARE_SERVER=%s is the gpushare data plane", data,
                gs_cfg.server);
      }
      pthread_mutex_unlock(&mu);
      pthread_mutex_unlock(&order_mu);
      free(data);
    }
    gs_debug("watch ended (%s); reconnecting", got == 0 ? "end of stream" : "silent or broken");
    atomic_store(&watch_stream, NULL);
    gs_watch_close(s);
    usleep(got == 0 ? 200 * 1000 : RETRY_MS * 1000);
  }
  return NULL;
}

static void start_watch(void) {
  if (watching) return;
  pthread_t t;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  /* the workload's signals are for its own threads, not this one */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  watching = pthread_create(&t, &a, watch_main, NULL) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&a);
}

/* ------------------------------------------------------------------ the slow path */

static void wait_ms(long ms) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  t.tv_sec += ms / 1000;
  t.tv_nsec += (ms % 1000) * 1000000L;
  if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
  pthread_cond_timedwait(&cv, &mu, &t);
}

/* SPEC §4's line, at once when the wait begins and every GPUSHARE_WAIT_INTERVAL. */
static void waiting_line(void) {
  long now = now_ms();
  if (next_line_ms >= 0 && now < next_line_ms) return;
  long long seconds = view.waiting + (now - view.received_ms) / 1000;
  gs_say_raw("You have been waiting for %lld seconds. Approximate position: %lld", seconds,
             view.position);
  next_line_ms = now + gs_cfg.wait_interval_ms;
}

/* CUDA_VISIBLE_DEVICES as the user set it makes the driver see no device: a CPU-only process.
 * The driver keeps the entries before the first it cannot use (NVIDIA's CUDA_VISIBLE_DEVICES:
 * "0,2,-1,1" shows devices 0 and 2), so an empty value, or a first entry that is neither an index
 * nor a GPU-/MIG- UUID ("-1", "-1,0", "none"), leaves no device at all. */
static int cpu_only(void) {
  const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
  if (!cvd) return 0;
  while (*cvd == ' ') cvd++;
  size_t n = strcspn(cvd, ",");
  while (n && cvd[n - 1] == ' ') n--;
  if (n == 0) return 1;
  if (strncmp(cvd, "GPU-", 4) == 0 || strncmp(cvd, "MIG-", 4) == 0) return 0;
  for (size_t i = 0; i < n; i++) {
    if (!isdigit((unsigned char)cvd[i])) return 1;
  }
  return 0;
}

/* Under mu: 0 once the pod is Running here (the state word open), else the CUresult to fail with.
 * Requests let mu go (call()): every step is decided again from the state as it is after one. */
static int acquire(void) {
  for (;;) {
    if (phase == P_INERT) return 0;
    if (phase == P_STOPPING) return grace_open ? 0 : GS_CUDA_ERROR_NOT_PERMITTED;
    if (gs_cfg.error[0]) {
      if (!config_said++) {
        gs_say("%s; CUDA calls fail with CUDA_ERROR_NO_DEVICE until it is set right",
               gs_cfg.error);
      }
      return GS_CUDA_ERROR_NO_DEVICE;
    }
    if (phase == P_NEW && cpu_only()) {
      /* it asked for no GPU: no demand, no share, the driver's own answer (no device) */
      gs_debug("CUDA_VISIBLE_DEVICES='%s' leaves no device: a CPU-only process, left alone",
               getenv("CUDA_VISIBLE_DEVICES"));
      phase = P_INERT;
      atomic_store(&gs_gate_word, 0);
      return 0;
    }
    if (phase == P_NEW) {
      order_begin();
      if (phase != P_NEW) { /* another thread did it meanwhile */
        order_end();
        continue;
      }
      struct view v;
      if (call("GET", "", &v) < 0) {
        order_end();
        if (gs_cfg.on_error == GS_ON_ERROR_FAIL) return GS_CUDA_ERROR_NO_DEVICE;
        wait_ms(RETRY_MS);
        continue;
      }
      if (phase != P_NEW) {
        order_end();
        continue;
      }
      if (strcmp(v.policy, "share-pool") != 0 && strcmp(v.policy, "static") != 0) {
        phase = P_INERT; /* a pod without a share: left entirely alone */
        atomic_store(&gs_gate_word, 0);
        order_end();
        return 0;
      }
      gs_pod_open();
      phase = P_WAITING;
      view = v;
      order_end();
      if (strcmp(v.policy, "share-pool") == 0) {
        /* counted as the pod's from now: a sibling that exits meanwhile does not release the
         * share this process is about to use, and this one's exit or deadly signal withdraws a
         * demand nobody else wants (a static pod's GPU is pinned, never released) */
        gs_pod_mark_user();
        gs_release_install();
        user = 1;
        start_watch();
      }
    }
    int is_static = strcmp(view.policy, "static") == 0;
    if (granted_here(&view) && phase != P_STOPPING) {
      take_grant(&view, 1);
      next_line_ms = -1;
      if (phase == P_WAITING || phase == P_HELD) phase = P_RUNNING;
      atomic_store(&gs_gate_word, gs_limit_word());
      return 0;
    }
    if (!is_static && phase != P_STOPPING && strcmp(view.state, "Hibernation") == 0 &&
        now_ms() - last_post_ms >= RETRY_MS) {
      /* the demand: Hibernation -> Ready (or straight to Running) */
      last_post_ms = now_ms(); /* before mu is let go: one demand at a time */
      order_begin();
      if (phase == P_STOPPING || strcmp(view.state, "Hibernation") != 0) {
        order_end();
        continue;
      }
      struct view v;
      gs_debug("raising demand");
      if (call("POST", "/demand", &v) < 0) {
        order_end();
        if (gs_cfg.on_error == GS_ON_ERROR_FAIL) return GS_CUDA_ERROR_NO_DEVICE;
      } else {
        follow(&v, 0);
        order_end();
        if (strcmp(v.state, "Ready") == 0) waiting_line(); /* at once */
      }
      continue;
    }
    if (strcmp(view.state, "Ready") == 0) waiting_line();
    if (is_static) {
      if (!unpinned_said++) {
        problem("unpinned", "pod %s/%s (static) is not pinned to a GPU yet (its conditions say "
                "why)", gs_cfg.ns, gs_cfg.name);
      }
      if (gs_cfg.on_error == GS_ON_ERROR_FAIL) return GS_CUDA_ERROR_NO_DEVICE;
      wait_ms(RETRY_MS);
      struct view v;
      order_begin();
      if (call("GET", "", &v) == 0) view = v;
      order_end();
      continue;
    }
    long wait = next_line_ms >= 0 ? next_line_ms - now_ms() : RETRY_MS;
    wait_ms(wait < 10 ? 10 : wait > RETRY_MS ? RETRY_MS : wait);
  }
}

static pthread_once_t loaded = PTHREAD_ONCE_INIT;
static void load(void);

int gs_gate_slow(void) {
  pthread_once(&loaded, load);
  if (!gs_cfg.active) {
    atomic_store(&gs_gate_word, 0);
    return 0;
  }
  pthread_mutex_lock(&mu);
  int rc = acquire();
  pthread_mutex_unlock(&mu);
  return rc;
}

/* The user's CUDA_VISIBLE_DEVICES while the real cuInit reads the grant's (under init_mu). */
static char *user_cvd;
static int user_cvd_set, cvd_replaced;

int gs_before_cuinit(void) {
  pthread_once(&loaded, load);
  if (!gs_cfg.active) return 0;
  pthread_mutex_lock(&init_mu);
  pthread_mutex_lock(&mu);
  int rc = acquire();
  if (rc == 0 && phase != P_INERT && !cuinit_ok) {
    /* The driver reads it at cuInit, the first that succeeds: this process sees its granted GPU
     * only. The user's value is back once the real cuInit returns (gs_after_cuinit): children
     * (spawned workers, each preloaded, ask for their own grant) and the program see what they
     * had. setenv is not safe against a getenv of another thread at the same moment (libc's rule
     * for every setenv); the window is the real cuInit, made once. */
    const char *had = getenv("CUDA_VISIBLE_DEVICES");
    free(user_cvd);
    user_cvd = had ? strdup(had) : NULL;
    user_cvd_set = had != NULL;
    cvd_replaced = 1;
    setenv("CUDA_VISIBLE_DEVICES", grant.uuid, 1);
    /* Under MPS the driver finds the granted GPU's control daemon (and the client its limits)
     * through these; a node without MPS sends only the limits, which a non-MPS client ignores.
     * They stay set: the driver may read them after cuInit (at context creation), and they are
     * the pod's own workload.env, the same for every process of the pod on that GPU. */
    for (int i = 0; i < GS_MPS_VARS; i++) {
      if (grant.mps[i][0]) setenv(mps_vars[i], grant.mps[i], 1);
    }
    snprintf(bound_uuid, sizeof bound_uuid, "%s", grant.uuid);
  }
  pthread_mutex_unlock(&mu);
  if (rc == 0) init_held = 1; /* until gs_after_cuinit */
  else pthread_mutex_unlock(&init_mu);
  return rc;
}

void gs_after_cuinit(int rc) {
  if (!init_held) return;
  init_held = 0;
  if (cvd_replaced) {
    if (!user_cvd_set) unsetenv("CUDA_VISIBLE_DEVICES");
    else if (user_cvd) setenv("CUDA_VISIBLE_DEVICES", user_cvd, 1); /* else no copy was had */
    cvd_replaced = 0;
  }
  if (rc == GS_CUDA_SUCCESS && bound_uuid[0]) cuinit_ok = 1;
  pthread_mutex_unlock(&init_mu);
  if (rc != GS_CUDA_SUCCESS) return;
  if (!gs_cfg.active || phase == P_INERT || !atomic_load(&grant_known) || gs_mem_limit()) return;
  typedef int (*device_get_t)(int *, int);
  typedef int (*total_mem_t)(size_t *, int);
  device_get_t device_get = (device_get_t)gs_real_cuda("cuDeviceGet");
  total_mem_t total_mem = (total_mem_t)gs_real_cuda("cuDeviceTotalMem_v2");
  int dev;
  size_t bytes;
  if (device_get && total_mem && device_get(&dev, 0) == 0 && total_mem(&bytes, dev) == 0) {
    gs_mem_set_limit((uint64_t)bytes / 100 * (uint64_t)grant.memory_limit +
                     (uint64_t)bytes % 100 * (uint64_t)grant.memory_limit / 100);
    gs_driver_memory_start(); /* what the driver says this process holds counts from now */
  } else {
    gs_say("cannot read the memory of GPU %s from the driver: the pod's memory limit is not "
           "counted in this process (the node still watches it)", grant.uuid);
  }
}

int gs_grant_known(void) { return atomic_load(&grant_known); }
const struct gs_grant *gs_grant_get(void) { return &grant; }

int gs_pod_brief_get(struct gs_pod_brief *b, char *err, size_t errlen) {
  pthread_once(&loaded, load);
  if (!gs_cfg.active) {
    snprintf(err, errlen, "the library is inert");
    return -1;
  }
  struct view v;
  struct failure f;
  int status = 0;
  if (fetch("GET", "", &v, &f, &status) < 0) {
    snprintf(err, errlen, "%s", f.line);
    return -1;
  }
  memset(b, 0, sizeof *b);
  snprintf(b->policy, sizeof b->policy, "%s", v.policy);
  snprintf(b->state, sizeof b->state, "%s", v.state);
  snprintf(b->uuid, sizeof b->uuid, "%s", v.uuid);
  b->has_gpu = v.has_gpu;
  b->core = v.core;
  b->memory = v.memory;
  return 0;
}

/* ------------------------------------------------------------------ load, fork */

static void init_locks(void) {
  pthread_mutex_init(&mu, NULL);
  pthread_mutex_init(&order_mu, NULL);
  pthread_mutex_init(&init_mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&cv, &ca);
  pthread_condattr_destroy(&ca);
}

static void after_fork_child(void) {
  /* Nothing is held across fork (a request under way would hold fork() up): a lock another thread
   * of the parent held stays held in the child, so every one is made anew. The child has no CUDA
   * context and no watch thread: it starts over, as a new process of the same pod (its demand is
   * the pod's, already raised or not). */
  init_locks();
  init_held = 0;
  cvd_replaced = 0;
  if (!gs_cfg.active) return;
  struct gs_stream *parents = atomic_exchange(&watch_stream, NULL);
  if (parents) gs_watch_close(parents); /* its thread is the parent's, not this process's */
  watching = 0;
  user = 0;
  bound_uuid[0] = '\0';
  cuinit_ok = 0;
  gone_seen = 0;
  grace_open = 0;
  if (phase != P_INERT) phase = P_NEW;
  atomic_store(&gs_gate_word, 1);
  atomic_store(&grant_known, 0);
  gs_contract_after_fork();
  gs_pod_after_fork();
  gs_limit_after_fork();
  gs_driver_memory_after_fork();
}

static void load(void) {
  init_locks();
  gs_config_load();
  if (!gs_cfg.active) atomic_store(&gs_gate_word, 0);
  pthread_atfork(NULL, NULL, after_fork_child);
}

/* Loaded before the program's own code runs; a CUDA call from an earlier constructor loads it
 * through pthread_once as well. */
__attribute__((constructor)) static void gs_load(void) { pthread_once(&loaded, load); }

__attribute__((destructor)) static void gs_unload(void) {
  if (gs_cfg.active) gs_limit_at_exit();
  if (gs_cfg.active && user) gs_release_at_exit();
}
