/*
 * libgpushare.so: the pod side of gpushare (SPEC §10), loaded into a pod's processes with
 * LD_PRELOAD. The Java member is the only decider; this library asks (demand, release) and obeys
 * (the pod's state as the data plane reports it).
 *
 * One file per concern:
 *   config.c   everything read from the environment, parsed once at load time
 *   json.c     the few fields of a PodView this library reads
 *   client.c   the data-plane client: HTTP/1.1 over TCP (or a Unix socket), bearer token
 *   state.c    the pod's state word (the gate), demand and waiting, the watch thread, the signal
 *              contract, the release when the pod's last GPU process exits
 *   driver.c   the CUDA driver's entry: symbols, dlsym look-ups in libcuda and cuGetProcAddress;
 *              one table from (name, version, flags) to the wrapper and the real pointer
 *   cuda_wrappers.c  that table's rows and the wrappers: gate, forward, account
 *   memory.c   the pod-wide memory count (a small shared file), allocation and free wrappers'
 *              accounting, the process registry used for the release
 *   pod_files.c  the pod's shared files: a private directory per pod (bound to its uid), opened
 *              without following links, each file's header checked
 *   nvml.c     the NVML view: only the granted GPU, utilisation relative to the core limit
 *   driver_memory.c  what the driver says the process holds (NVML by its host PID), counted
 *
 * Every message starts with "gpushare: " except SPEC §4's exact waiting line.
 */
#ifndef GPUSHARE_H
#define GPUSHARE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GS_EXPORT __attribute__((visibility("default")))
#define GS_LIKELY(x) __builtin_expect(!!(x), 1)
#define GS_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* CUresult values this library returns itself (cuda.h) */
#define GS_CUDA_SUCCESS 0
#define GS_CUDA_ERROR_OUT_OF_MEMORY 2
#define GS_CUDA_ERROR_NOT_INITIALIZED 3
#define GS_CUDA_ERROR_NO_DEVICE 100
#define GS_CUDA_ERROR_NOT_FOUND 500
#define GS_CUDA_ERROR_NOT_PERMITTED 800

/* nvmlReturn_t values (nvml.h) */
#define GS_NVML_SUCCESS 0
#define GS_NVML_ERROR_INVALID_ARGUMENT 2
#define GS_NVML_ERROR_NOT_FOUND 6

/* ------------------------------------------------------------------ config.c */

enum gs_on_error { GS_ON_ERROR_WAIT = 0, GS_ON_ERROR_FAIL = 1 };

struct gs_config {
  /* 0: the library is inert (no GPUSHARE_SERVER: not a sharing pod); every call passes through */
  int active;
  /* non-empty when a setting is malformed: the whole stderr line, printed once at first use */
  char error[512];
  char server[256];    /* as given: http://host:port or unix:/path */
  char host[128];      /* for TCP */
  char port[16];       /* for TCP */
  char unix_path[108]; /* for a Unix socket; empty for TCP */
  char ns[254];
  char name[254];
  char token_file[512];  /* empty: no Authorization header */
  long wait_interval_ms; /* GPUSHARE_WAIT_INTERVAL, default 10s */
  long grace_ms;         /* GPUSHARE_GRACE, default 30s (gpushare run --grace) */
  enum gs_on_error on_error;  /* GPUSHARE_ON_ERROR=wait|fail, default wait */
  char state_dir[512];   /* GPUSHARE_STATE_DIR, default /dev/shm (else /tmp): the pod's file */
  int debug;             /* GPUSHARE_DEBUG=1: trace lines on stderr */
};

extern struct gs_config gs_cfg;

/* Parses the environment into gs_cfg; called once from the library's constructor. */
void gs_config_load(void);
/* Parses N[ms|s|m|h] (seconds without a unit); -1 when malformed. */
long gs_parse_duration_ms(const char *text);

