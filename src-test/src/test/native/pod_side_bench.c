/*
 * The pod side's costs measured inside one process; PodSideBenchmark runs it with and without
 * LD_PRELOAD=libgpushare.so, against the fake driver (gpu-actors/gpu-check/fake-cuda):
 *
 *   pod_side_bench calls N   cuInit (timed: the first GPU use, which with the library is the
 *                            pod's demand and the wait for its grant), then N cuLaunchKernel
 *                            calls timed together, then N cuGraphLaunch calls of a graph of one
 *                            kernel node timed together (CUDA graphs go through the same gate)
 *   pod_side_bench http HOST PORT PATH TOKEN_FILE K
 *                            K plain HTTP/1.1 GETs of PATH, one connection each, as the
 *                            library's client makes its requests; no CUDA call at all
 *   pod_side_bench cycle HOST PORT POD_PATH TOKEN_FILE K
 *                            K times the pod's demand (POST POD_PATH/demand, timed) and its
 *                            release (DELETE, timed apart): the decision's own round trip
 *
 * It prints key=value lines, and last what the process holds: VmRSS, its threads, and the Rss and
 * Pss of the library's own mappings and of the pod's shared file (/proc/self/smaps).
 *
 * build: -l:libcuda.so.1
 */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;

CUresult cuInit(unsigned int flags);
CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void **kernelParams, void **extra);

CUresult cuGraphCreate(CUgraph *graph, unsigned int flags);
CUresult cuGraphAddKernelNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                              size_t n, const void *params);
CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long flags);
CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream);
CUresult cuGraphExecDestroy(CUgraphExec exec);
CUresult cuGraphDestroy(CUgraph graph);

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void memory(void) {
  char line[512];
  FILE *f = fopen("/proc/self/status", "r");
  if (f) {
    while (fgets(line, sizeof line, f)) {
      long v;
      if (sscanf(line, "VmRSS: %ld kB", &v) == 1) printf("vmrss_kib=%ld\n", v);
      if (sscanf(line, "Threads: %ld", &v) == 1) printf("threads=%ld\n", v);
    }
    fclose(f);
  }
  long lib_rss = 0, lib_pss = 0, pod_rss = 0, pod_pss = 0, lib_size = 0;
  int which = 0; /* 1: a mapping of libgpushare.so, 2: of the pod's file */
  f = fopen("/proc/self/smaps", "r");
  if (f) {
    while (fgets(line, sizeof line, f)) {
      long v;
      char name[32];
      if (sscanf(line, "%31[A-Za-z_]: %ld kB", name, &v) == 2) {
        if (which == 1 && strcmp(name, "Rss") == 0) lib_rss += v;
        if (which == 1 && strcmp(name, "Pss") == 0) lib_pss += v;
        if (which == 1 && strcmp(name, "Size") == 0) lib_size += v;
        if (which == 2 && strcmp(name, "Rss") == 0) pod_rss += v;
        if (which == 2 && strcmp(name, "Pss") == 0) pod_pss += v;
      } else if (strchr(line, '-') && strchr(line, ' ')) {
        which = strstr(line, "libgpushare.so") ? 1 : strstr(line, ".pod") ? 2 : 0;
      }
    }
    fclose(f);
  }
  printf("lib_size_kib=%ld\nlib_rss_kib=%ld\nlib_pss_kib=%ld\n", lib_size, lib_rss, lib_pss);
  printf("podfile_rss_kib=%ld\npodfile_pss_kib=%ld\n", pod_rss, pod_pss);
}

static int calls(long n) {
  long long t0 = now_ns();
  CUresult rc = cuInit(0);
  long long t1 = now_ns();
  printf("init_rc=%d\ninit_ns=%lld\n", rc, t1 - t0);
  if (rc != 0) return 1;
  CUdevice dev;
  rc = cuDeviceGet(&dev, 0);
  printf("device_rc=%d\n", rc);
  for (long i = 0; i < 10000; i++) rc = cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
  long long t2 = now_ns();
  for (long i = 0; i < n; i++) rc = cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
  long long t3 = now_ns();
  printf("launch_rc=%d\ncalls=%ld\nns_per_call=%.2f\n", rc, n, (double)(t3 - t2) / (double)n);
  CUgraph graph = NULL;
  CUgraphNode node = NULL;
  CUgraphExec exec = NULL;
  rc = cuGraphCreate(&graph, 0);
  if (!rc) rc = cuGraphAddKernelNode(&node, graph, NULL, 0, NULL);
  if (!rc) rc = cuGraphInstantiateWithFlags(&exec, graph, 0);
  if (rc) {
    printf("graph_rc=%d\n", rc);
    return 0;
  }
  for (long i = 0; i < 10000; i++) rc = cuGraphLaunch(exec, NULL);
  long long t4 = now_ns();
  for (long i = 0; i < n; i++) rc = cuGraphLaunch(exec, NULL);
  long long t5 = now_ns();
  printf("graph_rc=%d\ngraph_ns_per_call=%.2f\n", rc, (double)(t5 - t4) / (double)n);
  cuGraphExecDestroy(exec);
  cuGraphDestroy(graph);
  return 0;
}

