/*
 * The `sleep` of the real node's stand-in for the reference pod's image (NodeImages.STRESS,
 * registry-cn-wulanchabu-vpc.ack.aliyuncs.com/acs/stress:v1.0.4, whose manifest runs `sleep 1000h`
 * as the container's command): a GPU stress tool's sleep, which touches its GPU first. It finds
 * the driver as the CUDA runtime does (dlopen of libcuda.so.1, every function through
 * cuGetProcAddress_v2), initialises it (the pod's demand: under libgpushare.so the call waits while
 * the pod is Ready), makes the device's primary context current and allocates 1 MiB, says so on
 * stdout with its PID, and sleeps as sleep(1) does (N[smhd], whole or fractional). It leaves every
 * signal at its default, as sleep(1) does: as PID 1 of its container, the kubelet's SIGTERM ends it
 * only through the handler libgpushare.so installs (it releases the share, then exits 143).
 *
 *   sleep 1000h  ->  "gpu_sleep: pid 1: cuInit 0 after 3.2 ms, context 0, 1 MiB 0 on GPU-…; sleeping 3600000 s"
 * (how long cuInit took: the demand to Running, when the pod waits for nothing)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef int (*get_t)(const char *, void **, int, unsigned long long, int *);

static void *fn(get_t get, const char *name, int version) {
  void *p = NULL;
  int status = 0;
  return get(name, &p, version, 1 /* CU_GET_PROC_ADDRESS_LEGACY_STREAM */, &status) == 0 ? p : NULL;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  double seconds = 0;
  for (int i = 1; i < argc; i++) {
    char *end = NULL;
    double v = strtod(argv[i], &end);
    double unit = *end == 'm' ? 60 : *end == 'h' ? 3600 : *end == 'd' ? 86400 : 1;
    if (end == argv[i] || (*end && strchr("smhd", *end) == NULL) || (*end && end[1])) {
      fprintf(stderr, "sleep: invalid time interval '%s'\n", argv[i]);
      return 1;
    }
    seconds += v * unit;
  }
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
  get_t get = cuda ? (get_t)dlsym(cuda, "cuGetProcAddress_v2") : NULL;
  if (!get) {
    fprintf(stderr, "gpu_sleep: no CUDA driver (%s)\n", cuda ? "no cuGetProcAddress_v2" : dlerror());
    return 1;
  }
  CUresult (*init)(unsigned) = (CUresult(*)(unsigned))fn(get, "cuInit", 2000);
  CUresult (*device)(int *, int) = (CUresult(*)(int *, int))fn(get, "cuDeviceGet", 2000);
  CUresult (*uuid)(unsigned char *, int) =
      (CUresult(*)(unsigned char *, int))fn(get, "cuDeviceGetUuid", 11040);
  CUresult (*retain)(void **, int) = (CUresult(*)(void **, int))fn(get, "cuDevicePrimaryCtxRetain", 7000);
  CUresult (*current)(void *) = (CUresult(*)(void *))fn(get, "cuCtxSetCurrent", 4000);
  CUresult (*alloc)(unsigned long long *, size_t) =
      (CUresult(*)(unsigned long long *, size_t))fn(get, "cuMemAlloc", 3020);
  if (!init || !device || !uuid || !retain || !current || !alloc) {
    fprintf(stderr, "gpu_sleep: the driver lacks a function it needs\n");
    return 1;
  }
  int dev = 0;
  void *ctx = NULL;
  unsigned long long ptr = 0;
  unsigned char u[16] = {0};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CUresult rc = init(0); /* the demand: it returns once the pod is Running */
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double init_ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
  CUresult crc = rc ? rc : device(&dev, 0);
  if (!crc) crc = retain(&ctx, dev);
  if (!crc) crc = current(ctx);
  CUresult arc = crc ? crc : alloc(&ptr, 1 << 20);
  char id[64] = "";
  if (!rc && uuid(u, dev) == 0) {
    char *o = id + sprintf(id, "GPU-");
    for (int k = 0; k < 16; k++) {
      o += sprintf(o, "%s%02x", k == 4 || k == 6 || k == 8 || k == 10 ? "-" : "", u[k]);
    }
  }
  printf("gpu_sleep: pid %d: cuInit %d after %.3f ms, context %d, 1 MiB %d on %s; sleeping %.0f s\n",
         (int)getpid(), rc, init_ms, crc, arc, id, seconds);
  struct timespec t = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
  while (nanosleep(&t, &t) != 0) {
  }
  return 0;
}
