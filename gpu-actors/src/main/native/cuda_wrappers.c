/*
 * The driver functions this library stands in front of (driver.c routes every way in to these),
 * with cuda.h's signatures and exported names: each variant the driver exports is its own wrapper
 * and calls its own real variant, so a caller keeps the variant it asked for (the _v2 sizes, the
 * per-thread default stream of _ptds/_ptsz).
 *
 *   work (launches, copies, sets, waits): the state word, then the driver
 *   allocations: the state word, the pod's count (an allocation over the pod's limit fails with
 *   CUDA_ERROR_OUT_OF_MEMORY without reaching the driver), the driver, the address remembered
 *   frees: the address forgotten, the driver, then the count (never held back: freeing is what a
 *   waiting pod needs); a failed free remembers the address again
 *   stream-ordered pools: what a pool holds counts until the driver says the pool gave it back
 *   synchronisations: the state word, the driver, then the pools asked again (they trim there)
 *   contexts and modules: what the driver holds for the process counts for the pod: its own
 *   figure by host PID (driver_memory.c), else what one took, measured around its making
 *   cuMemGetInfo: the pod's limit as the total, what it has left as the free
 *   cuDeviceTotalMem: the pod's limit as the device's size
 *   cuInit: the demand and the grant (state.c) before the driver reads CUDA_VISIBLE_DEVICES
 *
 * Types are declared here in plain C (cuda.h is not needed to build): handles are pointers,
 * CUdeviceptr is unsigned long long (unsigned int in the 2000-era _v1 functions), CUresult is int.
 */
#include "gpushare.h"

#include <pthread.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef unsigned int CUdeviceptr_v1;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef void *CUfunction, *CUstream, *CUevent, *CUcontext, *CUarray, *CUmipmappedArray,
    *CUmemoryPool, *CUgraphExec;
typedef int CUdevice;
struct mem_location { int type, id; }; /* cuda.h's CUmemLocation, passed by value */

/* cuda.h's CUDA_ARRAY_DESCRIPTOR and CUDA_ARRAY3D_DESCRIPTOR, and their _v1 */
struct array_desc { size_t Width, Height; int Format; unsigned NumChannels; };
struct array_desc_v1 { unsigned Width, Height; int Format; unsigned NumChannels; };
struct array3d_desc { size_t Width, Height, Depth; int Format; unsigned NumChannels, Flags; };
struct array3d_desc_v1 { unsigned Width, Height, Depth; int Format; unsigned NumChannels, Flags; };

/* ------------------------------------------------------------------ the work calls' shapes */

#define P_LAUNCH (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, \
                  unsigned bz, unsigned shared, CUstream s, void **params, void **extra)
#define A_LAUNCH (f, gx, gy, gz, bx, by, bz, shared, s, params, extra)
#define P_LAUNCHEX (const void *config, CUfunction f, void **params, void **extra)
#define A_LAUNCHEX (config, f, params, extra)
#define P_COOP (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, \
                unsigned bz, unsigned shared, CUstream s, void **params)
#define A_COOP (f, gx, gy, gz, bx, by, bz, shared, s, params)
#define P_HOSTFN (CUstream s, void (*fn)(void *), void *data)
#define A_HOSTFN (s, fn, data)
#define P_DD (CUdeviceptr dst, CUdeviceptr src, size_t n)
#define A_DD (dst, src, n)
#define P_DDA (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
#define A_DDA (dst, src, n, s)
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
#define A_HD A_DD
#define A_HDA A_DDA
#define A_DH A_DD
#define A_DHA A_DDA
#define A_DD1 A_DD
#define A_DDA1 A_DDA
#define A_HD1 A_DD
#define A_HDA1 A_DDA
#define A_DH1 A_DD
#define A_DHA1 A_DDA
#define P_COPY (const void *copy)
#define A_COPY (copy)
#define P_COPYA (const void *copy, CUstream s)
#define A_COPYA (copy, s)
#define P_PEER (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n)
#define A_PEER (dst, dc, src, sc, n)
#define P_PEERA (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream s)
#define A_PEERA (dst, dc, src, sc, n, s)
#define P_SET8 (CUdeviceptr d, unsigned char v, size_t n)
#define P_SET16 (CUdeviceptr d, unsigned short v, size_t n)
#define P_SET32 (CUdeviceptr d, unsigned v, size_t n)
#define P_SET8_1 (CUdeviceptr_v1 d, unsigned char v, unsigned n)
#define P_SET16_1 (CUdeviceptr_v1 d, unsigned short v, unsigned n)
#define P_SET32_1 (CUdeviceptr_v1 d, unsigned v, unsigned n)
#define A_SET8 (d, v, n)
#define A_SET16 A_SET8
#define A_SET32 A_SET8
#define A_SET8_1 A_SET8
#define A_SET16_1 A_SET8
#define A_SET32_1 A_SET8
#define P_SET8A (CUdeviceptr d, unsigned char v, size_t n, CUstream s)
#define P_SET16A (CUdeviceptr d, unsigned short v, size_t n, CUstream s)
#define P_SET32A (CUdeviceptr d, unsigned v, size_t n, CUstream s)
#define A_SET8A (d, v, n, s)
#define A_SET16A A_SET8A
#define A_SET32A A_SET8A
#define P_NONE (void)
#define A_NONE ()
#define P_CTX (CUcontext c)
#define A_CTX (c)
#define P_STREAM (CUstream s)
#define A_STREAM (s)
#define P_WAITEV (CUstream s, CUevent e, unsigned flags)
#define A_WAITEV (s, e, flags)
#define P_EVENT (CUevent e)
#define A_EVENT (e)
#define P_RECORD (CUevent e, CUstream s)
#define A_RECORD (e, s)
#define P_RECORDF (CUevent e, CUstream s, unsigned flags)
#define A_RECORDF (e, s, flags)
#define P_GRAPH (CUgraphExec g, CUstream s)
#define A_GRAPH (g, s)
#define P_LAUNCH0 (CUfunction f)
#define A_LAUNCH0 (f)
#define P_GRID (CUfunction f, int w, int h)
#define A_GRID (f, w, h)
#define P_GRIDA (CUfunction f, int w, int h, CUstream s)
#define A_GRIDA (f, w, h, s)
#define P_MULTI (void *list, unsigned n, unsigned flags)
#define A_MULTI (list, n, flags)
#define P_BATCH (CUstream s, unsigned n, void *ops, unsigned flags)
#define A_BATCH (s, n, ops, flags)
#define P_VAL32 (CUstream s, CUdeviceptr a, uint32_t v, unsigned flags)
#define P_VAL64 (CUstream s, CUdeviceptr a, uint64_t v, unsigned flags)
#define A_VAL32 (s, a, v, flags)
#define A_VAL64 A_VAL32
/* cuda.h 12.8's cuMemcpyBatchAsync (with failIdx) and 13.0's _v2 (without) */
#define P_MBATCH (CUdeviceptr *d, CUdeviceptr *src, size_t *n, size_t count, void *attrs, \
                  size_t *idx, size_t nattrs, size_t *fail, CUstream s)
#define A_MBATCH (d, src, n, count, attrs, idx, nattrs, fail, s)
#define P_MBATCH2 (CUdeviceptr *d, CUdeviceptr *src, size_t *n, size_t count, void *attrs, \
                   size_t *idx, size_t nattrs, CUstream s)
