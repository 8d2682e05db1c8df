/* khashlite.h: the khashlite adapter (adapter.h) for the table benchmarks.
 * PEERS_KHL(TAG, NAME, BP) adapts a table NAME declared with KHL_INIT* whose
 * key and value types are blueprint BP's; any layout.  Its tables allocate
 * through peers_khl_alloc (the program sets it: libc or a pool), or, during
 * a counting pass, through peers_malloc and friends as glibc spends them. */
#ifndef KHL_BENCH_PEERS_KHASHLITE_H
#define KHL_BENCH_PEERS_KHASHLITE_H

#include "adapter.h"
#include "khashlite/khashlite.h"
#include "khl_split.h"

extern const khl_allocator_t *peers_khl_alloc;            /* khl_libc_allocator until set */
extern const khl_allocator_t peers_khl_count_allocator;   /* through peers_malloc */

/* The fused erase by key where the core has it, else get + del: the one place
 * that chooses. */
#ifdef khl_del_key
#define PEERS_KHL_ERASE(NAME, h, k) return khl_del_key(NAME, h, k) ? 1 : 0;
#else
#define PEERS_KHL_ERASE(NAME, h, k)                                                   \
    khl_iter_t it = khl_get(NAME, h, k);                                              \
    if (it == khl_end(NAME, h))                                                       \
        return 0;                                                                     \
    khl_del(NAME, h, it);                                                             \
    return 1;
#endif

#define PEERS_KHL(TAG, NAME, BP)                                                      \
    typedef khl_t(NAME) TAG##_T;                                                      \
    static inline void TAG##_init(TAG##_T *h)                                         \
    {                                                                                 \
        khl_init(NAME, h, peers_counting ? &peers_khl_count_allocator : peers_khl_alloc); \
    }                                                                                 \
    static inline void TAG##_free(TAG##_T *h) { khl_destroy(NAME, h); }               \
    /* Forced inline: holding khl_put's forced-inline body, the wrapper grew */     \
    /* past what gcc inlines, and every put of the loops became a call that a */    \
    /* program calling khl_put does not make. */                                    \
    static PEERS_INLINE int TAG##_put(TAG##_T *h, peers_##BP##_K k, size_t i)         \
    {                                                                                 \
        int ret;                                                                      \
        khl_iter_t it = khl_put(NAME, h, k, &ret);                                    \
        if (ret < 0)                                                                  \
            return -1;                                                                \
        peers_set_##BP(&khl_val(NAME, h, it), i);                                     \
        return ret != 0;                                                              \
    }                                                                                 \
    static inline const peers_##BP##_V *TAG##_get(const TAG##_T *h, peers_##BP##_K k) \
    {                                                                                 \
        return khl_getp(NAME, h, k);                                                  \
    }                                                                                 \
    static inline int TAG##_erase(TAG##_T *h, peers_##BP##_K k)                       \
    {                                                                                 \
        PEERS_KHL_ERASE(NAME, h, k)                                                   \
    }                                                                                 \
    static inline uint64_t TAG##_sum(const TAG##_T *h)                                \
    {                                                                                 \
        /* Step by step, as the suite's shim and a C++ iterator walk. */             \
        uint64_t s = 0;                                                               \
        khl_cursor_t c = khl_cursor(NAME, h);                                         \
        while (khl_cursor_next(NAME, h, &c))                                          \
            s += peers_low_##BP(&khl_val(NAME, h, c.k));                              \
        return s;                                                                     \
    }                                                                                 \
    static inline size_t TAG##_size(const TAG##_T *h) { return khl_size(NAME, h); }   \
    static inline void TAG##_stats(const TAG##_T *h, size_t *bytes, size_t *buckets)  \
    {                                                                                 \
        *bytes = khl_block_size(NAME, h);                                             \
        *buckets = khl_n_buckets(NAME, h);                                            \
    }                                                                                 \
    PEERS_GEN(TAG, BP)

/* Declares the khashlite map TAG of blueprint BP's types (hash HASH,
 * equality EQ, layout LAYOUT: khl_split.h) and adapts it. */
#define PEERS_KHL_TABLE(TAG, BP, HASH, EQ, LAYOUT)                                    \
    KHL_INIT_LAYOUT(TAG, peers_##BP##_K, peers_##BP##_V, 1, HASH, EQ, LAYOUT)         \
    PEERS_KHL(TAG, TAG, BP)

#endif
