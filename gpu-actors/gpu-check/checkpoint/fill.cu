// The workload of the checkpoint GPU check: allocates GIB GiB of device memory, fills it with a
// pattern, prints "ready <pid> <bytes>", then waits for a line on stdin ("verify"), checks every
// word on the device and prints "verified <bytes>" (exit 0) or "MISMATCH ..." (exit 1). Between
// the two, CheckpointCheck locks, checkpoints, restores and unlocks this process; the process
// never sees a signal.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <unistd.h>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); return 2; } } while (0)

__global__ void fill(uint64_t *p, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = i * 0x9E3779B97F4A7C15ull;
}

__global__ void verify(const uint64_t *p, size_t n, unsigned long long *bad) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    if (p[i] != i * 0x9E3779B97F4A7C15ull) atomicAdd(bad, 1ull);
}

int main(int argc, char **argv) {
  double gib = argc > 1 ? atof(argv[1]) : 1.0;
  size_t bytes = (size_t)(gib * (1ull << 30));
  size_t n = bytes / sizeof(uint64_t);
  uint64_t *p;
  unsigned long long *bad;
  CHECK(cudaMalloc(&p, n * sizeof(uint64_t)));
  CHECK(cudaMalloc(&bad, sizeof *bad));
  CHECK(cudaMemset(bad, 0, sizeof *bad));
  fill<<<1024, 256>>>(p, n);
  CHECK(cudaDeviceSynchronize());
  printf("ready %d %zu\n", (int)getpid(), n * sizeof(uint64_t));
  fflush(stdout);
  char line[64];
  if (!fgets(line, sizeof line, stdin)) return 3;
  verify<<<1024, 256>>>(p, n, bad);
  CHECK(cudaDeviceSynchronize());
  unsigned long long h = 0;
  CHECK(cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost));
  if (h) { printf("MISMATCH %llu words\n", h); return 1; }
  printf("verified %zu\n", n * sizeof(uint64_t));
  return 0;
}
