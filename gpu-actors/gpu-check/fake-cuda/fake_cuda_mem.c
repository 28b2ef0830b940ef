/*
 * The fake libcuda.so.1's memory and work functions (built with fake_cuda.c, which says how):
 * allocations get made-up distinct addresses (or handles) and count against the device's memory
 * (FAKE_CUDA_MEMORY), so cuMemGetInfo's free goes down and a too large one fails with
 * CUDA_ERROR_OUT_OF_MEMORY; launches, copies, sets, waits and queries do nothing and succeed.
 * As a real driver: a context takes FAKE_CUDA_CONTEXT_BYTES (default 0) of the device, a loaded
 * module or library FAKE_CUDA_MODULE_BYTES (default 0) until its unload; a
 * stream-ordered pool keeps what cuMemFreeAsync gives back until it trims (the pools section says
 * the rules); host-located cuMemCreate memory takes none of the device's. With FAKE_GPU_FILE the
 * device's memory is shared by every process (<FAKE_GPU_FILE>.mem, which the fake
 * libnvidia-ml.so.1 reads for nvmlDeviceGetMemoryInfo), and a process's holding ends with it;
 * without it each process has a device of its own.
 * Each call is traced (FAKE_CUDA_TRACE=1) with its exported name and, where it has one, its size.
 *
 * The virtual GPU, with FAKE_GPU_FILE=/abs/path (unset: none of this happens). The file, created
 * by whichever fake uses it first (this one or fake_nvml.c, which reads it), holds one timeline per
 * GPU on CLOCK_MONOTONIC, shared by every process: its queue's end (busy_until) and a ring of the
 * last 4096 busy intervals {start, end, pid} (an interval that continues the pid's previous one
 * extends it). The GPU is the calling thread's current context's (device 0 without one), known by
 * its node UUID, so that NVML finds it by the same UUID; up to 16 GPUs.
 *   - A kernel launch (cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel, each with its
 *     _ptsz) occupies the GPU for FAKE_GPU_KERNEL_US (default 1000) µs from max(now, busy_until);
 *     a graph's launch (cuGraphLaunch(_ptsz)) as long as its kernel nodes together (cuGraphCreate,
 *     cuGraphAddKernelNode(_v2), cuGraphInstantiateWithFlags build one, see GRAPHS below). One that would leave more than FAKE_GPU_QUEUE_US (default 2000) µs
 *     queued ahead of now sleeps (nanosleep, no spinning) until it would not: a full launch queue.
 *     A kernel longer than the queue waits for an empty one.
 *   - cuCtxSynchronize(_v2), cuStreamSynchronize(_ptsz) and cuEventSynchronize sleep until this
 *     process's last kernel has ended; cuStreamQuery(_ptsz) answers CUDA_ERROR_NOT_READY (600)
 *     before that.
 * The file is a header {magic "FGPU", version 1, GPUs in use} and 16 GPU records {uuid[96],
 * busy_until_ns, next, filled, ring[4096] of {start_ns, end_ns, pid, 0}} (fake_nvml.c declares the
 * same layout); every access holds an open-file-description write lock on it (F_OFD_SETLKW, so that
 * this library and the fake NVML in the same process exclude each other too) and this library's
 * mutex. A file of another size or without the magic is left alone: a line on stderr, and the
 * launches do nothing, as without FAKE_GPU_FILE.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* F_OFD_SETLKW */
#endif
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#pragma GCC visibility push(protected)
/* the no-op functions take their arguments and leave them */
#pragma GCC diagnostic ignored "-Wunused-parameter"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef unsigned int CUdeviceptr_v1;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef void *CUfunction, *CUstream, *CUevent, *CUcontext, *CUarray, *CUmipmappedArray,
    *CUmemoryPool;
struct array_desc { size_t Width, Height; int Format; unsigned NumChannels; };
struct array_desc_v1 { unsigned Width, Height; int Format; unsigned NumChannels; };
struct array3d_desc { size_t Width, Height, Depth; int Format; unsigned NumChannels, Flags; };
struct array3d_desc_v1 { unsigned Width, Height, Depth; int Format; unsigned NumChannels, Flags; };
#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_READY 600

__attribute__((visibility("hidden"))) void fake_trace(const char *fmt, ...);
__attribute__((visibility("hidden"))) CUresult fake_ready(void);
__attribute__((visibility("hidden"))) unsigned long long fake_memory(void);
__attribute__((visibility("hidden"))) void *fake_mem_fn(const char *name);
__attribute__((visibility("hidden"))) const char *fake_current_uuid(void);
__attribute__((visibility("hidden"))) void fake_context_taken(int sign);

/* ------------------------------------------------------------------ the virtual GPU */

#ifndef F_OFD_SETLKW
#define F_OFD_SETLKW 38
#endif
#define GPU_MAGIC 0x55504746u /* "FGPU" */
#define GPU_VERSION 1u
#define GPU_MAX 16
#define GPU_RING 4096
struct gpu_interval { uint64_t start_ns, end_ns; uint32_t pid, unused; };
struct gpu_timeline {
  char uuid[96];
  uint64_t busy_until_ns;
  uint32_t next, filled; /* the ring's next slot; how many hold an interval */
  struct gpu_interval ring[GPU_RING];
};
struct gpu_file { uint32_t magic, version, gpus, unused; struct gpu_timeline gpu[GPU_MAX]; };

static pthread_mutex_t gpu_mu = PTHREAD_MUTEX_INITIALIZER; /* held with the file's lock */
static int gpu_opened; /* 0 not yet, 1 open, -1 none: read without gpu_mu by every launch */
static int gpu_tried;  /* gpu_open ran (under gpu_mu) */

static int gpu_none(void) {
  __atomic_store_n(&gpu_opened, -1, __ATOMIC_RELEASE);
  return 0;
}
static int gpu_fd = -1;
static struct gpu_file *gpu;
static uint64_t kernel_ns, queue_ns;
static uint64_t last_end_ns[GPU_MAX]; /* this process's last kernel's end, per GPU record */

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static void sleep_until(uint64_t ns) {
  struct timespec t = {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR) {
  }
}

/* The PID the driver names this process by. A real driver is in the kernel and knows a process by
 * its PID in the host's namespace, whatever namespace the process is in. With FAKE_GPU_KERNEL
 * naming a Unix socket, the fake asks its stand-in for the kernel there, which answers with the
 * caller's PID as the host sees it (SO_PEERCRED of the connection, in decimal); else getpid(),
 * right where the process shares the host's PID namespace. Asked once per process. */
static _Atomic int self_pid_cached;

static int ask_kernel(const char *socket_path) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(socket_path) >= sizeof a.sun_path) return 0;
  strcpy(a.sun_path, socket_path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  char buf[32] = {0};
  size_t got = 0;
  if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
    ssize_t n;
    while (got < sizeof buf - 1 && (n = read(fd, buf + got, sizeof buf - 1 - got)) != 0) {
      if (n < 0 && errno != EINTR) break;
      if (n > 0) got += (size_t)n;
    }
  }
  close(fd);
  return atoi(buf);
}

