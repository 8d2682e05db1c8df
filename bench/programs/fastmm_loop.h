/* fastmm_loop.h: the loop of post 003 (docs/posts.md; FastMM against VC2008 malloc):
 * 10,000 blocks of 100 bytes allocated, then all freed in order, `rounds`
 * times.  Shared by fastmm.c (seed_fastmm: every allocator in one
 * process) and seeds.c (seed_locks: what a lock costs the pool),
 * with the adapter for the post's "critical section" case. */
#ifndef KHL_BENCH_FASTMM_LOOP_H
#define KHL_BENCH_FASTMM_LOOP_H

#include <pthread.h>
#include <stddef.h>

#include "khashlite/khl_pool.h"

enum { FASTMM_N = 10000, FASTMM_SIZE = 100 };

/* A contender's whole loop: 0, or -1 if an allocation failed (the blocks
 * taken so far are freed). */
typedef int (*fastmm_fn)(void *ctx, void **ptr, int rounds);

/* One loop per contender, so that each call is what ALLOC(ctx, n) and
 * FREE(ctx, ptr, n) make it: a direct call the compiler may inline, as in
 * the post's code, or a call through a pointer.  WRITE 1 writes one byte in
 * each block, as a program would (through volatile, so the store stays);
 * WRITE 0 is the loop as published, which never touches the blocks. */
#define DEFINE_FASTMM(NAME, ALLOC, FREE, WRITE)                          \
    static int NAME(void *ctx, void **ptr, int rounds)                   \
    {                                                                    \
        for (int r = 0; r < rounds; ++r) {                               \
            for (int i = 0; i < FASTMM_N; ++i) {                         \
                void *q = ALLOC(ctx, FASTMM_SIZE);                       \
                if (!q) {                                                \
                    for (int j = 0; j < i; ++j)                          \
                        FREE(ctx, ptr[j], FASTMM_SIZE);                  \
                    return -1;                                           \
                }                                                        \
                if (WRITE)                                               \
                    *(volatile char *)q = (char)i;                       \
                ptr[i] = q;                                              \
            }                                                            \
            for (int i = 0; i < FASTMM_N; ++i)                           \
                FREE(ctx, ptr[i], FASTMM_SIZE);                          \
        }                                                                \
        return 0;                                                        \
    }

/* khl_pool called directly. */
static inline void *fastmm_pool_alloc(void *c, size_t n)
{
    return khl_pool_alloc((khl_pool_t *)c, n);
}

static inline void fastmm_pool_free(void *c, void *ptr, size_t n)
{
    khl_pool_free((khl_pool_t *)c, ptr, n);
}

/* The post's "critical section" case: a single-threaded pool made safe by
 * taking a lock around every call. */
typedef struct locked_pool {
    pthread_mutex_t mu;
    khl_pool_t *pool;
} locked_pool_t;

static inline void *locked_pool_alloc(void *c, size_t n)
{
    locked_pool_t *lp = (locked_pool_t *)c;
    pthread_mutex_lock(&lp->mu);
    void *ptr = khl_pool_alloc(lp->pool, n);
    pthread_mutex_unlock(&lp->mu);
    return ptr;
}

static inline void locked_pool_free(void *c, void *ptr, size_t n)
{
    locked_pool_t *lp = (locked_pool_t *)c;
    pthread_mutex_lock(&lp->mu);
    khl_pool_free(lp->pool, ptr, n);
    pthread_mutex_unlock(&lp->mu);
}

#endif
