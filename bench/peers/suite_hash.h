/* suite_hash.h: the hashes of the peers workload (program peers), the ones
 * Jackson Allan's C/C++ hash-table benchmark gives every table it compares:
 * MurmurHash3's 64-bit finalizer (fmix64) for integer keys, 64-bit FNV-1a
 * for strings.  One hash for all, so that a row compares the tables and not
 * their default hashes, and so that its ratios can be checked against that
 * suite's (docs/benchmarks.md).  Written from the published algorithms. */
#ifndef KHL_BENCH_PEERS_SUITE_HASH_H
#define KHL_BENCH_PEERS_SUITE_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t peers_fmix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

#define PEERS_FNV1A_BASIS 0xcbf29ce484222325ULL
#define PEERS_FNV1A_PRIME 0x100000001b3ULL

/* A C string, up to its NUL (every table's keys, as in the suite). */
static inline uint64_t peers_fnv1a_str(const char *s)
{
    uint64_t h = PEERS_FNV1A_BASIS;
    for (; *s; ++s)
        h = (h ^ (unsigned char)*s) * PEERS_FNV1A_PRIME;
    return h;
}

#endif
