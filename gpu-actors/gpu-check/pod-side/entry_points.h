/*
 * The driver's entry points as the CUDA runtime asks for them (cuGetProcAddress_v2 on the
 * dlopen'ed libcuda.so.1, by name without suffix, with a CUDA version and the per-thread flag), and
 * which object each answer lies in. Shared by the GPU check's program (check.cu, C++) and its
 * stand-in in the rehearsal (src/test/native/workload.c, C): the step "entrypoints".
 *
 * Each asked name is printed as NAME@VERSION[/pt]=FILE:HOW, where FILE is the object the pointer
 * lies in (dladdr) and HOW is "exported" when the pointer is what dlsym gives for the name or one of
 * its exported variants (_v2, _ptsz, _ptds, _v2_ptds), "internal" when it is not (a real driver may
 * answer with internal entry points), "-" when the driver has no such function. Under
 * libgpushare.so every FILE must be the library: its wrappers stand in front of whatever the
 * driver answered. Without it, the count of "internal" answers is the fact the library's
 * resolution by name and version exists for.
 */
#ifndef GPU_CHECK_ENTRY_POINTS_H
#define GPU_CHECK_ENTRY_POINTS_H

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int (*gc_proc_address_v2)(const char *, void **, int, unsigned long long, int *);

/* Fills out with the answers; returns how many names the driver answered, -1 without a driver. */
static int gc_entry_points(char *out, size_t n, int *internal) {
  static const struct {
    const char *name;
    int version;
    unsigned long long flags; /* 2: CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM */
  } asked[] = {
      {"cuInit", 2000, 0},           {"cuMemAlloc", 3020, 0},        {"cuMemFree", 3020, 0},
      {"cuMemGetInfo", 3020, 0},     {"cuDeviceTotalMem", 3020, 0},  {"cuMemAllocAsync", 11020, 0},
      {"cuLaunchKernel", 4000, 0},   {"cuLaunchKernel", 7000, 2},    {"cuGraphLaunch", 10000, 0},
      {"cuGraphLaunch", 10000, 2},   {"cuCtxSynchronize", 2000, 0},  {"cuStreamSynchronize", 7000, 2},
  };
  static const char *const suffixes[] = {"", "_v2", "_ptsz", "_ptds", "_v2_ptds", "_v2_ptsz"};
  size_t at = 0;
  int answered = 0;
  *internal = 0;
  out[0] = '\0';
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h) return -1;
  gc_proc_address_v2 get = (gc_proc_address_v2)dlsym(h, "cuGetProcAddress_v2");
  if (!get) return -1;
  for (size_t i = 0; i < sizeof asked / sizeof asked[0]; i++) {
    void *p = NULL;
    int status = 0;
    const char *file = "-", *how = "-";
    if (get(asked[i].name, &p, asked[i].version, asked[i].flags, &status) == 0 && p) {
      Dl_info info;
      file = "?";
      if (dladdr(p, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        file = slash ? slash + 1 : info.dli_fname;
      }
      how = "internal";
      for (size_t s = 0; s < sizeof suffixes / sizeof suffixes[0]; s++) {
        char exported[96];
        snprintf(exported, sizeof exported, "%s%s", asked[i].name, suffixes[s]);
        if (dlsym(h, exported) == p) how = "exported";
      }
      if (strcmp(how, "internal") == 0) (*internal)++;
      answered++;
    }
    int w = snprintf(out + at, at < n ? n - at : 0, " %s@%d%s=%s:%s", asked[i].name,
                     asked[i].version, asked[i].flags ? "/pt" : "", file, how);
    if (w > 0) at += (size_t)w;
  }
  return answered;
}

#endif