__attribute__((visibility("hidden"))) int fake_self_pid(void) {
  int pid = atomic_load(&self_pid_cached);
  if (pid > 0) return pid;
  const char *kernel = getenv("FAKE_GPU_KERNEL");
  pid = kernel && *kernel ? ask_kernel(kernel) : 0;
  if (pid <= 0) {
    if (kernel && *kernel) {
      fprintf(stderr, "fake libcuda: no answer from the kernel's stand-in at %s: using getpid()\n",
              kernel);
    }
    pid = (int)getpid();
  }
  atomic_store(&self_pid_cached, pid);
  return pid;
}

static uint64_t env_us(const char *name, uint64_t fallback) {
  const char *v = getenv(name);
  return v && *v ? strtoull(v, NULL, 10) : fallback;
}

static int file_lock(int fd, short type) {
  struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0, .l_pid = 0};
  while (fcntl(fd, F_OFD_SETLKW, &l) != 0) {
    if (errno != EINTR) return -1;
  }
  return 0;
}

/* Opens (creating) FAKE_GPU_FILE once, with gpu_mu held; 1 when the virtual GPU is there. */
static int gpu_open(void) {
  if (gpu_tried) return gpu_opened > 0;
  gpu_tried = 1;
  const char *path = getenv("FAKE_GPU_FILE");
  if (!path || !*path) return gpu_none();
  kernel_ns = env_us("FAKE_GPU_KERNEL_US", 1000) * 1000;
  queue_ns = env_us("FAKE_GPU_QUEUE_US", 2000) * 1000;
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd >= 0) fchmod(fd, 0666); /* every container's processes use it, whatever uid and umask */
  if (fd < 0) {
    fprintf(stderr, "fake libcuda: cannot open FAKE_GPU_FILE %s: %s\n", path, strerror(errno));
    return gpu_none();
  }
  struct stat st;
  void *m = MAP_FAILED;
  const char *why = NULL;
  if (file_lock(fd, F_WRLCK) != 0 || fstat(fd, &st) != 0) {
    why = strerror(errno);
  } else if (st.st_size == 0 && ftruncate(fd, sizeof(struct gpu_file)) != 0) {
    why = strerror(errno);
  } else if (st.st_size != 0 && st.st_size != (off_t)sizeof(struct gpu_file)) {
    why = "not a fake GPU file of this version (another size)";
  } else if ((m = mmap(NULL, sizeof(struct gpu_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                       0)) == MAP_FAILED) {
    why = strerror(errno);
  } else {
    struct gpu_file *f = m;
    if (st.st_size == 0) f->magic = GPU_MAGIC, f->version = GPU_VERSION;
    if (f->magic != GPU_MAGIC || f->version != GPU_VERSION) why = "not a fake GPU file (magic)";
  }
  file_lock(fd, F_UNLCK);
  if (why) {
    fprintf(stderr, "fake libcuda: FAKE_GPU_FILE %s: %s; no virtual GPU\n", path, why);
    if (m != MAP_FAILED) munmap(m, sizeof(struct gpu_file));
    close(fd);
    return gpu_none();
  }
  gpu_fd = fd; /* kept open for the process's life: closing it would drop the lock's owner */
  gpu = m;
  __atomic_store_n(&gpu_opened, 1, __ATOMIC_RELEASE);
  return 1;
}

/* The record of that GPU (claiming a free one), with the file locked; -1 when all 16 are used. */
static int gpu_record(const char *uuid) {
  for (uint32_t i = 0; i < gpu->gpus && i < GPU_MAX; i++) {
    if (strncmp(gpu->gpu[i].uuid, uuid, sizeof gpu->gpu[i].uuid - 1) == 0) return (int)i;
  }
  if (gpu->gpus >= GPU_MAX) return -1;
  struct gpu_timeline *t = &gpu->gpu[gpu->gpus];
  memset(t->uuid, 0, sizeof t->uuid);
  snprintf(t->uuid, sizeof t->uuid, "%s", uuid);
  return (int)gpu->gpus++;
}

/* `kernels` kernels back to back on the current context's GPU (a graph's run as one piece of
 * work): waits while the queue is full, then queues them. */
static void gpu_launch_n(unsigned kernels) {
  if (kernels == 0) return;
  /* without FAKE_GPU_FILE a launch costs what it did before the virtual GPU: nothing more than a
   * load (the benchmarks measure the library's hot path against this fake) */
  int opened = __atomic_load_n(&gpu_opened, __ATOMIC_ACQUIRE);
  if (opened < 0) return;
  if (opened == 0) {
    pthread_mutex_lock(&gpu_mu);
    int there = gpu_open();
    pthread_mutex_unlock(&gpu_mu);
    if (!there) return;
  }
  const char *uuid = fake_current_uuid();
  if (!uuid) return;
  uint32_t pid = (uint32_t)fake_self_pid();
  for (;;) {
    pthread_mutex_lock(&gpu_mu);
    if (!gpu_open()) break;
    file_lock(gpu_fd, F_WRLCK);
    int i = gpu_record(uuid);
    if (i < 0) {
      file_lock(gpu_fd, F_UNLCK);
      break;
    }
    struct gpu_timeline *t = &gpu->gpu[i];
    uint64_t now = now_ns();
    uint64_t start = t->busy_until_ns > now ? t->busy_until_ns : now;
    uint64_t end = start + kernel_ns * kernels;
    if (start > now && end - now > queue_ns) { /* full: wait until this kernel would fit */
      file_lock(gpu_fd, F_UNLCK);
      pthread_mutex_unlock(&gpu_mu);
      sleep_until(end - queue_ns < start ? end - queue_ns : start); /* longer: until it is empty */
      continue;
    }
    struct gpu_interval *last = t->filled ? &t->ring[(t->next + GPU_RING - 1) % GPU_RING] : NULL;
    if (last && last->pid == pid && last->end_ns == start) {
      last->end_ns = end; /* back to back with this process's previous kernel */
    } else {
      t->ring[t->next] = (struct gpu_interval){start, end, pid, 0};
      t->next = (t->next + 1) % GPU_RING;
      if (t->filled < GPU_RING) t->filled++;
    }
    t->busy_until_ns = end;
    file_lock(gpu_fd, F_UNLCK);
    last_end_ns[i] = end;
    break;
  }
  pthread_mutex_unlock(&gpu_mu);
}

static void gpu_launch(void) { gpu_launch_n(1); }

/* When this process's last kernel ends (0: none queued, or no virtual GPU). */
static uint64_t gpu_last_end(void) {
  uint64_t end = 0;
  pthread_mutex_lock(&gpu_mu);
  if (gpu_open()) {
    for (int i = 0; i < GPU_MAX; i++) end = last_end_ns[i] > end ? last_end_ns[i] : end;
  }
  pthread_mutex_unlock(&gpu_mu);
  return end;
}

