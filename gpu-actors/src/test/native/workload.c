/*
 * A process of a pod as the pod-side tests need one: it drives the CUDA driver API step by step,
 * the way users' programs reach it.
 *
 *   gcc -std=c17 -O2 -Wall -Wextra -D_GNU_SOURCE -o workload workload.c -L<dir of libcuda.so.1> \
 *       -l:libcuda.so.1 -ldl
 *   LD_PRELOAD=libgpushare.so ./workload [--via symbol|dlsym|procaddress] [--flags N] STEP...
 *
 * --via says how it finds the driver's functions:
 *   symbol       calls the functions it is linked with (the default)
 *   dlsym        dlopen("libcuda.so.1") and dlsym of each exported name
 *   procaddress  dlopen, dlsym of cuGetProcAddress_v2 (else cuGetProcAddress) only, and every
 *                function through it by its name without suffix, as the CUDA runtime does: CUDA
 *                13000 (cuInit 2000) and flags 0, or --flags N (2: the per-thread default stream)
 *
 * Steps, in order, each printing one line "<step> -> <CUresult> [what it got]" on stdout:
 *   init  ctx (device 0's primary context, made current)  count  uuid
 *   alloc:BYTES (cuMemAlloc)  pitch:W:H  managed:BYTES  async:BYTES (cuMemAllocAsync)
 *   create:BYTES (cuMemCreate)  hostcreate:BYTES (cuMemCreate of pinned host memory)
 *   array:W:H (cuArrayCreate, one float channel)
 *   threshold:BYTES (the release threshold of device 0's default pool; max: UINT64_MAX)
 *   trim:BYTES (cuMemPoolTrimTo of device 0's default pool)
 *   module (cuModuleLoadData; free unloads it)  release (device 0's primary context released)
 *   race:N:BYTES (a second thread allocates BYTES and frees them N times while this one makes N
 *   allocations of BYTES and keeps them: the driver gives a freed address again at once)
 *   free (the latest allocation of any kind)  freeall  meminfo (free and total)
 *   launch  memcpy (host to the latest allocation)  sync (cuCtxSynchronize)  streamsync
 *   sleep:MS  loop:MS:N (N launches MS apart)  exit:N  hold (sleeps until killed, silently)
 *   stdin (waits for a line on its standard input)  ignore:USR1|TERM|INT (SIG_IGN)
 *   train:MS (launches a kernel every MS until SIGUSR1 or SIGTERM comes, whose handler only sets a
 *   flag, as a Python framework's does; then, on the main thread, saves as such a handler does:
 *   the latest allocation copied to the host and a synchronisation, printed "save -> <CUresult>",
 *   and exits 0 with what the copy got)
 *   fork: the child runs the steps after it; the parent waits and exits with the child's status
 *   env:NAME (prints the variable's value as the program sees it, or "(unset)")
 *   ctxcreate:V (cuCtxCreate as CUDA V's runtime asks cuGetProcAddress_v2 for it, called with the
 *   signature of the variant V has: 12050 on a params struct, whose address it prints; 11040 an
 *   affinity list; else flags and device)
 *   entrypoints (the driver's answers to cuGetProcAddress_v2 for a few names, and the object each
 *   lies in: gpu-check/pod-side/entry_points.h)
 *   exec: the process executes itself anew (same options) with the steps after it
 * Exit status 0 after the last step (or exit:N's N); 2 on a usage error.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../../gpu-check/pod-side/entry_points.h"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef int CUdevice;
typedef void *CUcontext, *CUstream, *CUarray, *CUfunction;
typedef struct { unsigned char bytes[16]; } CUuuid;
typedef struct { size_t Width, Height; int Format; unsigned NumChannels; } CUDA_ARRAY_DESCRIPTOR;
/* cuda.h's CUmemAllocationProp: pinned memory on device 0 */
typedef struct {
  int type, requestedHandleTypes;
  struct { int type, id; } location;
  void *win32HandleMetaData;
  unsigned char allocFlags[8];
} CUmemAllocationProp;