#define A_MBATCH2 (d, src, n, count, attrs, idx, nattrs, s)
#define P_M3BATCH (size_t n, void *ops, size_t *fail, unsigned long long flags, CUstream s)
#define A_M3BATCH (n, ops, fail, flags, s)
#define P_M3BATCH2 (size_t n, void *ops, unsigned long long flags, CUstream s)
#define A_M3BATCH2 (n, ops, flags, s)
#define P_SEMA (const void *sems, const void *params, unsigned n, CUstream s)
#define A_SEMA (sems, params, n, s)
#define P_PREFETCH (CUdeviceptr p, size_t n, int dev, CUstream s)
#define A_PREFETCH (p, n, dev, s)
#define P_PREFETCH2 (CUdeviceptr p, size_t n, struct mem_location loc, unsigned flags, CUstream s)
#define A_PREFETCH2 (p, n, loc, flags, s)
#define P_HA (CUarray a, size_t off, const void *src, size_t n)
#define A_HA (a, off, src, n)
#define P_HAA (CUarray a, size_t off, const void *src, size_t n, CUstream s)
#define A_HAA (a, off, src, n, s)
#define P_AH (void *dst, CUarray a, size_t off, size_t n)
#define A_AH (dst, a, off, n)
#define P_AHA (void *dst, CUarray a, size_t off, size_t n, CUstream s)
#define A_AHA (dst, a, off, n, s)
#define P_AD (CUdeviceptr dst, CUarray a, size_t off, size_t n)
#define A_AD (dst, a, off, n)
#define P_DA (CUarray a, size_t off, CUdeviceptr src, size_t n)
#define A_DA (a, off, src, n)
#define P_AA (CUarray dst, size_t doff, CUarray src, size_t soff, size_t n)
#define A_AA (dst, doff, src, soff, n)
#define P_SET2D8 (CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h)
#define P_SET2D16 (CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h)
#define P_SET2D32 (CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h)
#define A_SET2D8 (d, pitch, v, w, h)
#define A_SET2D16 A_SET2D8
#define A_SET2D32 A_SET2D8
#define P_SET2D8A (CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s)
#define P_SET2D16A (CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s)
#define P_SET2D32A (CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h, CUstream s)
#define A_SET2D8A (d, pitch, v, w, h, s)
#define A_SET2D16A A_SET2D8A
#define A_SET2D32A A_SET2D8A

/* (the name cuGetProcAddress is asked for, the exported variant, the CUDA version that variant
 * came with (cudaTypedefs.h's PFN_<name>_v<version>, _ptds/_ptsz included), its shape) */
/* Kernel launches: what the compute limit counts (gs_launch_gate), a CUDA graph's launch among
 * them (vLLM's decode and torch.compile launch little else); one token each, whatever the work:
 * the controller corrects the rate by the time the pod's launches take on the GPU. */
#define LAUNCHES(X)                                                                                \
  X(cuLaunchKernel, cuLaunchKernel, 4000, LAUNCH)                                                  \
  X(cuLaunchKernel, cuLaunchKernel_ptsz, 7000, LAUNCH)                                             \
  X(cuLaunchKernelEx, cuLaunchKernelEx, 11060, LAUNCHEX)                                           \
  X(cuLaunchKernelEx, cuLaunchKernelEx_ptsz, 11060, LAUNCHEX)                                      \
  X(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel, 9000, COOP)                              \
  X(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz, 9000, COOP)                         \
  X(cuLaunchCooperativeKernelMultiDevice, cuLaunchCooperativeKernelMultiDevice, 9000, MULTI)       \
  X(cuGraphLaunch, cuGraphLaunch, 10000, GRAPH)                                                    \
  X(cuGraphLaunch, cuGraphLaunch_ptsz, 10000, GRAPH) X(cuLaunch, cuLaunch, 2000, LAUNCH0)          \
  X(cuLaunchGrid, cuLaunchGrid, 2000, GRID) X(cuLaunchGridAsync, cuLaunchGridAsync, 2000, GRIDA)

#define WORK(X)                                                                                    \
  LAUNCHES(X) OTHER_WORK(X) SYNCS(X)

/* Synchronisations: where a stream-ordered pool gives back what it holds over its release
 * threshold, so the pod's count asks the pools again after one (when they may hold any). */
#define SYNCS(X)                                                                                   \
  X(cuCtxSynchronize, cuCtxSynchronize, 2000, NONE)                                                \
  X(cuCtxSynchronize, cuCtxSynchronize_v2, 13000, CTX)                                             \
  X(cuStreamSynchronize, cuStreamSynchronize, 2000, STREAM)                                        \
  X(cuStreamSynchronize, cuStreamSynchronize_ptsz, 7000, STREAM)                                   \
  X(cuEventSynchronize, cuEventSynchronize, 2000, EVENT)