static void gpu_wait(void) {
  uint64_t end = gpu_last_end();
  if (end > now_ns()) sleep_until(end);
}

/* ------------------------------------------------------------------ the device's memory */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long allocated; /* what this process holds on the GPU, all kinds */

/* With FAKE_GPU_FILE, every process's holding is published in <FAKE_GPU_FILE>.mem (one record per
 * process: its GPU's UUID, its pid, its bytes), so that cuMemGetInfo's free and NVML's used are the
 * device's, all processes together, as a real driver's are; a dead process's record counts for
 * nothing (the driver frees what a process held when it ends). */
#define MEM_MAGIC 0x4d454d46u /* "FMEM" */
#define MEM_PROCS 256
struct mem_proc { char uuid[96]; int32_t pid; uint32_t unused; uint64_t bytes; };
struct mem_file { uint32_t magic, version; uint64_t unused; struct mem_proc proc[MEM_PROCS]; };
static int mem_fd = -1, mem_tried;
static struct mem_file *memf;

static int mem_at = -1; /* this process's record */
static _Atomic int lazy_loaded; /* lazy_load below */

/* Who holds a record: its owner holds an open-file-description write lock on the record's byte
 * past the end of the file's data (LIVE_AT + i), which the kernel drops however the process ends.
 * That holds across PID namespaces, where a PID names another process or none (the fake NVML in
 * the member's container reads these records too). The file's data itself is locked as a whole,
 * [0, LIVE_AT), for each access. */
#define LIVE_AT ((off_t)sizeof(struct mem_file))

static int range_lock(int fd, int cmd, short type, off_t start, off_t len) {
  struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len, .l_pid = 0};
  while (fcntl(fd, cmd, &l) != 0) {
    if (errno != EINTR) return -1;
  }
  return cmd == F_OFD_GETLK ? l.l_type != F_UNLCK : 0;
}

static int data_lock(short type) { return range_lock(mem_fd, F_OFD_SETLKW, type, 0, LIVE_AT); }

/* Whether record i's owner lives (another process's; this one's own lock never conflicts). */
static int alive(int i) { return range_lock(mem_fd, F_OFD_GETLK, F_WRLCK, LIVE_AT + i, 1) == 1; }

