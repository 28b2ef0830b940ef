// The pod-side GPU check's program: the CUDA runtime as users' programs use it, under
// libgpushare.so. Steps, in order, each printing "<step> -> <cudaError_t> [what it got]" on stdout
// (the same lines as src/test/native/workload.c, which stands in for it in the rehearsal):
//   count      cudaGetDeviceCount: the first runtime call, so the one that waits for the grant
//   uuid       device 0's UUID as CUDA sees it
//   busy       keeps the GPU about 30 % busy (30 ms kernels every 100 ms); after 2 s runs
//              $CHECK_SMI with /bin/sh as a child (it inherits LD_PRELOAD and GPUSHARE_*), until
//              it exits (30 s at most)
//   hammer:S   S seconds of 1 ms kernels back to back (at most 8 in flight): a pod that would take
//              the whole GPU, for the compute limit; prints how many kernels ran
//   graphs:S   S seconds of CUDA graphs of four 1 ms kernels, launched back to back
//   entrypoints  the driver's answers to cuGetProcAddress_v2 and the object each lies in
//              (entry_points.h); the last step
//   alloc:N    cudaMalloc of N bytes     free  the latest allocation
//   meminfo    cudaMemGetInfo: free and total, and the GPU's own total (gpu=)
//   fill:N     allocates N bytes and fills them with a pattern
//   stdin      waits for a line on stdin
//   verify     a kernel checks every word fill wrote
// Exit status 0 after the last step, 2 on a usage error.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime.h>

#include "entry_points.h"

__global__ void spin(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); while (now - start < ns);
}

__global__ void fill(uint64_t *p, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = i * 0x9E3779B97F4A7C15ull;
}

__global__ void verify(const uint64_t *p, size_t n, unsigned long long *bad) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    if (p[i] != i * 0x9E3779B97F4A7C15ull) atomicAdd(bad, 1ull);
}

static void *held[64];
static int nheld;
static uint64_t *filled;
static size_t words;
static unsigned long long *bad;

static double now_s() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

