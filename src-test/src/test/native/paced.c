/*
 * A pod's process paced by the test: it reads one step per line on its standard input and runs it,
 * a CUDA driver call through the symbols it is linked with, printing "<step> -> <CUresult> [what it
 * got]" on stdout as gpu-actors' workload does for the steps of its command line. So a test decides
 * when each call happens (the next GPU work of an idle process, a process that ends while others
 * wait). At the end of its input it returns from main with status 0: a normal exit, destructors
 * and all.
 *
 * Steps: init  ctx (device 0's primary context, made current)  alloc:BYTES  meminfo  launch  sync
 *
 * build: -l:libcuda.so.1
 */
#include <stdio.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUstream, *CUfunction;
typedef unsigned long long CUdeviceptr;

CUresult cuInit(unsigned);
CUresult cuDeviceGet(CUdevice *, int);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, CUdevice);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemGetInfo_v2(size_t *, size_t *);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, CUstream, void **, void **);
CUresult cuCtxSynchronize(void);

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  char line[256];
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (!line[0]) continue;
    char extra[96] = "";
    unsigned long long n = 0;
    CUresult rc;
    if (strcmp(line, "init") == 0) {
      rc = cuInit(0);
    } else if (strcmp(line, "ctx") == 0) {
      CUdevice d = 0;
      CUcontext c = NULL;
      rc = cuDeviceGet(&d, 0);
      if (!rc) rc = cuDevicePrimaryCtxRetain(&c, d);
      if (!rc) rc = cuCtxSetCurrent(c);
    } else if (sscanf(line, "alloc:%llu", &n) == 1) {
      CUdeviceptr p = 0;
      rc = cuMemAlloc_v2(&p, n);
      if (!rc) snprintf(extra, sizeof extra, " 0x%llx", p);
    } else if (strcmp(line, "meminfo") == 0) {
      size_t f = 0, t = 0;
      rc = cuMemGetInfo_v2(&f, &t);
      snprintf(extra, sizeof extra, " %zu %zu", f, t);
    } else if (strcmp(line, "launch") == 0) {
      rc = cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    } else if (strcmp(line, "sync") == 0) {
      rc = cuCtxSynchronize();
    } else {
      fprintf(stderr, "paced: unknown step %s\n", line);
      return 2;
    }
    printf("%s -> %d%s\n", line, rc, extra);
  }
  return 0;
}
