/* test_pool_inline.c: the inline fast paths of khl_pool_inline.h, switched
 * on as a program would (KHL_POOL_INLINE before khl_pool.h).  They must give
 * the same blocks and counts as the library's calls, mixed with them on one
 * pool, plain or thread-safe (on several threads at once), and fall back to
 * the library for checked pools, large requests and the thread caches'
 * slow paths. */
#define _POSIX_C_SOURCE 200809L   /* pthread barriers under -std=c11 */
#define KHL_POOL_INLINE
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "khashlite/khl_pool.h"
#include "support.h"

/* Through pointers: the library's out-of-line functions. */
static void *(*volatile lib_alloc)(khl_pool_t *, size_t) = khl_pool_alloc;
static void (*volatile lib_free)(khl_pool_t *, void *, size_t) = khl_pool_free;

static khl_pool_t *pool_of(int ts, int checked)
{
    khl_pool_options_t o;
    memset(&o, 0, sizeof o);
    o.thread_safe = ts;
    o.checked = checked;
    khl_pool_t *p = khl_pool_new(&o);
    cr_assert_not_null(p);
    return p;
}

/* Random sizes (small and large), inline and library calls interleaved,
 * sized and unsized frees; contents, stats and invariants checked. */
static void mixed_run(khl_pool_t *p)
{
    enum { N = 256 };
    unsigned char *b[N] = {0};
    size_t n[N] = {0};
    uint64_t s = 7, live = 0;
    for (int op = 0; op < 20000; op++) {
        uint64_t r = prng_next(&s);
        size_t i = (size_t)(r % N);
        if (!b[i]) {
            n[i] = r % 16 == 0 ? 20000 + (size_t)(r >> 40) % 5000 : 1 + (size_t)(r >> 32) % 600;
            b[i] = (r >> 8) & 1 ? khl_pool_alloc(p, n[i]) : lib_alloc(p, n[i]);
            cr_assert_not_null(b[i]);
            cr_assert(khl_pool_owns(p, b[i]));
            memset(b[i], (int)(i & 0xff), n[i]);
            live++;
        } else {
            for (size_t k = 0; k < n[i]; k++)
                cr_assert_eq(b[i][k], (unsigned char)(i & 0xff), "op %d: block %zu corrupted", op, i);
            switch ((r >> 9) % 3) {
            case 0: khl_pool_free(p, b[i], n[i]); break;
            case 1: khl_pool_free_unsized(p, b[i]); break;
            default: lib_free(p, b[i], n[i]);
            }
            b[i] = NULL;
            live--;
        }
        if (op % 512 == 0) {
            khl_pool_stats_t st;
            khl_pool_stats(p, &st);
            cr_assert_eq(st.allocs - st.frees, live, "op %d", op);
            cr_assert_eq(khl_pool_check(p), 0, "op %d", op);
        }
    }
    for (size_t i = 0; i < N; i++)
        if (b[i])
            khl_pool_free(p, b[i], n[i]);
    khl_pool_stats_t st;
    khl_pool_stats(p, &st);
    cr_assert_eq(st.in_use_bytes, 0);
    cr_assert_eq(st.allocs, st.frees);
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_destroy(p);
}

Test(pool_inline, plain_pool_mixed_with_library_calls)
{
    mixed_run(pool_of(0, 0));
}

Test(pool_inline, thread_safe_pool_mixed_with_library_calls)
{
    mixed_run(pool_of(1, 0));
}

Test(pool_inline, checked_pools_fall_back)
{
    mixed_run(pool_of(0, 1));
    mixed_run(pool_of(1, 1));
}

/* Threads allocating inline and freeing each other's blocks, inline, by
 * the library, sized and unsized: a thread's cache flushes full batches
 * through the library and refills from what the others published. */
enum { HANDOFF_THREADS = 3, HANDOFF_BLOCKS = 3000, HANDOFF_ROUNDS = 20 };

typedef struct handoff {
    khl_pool_t *pool;
    pthread_barrier_t *bar;
    unsigned char **mine, **theirs;
    int t;
} handoff_t;

