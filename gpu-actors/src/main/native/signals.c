/*
 * The signal contract without a wrapper (what `gpushare run` gives a command, given by the library
 * in the process itself), and the release when the pod's last GPU process ends.
 *
 * Preempted or revoked under `signal` (the pod left Running and its GPU state is not held): SIGUSR1
 * now ("your GPU share was preempted or revoked: checkpoint and exit"), SIGTERM GPUSHARE_GRACE
 * later, SIGKILL as long again, with gpushare run's lines. That is the grace, as Kubernetes means
 * it: the process may save its work, and its CUDA calls go on meanwhile within the pod's limits
 * (state.c), so that a handler runs (a Python main thread returns to its interpreter) and copies
 * its state off the GPU, whose memory is the process's own until it exits or releases.
 *
 * Release: at exit, and before a signal ends the process (SIGTERM, SIGINT and SIGHUP left at their
 * default, and the contract's own signals), the process leaves the pod's registry; the last GPU
 * process of the pod gives the share back (DELETE demand). A SIGKILL from elsewhere cannot be seen:
 * the node's idle and no-process release covers it.
 *
 * PID 1: a pod's `command` is PID 1 of its container's PID namespace, and the kernel drops every
 * signal sent to that process from inside its namespace unless the process handles it, SIGKILL
 * included (pid_namespaces(7)); one from outside (the kubelet's SIGTERM) reaches it only through a
 * handler. So kill(getpid()) and raise() cannot end it: where a signal's disposition would end the
 * process (its default, or this library's release handler), the library leaves the pod and ends
 * the process itself with _exit(128 + signal), the status a shell reports for that signal. A
 * handler the workload installed is called as anywhere else (signals with a handler are delivered
 * to PID 1).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpushare.h"

_Atomic int gs_left_pod;
static _Atomic int contract_begun;

/* Leaves the registry; the pod's last GPU process releases the share. */
static void leave(int in_handler) {
  if (atomic_exchange(&gs_left_pod, 1)) return;
  if (gs_pod_leave() != 1) return;
  char path[600];
  gs_pod_path(path, sizeof path, "/demand");
  if (in_handler) {
    gs_http_signal_safe("DELETE", path);
    return;
  }
  struct gs_response r;
  char err[200];
  if (gs_http("DELETE", path, 3000, &r, err, sizeof err) < 0) {
    gs_say("could not release the GPU share of pod %s/%s (%s): the node releases it once the "
           "pod's processes are gone", gs_cfg.ns, gs_cfg.name, err);
    return;
  }
  if (r.status >= 300 && r.status != 404) {
    gs_say("could not release the GPU share of pod %s/%s: HTTP %d", gs_cfg.ns, gs_cfg.name,
           r.status);
  }
  free(r.body);
}

void gs_release_at_exit(void) { leave(0); }

/* Whether the kernel ignores this process's signals to itself that have no handler. */
static int unkillable_from_inside(void) { return getpid() == 1; }

static void on_deadly(int sig) {
  int saved = errno;
  leave(1);
  if (unkillable_from_inside()) _exit(128 + sig); /* raise() would be dropped */
  signal(sig, SIG_DFL);
  raise(sig); /* blocked until this handler returns, then the default action */
  errno = saved;
}

void gs_release_install(void) {
  static const int deadly[] = {SIGTERM, SIGINT, SIGHUP};
  for (size_t i = 0; i < sizeof deadly / sizeof deadly[0]; i++) {
    struct sigaction old;
    if (sigaction(deadly[i], NULL, &old) != 0) continue;
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL) {
      struct sigaction sa;
      memset(&sa, 0, sizeof sa);
      sa.sa_handler = on_deadly;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      sigaction(deadly[i], &sa, NULL);
    }
  }
}

/* Whether `sig` will end the process (its default action, or this library's release handler). */
static int ends_process(int sig) {
  if (sig == SIGKILL) return 1;
  struct sigaction now;
  if (sigaction(sig, NULL, &now) != 0) return 1;
  if (now.sa_flags & SA_SIGINFO) return 0;
  return now.sa_handler == SIG_DFL || now.sa_handler == on_deadly;
}

static void deliver(int sig) {
  int ends = ends_process(sig);
  if (ends) leave(0);
  if (ends && unkillable_from_inside()) _exit(128 + sig);
  kill(getpid(), sig);
  /* SIGKILL to itself ends the process before kill() returns to it; should it ever not */
  if (sig == SIGKILL) _exit(128 + SIGKILL);
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

static void human(long ms, char *out, size_t n) {
  long s = ms / 1000;
  if (ms % 1000) snprintf(out, n, "%ldms", ms);
  else if (s < 60) snprintf(out, n, "%lds", s);
  else if (s < 3600) snprintf(out, n, s % 60 ? "%ldm%lds" : "%ldm", s / 60, s % 60);
  else snprintf(out, n, s % 3600 / 60 ? "%ldh%ldm" : "%ldh", s / 3600, s % 3600 / 60);
}

static void *stopper(void *arg) {
  (void)arg;
  const char *cmd = program_invocation_short_name;
  deliver(SIGUSR1);
  sleep_ms(gs_cfg.grace_ms);
  gs_say("%s still runs: SIGTERM", cmd);
  deliver(SIGTERM);
  sleep_ms(gs_cfg.grace_ms);
  gs_say("%s still runs: SIGKILL", cmd);
  deliver(SIGKILL);
  return NULL;
}

void gs_contract_begin(const char *why) {
  if (atomic_exchange(&contract_begun, 1)) return;
  char grace[32];
  human(gs_cfg.grace_ms, grace, sizeof grace);
  gs_say("pod %s/%s %s: sending SIGUSR1 to %s (pid %d), SIGTERM if it still runs %s later",
         gs_cfg.ns, gs_cfg.name, why, program_invocation_short_name, (int)getpid(), grace);
  pthread_t t;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* the signals are for the workload's threads */
  if (pthread_create(&t, &a, stopper, NULL) != 0) deliver(SIGKILL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&a);
}

void gs_contract_after_fork(void) {
  atomic_store(&gs_left_pod, 0);
  atomic_store(&contract_begun, 0);
}
