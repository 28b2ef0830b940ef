/*
 * What a process in the pod sees of NVML, as nvidia-smi -L plus utilisation would show it: the
 * device count, then for each device its real index, UUID, utilisation, the first process
 * sample's SM utilisation, the total memory and how many compute processes it lists.
 *
 *   gcc -std=c17 -O2 -Wall -Wextra -o nvml_view nvml_view.c -L<dir of libnvidia-ml.so.1> \
 *       -l:libnvidia-ml.so.1 -ldl
 *   LD_PRELOAD=libgpushare.so ./nvml_view [--link] [--then-cuinit] [uuid=GPU-...]
 *                                         [pci=00000000:11:00.0]
 *
 * By default every function comes from dlsym on dlopen("libnvidia-ml.so.1"), as nvidia-smi and
 * most tools reach NVML (the path through the library's dlsym); --link calls the linked symbols
 * instead (the path through the library's exports). Each uuid=/pci= argument is looked up
 * afterwards and printed with the answer's code. --then-cuinit then calls cuInit(0) (dlsym on
 * dlopen("libcuda.so.1"), as the CUDA runtime does: the pod's demand and grant), prints
 * "cuInit <rc>" and shows the devices again, NVML still initialised once: what a framework that
 * asks NVML before its first CUDA call sees afterwards. --again lists the devices once more for
 * each line on its standard input (NVML still initialised once: nvidia-smi -l, a monitoring agent),
 * each listing after a line "list N".
 *
 * Output, one line each:
 *   count 1
 *   gpu index=1 uuid=GPU-... util=84 mem=17 procutil=84 memtotal=102625181696 procs=1
 *   past index=1 rc=2
 *   lookup uuid=GPU-... rc=0 index=1
 * A failing call prints err<code> in place of its value; exit status 1 when nvmlInit_v2 or the
 * count fails, 0 otherwise.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *d);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *d);
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *index);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u);
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, nvmlProcessUtilizationSample_t *s,
                                             unsigned int *n, unsigned long long lastSeen);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m);
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned int *n,
                                                     nvmlProcessInfo_t *infos);

static struct {
  nvmlReturn_t (*init)(void);
  nvmlReturn_t (*count)(unsigned int *);
  nvmlReturn_t (*by_index)(unsigned int, nvmlDevice_t *);
  nvmlReturn_t (*by_uuid)(const char *, nvmlDevice_t *);
  nvmlReturn_t (*by_pci)(const char *, nvmlDevice_t *);
  nvmlReturn_t (*index)(nvmlDevice_t, unsigned int *);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
  nvmlReturn_t (*util)(nvmlDevice_t, nvmlUtilization_t *);
  nvmlReturn_t (*proc_util)(nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned int *,
                            unsigned long long);
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
  nvmlReturn_t (*procs)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
} nvml;

static void link_directly(void) {
  nvml.init = nvmlInit_v2;
  nvml.count = nvmlDeviceGetCount_v2;
  nvml.by_index = nvmlDeviceGetHandleByIndex_v2;
  nvml.by_uuid = nvmlDeviceGetHandleByUUID;
  nvml.by_pci = nvmlDeviceGetHandleByPciBusId_v2;
  nvml.index = nvmlDeviceGetIndex;
  nvml.uuid = nvmlDeviceGetUUID;
  nvml.util = nvmlDeviceGetUtilizationRates;
  nvml.proc_util = nvmlDeviceGetProcessUtilization;
  nvml.memory = nvmlDeviceGetMemoryInfo;
  nvml.procs = nvmlDeviceGetComputeRunningProcesses_v2;
}

static int look_up(void *lib, const char *name, void *slot) {
  void *p = dlsym(lib, name);
  if (p == NULL) {
    fprintf(stderr, "nvml_view: no %s in libnvidia-ml.so.1\n", name);
    return -1;
  }
  memcpy(slot, &p, sizeof p); /* a function pointer from dlsym's void *, as POSIX allows */
  return 0;
}

static int open_library(void) {
  void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (lib == NULL) {
    fprintf(stderr, "nvml_view: %s\n", dlerror());
    return -1;
  }
  return look_up(lib, "nvmlInit_v2", &nvml.init) | look_up(lib, "nvmlDeviceGetCount_v2", &nvml.count)
         | look_up(lib, "nvmlDeviceGetHandleByIndex_v2", &nvml.by_index)
         | look_up(lib, "nvmlDeviceGetHandleByUUID", &nvml.by_uuid)
         | look_up(lib, "nvmlDeviceGetHandleByPciBusId_v2", &nvml.by_pci)
         | look_up(lib, "nvmlDeviceGetIndex", &nvml.index)
         | look_up(lib, "nvmlDeviceGetUUID", &nvml.uuid)
         | look_up(lib, "nvmlDeviceGetUtilizationRates", &nvml.util)
         | look_up(lib, "nvmlDeviceGetProcessUtilization", &nvml.proc_util)
         | look_up(lib, "nvmlDeviceGetMemoryInfo", &nvml.memory)
         | look_up(lib, "nvmlDeviceGetComputeRunningProcesses_v2", &nvml.procs);
}

