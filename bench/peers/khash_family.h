/* khash_family.h: one adapter (adapter.h) for the khash family: htslib's
 * klib khash (khash.h here) and mruby's fork of it (mruby.c), which differ
 * only in a leading mrb_state argument and in how they lay out the flags.
 * Include after the family member's own khash.h.
 *
 * PEERS_KH_FAMILY(TAG, NAME, BP, CTX, CTX0, FLAG_BYTES): a table NAME of
 * blueprint BP's types; CTX is what comes before the table in a call (empty,
 * or a macro expanding to `mrb,`), CTX0 the whole argument list of kh_init_*
 * (empty, or mrb), FLAG_BYTES(nb) the bytes of its flags for nb buckets.
 * Memory counted: the header, the flags, nb keys and nb values. */
#ifndef KHL_BENCH_PEERS_KHASH_FAMILY_H
#define KHL_BENCH_PEERS_KHASH_FAMILY_H

#include "adapter.h"

#define PEERS_KH_FAMILY(TAG, NAME, BP, CTX, CTX0, FLAG_BYTES)                         \
    typedef khash_t(NAME) *TAG##_T;                                                   \
    static inline void TAG##_init(TAG##_T *h)                                         \
    {                                                                                 \
        if (!(*h = kh_init_##NAME(CTX0)))                                             \
            peers_oom("kh_init");                                                     \
    }                                                                                 \
    static inline void TAG##_free(TAG##_T *h) { kh_destroy_##NAME(CTX *h); }          \
    static inline int TAG##_put(TAG##_T *h, peers_##BP##_K k, size_t i)               \
    {                                                                                 \
        int ret;                                                                      \
        khint_t it = kh_put_##NAME(CTX *h, k, &ret);                                  \
        if (ret < 0)                                                                  \
            return -1;                                                                \
        peers_set_##BP(&kh_val(*h, it), i);                                           \
        return ret != 0;                                                              \
    }                                                                                 \
    static inline const peers_##BP##_V *TAG##_get(const TAG##_T *h, peers_##BP##_K k) \
    {                                                                                 \
        khint_t it = kh_get_##NAME(CTX *h, k);                                        \
        return it == kh_end(*h) ? NULL : &kh_val(*h, it);                             \
    }                                                                                 \
    static inline int TAG##_erase(TAG##_T *h, peers_##BP##_K k)                       \
    {                                                                                 \
        khint_t it = kh_get_##NAME(CTX *h, k);                                        \
        if (it == kh_end(*h))                                                         \
            return 0;                                                                 \
        kh_del_##NAME(CTX *h, it);                                                    \
        return 1;                                                                     \
    }                                                                                 \
    static inline uint64_t TAG##_sum(const TAG##_T *h)                                \
    {                                                                                 \
        uint64_t s = 0;                                                               \
        for (khint_t i = kh_begin(*h); i != kh_end(*h); ++i)                          \
            if (kh_exist(*h, i))                                                      \
                s += peers_low_##BP(&kh_val(*h, i));                                  \
        return s;                                                                     \
    }                                                                                 \
    static inline size_t TAG##_size(const TAG##_T *h) { return kh_size(*h); }         \
    static inline void TAG##_stats(const TAG##_T *h, size_t *bytes, size_t *buckets)  \
    {                                                                                 \
        size_t nb = kh_n_buckets(*h);                                                 \
        *bytes = sizeof **h + FLAG_BYTES(nb)                                          \
                 + nb * (sizeof(peers_##BP##_K) + sizeof(peers_##BP##_V));            \
        *buckets = nb;                                                                \
    }                                                                                 \
    PEERS_GEN(TAG, BP)

#endif
