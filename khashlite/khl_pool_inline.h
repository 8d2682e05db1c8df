/* khl_pool_inline.h: the pool's fast paths as static inline functions, so a
 * program gets them inlined into its own loops by including a header,
 * without link-time optimisation:
 *
 *     #define KHL_POOL_INLINE          // before including khl_pool.h:
 *     #include <khashlite/khl_pool.h>  // khl_pool_alloc, khl_pool_free and
 *                                      // khl_pool_free_unsized become these
 *
 * or call khl_pool_alloc_inline, khl_pool_free_inline and
 * khl_pool_free_unsized_inline by name after including this header.  They
 * do what the functions of the same name without _inline do, with the same
 * contracts: the common cases run inline, anything else is a call to the
 * library's function.  The common cases are a small class of a pool that is
 * neither thread-safe nor checked with a free block or bump room, and (in C,
 * and in C++ with gcc or clang) a small class of a thread-safe pool whose
 * calling thread's cache has a block to hand out or room for one more
 * before a full batch: a few loads and stores each.  A program that does
 * not include this header links exactly as before.
 *
 * What follows the functions' declarations is the layout the inline code
 * reads: the pool's first cache line (khl_pool_head_t), its size-class
 * records (khl_pool_class_t), and a thread's cache records (the thread-local
 * khl_pool_i_last_cache points at the one it used last).  The library is
 * built from the same
 * definitions (khl_pool_internal.h), so the two cannot disagree, but code
 * compiled against this header must be rebuilt with the library it links:
 * it is inline code, not a stable ABI.  Nothing here is for use by
 * programs other than through the three functions. */
#ifndef KHL_POOL_INLINE_H
#define KHL_POOL_INLINE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "khl_pool.h"
#include "khl_port.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Thread-safe pools' thread caches are read inline in C, and in C++ where
 * the compiler has __thread and the __atomic builtins (gcc, clang); other
 * C++ compilers call the library. */
#if defined(__GNUC__) || defined(__clang__)
#define KHL_POOL_I_INLINE_CACHES 1
#define KHL_POOL_I_TLS __thread KHL_TLS_INITIAL_EXEC
#define KHL_POOL_I_LOAD(x) __atomic_load_n((x), __ATOMIC_RELAXED)
#define KHL_POOL_I_STORE(x, v) __atomic_store_n((x), (v), __ATOMIC_RELAXED)
#elif !defined(__cplusplus)
#include <stdatomic.h>
#define KHL_POOL_I_INLINE_CACHES 1
#define KHL_POOL_I_TLS _Thread_local
#define KHL_POOL_I_LOAD(x) atomic_load_explicit((const _Atomic uint64_t *)(x), memory_order_relaxed)
#define KHL_POOL_I_STORE(x, v) atomic_store_explicit((_Atomic uint64_t *)(x), (v), memory_order_relaxed)
#endif

/* Entries of the bundle every class has in its own record. */
#define KHL_POOL_I_ROOT_ENTRIES 8
/* The kind of a small-block chunk of a pool neither thread-safe nor checked
 * (its header's first word): unsized free may take the inline path. */
#define KHL_POOL_I_KIND_SMALL_PLAIN 0x6b686c46u   /* "khlF" */
/* The kind of the other small-block chunks, those of thread-safe or checked
 * pools: in a thread-safe pool unsized free may take the cache's path. */
#define KHL_POOL_I_KIND_SMALL_GUARDED 0x6b686c53u   /* "khlS" */

struct khl_pool_chunk;

/* A size class's record.  The fields the fast path touches come first and
 * share one cache line.
 *
 * A class's free blocks are kept in bundles: arrays of pointers to free
 * blocks of the class.  The first bundle, the root, is an array in the
 * class record; every other is a free block whose first word links to the
 * bundle below it (NULL: the root).  Only the current bundle (entries
 * base..lim, filled up to top) may be partly filled; those below are full.
 * Free stores the block above top, and when the bundle is full makes the
 * block the new current bundle; allocation takes the entry below top, and
 * when a block bundle is empty hands out the bundle block itself.  So
 * neither touches the block it hands out or takes back (a list threaded
 * through the blocks writes into each freed block and reads each one it
 * allocates: a cache miss each when they are cold), allocation knows the
 * next block in advance and prefetches it for the caller's first write, and
 * a block freed and allocated in turn only moves top in the root.  Bundles
 * cost no memory: they are free blocks. */
