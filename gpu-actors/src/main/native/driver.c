/*
 * The CUDA driver's entry (SPEC §10): every way a process reaches a driver function reaches this
 * library's wrapper for it (cuda_wrappers.c).
 *
 *   A program linked with libcuda calls the exported names: preloaded, this library defines them
 *   first.
 *   dlopen("libcuda.so.1") and dlsym on that handle (how the CUDA runtime finds cuGetProcAddress):
 *   a look-up on a handle never sees LD_PRELOAD objects, so this library answers dlsym too.
 *   cuGetProcAddress(name, version, flags) (how the runtime finds every other function): the real
 *   driver picks the variant (cuMemAlloc@3020 is cuMemAlloc_v2, the per-thread flag picks _ptsz)
 *   and may hand back an internal entry point, not the exported symbol's address. This library
 *   hands back a wrapper only for a pointer it has proved to be that wrapper's variant (wrapped()
 *   says how), keeps that pointer as the variant's real function, and lets everything else
 *   through as the driver gave it (said once under GPUSHARE_DEBUG=1): a caller never gets a
 *   wrapper of another signature, and a wrapper never calls itself.
 *
 * The real driver and NVML are opened here with libc's dlopen and looked up with libc's dlsym on
 * their handles, which never finds this library's wrappers.
 */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "gpushare.h"

typedef int CUresult;
typedef void *(*dlsym_fn)(void *, const char *);

/* The dlsym path runs before a sanitizer's runtime is up (AddressSanitizer finds its interceptors'
 * targets with dlsym(RTLD_NEXT), which is this library's): no instrumentation there. */
#define GS_EARLY __attribute__((no_sanitize_address))

/* libc's dlsym (named for dlsym's assembly below) */
__attribute__((visibility("hidden"))) _Atomic(dlsym_fn) gs_libc_dlsym;

GS_EARLY void *gs_real_dlsym(void *handle, const char *name) {
  dlsym_fn f = atomic_load_explicit(&gs_libc_dlsym, memory_order_acquire);
  if (GS_UNLIKELY(!f)) {
    /* libc's, the one after this library; dlvsym because dlsym itself would be this library's.
     * GLIBC_2.34 since dlsym moved into libc; earlier, 2.2.5 (x86-64) or 2.17 (aarch64). */
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
    for (size_t i = 0; !f && i < sizeof versions / sizeof versions[0]; i++) {
      f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    }
    if (!f) return NULL;
    atomic_store_explicit(&gs_libc_dlsym, f, memory_order_release);
  }
  return name ? f(handle, name) : NULL;
}

/* ------------------------------------------------------------------ the real libraries */

struct lib {
  const char *soname;
  const char *prefix; /* of a loaded object's file name: the same library under another name */
  _Atomic(void *) handle;
  _Atomic int missing;
};

static struct lib cuda = {"libcuda.so.1", "libcuda.so", NULL, 0};
static struct lib nvml = {"libnvidia-ml.so.1", "libnvidia-ml.so", NULL, 0};

static void *lib_open(struct lib *l) {
  void *h = atomic_load_explicit(&l->handle, memory_order_acquire);
  if (GS_LIKELY(h != NULL) || atomic_load_explicit(&l->missing, memory_order_relaxed)) return h;
  /* no lock: two threads opening it at once get the same object; one reference is given back */
  h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    atomic_store(&l->missing, 1);
    return NULL;
  }
  void *first = NULL;
  if (!atomic_compare_exchange_strong(&l->handle, &first, h)) {
    dlclose(h);
    h = first;
  }
  return h;
}

void *gs_real_cuda(const char *name) {
  void *h = lib_open(&cuda);
  return h ? gs_real_dlsym(h, name) : NULL;
}

void *gs_real_nvml(const char *name) {
  void *h = lib_open(&nvml);
  return h ? gs_real_dlsym(h, name) : NULL;
}

/* Whether a dlopen handle is that library's (opened under any name or path). */
GS_EARLY static int is_lib(void *handle, struct lib *l) {
  if (handle == atomic_load_explicit(&l->handle, memory_order_relaxed)) return 1;
  struct link_map *m = NULL;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &m) != 0 || !m || !m->l_name) return 0;
  const char *file = strrchr(m->l_name, '/');
  file = file ? file + 1 : m->l_name;
  return strncmp(file, l->prefix, strlen(l->prefix)) == 0;
}

/* ------------------------------------------------------------------ the table's look-ups */

/* Whether a pointer lies in this library: one of its own functions. The driver never gives one
 * of them for a variant it implements, but a driver or a shim in front of it that takes its own
 * exported names' addresses through the global scope (a shared object without -Bsymbolic or
 * protected visibility) gets this library's wrappers, which LD_PRELOAD puts first there. */
