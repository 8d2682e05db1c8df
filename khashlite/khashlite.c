/* khashlite.c: the few symbols every table shares: the libc allocator, the
 * process-wide hash seed and the XXH3 string/bytes hashes.  xxHash is inlined
 * with private linkage (XXH_INLINE_ALL), so an interpreter that carries its
 * own copy links against us without a clash and no -lxxhash is needed. */
#include "khashlite.h"

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
    /* malloc's path is shorter than realloc's. */
    return ptr ? realloc(ptr, nsize) : malloc(nsize);
}

const khl_allocator_t khl_libc_allocator = {libc_allocf, NULL, 1};

/* Relaxed atomics are enough: the seed is set before tables are filled, and
 * a reader only needs some value, never a torn one.  Public only because
 * the integer hashes are inline. */
uint64_t khl_seed_value;

static uint64_t random_seed(void)
{
    uint64_t s = 0;
#if defined(__linux__)
    if (getrandom(&s, sizeof s, GRND_NONBLOCK) == (ssize_t)sizeof s)
        return s;
#endif
    /* No entropy source: mix the clock with addresses, which ASLR varies. */
    s = (uint64_t)time(NULL) ^ (uint64_t)clock();
    s ^= (uint64_t)(uintptr_t)&s ^ ((uint64_t)(uintptr_t)&khl_seed_value << 17);
    s ^= s >> 31;
    return s * 0x9e3779b97f4a7c15ULL;
}

/* Runs before main when the library is linked in, so no hash ever sees an
 * unset seed and no lazy initialisation races between threads. */
__attribute__((constructor)) static void init_seed(void)
{
    __atomic_store_n(&khl_seed_value, random_seed(), __ATOMIC_RELAXED);
}

void khl_seed(uint64_t seed)
{
    __atomic_store_n(&khl_seed_value, seed, __ATOMIC_RELAXED);
}

uint64_t khl_hash_bytes(const void *p, size_t n)
{
    return XXH3_64bits_withSeed(p, n, khl_seed_get());
}

uint64_t khl_hash_str(const char *s)
{
    return khl_hash_bytes(s, strlen(s));
}