typedef struct khl_pool_class {
    /* top, base and lim are stored together and loaded one by one: they are
     * not neighbours, or the compiler merges their stores into one vector
     * store from which the next call's loads cannot be forwarded. */
    KHL_ALIGN64 void **top; /* next unused entry of the current bundle */
    char *bump;                   /* never-used slots of `cur`, up to end */
    void **base;                  /* first entry of the current bundle */
    char *end;                    /* of the slots whose pages are in */
    void **lim;                   /* one past its last entry */
    size_t size;
    /* Blocks that left and came back to this class: the number of free
     * blocks follows from them (cls_nfree), and in a single-threaded pool
     * the reserve left (cls_reserved). */
    uint64_t allocs, frees;
    uint64_t reserve_until;       /* reserve holds until cls_user_allocs reaches this; 0: none */
    uint64_t ts_allocs;           /* thread-safe: callers' allocations no thread record counts */
    size_t carved;                /* slots ever bumped, in chunks other than cur */
    struct khl_pool_chunk *cur;
    struct khl_pool_chunk *fresh; /* chunks with all slots never used */
    void *batches;                /* thread-safe: flushed chains of exited threads */
    size_t fresh_slots;
    struct khl_pool_chunk *chunks;
    size_t batch;                 /* thread caches move this many at a time */
    size_t refills;
    size_t bundle_cap;            /* entries per block bundle: a block's words but the link */
    void *root[KHL_POOL_I_ROOT_ENTRIES]; /* the root bundle */
} khl_pool_class_t;

/* The start of every pool: what each call reads first.  The path maxima
 * are max_small when that path serves the pool's small calls, else 0, so
 * that `n - 1 < max` picks the path in one compare (false for n == 0). */
typedef struct khl_pool_head {
    size_t plain_path_max;        /* neither thread-safe nor checked */
    size_t cache_path_max;        /* thread-safe, not checked: thread caches */
    uintptr_t mask;               /* chunk_bytes - 1 */
    khl_pool_class_t *classes;
    /* Bytes in use as the locked and plain paths count them, and the most
     * ever.  A thread-safe pool's in_use is only its part of a sum with
     * the thread records' counts, and may hold a negative share modulo
     * 2^64 (blocks one path allocated and another freed), so its peak is
     * only ever set from the whole sum (khl_i_sample_peak). */
    size_t in_use, peak;
    /* Thread-safe pools: unique among the process's pools, so that one
     * compare tells a thread's record of this pool from one of another pool,
     * or of a destroyed pool whose address this one reuses.  0 otherwise. */
    uint64_t gen;
    /* The library's: the class of sizes 16 i + 1 to 16 i + 16 up to
     * max_small, at [i] (one load where class_of's arithmetic took 5 to 12
     * instructions and two taken branches a call). */
    const unsigned char *class_index;
} khl_pool_head_t;

/* The start of every chunk's header. */
typedef struct khl_pool_frame_head {
    uint32_t kind, cls;
} khl_pool_frame_head_t;

/* Thread-safe pools: one thread's cache of one size class (the design is in
 * khl_pool_thread.c).  Blocks to hand out (linked through their first
 * words), blocks freed here since the last full batch, and the counters of
 * the blocks the thread allocated and freed: written by their thread only,
 * read by khl_pool_stats from any thread, so relaxed atomic loads and
 * stores, never a read-modify-write.  flush_at is the value of frees at
 * which `freed` holds a full batch.  The rest is the library's. */
typedef struct khl_pool_class_cache {
    KHL_ALIGN64 void *alloc;   /* one cache line per class */
    void *freed;
    uint64_t allocs, frees;
    uint64_t flush_at;
    void *stash;                  /* full batches the thread keeps */
    char *bump, *end;             /* a run of never-used slots */
} khl_pool_class_cache_t;

/* The start of a thread's record for one thread-safe pool, the pool's gen;
 * its class caches start KHL_POOL_I_CACHES_OFFSET bytes in. */