#define OTHER_WORK(X)                                                                              \
  X(cuLaunchHostFunc, cuLaunchHostFunc, 10000, HOSTFN)                                             \
  X(cuLaunchHostFunc, cuLaunchHostFunc_ptsz, 10000, HOSTFN) X(cuMemcpy, cuMemcpy, 4000, DD)        \
  X(cuMemcpy, cuMemcpy_ptds, 7000, DD) X(cuMemcpyAsync, cuMemcpyAsync, 4000, DDA)                  \
  X(cuMemcpyAsync, cuMemcpyAsync_ptsz, 7000, DDA) X(cuMemcpyHtoD, cuMemcpyHtoD, 2000, HD1)         \
  X(cuMemcpyHtoD, cuMemcpyHtoD_v2, 3020, HD) X(cuMemcpyHtoD, cuMemcpyHtoD_v2_ptds, 7000, HD)       \
  X(cuMemcpyDtoH, cuMemcpyDtoH, 2000, DH1) X(cuMemcpyDtoH, cuMemcpyDtoH_v2, 3020, DH)              \
  X(cuMemcpyDtoH, cuMemcpyDtoH_v2_ptds, 7000, DH) X(cuMemcpyDtoD, cuMemcpyDtoD, 2000, DD1)         \
  X(cuMemcpyDtoD, cuMemcpyDtoD_v2, 3020, DD) X(cuMemcpyDtoD, cuMemcpyDtoD_v2_ptds, 7000, DD)       \
  X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync, 2000, HDA1)                                              \
  X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, 3020, HDA)                                            \
  X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2_ptsz, 7000, HDA)                                       \
  X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync, 2000, DHA1)                                              \
  X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, 3020, DHA)                                            \
  X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2_ptsz, 7000, DHA)                                       \
  X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync, 3000, DDA1)                                              \
  X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, 3020, DDA)                                            \
  X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2_ptsz, 7000, DDA)                                       \
  X(cuMemcpy2D, cuMemcpy2D, 2000, COPY) X(cuMemcpy2D, cuMemcpy2D_v2, 3020, COPY)                   \
  X(cuMemcpy2D, cuMemcpy2D_v2_ptds, 7000, COPY) X(cuMemcpy2DAsync, cuMemcpy2DAsync, 2000, COPYA)   \
  X(cuMemcpy2DAsync, cuMemcpy2DAsync_v2, 3020, COPYA)                                              \
  X(cuMemcpy2DAsync, cuMemcpy2DAsync_v2_ptsz, 7000, COPYA) X(cuMemcpy3D, cuMemcpy3D, 2000, COPY)   \
  X(cuMemcpy3D, cuMemcpy3D_v2, 3020, COPY) X(cuMemcpy3D, cuMemcpy3D_v2_ptds, 7000, COPY)           \
  X(cuMemcpy3DAsync, cuMemcpy3DAsync, 2000, COPYA)                                                 \
  X(cuMemcpy3DAsync, cuMemcpy3DAsync_v2, 3020, COPYA)                                              \
  X(cuMemcpy3DAsync, cuMemcpy3DAsync_v2_ptsz, 7000, COPYA)                                         \
  X(cuMemcpyPeer, cuMemcpyPeer, 4000, PEER) X(cuMemcpyPeer, cuMemcpyPeer_ptds, 7000, PEER)         \
  X(cuMemcpyPeerAsync, cuMemcpyPeerAsync, 4000, PEERA)                                             \
  X(cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz, 7000, PEERA)                                        \
  X(cuMemsetD8, cuMemsetD8, 2000, SET8_1) X(cuMemsetD8, cuMemsetD8_v2, 3020, SET8)                 \
  X(cuMemsetD8, cuMemsetD8_v2_ptds, 7000, SET8) X(cuMemsetD16, cuMemsetD16, 2000, SET16_1)         \
  X(cuMemsetD16, cuMemsetD16_v2, 3020, SET16) X(cuMemsetD16, cuMemsetD16_v2_ptds, 7000, SET16)     \
  X(cuMemsetD32, cuMemsetD32, 2000, SET32_1) X(cuMemsetD32, cuMemsetD32_v2, 3020, SET32)           \
  X(cuMemsetD32, cuMemsetD32_v2_ptds, 7000, SET32)                                                 \
  X(cuMemsetD8Async, cuMemsetD8Async, 3020, SET8A)                                                 \
  X(cuMemsetD8Async, cuMemsetD8Async_ptsz, 7000, SET8A)                                            \
  X(cuMemsetD16Async, cuMemsetD16Async, 3020, SET16A)                                              \
  X(cuMemsetD16Async, cuMemsetD16Async_ptsz, 7000, SET16A)                                         \
  X(cuMemsetD32Async, cuMemsetD32Async, 3020, SET32A)                                              \
  X(cuMemsetD32Async, cuMemsetD32Async_ptsz, 7000, SET32A)                                         \
  X(cuStreamWaitEvent, cuStreamWaitEvent, 3020, WAITEV)                                            \
  X(cuStreamWaitEvent, cuStreamWaitEvent_ptsz, 7000, WAITEV)                                       \
  X(cuStreamQuery, cuStreamQuery, 2000, STREAM)                                                    \
  X(cuStreamQuery, cuStreamQuery_ptsz, 7000, STREAM)                                               \
  X(cuEventRecord, cuEventRecord, 2000, RECORD)                                                    \
  X(cuEventRecord, cuEventRecord_ptsz, 7000, RECORD) MORE_WORK(X)

/* The rest of cuda.h's calls that put work on a stream: gated (they wait while the pod is not
 * Running on its GPU, is being stopped or is checkpointed), not counted. */
#define MORE_WORK(X)                                                                               \
  X(cuEventRecordWithFlags, cuEventRecordWithFlags, 11010, RECORDF)                                \
  X(cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz, 11010, RECORDF)                           \
  X(cuGraphUpload, cuGraphUpload, 11010, GRAPH)                                                    \
  X(cuGraphUpload, cuGraphUpload_ptsz, 11010, GRAPH)                                               \
  X(cuStreamBatchMemOp, cuStreamBatchMemOp, 8000, BATCH)                                           \
  X(cuStreamBatchMemOp, cuStreamBatchMemOp_ptsz, 8000, BATCH)                                      \
  X(cuStreamBatchMemOp, cuStreamBatchMemOp_v2, 11070, BATCH)                                       \
  X(cuStreamBatchMemOp, cuStreamBatchMemOp_v2_ptsz, 11070, BATCH)                                  \
  X(cuStreamWriteValue32, cuStreamWriteValue32, 8000, VAL32)                                       \
  X(cuStreamWriteValue32, cuStreamWriteValue32_ptsz, 8000, VAL32)                                  \
  X(cuStreamWriteValue32, cuStreamWriteValue32_v2, 11070, VAL32)                                   \
  X(cuStreamWriteValue32, cuStreamWriteValue32_v2_ptsz, 11070, VAL32)                              \
  X(cuStreamWriteValue64, cuStreamWriteValue64, 9000, VAL64)                                       \
  X(cuStreamWriteValue64, cuStreamWriteValue64_ptsz, 9000, VAL64)                                  \
  X(cuStreamWriteValue64, cuStreamWriteValue64_v2, 11070, VAL64)                                   \
  X(cuStreamWriteValue64, cuStreamWriteValue64_v2_ptsz, 11070, VAL64)                              \
  X(cuStreamWaitValue32, cuStreamWaitValue32, 8000, VAL32)                                         \
  X(cuStreamWaitValue32, cuStreamWaitValue32_ptsz, 8000, VAL32)                                    \
  X(cuStreamWaitValue32, cuStreamWaitValue32_v2, 11070, VAL32)                                     \
  X(cuStreamWaitValue32, cuStreamWaitValue32_v2_ptsz, 11070, VAL32)                                \
  X(cuStreamWaitValue64, cuStreamWaitValue64, 9000, VAL64)                                         \
  X(cuStreamWaitValue64, cuStreamWaitValue64_ptsz, 9000, VAL64)                                    \
  X(cuStreamWaitValue64, cuStreamWaitValue64_v2, 11070, VAL64)                                     \
  X(cuStreamWaitValue64, cuStreamWaitValue64_v2_ptsz, 11070, VAL64)                                \
  X(cuMemcpyBatchAsync, cuMemcpyBatchAsync, 12080, MBATCH)                                         \
  X(cuMemcpyBatchAsync, cuMemcpyBatchAsync_ptsz, 12080, MBATCH)                                    \
  X(cuMemcpyBatchAsync, cuMemcpyBatchAsync_v2, 13000, MBATCH2)                                     \
  X(cuMemcpyBatchAsync, cuMemcpyBatchAsync_v2_ptsz, 13000, MBATCH2)                                \
  X(cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync, 12080, M3BATCH)                                    \
  X(cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync_ptsz, 12080, M3BATCH)                               \
  X(cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync_v2, 13000, M3BATCH2)                                \
  X(cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync_v2_ptsz, 13000, M3BATCH2)                           \
  X(cuMemcpy3DPeer, cuMemcpy3DPeer, 4000, COPY)                                                    \
  X(cuMemcpy3DPeer, cuMemcpy3DPeer_ptds, 7000, COPY)                                               \
  X(cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync, 4000, COPYA)                                         \
  X(cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync_ptsz, 7000, COPYA)                                    \
  X(cuMemcpyHtoA, cuMemcpyHtoA_v2, 3020, HA) X(cuMemcpyHtoA, cuMemcpyHtoA_v2_ptds, 7000, HA)       \
  X(cuMemcpyHtoAAsync, cuMemcpyHtoAAsync_v2, 3020, HAA)                                            \
  X(cuMemcpyHtoAAsync, cuMemcpyHtoAAsync_v2_ptsz, 7000, HAA)                                       \
  X(cuMemcpyAtoH, cuMemcpyAtoH_v2, 3020, AH) X(cuMemcpyAtoH, cuMemcpyAtoH_v2_ptds, 7000, AH)       \
  X(cuMemcpyAtoHAsync, cuMemcpyAtoHAsync_v2, 3020, AHA)                                            \
  X(cuMemcpyAtoHAsync, cuMemcpyAtoHAsync_v2_ptsz, 7000, AHA)                                       \
  X(cuMemcpyAtoD, cuMemcpyAtoD_v2, 3020, AD) X(cuMemcpyAtoD, cuMemcpyAtoD_v2_ptds, 7000, AD)       \
  X(cuMemcpyDtoA, cuMemcpyDtoA_v2, 3020, DA) X(cuMemcpyDtoA, cuMemcpyDtoA_v2_ptds, 7000, DA)       \
  X(cuMemcpyAtoA, cuMemcpyAtoA_v2, 3020, AA) X(cuMemcpyAtoA, cuMemcpyAtoA_v2_ptds, 7000, AA)       \
  X(cuMemsetD2D8, cuMemsetD2D8_v2, 3020, SET2D8)                                                   \
  X(cuMemsetD2D8, cuMemsetD2D8_v2_ptds, 7000, SET2D8)                                              \
  X(cuMemsetD2D16, cuMemsetD2D16_v2, 3020, SET2D16)                                                \
  X(cuMemsetD2D16, cuMemsetD2D16_v2_ptds, 7000, SET2D16)                                           \
  X(cuMemsetD2D32, cuMemsetD2D32_v2, 3020, SET2D32)                                                \
  X(cuMemsetD2D32, cuMemsetD2D32_v2_ptds, 7000, SET2D32)                                           \
  X(cuMemsetD2D8Async, cuMemsetD2D8Async, 3020, SET2D8A)                                           \
  X(cuMemsetD2D8Async, cuMemsetD2D8Async_ptsz, 7000, SET2D8A)                                      \
  X(cuMemsetD2D16Async, cuMemsetD2D16Async, 3020, SET2D16A)                                        \
  X(cuMemsetD2D16Async, cuMemsetD2D16Async_ptsz, 7000, SET2D16A)                                   \
  X(cuMemsetD2D32Async, cuMemsetD2D32Async, 3020, SET2D32A)                                        \
  X(cuMemsetD2D32Async, cuMemsetD2D32Async_ptsz, 7000, SET2D32A)                                   \
  X(cuMemPrefetchAsync, cuMemPrefetchAsync, 8000, PREFETCH)                                        \
  X(cuMemPrefetchAsync, cuMemPrefetchAsync_ptsz, 8000, PREFETCH)                                   \
  X(cuMemPrefetchAsync, cuMemPrefetchAsync_v2, 12020, PREFETCH2)                                   \
  X(cuMemPrefetchAsync, cuMemPrefetchAsync_v2_ptsz, 12020, PREFETCH2)                              \
  X(cuSignalExternalSemaphoresAsync, cuSignalExternalSemaphoresAsync, 10000, SEMA)                 \
  X(cuSignalExternalSemaphoresAsync, cuSignalExternalSemaphoresAsync_ptsz, 10000, SEMA)            \
  X(cuWaitExternalSemaphoresAsync, cuWaitExternalSemaphoresAsync, 10000, SEMA)                     \
  X(cuWaitExternalSemaphoresAsync, cuWaitExternalSemaphoresAsync_ptsz, 10000, SEMA)

