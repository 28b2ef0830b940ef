/*
 * The pod-wide memory count and the process registry (SPEC §10).
 *
 * The pod's processes share one small file, "pod" in the pod's directory (pod_files.c), mapped
 * into each: a header with the pod's total and one slot per process with what that process holds.
 * The limit is checked on the total alone, with a compare-and-swap, so two processes never pass it
 * together and nothing locks on the allocation path.
 *
 * A slot's owner holds a POSIX record lock on the slot's byte of the file. The kernel drops it when
 * the process ends however it ends (SIGKILL included), so "is the owner alive" is "is the byte
 * locked", which holds across a pod's containers even where they do not share a pid namespace (a
 * pid there would name another process or none). Every change of a slot's owner happens with that
 * lock held. The lock is per process, so a forked child has none and takes a slot of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpushare.h"

#define POD_STAMP ((uint64_t)0x67737064 << 32 | 1) /* "gspd", layout version 1 */
#define POD_SLOTS 128

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
               "the shared counts need lock-free atomics");

struct pod_slot {
  _Atomic int pid;      /* 0: free; otherwise the owner's pid, for a reader of the file */
  _Atomic int gpu_user; /* the owner passed a grant */
  _Atomic uint64_t used;
};

struct pod_file {
  _Atomic uint64_t stamp; /* POD_STAMP, set by the first process */
  _Atomic uint64_t total; /* the slots' used added up: the one word the limit is checked on */
  struct pod_slot slot[POD_SLOTS];
};

static struct pod_file local_pod; /* the count when the shared file cannot be had */
/* NULL until opened; &local_pod for a per-process count. Atomic: read by any thread, even in a
 * signal handler, while the first user opens it. */
static struct pod_file *_Atomic pod;
static int pod_fd = -1;
static _Atomic int opened;
static _Atomic int me = -1; /* this process's slot */
static pthread_mutex_t pod_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t limit;

/* ------------------------------------------------------------------ the shared file */

static int slot_lock(int i, short type, int cmd) {
  struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_len = 1,
                     .l_start = (off_t)(GS_POD_FILE_HEADER + offsetof(struct pod_file, slot) +
                                        (size_t)i * sizeof(struct pod_slot))};
  if (fcntl(pod_fd, cmd, &fl) != 0) return -1;
  return cmd == F_GETLK && fl.l_type != F_UNLCK;
}

/* Whether another process owns slot i (async-signal-safe). When the lock cannot be asked about,
 * it is taken as owned: a share is never released on a guess. */
static int owned_elsewhere(int i) {
  int r = slot_lock(i, F_WRLCK, F_GETLK);
  return r != 0;
}

/* Gives the pod back what slot i's (gone) owner held. */
static void empty_slot(int i) {
  struct pod_slot *s = &pod->slot[i];
  uint64_t u = atomic_exchange(&s->used, 0);
  if (u) atomic_fetch_sub(&pod->total, u);
  atomic_store(&s->gpu_user, 0);
}

static void go_local(const char *why) {
  static int said;
  if (!said++) {
    gs_say("%s; memory is counted per process, so the pod's processes together may use more than "
           "its limit: set GPUSHARE_STATE_DIR to a folder every container of the pod shares and "
           "can write", why);
  }
  pod = &local_pod;
}

/* Under pod_mu. */
static void open_pod(void) {
  char why[1400];
  void *m = NULL;
  int fd = gs_pod_file_open("pod", sizeof(struct pod_file), POD_STAMP, &m, why, sizeof why);
  if (fd < 0) {
    go_local(why);
    return;
  }
  struct pod_file *p = m;
  uint64_t stamp = 0;
  if (!atomic_compare_exchange_strong(&p->stamp, &stamp, POD_STAMP) && stamp != POD_STAMP) {
    go_local("the pod's memory count was written by another version of gpushare");
    close(fd);
    return;
  }
  pod_fd = fd;
  pod = p;
}

/* Under pod_mu: a free slot, or one whose owner is gone (its count given back first). */
static int claim(void) {
  if (pod == &local_pod) {
    atomic_store(&local_pod.slot[0].pid, (int)getpid());
    return 0;
  }
  for (int i = 0; i < POD_SLOTS; i++) {
    if (slot_lock(i, F_WRLCK, F_SETLK) != 0) continue; /* another process owns it */
    if (atomic_load(&pod->slot[i].pid) != 0) empty_slot(i);
    atomic_store(&pod->slot[i].pid, (int)getpid());
    return i;
  }
  return -1;
}

int gs_pod_open(void) {
  if (!gs_cfg.active) return -1;
  if (!atomic_load_explicit(&opened, memory_order_acquire)) {
    pthread_mutex_lock(&pod_mu);
    if (!atomic_load(&opened)) {
      open_pod();
      atomic_store_explicit(&opened, 1, memory_order_release);
    }
    pthread_mutex_unlock(&pod_mu);
  }
  return pod == &local_pod ? -1 : 0;
}