typedef struct khl_pool_thread_head {
    uint64_t gen;
} khl_pool_thread_head_t;
#define KHL_POOL_I_CACHES_OFFSET 64

#ifdef KHL_POOL_I_INLINE_CACHES
/* The record of the pool the calling thread used last, or a record of no
 * pool: never NULL, so that the fast paths test a generation alone (an
 * allocation and a free each 2 instructions fewer than with a test for
 * NULL before it). */
extern KHL_POOL_I_TLS khl_pool_thread_head_t *khl_pool_i_last_cache;

static inline uint64_t khl_pool_i_counter(const uint64_t *x)
{
    return KHL_POOL_I_LOAD(x);
}

static inline void khl_pool_i_set_counter(uint64_t *x, uint64_t v)
{
    KHL_POOL_I_STORE(x, v);
}

/* The calling thread's cache of class ci of pool h, or NULL when the last
 * record it used is not h's. */
static inline khl_pool_class_cache_t *khl_pool_i_my_class(const khl_pool_head_t *h, unsigned ci)
{
    khl_pool_thread_head_t *e = khl_pool_i_last_cache;
    if (KHL_LIKELY(e->gen == h->gen))
        return (khl_pool_class_cache_t *)(void *)((char *)e + KHL_POOL_I_CACHES_OFFSET) + ci;
    return NULL;
}

/* The thread-cache fast paths: no lock, no atomic read-modify-write,
 * nothing another thread writes.  A block, or NULL with nothing done. */
static inline void *khl_pool_i_ts_alloc(const khl_pool_head_t *h, unsigned ci)
{
    khl_pool_class_cache_t *t = khl_pool_i_my_class(h, ci);
    void *b;
    if (KHL_UNLIKELY(t == NULL) || KHL_UNLIKELY((b = t->alloc) == NULL))
        return NULL;
    t->alloc = *(void **)b;
    khl_pool_i_set_counter(&t->allocs, khl_pool_i_counter(&t->allocs) + 1);
    return b;
}

/* 1 when ptr is freed, 0 with nothing done when this free needs the
 * library (no record, or it would complete a batch). */
static inline int khl_pool_i_ts_free(const khl_pool_head_t *h, void *ptr, unsigned ci)
{
    khl_pool_class_cache_t *t = khl_pool_i_my_class(h, ci);
    uint64_t frees;
    if (KHL_UNLIKELY(t == NULL) ||
        KHL_UNLIKELY((frees = khl_pool_i_counter(&t->frees) + 1) == t->flush_at))
        return 0;
    *(void **)ptr = t->freed;
    t->freed = ptr;
    khl_pool_i_set_counter(&t->frees, frees);
    return 1;
}
#endif

static inline unsigned khl_pool_i_floor_log2(size_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)(sizeof(unsigned long long) * CHAR_BIT - 1) -
           (unsigned)__builtin_clzll((unsigned long long)x);
#else
    unsigned r = 0;
    while (x >>= 1)
        r++;
    return r;
#endif
}

/* 16-byte steps to 128, then 4 classes per doubling: arithmetic, no table. */
static inline unsigned khl_pool_i_class_of(size_t n)
{
    size_t m = n - 1;
    unsigned g;
    if (n <= 128)
        return (unsigned)(m >> 4);
    g = khl_pool_i_floor_log2(m);
    return 8u + (g - 7u) * 4u + (unsigned)((m >> (g - 2u)) & 3u);
}

static inline void khl_pool_i_push(khl_pool_class_t *c, void *b)
{
    if (KHL_LIKELY(c->top != c->lim)) {
        *c->top++ = b;
    } else {
        /* The current bundle is full: b becomes the current one. */
        *(void **)b = c->base == c->root ? NULL : (void *)(c->base - 1);
        c->base = c->top = (void **)b + 1;
        c->lim = c->base + c->bundle_cap;
    }
}

/* Called when the current bundle has no entry left: the bundle block itself
 * (the bundle below becomes current), NULL when the current bundle is the
 * root, that is when there is no free block. */
static inline void *khl_pool_i_pop_bundle(khl_pool_class_t *c)
{
    void **bundle, **next;
    if (c->base == c->root)
        return NULL;
    bundle = c->base - 1;
    next = (void **)bundle[0];
    if (next) {
        c->base = next + 1;
        c->top = c->lim = c->base + c->bundle_cap;
    } else {
        c->base = c->root;
        c->top = c->lim = c->root + KHL_POOL_I_ROOT_ENTRIES;
    }
    return bundle;
}

