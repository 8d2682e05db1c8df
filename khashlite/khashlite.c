/* khashlite.c: the few symbols every table shares: the libc allocator, the
 * process-wide hash seed and the XXH3 string/bytes hashes.  xxHash is inlined
 * with private linkage (XXH_INLINE_ALL), so an interpreter that carries its
 * own copy links against us without a clash and no -lxxhash is needed. */
#include "khashlite.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#if defined(__linux__)
#include <sys/random.h>
#endif

#define XXH_INLINE_ALL
#include <xxhash.h>

static void *libc_allocf(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    /* Tables only allocate and free; malloc's path is shorter than realloc's. */
    return ptr ? realloc(ptr, nsize) : malloc(nsize);
}

const khl_allocator_t khl_libc_allocator = {libc_allocf, NULL};

/* Relaxed is enough: the seed is set before tables are filled, and a reader
 * only needs some value, never a torn one. */
static _Atomic uint64_t hash_seed;

static uint64_t random_seed(void)
{
    uint64_t s = 0;
#if defined(__linux__)
    if (getrandom(&s, sizeof s, GRND_NONBLOCK) == (ssize_t)sizeof s)
        return s;
#endif
    /* No entropy source: mix the clock with addresses, which ASLR varies. */
    s = (uint64_t)time(NULL) ^ (uint64_t)clock();
    s ^= (uint64_t)(uintptr_t)&s ^ ((uint64_t)(uintptr_t)&hash_seed << 17);
    return khl_hash_u64(s);
}

/* Runs before main when the library is linked in, so no hash ever sees an
 * unset seed and no lazy initialisation races between threads. */
__attribute__((constructor)) static void init_seed(void)
{
    atomic_store_explicit(&hash_seed, random_seed(), memory_order_relaxed);
}

void khl_seed(uint64_t seed)
{
    atomic_store_explicit(&hash_seed, seed, memory_order_relaxed);
}

uint64_t khl_hash_bytes(const void *p, size_t n)
{
    return XXH3_64bits_withSeed(p, n, atomic_load_explicit(&hash_seed, memory_order_relaxed));
}

uint64_t khl_hash_str(const char *s)
{
    return khl_hash_bytes(s, strlen(s));
}