static void *handoff_thread(void *arg)
{
    handoff_t *h = arg;
    for (int r = 0; r < HANDOFF_ROUNDS; r++) {
        for (int i = 0; i < HANDOFF_BLOCKS; i++) {
            size_t n = 16 + (size_t)((i * 7 + h->t) % 200);
            h->mine[i] = khl_pool_alloc(h->pool, n);
            if (h->mine[i])
                memset(h->mine[i], h->t + 1, n);
        }
        pthread_barrier_wait(h->bar);
        int other = (h->t + HANDOFF_THREADS - 1) % HANDOFF_THREADS;
        for (int i = 0; i < HANDOFF_BLOCKS; i++) {
            size_t n = 16 + (size_t)((i * 7 + other) % 200);
            unsigned char *b = h->theirs[i];
            if (!b || b[0] != other + 1 || b[n - 1] != other + 1)
                return (void *)1;
            if (i % 3 == 0)
                khl_pool_free(h->pool, b, n);
            else if (i % 3 == 1)
                khl_pool_free_unsized(h->pool, b);
            else
                lib_free(h->pool, b, n);
        }
        pthread_barrier_wait(h->bar);
    }
    return NULL;
}

Test(pool_inline, threads_free_each_others_blocks_inline)
{
    khl_pool_t *p = pool_of(1, 0);
    static unsigned char *blocks[HANDOFF_THREADS][HANDOFF_BLOCKS];
    pthread_barrier_t bar;
    pthread_t tid[HANDOFF_THREADS];
    handoff_t h[HANDOFF_THREADS];
    cr_assert_eq(pthread_barrier_init(&bar, NULL, HANDOFF_THREADS), 0);
    for (int t = 0; t < HANDOFF_THREADS; t++) {
        h[t] = (handoff_t){p, &bar, blocks[t], blocks[(t + HANDOFF_THREADS - 1) % HANDOFF_THREADS], t};
        cr_assert_eq(pthread_create(&tid[t], NULL, handoff_thread, &h[t]), 0);
    }
    for (int t = 0; t < HANDOFF_THREADS; t++) {
        void *rc;
        pthread_join(tid[t], &rc);
        cr_assert_null(rc, "thread %d saw another thread's block corrupted", t);
    }
    pthread_barrier_destroy(&bar);
    khl_pool_stats_t st;
    khl_pool_stats(p, &st);
    cr_assert_eq(st.allocs, (uint64_t)HANDOFF_THREADS * HANDOFF_BLOCKS * HANDOFF_ROUNDS);
    cr_assert_eq(st.frees, st.allocs);
    cr_assert_eq(st.in_use_bytes, 0);
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_destroy(p);
}

/* Full batches freed inline go where the library's would: the same
 * sequence of calls, inline on one thread-safe pool and through the
 * library on another, hands out the same blocks in the same order (as
 * indices into the first round; -1 for a block never handed out before). */
static void batch_round_trip(khl_pool_t *p, int inline_calls, int order[3000])
{
    enum { N = 1000 };
    void *b[N];
    for (int i = 0; i < N; i++)
        cr_assert_not_null(b[i] = inline_calls ? khl_pool_alloc(p, 64) : lib_alloc(p, 64));
    for (int i = 0; i < N; i++)
        inline_calls ? khl_pool_free(p, b[i], 64) : lib_free(p, b[i], 64);
    cr_assert_eq(khl_pool_check(p), 0);
    void *again[3 * N];
    for (int i = 0; i < 3 * N; i++) {
        again[i] = inline_calls ? khl_pool_alloc(p, 64) : lib_alloc(p, 64);
        order[i] = -1;
        for (int k = 0; k < N; k++)
            if (again[i] == b[k])
                order[i] = k;
    }
    for (int i = 0; i < 3 * N; i++)
        lib_free(p, again[i], 64);
    khl_pool_stats_t st;
    khl_pool_stats(p, &st);
    cr_assert_eq(st.allocs, 4 * N);
    cr_assert_eq(st.frees, 4 * N);
    cr_assert_eq(st.in_use_bytes, 0);
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_destroy(p);
}

