/* uthash.h: the uthash adapter (adapter.h) of program large: uthash (Debian
 * uthash-dev), a chained table that mallocs one item per key (its normal
 * use) and frees it on erase.  Keys are compared over their bytes: u32 and
 * u64 keys by address, string keys over their 16 characters.  Memory
 * counted exactly: uthash's own allocations (table and buckets, through
 * uthash_malloc/uthash_free) plus the items.  Out of memory inside uthash
 * is fatal (uthash_fatal); an item that cannot be allocated is -1. */
#ifndef KHL_BENCH_PEERS_UTHASH_H
#define KHL_BENCH_PEERS_UTHASH_H

#include <stdio.h>
#include <stdlib.h>

#include "adapter.h"

static size_t peers_ut_bytes;   /* uthash's own live allocations */
static inline void *peers_ut_malloc(size_t sz)
{
    void *p = malloc(sz);
    if (p)
        peers_ut_bytes += sz;
    return p;
}
static inline void peers_ut_free(void *p, size_t sz)
{
    if (p)
        peers_ut_bytes -= sz;
    free(p);
}
#define uthash_malloc(sz) peers_ut_malloc(sz)
#define uthash_free(ptr, sz) peers_ut_free(ptr, sz)
#define uthash_fatal(msg) peers_oom(msg)
#include <uthash.h>

/* The handle: the head item and the bytes of the items it holds. */
typedef struct peers_ut { void *head; size_t item_bytes; } peers_ut_t;

#define PEERS_UT_ADDR(x) (&(x))
#define PEERS_UT_STR(x) (x)

/* PEERS_UT(TAG, BP, KLEN, KP): items of blueprint BP; KP(key) is the address
 * of the KLEN bytes compared (PEERS_UT_ADDR for integers, PEERS_UT_STR for
 * strings). */
#define PEERS_UT(TAG, BP, KLEN, KP)                                                   \
    typedef struct TAG##_item {                                                       \
        peers_##BP##_K key;                                                           \
        peers_##BP##_V val;                                                           \
        UT_hash_handle hh;                                                            \
    } TAG##_item;                                                                     \
    typedef peers_ut_t TAG##_T;                                                       \
    static inline void TAG##_init(TAG##_T *h)                                         \
    {                                                                                 \
        h->head = NULL;                                                               \
        h->item_bytes = 0;                                                            \
    }                                                                                 \
    static inline TAG##_item *TAG##_find(const TAG##_T *h, peers_##BP##_K k)          \
    {                                                                                 \
        TAG##_item *head = h->head, *e;                                               \
        HASH_FIND(hh, head, KP(k), KLEN, e);                                          \
        return e;                                                                     \
    }                                                                                 \
    static inline void TAG##_free(TAG##_T *h)                                         \
    {                                                                                 \
        TAG##_item *head = h->head, *e, *tmp;                                         \
        HASH_ITER(hh, head, e, tmp) {                                                 \
            HASH_DEL(head, e);                                                        \
            free(e);                                                                  \
        }                                                                             \
        h->head = NULL;                                                               \
    }                                                                                 \
    static inline int TAG##_put(TAG##_T *h, peers_##BP##_K k, size_t i)               \
    {                                                                                 \
        TAG##_item *head = h->head, *e = TAG##_find(h, k);                            \
        int added = !e;                                                               \
        if (!e) {                                                                     \
            if (!(e = malloc(sizeof *e)))                                             \
                return -1;                                                            \
            h->item_bytes += sizeof *e;                                               \
            e->key = k;                                                               \
            HASH_ADD_KEYPTR(hh, head, KP(e->key), KLEN, e);                           \
            h->head = head;                                                           \
        }                                                                             \
        peers_set_##BP(&e->val, i);                                                   \
        return added;                                                                 \
    }                                                                                 \
    static inline const peers_##BP##_V *TAG##_get(const TAG##_T *h, peers_##BP##_K k) \
    {                                                                                 \
        TAG##_item *e = TAG##_find(h, k);                                             \
        return e ? &e->val : NULL;                                                    \
    }                                                                                 \
    static inline int TAG##_erase(TAG##_T *h, peers_##BP##_K k)                       \
    {                                                                                 \
        TAG##_item *head = h->head, *e = TAG##_find(h, k);                            \
        if (!e)                                                                       \
            return 0;                                                                 \
        HASH_DEL(head, e);                                                            \
        free(e);                                                                      \
        h->item_bytes -= sizeof *e;                                                   \
        h->head = head;                                                               \
        return 1;                                                                     \
    }                                                                                 \
    static inline uint64_t TAG##_sum(const TAG##_T *h)                                \
    {                                                                                 \
        uint64_t s = 0;                                                               \
        for (const TAG##_item *e = h->head; e; e = e->hh.next)                        \
            s += peers_low_##BP(&e->val);                                             \
        return s;                                                                     \
    }                                                                                 \
    static inline size_t TAG##_size(const TAG##_T *h)                                 \
    {                                                                                 \
        TAG##_item *head = h->head;                                                   \
        return HASH_COUNT(head);                                                      \
    }                                                                                 \
    static inline void TAG##_stats(const TAG##_T *h, size_t *bytes, size_t *buckets)  \
    {                                                                                 \
        TAG##_item *head = h->head;                                                   \
        *bytes = h->item_bytes + peers_ut_bytes;                                      \
        *buckets = head ? head->hh.tbl->num_buckets : 0;                              \
    }                                                                                 \
    PEERS_GEN(TAG, BP)

#endif
