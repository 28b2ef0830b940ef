/*
 * A host program on the real CUDA runtime (libcudart.so.13), as CUDA programs are: the runtime
 * finds the driver with dlopen("libcuda.so.1") and dlsym(cuGetProcAddress*), then resolves every
 * driver function through cuGetProcAddress. Against the fake driver it stops at cuGetExportTable
 * (the driver's private tables), after cuInit: enough for the demand and the grant.
 *
 *   gcc -o runtime_count runtime_count.c -L/usr/local/cuda/lib64 -l:libcudart.so.13 \
 *       -Wl,-rpath,/usr/local/cuda/lib64
 *
 * Built by PodSideScenarios only where the toolkit is installed (not with the other programs).
 */
#include <stdio.h>

int cudaGetDeviceCount(int *count); /* cuda_runtime_api.h */

int main(void) {
  int n = -1;
  int rc = cudaGetDeviceCount(&n);
  printf("cudaGetDeviceCount -> %d %d\n", rc, n);
  return 0;
}