/* bytes more in use: the exact statistics every allocation keeps.  A
 * macro: as a function of the size, inlined, it cost the allocation fast
 * path an instruction (gcc 12 kept n in a register for the slow path). */
#define KHL_POOL_I_NOTE_USE(h, bytes)                                         \
    do {                                                                      \
        (h)->in_use += (bytes);                                               \
        if ((h)->in_use > (h)->peak)                                          \
            (h)->peak = (h)->in_use;                                          \
    } while (0)

/* The counts of an allocation of class c.  Both fast paths count before
 * they touch the bundle again (alloc's prefetch, free's push): gcc then
 * keeps the class record's address in one register, where counting last
 * it computed the address a second time (the FastMM loop's calls: 31.7 ->
 * 29.8 instructions an allocation, 24.9 -> 21.8 a free). */
static inline void khl_pool_i_count_alloc(khl_pool_head_t *h, khl_pool_class_t *c)
{
    c->allocs++;
    KHL_POOL_I_NOTE_USE(h, c->size);
}

/* The plain pools' allocation fast path for class c: a free block, else
 * bump room, else the call `slow` (the library's out-of-line path). */
static inline void *khl_pool_i_plain_alloc(khl_pool_head_t *h, khl_pool_class_t *c, khl_pool_t *p,
                                           size_t n, void *(*slow)(khl_pool_t *, size_t))
{
    void **top = c->top, **base = c->base, *b;
    if (KHL_LIKELY(top != base)) {
        b = *--top;
        c->top = top;
        khl_pool_i_count_alloc(h, c);
        /* The caller's first write to the next block will not miss. */
        if (KHL_LIKELY(top != base))
            KHL_PREFETCH_W(top[-1]);
        return b;
    }
    if (base != c->root) {
        b = khl_pool_i_pop_bundle(c);
    } else if (KHL_LIKELY(c->bump != c->end)) {
        b = c->bump;
        c->bump += c->size;
    } else {
        return slow(p, n);
    }
    khl_pool_i_count_alloc(h, c);
    return b;
}

/* A small block back to class c of a plain pool.  Counted before the push,
 * as an allocation is (khl_pool_i_count_alloc). */
static inline void khl_pool_i_plain_free(khl_pool_head_t *h, khl_pool_class_t *c, void *ptr)
{
    c->frees++;
    h->in_use -= c->size;
    khl_pool_i_push(c, ptr);
}

/* khl_pool_alloc, inline where the pool is plain or a thread's cache has a
 * block.  The three inline calls are forced inline whatever the compiler's
 * size heuristics say: with both the plain and the thread-cache path in
 * them, gcc -O2 otherwise keeps them out of line, a call per allocation. */
static inline KHL_HOT_INLINE void *khl_pool_alloc_inline(khl_pool_t *p, size_t n)
{
    khl_pool_head_t *h = (khl_pool_head_t *)(void *)p;
    if (KHL_LIKELY(n - 1 < h->plain_path_max))
        return khl_pool_i_plain_alloc(h, &h->classes[khl_pool_i_class_of(n)], p, n, khl_pool_alloc);
#ifdef KHL_POOL_I_INLINE_CACHES
    if (n - 1 < h->cache_path_max) {
        void *b = khl_pool_i_ts_alloc(h, khl_pool_i_class_of(n));
        if (KHL_LIKELY(b != NULL))
            return b;
    }
#endif
    return khl_pool_alloc(p, n);
}

/* khl_pool_free, inline where the pool is plain or a thread's cache has
 * room. */
static inline KHL_HOT_INLINE void khl_pool_free_inline(khl_pool_t *p, void *ptr, size_t n)
{
    khl_pool_head_t *h = (khl_pool_head_t *)(void *)p;
    if (KHL_LIKELY(ptr != NULL && n - 1 < h->plain_path_max)) {
        khl_pool_i_plain_free(h, &h->classes[khl_pool_i_class_of(n)], ptr);
        return;
    }
#ifdef KHL_POOL_I_INLINE_CACHES
    if (ptr != NULL && n - 1 < h->cache_path_max && khl_pool_i_ts_free(h, ptr, khl_pool_i_class_of(n)))
        return;
#endif
    khl_pool_free(p, ptr, n);
}

