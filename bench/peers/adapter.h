/* adapter.h: one adapter per table, one copy of the workload loops.  What
 * the table benchmarks (programs large and peers) share with the adapters of
 * the tables they compare (khashlite.h, khash.h, uthash.h, mruby.c,
 * flat.cpp in this directory): the blueprints, the allocation counter, the
 * table interface the drivers call, and PEERS_GEN, the one copy of the
 * workload loops, which each table instantiates from its own primitives.
 *
 * Why loops behind function pointers: a call per loop, never per operation,
 * so the pointer costs the same negligible amount for every table, and the
 * loops are written once for all of them.
 *
 * A table adapter TAG for blueprint BP defines, before PEERS_GEN(TAG, BP):
 *   TAG##_T                               the handle a user would embed
 *   void TAG##_init(TAG##_T *h)           an empty table (exits on OOM)
 *   void TAG##_free(TAG##_T *h)
 *   int  TAG##_put(TAG##_T *h, K k, size_t i)   insert or overwrite with
 *                                         value i; 1 new, 0 present, -1 OOM
 *   const V *TAG##_get(const TAG##_T *h, K k)   NULL when absent
 *   int  TAG##_erase(TAG##_T *h, K k)     1 erased, 0 absent
 *   uint64_t TAG##_sum(const TAG##_T *h)  iterates: sum of peers_low(value)
 *   size_t TAG##_size(const TAG##_T *h)
 *   void TAG##_stats(const TAG##_T *h, size_t *bytes, size_t *buckets)
 *                                         the bytes the table asked its
 *                                         allocator for and holds (headers
 *                                         and rounding not counted), its
 *                                         buckets (slots) in all
 * K is the blueprint's raw key (uint32_t, uint64_t, or const char * to 16
 * characters and a NUL); C++ adapters convert it to their own key type. */
#ifndef KHL_BENCH_PEERS_ADAPTER_H
#define KHL_BENCH_PEERS_ADAPTER_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- blueprints --------------------------------------------------------- */

/* u32: uint32_t -> uint32_t; u64: uint64_t -> 448-bit payload; str:
 * 16-character string -> uint64_t (program peers).  u64_u32 and str_u32:
 * the same keys to uint32_t (program large: u32, u64_u32, str_u32). */
typedef struct peers_v448 {
    uint64_t w[7];
} peers_v448_t;

typedef uint32_t peers_u32_K;
typedef uint32_t peers_u32_V;
typedef uint64_t peers_u64_K;
typedef peers_v448_t peers_u64_V;
typedef const char *peers_str_K;
typedef uint64_t peers_str_V;
typedef uint64_t peers_u64_u32_K;
typedef uint32_t peers_u64_u32_V;
typedef const char *peers_str_u32_K;
typedef uint32_t peers_str_u32_V;

/* Indexes of a table's ops; in the order of harness/keys.h's key types. */
enum { PEERS_U32, PEERS_U64, PEERS_STR, PEERS_N_BP };

/* The value stored for the key of index i, and the word reads check. */
static inline void peers_set_u32(peers_u32_V *v, size_t i) { *v = (uint32_t)i; }
static inline void peers_set_str(peers_str_V *v, size_t i) { *v = i; }
static inline void peers_set_u64(peers_u64_V *v, size_t i)
{
    /* Every word written: a put of this blueprint moves 56 bytes. */
    for (int w = 0; w < 7; ++w)
        v->w[w] = (uint64_t)i + (uint64_t)w;
}
static inline uint64_t peers_low_u32(const peers_u32_V *v) { return *v; }
static inline uint64_t peers_low_str(const peers_str_V *v) { return *v; }
static inline uint64_t peers_low_u64(const peers_u64_V *v) { return v->w[0]; }
#define peers_set_u64_u32 peers_set_u32
#define peers_set_str_u32 peers_set_u32
#define peers_low_u64_u32 peers_low_u32
#define peers_low_str_u32 peers_low_u32

/* --- allocation counting -------------------------------------------------- */

/* Bytes as glibc spends them: malloc_usable_size(p) + 8 (its chunk header)
 * per live block, counted only while peers_counting is set (an untimed pass);
 * the timed passes pay one predictable branch per allocation. */
typedef struct peers_count {
    uint64_t allocs;        /* malloc, calloc, realloc calls that allocated */
    size_t live, peak;      /* bytes held now, most held at any moment */
} peers_count_t;

