/* khl_port.h: the compiler-portability macros of the library's headers and
 * sources, in one place: what gcc and clang are told beyond the standard,
 * and the C or C++ spelling of what the standards name differently.  Not
 * API: the inline headers need it installed, programs never name it. */
#ifndef KHL_PORT_H
#define KHL_PORT_H

#if defined(__GNUC__) || defined(__clang__)
#define KHL_UNUSED __attribute__((unused))
#define KHL_HOT_INLINE __attribute__((always_inline))
#define KHL_NOINLINE __attribute__((noinline))
#define KHL_PREFETCH(p) __builtin_prefetch(p)
#define KHL_PREFETCH_W(p) __builtin_prefetch((p), 1)
#define KHL_LIKELY(x) __builtin_expect(!!(x), 1)
#define KHL_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* Thread-locals the library and static programs reach without a call. */
#define KHL_TLS_INITIAL_EXEC __attribute__((tls_model("initial-exec")))
/* The library's internal functions stay out of a shared library's exports. */
#define KHL_HIDDEN __attribute__((visibility("hidden")))
/* The pool's called entry points start on a cache line: where the link put
 * them 16 or 48 bytes past one, the FastMM loop calling them ran 10-15%
 * slower on an AMD EPYC (docs/pool.md), and their speed moved with
 * whatever the linker placed before them. */
#define KHL_ENTRY __attribute__((aligned(64)))
#else
#define KHL_UNUSED
#define KHL_HOT_INLINE
#define KHL_NOINLINE
#define KHL_PREFETCH(p) ((void)(p))
#define KHL_PREFETCH_W(p) ((void)(p))
#define KHL_LIKELY(x) (x)
#define KHL_UNLIKELY(x) (x)
#define KHL_TLS_INITIAL_EXEC
#define KHL_HIDDEN
#define KHL_ENTRY
#endif

#ifdef __cplusplus
#define KHL_ALIGNOF(t) alignof(t)
#define KHL_STATIC_ASSERT(c, m) static_assert(c, m)
#define KHL_ALIGN64 alignas(64)
#else
/* C11's spellings; gcc and clang also take them in gnu99 mode, as mruby
 * compiles (a C99 <stddef.h> has no max_align_t: see khl_max_align_t). */
#define KHL_ALIGNOF(t) _Alignof(t)
#define KHL_STATIC_ASSERT(c, m) _Static_assert(c, m)
#define KHL_ALIGN64 _Alignas(64)
#endif

#endif /* KHL_PORT_H */