static int own(const void *p) {
  static _Atomic(void *) base;
  void *b = atomic_load_explicit(&base, memory_order_acquire);
  Dl_info info;
  if (!b) {
    if (!dladdr((void *)own, &info) || !info.dli_fbase) return 0;
    b = info.dli_fbase;
    atomic_store_explicit(&base, b, memory_order_release);
  }
  return p && dladdr(p, &info) && info.dli_fbase == b;
}

void *gs_cuda_resolve(struct gs_cuda_fn *fn) {
  void *p = gs_real_cuda(fn->name);
  if (p && own(p)) p = NULL; /* never this library's own function: it would call itself */
  if (p) atomic_store_explicit(&fn->real, p, memory_order_release);
  return p;
}

void *gs_cuda_wrapper(const char *name) {
  for (size_t i = 0; i < gs_cuda_fns_count; i++) {
    if (strcmp(gs_cuda_fns[i].name, name) == 0) return gs_cuda_fns[i].wrapper;
  }
  return NULL;
}

/* cuda.h's CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (1 << 1) */
#define PER_THREAD_FLAG 2ull

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int per_thread(const struct gs_cuda_fn *fn) {
  return ends_with(fn->name, "_ptds") || ends_with(fn->name, "_ptsz");
}

/* The row of the variant the driver's rule picks for (symbol, version, flags): the newest not newer
 * than version, among the per-thread ones when the flag asks for them and there are some. A symbol
 * given by its exported name is that row. NULL when this library wraps no variant of that name
 * old enough. The rule alone proves nothing: the driver may know a newer variant than this table
 * (wrapped() asks the driver before it believes the rule). */
static struct gs_cuda_fn *variant_of(const char *symbol, int version, uint64_t flags) {
  struct gs_cuda_fn *legacy = NULL, *threaded = NULL;
  for (size_t i = 0; i < gs_cuda_fns_count; i++) {
    struct gs_cuda_fn *fn = &gs_cuda_fns[i];
    if (strcmp(fn->name, symbol) == 0 && strcmp(fn->base, symbol) != 0) return fn;
    if (strcmp(fn->base, symbol) != 0 || fn->version > version) continue;
    struct gs_cuda_fn **best = per_thread(fn) ? &threaded : &legacy;
    if (!*best || (*best)->version < fn->version) *best = fn;
  }
  return (flags & PER_THREAD_FLAG) && threaded ? threaded : legacy;
}

/* (symbol, version, flags) already said under GPUSHARE_DEBUG: a set without a lock (hashes). */
static _Atomic uint64_t said[1024];

static int first_time(const char *symbol, int version, uint64_t flags) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const char *p = symbol; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  h = (h ^ (uint64_t)(unsigned)version) * 1099511628211ull;
  h = (h ^ flags) * 1099511628211ull;
  if (!h) h = 1;
  for (size_t i = 0, at = h % 1024; i < 1024; i++, at = (at + 1) % 1024) {
    uint64_t seen = 0;
    if (atomic_compare_exchange_strong(&said[at], &seen, h)) return 1;
    if (seen == h) return 0;
  }
  return 0; /* full: enough said */
}

/* The real cuGetProcAddress's answer for (symbol, version, flags), NULL when it gives none. */
typedef void *(*ask_fn)(const char *symbol, int version, uint64_t flags);

static void *unwatched(const char *symbol, void *real, int version, uint64_t flags,
                       const char *why) {
  if (gs_cfg.debug && first_time(symbol, version, flags)) {
    gs_debug("cuGetProcAddress(%s, %d, %llu): not wrapped (%s), its calls go to the driver "
             "unwatched", symbol, version, (unsigned long long)flags, why);
  }
  return real;
}

/* The wrapper standing for the variant the driver chose for `symbol`, or the driver's own pointer
 * when that variant is not one this library knows to be the wrapper's. A wrapper is handed back
 * only for a pointer proved to be its variant's, so that a caller never calls a wrapper of another
 * signature:
 *   - the address of an exported variant (libc's dlsym on the driver's handle) is that variant;
 *   - an internal entry point is the variant the rule names (variant_of) only if the driver gives
 *     the same pointer when asked for that variant's own version: a variant newer than this table
 *     (cuCtxCreate_v4 at 12050 for a table that stopped at _v2) then goes through unwrapped;
 *   - this library's own wrapper (the driver's exported name resolved in the global scope) is
 *     handed back as it is, calling the driver's exported variant, never itself.
 * The pointer proved becomes the row's real function: the wrapper calls what the driver chose. */
