/* alloc.h: the allocators a benchmark runs its tables on.  "libc" is the
 * malloc the binary is linked with (glibc, tcmalloc, jemalloc or mimalloc),
 * reached through khl_libc_allocator; "pool" is a khl_pool on top of it.
 * Calls and bytes are counted in separate, untimed passes through
 * support/check_alloc.h, so the timed runs pay nothing for it. */
#ifndef KHL_BENCH_ALLOC_H
#define KHL_BENCH_ALLOC_H

#include "bench.h"
#include "khashlite/khashlite.h"
#include "khashlite/khl_pool.h"

/* The allocator tables should use for o->alloc.  For "pool", one pool per
 * call to bench_alloc_open, released by bench_alloc_close. */
typedef struct bench_alloc {
    khl_allocator_t a;
    khl_pool_t *pool;        /* NULL for libc */
} bench_alloc_t;

int  bench_alloc_open(bench_alloc_t *ba, const bench_opts_t *o);   /* 0 or -1 */
void bench_alloc_close(bench_alloc_t *ba);

/* A khl_pool with default options but thread_safe; NULL on failure. */
khl_pool_t *bench_pool_new(int thread_safe);

#endif