/* The linked functions (for --via symbol), declared as cuda.h declares them. */
CUresult cuInit(unsigned);
CUresult cuDeviceGet(CUdevice *, int);
CUresult cuDeviceGetCount(int *);
CUresult cuDeviceGetUuid_v2(CUuuid *, CUdevice);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, CUdevice);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemAllocPitch_v2(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
CUresult cuMemAllocManaged(CUdeviceptr *, size_t, unsigned);
CUresult cuMemAllocAsync(CUdeviceptr *, size_t, CUstream);
CUresult cuMemCreate(unsigned long long *, size_t, const CUmemAllocationProp *, unsigned long long);
CUresult cuArrayCreate_v2(CUarray *, const CUDA_ARRAY_DESCRIPTOR *);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemFreeAsync(CUdeviceptr, CUstream);
CUresult cuMemRelease(unsigned long long);
CUresult cuArrayDestroy(CUarray);
CUresult cuMemGetInfo_v2(size_t *, size_t *);
CUresult cuDeviceGetDefaultMemPool(void **, CUdevice);
CUresult cuMemPoolSetAttribute(void *, int, void *);
CUresult cuMemPoolTrimTo(void *, size_t);
CUresult cuModuleLoadData(void **, const void *);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice);
CUresult cuModuleUnload(void *);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, CUstream, void **, void **);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
CUresult cuCtxSynchronize(void);
CUresult cuStreamSynchronize(CUstream);

