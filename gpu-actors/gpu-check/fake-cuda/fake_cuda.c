/*
 * A fake libcuda.so.1 for the tests of the CUDA checkpoint binding (CudaFakeDriverTest): the
 * driver functions that dev.gpushare.gpu.cuda.CudaDriver calls, with the real signatures and
 * CUresult codes, and a per-process state machine RUNNING -> LOCKED -> CHECKPOINTED -> LOCKED ->
 * RUNNING kept in this library's memory (one JVM). Not how a real driver behaves beyond that.
 *
 * Environment:
 *   FAKE_CUDA_VERSION=12090      what cuDriverGetVersion answers
 *   FAKE_CUDA_FAIL=call:code,... make a call fail with that CUresult, e.g. lock:909 restore:2;
 *                                call is state, lock, checkpoint, restore or unlock;
 *                                call:code:N fails only the first N times
 * Built with -DFAKE_OLD_DRIVER it exports no cuCheckpointProcess* function (a driver before 12.8).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_ILLEGAL_STATE 401

CUresult cuInit(unsigned int flags) { (void)flags; return CUDA_SUCCESS; }

CUresult cuDriverGetVersion(int *version) {
  const char *v = getenv("FAKE_CUDA_VERSION");
  *version = v ? atoi(v) : 12090;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  switch (error) {
    case 0: *name = "CUDA_SUCCESS"; return 0;
    case 1: *name = "CUDA_ERROR_INVALID_VALUE"; return 0;
    case 2: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
    case 401: *name = "CUDA_ERROR_ILLEGAL_STATE"; return 0;
    case 600: *name = "CUDA_ERROR_NOT_READY"; return 0;
    case 909: *name = "CUDA_ERROR_TIMEOUT"; return 0;
    default: *name = 0; return CUDA_ERROR_INVALID_VALUE;
  }
}

#ifndef FAKE_OLD_DRIVER
typedef struct { unsigned int timeoutMs; unsigned int reserved0; unsigned long reserved1[7]; } CUcheckpointLockArgs;
typedef struct { unsigned long reserved[8]; } CUcheckpointCheckpointArgs;
typedef struct { unsigned long reserved[8]; } CUcheckpointRestoreArgs;
typedef struct { unsigned long reserved[8]; } CUcheckpointUnlockArgs;

#define MAX_PIDS 64
static int pids[MAX_PIDS];
static int states[MAX_PIDS]; /* 0 running, 1 locked, 2 checkpointed */
static int count;
static int failed_times[8];

static int slot(int pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d", pid);
  if (access(path, F_OK) != 0) return -1; /* no such process */
  for (int i = 0; i < count; i++) if (pids[i] == pid) return i;
  if (count == MAX_PIDS) return -1;
  pids[count] = pid;
  states[count] = 0;
  return count++;
}

/* the CUresult FAKE_CUDA_FAIL scripts for call number `which` named `call`, or 0 */
static CUresult scripted(int which, const char *call) {
  const char *spec = getenv("FAKE_CUDA_FAIL");
  if (!spec) return 0;
  size_t n = strlen(call);
  for (const char *p = spec; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : 0) {
    if (strncmp(p, call, n) == 0 && p[n] == ':') {
      int code = atoi(p + n + 1);
      const char *times = strchr(p + n + 1, ':');
      const char *comma = strchr(p + n + 1, ',');
      if (times && (!comma || times < comma)) {
        if (failed_times[which] >= atoi(times + 1)) return 0;
      }
      failed_times[which]++;
      return code;
    }
  }
  return 0;
}

CUresult cuCheckpointProcessGetState(int pid, int *state) {
  CUresult rc = scripted(0, "state");
  if (rc) return rc;
  int i = slot(pid);
  if (i < 0) return CUDA_ERROR_INVALID_VALUE;
  *state = states[i];
  return CUDA_SUCCESS;
}

static CUresult step(int which, const char *call, int pid, int from, int to) {
  CUresult rc = scripted(which, call);
  if (rc) return rc;
  int i = slot(pid);
  if (i < 0) return CUDA_ERROR_INVALID_VALUE;
  if (states[i] != from) return CUDA_ERROR_ILLEGAL_STATE;
  states[i] = to;
  fprintf(stderr, "fake libcuda: %s(%d) -> state %d\n", call, pid, to);
  return CUDA_SUCCESS;
}

CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs *args) {
  (void)args;
  return step(1, "lock", pid, 0, 1);
}
CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs *args) {
  (void)args;
  return step(2, "checkpoint", pid, 1, 2);
}
CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs *args) {
  (void)args;
  return step(3, "restore", pid, 2, 1);
}
CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs *args) {
  (void)args;
  return step(4, "unlock", pid, 1, 0);
}
CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int *tid) {
  *tid = pid;
  return CUDA_SUCCESS;
}
#endif
