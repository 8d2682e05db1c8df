/* fastmm_direct.c: seed_fastmm's khl_pool_direct and khl_pool_header
 * loops.  Compiled without -flto (bench.mk), unlike the rest of
 * khl-bench-fastmm, so the compiler cannot see the library's code from
 * here: khl_pool_direct's calls stay direct calls, as in a program that
 * links libkhashlite.a the ordinary way, and khl_pool_header's are the
 * inline fast paths of khl_pool_inline.h, which such a program gets by
 * including a header. */
#include "fastmm_direct.h"
#include "fastmm_loop.h"
#include "khashlite/khl_pool_inline.h"

/* Adapters only (void * to the pool): forced inline, so the loop is what a
 * program calling khl_pool_alloc_inline itself compiles to. */
static inline __attribute__((always_inline)) void *header_alloc(void *c, size_t n)
{
    return khl_pool_alloc_inline((khl_pool_t *)c, n);
}

static inline __attribute__((always_inline)) void header_free(void *c, void *ptr, size_t n)
{
    khl_pool_free_inline((khl_pool_t *)c, ptr, n);
}

/* Both layouts' loops for one adapter, under the names fastmm_direct.h
 * declares. */
#define FASTMM_EXPORT(NAME, ALLOC, FREE)                                    \
    DEFINE_FASTMM(NAME##_published, ALLOC, FREE, 0)                         \
    DEFINE_FASTMM(NAME##_write, ALLOC, FREE, 1)                             \
    int fastmm_##NAME##_published(void *pool, void **ptr, int rounds)       \
    {                                                                       \
        return NAME##_published(pool, ptr, rounds);                         \
    }                                                                       \
    int fastmm_##NAME##_write(void *pool, void **ptr, int rounds)           \
    {                                                                       \
        return NAME##_write(pool, ptr, rounds);                             \
    }

FASTMM_EXPORT(direct, fastmm_pool_alloc, fastmm_pool_free)
FASTMM_EXPORT(header, header_alloc, header_free)