/* written out below (cuGetProcAddress in driver.c) */
#define OWN(X)                                                                                     \
  X(cuInit, cuInit, 2000) X(cuGetProcAddress, cuGetProcAddress, 11030)                             \
  X(cuGetProcAddress, cuGetProcAddress_v2, 12000) X(cuMemGetInfo, cuMemGetInfo, 2000)              \
  X(cuMemGetInfo, cuMemGetInfo_v2, 3020) X(cuDeviceTotalMem, cuDeviceTotalMem, 2000)               \
  X(cuDeviceTotalMem, cuDeviceTotalMem_v2, 3020) X(cuMemAlloc, cuMemAlloc, 2000)                   \
  X(cuMemAlloc, cuMemAlloc_v2, 3020) X(cuMemAllocPitch, cuMemAllocPitch, 2000)                     \
  X(cuMemAllocPitch, cuMemAllocPitch_v2, 3020) X(cuMemAllocManaged, cuMemAllocManaged, 6000)       \
  X(cuMemAllocAsync, cuMemAllocAsync, 11020) X(cuMemAllocAsync, cuMemAllocAsync_ptsz, 11020)       \
  X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 11020)                                       \
  X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz, 11020)                                  \
  X(cuMemCreate, cuMemCreate, 10020) X(cuArrayCreate, cuArrayCreate, 2000)                         \
  X(cuArrayCreate, cuArrayCreate_v2, 3020) X(cuArray3DCreate, cuArray3DCreate, 2000)               \
  X(cuArray3DCreate, cuArray3DCreate_v2, 3020)                                                     \
  X(cuMipmappedArrayCreate, cuMipmappedArrayCreate, 5000) X(cuMemFree, cuMemFree, 2000)            \
  X(cuMemFree, cuMemFree_v2, 3020) X(cuMemFreeAsync, cuMemFreeAsync, 11020)                        \
  X(cuMemFreeAsync, cuMemFreeAsync_ptsz, 11020) X(cuMemRelease, cuMemRelease, 10020)               \
  X(cuArrayDestroy, cuArrayDestroy, 2000)                                                          \
  X(cuMipmappedArrayDestroy, cuMipmappedArrayDestroy, 5000) MEMORY_OWN(X)

/* pools and contexts (what the pod's count must see besides allocations) */
#define MEMORY_OWN(X)                                                                              \
  X(cuMemPoolTrimTo, cuMemPoolTrimTo, 11020)                                                       \
  X(cuMemPoolSetAttribute, cuMemPoolSetAttribute, 11020)                                           \
  X(cuMemPoolDestroy, cuMemPoolDestroy, 11020)                                                     \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000) X(cuCtxCreate, cuCtxCreate, 2000)    \
  X(cuCtxCreate, cuCtxCreate_v2, 3020) X(cuCtxCreate, cuCtxCreate_v3, 11040)                       \
  X(cuCtxCreate, cuCtxCreate_v4, 12050) X(cuCtxDestroy, cuCtxDestroy, 2000)                        \
  X(cuCtxDestroy, cuCtxDestroy_v2, 4000)                                                           \
  X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, 7000)                                    \
  X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, 11000)                                \
  X(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset, 7000)                                        \
  X(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset_v2, 11000)                                    \
  X(cuModuleLoad, cuModuleLoad, 2000) X(cuModuleLoadData, cuModuleLoadData, 2000)                  \
  X(cuModuleLoadDataEx, cuModuleLoadDataEx, 2010)                                                  \
  X(cuModuleLoadFatBinary, cuModuleLoadFatBinary, 2000) X(cuModuleUnload, cuModuleUnload, 2000)    \
  X(cuLibraryLoadData, cuLibraryLoadData, 12000)                                                   \
  X(cuLibraryLoadFromFile, cuLibraryLoadFromFile, 12000)                                           \
  X(cuLibraryUnload, cuLibraryUnload, 12000)

#define INDEX_WORK(base, name, version, shape) FN_##name,
#define INDEX_OWN(base, name, version) FN_##name,
enum { WORK(INDEX_WORK) OWN(INDEX_OWN) FN_COUNT };

/* The real variant: a load once resolved (the hot path), driver.c's look-up the first time. */
static inline void *real_of(int i) {
  void *p = atomic_load_explicit(&gs_cuda_fns[i].real, memory_order_acquire);
  return GS_LIKELY(p != NULL) ? p : gs_cuda_resolve(&gs_cuda_fns[i]);
}

