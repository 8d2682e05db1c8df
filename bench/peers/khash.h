/* khash.h: the adapter (adapter.h) of htslib's klib khash, the table
 * khashlite descends from, through khash_family.h.  Its allocations go
 * through peers_malloc and friends, so counting passes see them as glibc
 * spends them.  Not in the same translation unit as mruby.c (mruby's
 * khash.h has the same names). */
#ifndef KHL_BENCH_PEERS_KHASH_H
#define KHL_BENCH_PEERS_KHASH_H

#include "adapter.h"

#define kcalloc(N, Z) peers_calloc(N, Z)
#define kmalloc(Z) peers_malloc(Z)
#define krealloc(P, Z) peers_realloc(P, Z)
#define kfree(P) peers_free(P)
#include <htslib/khash.h>

#include "khash_family.h"

/* Flags: __ac_fsize(nb) khint32_t words, none before the first growth. */
#define PEERS_KH_FLAG_BYTES(nb) ((nb) ? __ac_fsize(nb) * sizeof(khint32_t) : 0)

/* PEERS_KH(TAG, NAME, BP): a khash NAME (KHASH_*_INIT) of blueprint BP's types. */
#define PEERS_KH(TAG, NAME, BP) PEERS_KH_FAMILY(TAG, NAME, BP, , , PEERS_KH_FLAG_BYTES)

/* Declares the khash map TAG of blueprint BP with khash's own hash for KIND
 * (INT: identity, INT64: shift-xor, STR: X31 and strcmp) and adapts it. */
#define PEERS_KH_TABLE(TAG, BP, KIND)                                                 \
    KHASH_MAP_INIT_##KIND(TAG, peers_##BP##_V)                                        \
    PEERS_KH(TAG, TAG, BP)

/* The same with hash HASH and equality EQ (khash keeps HASH's low 32 bits). */
#define PEERS_KH_TABLE_HASH(TAG, BP, HASH, EQ)                                        \
    KHASH_INIT(TAG, peers_##BP##_K, peers_##BP##_V, 1, HASH, EQ)                      \
    PEERS_KH(TAG, TAG, BP)

#endif