/* (field, exported name, name without suffix, linked function) */
#define API(X)                                                                  \
  X(init, "cuInit", "cuInit", cuInit)                                           \
  X(device_get, "cuDeviceGet", "cuDeviceGet", cuDeviceGet)                      \
  X(device_count, "cuDeviceGetCount", "cuDeviceGetCount", cuDeviceGetCount)     \
  X(device_uuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid", cuDeviceGetUuid_v2)   \
  X(retain, "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain) \
  X(set_current, "cuCtxSetCurrent", "cuCtxSetCurrent", cuCtxSetCurrent)         \
  X(alloc, "cuMemAlloc_v2", "cuMemAlloc", cuMemAlloc_v2)                        \
  X(pitch, "cuMemAllocPitch_v2", "cuMemAllocPitch", cuMemAllocPitch_v2)         \
  X(managed, "cuMemAllocManaged", "cuMemAllocManaged", cuMemAllocManaged)       \
  X(async, "cuMemAllocAsync", "cuMemAllocAsync", cuMemAllocAsync)               \
  X(create, "cuMemCreate", "cuMemCreate", cuMemCreate)                          \
  X(array, "cuArrayCreate_v2", "cuArrayCreate", cuArrayCreate_v2)               \
  X(free, "cuMemFree_v2", "cuMemFree", cuMemFree_v2)                            \
  X(free_async, "cuMemFreeAsync", "cuMemFreeAsync", cuMemFreeAsync)             \
  X(release, "cuMemRelease", "cuMemRelease", cuMemRelease)                      \
  X(array_destroy, "cuArrayDestroy", "cuArrayDestroy", cuArrayDestroy)          \
  X(meminfo, "cuMemGetInfo_v2", "cuMemGetInfo", cuMemGetInfo_v2)                \
  X(default_pool, "cuDeviceGetDefaultMemPool", "cuDeviceGetDefaultMemPool",       \
    cuDeviceGetDefaultMemPool)                                                  \
  X(pool_set, "cuMemPoolSetAttribute", "cuMemPoolSetAttribute", cuMemPoolSetAttribute) \
  X(pool_trim, "cuMemPoolTrimTo", "cuMemPoolTrimTo", cuMemPoolTrimTo)           \
  X(module_load, "cuModuleLoadData", "cuModuleLoadData", cuModuleLoadData)      \
  X(release_primary, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease",            \
    cuDevicePrimaryCtxRelease_v2)                                               \
  X(module_unload, "cuModuleUnload", "cuModuleUnload", cuModuleUnload)          \
  X(launch, "cuLaunchKernel", "cuLaunchKernel", cuLaunchKernel)                 \
  X(memcpy_htod, "cuMemcpyHtoD_v2", "cuMemcpyHtoD", cuMemcpyHtoD_v2)            \
  X(memcpy_dtoh, "cuMemcpyDtoH_v2", "cuMemcpyDtoH", cuMemcpyDtoH_v2)            \
  X(sync, "cuCtxSynchronize", "cuCtxSynchronize", cuCtxSynchronize)             \
  X(stream_sync, "cuStreamSynchronize", "cuStreamSynchronize", cuStreamSynchronize)

#define FIELD(field, exported, base, fn) __typeof__(&fn) field;
static struct { API(FIELD) } cu;
/* cuCtxSynchronize through cuGetProcAddress at 13000 is cuCtxSynchronize_v2(CUcontext) */
static CUresult (*sync_v2)(CUcontext);

typedef CUresult (*proc_address_v2_t)(const char *, void **, int, unsigned long long, int *);
typedef CUresult (*proc_address_t)(const char *, void **, int, unsigned long long);

static int usage(const char *why) {
  fprintf(stderr, "workload: %s\n", why);
  return 2;
}

static int resolve(const char *via, unsigned long long flags) {
  if (strcmp(via, "symbol") == 0) {
#define LINKED(field, exported, base, fn) cu.field = fn;
    API(LINKED)
    return 0;
  }
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h) return usage(dlerror());
  if (strcmp(via, "dlsym") == 0) {
#define LOOKED_UP(field, exported, base, fn) cu.field = (__typeof__(cu.field))dlsym(h, exported);
    API(LOOKED_UP)
    return 0;
  }
  if (strcmp(via, "procaddress") != 0) return usage("--via is symbol, dlsym or procaddress");
  proc_address_v2_t v2 = (proc_address_v2_t)dlsym(h, "cuGetProcAddress_v2");
  proc_address_t v1 = v2 ? NULL : (proc_address_t)dlsym(h, "cuGetProcAddress");
  if (!v2 && !v1) return usage("the driver has no cuGetProcAddress");
#define ASKED(field, exported, base, fn)                                                  \
  {                                                                                       \
    int version = strcmp(base, "cuInit") == 0 ? 2000 : 13000, status = 0;                 \
    void *p = NULL;                                                                       \
    CUresult rc = v2 ? v2(base, &p, version, flags, &status) : v1(base, &p, version, flags); \
    cu.field = rc ? NULL : (__typeof__(cu.field))p;                                       \
  }
  API(ASKED)
  /* at 13000 the driver hands back cuCtxSynchronize_v2 for cuCtxSynchronize */
  sync_v2 = (CUresult(*)(CUcontext))(void *)cu.sync;
  cu.sync = NULL;
  return 0;
}

/* What was allocated, newest last, to free in reverse. */
enum kind { PLAIN, ASYNC, CREATED, ARRAY, MODULE };
static struct { enum kind kind; unsigned long long key; } held[4096];
static int nheld;

static void remember(enum kind kind, unsigned long long key) {
  if (nheld < (int)(sizeof held / sizeof held[0])) held[nheld].kind = kind, held[nheld++].key = key;
}

#define CALL(field, ...) (cu.field ? cu.field(__VA_ARGS__) : 500 /* CUDA_ERROR_NOT_FOUND */)

static CUresult free_latest(void) {
  if (!nheld) return 1; /* CUDA_ERROR_INVALID_VALUE: nothing to free */
  nheld--;
  switch (held[nheld].kind) {
    case ASYNC: return CALL(free_async, held[nheld].key, NULL);
    case CREATED: return CALL(release, held[nheld].key);
    case ARRAY: return CALL(array_destroy, (CUarray)(size_t)held[nheld].key);
    case MODULE: return CALL(module_unload, (void *)(size_t)held[nheld].key);
    default: return CALL(free, held[nheld].key);
  }
}

struct churn { unsigned long long times, bytes; CUresult rc; };