/* The real `name` called with `args`; CUDA_ERROR_NOT_FOUND when the driver lacks that variant. */
#define REAL(name, args) \
  (real_of(FN_##name) ? ((__typeof__(&name))real_of(FN_##name))args : GS_CUDA_ERROR_NOT_FOUND)

#define DEFINE_WORK(base, name, version, shape)                        \
  GS_EXPORT CUresult name P_##shape {                           \
    int rc = gs_gate();                                         \
    if (rc) return rc;                                          \
    __typeof__(&name) real = (__typeof__(&name))real_of(FN_##name); \
    return real ? real A_##shape : GS_CUDA_ERROR_NOT_FOUND;     \
  }
OTHER_WORK(DEFINE_WORK)

/* Set once a free gave memory to a pool of this process: from then on a synchronisation asks the
 * pools what they still hold (a load on the synchronisation's path otherwise). */
static _Atomic int pools_may_hold;
static void refresh_pools(void);

#define DEFINE_SYNC(base, name, version, shape)                        \
  GS_EXPORT CUresult name P_##shape {                           \
    int rc = gs_gate();                                         \
    if (rc) return rc;                                          \
    __typeof__(&name) real = (__typeof__(&name))real_of(FN_##name); \
    rc = real ? real A_##shape : GS_CUDA_ERROR_NOT_FOUND;       \
    if (atomic_load_explicit(&pools_may_hold, memory_order_relaxed)) refresh_pools(); \
    return rc;                                                  \
  }
SYNCS(DEFINE_SYNC)

#define DEFINE_LAUNCH(base, name, version, shape)                      \
  GS_EXPORT CUresult name P_##shape {                           \
    int rc = gs_launch_gate();                                  \
    if (rc) return rc;                                          \
    __typeof__(&name) real = (__typeof__(&name))real_of(FN_##name); \
    return real ? real A_##shape : GS_CUDA_ERROR_NOT_FOUND;     \
  }
LAUNCHES(DEFINE_LAUNCH)

/* ------------------------------------------------------------------ cuInit, cuMemGetInfo */

GS_EXPORT CUresult cuInit(unsigned flags) {
  int rc = gs_before_cuinit();
  if (rc) return rc;
  rc = REAL(cuInit, (flags));
  gs_after_cuinit(rc);
  return rc;
}

/* The pod's view: its limit is the device's size, and what it has not used the most it can get. */
static void limited(uint64_t *free_bytes, uint64_t *total) {
  refresh_pools(); /* what this process's pools gave back at a synchronisation is not counted */
  if (gs_mem_driver_counts()) gs_driver_memory_now();
  uint64_t lim = gs_mem_limit(), used = gs_mem_used();
  if (!lim) return;
  uint64_t left = used < lim ? lim - used : 0;
  if (*free_bytes > left) *free_bytes = left;
  *total = lim;
}

GS_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  int rc = gs_gate();
  if (!rc) rc = REAL(cuMemGetInfo_v2, (free_bytes, total));
  if (rc) return rc;
  uint64_t f = *free_bytes, t = *total;
  limited(&f, &t);
  *free_bytes = (size_t)f;
  *total = (size_t)t;
  return rc;
}

GS_EXPORT CUresult cuMemGetInfo(unsigned *free_bytes, unsigned *total) {
  int rc = gs_gate();
  if (!rc) rc = REAL(cuMemGetInfo, (free_bytes, total));
  if (rc) return rc;
  uint64_t f = *free_bytes, t = *total;
  limited(&f, &t);
  *free_bytes = (unsigned)f;
  *total = (unsigned)t;
  return rc;
}

/* The device's size is the pod's limit, as cuMemGetInfo's total (frameworks size their caches
 * from either). No gate: cuInit already waited for the grant, and the call puts no work on the
 * GPU. */
GS_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  CUresult rc = REAL(cuDeviceTotalMem_v2, (bytes, dev));
  uint64_t lim = gs_mem_limit();
  if (rc == GS_CUDA_SUCCESS && bytes && lim && lim < (uint64_t)*bytes) *bytes = (size_t)lim;
  return rc;
}

GS_EXPORT CUresult cuDeviceTotalMem(unsigned *bytes, CUdevice dev) {
  CUresult rc = REAL(cuDeviceTotalMem, (bytes, dev));
  uint64_t lim = gs_mem_limit();
  if (rc == GS_CUDA_SUCCESS && bytes && lim && lim < (uint64_t)*bytes) *bytes = (unsigned)lim;
  return rc;
}

/* ------------------------------------------------------------------ allocations */

/* The state word, then the pod's count; returns from the wrapper when either says no. */
#define RESERVE(bytes)                       \
  do {                                       \
    int rc_ = gs_gate();                     \
    if (!rc_) rc_ = reserve(bytes);          \
    if (rc_) return rc_;                     \
  } while (0)

/* The count, with the driver's figure for this process as it is now (lazily loaded code and the
 * driver's growth count too), and once more after this process's pools were asked what they still
 * hold (a synchronisation may have trimmed them since they were counted). */
static int reserve(uint64_t bytes) {
  if (gs_mem_driver_counts()) gs_driver_memory_now();
  int rc = gs_mem_reserve(bytes);
  if (rc == GS_CUDA_ERROR_OUT_OF_MEMORY) {
    refresh_pools();
    rc = gs_mem_reserve(bytes);
  }
  return rc;
}

/* After the driver: remembered for the free, or given back to the pod. */
static CUresult counted(CUresult rc, uint64_t key, uint64_t bytes) {
  if (rc == GS_CUDA_SUCCESS) gs_mem_track(key, bytes);
  else gs_mem_unreserve(bytes);
  return rc;
}

static uint64_t times(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r; /* over any limit: refused */
}

GS_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) {
  RESERVE(bytes);
  CUresult rc = REAL(cuMemAlloc_v2, (dptr, bytes));
  return counted(rc, rc ? 0 : *dptr, bytes);
}

GS_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned bytes) {
  RESERVE(bytes);
  CUresult rc = REAL(cuMemAlloc, (dptr, bytes));
  return counted(rc, rc ? 0 : *dptr, bytes);
}

CUresult cuMemFree_v2(CUdeviceptr p);
CUresult cuMemFree(CUdeviceptr_v1 p);

/* A pitched allocation is counted as asked (width × height) before the driver and as given
 * (pitch × height) after it; when the padding takes the pod over its limit, it is freed again. */
static CUresult pitched(CUresult rc, uint64_t address, uint64_t asked, uint64_t given, int v1) {
  if (rc) return counted(rc, 0, asked);
  if (given > asked && gs_mem_reserve(given - asked)) {
    if (v1) (void)REAL(cuMemFree, ((CUdeviceptr_v1)address));
    else (void)REAL(cuMemFree_v2, (address));
    gs_mem_unreserve(asked);
    return GS_CUDA_ERROR_OUT_OF_MEMORY;
  }
  return counted(rc, address, given > asked ? given : asked);
}

GS_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
                                      size_t height, unsigned element) {
  uint64_t asked = times(width, height);
  RESERVE(asked);
  CUresult rc = REAL(cuMemAllocPitch_v2, (dptr, pitch, width, height, element));
  return pitched(rc, rc ? 0 : *dptr, asked, rc ? 0 : times(*pitch, height), 0);
}

