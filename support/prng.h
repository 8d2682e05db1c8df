/* prng.h: the one pseudo-random generator of the tests, the fuzzers' helpers
 * and the benchmarks: splitmix64, whose state is a counter and whose output
 * is a bijection of it.  So any seed works (0 included), sequences are
 * reproducible across platforms, and the outputs of 2^64 successive calls
 * are distinct, which the benchmarks' key sets rely on (prng_mix32 gives
 * distinct 32-bit keys the same way, from distinct 32-bit counters). */
#ifndef KHL_SUPPORT_PRNG_H
#define KHL_SUPPORT_PRNG_H

#include <stdint.h>

/* Bijections of 64 and 32 bits (splitmix64's and murmur3's finalisers). */
static inline uint64_t prng_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static inline uint32_t prng_mix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

/* The next output of the generator whose state is *s. */
static inline uint64_t prng_next(uint64_t *s)
{
    return prng_mix64(*s += 0x9e3779b97f4a7c15ULL);
}

#endif