/* Under mu: the shared record file, opened once; 0 without FAKE_GPU_FILE. */
static int mem_open(void) {
  if (mem_tried) return memf != NULL;
  mem_tried = 1;
  const char *gpu_path = getenv("FAKE_GPU_FILE");
  if (!gpu_path || !*gpu_path) return 0;
  char path[4096];
  snprintf(path, sizeof path, "%s.mem", gpu_path);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return 0;
  fchmod(fd, 0666); /* every container's processes write it, whatever their uid and umask */
  struct stat st;
  void *m = MAP_FAILED;
  if (range_lock(fd, F_OFD_SETLKW, F_WRLCK, 0, LIVE_AT) == 0 && fstat(fd, &st) == 0 &&
      (st.st_size == (off_t)sizeof(struct mem_file) ||
       (st.st_size == 0 && ftruncate(fd, sizeof(struct mem_file)) == 0))) {
    m = mmap(NULL, sizeof(struct mem_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m != MAP_FAILED && st.st_size == 0) ((struct mem_file *)m)->magic = MEM_MAGIC;
    if (m != MAP_FAILED && ((struct mem_file *)m)->magic != MEM_MAGIC) {
      munmap(m, sizeof(struct mem_file));
      m = MAP_FAILED;
    }
  }
  range_lock(fd, F_OFD_SETLK, F_UNLCK, 0, LIVE_AT);
  if (m == MAP_FAILED) {
    fprintf(stderr, "fake libcuda: %s is not a fake GPU memory file; memory is per process\n",
            path);
    close(fd);
    return 0;
  }
  mem_fd = fd;
  memf = m;
  return 1;
}

/* Under mu: this process's holding published, in a record it holds (a free one, or one whose
 * owner is gone, taken with its lock). */
static void mem_publish(void) {
  const char *uuid = fake_current_uuid();
  if (!uuid || !mem_open()) return;
  data_lock(F_WRLCK);
  for (int i = 0; mem_at < 0 && i < MEM_PROCS; i++) {
    if (range_lock(mem_fd, F_OFD_SETLK, F_WRLCK, LIVE_AT + i, 1) == 0) mem_at = i;
  }
  if (mem_at >= 0) {
    struct mem_proc *r = &memf->proc[mem_at];
    snprintf(r->uuid, sizeof r->uuid, "%s", uuid);
    r->pid = fake_self_pid();
    r->bytes = allocated;
  }
  data_lock(F_UNLCK);
}

/* Under mu: what the current GPU has in use, every live process's together (this one's alone
 * without FAKE_GPU_FILE). */
static unsigned long long device_used(void) {
  const char *uuid = fake_current_uuid();
  if (!uuid || !mem_open()) return allocated;
  unsigned long long used = 0;
  data_lock(F_WRLCK);
  for (int i = 0; i < MEM_PROCS; i++) {
    struct mem_proc *r = &memf->proc[i];
    if (i != mem_at && strncmp(r->uuid, uuid, sizeof r->uuid) == 0 && alive(i)) used += r->bytes;
  }
  data_lock(F_UNLCK);
  return used + allocated;
}

/* A forked child is a process of its own to the driver: its own PID, its own record. */
static void mem_after_fork(void) {
  atomic_store(&self_pid_cached, 0);
  if (mem_fd >= 0) close(mem_fd); /* the parent's description, and its locks, stay the parent's */
  if (memf) munmap(memf, sizeof(struct mem_file));
  mem_fd = -1;
  memf = NULL;
  mem_tried = 0;
  mem_at = -1;
  allocated = 0;
  atomic_store(&lazy_loaded, 0);
}

__attribute__((constructor)) static void mem_at_fork(void) {
  pthread_atfork(NULL, NULL, mem_after_fork);
}

/* Under mu: takes (or gives back) device memory; 0 when the device has not that much free. */
static int device_take(unsigned long long bytes) {
  unsigned long long total = fake_memory(), used = device_used();
  if (used > total || bytes > total - used) return 0;
  allocated += bytes;
  mem_publish();
  return 1;
}
static void device_give(unsigned long long bytes) {
  allocated -= bytes < allocated ? bytes : allocated;
  mem_publish();
}

/* A context's own memory (fake_cuda.c): FAKE_CUDA_CONTEXT_BYTES, as a real driver takes a few
 * hundred MiB of the device for each context it creates (its state, the local memory of its
 * threads, the printf and malloc heaps). */
void fake_context_taken(int sign) { /* 1: a context made; -1: one destroyed */
  const char *v = getenv("FAKE_CUDA_CONTEXT_BYTES");
  unsigned long long bytes = v ? strtoull(v, NULL, 10) : 0;
  pthread_mutex_lock(&mu);
  if (sign > 0) allocated += bytes; /* a real driver fails the creation when it does not fit */
  else allocated -= bytes < allocated ? bytes : allocated;
  mem_publish();
  pthread_mutex_unlock(&mu);
}

/* Lazy loading (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2): a kernel's code is loaded
 * at its first launch, so the device memory a process holds grows then, where nothing an
 * allocation or a context's creation returns shows it. FAKE_CUDA_LAZY_BYTES is what the process's
 * first launch takes that way (default 0), held until it ends. */
static void lazy_load(void) {
  if (atomic_exchange(&lazy_loaded, 1)) return;
  const char *v = getenv("FAKE_CUDA_LAZY_BYTES");
  unsigned long long bytes = v ? strtoull(v, NULL, 10) : 0;
  if (!bytes) return;
  pthread_mutex_lock(&mu);
  allocated += bytes;
  mem_publish();
  pthread_mutex_unlock(&mu);
}

/* ------------------------------------------------------------------ stream-ordered pools
 *
 * As the driver keeps them: a pool reserves device memory for its allocations and keeps what they
 * give back (cuMemFreeAsync) for the next ones, without new device memory, until it trims: at a
 * synchronisation (cuCtxSynchronize, cuStreamSynchronize, cuEventSynchronize) down to its release
 * threshold (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 0 by default), at cuMemPoolTrimTo down to what it
 * is asked to keep, at cuMemPoolDestroy all it does not lend; never below what its allocations
 * still use. Each device has a default pool (cuDeviceGetDefaultMemPool), the current one
 * (cuDeviceGetMemPool / cuDeviceSetMemPool) is where cuMemAllocAsync takes from. Unlike a real
 * pool this one reserves exactly what it lacks (a real one reserves in chunks of 2 MiB or more). */
#define POOLS 64
#define POOL_DEVICES 16
#define CU_MEMPOOL_ATTR_RELEASE_THRESHOLD 4
#define CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT 5
#define CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH 6
#define CU_MEMPOOL_ATTR_USED_MEM_CURRENT 7
#define CU_MEMPOOL_ATTR_USED_MEM_HIGH 8
static struct pool {
  int made, destroyed;
  unsigned long long reserved, used, threshold, reserved_high, used_high;
} pools[POOLS];
static int current_pool[POOL_DEVICES]; /* the device's current pool: its index; default = device */
static int current_set[POOL_DEVICES];

__attribute__((visibility("hidden"))) int fake_current_device(void);

static CUmemoryPool pool_handle(int i) { return (CUmemoryPool)(uintptr_t)(0x900000 + i * 16); }
static int pool_index(CUmemoryPool h) {
  uintptr_t v = (uintptr_t)h;
  if (v < 0x900000 || (v - 0x900000) % 16 || (v - 0x900000) / 16 >= POOLS) return -1;
  int i = (int)((v - 0x900000) / 16);
  return i < POOL_DEVICES || pools[i].made ? i : -1;
}

/* Under mu: gives back what the pool holds unused above keep. */
static void pool_trim(struct pool *p, unsigned long long keep) {
  unsigned long long floor = keep > p->used ? keep : p->used;
  if (p->reserved > floor) {
    device_give(p->reserved - floor);
    p->reserved = floor;
  }
}

static void pools_at_sync(void) {
  pthread_mutex_lock(&mu);
  for (int i = 0; i < POOLS; i++) {
    if (!pools[i].destroyed) pool_trim(&pools[i], pools[i].threshold);
  }
  pthread_mutex_unlock(&mu);
}

/* ------------------------------------------------------------------ allocations */

static unsigned long long next_address = 0x7f0000000000ULL, next_small = 0x10000000ULL;
/* pool: 1 + the pool's index, 0 none; host: memory on the host (cuMemCreate), none of the GPU's */
static struct block { unsigned long long key, bytes; int pool, host, small; } *blocks;
static size_t block_count, block_cap;
/* Freed address ranges, given again to later allocations that fit (a real driver reuses a freed
 * address at once: an allocation on another thread may get the address a free just gave back) */
static struct { unsigned long long key, span; int small; } reusable[1024];
static size_t reusable_count;

/* small: a 32-bit address, for the _v1 functions; pool: the pool's index, or -1 */
static CUresult take_from(const char *call, unsigned long long bytes, int small, int pool,
                          int host, unsigned long long *key) {
  fake_trace("%s(%llu)", call, bytes);
  if (fake_ready()) return fake_ready();
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&mu);
  struct pool *p = pool >= 0 ? &pools[pool] : NULL;
  unsigned long long idle = p ? p->reserved - p->used : 0;
  unsigned long long grow = host ? 0 : bytes > idle ? bytes - idle : 0;
  if (p && p->destroyed) {
    rc = CUDA_ERROR_INVALID_VALUE;
  } else if (block_count == block_cap) {
    size_t cap = block_cap ? block_cap * 2 : 64;
    struct block *b = realloc(blocks, cap * sizeof *b);
    if (b) blocks = b, block_cap = cap;
    else rc = CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (rc == CUDA_SUCCESS && grow && !device_take(grow)) rc = CUDA_ERROR_OUT_OF_MEMORY;
  if (rc == CUDA_SUCCESS) {
    unsigned long long span = (bytes + 0x1fffff) & ~0x1fffffULL; /* 2 MiB apart, as a driver's */
    *key = 0;
    for (size_t i = reusable_count; i-- > 0;) { /* the latest freed range it fits, as a driver's */
      if (reusable[i].small != small || reusable[i].span < span) continue;
      *key = reusable[i].key;
      reusable[i] = reusable[--reusable_count];
      break;
    }
    unsigned long long *next = small ? &next_small : &next_address;
    if (!*key) {
      *key = *next;
      *next += span;
    }
    blocks[block_count++] = (struct block){*key, bytes, pool + 1, host, small};
    if (p) {
      p->reserved += grow;
      p->used += bytes;
      if (p->reserved > p->reserved_high) p->reserved_high = p->reserved;
      if (p->used > p->used_high) p->used_high = p->used;
    }
  }
  pthread_mutex_unlock(&mu);
  return rc;
}

static CUresult take(const char *call, unsigned long long bytes, int small,
                     unsigned long long *key) {
  return take_from(call, bytes, small, -1, 0, key);
}

static CUresult give(const char *call, unsigned long long key) {
  fake_trace("%s(0x%llx)", call, key);
  if (fake_ready()) return fake_ready();
  CUresult rc = CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  for (size_t i = 0; i < block_count; i++) {
    if (blocks[i].key != key) continue;
    struct block b = blocks[i];
    blocks[i] = blocks[--block_count];
    if (reusable_count < sizeof reusable / sizeof reusable[0]) {
      reusable[reusable_count].key = b.key;
      reusable[reusable_count].span = (b.bytes + 0x1fffff) & ~0x1fffffULL;
      reusable[reusable_count++].small = b.small;
    }
    if (b.pool) { /* back to its pool, which keeps it (a destroyed one gives it back) */
      struct pool *p = &pools[b.pool - 1];
      p->used -= b.bytes;
      if (p->destroyed) pool_trim(p, 0);
    } else if (!b.host) {
      device_give(b.bytes);
    }
    rc = CUDA_SUCCESS;
    break;
  }
  pthread_mutex_unlock(&mu);
  return rc;
}

#define ALLOC(name, ptr_type, size_type, small, ...)                    \
  CUresult name(ptr_type *dptr, size_type bytes, ##__VA_ARGS__) {      \
    unsigned long long a;                                              \
    CUresult rc = take(#name, bytes, small, &a);                       \
    if (!rc) *dptr = (ptr_type)a;                                      \
    return rc;                                                         \
  }
ALLOC(cuMemAlloc_v2, CUdeviceptr, size_t, 0)
ALLOC(cuMemAlloc, CUdeviceptr_v1, unsigned, 1)
ALLOC(cuMemAllocManaged, CUdeviceptr, size_t, 0, unsigned flags)

/* the current device's current pool */
static int the_current_pool(void) {
  int dev = fake_current_device();
  if (dev < 0 || dev >= POOL_DEVICES) dev = 0;
  return current_set[dev] ? current_pool[dev] : dev;
}
#define ALLOC_ASYNC(name)                                                          \
  CUresult name(CUdeviceptr *dptr, size_t bytes, CUstream s) {                     \
    unsigned long long a;                                                          \
    CUresult rc = take_from(#name, bytes, 0, the_current_pool(), 0, &a);           \
    if (!rc) *dptr = a;                                                            \
    return rc;                                                                     \
  }
ALLOC_ASYNC(cuMemAllocAsync)
ALLOC_ASYNC(cuMemAllocAsync_ptsz)
#define ALLOC_POOL(name)                                                             \
  CUresult name(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream s) {    \
    int i = pool_index(pool);                                                        \
    if (i < 0) return CUDA_ERROR_INVALID_VALUE;                                      \
    unsigned long long a;                                                            \
    CUresult rc = take_from(#name, bytes, 0, i, 0, &a);                              \
    if (!rc) *dptr = a;                                                              \
    return rc;                                                                       \
  }
ALLOC_POOL(cuMemAllocFromPoolAsync)
ALLOC_POOL(cuMemAllocFromPoolAsync_ptsz)

/* cuda.h's CUmemAllocationProp up to its location: HOST (2), HOST_NUMA (3) and HOST_NUMA_CURRENT
 * (4) are pinned host memory, none of the GPU's */
struct alloc_prop { int type, handle_types, location_type, location_id; };
CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t bytes, const void *prop,
                     unsigned long long flags) {
  const struct alloc_prop *p = prop;
  int host = p && p->location_type >= 2 && p->location_type <= 4;
  unsigned long long a;
  CUresult rc = take_from("cuMemCreate", bytes, 0, -1, host, &a);
  if (!rc) *handle = a;
  return rc;
}

/* ------------------------------------------------------------------ modules */

/* Loading a module or a library takes FAKE_CUDA_MODULE_BYTES (default 0) of the device until its
 * unload, as a real driver's eager loading takes the module's code, constants and globals. */
static unsigned long long next_module = 0x5000000ULL;

static CUresult module_load(const char *call, void **handle) {
  fake_trace("%s()", call);
  if (fake_ready()) return fake_ready();
  const char *v = getenv("FAKE_CUDA_MODULE_BYTES");
  unsigned long long bytes = v ? strtoull(v, NULL, 10) : 0;
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&mu);
  if (block_count == block_cap) {
    size_t cap = block_cap ? block_cap * 2 : 64;
    struct block *b = realloc(blocks, cap * sizeof *b);
    if (b) blocks = b, block_cap = cap;
    else rc = CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (rc == CUDA_SUCCESS && bytes && !device_take(bytes)) rc = CUDA_ERROR_OUT_OF_MEMORY;
  if (rc == CUDA_SUCCESS) {
    *handle = (void *)(uintptr_t)next_module;
    blocks[block_count++] = (struct block){next_module, bytes, 0, 0, 2};
    next_module += 16;
  }
  pthread_mutex_unlock(&mu);
  return rc;
}

#define P_LIB , void *jo, void **jv, unsigned jn, void *lo, void **lv, unsigned ln
CUresult cuModuleLoad(void **m, const char *file) { return module_load("cuModuleLoad", m); }
CUresult cuModuleLoadData(void **m, const void *image) {
  return module_load("cuModuleLoadData", m);
}
CUresult cuModuleLoadDataEx(void **m, const void *image, unsigned n, void *o, void **v) {
  return module_load("cuModuleLoadDataEx", m);
}
CUresult cuModuleLoadFatBinary(void **m, const void *fatbin) {
  return module_load("cuModuleLoadFatBinary", m);
}
CUresult cuLibraryLoadData(void **l, const void *code P_LIB) {
  return module_load("cuLibraryLoadData", l);
}
CUresult cuLibraryLoadFromFile(void **l, const char *file P_LIB) {
  return module_load("cuLibraryLoadFromFile", l);
}
CUresult cuModuleUnload(void *m) { return give("cuModuleUnload", (uintptr_t)m); }
CUresult cuLibraryUnload(void *l) { return give("cuLibraryUnload", (uintptr_t)l); }

/* ------------------------------------------------------------------ pools */

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, int dev) {
  fake_trace("cuDeviceGetDefaultMemPool(%d)", dev);
  if (fake_ready()) return fake_ready();
  if (dev < 0 || dev >= POOL_DEVICES) return CUDA_ERROR_INVALID_VALUE;
  *pool = pool_handle(dev);
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetMemPool(CUmemoryPool *pool, int dev) {
  fake_trace("cuDeviceGetMemPool(%d)", dev);
  if (fake_ready()) return fake_ready();
  if (dev < 0 || dev >= POOL_DEVICES) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  *pool = pool_handle(current_set[dev] ? current_pool[dev] : dev);
  pthread_mutex_unlock(&mu);
  return CUDA_SUCCESS;
}
CUresult cuDeviceSetMemPool(int dev, CUmemoryPool pool) {
  fake_trace("cuDeviceSetMemPool(%d)", dev);
  if (fake_ready()) return fake_ready();
  int i = pool_index(pool);
  if (dev < 0 || dev >= POOL_DEVICES || i < 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  current_pool[dev] = i;
  current_set[dev] = 1;
  pthread_mutex_unlock(&mu);
  return CUDA_SUCCESS;
}
/* cuda.h's CUmemPoolProps up to its location */
struct pool_props { int alloc_type, handle_types, location_type, location_id; };
CUresult cuMemPoolCreate(CUmemoryPool *pool, const void *props) {
  fake_trace("cuMemPoolCreate()");
  if (fake_ready()) return fake_ready();
  CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&mu);
  for (int i = POOL_DEVICES; i < POOLS; i++) {
    if (pools[i].made) continue;
    memset(&pools[i], 0, sizeof pools[i]);
    pools[i].made = 1;
    *pool = pool_handle(i);
    rc = CUDA_SUCCESS;
    break;
  }
  pthread_mutex_unlock(&mu);
  return rc;
}
CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  fake_trace("cuMemPoolDestroy()");
  if (fake_ready()) return fake_ready();
  int i = pool_index(pool);
  if (i < POOL_DEVICES) return CUDA_ERROR_INVALID_VALUE; /* a default pool is not destroyed */
  pthread_mutex_lock(&mu);
  pool_trim(&pools[i], 0);
  pools[i].destroyed = 1;
  for (int d = 0; d < POOL_DEVICES; d++) {
    if (current_set[d] && current_pool[d] == i) current_set[d] = 0; /* back to the default */
  }
  pthread_mutex_unlock(&mu);
  return CUDA_SUCCESS;
}
CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  fake_trace("cuMemPoolTrimTo(%zu)", keep);
  if (fake_ready()) return fake_ready();
  int i = pool_index(pool);
  if (i < 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  pool_trim(&pools[i], keep);
  pthread_mutex_unlock(&mu);
  return CUDA_SUCCESS;
}
CUresult cuMemPoolSetAttribute(CUmemoryPool pool, int attr, void *value) {
  fake_trace("cuMemPoolSetAttribute(%d)", attr);
  if (fake_ready()) return fake_ready();
  int i = pool_index(pool);
  if (i < 0 || !value || attr < 1 || attr > 8) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  struct pool *p = &pools[i];
  CUresult rc = CUDA_SUCCESS;
  if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) p->threshold = *(unsigned long long *)value;
  else if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) p->reserved_high = p->reserved;
  else if (attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH) p->used_high = p->used;
  else if (attr >= CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) rc = CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_unlock(&mu);
  return rc;
}
CUresult cuMemPoolGetAttribute(CUmemoryPool pool, int attr, void *value) {
  fake_trace("cuMemPoolGetAttribute(%d)", attr);
  if (fake_ready()) return fake_ready();
  int i = pool_index(pool);
  if (i < 0 || !value || attr < 1 || attr > 8 || pools[i].destroyed) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  pthread_mutex_lock(&mu);
  struct pool *p = &pools[i];
  unsigned long long v = attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD ? p->threshold
                         : attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT ? p->reserved
                         : attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH ? p->reserved_high
                         : attr == CU_MEMPOOL_ATTR_USED_MEM_CURRENT ? p->used
                         : attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH ? p->used_high : 1;
  pthread_mutex_unlock(&mu);
  if (attr < CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) *(int *)value = (int)v;
  else *(unsigned long long *)value = v;
  return CUDA_SUCCESS;
}