GS_EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned *pitch, unsigned width,
                                   unsigned height, unsigned element) {
  uint64_t asked = times(width, height);
  RESERVE(asked);
  CUresult rc = REAL(cuMemAllocPitch, (dptr, pitch, width, height, element));
  return pitched(rc, rc ? 0 : *dptr, asked, rc ? 0 : times(*pitch, height), 1);
}

GS_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytes, unsigned flags) {
  RESERVE(bytes);
  CUresult rc = REAL(cuMemAllocManaged, (dptr, bytes, flags));
  return counted(rc, rc ? 0 : *dptr, bytes);
}

/* ------------------------------------------------------------------ stream-ordered pools */

#define CU_MEMPOOL_ATTR_RELEASE_THRESHOLD 4
#define CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT 5
#define CU_MEMPOOL_ATTR_USED_MEM_CURRENT 7

typedef CUresult (*pool_attr_fn)(CUmemoryPool, int, void *);
typedef CUresult (*ctx_device_fn)(int *);
typedef CUresult (*device_pool_fn)(CUmemoryPool *, int);

/* A driver function this library calls but does not wrap, looked up once. */
static void *real_plain(_Atomic(void *) *slot, const char *name) {
  void *p = atomic_load_explicit(slot, memory_order_acquire);
  if (!p && (p = gs_real_cuda(name)) != NULL) atomic_store_explicit(slot, p, memory_order_release);
  return p;
}
static _Atomic(void *) pool_get_attr, ctx_get_device, device_get_mem_pool;

/* A pool's figure as the driver gives it; 0 when it cannot (an old driver, a pool destroyed). */
static int pool_figure(uint64_t pool, int attr, uint64_t *out) {
  pool_attr_fn get = (pool_attr_fn)real_plain(&pool_get_attr, "cuMemPoolGetAttribute");
  *out = 0;
  return pool && get && get((CUmemoryPool)(uintptr_t)pool, attr, out) == GS_CUDA_SUCCESS;
}

/* The pool cuMemAllocAsync takes from: the current device's current pool; 0 when unknown. */
static uint64_t current_pool(void) {
  ctx_device_fn device = (ctx_device_fn)real_plain(&ctx_get_device, "cuCtxGetDevice");
  device_pool_fn pool_of = (device_pool_fn)real_plain(&device_get_mem_pool, "cuDeviceGetMemPool");
  int dev;
  CUmemoryPool pool = NULL;
  if (!device || !pool_of || device(&dev) != GS_CUDA_SUCCESS || pool_of(&pool, dev)) return 0;
  return (uint64_t)(uintptr_t)pool;
}

/* What the pod is counted for a pool: what the driver says it holds now. */
static int recount_pool(uint64_t pool) {
  uint64_t reserved;
  if (!pool_figure(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved)) return 0;
  gs_mem_pool_set(pool, reserved);
  return 1;
}

static void refresh_pools(void) {
  uint64_t p[64];
  int n = gs_cfg.active ? gs_mem_pools(p, 64) : 0;
  for (int i = 0; i < n; i++) recount_pool(p[i]);
}

/* What an allocation from a pool may add to the pod: nothing when the pool holds that much
 * unused (it is reused without new memory), else the whole allocation (the driver may round it
 * up; the pool's figure after the call is what counts). */
static uint64_t pool_ahead(uint64_t pool, uint64_t bytes) {
  uint64_t reserved, used;
  if (!pool_figure(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) ||
      !pool_figure(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used)) {
    return bytes;
  }
  return reserved > used && reserved - used >= bytes ? 0 : bytes;
}

/* What an allocation from a pool takes from the pod's count before the driver (*ahead): the whole
 * allocation while the pod has room for it (the common case: no question to the driver), else
 * nothing when the pool holds that much unused; 0, or the CUresult to fail with. */
static int pool_reserve(uint64_t pool, uint64_t bytes, uint64_t *ahead) {
  *ahead = bytes;
  if (gs_mem_reserve(bytes) == 0) return 0;
  if (pool && pool_ahead(pool, bytes) == 0) {
    *ahead = 0;
    return 0;
  }
  return reserve(bytes); /* once more, after the pools were asked what they still hold */
}

/* After the driver: the pool counted as it is now (before the advance is given back, so the pod
 * is counted over, never under, in between), the address remembered with its pool. Without the
 * pool's figures the allocation is counted by itself, like cuMemAlloc's. */
static CUresult pool_counted(CUresult rc, uint64_t key, uint64_t bytes, uint64_t pool,
                             uint64_t ahead) {
  if (rc == GS_CUDA_SUCCESS && pool && recount_pool(pool)) {
    gs_mem_track_pool(key, bytes, pool);
    gs_mem_unreserve(ahead);
    return rc;
  }
  if (rc == GS_CUDA_SUCCESS && ahead < bytes && gs_mem_reserve(bytes - ahead) != 0) {
    gs_mem_add_taken(bytes - ahead); /* the driver gave it: counted, over the limit or not */
  }
  return counted(rc, key, rc ? ahead : bytes);
}

#define ALLOC_ASYNC(name)                                                  \
  GS_EXPORT CUresult name(CUdeviceptr *dptr, size_t bytes, CUstream s) {   \
    int rc_ = gs_gate();                                                   \
    if (rc_) return rc_;                                                   \
    uint64_t pool = gs_cfg.active ? current_pool() : 0, ahead;             \
    if ((rc_ = pool_reserve(pool, bytes, &ahead)) != 0) return rc_;        \
    CUresult rc = REAL(name, (dptr, bytes, s));                            \
    return pool_counted(rc, rc ? 0 : *dptr, bytes, pool, ahead);           \
  }
ALLOC_ASYNC(cuMemAllocAsync)
ALLOC_ASYNC(cuMemAllocAsync_ptsz)

#define ALLOC_POOL(name)                                                                 \
  GS_EXPORT CUresult name(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream s) { \
    int rc_ = gs_gate();                                                                 \
    if (rc_) return rc_;                                                                 \
    uint64_t p = gs_cfg.active ? (uint64_t)(uintptr_t)pool : 0, ahead;                   \
    if ((rc_ = pool_reserve(p, bytes, &ahead)) != 0) return rc_;                         \
    CUresult rc = REAL(name, (dptr, bytes, pool, s));                                    \
    return pool_counted(rc, rc ? 0 : *dptr, bytes, p, ahead);                            \
  }
ALLOC_POOL(cuMemAllocFromPoolAsync)
ALLOC_POOL(cuMemAllocFromPoolAsync_ptsz)

/* A trim, a new threshold (it applies at the next synchronisation, but the driver may trim at
 * once) and a destroy change what the pool holds: asked again. A destroyed pool's allocations
 * still out stay counted until they are freed (the driver keeps their memory). */
GS_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  CUresult rc = REAL(cuMemPoolTrimTo, (pool, keep));
  if (rc == GS_CUDA_SUCCESS) recount_pool((uint64_t)(uintptr_t)pool);
  return rc;
}

GS_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, int attr, void *value) {
  CUresult rc = REAL(cuMemPoolSetAttribute, (pool, attr, value));
  if (rc == GS_CUDA_SUCCESS && attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) {
    recount_pool((uint64_t)(uintptr_t)pool);
  }
  return rc;
}