/* Writes one line to stderr (the "gpushare: " prefix added), async-signal-safe (one write). */
void gs_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same, raw: the line as given (SPEC §4's waiting line). */
void gs_say_raw(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gs_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ------------------------------------------------------------------ json.c */

/* Looks up a dotted path ("state", "gpu.uuid", "limits.core", "checkpoint.phase") in a JSON
 * object. Returns 1 when found (string copied, NUL-terminated, truncated to n-1), 0 when absent or
 * null, -1 when the text is not valid JSON or the value has the wrong type. */
int gs_json_string(const char *json, size_t len, const char *path, char *out, size_t n);
int gs_json_long(const char *json, size_t len, const char *path, long long *out);
/* An array of integers at `path`: how many it holds (up to max stored in out), 0 when absent or
 * null, -1 when not JSON or not an array of integers. */
int gs_json_longs(const char *json, size_t len, const char *path, long long *out, int max);

/* ------------------------------------------------------------------ client.c */

struct gs_response {
  int status;      /* HTTP status */
  char *body;      /* malloc'd, NUL-terminated; free with free() */
  size_t len;
};

/* One request to the data plane, with the bearer token read from gs_cfg.token_file at each call.
 * Returns 0 when an HTTP answer came (any status), -1 on a transport failure (err says what). */
int gs_http(const char *method, const char *path, long timeout_ms, struct gs_response *out,
            char *err, size_t errlen);

/* The same with a JSON body (at most 1 KiB), sent with Content-Type: application/json. */
int gs_http_body(const char *method, const char *path, const char *body, long timeout_ms,
                 struct gs_response *out, char *err, size_t errlen);

/* The watch stream (Server-Sent Events). Open: 0 and the status in *status (200 = streaming),
 * -1 on transport failure. Next: 1 with one event's data in buf, 0 at the end of the stream,
 * -1 on failure or when nothing (not even a heartbeat) came for idle_ms. */
struct gs_stream;
int gs_watch_open(const char *path, struct gs_stream **out, int *status, char *err, size_t errlen);
int gs_watch_next(struct gs_stream *s, char **data, size_t *len, long idle_ms);
void gs_watch_close(struct gs_stream *s);

/* The same DELETE/POST with only async-signal-safe calls (socket, connect, send, recv, open,
 * read) to the address a previous request reached: for a signal handler. 0 when sent. */
int gs_http_signal_safe(const char *method, const char *path);

/* ------------------------------------------------------------------ state.c */

/* "/v1/namespaces/NS/pods/NAME" + suffix */
void gs_pod_path(char *out, size_t n, const char *suffix);

/* The state word: 0 while this process's CUDA calls go on (the pod is Running on the GPU this
 * process uses, or the library is inert); anything else sends the call to gs_gate_slow(). The
 * watch thread keeps it current. The hot path is gs_gate() and nothing else. */
extern _Atomic int gs_gate_word;

/* The slow path: raises demand, waits (printing the waiting line) until the pod is Running on
 * this process's GPU with its state restored. Returns 0 to go on, or the CUresult to fail with
 * (CUDA_ERROR_NO_DEVICE when configured to fail, or the setting is malformed). */
int gs_gate_slow(void);

/* The state word's value while the pod is Running under a compute limit (limiter.c): every call
 * but a kernel launch goes on as at 0; a launch takes a token from the pod's bucket first. */
#define GS_GATE_LIMITED 2

static inline int gs_gate(void) {
  if (GS_LIKELY((atomic_load_explicit(&gs_gate_word, memory_order_acquire) & 1) == 0)) return 0;
  return gs_gate_slow();
}

/* ------------------------------------------------------------------ limiter.c */

/* The pod's bucket (shared by its processes once the limit is on). */
extern _Atomic(int64_t) *gs_limit_tokens;
/* A launch that found the bucket empty: waits for a token (or for the pod to leave Running). */
int gs_limit_wait(void);
/* A kernel launch's gate: at 0 as gs_gate; under a limit one atomic fetch-and-subtract. */
static inline int gs_launch_gate(void) {
  int w = atomic_load_explicit(&gs_gate_word, memory_order_acquire);
  if (GS_LIKELY(w == 0)) return 0;
  if (GS_LIKELY(w == GS_GATE_LIMITED)) {
    if (GS_LIKELY(atomic_fetch_sub_explicit(gs_limit_tokens, 1, memory_order_relaxed) > 0))
      return 0;
    return gs_limit_wait();
  }
  return gs_gate_slow();
}
/* The state word for Running: GS_GATE_LIMITED under a limit, else 0. */
int gs_limit_word(void);
/* The pod's core limit and whether this node limits in the library (view computeLimit.mode). */
void gs_limit_set(int core_limit, int enabled);
/* At exit: leaves the pod's processes; the controller reports the pod's figures one last time. */
void gs_limit_at_exit(void);
/* In a forked child: no controller thread, no limit until its own grant. */
void gs_limit_after_fork(void);
/* The host PIDs of the pod's processes on its GPU, as the member's telemetry last saw them (data
 * plane GET …/processes, asked at most once a second by one thread at a time, with no lock held;
 * never on a CUDA call's path), and the pod's SM percent of the whole GPU there (-1: not
 * reported). How many PIDs (up to max stored), or -1 when the member cannot say (an older member,
 * no answer yet): the caller falls back to the pod's own PIDs, which are NVML's only where the pod
 * shares the host's PID namespace. gs_pod_host_pids asks when the answer is a second old (it
 * blocks up to 500 ms: background threads only); _known gives what was last answered at once. */
int gs_pod_host_pids(unsigned *pids, int max, int *sm_percent);
int gs_pod_host_pids_known(unsigned *pids, int max, int *sm_percent);
/* This process's host PID as the member named it (its PID here and its start time among the
 * member's answer, nsPids and startTimes); 0 while the member has not named it (a process on the
 * GPU for less than one telemetry sample, an older member). From what was last answered. */
unsigned gs_self_host_pid(void);
/* The PIDs NVML names the pod's processes by: the member's list when it has one, else the pod's
 * registered processes' own PIDs; their count (up to max stored). ask: as gs_pod_host_pids. */
int gs_pod_nvml_pids(unsigned *pids, int max, int ask);

/* cuInit's entry: the first GPU use. Raises demand (share-pool) or finds the pinned GPU (static),
 * waits for the grant, then sets CUDA_VISIBLE_DEVICES to the granted GPU's UUID, all before the
 * real cuInit. A CUDA_VISIBLE_DEVICES that leaves no device (a CPU-only process) raises nothing.
 * Returns 0 to call the real cuInit (then gs_after_cuinit, whatever it answered), or the CUresult
 * to fail with. */
int gs_before_cuinit(void);
/* After the real cuInit: CUDA_VISIBLE_DEVICES is the user's again; when it succeeded, the memory
 * limit is computed from the granted device. */
void gs_after_cuinit(int rc);

/* How many of workload.env's CUDA_MPS_* variables a grant carries (state.c names them). */
#define GS_MPS_VARS 4

/* What this process was granted; valid once gs_grant_known() is 1. */
struct gs_grant {
  int index;          /* the GPU's real index on the node */
  char uuid[96];      /* GPU-… */
  int core_limit;     /* percent, 1..100 */
  int memory_limit;   /* percent, 1..100 */
  int is_static;      /* pinned (static pod) */
  char mps[GS_MPS_VARS][512]; /* workload.env's CUDA_MPS_* values, "" when absent */
};
int gs_grant_known(void);
const struct gs_grant *gs_grant_get(void);
/* The pod's view as NVML shows it, in one GET of the data plane that changes nothing of this
 * process's state (no demand, no grant taken): 0 with *b, -1 with err when no view came (the data
 * plane unreachable or silent, a refusal, a 404 while the member creates the pod). Blocking up to
 * the request's timeout: never on a CUDA or NVML caller's path but the first look at nvmlInit. */
struct gs_pod_brief {
  char policy[16], state[16];
  char uuid[96]; /* the GPU granted (Running) or pinned (static); "" for none */
  int has_gpu, core, memory;
};
int gs_pod_brief_get(struct gs_pod_brief *b, char *err, size_t errlen);

/* ------------------------------------------------------------------ signals.c */

/* The pod left Running under this process without its GPU state held: SIGUSR1 now, SIGTERM
 * GPUSHARE_GRACE later, SIGKILL as long again (gpushare run's contract), each line on stderr. */
void gs_contract_begin(const char *why);
/* Set once this process has left the pod (exit, a deadly signal): its own release is not a
 * preemption, and the watch no longer acts on what follows. */
extern _Atomic int gs_left_pod;
void gs_contract_after_fork(void);
/* Once this process uses the GPU: SIGTERM, SIGINT and SIGHUP left at their default release the
 * share (when this is the pod's last GPU process) before they end the process. */
void gs_release_install(void);
/* At exit: deregisters; the last GPU process of the pod releases the share. Idempotent. */
void gs_release_at_exit(void);

/* ------------------------------------------------------------------ memory.c */

/* Opens (creating) the pod's shared file and registers this process; idempotent; 0 or -1. */
int gs_pod_open(void);
/* Marks this process as one that uses the GPU (it passed a grant). */
void gs_pod_mark_user(void);
/* Deregisters this process; returns 1 when no other live process of the pod uses the GPU (this
 * was the last one: the caller releases the share), 0 otherwise. Async-signal-safe. */
int gs_pod_leave(void);
/* After fork, in the child: a new registration with nothing allocated. */
void gs_pod_after_fork(void);

/* The pod's limit in bytes: ⌊memory_limit % × the GPU's memory⌋; 0 = not known yet (no limit). */
void gs_mem_set_limit(uint64_t bytes);
uint64_t gs_mem_limit(void);
/* Counts bytes for the pod: 0, or GS_CUDA_ERROR_OUT_OF_MEMORY when the pod would go over. */
int gs_mem_reserve(uint64_t bytes);
void gs_mem_unreserve(uint64_t bytes);
/* Remembers what an allocation's address took, for its free (gs_mem_untrack_pool forgets it). */
void gs_mem_track(uint64_t address, uint64_t bytes);
/* What the pod uses now, all its live processes together. */
uint64_t gs_mem_used(void);

/* Stream-ordered pools (cuda_wrappers.c asks the driver, memory.c counts): what a pool holds is
 * counted for the pod until the pool gives it back, whatever its allocations are. Sets the pool's
 * counted bytes to what the driver says it reserves now (no limit check: it is taken already). */
void gs_mem_pool_set(uint64_t pool, uint64_t reserved);
/* A pool the driver no longer has (destroyed, its allocations still out counted until freed):
 * bytes of it given back. */
void gs_mem_pool_sub(uint64_t pool, uint64_t bytes);
/* This process's pools, up to max; the count. */
int gs_mem_pools(uint64_t *out, int max);
/* An allocation from a pool: remembered with its pool, its bytes counted in the pool's. */
void gs_mem_track_pool(uint64_t address, uint64_t bytes, uint64_t pool);
/* Forgets an address before its free; 1 with what it took (bytes, pool) when it was known. */
int gs_mem_untrack_pool(uint64_t address, uint64_t *bytes, uint64_t *pool);
/* Counts bytes the driver has taken already (a context): over the limit too. */
void gs_mem_add_taken(uint64_t bytes);
/* Whether an address or handle is remembered. */
int gs_mem_tracked(uint64_t address);
/* A context's or module's own memory measured around its making (the GPU's used memory before and
 * after): counted until the driver's figure for this process is in use (driver_memory.c). */
void gs_mem_track_measured(uint64_t key, uint64_t bytes);
/* The driver's figure for this process (NVML's used memory of its host PID on its GPU): what it
 * holds beyond its counted allocations and pools counts for the pod from now on, and the first
 * figure gives back what was measured around contexts and modules. */
void gs_mem_driver_figure(uint64_t driver_bytes);
/* Whether the driver's figure is in use in this process. */
int gs_mem_driver_counts(void);

/* ------------------------------------------------------------------ driver_memory.c */

/* After the real cuInit went through under a grant: starts the thread that keeps the driver's
 * figure for this process current (once a second), when the pod's memory limit is counted. */
void gs_driver_memory_start(void);
/* The driver's figure taken now, when it can be (a context or module made, an allocation about to
 * be refused, the free memory asked): 1 when it was. Never asks the data plane. */
int gs_driver_memory_now(void);
void gs_driver_memory_after_fork(void);

/* ------------------------------------------------------------------ pod_files.c */

/* Where a pod file's payload starts (its header before it): record locks on the payload's bytes
 * are taken at this offset plus the payload's. */
#define GS_POD_FILE_HEADER 1024
/* The pod's uid as its view gives it (state.c, once): it names the pod's directory. */
void gs_pod_set_uid(const char *uid);
/* Opens (creating) the pod's file `kind` ("pod", "limit") of a payload of size bytes stamped
 * stamp, maps it and gives the payload; the file descriptor, or -1 with why filled. */
int gs_pod_file_open(const char *kind, size_t size, uint64_t stamp, void **payload, char *why,
                     size_t n);
void gs_pod_files_after_fork(void);

/* ------------------------------------------------------------------ driver.c */

/* The real driver's symbol (libcuda.so.1 opened by the library, looked up with libc's dlsym on
 * that handle, so never this library's own wrapper); NULL when absent. */
void *gs_real_cuda(const char *name);
/* The same for libnvidia-ml.so.1. */
void *gs_real_nvml(const char *name);
/* libc's dlsym, not this library's. */
void *gs_real_dlsym(void *handle, const char *name);
/* This library's wrapper for a symbol of the driver or of NVML, or NULL (driver.c and nvml.c). */
void *gs_cuda_wrapper(const char *name);
void *gs_nvml_wrapper(const char *name);

/* The driver's table: one row per exported variant this library wraps (the rows and wrappers are
 * in cuda_wrappers.c, the look-ups in driver.c). base is the name the runtime gives
 * cuGetProcAddress, name the exported variant, version the CUDA version it came with
 * (cudaTypedefs.h's PFN_<base>_v<version>): the driver picks, for (base, version asked, flags), the
 * newest variant not newer than the version asked (cuMemAlloc@3020 is cuMemAlloc_v2, the
 * per-thread flag picks _ptsz). This library hands back a variant's wrapper only when the pointer
 * the driver chose is that variant's (driver.c says how it knows); anything else passes through. */
struct gs_cuda_fn {
  const char *base;
  const char *name;
  int version;
  void *wrapper;
  _Atomic(void *) real;     /* the real variant, resolved on first use */
  _Atomic(void *) internal; /* an internal entry point the driver gave for it, once proved */
};
extern struct gs_cuda_fn gs_cuda_fns[];
extern const size_t gs_cuda_fns_count;
/* Resolves (and caches) a row's real variant; NULL when the driver has none. */
void *gs_cuda_resolve(struct gs_cuda_fn *fn);

#endif