/* This process's slot, registering it on first use (after a fork too). */
static struct pod_slot *my_slot(void) {
  int i = atomic_load_explicit(&me, memory_order_acquire);
  if (GS_LIKELY(i >= 0)) return &pod->slot[i];
  gs_pod_open();
  pthread_mutex_lock(&pod_mu);
  i = atomic_load(&me);
  if (i < 0) {
    i = claim();
    if (i < 0) {
      go_local("the pod's memory count has no free slot (more than 128 processes)");
      i = claim();
    }
    atomic_store_explicit(&me, i, memory_order_release);
  }
  pthread_mutex_unlock(&pod_mu);
  return &pod->slot[i];
}

void gs_pod_mark_user(void) {
  if (gs_cfg.active) atomic_store(&my_slot()->gpu_user, 1);
}

int gs_pod_leave(void) {
  if (!gs_cfg.active) return 0;
  struct pod_file *p = pod;
  if (!p) return 1; /* never registered: no other process is known */
  int i = atomic_exchange(&me, -1);
  /* a child forked without gs_pod_after_fork still names its parent's slot: not its own */
  if (i >= 0 && atomic_load(&p->slot[i].pid) != (int)getpid()) i = -1;
  if (i >= 0) {
    empty_slot(i);
    atomic_store(&p->slot[i].pid, 0);
    if (p != &local_pod) slot_lock(i, F_UNLCK, F_SETLK);
  }
  if (p == &local_pod) return 1; /* counted per process: each acts as the pod's only one */
  for (int j = 0; j < POD_SLOTS; j++) {
    if (j == i || !atomic_load(&p->slot[j].pid) || !atomic_load(&p->slot[j].gpu_user)) continue;
    if (owned_elsewhere(j)) return 0;
  }
  return 1;
}

/* ------------------------------------------------------------------ the count */

void gs_mem_set_limit(uint64_t bytes) { atomic_store(&limit, bytes); }
uint64_t gs_mem_limit(void) { return atomic_load_explicit(&limit, memory_order_relaxed); }

static int add_within(uint64_t bytes, uint64_t lim) {
  uint64_t t = atomic_load(&pod->total);
  do {
    if (bytes > UINT64_MAX - t || (lim && (t > lim || bytes > lim - t))) return 0;
  } while (!atomic_compare_exchange_weak(&pod->total, &t, t + bytes));
  return 1;
}

/* Gives back the counts of the pod's processes that ended without leaving (SIGKILL, a crash). */
static void reclaim_dead(void) {
  if (pod == &local_pod) return;
  pthread_mutex_lock(&pod_mu); /* the record locks are per process: one thread at a time here */
  int mine = atomic_load(&me);
  for (int i = 0; i < POD_SLOTS; i++) {
    if (i == mine || !atomic_load(&pod->slot[i].pid)) continue;
    if (slot_lock(i, F_WRLCK, F_SETLK) != 0) continue; /* its owner lives */
    empty_slot(i);
    atomic_store(&pod->slot[i].pid, 0);
    slot_lock(i, F_UNLCK, F_SETLK);
  }
  pthread_mutex_unlock(&pod_mu);
}

/* Every figure reported (cuMemGetInfo, the pod's views) is what live processes hold: a process
 * that died (OOM kill, crash, a container's restart with the pod's /dev/shm kept) is given back
 * first, not only when an allocation finds the pod full. */
uint64_t gs_mem_used(void) {
  if (!gs_cfg.active || !pod) return 0;
  reclaim_dead();
  return atomic_load(&pod->total);
}

void gs_mem_add_taken(uint64_t bytes) {
  if (!gs_cfg.active || bytes == 0) return;
  struct pod_slot *s = my_slot();
  atomic_fetch_add(&pod->total, bytes);
  atomic_fetch_add(&s->used, bytes);
}

int gs_mem_reserve(uint64_t bytes) {
  if (!gs_cfg.active || bytes == 0) return 0;
  struct pod_slot *s = my_slot();
  uint64_t lim = gs_mem_limit();
  if (!add_within(bytes, lim)) {
    reclaim_dead();
    if (!add_within(bytes, lim)) return GS_CUDA_ERROR_OUT_OF_MEMORY;
  }
  /* after the total: a process killed in between leaves the pod over-counted, never under */
  atomic_fetch_add(&s->used, bytes);
  return 0;
}

void gs_mem_unreserve(uint64_t bytes) {
  int i = atomic_load_explicit(&me, memory_order_acquire);
  if (!gs_cfg.active || bytes == 0 || i < 0) return;
  struct pod_slot *s = &pod->slot[i];
  /* never below what this process counted (a free after gs_pod_leave, a free of the unknown) */
  uint64_t u = atomic_load(&s->used), take;
  do {
    take = u < bytes ? u : bytes;
  } while (take && !atomic_compare_exchange_weak(&s->used, &u, u - take));
  if (take) atomic_fetch_sub(&pod->total, take);
}