Test(pool_inline, full_batches_freed_inline_come_back_as_the_librarys)
{
    static int by_inline[3000], by_library[3000];
    batch_round_trip(pool_of(1, 0), 1, by_inline);
    batch_round_trip(pool_of(1, 0), 0, by_library);
    int reused = 0;
    for (int i = 0; i < 3000; i++) {
        cr_assert_eq(by_inline[i], by_library[i], "allocation %d", i);
        reused += by_inline[i] >= 0;
    }
    cr_assert_eq(reused, 1000, "every freed block is handed out again");
}

/* The inline path hands out what the library would: a block freed inline
 * comes back first from the library's allocation of its class, and the
 * reverse; on a plain and on a thread-safe pool. */
static void same_free_blocks(int ts)
{
    khl_pool_t *p = pool_of(ts, 0);
    void *x = khl_pool_alloc(p, 100);
    khl_pool_free(p, x, 100);
    cr_assert_eq(lib_alloc(p, 100), x);
    lib_free(p, x, 100);
    cr_assert_eq(khl_pool_alloc(p, 100), x);
    khl_pool_free_unsized(p, x);
    cr_assert_eq(khl_pool_alloc_inline(p, 97), x);
    khl_pool_free_inline(p, x, 97);
    khl_pool_free_inline(p, NULL, 97);
    khl_pool_free_unsized_inline(p, NULL);
    cr_assert_null(khl_pool_alloc_inline(p, 0));
    khl_pool_destroy(p);
}

Test(pool_inline, same_free_blocks_as_the_library)
{
    same_free_blocks(0);
    same_free_blocks(1);
}

/* A checked pool behind the inline names still catches misuse. */
Test(pool_inline, checked_pool_double_free_aborts, .signal = SIGABRT)
{
    khl_pool_t *p = pool_of(0, 1);
    void *x = khl_pool_alloc(p, 64);
    khl_pool_free(p, x, 64);
    khl_pool_free(p, x, 64);
}

/* A table naming khl_pool_allocf_inline (KHL_INIT_ALLOC) takes the same
 * blocks from its pool as a table on the library's hook takes from another:
 * counts and bytes equal at every step, nothing left after destroy. */
KHL_INIT(hooked, uint64_t, uint64_t, 1, khl_hash_u64, khl_eq_int)
KHL_INIT_ALLOC(inlined, uint64_t, uint64_t, 1, khl_hash_u64, khl_eq_int, khl_pool_allocf_inline)

static void assert_same_pool_use(khl_pool_t *a, khl_pool_t *b, int step)
{
    khl_pool_stats_t sa, sb;
    khl_pool_stats(a, &sa);
    khl_pool_stats(b, &sb);
    cr_assert_eq(sa.allocs, sb.allocs, "step %d", step);
    cr_assert_eq(sa.frees, sb.frees, "step %d", step);
    cr_assert_eq(sa.in_use_bytes, sb.in_use_bytes, "step %d", step);
    cr_assert_eq(khl_pool_check(b), 0, "step %d", step);
}

Test(pool_inline, a_table_on_the_inline_allocf_uses_the_pool_as_the_hook_does)
{
    khl_pool_t *pa = pool_of(0, 0), *pb = pool_of(0, 0);
    khl_allocator_t al = khl_pool_allocator(pa);
    uint64_t s = 3;
    for (int life = 0; life < 200; ++life) {
        khl_t(hooked) a;
        khl_t(inlined) b;
        khl_init(hooked, &a, &al);
        khl_init(inlined, &b, pb);
        int n = life % 50 == 49 ? 20000 : 1 + life % 24;
        for (int i = 0; i < n; ++i) {
            uint64_t k = prng_next(&s);
            khl_val(hooked, &a, khl_put(hooked, &a, k, NULL)) = k;
            khl_val(inlined, &b, khl_put(inlined, &b, k, NULL)) = k;
        }
        assert_same_pool_use(pa, pb, life);
        cr_assert_eq(khl_size(inlined, &b), khl_size(hooked, &a));
        cr_assert_eq(khl_check(inlined, &b), 0);
        khl_destroy(hooked, &a);
        khl_destroy(inlined, &b);
        assert_same_pool_use(pa, pb, life);
    }
    khl_pool_stats_t st;
    khl_pool_stats(pb, &st);
    cr_assert_eq(st.in_use_bytes, 0);
    khl_pool_destroy(pa);
    khl_pool_destroy(pb);
}