static void *wrapped(const char *symbol, void *real, int version, uint64_t flags, ask_fn ask) {
  if (own(real)) {
    for (size_t i = 0; i < gs_cuda_fns_count; i++) {
      struct gs_cuda_fn *fn = &gs_cuda_fns[i];
      if (fn->wrapper != real) continue;
      if (gs_cfg.debug && first_time(symbol, version, flags)) {
        gs_debug("cuGetProcAddress(%s, %d, %llu): the driver answered with this library's own %s "
                 "(its exported name as the process's global scope finds it); the wrapper calls "
                 "the driver's %s", symbol, version, (unsigned long long)flags, fn->name,
                 fn->name);
      }
      if (!atomic_load_explicit(&fn->real, memory_order_acquire)) gs_cuda_resolve(fn);
      return real;
    }
    return real; /* cuGetProcAddress itself, or NVML's: they call the real library themselves */
  }
  for (size_t i = 0; i < gs_cuda_fns_count; i++) {
    struct gs_cuda_fn *f = &gs_cuda_fns[i];
    if (strcmp(f->base, symbol) != 0 && strcmp(f->name, symbol) != 0) continue;
    void *p = atomic_load_explicit(&f->real, memory_order_acquire);
    if (!p) p = gs_cuda_resolve(f);
    if (p == real || atomic_load_explicit(&f->internal, memory_order_acquire) == real) {
      atomic_store_explicit(&f->real, real, memory_order_release);
      return f->wrapper;
    }
  }
  struct gs_cuda_fn *fn = variant_of(symbol, version, flags);
  if (!fn) return unwatched(symbol, real, version, flags, "no variant this library wraps");
  if (ask(symbol, fn->version, flags) != real) {
    return unwatched(symbol, real, version, flags, "the driver's entry point is a variant this "
                     "library does not know");
  }
  atomic_store_explicit(&fn->internal, real, memory_order_release);
  atomic_store_explicit(&fn->real, real, memory_order_release);
  return fn->wrapper;
}

typedef CUresult (*proc_address_fn)(const char *, void **, int, uint64_t);
typedef CUresult (*proc_address_v2_fn)(const char *, void **, int, uint64_t, int *);

static _Atomic(void *) real_proc_address, real_proc_address_v2;

static void *cached(_Atomic(void *) *slot, const char *name) {
  void *p = atomic_load_explicit(slot, memory_order_acquire);
  if (!p && (p = gs_real_cuda(name)) != NULL && !own(p)) {
    atomic_store_explicit(slot, p, memory_order_release);
  }
  return p && !own(p) ? p : NULL;
}

static void *ask_v1(const char *symbol, int version, uint64_t flags) {
  proc_address_fn real = (proc_address_fn)cached(&real_proc_address, "cuGetProcAddress");
  void *p = NULL;
  return real && real(symbol, &p, version, flags) == GS_CUDA_SUCCESS ? p : NULL;
}

static void *ask_v2(const char *symbol, int version, uint64_t flags) {
  proc_address_v2_fn real =
      (proc_address_v2_fn)cached(&real_proc_address_v2, "cuGetProcAddress_v2");
  void *p = NULL;
  int status = 0;
  return real && real(symbol, &p, version, flags, &status) == GS_CUDA_SUCCESS ? p : NULL;
}

/* CUDA 11.3's: `flags` picks the per-thread default stream's variants (_ptds, _ptsz). */
GS_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                    uint64_t flags) {
  proc_address_fn real = (proc_address_fn)cached(&real_proc_address, "cuGetProcAddress");
  if (!real) return GS_CUDA_ERROR_NOT_FOUND;
  CUresult rc = real(symbol, pfn, cudaVersion, flags);
  if (rc == GS_CUDA_SUCCESS && symbol && pfn && *pfn) {
    *pfn = wrapped(symbol, *pfn, cudaVersion, flags, ask_v1);
  }
  return rc;
}

/* CUDA 12's, what cuda.h calls cuGetProcAddress; symbolStatus: CUdriverProcAddressQueryResult. */
GS_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                       uint64_t flags, int *symbolStatus) {
  proc_address_v2_fn real =
      (proc_address_v2_fn)cached(&real_proc_address_v2, "cuGetProcAddress_v2");
  if (!real) return GS_CUDA_ERROR_NOT_FOUND;
  CUresult rc = real(symbol, pfn, cudaVersion, flags, symbolStatus);
  if (rc == GS_CUDA_SUCCESS && symbol && pfn && *pfn) {
    *pfn = wrapped(symbol, *pfn, cudaVersion, flags, ask_v2);
  }
  return rc;
}

