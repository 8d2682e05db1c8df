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

static void *count_allocf(void *ud, void *ptr, size_t osize, size_t nsize)
{
    bench_count_t *c = ud;
    void *q = c->inner->fn(c->inner->ud, ptr, osize, nsize);
    if (ptr) {
        c->frees += nsize == 0 || q;
        if (nsize == 0 || q)
            c->live_bytes -= osize;
    }
    if (nsize && q) {
        c->allocs++;
        c->live_bytes += nsize;
        if (c->live_bytes > c->peak_bytes)
            c->peak_bytes = c->live_bytes;
    }
    return q;
}

void bench_count_init(bench_count_t *c, const khl_allocator_t *inner)
{
    memset(c, 0, sizeof *c);
    c->inner = inner;
    c->a.fn = count_allocf;
    c->a.ud = c;
}