extern peers_count_t *peers_counting;
size_t peers_spend(void *p);   /* what glibc spends on the live block p */
void peers_count_alloc(void *p);
void peers_count_free(void *p);
void *peers_count_realloc(void *p, size_t n);

static inline void *peers_malloc(size_t n)
{
    void *p = malloc(n);
    if (peers_counting && p)
        peers_count_alloc(p);
    return p;
}
static inline void *peers_calloc(size_t n, size_t sz)
{
    void *p = calloc(n, sz);
    if (peers_counting && p)
        peers_count_alloc(p);
    return p;
}
static inline void *peers_realloc(void *p, size_t n)
{
    return peers_counting ? peers_count_realloc(p, n) : realloc(p, n);
}
static inline void peers_free(void *p)
{
    if (peers_counting && p)
        peers_count_free(p);
    free(p);
}

/* --- the interface the driver calls --------------------------------------- */

typedef struct peers_ops {
    size_t handle_bytes;                                   /* sizeof the handle */
    void *(*create)(void);                                 /* handle on the heap */
    void (*destroy)(void *t);
    /* Puts keys[from..to) with values from..to-1: the number new, or -1. */
    long (*put)(void *t, const void *keys, size_t from, size_t to);
    /* Looks up n keys: how many were found, *sum of their peers_low. */
    size_t (*get)(void *t, const void *keys, size_t n, uint64_t *sum);
    size_t (*erase)(void *t, const void *keys, size_t n);  /* how many erased */
    uint64_t (*iterate)(void *t);                          /* sum of peers_low */
    size_t (*size)(void *t);
    void (*stats)(void *t, size_t *bytes, size_t *buckets);   /* TAG##_stats */
    /* iters lives of a table on the stack: init, put n keys taken from the
     * pool from a moving offset, get them, destroy.  Returns the sum of
     * (value + 1) found, UINT64_MAX on OOM. */
    uint64_t (*life)(const void *pool, size_t mask, size_t n, size_t iters);
} peers_ops_t;

/* The adapters in other translation units, per blueprint: flat.cpp (u32,
 * u64, str; absl also u32, u64_u32, str_u32) and mruby.c (u32, u64_u32,
 * str_u32, between peers_mruby_open and peers_mruby_close). */
extern const peers_ops_t peers_boost_ops[PEERS_N_BP];
extern const peers_ops_t peers_absl_ops[PEERS_N_BP];
/* The same maps with the peers workload's hash (suite_hash.h). */
extern const peers_ops_t peers_boost_suite_ops[PEERS_N_BP];
extern const peers_ops_t peers_absl_suite_ops[PEERS_N_BP];
extern const peers_ops_t peers_absl_v32_ops[PEERS_N_BP];
extern const peers_ops_t peers_mruby_ops[PEERS_N_BP];
int peers_mruby_open(void);   /* 0, or -1 when mrb_open fails */
void peers_mruby_close(void);

/* Out of memory where a benchmark cannot go on: says what, and exits. */
void peers_oom(const char *what);

#ifdef __cplusplus
}
#define PEERS_CAST(T, x) static_cast<T>(x)
#else
#define PEERS_CAST(T, x) ((T)(x))
#endif

#if defined(__GNUC__)
#define PEERS_NOINLINE __attribute__((noinline))
#define PEERS_INLINE inline __attribute__((always_inline))
#else
#define PEERS_NOINLINE
#define PEERS_INLINE inline
#endif

/* The loops, once, for the adapter TAG of blueprint BP (see the top).
 * Noinline: each loop is compiled as it would be in a user's program, not
 * specialised into the driver. */