/* rows padded to 512 bytes */
#define PITCH(name, ptr_type, size_type, small)                                              \
  CUresult name(ptr_type *dptr, size_type *pitch, size_type w, size_type h, unsigned elem) { \
    size_type p = (w + 511) & ~(size_type)511;                                               \
    unsigned long long a;                                                                    \
    CUresult rc = take(#name, (unsigned long long)p * h, small, &a);                         \
    if (!rc) *dptr = (ptr_type)a, *pitch = p;                                                \
    return rc;                                                                               \
  }
PITCH(cuMemAllocPitch_v2, CUdeviceptr, size_t, 0)
PITCH(cuMemAllocPitch, CUdeviceptr_v1, unsigned, 1)

/* 4 bytes a channel, whatever the format */
#define ARRAY(name, handle_type, desc_type, depth, ...)                                        \
  CUresult name(handle_type *handle, const desc_type *d, ##__VA_ARGS__) {                      \
    unsigned long long a, bytes = (unsigned long long)d->Width * (d->Height ? d->Height : 1) * \
                                  (depth ? depth : 1) * 4 * (d->NumChannels ? d->NumChannels : 1); \
    CUresult rc = take(#name, bytes, 0, &a);                                                   \
    if (!rc) *handle = (handle_type)(uintptr_t)a;                                              \
    return rc;                                                                                 \
  }
ARRAY(cuArrayCreate_v2, CUarray, struct array_desc, 1)
ARRAY(cuArrayCreate, CUarray, struct array_desc_v1, 1)
ARRAY(cuArray3DCreate_v2, CUarray, struct array3d_desc, d->Depth)
ARRAY(cuArray3DCreate, CUarray, struct array3d_desc_v1, d->Depth)
ARRAY(cuMipmappedArrayCreate, CUmipmappedArray, struct array3d_desc, d->Depth, unsigned levels)

CUresult cuMemFree_v2(CUdeviceptr p) { return give("cuMemFree_v2", p); }
CUresult cuMemFree(CUdeviceptr_v1 p) { return give("cuMemFree", p); }
CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) { return give("cuMemFreeAsync", p); }
CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) { return give("cuMemFreeAsync_ptsz", p); }
CUresult cuMemRelease(CUmemGenericAllocationHandle h) { return give("cuMemRelease", h); }
CUresult cuArrayDestroy(CUarray a) { return give("cuArrayDestroy", (uintptr_t)a); }
CUresult cuMipmappedArrayDestroy(CUmipmappedArray a) {
  return give("cuMipmappedArrayDestroy", (uintptr_t)a);
}

