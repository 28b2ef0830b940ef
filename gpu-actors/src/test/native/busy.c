/*
 * A process that keeps its GPU busy: kernel launches as fast as the driver takes them, during the
 * "on" parts of a duty pattern, for the virtual GPU of the fake driver (FAKE_GPU_FILE, see
 * gpu-check/fake-cuda/fake_cuda_mem.c) and the compute limiter's tests.
 *
 *   gcc -std=c17 -O2 -Wall -Wextra -D_GNU_SOURCE -o busy busy.c -L<dir of libcuda.so.1> \
 *       -l:libcuda.so.1
 *   [LD_PRELOAD=libgpushare.so] ./busy [--seconds S] [--pattern on:MS,off:MS,...] [--report-ms N]
 *                                      [--graph K] [--memory]
 *
 *   --seconds S     how long it launches (default 1; a fraction is fine)
 *   --pattern P     phases of MS milliseconds, repeated until the end: on launches one kernel after
 *                   another (cuLaunchKernel, each returning when the driver queued it), off sleeps
 *                   (default: always on)
 *   --report-ms N   every N ms a line "<t_ms> <launches>" on stdout: the milliseconds since the
 *                   start (after cuInit and the context) and the launches of that interval
 *                   (default 0: none)
 *   --graph K       launches a CUDA graph of K kernel nodes (cuGraphCreate, K x
 *                   cuGraphAddKernelNode, cuGraphInstantiateWithFlags, then cuGraphLaunch each
 *                   time) instead of single kernels, as vLLM's decode and torch.compile do; a
 *                   launch is the graph's (default 0: single kernels)
 *   --memory        once the context is current, prints "memory total=<T> info=<F> <T2>": the
 *                   device's size (cuDeviceTotalMem_v2) and cuMemGetInfo_v2's free and total
 *
 * It calls cuInit(0), cuDeviceGet(0), cuDevicePrimaryCtxRetain and cuCtxSetCurrent (device 0,
 * what CUDA_VISIBLE_DEVICES leaves), then launches with a NULL function handle (the fake takes it,
 * as workload.c's launch step does), then cuCtxSynchronize, and prints "done launches=<N>" (all
 * launches). Through the linked symbols only, so that a preloaded libgpushare.so sees every call.
 * A failing call prints "<call> -> <CUresult>" on stderr and ends it with status 1; status 2 is a
 * usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUstream, *CUfunction, *CUgraph, *CUgraphExec, *CUgraphNode;

CUresult cuInit(unsigned);
CUresult cuDeviceGet(CUdevice *, int);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, CUdevice);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, CUstream, void **, void **);
CUresult cuCtxSynchronize(void);
CUresult cuDeviceTotalMem_v2(size_t *, CUdevice);
CUresult cuMemGetInfo_v2(size_t *, size_t *);
CUresult cuGraphCreate(CUgraph *, unsigned);
CUresult cuGraphAddKernelNode(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const void *);
CUresult cuGraphInstantiateWithFlags(CUgraphExec *, CUgraph, unsigned long long);
CUresult cuGraphLaunch(CUgraphExec, CUstream);
CUresult cuGraphDestroy(CUgraph);
CUresult cuGraphExecDestroy(CUgraphExec);

#define MAX_PHASES 64

static int usage(const char *why) {
  fprintf(stderr,
          "busy: %s\nusage: busy [--seconds S] [--pattern on:MS,off:MS,...] [--report-ms N] "
          "[--graph K] [--memory]\n",
          why);
  return 2;
}

static int failed(const char *call, CUresult rc) {
  fprintf(stderr, "%s -> %d\n", call, rc);
  return 1;
}

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void sleep_until(long long ns) {
  struct timespec t = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0) {
  }
}

/* "on:50,off:50" into phases (ms, on); their count, or -1 when malformed. */
static int parse_pattern(const char *p, long long *ms, int *on) {
  int n = 0;
  while (*p) {
    if (n == MAX_PHASES) return -1;
    if (strncmp(p, "on:", 3) == 0) {
      on[n] = 1, p += 3;
    } else if (strncmp(p, "off:", 4) == 0) {
      on[n] = 0, p += 4;
    } else {
      return -1;
    }
    char *end;
    ms[n] = strtoll(p, &end, 10);
    if (end == p || ms[n] < 0 || (*end && *end != ',')) return -1;
    n++;
    p = *end ? end + 1 : end;
  }
  return n;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  double seconds = 1;
  long graph_kernels = 0;
  int memory = 0;
  long long report_ms = 0, phase_ms[MAX_PHASES] = {0};
  int phase_on[MAX_PHASES] = {1}, phases = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--memory") == 0) {
      memory = 1;
      continue;
    }
    if (i + 1 >= argc) return usage("each option but --memory takes a value");
    char *end;
    if (strcmp(argv[i], "--seconds") == 0) {
      seconds = strtod(argv[++i], &end);
      if (*end || seconds < 0) return usage("--seconds takes a number of seconds");
    } else if (strcmp(argv[i], "--report-ms") == 0) {
      report_ms = strtoll(argv[++i], &end, 10);
      if (*end || report_ms < 0) return usage("--report-ms takes a number of milliseconds");
    } else if (strcmp(argv[i], "--graph") == 0) {
      graph_kernels = strtol(argv[++i], &end, 10);
      if (*end || graph_kernels < 1) return usage("--graph takes a number of kernels > 0");
    } else if (strcmp(argv[i], "--pattern") == 0) {
      phases = parse_pattern(argv[++i], phase_ms, phase_on);
      long long cycle = 0;
      for (int k = 0; k < phases; k++) cycle += phase_ms[k];
      if (phases <= 0 || cycle <= 0) return usage("--pattern is on:MS,off:MS,... (MS > 0 in all)");
    } else {
      return usage("unknown option");
    }
  }

  CUdevice dev = 0;
  CUcontext ctx = NULL;
  CUresult rc = cuInit(0);
  if (rc) return failed("cuInit", rc);
  if ((rc = cuDeviceGet(&dev, 0))) return failed("cuDeviceGet", rc);
  if ((rc = cuDevicePrimaryCtxRetain(&ctx, dev))) return failed("cuDevicePrimaryCtxRetain", rc);
  if ((rc = cuCtxSetCurrent(ctx))) return failed("cuCtxSetCurrent", rc);
  if (memory) {
    size_t total = 0, info_free = 0, info_total = 0;
    if ((rc = cuDeviceTotalMem_v2(&total, dev))) return failed("cuDeviceTotalMem_v2", rc);
    if ((rc = cuMemGetInfo_v2(&info_free, &info_total))) return failed("cuMemGetInfo_v2", rc);
    printf("memory total=%zu info=%zu %zu\n", total, info_free, info_total);
  }
  CUgraphExec exec = NULL;
  if (graph_kernels) {
    CUgraph graph = NULL;
    CUgraphNode node = NULL, before = NULL;
    if ((rc = cuGraphCreate(&graph, 0))) return failed("cuGraphCreate", rc);
    for (long k = 0; k < graph_kernels; k++, before = node) {
      /* each after the one before, as a captured decode step's kernels are */
      if ((rc = cuGraphAddKernelNode(&node, graph, k ? &before : NULL, k ? 1 : 0, NULL)))
        return failed("cuGraphAddKernelNode", rc);
    }
    if ((rc = cuGraphInstantiateWithFlags(&exec, graph, 0)))
      return failed("cuGraphInstantiateWithFlags", rc);
    if ((rc = cuGraphDestroy(graph))) return failed("cuGraphDestroy", rc);
  }

  long long cycle_ns = 0;
  for (int k = 0; k < phases; k++) cycle_ns += phase_ms[k] * 1000000LL;
  long long start = now_ns(), stop = start + (long long)(seconds * 1e9);
  long long report_ns = report_ms * 1000000LL, next_report = report_ns ? start + report_ns : -1;
  unsigned long long total = 0, interval = 0;
  for (long long now = start; now < stop; now = now_ns()) {
    while (next_report > 0 && now >= next_report) {
      printf("%lld %llu\n", (next_report - start) / 1000000LL, interval);
      interval = 0;
      next_report += report_ns;
    }
    /* where the pattern is: on, or off until phase_end */
    int on = 1;
    long long phase_end = stop;
    if (phases) {
      long long in_cycle = (now - start) % cycle_ns, at = 0;
      for (int k = 0; k < phases; k++) {
        at += phase_ms[k] * 1000000LL;
        if (in_cycle < at) {
          on = phase_on[k];
          phase_end = now - in_cycle + at;
          break;
        }
      }
    }
    if (on) {
      rc = exec ? cuGraphLaunch(exec, NULL)
                : cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
      if (rc) return failed(exec ? "cuGraphLaunch" : "cuLaunchKernel", rc);
      total++, interval++;
    } else {
      long long until = phase_end < stop ? phase_end : stop;
      if (next_report > 0 && next_report < until) until = next_report;
      sleep_until(until);
    }
  }
  while (next_report > 0 && next_report <= stop) { /* the last interval's, when it ends at stop */
    printf("%lld %llu\n", (next_report - start) / 1000000LL, interval);
    interval = 0;
    next_report += report_ns;
  }
  if ((rc = cuCtxSynchronize())) return failed("cuCtxSynchronize", rc);
  if (exec && (rc = cuGraphExecDestroy(exec))) return failed("cuGraphExecDestroy", rc);
  printf("done launches=%llu\n", total);
  return 0;
}