/* ------------------------------------------------------------------ address -> bytes */

struct entry {
  uint64_t key; /* 0: empty */
  uint64_t bytes;
  uint64_t pool; /* the stream-ordered pool it came from; 0: none (its bytes are its own count) */
  int measured;  /* a context's or module's own memory as measured around its making
                  * (gs_mem_track_measured): given up once the driver's figure counts it */
};

static pthread_mutex_t map_mu = PTHREAD_MUTEX_INITIALIZER;
static struct entry *map;
static size_t map_cap, map_len;
static struct entry *forked_away; /* the parent's map in a child: kept reachable, never used */

static size_t home(uint64_t key) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return (size_t)key & (map_cap - 1);
}

static struct entry *find(uint64_t key) {
  for (size_t i = home(key);; i = (i + 1) & (map_cap - 1)) {
    if (map[i].key == key || map[i].key == 0) return &map[i];
  }
}

static int grow(void) {
  size_t cap = map_cap ? map_cap * 2 : 256;
  struct entry *old = map, *fresh = calloc(cap, sizeof *fresh);
  if (!fresh) return -1;
  size_t old_cap = map_cap;
  map = fresh;
  map_cap = cap;
  for (size_t i = 0; i < old_cap; i++) {
    if (old[i].key) *find(old[i].key) = old[i];
  }
  free(old);
  return 0;
}

void gs_mem_track_pool(uint64_t address, uint64_t bytes, uint64_t pool) {
  if (!gs_cfg.active || address == 0) return;
  uint64_t replaced = 0;
  pthread_mutex_lock(&map_mu);
  if ((map_len + 1) * 2 <= map_cap || grow() == 0) {
    struct entry *e = find(address);
    if (e->key) {
      /* the driver reused an address freed where this library did not see; a pool's is the
       * pool's count, not the entry's */
      if (!e->pool) replaced = e->bytes;
    } else {
      map_len++;
    }
    e->key = address;
    e->bytes = bytes;
    e->pool = pool;
    e->measured = 0;
  }
  pthread_mutex_unlock(&map_mu);
  if (replaced) gs_mem_unreserve(replaced);
}

void gs_mem_track(uint64_t address, uint64_t bytes) { gs_mem_track_pool(address, bytes, 0); }

/* The driver's own memory for this process beyond what its entries count (contexts, modules,
 * lazily loaded code, the driver's growth), from the driver's per-process figure. */
static _Atomic uint64_t driver_extra;
static _Atomic int driver_counts; /* the driver's figure is in use: nothing is measured around */
static pthread_mutex_t driver_mu = PTHREAD_MUTEX_INITIALIZER; /* one figure applied at a time */

void gs_mem_track_measured(uint64_t key, uint64_t bytes) {
  gs_mem_track(key, bytes);
  pthread_mutex_lock(&map_mu);
  if (map_cap) {
    struct entry *e = find(key);
    if (e->key == key) e->measured = 1;
  }
  pthread_mutex_unlock(&map_mu);
}

int gs_mem_driver_counts(void) { return atomic_load(&driver_counts); }

void gs_mem_driver_figure(uint64_t driver_bytes) {
  if (!gs_cfg.active) return;
  pthread_mutex_lock(&driver_mu);
  uint64_t given_up = 0;
  if (!atomic_exchange(&driver_counts, 1)) {
    /* from now on the driver's figure counts contexts and modules: what was measured around
     * their making is given back (their entries stay, at 0, for their frees) */
    pthread_mutex_lock(&map_mu);
    for (size_t i = 0; i < map_cap; i++) {
      if (map[i].key && map[i].measured) given_up += map[i].bytes, map[i].bytes = 0;
    }
    pthread_mutex_unlock(&map_mu);
    gs_mem_unreserve(given_up);
  }
  int i = atomic_load_explicit(&me, memory_order_acquire);
  if (i < 0) {
    pthread_mutex_unlock(&driver_mu);
    return;
  }
  uint64_t extra = atomic_load(&driver_extra);
  uint64_t counted = atomic_load(&pod->slot[i].used);
  uint64_t own = counted > extra ? counted - extra : 0; /* what the entries and pools count */
  uint64_t want = driver_bytes > own ? driver_bytes - own : 0;
  if (want > extra) gs_mem_add_taken(want - extra);
  else if (want < extra) gs_mem_unreserve(extra - want);
  atomic_store(&driver_extra, want);
  pthread_mutex_unlock(&driver_mu);
  if (given_up) {
    gs_debug("memory: the driver's figure for this process counts its contexts and modules from "
             "now (%llu bytes measured around their making given back)",
             (unsigned long long)given_up);
  }
}