static CUresult info(const char *call, unsigned long long *free_bytes, unsigned long long *total) {
  fake_trace("%s()", call);
  if (fake_ready()) return fake_ready();
  pthread_mutex_lock(&mu);
  *total = fake_memory();
  unsigned long long used = device_used();
  *free_bytes = used < *total ? *total - used : 0;
  pthread_mutex_unlock(&mu);
  return CUDA_SUCCESS;
}
CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  unsigned long long f = 0, t = 0;
  CUresult rc = info("cuMemGetInfo_v2", &f, &t);
  if (!rc) *free_bytes = (size_t)f, *total = (size_t)t;
  return rc;
}
CUresult cuMemGetInfo(unsigned *free_bytes, unsigned *total) {
  unsigned long long f = 0, t = 0;
  CUresult rc = info("cuMemGetInfo", &f, &t);
  if (!rc) *free_bytes = f > 0xffffffffULL ? 0xffffffffU : (unsigned)f,
           *total = t > 0xffffffffULL ? 0xffffffffU : (unsigned)t;
  return rc;
}

/* ------------------------------------------------------------------ work: nothing to do but on
 * the virtual GPU */

#define P_LAUNCH (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, \
                  unsigned bz, unsigned shared, CUstream s, void **params, void **extra)
#define P_LAUNCHEX (const void *config, CUfunction f, void **params, void **extra)
#define P_COOP (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, \
                unsigned bz, unsigned shared, CUstream s, void **params)
