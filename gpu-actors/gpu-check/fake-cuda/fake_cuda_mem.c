/*
 * The fake libcuda.so.1's memory and work functions (built with fake_cuda.c, which says how):
 * allocations get made-up distinct addresses (or handles) and count against the device's memory
 * (FAKE_CUDA_MEMORY), so cuMemGetInfo's free goes down and a too large one fails with
 * CUDA_ERROR_OUT_OF_MEMORY; launches, copies, sets, waits and queries do nothing and succeed.
 * Each call is traced (FAKE_CUDA_TRACE=1) with its exported name and, where it has one, its size.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

__attribute__((visibility("hidden"))) void fake_trace(const char *fmt, ...);
__attribute__((visibility("hidden"))) CUresult fake_ready(void);
__attribute__((visibility("hidden"))) unsigned long long fake_memory(void);
__attribute__((visibility("hidden"))) void *fake_mem_fn(const char *name);

/* ------------------------------------------------------------------ allocations */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long next_address = 0x7f0000000000ULL, next_small = 0x10000000ULL;
static unsigned long long allocated;
static struct block { unsigned long long key, bytes; } *blocks;
static size_t block_count, block_cap;

/* small: a 32-bit address, for the _v1 functions */
static CUresult take(const char *call, unsigned long long bytes, int small,
                     unsigned long long *key) {
  fake_trace("%s(%llu)", call, bytes);
  if (fake_ready()) return fake_ready();
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&mu);
  if (bytes > fake_memory() - allocated) {
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  } else if (block_count == block_cap) {
    size_t cap = block_cap ? block_cap * 2 : 64;
    struct block *b = realloc(blocks, cap * sizeof *b);
    if (b) blocks = b, block_cap = cap;
    else rc = CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (rc == CUDA_SUCCESS) {
    unsigned long long *next = small ? &next_small : &next_address;
    *key = *next;
    *next += (bytes + 0x1fffff) & ~0x1fffffULL; /* 2 MiB apart, as a driver's are */
    blocks[block_count++] = (struct block){*key, bytes};
    allocated += bytes;
  }
  pthread_mutex_unlock(&mu);
  return rc;
}

static CUresult give(const char *call, unsigned long long key) {
  fake_trace("%s(0x%llx)", call, key);
  if (fake_ready()) return fake_ready();
  CUresult rc = CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  for (size_t i = 0; i < block_count; i++) {
    if (blocks[i].key != key) continue;
    allocated -= blocks[i].bytes;
    blocks[i] = blocks[--block_count];
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
ALLOC(cuMemAllocAsync, CUdeviceptr, size_t, 0, CUstream s)
ALLOC(cuMemAllocAsync_ptsz, CUdeviceptr, size_t, 0, CUstream s)
ALLOC(cuMemAllocFromPoolAsync, CUdeviceptr, size_t, 0, CUmemoryPool pool, CUstream s)
ALLOC(cuMemAllocFromPoolAsync_ptsz, CUdeviceptr, size_t, 0, CUmemoryPool pool, CUstream s)
ALLOC(cuMemCreate, CUmemGenericAllocationHandle, size_t, 0, const void *prop,
      unsigned long long flags)

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
  *free_bytes = *total - allocated;
  pthread_mutex_unlock(&mu);
  return CUDA_SUCCESS;
}
CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  unsigned long long f, t;
  CUresult rc = info("cuMemGetInfo_v2", &f, &t);
  if (!rc) *free_bytes = (size_t)f, *total = (size_t)t;
  return rc;
}
CUresult cuMemGetInfo(unsigned *free_bytes, unsigned *total) {
  unsigned long long f, t;
  CUresult rc = info("cuMemGetInfo", &f, &t);
  if (!rc) *free_bytes = f > 0xffffffffULL ? 0xffffffffU : (unsigned)f,
           *total = t > 0xffffffffULL ? 0xffffffffU : (unsigned)t;
  return rc;
}

/* ------------------------------------------------------------------ work: nothing to do */

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
  X(cuLaunchKernel, LAUNCH) X(cuLaunchKernel_ptsz, LAUNCH) X(cuLaunchKernelEx, LAUNCHEX)         \
  X(cuLaunchKernelEx_ptsz, LAUNCHEX) X(cuLaunchCooperativeKernel, COOP)                          \
  X(cuLaunchCooperativeKernel_ptsz, COOP) X(cuLaunchHostFunc, HOSTFN)                            \
  X(cuLaunchHostFunc_ptsz, HOSTFN) X(cuMemcpy2D, COPY) X(cuMemcpy2D_v2, COPY)                    \
  X(cuMemcpy2D_v2_ptds, COPY) X(cuMemcpy2DAsync, COPYA) X(cuMemcpy2DAsync_v2, COPYA)             \
  X(cuMemcpy2DAsync_v2_ptsz, COPYA) X(cuMemcpy3D, COPY) X(cuMemcpy3D_v2, COPY)                   \
  X(cuMemcpy3D_v2_ptds, COPY) X(cuMemcpy3DAsync, COPYA) X(cuMemcpy3DAsync_v2, COPYA)             \
  X(cuMemcpy3DAsync_v2_ptsz, COPYA) X(cuCtxSynchronize, NONE) X(cuCtxSynchronize_v2, CTX)        \
  X(cuStreamSynchronize, STREAM) X(cuStreamSynchronize_ptsz, STREAM) X(cuStreamWaitEvent, WAITEV) \
  X(cuStreamWaitEvent_ptsz, WAITEV) X(cuEventSynchronize, EVENT) X(cuStreamQuery, STREAM)        \
  X(cuStreamQuery_ptsz, STREAM) X(cuEventRecord, RECORD) X(cuEventRecord_ptsz, RECORD)

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
SIZED(DEFINE_SIZED)
UNSIZED(DEFINE_UNSIZED)

/* ------------------------------------------------------------------ by name (cuGetProcAddress) */

#define ROW(name, ...) {#name, (void *)name},
#define OWN(X)                                                                                   \
  X(cuMemAlloc_v2) X(cuMemAlloc) X(cuMemAllocManaged) X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz) \
  X(cuMemAllocFromPoolAsync) X(cuMemAllocFromPoolAsync_ptsz) X(cuMemCreate)                      \
  X(cuMemAllocPitch_v2) X(cuMemAllocPitch) X(cuArrayCreate_v2) X(cuArrayCreate)                  \
  X(cuArray3DCreate_v2) X(cuArray3DCreate) X(cuMipmappedArrayCreate) X(cuMemFree_v2) X(cuMemFree) \
  X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz) X(cuMemRelease) X(cuArrayDestroy)                     \
  X(cuMipmappedArrayDestroy) X(cuMemGetInfo_v2) X(cuMemGetInfo)
static const struct { const char *name; void *fn; } functions[] = {
  OWN(ROW) SIZED(ROW) UNSIZED(ROW)
};

void *fake_mem_fn(const char *name) {
  for (size_t i = 0; i < sizeof functions / sizeof functions[0]; i++) {
    if (strcmp(functions[i].name, name) == 0) return functions[i].fn;
  }
  return NULL;
}