int gs_mem_tracked(uint64_t address) {
  if (!gs_cfg.active || address == 0) return 0;
  pthread_mutex_lock(&map_mu);
  int known = map_cap && find(address)->key != 0;
  pthread_mutex_unlock(&map_mu);
  return known;
}

int gs_mem_untrack_pool(uint64_t address, uint64_t *bytes, uint64_t *pool) {
  *bytes = *pool = 0;
  if (!gs_cfg.active || address == 0) return 0;
  int known = 0;
  pthread_mutex_lock(&map_mu);
  if (map_cap) {
    struct entry *e = find(address);
    if (e->key) {
      known = 1;
      *bytes = e->bytes;
      *pool = e->pool;
      /* backward-shift deletion: the probe chains stay whole without tombstones */
      size_t hole = (size_t)(e - map);
      for (size_t j = (hole + 1) & (map_cap - 1); map[j].key; j = (j + 1) & (map_cap - 1)) {
        size_t h = home(map[j].key);
        if (((j - h) & (map_cap - 1)) >= ((j - hole) & (map_cap - 1))) {
          map[hole] = map[j];
          hole = j;
        }
      }
      map[hole].key = 0;
      map_len--;
    }
  }
  pthread_mutex_unlock(&map_mu);
  return known;
}

/* ------------------------------------------------------------------ stream-ordered pools */

/* A pool keeps what its allocations gave back (cuMemFreeAsync) until it trims: at a
 * synchronisation down to its release threshold (0 by default, UINT64_MAX in the frameworks that
 * never trim), at cuMemPoolTrimTo, at cuMemPoolDestroy. What it holds is the driver's figure
 * (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), asked for after each allocation, free, trim and before
 * each report (cuda_wrappers.c); counted here per pool, this process's own. */
#define POOLS 64
static struct { uint64_t pool, counted; } pools[POOLS];
static pthread_mutex_t pools_mu = PTHREAD_MUTEX_INITIALIZER;

void gs_mem_pool_set(uint64_t pool, uint64_t reserved) {
  if (!gs_cfg.active || !pool) return;
  uint64_t more = 0, less = 0;
  pthread_mutex_lock(&pools_mu);
  int i = 0, free_at = -1;
  for (; i < POOLS && pools[i].pool != pool; i++) {
    if (!pools[i].pool && free_at < 0) free_at = i;
  }
  if (i == POOLS && free_at >= 0) {
    i = free_at;
    pools[i].pool = pool;
    pools[i].counted = 0;
  }
  if (i < POOLS) {
    if (reserved > pools[i].counted) more = reserved - pools[i].counted;
    else less = pools[i].counted - reserved;
    pools[i].counted = reserved;
  } else {
    more = reserved; /* more pools than places: counted for good, never under */
  }
  pthread_mutex_unlock(&pools_mu);
  if (more) gs_mem_add_taken(more);
  if (less) gs_mem_unreserve(less);
}

void gs_mem_pool_sub(uint64_t pool, uint64_t bytes) {
  uint64_t less = 0;
  pthread_mutex_lock(&pools_mu);
  for (int i = 0; i < POOLS && pool; i++) {
    if (pools[i].pool != pool) continue;
    less = bytes < pools[i].counted ? bytes : pools[i].counted;
    pools[i].counted -= less;
    if (!pools[i].counted) pools[i].pool = 0;
  }
  pthread_mutex_unlock(&pools_mu);
  if (less) gs_mem_unreserve(less);
}

int gs_mem_pools(uint64_t *out, int max) {
  int n = 0;
  pthread_mutex_lock(&pools_mu);
  for (int i = 0; i < POOLS && n < max; i++) {
    if (pools[i].pool) out[n++] = pools[i].pool;
  }
  pthread_mutex_unlock(&pools_mu);
  return n;
}

/* ------------------------------------------------------------------ fork */

void gs_pod_after_fork(void) {
  if (!gs_cfg.active) return;
  /* another thread of the parent may have held either mutex at the fork */
  pthread_mutex_init(&pod_mu, NULL);
  pthread_mutex_init(&map_mu, NULL);
  pthread_mutex_init(&pools_mu, NULL);
  memset(pools, 0, sizeof pools); /* the parent's pools are not the child's */
  gs_pod_files_after_fork();
  atomic_store(&me, -1); /* the next use registers the child in a slot of its own */
  if (pod == &local_pod) memset(&local_pod, 0, sizeof local_pod);
  if (map) { /* the parent's allocations are not the child's */
    free(forked_away);
    forked_away = map;
  }
  map = NULL;
  map_cap = map_len = 0;
  atomic_store(&driver_extra, 0);
  atomic_store(&driver_counts, 0);
  pthread_mutex_init(&driver_mu, NULL);
}