#define P_HOSTFN (CUstream s, void (*fn)(void *), void *data)
#define P_DD (CUdeviceptr dst, CUdeviceptr src, size_t n)
#define P_DDA (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
#define P_HD (CUdeviceptr dst, const void *src, size_t n)
#define P_HDA (CUdeviceptr dst, const void *src, size_t n, CUstream s)
#define P_DH (void *dst, CUdeviceptr src, size_t n)
#define P_DHA (void *dst, CUdeviceptr src, size_t n, CUstream s)
#define P_DD1 (CUdeviceptr_v1 dst, CUdeviceptr_v1 src, unsigned n)
#define P_DDA1 (CUdeviceptr_v1 dst, CUdeviceptr_v1 src, unsigned n, CUstream s)
#define P_HD1 (CUdeviceptr_v1 dst, const void *src, unsigned n)
#define P_HDA1 (CUdeviceptr_v1 dst, const void *src, unsigned n, CUstream s)
#define P_DH1 (void *dst, CUdeviceptr_v1 src, unsigned n)
#define P_DHA1 (void *dst, CUdeviceptr_v1 src, unsigned n, CUstream s)
#define P_COPY (const void *copy)
#define P_COPYA (const void *copy, CUstream s)
#define P_PEER (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n)
#define P_PEERA (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream s)
#define P_SET8 (CUdeviceptr d, unsigned char v, size_t n)
#define P_SET16 (CUdeviceptr d, unsigned short v, size_t n)
#define P_SET32 (CUdeviceptr d, unsigned v, size_t n)
#define P_SET8_1 (CUdeviceptr_v1 d, unsigned char v, unsigned n)
#define P_SET16_1 (CUdeviceptr_v1 d, unsigned short v, unsigned n)
#define P_SET32_1 (CUdeviceptr_v1 d, unsigned v, unsigned n)
#define P_SET8A (CUdeviceptr d, unsigned char v, size_t n, CUstream s)
#define P_SET16A (CUdeviceptr d, unsigned short v, size_t n, CUstream s)
#define P_SET32A (CUdeviceptr d, unsigned v, size_t n, CUstream s)
#define P_NONE (void)
#define P_CTX (CUcontext c)
#define P_STREAM (CUstream s)
#define P_WAITEV (CUstream s, CUevent e, unsigned flags)
#define P_EVENT (CUevent e)
#define P_RECORD (CUevent e, CUstream s)

/* (exported name, shape); the copies and sets trace their size */
#define SIZED(X)                                                                                 \
  X(cuMemcpy, DD) X(cuMemcpy_ptds, DD) X(cuMemcpyAsync, DDA) X(cuMemcpyAsync_ptsz, DDA)          \
  X(cuMemcpyHtoD, HD1) X(cuMemcpyHtoD_v2, HD) X(cuMemcpyHtoD_v2_ptds, HD) X(cuMemcpyDtoH, DH1)   \
  X(cuMemcpyDtoH_v2, DH) X(cuMemcpyDtoH_v2_ptds, DH) X(cuMemcpyDtoD, DD1) X(cuMemcpyDtoD_v2, DD) \
  X(cuMemcpyDtoD_v2_ptds, DD) X(cuMemcpyHtoDAsync, HDA1) X(cuMemcpyHtoDAsync_v2, HDA)            \
  X(cuMemcpyHtoDAsync_v2_ptsz, HDA) X(cuMemcpyDtoHAsync, DHA1) X(cuMemcpyDtoHAsync_v2, DHA)      \
  X(cuMemcpyDtoHAsync_v2_ptsz, DHA) X(cuMemcpyDtoDAsync, DDA1) X(cuMemcpyDtoDAsync_v2, DDA)      \
  X(cuMemcpyDtoDAsync_v2_ptsz, DDA) X(cuMemcpyPeer, PEER) X(cuMemcpyPeer_ptds, PEER)             \
  X(cuMemcpyPeerAsync, PEERA) X(cuMemcpyPeerAsync_ptsz, PEERA) X(cuMemsetD8, SET8_1)             \
  X(cuMemsetD8_v2, SET8) X(cuMemsetD8_v2_ptds, SET8) X(cuMemsetD16, SET16_1)                     \
  X(cuMemsetD16_v2, SET16) X(cuMemsetD16_v2_ptds, SET16) X(cuMemsetD32, SET32_1)                 \
  X(cuMemsetD32_v2, SET32) X(cuMemsetD32_v2_ptds, SET32) X(cuMemsetD8Async, SET8A)               \
  X(cuMemsetD8Async_ptsz, SET8A) X(cuMemsetD16Async, SET16A) X(cuMemsetD16Async_ptsz, SET16A)    \
  X(cuMemsetD32Async, SET32A) X(cuMemsetD32Async_ptsz, SET32A)
#define UNSIZED(X)                                                                               \
  X(cuLaunchHostFunc, HOSTFN)                                                                    \
  X(cuLaunchHostFunc_ptsz, HOSTFN) X(cuMemcpy2D, COPY) X(cuMemcpy2D_v2, COPY)                    \
  X(cuMemcpy2D_v2_ptds, COPY) X(cuMemcpy2DAsync, COPYA) X(cuMemcpy2DAsync_v2, COPYA)             \
  X(cuMemcpy2DAsync_v2_ptsz, COPYA) X(cuMemcpy3D, COPY) X(cuMemcpy3D_v2, COPY)                   \
  X(cuMemcpy3D_v2_ptds, COPY) X(cuMemcpy3DAsync, COPYA) X(cuMemcpy3DAsync_v2, COPYA)             \
  X(cuMemcpy3DAsync_v2_ptsz, COPYA) X(cuStreamWaitEvent, WAITEV)                                 \
  X(cuStreamWaitEvent_ptsz, WAITEV) X(cuEventRecord, RECORD) X(cuEventRecord_ptsz, RECORD)
/* kernels: on the virtual GPU, each occupies it for FAKE_GPU_KERNEL_US (graphs: below) */
#define LAUNCHES(X)                                                                              \
  X(cuLaunchKernel, LAUNCH) X(cuLaunchKernel_ptsz, LAUNCH) X(cuLaunchKernelEx, LAUNCHEX)         \
  X(cuLaunchKernelEx_ptsz, LAUNCHEX) X(cuLaunchCooperativeKernel, COOP)                          \
  X(cuLaunchCooperativeKernel_ptsz, COOP)
/* waits: on the virtual GPU, until this process's last kernel has ended */
#define WAITS(X)                                                                                 \
  X(cuCtxSynchronize, NONE) X(cuCtxSynchronize_v2, CTX) X(cuStreamSynchronize, STREAM)           \
  X(cuStreamSynchronize_ptsz, STREAM) X(cuEventSynchronize, EVENT)
/* queries: on the virtual GPU, CUDA_ERROR_NOT_READY until then */
#define QUERIES(X) X(cuStreamQuery, STREAM) X(cuStreamQuery_ptsz, STREAM)