// The duty cycle runs in this process while the child looks at it from outside.
static cudaError_t busy(char *extra, size_t n) {
  const char *cmd = getenv("CHECK_SMI");
  pid_t child = -1;
  int status = -1, kernels = 0;
  cudaError_t rc = cudaSuccess;
  for (double start = now_s(); now_s() - start < 32 && rc == cudaSuccess; kernels++) {
    if (child < 0 && cmd && now_s() - start >= 2) {
      fflush(NULL);
      child = fork();
      if (child == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
      }
    }
    if (child > 0 && waitpid(child, &status, WNOHANG) == child) break;
    spin<<<1, 1>>>(30000000ull);
    rc = cudaDeviceSynchronize();
    usleep(70000);
  }
  if (child > 0 && status == -1) kill(child, SIGKILL), waitpid(child, &status, 0);
  snprintf(extra, n, " kernels=%d child=%d", kernels, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return rc;
}

static cudaError_t step(const char *s, char *extra, size_t n) {
  unsigned long long a = 0;
  if (strcmp(s, "count") == 0) {
    int c = -1;
    cudaError_t rc = cudaGetDeviceCount(&c);
    snprintf(extra, n, " %d", c);
    return rc;
  }
  if (strcmp(s, "uuid") == 0) {
    cudaDeviceProp p;
    cudaError_t rc = cudaGetDeviceProperties(&p, 0);
    const unsigned char *u = (const unsigned char *)p.uuid.bytes;
    char *o = extra + snprintf(extra, n, " GPU-");
    for (int k = 0; k < 16 && rc == cudaSuccess; k++)
      o += sprintf(o, "%s%02x", k == 4 || k == 6 || k == 8 || k == 10 ? "-" : "", u[k]);
    return rc;
  }
  if (strcmp(s, "busy") == 0) return busy(extra, n);
  if (sscanf(s, "hammer:%llu", &a) == 1) {
    cudaError_t rc = cudaSuccess;
    long kernels = 0;
    for (double start = now_s(); now_s() - start < (double)a && rc == cudaSuccess; kernels++) {
      spin<<<1, 1>>>(1000000ull);
      if (kernels % 8 == 7) rc = cudaDeviceSynchronize();
    }
    if (rc == cudaSuccess) rc = cudaDeviceSynchronize();
    snprintf(extra, n, " kernels=%ld", kernels);
    return rc;
  }
  if (sscanf(s, "graphs:%llu", &a) == 1) {
    // a graph of four 1 ms kernels captured from a stream, launched back to back (at most two in
    // flight): what vLLM's decode and torch.compile's CUDA graphs put on a GPU
    cudaStream_t st = nullptr;
    cudaGraph_t g = nullptr;
    cudaGraphExec_t ge = nullptr;
    long graphs = 0;
    cudaError_t rc = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    if (rc == cudaSuccess) rc = cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal);
    if (rc == cudaSuccess) {
      for (int k = 0; k < 4; k++) spin<<<1, 1, 0, st>>>(1000000ull);
      rc = cudaStreamEndCapture(st, &g);
    }
    if (rc == cudaSuccess) rc = cudaGraphInstantiate(&ge, g, 0);
    for (double start = now_s(); rc == cudaSuccess && now_s() - start < (double)a; graphs++) {
      rc = cudaGraphLaunch(ge, st);
      if (rc == cudaSuccess && graphs % 2 == 1) rc = cudaStreamSynchronize(st);
    }
    if (rc == cudaSuccess) rc = cudaStreamSynchronize(st);
    snprintf(extra, n, " graphs=%ld", graphs);
    return rc;
  }
  if (strcmp(s, "entrypoints") == 0) {
    char list[2048];
    int internal = 0, answered = gc_entry_points(list, sizeof list, &internal);
    printf("%s -> %d answered=%d internal=%d%s\n", s, answered < 0 ? 100 : 0, answered, internal,
           list);
    exit(0);
  }
  if (sscanf(s, "alloc:%llu", &a) == 1) {
    void *p = nullptr;
    cudaError_t rc = cudaMalloc(&p, a);
    if (rc == cudaSuccess && nheld < 64) held[nheld++] = p;
    snprintf(extra, n, " %s", cudaGetErrorName(rc));
    return rc;
  }
  if (strcmp(s, "free") == 0) return nheld ? cudaFree(held[--nheld]) : cudaErrorInvalidValue;
  if (strcmp(s, "meminfo") == 0) {
    size_t f = 0, t = 0;
    cudaDeviceProp p;
    cudaError_t rc = cudaMemGetInfo(&f, &t);
    if (rc == cudaSuccess) rc = cudaGetDeviceProperties(&p, 0);
    snprintf(extra, n, " %zu %zu gpu=%zu", f, t, rc == cudaSuccess ? p.totalGlobalMem : 0);
    return rc;
  }
  if (sscanf(s, "fill:%llu", &a) == 1) {
    words = a / sizeof(uint64_t);
    cudaError_t rc = cudaMalloc(&filled, words * sizeof(uint64_t));
    if (rc == cudaSuccess) rc = cudaMalloc(&bad, sizeof *bad);
    if (rc == cudaSuccess) rc = cudaMemset(bad, 0, sizeof *bad);
    if (rc == cudaSuccess) fill<<<1024, 256>>>(filled, words);
    // verify's first launch here (nothing to check), so that its module is loaded before the
    // checkpoint: the wake is then the launch itself, not the runtime's lazy loading
    if (rc == cudaSuccess) verify<<<1, 1>>>(filled, 0, bad);
    if (rc == cudaSuccess) rc = cudaDeviceSynchronize();
    snprintf(extra, n, " pid=%d", (int)getpid());
    return rc;
  }
  if (strcmp(s, "stdin") == 0) {
    char line[256];
    return fgets(line, sizeof line, stdin) ? cudaSuccess : cudaErrorUnknown;
  }
  if (strcmp(s, "verify") == 0) {
    unsigned long long h = ~0ull;
    verify<<<1024, 256>>>(filled, words, bad);
    cudaError_t rc = cudaDeviceSynchronize();
    if (rc == cudaSuccess) rc = cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost);
    if (rc == cudaSuccess) snprintf(extra, n, " mismatches=%llu", h);
    return rc == cudaSuccess && h ? cudaErrorUnknown : rc;
  }
  fprintf(stderr, "check: unknown step %s\n", s);
  exit(2);
}

int main(int argc, char **argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  for (int i = 1; i < argc; i++) {
    char extra[256] = "";
    cudaError_t rc = step(argv[i], extra, sizeof extra);
    printf("%s -> %d%s\n", argv[i], (int)rc, extra);
  }
  return 0;
}