static void show(nvmlDevice_t d) {
  unsigned int index = 0;
  char uuid[96] = "";
  nvmlUtilization_t u = {0, 0};
  nvmlProcessUtilizationSample_t samples[64];
  unsigned int n = 64;
  nvmlMemory_t m = {0, 0, 0};
  nvmlReturn_t rc;

  printf("gpu");
  if ((rc = nvml.index(d, &index))) printf(" index=err%d", rc); else printf(" index=%u", index);
  if ((rc = nvml.uuid(d, uuid, sizeof uuid))) printf(" uuid=err%d", rc); else printf(" uuid=%s", uuid);
  if ((rc = nvml.util(d, &u))) printf(" util=err%d mem=err%d", rc, rc);
  else printf(" util=%u mem=%u", u.gpu, u.memory);
  rc = nvml.proc_util(d, samples, &n, 0);
  if (rc) printf(" procutil=err%d", rc);
  else if (n == 0) printf(" procutil=none");
  else printf(" procutil=%u", samples[0].smUtil);
  if ((rc = nvml.memory(d, &m))) printf(" memtotal=err%d", rc); else printf(" memtotal=%llu", m.total);
  nvmlProcessInfo_t infos[64];
  unsigned int count = 64;
  if ((rc = nvml.procs(d, &count, infos))) printf(" procs=err%d", rc); else printf(" procs=%u", count);
  printf("\n");
}

static void look_up_device(const char *arg) {
  nvmlDevice_t d = NULL;
  nvmlReturn_t rc;
  unsigned int index = 0;
  if (strncmp(arg, "uuid=", 5) == 0) rc = nvml.by_uuid(arg + 5, &d);
  else if (strncmp(arg, "pci=", 4) == 0) rc = nvml.by_pci(arg + 4, &d);
  else {
    fprintf(stderr, "nvml_view: %s: expected uuid=... or pci=...\n", arg);
    return;
  }
  printf("lookup %s rc=%d", arg, rc);
  if (rc == 0 && nvml.index(d, &index) == 0) printf(" index=%u", index);
  printf("\n");
}

/* The count and each device; 1 when the count fails. */
static int list(void) {
  nvmlReturn_t rc;
  unsigned int count = 0;
  if ((rc = nvml.count(&count))) {
    printf("count err%d\n", rc);
    return 1;
  }
  printf("count %u\n", count);
  for (unsigned int i = 0; i < count; i++) {
    nvmlDevice_t d = NULL;
    if ((rc = nvml.by_index(i, &d))) printf("gpu %u err%d\n", i, rc);
    else show(d);
  }
  nvmlDevice_t past = NULL;
  printf("past index=%u rc=%d\n", count, nvml.by_index(count, &past));
  return 0;
}

int main(int argc, char **argv) {
  int linked = 0, then_cuinit = 0, again = 0, first = 1;
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (; first < argc && strncmp(argv[first], "--", 2) == 0; first++) {
    if (strcmp(argv[first], "--link") == 0) linked = 1;
    else if (strcmp(argv[first], "--then-cuinit") == 0) then_cuinit = 1;
    else if (strcmp(argv[first], "--again") == 0) again = 1;
    else {
      fprintf(stderr, "nvml_view: unknown option %s\n", argv[first]);
      return 2;
    }
  }
  if (linked) link_directly();
  else if (open_library()) return 1;

  nvmlReturn_t rc = nvml.init();
  if (rc) {
    printf("init err%d\n", rc);
    return 1;
  }
  if (list()) return 1;
  if (then_cuinit) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    void *p = cuda ? dlsym(cuda, "cuInit") : NULL;
    int (*cu_init)(unsigned) = NULL;
    if (p == NULL) {
      printf("cuInit missing\n");
      return 1;
    }
    memcpy(&cu_init, &p, sizeof p);
    printf("cuInit %d\n", cu_init(0));
    if (list()) return 1;
  }
  for (int a = first; a < argc; a++) look_up_device(argv[a]);
  char line[256];
  for (int n = 2; again && fgets(line, sizeof line, stdin); n++) {
    printf("list %d\n", n);
    if (list()) return 1;
  }
  return 0;
}