GS_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  uint64_t p = (uint64_t)(uintptr_t)pool, out;
  int known = pool_figure(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &out);
  CUresult rc = REAL(cuMemPoolDestroy, (pool));
  if (rc == GS_CUDA_SUCCESS && known) gs_mem_pool_set(p, out);
  return rc;
}

/* ------------------------------------------------------------------ contexts */

/* What a context takes on the GPU (a few hundred MiB on a real one: the driver's own state, the
 * local memory of its threads, the printf and heap buffers) is the device's used memory after its
 * creation less before, both read from NVML on the granted GPU. NVML for both readings: NVML's
 * and cuMemGetInfo's totals differ on a real GPU (NVML includes a reserved part), so one counter
 * read twice is what shows the difference. Another process's allocation or free on the same GPU
 * between the two readings is counted as this context's: the figure is kept within 0 and
 * CONTEXT_MAX, so a concurrent free never makes it negative and a concurrent large allocation
 * over-counts (the pod's safe side) by at most that. A context retained again (the primary
 * context of a device, once per library in a process) is counted once. */
#define CONTEXT_MAX (4ULL << 30)

typedef struct { unsigned long long total, free, used; } nvml_memory;
typedef int (*nvml_init_fn)(void);
typedef int (*nvml_by_uuid_fn)(const char *, void **);
typedef int (*nvml_memory_fn)(void *, nvml_memory *);

static pthread_once_t nvml_once = PTHREAD_ONCE_INIT;
static void *nvml_device;
static nvml_memory_fn nvml_memory_info;

static void nvml_open(void) {
  nvml_init_fn init = (nvml_init_fn)gs_real_nvml("nvmlInit_v2");
  nvml_by_uuid_fn by_uuid = (nvml_by_uuid_fn)gs_real_nvml("nvmlDeviceGetHandleByUUID");
  nvml_memory_fn memory = (nvml_memory_fn)gs_real_nvml("nvmlDeviceGetMemoryInfo");
  if (!init || !by_uuid || !memory || init() != 0 ||
      by_uuid(gs_grant_get()->uuid, &nvml_device) != 0) {
    gs_debug("NVML cannot give GPU %s's memory: contexts are not counted",
             gs_grant_get()->uuid);
    nvml_device = NULL;
    return;
  }
  nvml_memory_info = memory;
}

/* The granted GPU's used memory as NVML gives it; 0 when it cannot, or when the driver's figure
 * for this process counts what a context or module takes (driver_memory.c). */
static int device_used(uint64_t *used) {
  if (!gs_cfg.active || !gs_grant_known() || gs_mem_driver_counts()) return 0;
  pthread_once(&nvml_once, nvml_open);
  nvml_memory m;
  if (!nvml_device || nvml_memory_info(nvml_device, &m) != 0) return 0;
  *used = m.used;
  return 1;
}

static void context_taken(const char *what, void *handle, int measured, uint64_t before) {
  uint64_t key = (uint64_t)(uintptr_t)handle, after;
  if (gs_driver_memory_now()) return; /* the driver's figure for this process counts it */
  if (!measured || !handle || gs_mem_tracked(key) || !device_used(&after)) return;
  uint64_t bytes = after > before ? after - before : 0;
  if (bytes > CONTEXT_MAX) bytes = CONTEXT_MAX;
  gs_debug("a %s took %llu bytes of GPU %s", what, (unsigned long long)bytes,
           gs_grant_get()->uuid);
  gs_mem_add_taken(bytes);
  /* a context is counted until it is destroyed (a primary one: its last release, a reset) or the
   * process ends; a module until its unload; or until the driver's figure counts it */
  gs_mem_track_measured(key, bytes);
}

#define MEASURED(what, name, params, args, ctx)            \
  GS_EXPORT CUresult name params {                         \
    int rc = gs_gate();                                    \
    if (rc) return rc;                                     \
    uint64_t before = 0;                                   \
    int measured = device_used(&before);                   \
    rc = REAL(name, args);                                 \
    if (rc == GS_CUDA_SUCCESS) context_taken(what, ctx, measured, before); \
    return rc;                                             \
  }
#define CONTEXT(name, params, args) MEASURED("context", name, params, args, *pctx)

/* The primary contexts this process retained, per device: the driver frees one's memory at its
 * last release or at a reset, and its count is given back then (primary_released, below). */
#define PRIMARY_DEVICES 64
static struct { CUcontext ctx; long retains; } primary[PRIMARY_DEVICES];
static pthread_mutex_t primary_mu = PTHREAD_MUTEX_INITIALIZER;

GS_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, int dev) {
  int rc = gs_gate();
  if (rc) return rc;
  uint64_t before = 0;
  int measured = device_used(&before);
  rc = REAL(cuDevicePrimaryCtxRetain, (pctx, dev));
  if (rc != GS_CUDA_SUCCESS) return rc;
  context_taken("context", *pctx, measured, before);
  if (dev >= 0 && dev < PRIMARY_DEVICES) {
    pthread_mutex_lock(&primary_mu);
    primary[dev].ctx = *pctx;
    primary[dev].retains++;
    pthread_mutex_unlock(&primary_mu);
  }
  return rc;
}
CONTEXT(cuCtxCreate, (CUcontext *pctx, unsigned flags, int dev), (pctx, flags, dev))
CONTEXT(cuCtxCreate_v2, (CUcontext *pctx, unsigned flags, int dev), (pctx, flags, dev))
CONTEXT(cuCtxCreate_v3, (CUcontext *pctx, void *affinity, int n, unsigned flags, int dev),
        (pctx, affinity, n, flags, dev))
CONTEXT(cuCtxCreate_v4, (CUcontext *pctx, void *params, unsigned flags, int dev),
        (pctx, params, flags, dev))

/* Modules and libraries: what loading one takes (its code, constants and globals; little under
 * lazy loading, CUDA_MODULE_LOADING=LAZY, where a function's code is loaded at its first use and
 * not seen here) is measured the same way, and given back at its unload. */
#define MODULE(name, params, args) MEASURED("module", name, params, args, *mod)
#define LIB_OPTS , void *jit_options, void **jit_values, unsigned jit_n, void *lib_options, \
                 void **lib_values, unsigned lib_n
#define LIB_ARGS , jit_options, jit_values, jit_n, lib_options, lib_values, lib_n
MODULE(cuModuleLoad, (void **mod, const char *file), (mod, file))
MODULE(cuModuleLoadData, (void **mod, const void *image), (mod, image))
MODULE(cuModuleLoadDataEx, (void **mod, const void *image, unsigned n, void *options,
                            void **values), (mod, image, n, options, values))
MODULE(cuModuleLoadFatBinary, (void **mod, const void *fatbin), (mod, fatbin))
MODULE(cuLibraryLoadData, (void **mod, const void *code LIB_OPTS), (mod, code LIB_ARGS))
MODULE(cuLibraryLoadFromFile, (void **mod, const char *file LIB_OPTS), (mod, file LIB_ARGS))


/* ------------------------------------------------------------------ cuMemCreate */

/* cuda.h's CUmemAllocationProp up to its location */
struct alloc_prop { int type, requested_handle_types, location_type, location_id; };
#define CU_MEM_LOCATION_TYPE_HOST 2
#define CU_MEM_LOCATION_TYPE_HOST_NUMA 3
#define CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT 4

/* Counted by its handle until cuMemRelease (mapping it takes nothing more); memory located on
 * the host (pinned host memory the GPU maps) takes nothing of the GPU's and is not counted. */