#define PEERS_GEN(TAG, BP)                                                            \
    typedef peers_##BP##_K TAG##_K;                                                   \
    typedef peers_##BP##_V TAG##_V;                                                   \
    static void *TAG##_g_create(void)                                                 \
    {                                                                                 \
        TAG##_T *h = PEERS_CAST(TAG##_T *, malloc(sizeof(TAG##_T)));                  \
        if (h)                                                                        \
            TAG##_init(h);                                                            \
        return h;                                                                     \
    }                                                                                 \
    static void TAG##_g_destroy(void *t)                                              \
    {                                                                                 \
        TAG##_free(PEERS_CAST(TAG##_T *, t));                                         \
        free(t);                                                                      \
    }                                                                                 \
    static PEERS_NOINLINE long TAG##_g_put(void *t, const void *keys, size_t from,    \
                                           size_t to)                                 \
    {                                                                                 \
        TAG##_T *h = PEERS_CAST(TAG##_T *, t);                                        \
        const TAG##_K *k = PEERS_CAST(const TAG##_K *, keys);                         \
        long added = 0;                                                               \
        for (size_t i = from; i < to; ++i) {                                          \
            int r = TAG##_put(h, k[i], i);                                            \
            if (r < 0)                                                                \
                return -1;                                                            \
            added += r;                                                               \
        }                                                                             \
        return added;                                                                 \
    }                                                                                 \
    static PEERS_NOINLINE size_t TAG##_g_get(void *t, const void *keys, size_t n,     \
                                             uint64_t *sum)                           \
    {                                                                                 \
        const TAG##_T *h = PEERS_CAST(const TAG##_T *, t);                            \
        const TAG##_K *k = PEERS_CAST(const TAG##_K *, keys);                         \
        size_t found = 0;                                                             \
        uint64_t s = 0;                                                               \
        for (size_t i = 0; i < n; ++i) {                                              \
            const TAG##_V *v = TAG##_get(h, k[i]);                                    \
            if (v) {                                                                  \
                found++;                                                              \
                s += peers_low_##BP(v);                                               \
            }                                                                         \
        }                                                                             \
        *sum = s;                                                                     \
        return found;                                                                 \
    }                                                                                 \
    static PEERS_NOINLINE size_t TAG##_g_erase(void *t, const void *keys, size_t n)   \
    {                                                                                 \
        TAG##_T *h = PEERS_CAST(TAG##_T *, t);                                        \
        const TAG##_K *k = PEERS_CAST(const TAG##_K *, keys);                         \
        size_t erased = 0;                                                            \
        for (size_t i = 0; i < n; ++i)                                                \
            erased += (size_t)TAG##_erase(h, k[i]);                                   \
        return erased;                                                                \
    }                                                                                 \
    static PEERS_NOINLINE uint64_t TAG##_g_iterate(void *t)                           \
    {                                                                                 \
        return TAG##_sum(PEERS_CAST(const TAG##_T *, t));                             \
    }                                                                                 \
    static size_t TAG##_g_size(void *t)                                               \
    {                                                                                 \
        return TAG##_size(PEERS_CAST(const TAG##_T *, t));                            \
    }                                                                                 \
    static void TAG##_g_stats(void *t, size_t *bytes, size_t *buckets)                \
    {                                                                                 \
        TAG##_stats(PEERS_CAST(const TAG##_T *, t), bytes, buckets);                  \
    }                                                                                 \
    static PEERS_NOINLINE uint64_t TAG##_g_life(const void *pool, size_t mask,        \
                                                size_t n, size_t iters)               \
    {                                                                                 \
        const TAG##_K *p = PEERS_CAST(const TAG##_K *, pool);                         \
        uint64_t s = 0;                                                               \
        size_t off = 0;                                                               \
        for (size_t r = 0; r < iters; ++r, off += n) {                                \
            TAG##_T h;                                                                \
            TAG##_init(&h);                                                           \
            for (size_t i = 0; i < n; ++i)                                            \
                if (TAG##_put(&h, p[(off + i) & mask], i) < 0) {                      \
                    TAG##_free(&h);                                                   \
                    return UINT64_MAX;                                                \
                }                                                                     \
            for (size_t i = 0; i < n; ++i) {                                          \
                const TAG##_V *v = TAG##_get(&h, p[(off + i) & mask]);                \
                if (v)                                                                \
                    s += peers_low_##BP(v) + 1;                                       \
            }                                                                         \
            TAG##_free(&h);                                                           \
        }                                                                             \
        return s;                                                                     \
    }

/* A table's ops for the three blueprints of a program, from three adapters. */
#define PEERS_OPS3(A, B, C) {PEERS_OPS(A), PEERS_OPS(B), PEERS_OPS(C)}

/* The peers_ops_t of an adapter instantiated by PEERS_GEN. */
#define PEERS_OPS(TAG)                                                                \
    {                                                                                 \
        sizeof(TAG##_T), TAG##_g_create, TAG##_g_destroy, TAG##_g_put, TAG##_g_get,   \
            TAG##_g_erase, TAG##_g_iterate, TAG##_g_size, TAG##_g_stats, TAG##_g_life \
    }

#endif