static char token[512];
static struct addrinfo *server;
static const char *server_host, *server_port;

/* One request on a new connection, as the library makes them; its status, or -1. */
static int request(const char *method, const char *path, long long *ns) {
  static char buf[65536];
  char req[2048];
  int len = snprintf(req, sizeof req,
                     "%s %s HTTP/1.1\r\nHost: %s:%s\r\nUser-Agent: pod_side_bench\r\n"
                     "Accept: application/json\r\nAuthorization: Bearer %s\r\n"
                     "Content-Length: 0\r\nConnection: close\r\n\r\n",
                     method, path, server_host, server_port, token);
  long long t0 = now_ns();
  int fd = socket(server->ai_family, server->ai_socktype, server->ai_protocol);
  if (fd < 0 || connect(fd, server->ai_addr, server->ai_addrlen) != 0) return -1;
  if (send(fd, req, (size_t)len, 0) != len) return -1;
  size_t got = 0;
  ssize_t r;
  while ((r = recv(fd, buf + got, sizeof buf - got - 1, 0)) > 0) {
    got += (size_t)r;
    if (got >= sizeof buf - 1) got = 0; /* only the status line matters */
  }
  close(fd);
  *ns = now_ns() - t0;
  buf[got] = '\0';
  int status = -1;
  sscanf(buf, "HTTP/1.1 %d", &status);
  return status;
}

static int connect_to(const char *host, const char *port, const char *token_file) {
  FILE *f = fopen(token_file, "r");
  if (!f || !fgets(token, sizeof token, f)) {
    fprintf(stderr, "pod_side_bench: cannot read %s\n", token_file);
    return 2;
  }
  fclose(f);
  token[strcspn(token, "\r\n")] = '\0';
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
  if (getaddrinfo(host, port, &hints, &server) != 0) return 2;
  server_host = host, server_port = port;
  return 0;
}

/* K GETs of PATH */
static int http(const char *path, int k) {
  for (int i = 0; i < k; i++) {
    long long ns;
    int status = request("GET", path, &ns);
    printf("http_status=%d\nhttp_ns=%lld\n", status, ns);
  }
  return 0;
}

/* K demands of the pod at POD_PATH, each followed by its release: the decision's own round trip */
static int cycle(const char *pod_path, int k) {
  char demand[600];
  snprintf(demand, sizeof demand, "%s/demand", pod_path);
  for (int i = 0; i < k; i++) {
    long long ns, rel;
    int status = request("POST", demand, &ns);
    int released = request("DELETE", demand, &rel);
    printf("http_status=%d\ndemand_ns=%lld\nhttp_status=%d\nrelease_ns=%lld\n", status, ns,
           released, rel);
  }
  return 0;
}

int main(int argc, char **argv) {
  int rc = 2;
  if (argc == 3 && strcmp(argv[1], "calls") == 0) {
    rc = calls(atol(argv[2]));
  } else if (argc == 7 && (strcmp(argv[1], "http") == 0 || strcmp(argv[1], "cycle") == 0)) {
    rc = connect_to(argv[2], argv[3], argv[5]);
    if (!rc) rc = argv[1][0] == 'h' ? http(argv[4], atoi(argv[6])) : cycle(argv[4], atoi(argv[6]));
  } else {
    fprintf(stderr, "usage: pod_side_bench calls N | http HOST PORT PATH TOKEN_FILE K | "
                    "cycle HOST PORT POD_PATH TOKEN_FILE K\n");
    return 2;
  }
  memory();
  fflush(stdout);
  return rc;
}