GS_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t bytes,
                               const void *prop, unsigned long long flags) {
  const struct alloc_prop *p = prop;
  if (p && (p->location_type == CU_MEM_LOCATION_TYPE_HOST ||
            p->location_type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
            p->location_type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)) {
    int rc = gs_gate();
    return rc ? rc : REAL(cuMemCreate, (handle, bytes, prop, flags));
  }
  RESERVE(bytes);
  CUresult rc = REAL(cuMemCreate, (handle, bytes, prop, flags));
  return counted(rc, rc ? 0 : *handle, bytes);
}

/* An array's size as the descriptor gives it, channels of the format's size; formats not listed
 * (normalized, compressed, YUV) are counted as 4 bytes a channel, more than they take. */
static uint64_t array_bytes(uint64_t w, uint64_t h, uint64_t d, int format, unsigned channels) {
  uint64_t element;
  switch (format) {
    case 0x01: case 0x08: case 0xc0: case 0xc1: case 0xc2: case 0xc6: case 0xc7: case 0xc8:
      element = 1; break;
    case 0x02: case 0x09: case 0x10: case 0xc3: case 0xc4: case 0xc5: case 0xc9: case 0xca:
    case 0xcb:
      element = 2; break;
    default:
      element = 4; break;
  }
  return times(times(times(w, h ? h : 1), d ? d : 1), element * (channels ? channels : 1));
}

#define ARRAY(name, desc_type, depth)                                                  \
  GS_EXPORT CUresult name(CUarray *handle, const desc_type *desc) {                   \
    uint64_t bytes = desc ? array_bytes(desc->Width, desc->Height, depth, desc->Format, \
                                        desc->NumChannels)                              \
                          : 0;                                                          \
    RESERVE(bytes);                                                                     \
    CUresult rc = REAL(name, (handle, desc));                                           \
    return counted(rc, rc ? 0 : (uint64_t)(uintptr_t)*handle, bytes);                   \
  }
ARRAY(cuArrayCreate_v2, struct array_desc, 1)
ARRAY(cuArrayCreate, struct array_desc_v1, 1)
ARRAY(cuArray3DCreate_v2, struct array3d_desc, desc->Depth)
ARRAY(cuArray3DCreate, struct array3d_desc_v1, desc->Depth)

/* The levels are counted as twice the first (they add up to less: 4/3 in 2D, 8/7 in 3D). */
GS_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *handle,
                                          const struct array3d_desc *desc, unsigned levels) {
  uint64_t bytes = desc ? array_bytes(desc->Width, desc->Height, desc->Depth, desc->Format,
                                      desc->NumChannels)
                        : 0;
  bytes = levels > 1 ? times(bytes, 2) : bytes;
  RESERVE(bytes);
  CUresult rc = REAL(cuMipmappedArrayCreate, (handle, desc, levels));
  return counted(rc, rc ? 0 : (uint64_t)(uintptr_t)*handle, bytes);
}

/* ------------------------------------------------------------------ frees */

/* The address is forgotten before the driver frees it: once freed, the driver may give the same
 * address to an allocation on another thread, whose remembering must not be undone here. A free
 * the driver refuses leaves the allocation as it was: remembered again. */
struct forgotten { int known; uint64_t key, bytes, pool; };

static struct forgotten forget(uint64_t key) {
  struct forgotten f = {0, key, 0, 0};
  f.known = gs_mem_untrack_pool(key, &f.bytes, &f.pool);
  return f;
}

static CUresult freed(CUresult rc, struct forgotten f) {
  if (!f.known) return rc;
  if (rc != GS_CUDA_SUCCESS) {
    gs_mem_track_pool(f.key, f.bytes, f.pool);
  } else if (!f.pool) {
    gs_mem_unreserve(f.bytes);
  } else if (atomic_store(&pools_may_hold, 1), !recount_pool(f.pool)) {
    gs_mem_pool_sub(f.pool, f.bytes); /* its pool is gone: its memory went with this free */
  }
  return rc;
}

#define FREE(name, type, arg)                                      \
  GS_EXPORT CUresult name(type p) {                                \
    struct forgotten f = forget((uint64_t)(uintptr_t)(arg));       \
    return freed(REAL(name, (p)), f);                              \
  }
#define FREE_ASYNC(name)                                           \
  GS_EXPORT CUresult name(CUdeviceptr p, CUstream s) {             \
    struct forgotten f = forget(p);                                \
    return freed(REAL(name, (p, s)), f);                           \
  }
FREE(cuMemFree_v2, CUdeviceptr, p)
FREE(cuMemFree, CUdeviceptr_v1, p)
FREE_ASYNC(cuMemFreeAsync)
FREE_ASYNC(cuMemFreeAsync_ptsz)
FREE(cuMemRelease, CUmemGenericAllocationHandle, p)
FREE(cuArrayDestroy, CUarray, p)
FREE(cuMipmappedArrayDestroy, CUmipmappedArray, p)
FREE(cuModuleUnload, void *, p)
FREE(cuLibraryUnload, void *, p)
FREE(cuCtxDestroy, CUcontext, p)
FREE(cuCtxDestroy_v2, CUcontext, p)

/* A primary context's release: the last one (or a reset) frees the context, and its count. */
static struct forgotten primary_forget(int dev, int reset) {
  struct forgotten f = {0, 0, 0, 0};
  CUcontext ctx = NULL;
  pthread_mutex_lock(&primary_mu);
  if (dev >= 0 && dev < PRIMARY_DEVICES && (reset || primary[dev].retains <= 1)) {
    ctx = primary[dev].ctx;
  }
  pthread_mutex_unlock(&primary_mu);
  return ctx ? forget((uint64_t)(uintptr_t)ctx) : f;
}

static CUresult primary_released(int dev, int reset, CUresult rc, struct forgotten f) {
  if (rc == GS_CUDA_SUCCESS && dev >= 0 && dev < PRIMARY_DEVICES) {
    pthread_mutex_lock(&primary_mu);
    if (reset || --primary[dev].retains <= 0) {
      primary[dev].retains = 0;
      primary[dev].ctx = NULL;
    }
    pthread_mutex_unlock(&primary_mu);
  }
  return freed(rc, f);
}

#define PRIMARY_RELEASE(name, reset)                                 \
  GS_EXPORT CUresult name(int dev) {                                 \
    struct forgotten f = primary_forget(dev, reset);                 \
    return primary_released(dev, reset, REAL(name, (dev)), f);       \
  }
PRIMARY_RELEASE(cuDevicePrimaryCtxRelease, 0)
PRIMARY_RELEASE(cuDevicePrimaryCtxRelease_v2, 0)
PRIMARY_RELEASE(cuDevicePrimaryCtxReset, 1)
PRIMARY_RELEASE(cuDevicePrimaryCtxReset_v2, 1)

/* ------------------------------------------------------------------ the table */

CUresult cuGetProcAddress(const char *, void **, int, uint64_t);
CUresult cuGetProcAddress_v2(const char *, void **, int, uint64_t, int *);

#define ROW_WORK(base, name, version, shape) ROW_OWN(base, name, version)
#define ROW_OWN(base, name, version) {#base, #name, version, (void *)name, NULL, NULL},
struct gs_cuda_fn gs_cuda_fns[] = {WORK(ROW_WORK) OWN(ROW_OWN)};
const size_t gs_cuda_fns_count = FN_COUNT;
_Static_assert(sizeof gs_cuda_fns / sizeof gs_cuda_fns[0] == FN_COUNT, "one row per wrapper");
