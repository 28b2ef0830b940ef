#!/usr/bin/env python3
"""Checkpoints and restores another process's GPU state with the CUDA driver's checkpoint API
(cuCheckpointProcess*, CUDA 12.8's driver API), as the member does, from one long-lived process
(a driver keeps no state between its callers, the fake libcuda of the rehearsal does):

  python3 cuda_checkpoint.py LIBCUDA PID

First line: "driver VERSION api yes|no" (no: cuDriverGetVersion below 12080 or a function
missing). Then one command per line on stdin, one answer per line:
  suspend  cuCheckpointProcessLock (10 s timeout), cuCheckpointProcessCheckpoint
  resume   cuCheckpointProcessRestore, cuCheckpointProcessUnlock
  -> "ok <milliseconds>" or "error <function> <CUresult> <name>"
"""
import ctypes
import sys
import time

NAMES = ("Lock", "Checkpoint", "Restore", "Unlock")


def main(argv):
    lib = ctypes.CDLL(argv[1])
    pid = int(argv[2])
    version = ctypes.c_int(0)
    lib.cuDriverGetVersion(ctypes.byref(version))
    api = version.value >= 12080 and all(hasattr(lib, "cuCheckpointProcess" + n) for n in NAMES)
    print("driver %d api %s" % (version.value, "yes" if api else "no"), flush=True)
    if not api:
        return 0

    def call(name, timeout_ms=0):
        args = ctypes.create_string_buffer(64)  # every *Args struct: 64 bytes, zeroed
        ctypes.c_uint.from_buffer(args).value = timeout_ms  # CUcheckpointLockArgs.timeoutMs
        rc = getattr(lib, "cuCheckpointProcess" + name)(pid, args)
        if rc == 3 and lib.cuInit(0) == 0:  # NOT_INITIALIZED: the member calls no cuInit; say so
            print("note: cuCheckpointProcess%s needed cuInit in the caller" % name, flush=True)
            rc = getattr(lib, "cuCheckpointProcess" + name)(pid, args)
        if rc:
            text = ctypes.c_char_p()
            lib.cuGetErrorName(rc, ctypes.byref(text))
            raise RuntimeError("cuCheckpointProcess%s %d %s" % (
                name, rc, (text.value or b"?").decode()))

    for line in sys.stdin:
        start = time.monotonic()
        try:
            if line.strip() == "suspend":
                call("Lock", 10000)
                call("Checkpoint")
            else:
                call("Restore")
                call("Unlock")
            print("ok %d" % ((time.monotonic() - start) * 1000), flush=True)
        except RuntimeError as e:
            print("error %s" % e, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
