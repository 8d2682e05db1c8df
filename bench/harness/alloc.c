/* alloc.c: bench allocators (see alloc.h). */
#include "alloc.h"

#include <string.h>

int bench_alloc_open(bench_alloc_t *ba, const bench_opts_t *o)
{
    memset(ba, 0, sizeof *ba);
    if (strcmp(o->alloc, "pool") != 0) {
        ba->a = khl_libc_allocator;
        return 0;
    }
    ba->pool = khl_pool_new(NULL);
    if (!ba->pool)
        return -1;
    ba->a = khl_pool_allocator(ba->pool);
    return 0;
}

void bench_alloc_close(bench_alloc_t *ba)
{
    if (ba->pool)
        khl_pool_destroy(ba->pool);
    ba->pool = NULL;
}

khl_pool_t *bench_pool_new(int thread_safe)
{
    khl_pool_options_t opt;
    memset(&opt, 0, sizeof opt);
    opt.thread_safe = thread_safe;
    return khl_pool_new(&opt);
}