static void *churn(void *arg) {
  struct churn *c = arg;
  for (unsigned long long i = 0; i < c->times && !c->rc; i++) {
    CUdeviceptr p = 0;
    c->rc = CALL(alloc, &p, c->bytes);
    if (!c->rc) c->rc = CALL(free, p);
  }
  return NULL;
}

static void sleep_ms(long ms);
static volatile sig_atomic_t asked_to_stop;
static void on_stop(int sig) { asked_to_stop = sig; }

/* train:MS */
static int train(long ms, char *extra, size_t n) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop;
  sigaction(SIGUSR1, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  CUresult rc = 0;
  while (!asked_to_stop && !rc) {
    rc = CALL(launch, NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    if (!asked_to_stop) sleep_ms(ms);
  }
  if (rc) return (int)rc;
  char state[64] = {0};
  rc = CALL(memcpy_dtoh, state, nheld ? held[nheld - 1].key : 0, sizeof state);
  if (!rc) rc = sync_v2 ? sync_v2(NULL) : CALL(sync);
  printf("save -> %d after SIG%s\n", rc, asked_to_stop == SIGUSR1 ? "USR1" : "TERM");
  snprintf(extra, n, " saved");
  return (int)rc;
}

/* cuda.h 12.5's CUctxCreateParams */
typedef struct { void *execAffinityParams; int numExecAffinityParams; void *cigParams; } ctx_params;

static CUresult ctx_create(int version, char *extra, size_t n) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  proc_address_v2_t get = h ? (proc_address_v2_t)dlsym(h, "cuGetProcAddress_v2") : NULL;
  void *p = NULL;
  int status = 0;
  if (!get) return 500;
  CUresult rc = get("cuCtxCreate", &p, version, 0, &status);
  if (rc || !p) return rc ? rc : 500;
  CUcontext c = NULL;
  if (version >= 12050) {
    ctx_params params = {NULL, 0, NULL}; /* on the stack: an address above 4 GiB */
    rc = ((CUresult(*)(CUcontext *, ctx_params *, unsigned, CUdevice))p)(&c, &params, 0, 0);
    snprintf(extra, n, " params=%p", (void *)&params);
  } else if (version >= 11040) {
    rc = ((CUresult(*)(CUcontext *, void *, int, unsigned, CUdevice))p)(&c, NULL, 0, 0, 0);
  } else {
    rc = ((CUresult(*)(CUcontext *, unsigned, CUdevice))p)(&c, 0, 0);
  }
  return rc;
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, ms % 1000 * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

static int step(const char *s, int *exit_now) {
  unsigned long long a = 0, b = 0;
  char extra[128] = "";
  CUresult rc;
  if (strcmp(s, "init") == 0) {
    rc = CALL(init, 0);
  } else if (strcmp(s, "ctx") == 0) {
    CUdevice d = 0;
    CUcontext c = NULL;
    rc = CALL(device_get, &d, 0);
    if (!rc) rc = CALL(retain, &c, d);
    if (!rc) rc = CALL(set_current, c);
  } else if (strcmp(s, "count") == 0) {
    int n = -1;
    rc = CALL(device_count, &n);
    snprintf(extra, sizeof extra, " %d", n);
  } else if (strcmp(s, "uuid") == 0) {
    CUdevice d = 0;
    CUuuid u = {{0}};
    rc = CALL(device_get, &d, 0);
    if (!rc) rc = CALL(device_uuid, &u, d);
    char *o = extra + snprintf(extra, sizeof extra, " GPU-");
    for (int k = 0; k < 16; k++) {
      o += sprintf(o, "%s%02x", k == 4 || k == 6 || k == 8 || k == 10 ? "-" : "", u.bytes[k]);
    }
  } else if (sscanf(s, "alloc:%llu", &a) == 1) {
    CUdeviceptr p = 0;
    rc = CALL(alloc, &p, a);
    if (!rc) remember(PLAIN, p), snprintf(extra, sizeof extra, " 0x%llx", p);
  } else if (sscanf(s, "pitch:%llu:%llu", &a, &b) == 2) {
    CUdeviceptr p = 0;
    size_t pitch = 0;
    rc = CALL(pitch, &p, &pitch, a, b, 4);
    if (!rc) remember(PLAIN, p), snprintf(extra, sizeof extra, " 0x%llx pitch %zu", p, pitch);
  } else if (sscanf(s, "managed:%llu", &a) == 1) {
    CUdeviceptr p = 0;
    rc = CALL(managed, &p, a, 1 /* CU_MEM_ATTACH_GLOBAL */);
    if (!rc) remember(PLAIN, p), snprintf(extra, sizeof extra, " 0x%llx", p);
  } else if (sscanf(s, "async:%llu", &a) == 1) {
    CUdeviceptr p = 0;
    rc = CALL(async, &p, a, NULL);
    if (!rc) remember(ASYNC, p), snprintf(extra, sizeof extra, " 0x%llx", p);
  } else if (sscanf(s, "create:%llu", &a) == 1) {
    unsigned long long h = 0;
    CUmemAllocationProp prop = {.type = 1, .location = {.type = 1, .id = 0}};
    rc = CALL(create, &h, a, &prop, 0);
    if (!rc) remember(CREATED, h), snprintf(extra, sizeof extra, " 0x%llx", h);
  } else if (sscanf(s, "hostcreate:%llu", &a) == 1) {
    unsigned long long h = 0;
    CUmemAllocationProp prop = {.type = 1, .location = {.type = 2 /* HOST */, .id = 0}};
    rc = CALL(create, &h, a, &prop, 0);
    if (!rc) remember(CREATED, h), snprintf(extra, sizeof extra, " 0x%llx", h);
  } else if (strncmp(s, "threshold:", 10) == 0 || sscanf(s, "trim:%llu", &b) == 1) {
    void *pool = NULL;
    rc = CALL(default_pool, &pool, 0);
    if (!rc && s[1] == 'h') {
      unsigned long long t = strcmp(s + 10, "max") == 0 ? ~0ULL : strtoull(s + 10, NULL, 10);
      rc = CALL(pool_set, pool, 4 /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */, &t);
    } else if (!rc) {
      rc = CALL(pool_trim, pool, b);
    }
  } else if (strcmp(s, "release") == 0) {
    rc = CALL(set_current, NULL);
    if (!rc) rc = CALL(release_primary, 0);
  } else if (strcmp(s, "module") == 0) {
    void *m = NULL;
    static const char image[] = "fake cubin";
    rc = CALL(module_load, &m, image);
    if (!rc) remember(MODULE, (size_t)m), snprintf(extra, sizeof extra, " %p", m);
  } else if (sscanf(s, "race:%llu:%llu", &a, &b) == 2) {
    struct churn c = {a, b, 0};
    pthread_t t;
    rc = pthread_create(&t, NULL, churn, &c) ? 1 : 0;
    for (unsigned long long i = 0; i < a && !rc; i++) {
      CUdeviceptr p = 0;
      rc = CALL(alloc, &p, b); /* kept until the process ends */
    }
    if (pthread_join(t, NULL) == 0 && !rc) rc = c.rc;
  } else if (sscanf(s, "array:%llu:%llu", &a, &b) == 2) {
    CUarray arr = NULL;
    CUDA_ARRAY_DESCRIPTOR desc = {a, b, 0x20 /* CU_AD_FORMAT_FLOAT */, 1};
    rc = CALL(array, &arr, &desc);
    if (!rc) remember(ARRAY, (size_t)arr), snprintf(extra, sizeof extra, " %p", arr);
  } else if (strcmp(s, "free") == 0) {
    rc = free_latest();
  } else if (strcmp(s, "freeall") == 0) {
    rc = 0;
    while (nheld && !rc) rc = free_latest();
  } else if (strcmp(s, "meminfo") == 0) {
    size_t f = 0, t = 0;
    rc = CALL(meminfo, &f, &t);
    snprintf(extra, sizeof extra, " %zu %zu", f, t);
  } else if (strcmp(s, "launch") == 0) {
    rc = CALL(launch, NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
  } else if (strcmp(s, "memcpy") == 0) {
    char buf[16] = {0};
    rc = CALL(memcpy_htod, nheld ? held[nheld - 1].key : 0, buf, sizeof buf);
  } else if (strcmp(s, "sync") == 0) {
    rc = sync_v2 ? sync_v2(NULL) : CALL(sync);
  } else if (strcmp(s, "streamsync") == 0) {
    rc = CALL(stream_sync, NULL);
  } else if (sscanf(s, "train:%llu", &a) == 1) {
    rc = train((long)a, extra, sizeof extra);
    if (!rc) {
      printf("%s -> %d%s\n", s, rc, extra);
      *exit_now = 0;
      return 0;
    }
  } else if (sscanf(s, "ctxcreate:%llu", &a) == 1) {
    rc = ctx_create((int)a, extra, sizeof extra);
  } else if (strcmp(s, "entrypoints") == 0) {
    char list[2048];
    int internal = 0, answered = gc_entry_points(list, sizeof list, &internal);
    printf("%s -> %d answered=%d internal=%d%s\n", s, answered < 0 ? 100 : 0, answered, internal,
           list);
    return 0;
  } else if (strncmp(s, "env:", 4) == 0) {
    const char *v = getenv(s + 4);
    snprintf(extra, sizeof extra, " %s", v ? v : "(unset)");
    rc = 0;
  } else if (sscanf(s, "sleep:%llu", &a) == 1) {
    sleep_ms((long)a);
    rc = 0;
  } else if (sscanf(s, "loop:%llu:%llu", &a, &b) == 2) {
    rc = 0;
    for (unsigned long long i = 0; i < b && !rc; i++) {
      if (i) sleep_ms((long)a);
      rc = CALL(launch, NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    }
  } else if (sscanf(s, "exit:%llu", &a) == 1) {
    *exit_now = (int)a;
    return 0;
  } else if (strcmp(s, "hold") == 0) {
    for (;;) pause();
  } else if (strcmp(s, "stdin") == 0) {
    char line[256];
    rc = fgets(line, sizeof line, stdin) ? 0 : 1;
  } else if (strncmp(s, "ignore:", 7) == 0) {
    int sig = strcmp(s + 7, "USR1") == 0 ? SIGUSR1 : strcmp(s + 7, "TERM") == 0 ? SIGTERM
              : strcmp(s + 7, "INT") == 0 ? SIGINT : 0;
    rc = sig && signal(sig, SIG_IGN) != SIG_ERR ? 0 : 1;
  } else {
    fprintf(stderr, "workload: unknown step %s\n", s);
    *exit_now = 2;
    return 0;
  }
  printf("%s -> %d%s\n", s, rc, extra);
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* lines in order with the library's and a child's */
  const char *via = "symbol";
  unsigned long long flags = 0;
  int i = 1;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
    if (strcmp(argv[i], "--via") == 0 && i + 1 < argc) via = argv[++i];
    else if (strcmp(argv[i], "--flags") == 0 && i + 1 < argc) flags = strtoull(argv[++i], NULL, 0);
    else return usage("options are --via symbol|dlsym|procaddress and --flags N");
  }
  int rc = resolve(via, flags);
  if (rc) return rc;
  int first_step = i;
  for (; i < argc; i++) {
    if (strcmp(argv[i], "exec") == 0) {
      fflush(NULL);
      char **again = calloc((size_t)argc + 1, sizeof *again);
      if (!again) return usage("out of memory");
      int n = 0;
      for (int k = 0; k < first_step; k++) again[n++] = argv[k];
      for (int k = i + 1; k < argc; k++) again[n++] = argv[k];
      execv("/proc/self/exe", again);
      return usage("exec failed");
    }
    if (strcmp(argv[i], "fork") == 0) {
      fflush(NULL);
      pid_t child = fork();
      if (child < 0) return usage("fork failed");
      if (child > 0) {
        int status = 0;
        while (waitpid(child, &status, 0) < 0) {
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      continue;
    }
    int exit_now = -1;
    step(argv[i], &exit_now);
    if (exit_now >= 0) return exit_now;
  }
  return 0;
}