/* khl_pool_free_unsized, inline where the pool is plain or a thread's cache
 * has room: the class comes from the header of the chunk the address masks
 * to. */
static inline KHL_HOT_INLINE void khl_pool_free_unsized_inline(khl_pool_t *p, void *ptr)
{
    khl_pool_head_t *h = (khl_pool_head_t *)(void *)p;
    if (KHL_LIKELY(ptr != NULL && h->plain_path_max != 0)) {
        const khl_pool_frame_head_t *k = (const khl_pool_frame_head_t *)((uintptr_t)ptr & ~h->mask);
        if (KHL_LIKELY(k->kind == KHL_POOL_I_KIND_SMALL_PLAIN)) {
            khl_pool_i_plain_free(h, &h->classes[k->cls], ptr);
            return;
        }
    }
#ifdef KHL_POOL_I_INLINE_CACHES
    if (ptr != NULL && h->cache_path_max != 0) {
        const khl_pool_frame_head_t *k = (const khl_pool_frame_head_t *)((uintptr_t)ptr & ~h->mask);
        if (k->kind == KHL_POOL_I_KIND_SMALL_GUARDED && khl_pool_i_ts_free(h, ptr, k->cls))
            return;
    }
#endif
    khl_pool_free_unsized(p, ptr);
}

/* khl_pool_allocf, inline where the pool is plain: the allocator to name in
 * KHL_INIT_ALLOC, so that a table's allocations and frees are the pool's
 * fast paths in the table's own code:
 *     KHL_INIT_ALLOC(ids, uint64_t, int, 1, khl_hash_u64, khl_eq_int, khl_pool_allocf_inline)
 *     khl_t(ids) h;  khl_init(ids, &h, pool);
 * Other pools take the library's khl_pool_alloc and khl_pool_free, which
 * run the thread caches' fast paths, and a resize (a large table's growth:
 * KHL_ALLOC_RESIZES_ below) khl_pool_allocf.  Only the plain path is here, and it is not forced
 * inline: a table reaches its allocator through a function pointer that
 * constant propagation turns into a direct call, which gcc -O1 does too
 * late for always_inline, and with the thread-cache path in it too gcc -O2
 * kept this function out of line (a 1-key table life: 288 instructions
 * instead of 259). */
static inline void *khl_pool_allocf_inline(void *ud, void *ptr, size_t osize, size_t nsize)
{
    khl_pool_t *p = (khl_pool_t *)ud;
    khl_pool_head_t *h = (khl_pool_head_t *)ud;
    if (nsize == 0) {
        if (ptr != NULL && osize - 1 < h->plain_path_max)
            khl_pool_i_plain_free(h, &h->classes[khl_pool_i_class_of(osize)], ptr);
        else
            khl_pool_free(p, ptr, osize);
        return NULL;
    }
    if (ptr == NULL) {
        if (nsize - 1 < h->plain_path_max)
            return khl_pool_i_plain_alloc(h, &h->classes[khl_pool_i_class_of(nsize)], p, nsize, khl_pool_alloc);
        return khl_pool_alloc(p, nsize);
    }
    return khl_pool_allocf(ud, ptr, osize, nsize);
}
/* It resizes: a table declared on it grows large blocks in place. */
#define KHL_ALLOC_RESIZES_khl_pool_allocf_inline

#ifdef __cplusplus
}
#endif

/* The switch: calls written as khl_pool_alloc(...) etc. take the inline
 * forms (the names without arguments, as function pointers, stay the
 * library's functions). */
#if defined(KHL_POOL_INLINE) && !defined(KHL_POOL_BUILDING_LIBRARY)
#define khl_pool_alloc(p, n) khl_pool_alloc_inline(p, n)
#define khl_pool_free(p, ptr, n) khl_pool_free_inline(p, ptr, n)
#define khl_pool_free_unsized(p, ptr) khl_pool_free_unsized_inline(p, ptr)
#endif

#endif /* KHL_POOL_INLINE_H */