/* ------------------------------------------------------------------ dlsym */

/* dlsym on a handle: libc's answer, or this library's wrapper when the handle is the driver's or
 * NVML's. Reached from dlsym below by a jump, never a call. */
GS_EARLY __attribute__((visibility("hidden"), used)) void *gs_dlsym_handle(void *handle,
                                                                           const char *name) {
  void *p = gs_real_dlsym(handle, name);
  if (p) {
    void *w = is_lib(handle, &cuda)   ? gs_cuda_wrapper(name)
              : is_lib(handle, &nvml) ? gs_nvml_wrapper(name)
                                      : NULL;
    if (w) return w;
  }
  return p;
}

GS_EARLY __attribute__((visibility("hidden"), used)) dlsym_fn gs_libc_dlsym_resolve(void) {
  gs_real_dlsym(NULL, NULL); /* resolves, looks nothing up */
  return atomic_load(&gs_libc_dlsym);
}

/*
 * dlsym itself. RTLD_NEXT means "after the object that called dlsym" and RTLD_DEFAULT searches
 * the caller's scope: libc's dlsym finds the caller by its return address, so for those two it is
 * entered by a jump, with the caller's return address still in place (a call from C would make
 * this library the caller: RTLD_NEXT would skip everything before it, wrappers included). Any
 * other handle goes to gs_dlsym_handle, by a jump as well.
 */
#if defined(__x86_64__)
#ifdef __CET__
#define GS_LANDING "endbr64\n"
#else
#define GS_LANDING ""
#endif
__asm__(".pushsection .text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        ".p2align 4\n"
        "dlsym:\n" GS_LANDING
        "  cmpq $-1, %rdi\n" /* RTLD_NEXT */
        "  je 1f\n"
        "  testq %rdi, %rdi\n" /* RTLD_DEFAULT */
        "  jne gs_dlsym_handle\n"
        "1:\n"
        "  movq gs_libc_dlsym(%rip), %rax\n"
        "  testq %rax, %rax\n"
        "  jz 2f\n"
        "  jmp *%rax\n"
        "2:\n" /* first use: find libc's, keeping the arguments and the stack's alignment */
        "  pushq %rdi\n"
        "  pushq %rsi\n"
        "  subq $8, %rsp\n"
        "  call gs_libc_dlsym_resolve\n"
        "  addq $8, %rsp\n"
        "  popq %rsi\n"
        "  popq %rdi\n"
        "  testq %rax, %rax\n"
        "  jz 3f\n"
        "  jmp *%rax\n"
        "3:\n"
        "  ret\n"
        ".size dlsym, .-dlsym\n"
        ".popsection\n");
#elif defined(__aarch64__)
#ifdef __ARM_FEATURE_BTI_DEFAULT
#define GS_LANDING "bti c\n"
#else
#define GS_LANDING ""
#endif
__asm__(".pushsection .text\n"
        ".globl dlsym\n"
        ".type dlsym, %function\n"
        ".p2align 4\n"
        "dlsym:\n" GS_LANDING
        "  cmn x0, #1\n" /* RTLD_NEXT */
        "  b.eq 1f\n"
        "  cbz x0, 1f\n" /* RTLD_DEFAULT */
        "  b gs_dlsym_handle\n"
        "1:\n"
        "  adrp x16, gs_libc_dlsym\n"
        "  ldr x16, [x16, #:lo12:gs_libc_dlsym]\n"
        "  cbz x16, 2f\n"
        "  br x16\n"
        "2:\n" /* first use: find libc's, keeping the arguments and the link register */
        "  stp x29, x30, [sp, #-32]!\n"
        "  mov x29, sp\n"
        "  stp x0, x1, [sp, #16]\n"
        "  bl gs_libc_dlsym_resolve\n"
        "  mov x16, x0\n"
        "  ldp x0, x1, [sp, #16]\n"
        "  ldp x29, x30, [sp], #32\n"
        "  cbz x16, 3f\n"
        "  br x16\n"
        "3:\n"
        "  mov x0, #0\n"
        "  ret\n"
        ".size dlsym, .-dlsym\n"
        ".popsection\n");
#else
/* Elsewhere from C: RTLD_NEXT and RTLD_DEFAULT then search from this library's place. */
GS_EXPORT GS_EARLY void *dlsym(void *restrict handle, const char *restrict name) {
  if (handle == RTLD_NEXT || handle == RTLD_DEFAULT) return gs_real_dlsym(handle, name);
  return gs_dlsym_handle(handle, name);
}
#endif
