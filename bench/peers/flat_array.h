/* flat_array.h: the flat-array adapter (adapter.h) for the tiny-table rows:
 * CRuby's ar_table shape, the bar a tiny hash table has to clear.  Keys and
 * values side by side in one small array, found by scanning every key, no
 * hash: the first put allocates room for 8 pairs (an ar_table's size), a
 * ninth doubles it by realloc.  A deletion moves the last pair into the
 * hole.  Allocates through peers_malloc and friends, so counting passes see
 * it as glibc spends it. */
#ifndef KHL_BENCH_PEERS_FLAT_ARRAY_H
#define KHL_BENCH_PEERS_FLAT_ARRAY_H

#include <string.h>

#include "adapter.h"

#define PEERS_FLAT_FIRST 8u

/* EQ(a, b): the blueprint's key equality. */
#define PEERS_FLAT(TAG, BP, EQ)                                                       \
    typedef struct TAG##_pair {                                                       \
        peers_##BP##_K k;                                                             \
        peers_##BP##_V v;                                                             \
    } TAG##_pair;                                                                     \
    typedef struct TAG##_T {                                                          \
        TAG##_pair *p;                                                                \
        uint32_t n, cap;                                                              \
    } TAG##_T;                                                                        \
    static inline void TAG##_init(TAG##_T *h)                                         \
    {                                                                                 \
        h->p = NULL;                                                                  \
        h->n = h->cap = 0;                                                            \
    }                                                                                 \
    static inline void TAG##_free(TAG##_T *h) { peers_free(h->p); }                   \
    static inline TAG##_pair *TAG##_find(const TAG##_T *h, peers_##BP##_K k)          \
    {                                                                                 \
        for (uint32_t i = 0; i < h->n; ++i)                                           \
            if (EQ(h->p[i].k, k))                                                     \
                return &h->p[i];                                                      \
        return NULL;                                                                  \
    }                                                                                 \
    static inline int TAG##_put(TAG##_T *h, peers_##BP##_K k, size_t i)               \
    {                                                                                 \
        TAG##_pair *e = TAG##_find(h, k);                                             \
        int added = !e;                                                               \
        if (!e) {                                                                     \
            if (h->n == h->cap) {                                                     \
                uint32_t cap = h->cap ? 2 * h->cap : PEERS_FLAT_FIRST;                \
                TAG##_pair *p = (TAG##_pair *)peers_realloc(h->p, cap * sizeof *p);   \
                if (!p)                                                               \
                    return -1;                                                        \
                h->p = p;                                                             \
                h->cap = cap;                                                         \
            }                                                                         \
            e = &h->p[h->n++];                                                        \
            e->k = k;                                                                 \
        }                                                                             \
        peers_set_##BP(&e->v, i);                                                     \
        return added;                                                                 \
    }                                                                                 \
    static inline const peers_##BP##_V *TAG##_get(const TAG##_T *h, peers_##BP##_K k) \
    {                                                                                 \
        const TAG##_pair *e = TAG##_find(h, k);                                       \
        return e ? &e->v : NULL;                                                      \
    }                                                                                 \
    static inline int TAG##_erase(TAG##_T *h, peers_##BP##_K k)                       \
    {                                                                                 \
        TAG##_pair *e = TAG##_find(h, k);                                             \
        if (!e)                                                                       \
            return 0;                                                                 \
        *e = h->p[--h->n];                                                            \
        return 1;                                                                     \
    }                                                                                 \
    static inline uint64_t TAG##_sum(const TAG##_T *h)                                \
    {                                                                                 \
        uint64_t s = 0;                                                               \
        for (uint32_t i = 0; i < h->n; ++i)                                           \
            s += peers_low_##BP(&h->p[i].v);                                          \
        return s;                                                                     \
    }                                                                                 \
    static inline size_t TAG##_size(const TAG##_T *h) { return h->n; }                \
    static inline void TAG##_stats(const TAG##_T *h, size_t *bytes, size_t *buckets)  \
    {                                                                                 \
        *bytes = h->cap * sizeof(TAG##_pair);                                         \
        *buckets = h->cap;                                                            \
    }                                                                                 \
    PEERS_GEN(TAG, BP)

#endif