#define DEFINE_SIZED(name, shape)                          \
  CUresult name P_##shape {                                \
    fake_trace(#name "(%llu)", (unsigned long long)n);     \
    return fake_ready();                                   \
  }
#define DEFINE_UNSIZED(name, shape) \
  CUresult name P_##shape {         \
    fake_trace(#name "()");         \
    return fake_ready();            \
  }
#define DEFINE_LAUNCH(name, shape)   \
  CUresult name P_##shape {           \
    fake_trace(#name "()");           \
    CUresult rc = fake_ready();       \
    if (rc == CUDA_SUCCESS) lazy_load(), gpu_launch(); \
    return rc;                        \
  }
#define DEFINE_WAIT(name, shape)      \
  CUresult name P_##shape {           \
    fake_trace(#name "()");           \
    CUresult rc = fake_ready();       \
    if (rc == CUDA_SUCCESS) gpu_wait(), pools_at_sync(); \
    return rc;                        \
  }
#define DEFINE_QUERY(name, shape)                                                      \
  CUresult name P_##shape {                                                            \
    fake_trace(#name "()");                                                            \
    CUresult rc = fake_ready();                                                        \
    return rc == CUDA_SUCCESS && gpu_last_end() > now_ns() ? CUDA_ERROR_NOT_READY : rc; \
  }
/* CUDA graphs, enough for a program that builds one of kernel nodes and launches it (as vLLM's
 * decode and torch.compile do): a graph is its count of kernel nodes (other nodes, captures and
 * updates are not modelled), an instantiated graph a copy of that count, and its launch occupies
 * the virtual GPU for that many kernels back to back, as one piece of work; an empty graph's
 * launch takes no GPU time. A real driver runs a graph's kernels in its dependency order: their
 * total time is what the GPU's utilisation sees either way. */
struct fake_graph { unsigned kernels; };
typedef struct fake_graph *CUgraph, *CUgraphExec;
typedef void *CUgraphNode;

CUresult cuGraphCreate(CUgraph *graph, unsigned flags) {
  fake_trace("cuGraphCreate()");
  if (fake_ready()) return fake_ready();
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  *graph = calloc(1, sizeof **graph);
  return *graph ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult add_kernel(const char *call, CUgraphNode *node, CUgraph graph) {
  fake_trace("%s()", call);
  if (fake_ready()) return fake_ready();
  if (!node || !graph) return CUDA_ERROR_INVALID_VALUE;
  graph->kernels++;
  *node = (CUgraphNode)(uintptr_t)graph->kernels;
  return CUDA_SUCCESS;
}
CUresult cuGraphAddKernelNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                              size_t n, const void *params) {
  return add_kernel("cuGraphAddKernelNode", node, graph);
}
CUresult cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                                 size_t n, const void *params) {
  return add_kernel("cuGraphAddKernelNode_v2", node, graph);
}
CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long flags) {
  fake_trace("cuGraphInstantiateWithFlags()");
  if (fake_ready()) return fake_ready();
  if (!exec || !graph) return CUDA_ERROR_INVALID_VALUE;
  *exec = malloc(sizeof **exec);
  if (!*exec) return CUDA_ERROR_OUT_OF_MEMORY;
  **exec = *graph;
  return CUDA_SUCCESS;
}
CUresult cuGraphDestroy(CUgraph graph) {
  fake_trace("cuGraphDestroy()");
  free(graph);
  return fake_ready();
}
CUresult cuGraphExecDestroy(CUgraphExec exec) {
  fake_trace("cuGraphExecDestroy()");
  free(exec);
  return fake_ready();
}
#define GRAPH_LAUNCH(name)                                 \
  CUresult name(CUgraphExec exec, CUstream s) {            \
    fake_trace(#name "(%u)", exec ? exec->kernels : 0);    \
    CUresult rc = fake_ready();                            \
    if (rc == CUDA_SUCCESS && !exec) return CUDA_ERROR_INVALID_VALUE; \
    if (rc == CUDA_SUCCESS) gpu_launch_n(exec->kernels);   \
    return rc;                                             \
  }
GRAPH_LAUNCH(cuGraphLaunch)
GRAPH_LAUNCH(cuGraphLaunch_ptsz)
#define GRAPHS(X)                                                                                \
  X(cuGraphCreate) X(cuGraphAddKernelNode) X(cuGraphAddKernelNode_v2)                            \
  X(cuGraphInstantiateWithFlags) X(cuGraphDestroy) X(cuGraphExecDestroy) X(cuGraphLaunch)        \
  X(cuGraphLaunch_ptsz)

SIZED(DEFINE_SIZED)
UNSIZED(DEFINE_UNSIZED)
LAUNCHES(DEFINE_LAUNCH)
WAITS(DEFINE_WAIT)
QUERIES(DEFINE_QUERY)

/* ------------------------------------------------------------------ by name (cuGetProcAddress) */

#define ROW(name, ...) {#name, (void *)name},
#define OWN(X)                                                                                   \
  X(cuMemAlloc_v2) X(cuMemAlloc) X(cuMemAllocManaged) X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz) \
  X(cuMemAllocFromPoolAsync) X(cuMemAllocFromPoolAsync_ptsz) X(cuMemCreate)                      \
  X(cuMemAllocPitch_v2) X(cuMemAllocPitch) X(cuArrayCreate_v2) X(cuArrayCreate)                  \
  X(cuArray3DCreate_v2) X(cuArray3DCreate) X(cuMipmappedArrayCreate) X(cuMemFree_v2) X(cuMemFree) \
  X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz) X(cuMemRelease) X(cuArrayDestroy)                     \
  X(cuMipmappedArrayDestroy) X(cuMemGetInfo_v2) X(cuMemGetInfo) X(cuDeviceGetDefaultMemPool)      \
  X(cuDeviceGetMemPool) X(cuDeviceSetMemPool) X(cuMemPoolCreate) X(cuMemPoolDestroy)             \
  X(cuMemPoolTrimTo) X(cuMemPoolSetAttribute) X(cuMemPoolGetAttribute) X(cuModuleLoad)           \
  X(cuModuleLoadData) X(cuModuleLoadDataEx) X(cuModuleLoadFatBinary) X(cuLibraryLoadData)        \
  X(cuLibraryLoadFromFile) X(cuModuleUnload) X(cuLibraryUnload)
static const struct { const char *name; void *fn; } functions[] = {
  OWN(ROW) SIZED(ROW) UNSIZED(ROW) LAUNCHES(ROW) WAITS(ROW) QUERIES(ROW) GRAPHS(ROW)
};

void *fake_mem_fn(const char *name) {
  for (size_t i = 0; i < sizeof functions / sizeof functions[0]; i++) {
    if (strcmp(functions[i].name, name) == 0) return functions[i].fn;
  }
  return NULL;
}
