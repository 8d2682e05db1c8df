/* fastmm_direct.c: seed_fastmm's khl_pool_direct loops.  Compiled without
 * -flto (bench.mk), unlike the rest of khl-bench-fastmm, so the compiler
 * cannot see the pool's code from here: the calls stay direct calls, as in
 * a program that links libkhashlite.a the ordinary way. */
#include "fastmm_direct.h"
#include "fastmm_loop.h"

DEFINE_FASTMM(direct_published, fastmm_pool_alloc, fastmm_pool_free, 0)
DEFINE_FASTMM(direct_write, fastmm_pool_alloc, fastmm_pool_free, 1)

int fastmm_direct_published(void *pool, void **ptr, int rounds)
{
    return direct_published(pool, ptr, rounds);
}

int fastmm_direct_write(void *pool, void **ptr, int rounds)
{
    return direct_write(pool, ptr, rounds);
}
