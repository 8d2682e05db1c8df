/* Tests of khl_pool (khashlite/khl_pool.h): every call, alignment of every
 * size class, reserve/trim/destroy accounting through a counting backing
 * allocator, failure injection, checked-mode aborts, a randomised
 * differential run, and khashlite tables on a pool. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "khashlite/khashlite.h"
#include "khashlite/khl_pool.h"
#include "support.h"

#define ALIGN_MAX _Alignof(max_align_t)

/* ------------------------------------------------------------------------ */
/* The backing allocator: support's check_alloc, checking every osize and
 * that the pool never resizes through its backing.                         */

typedef check_alloc_t counting_t;

static counting_t *counting_new(void)
{
    counting_t *c = malloc(sizeof *c);
    cr_assert_not_null(c);
    test_check_init(c, CHECK_SIZES | CHECK_NO_RESIZE);
    return c;
}

static khl_allocator_t counting_alloc(counting_t *c)
{
    return c->a;
}

/* Asserts the pool gave everything back. */
static void counting_free(counting_t *c)
{
    check_alloc_fini(c);
    free(c);
}

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static uint64_t rng_state;

static uint64_t rng(void)
{
    return prng_next(&rng_state);
}

static unsigned char pattern_byte(uint64_t id, size_t i)
{
    return (unsigned char)((id * 131u + i * 7u + (i >> 8)) & 0xff);
}

static void fill(void *b, size_t n, uint64_t id)
{
    unsigned char *q = b;
    size_t i;
    for (i = 0; i < n; i++)
        q[i] = pattern_byte(id, i);
}

static int check(const void *b, size_t n, uint64_t id)
{
    const unsigned char *q = b;
    size_t i;
    for (i = 0; i < n; i++)
        if (q[i] != pattern_byte(id, i))
            return 0;
    return 1;
}

static int aligned(const void *b)
{
    return (uintptr_t)b % ALIGN_MAX == 0;
}

static khl_pool_t *pool_with_limit(size_t max_small, size_t chunk, int ts, int checked,
                                   const khl_allocator_t *backing, size_t limit)
{
    khl_pool_options_t o;
    khl_pool_t *p;
    memset(&o, 0, sizeof o);
    o.max_small = max_small;
    o.chunk_bytes = chunk;
    o.thread_safe = ts;
    o.checked = checked;
    o.backing = backing;
    o.limit_bytes = limit;
    p = khl_pool_new(&o);
    cr_assert_not_null(p);
    return p;
}

static khl_pool_t *pool_with(size_t max_small, size_t chunk, int ts, int checked,
                             const khl_allocator_t *backing)
{
    return pool_with_limit(max_small, chunk, ts, checked, backing, 0);
}


/* ------------------------------------------------------------------------ */
/* Basics                                                                    */

Test(pool_basic, new_alloc_free_destroy)
{
    khl_pool_t *p = khl_pool_new(NULL);
    khl_pool_stats_t s;
    void *a, *b;
    cr_assert_not_null(p);
    s = test_pool_stats(p);
    cr_assert_eq(s.in_use_bytes, 0);
    cr_assert_eq(s.system_bytes, 0, "a new pool takes no chunk");
    a = khl_pool_alloc(p, 100);
    b = khl_pool_alloc(p, 100);
    cr_assert(a && b && a != b);
    memset(a, 1, 100);
    memset(b, 2, 100);
    s = test_pool_stats(p);
    cr_assert_eq(s.allocs, 2);
    cr_assert_eq(s.in_use_bytes, 2 * khl_pool_block_size(p, a));
    cr_assert_gt(s.system_bytes, 0);
    khl_pool_free(p, a, 100);
    khl_pool_free_unsized(p, b);
    s = test_pool_stats(p);
    cr_assert_eq(s.frees, 2);
    cr_assert_eq(s.in_use_bytes, 0);
    cr_assert_eq(s.peak_bytes, 2 * khl_pool_block_size(p, khl_pool_alloc(p, 100)));
    khl_pool_destroy(p);
    khl_pool_destroy(NULL);
}

Test(pool_basic, zero_and_huge_requests)
{
    khl_pool_t *p = khl_pool_new(NULL);
    khl_pool_stats_t s;
    cr_assert_null(khl_pool_alloc(p, 0));
    cr_assert_null(khl_pool_alloc(p, SIZE_MAX));
    cr_assert_null(khl_pool_alloc(p, SIZE_MAX - 4096));
    if (sizeof(size_t) >= 8)            /* 2 GiB can be had where size_t is 32 bits */
        cr_assert_null(khl_pool_alloc(p, SIZE_MAX / 2));
    cr_assert_null(khl_pool_calloc(p, 0, 8));
    cr_assert_null(khl_pool_calloc(p, 8, 0));
    cr_assert_null(khl_pool_realloc(p, NULL, 0, 0));
    s = test_pool_stats(p);
    cr_assert_eq(s.allocs, 0);
    cr_assert_eq(s.frees, 0);
    cr_assert_eq(s.system_bytes, 0);
    khl_pool_free(p, NULL, 10);
    khl_pool_free_unsized(p, NULL);
    cr_assert_eq(test_pool_stats(p).frees, 0, "freeing NULL is a no-op");
    khl_pool_destroy(p);
}

Test(pool_basic, null_options_and_zero_fields_are_defaults)
{
    khl_pool_options_t o;
    khl_pool_t *p;
    void *b;
    memset(&o, 0, sizeof o);
    p = khl_pool_new(&o);
    cr_assert_not_null(p);
    b = khl_pool_alloc(p, KHL_POOL_DEFAULT_MAX_SMALL);
    cr_assert_eq(khl_pool_block_size(p, b), KHL_POOL_DEFAULT_MAX_SMALL);
    cr_assert_eq(test_pool_stats(p).large_blocks, 0, "max_small itself is small");
    khl_pool_free(p, b, KHL_POOL_DEFAULT_MAX_SMALL);
    b = khl_pool_alloc(p, KHL_POOL_DEFAULT_MAX_SMALL + 1);
    cr_assert_eq(test_pool_stats(p).large_blocks, 1);
    khl_pool_free(p, b, KHL_POOL_DEFAULT_MAX_SMALL + 1);
    khl_pool_destroy(p);
}

/* Every size 1..max_small: aligned, at least n usable bytes, bounded waste. */
static void every_size(khl_pool_t *p, size_t max_small)
{
    size_t n;
    for (n = 1; n <= max_small; n++) {
        unsigned char *b = khl_pool_alloc(p, n);
        size_t bs;
        cr_assert_not_null(b, "size %zu", n);
        cr_assert(aligned(b), "size %zu: %p not aligned to max_align_t", n, (void *)b);
        bs = khl_pool_block_size(p, b);
        cr_assert_geq(bs, n, "size %zu", n);
        cr_assert_leq(bs, n < 128 ? n + 15 : n + n / 4, "size %zu: class %zu wastes too much", n, bs);
        cr_assert_eq(bs % ALIGN_MAX, 0);
        memset(b, 0x5a, bs);
        if (n % 2)
            khl_pool_free(p, b, n);
        else
            khl_pool_free_unsized(p, b);
    }
    cr_assert_eq(test_pool_stats(p).in_use_bytes, 0);
}

Test(pool_basic, alignment_of_every_size_class)
{
    khl_pool_t *p = khl_pool_new(NULL);
    every_size(p, KHL_POOL_DEFAULT_MAX_SMALL);
    khl_pool_destroy(p);
    p = pool_with(1000, 0, 0, 0, NULL);   /* not a class boundary */
    every_size(p, 1000);
    cr_assert_eq(khl_pool_block_size(p, khl_pool_alloc(p, 1000)), 1008);
    khl_pool_destroy(p);
    p = pool_with(64 * 1024, 64 * 1024, 0, 1, NULL);  /* chunk grows to fit 8 blocks */
    every_size(p, 64 * 1024);
    khl_pool_destroy(p);
}

Test(pool_basic, many_blocks_are_distinct_and_hold_their_contents)
{
    enum { N = 5000 };
    static void *b[N];
    khl_pool_t *p = khl_pool_new(NULL);
    size_t i;
    for (i = 0; i < N; i++) {
        size_t n = 1 + i % 300;
        b[i] = khl_pool_alloc(p, n);
        cr_assert_not_null(b[i]);
        fill(b[i], n, i);
    }
    for (i = 0; i < N; i++)
        cr_assert(check(b[i], 1 + i % 300, i), "block %zu corrupted", i);
    for (i = 0; i < N; i++) {
        if (i % 3)
            khl_pool_free(p, b[i], 1 + i % 300);
        else
            khl_pool_free_unsized(p, b[i]);
    }
    cr_assert_eq(test_pool_stats(p).in_use_bytes, 0);
    cr_assert_eq(test_pool_stats(p).allocs, N);
    cr_assert_eq(test_pool_stats(p).frees, N);
    khl_pool_destroy(p);
}

Test(pool_basic, sized_and_unsized_free_mixed_with_large)
{
    counting_t *c = counting_new();
    khl_allocator_t a = counting_alloc(c);
    khl_pool_t *p = pool_with(0, 0, 0, 0, &a);
    size_t sizes[] = {1, 16, 17, 100, 128, 129, 1000, 4096, 16384, 16385, 50000, 300000};
    void *b[12];
    size_t i, expect = 0;
    for (i = 0; i < 12; i++) {
        b[i] = khl_pool_alloc(p, sizes[i]);
        cr_assert_not_null(b[i]);
        cr_assert(aligned(b[i]));
        fill(b[i], sizes[i], i);
        expect += sizes[i] > KHL_POOL_DEFAULT_MAX_SMALL ? sizes[i] : khl_pool_block_size(p, b[i]);
    }
    cr_assert_eq(test_pool_stats(p).in_use_bytes, expect);
    cr_assert_eq(test_pool_stats(p).large_blocks, 3);
    cr_assert_eq(khl_pool_block_size(p, b[11]), 300000);
    for (i = 0; i < 12; i++) {
        cr_assert(check(b[i], sizes[i], i));
        if (i % 2)
            khl_pool_free_unsized(p, b[i]);
        else
            khl_pool_free(p, b[i], sizes[i]);
    }
    cr_assert_eq(test_pool_stats(p).in_use_bytes, 0);
    cr_assert_eq(test_pool_stats(p).large_blocks, 0);
    khl_pool_trim(p);
    cr_assert_eq(test_pool_stats(p).system_bytes, 0);
    khl_pool_destroy(p);
    cr_assert_eq(c->live_bytes, 0);
    counting_free(c);
}

Test(pool_basic, calloc_zeroes_and_checks_overflow)
{
    khl_pool_t *p = khl_pool_new(NULL);
    unsigned char *b = khl_pool_alloc(p, 200), *z;
    size_t i;
    memset(b, 0xab, 200);
    khl_pool_free(p, b, 200);
    z = khl_pool_calloc(p, 25, 8);
    cr_assert_eq(z, b, "the freed block is reused, so zeroing is really tested");
    for (i = 0; i < 200; i++)
        cr_assert_eq(z[i], 0);
    cr_assert_eq(test_pool_stats(p).allocs, 2, "calloc counts as an alloc");
    cr_assert_null(khl_pool_calloc(p, SIZE_MAX / 2 + 1, 2));
    cr_assert_null(khl_pool_calloc(p, 2, SIZE_MAX / 2 + 1));
    cr_assert_null(khl_pool_calloc(p, SIZE_MAX, SIZE_MAX));
    cr_assert_eq(test_pool_stats(p).allocs, 2);
    z = khl_pool_calloc(p, 1000, 100);   /* large */
    for (i = 0; i < 100000; i++)
        cr_assert_eq(z[i], 0);
    khl_pool_free(p, z, 100000);
    khl_pool_destroy(p);
}

/* ------------------------------------------------------------------------ */
/* realloc                                                                   */

static void realloc_walk(khl_pool_t *p, int unsized)
{
    size_t sizes[] = {1, 17, 100, 112, 1000, 5000, 16384, 16385, 40000, 200000,
                      150000, 40000, 16384, 3000, 100, 5, 1};
    size_t i, cur = sizes[0];
    unsigned char *b = khl_pool_alloc(p, cur);
    fill(b, cur, 7);
    for (i = 1; i < sizeof sizes / sizeof *sizes; i++) {
        size_t n = sizes[i], keep = cur < n ? cur : n;
        unsigned char *q = unsized ? khl_pool_realloc_unsized(p, b, n)
                                   : khl_pool_realloc(p, b, cur, n);
        cr_assert_not_null(q, "realloc %zu -> %zu", cur, n);
        cr_assert(aligned(q));
        cr_assert(check(q, keep, 7), "realloc %zu -> %zu lost contents", cur, n);
        cr_assert_geq(khl_pool_block_size(p, q), n);
        fill(q, n, 7);
        b = q;
        cur = n;
    }
    /* Size 0 frees, as realloc's callers expect. */
    cr_assert_null(unsized ? khl_pool_realloc_unsized(p, b, 0) : khl_pool_realloc(p, b, cur, 0));
    cr_assert_eq(test_pool_stats(p).in_use_bytes, 0);
    cr_assert_eq(test_pool_stats(p).allocs, test_pool_stats(p).frees);
}

Test(pool_realloc, across_classes_and_large_sized)
{
    khl_pool_t *p = khl_pool_new(NULL);
    realloc_walk(p, 0);
    khl_pool_destroy(p);
}

Test(pool_realloc, across_classes_and_large_unsized)
{
    khl_pool_t *p = khl_pool_new(NULL);
    realloc_walk(p, 1);
    khl_pool_destroy(p);
}

Test(pool_realloc, checked_and_thread_safe_pools)
{
    khl_pool_t *p = pool_with(0, 0, 1, 1, NULL);
    realloc_walk(p, 0);
    realloc_walk(p, 1);
    khl_pool_destroy(p);
    p = pool_with(0, 0, 1, 0, NULL);
    realloc_walk(p, 0);
    khl_pool_destroy(p);
}

Test(pool_realloc, counts_moves_and_not_in_place)
{
    khl_pool_t *p = khl_pool_new(NULL);
    khl_pool_stats_t s0, s1;
    void *b = khl_pool_realloc(p, NULL, 0, 100);   /* NULL ptr: alloc */
    void *q;
    cr_assert_not_null(b);
    s0 = test_pool_stats(p);
    cr_assert_eq(s0.allocs, 1);
    q = khl_pool_realloc(p, b, 100, 110);   /* same class (112) */
    cr_assert_eq(q, b);
    s1 = test_pool_stats(p);
    cr_assert_eq(s1.allocs, s0.allocs);
    cr_assert_eq(s1.frees, s0.frees);
    q = khl_pool_realloc(p, b, 110, 500);   /* moves */
    cr_assert_neq(q, b);
    s1 = test_pool_stats(p);
    cr_assert_eq(s1.allocs, s0.allocs + 1);
    cr_assert_eq(s1.frees, s0.frees + 1);
    cr_assert_eq(s1.in_use_bytes, khl_pool_block_size(p, q));
    b = khl_pool_realloc(p, q, 500, 100000);  /* to large */
    q = khl_pool_realloc(p, b, 100000, 90000);  /* large shrink, in place */
    cr_assert_eq(q, b);
    cr_assert_eq(khl_pool_block_size(p, q), 90000);
    cr_assert_eq(test_pool_stats(p).in_use_bytes, 90000);
    cr_assert_eq(test_pool_stats(p).allocs, s0.allocs + 2);
    cr_assert_null(khl_pool_realloc(p, q, 90000, 0));   /* nsize 0: free */
    cr_assert_eq(test_pool_stats(p).in_use_bytes, 0);
    cr_assert_eq(test_pool_stats(p).frees, test_pool_stats(p).allocs);
    khl_pool_destroy(p);
}

Test(pool_realloc, failure_leaves_block_untouched)
{
    counting_t *c = counting_new();
    khl_allocator_t a = counting_alloc(c);
    khl_pool_t *p = pool_with(0, 0, 0, 0, &a);
    unsigned char *b = khl_pool_alloc(p, 100);
    khl_pool_stats_t s;
    fill(b, 100, 3);
    s = test_pool_stats(p);
    c->fail_at = c->attempts + 1;
    c->fail_after = 1;
    cr_assert_null(khl_pool_realloc(p, b, 100, 5000), "new class needs a chunk");
    cr_assert_null(khl_pool_realloc(p, b, 100, 100000), "large needs the system");
    cr_assert_null(khl_pool_realloc_unsized(p, b, 100000));
    cr_assert(check(b, 100, 3));
    cr_assert_eq(test_pool_stats(p).allocs, s.allocs);
    cr_assert_eq(test_pool_stats(p).in_use_bytes, s.in_use_bytes);
    cr_assert(khl_pool_owns(p, b));
    khl_pool_free(p, b, 100);
    khl_pool_destroy(p);
    cr_assert_eq(c->live_bytes, 0);
    counting_free(c);
}

/* ------------------------------------------------------------------------ */
/* owns, block_size                                                          */

Test(pool_owns, live_blocks_yes_other_memory_no)
{
    khl_pool_t *p = khl_pool_new(NULL), *other = khl_pool_new(NULL);
    static char static_buf[256];
    char stack_buf[64];
    char *m = malloc(100);
    char *small = khl_pool_alloc(p, 100), *large = khl_pool_alloc(p, 100000);
    char *theirs = khl_pool_alloc(other, 100);
    cr_assert_eq(khl_pool_owns(p, small), 1);
    cr_assert_eq(khl_pool_owns(p, large), 1);
    cr_assert_eq(khl_pool_owns(p, stack_buf), 0);
    cr_assert_eq(khl_pool_owns(p, static_buf), 0);
    cr_assert_eq(khl_pool_owns(p, m), 0);
    cr_assert_eq(khl_pool_owns(p, NULL), 0);
    cr_assert_eq(khl_pool_owns(p, theirs), 0);
    cr_assert_eq(khl_pool_owns(other, small), 0);
    cr_assert_eq(khl_pool_owns(p, small + 16), 0, "interior pointer");
    cr_assert_eq(khl_pool_owns(p, small + 1), 0, "misaligned pointer");
    cr_assert_eq(khl_pool_owns(p, large + 16), 0, "interior of a large block");
    cr_assert_eq(khl_pool_owns(p, small + 112 * 5), 0, "never handed out");
    cr_assert_eq(khl_pool_block_size(p, small), 112);
    cr_assert_eq(khl_pool_block_size(p, large), 100000);
    khl_pool_free(p, large, 100000);
    cr_assert_eq(khl_pool_owns(p, large), 0, "a freed large block is gone");
    khl_pool_free(p, small, 100);
    khl_pool_free(other, theirs, 100);
    free(m);
    khl_pool_destroy(p);
    khl_pool_destroy(other);
}

Test(pool_owns, checked_pool_knows_freed_small_blocks)
{
    khl_pool_t *p = pool_with(0, 0, 0, 1, NULL);
    void *b = khl_pool_alloc(p, 40);
    cr_assert_eq(khl_pool_owns(p, b), 1);
    khl_pool_free(p, b, 40);
    cr_assert_eq(khl_pool_owns(p, b), 0);
    khl_pool_destroy(p);
}

/* ------------------------------------------------------------------------ */
/* reserve and trim                                                          */

Test(pool_reserve, exactly_n_allocations_touch_no_system)
{
    enum { N = 5000 };
    static void *b[N + 1];
    counting_t *c = counting_new();
    khl_allocator_t a = counting_alloc(c);
    khl_pool_t *p = pool_with(0, 0, 0, 0, &a);
    khl_pool_stats_t s;
    size_t calls, i;
    cr_assert_eq(khl_pool_reserve(p, 100, N), 0);
    s = test_pool_stats(p);
    calls = c->attempts;
    cr_assert_gt(s.system_bytes, 0);
    cr_assert_eq(s.allocs, 0, "a reserve is not an allocation");
    for (i = 0; i < N; i++) {
        b[i] = khl_pool_alloc(p, 97 + i % 16);   /* all in the 112-byte class */
        cr_assert_not_null(b[i]);
    }
    cr_assert_eq(test_pool_stats(p).system_bytes, s.system_bytes, "no new system memory");
    cr_assert_eq(c->attempts, calls, "no backing call");
    for (i = 0; i < N; i++)
        khl_pool_free(p, b[i], 97 + i % 16);
    khl_pool_destroy(p);
    cr_assert_eq(c->live_bytes, 0);
    counting_free(c);
}

Test(pool_reserve, reserves_add_up_and_trim_keeps_them)
{
    enum { N = 3000 };
    static void *b[2 * N];
    counting_t *c = counting_new();
    khl_allocator_t a = counting_alloc(c);
    khl_pool_t *p = pool_with(0, 0, 0, 0, &a);
    size_t sys, calls, i;
    /* some churn first, so part of the reserve is free-list blocks */
    for (i = 0; i < 1000; i++)
        b[i] = khl_pool_alloc(p, 64);
    for (i = 0; i < 1000; i++)
        khl_pool_free(p, b[i], 64);
    cr_assert_eq(khl_pool_reserve(p, 64, N), 0);
    cr_assert_eq(khl_pool_reserve(p, 50, N), 0);   /* same class: adds up */
    khl_pool_trim(p);
    sys = test_pool_stats(p).system_bytes;
    calls = c->attempts;
    cr_assert_geq(sys, 2 * N * 64);
    for (i = 0; i < 2 * N; i++) {
        b[i] = khl_pool_alloc(p, 64);
        cr_assert_not_null(b[i]);
        if (i == N)
            khl_pool_trim(p);   /* keeps what is still reserved */
    }
    cr_assert_eq(test_pool_stats(p).system_bytes, sys);
    cr_assert_eq(c->attempts, calls);
    for (i = 0; i < 2 * N; i++)
        khl_pool_free(p, b[i], 64);
    khl_pool_trim(p);   /* reserve used up: everything can go */
    cr_assert_eq(test_pool_stats(p).system_bytes, 0);
    cr_assert_eq(test_pool_stats(p).chunks, 0);
    khl_pool_destroy(p);
    cr_assert_eq(c->live_bytes, 0);
    counting_free(c);
}

Test(pool_reserve, invalid_requests_fail_and_reserve_nothing)
{
    khl_pool_t *p = khl_pool_new(NULL);
    cr_assert_eq(khl_pool_reserve(p, 0, 10), -1);
    cr_assert_eq(khl_pool_reserve(p, KHL_POOL_DEFAULT_MAX_SMALL + 1, 10), -1);
    cr_assert_eq(khl_pool_reserve(p, 100, SIZE_MAX), -1);
    cr_assert_eq(khl_pool_reserve(p, 100, SIZE_MAX / 64), -1);
    cr_assert_eq(khl_pool_reserve(p, 100, 0), 0);
    cr_assert_eq(test_pool_stats(p).system_bytes, 0);
    khl_pool_destroy(p);
}

Test(pool_reserve, thread_safe_pool_keeps_the_promise)
{
    enum { N = 2000 };
    static void *b[N];
    khl_pool_t *p = pool_with(0, 0, 1, 0, NULL);
    size_t sys, i;
    void *x = khl_pool_alloc(p, 200);   /* this thread's cache exists */
    khl_pool_free(p, x, 200);
    cr_assert_eq(khl_pool_reserve(p, 200, N), 0);
    sys = test_pool_stats(p).system_bytes;
    for (i = 0; i < N; i++)
        cr_assert_not_null(b[i] = khl_pool_alloc(p, 200));
    cr_assert_eq(test_pool_stats(p).system_bytes, sys);
    for (i = 0; i < N; i++)
        khl_pool_free_unsized(p, b[i]);
    khl_pool_destroy(p);
}

/* A reserve is used up by `count` allocations of its class in either mode:
 * a thread-safe pool once counted the blocks its thread cache took beyond
 * the reserve as not using it, so after 3001 allocations of a 3000-block
 * reserve, every block freed, trim still kept a chunk.  Half way, a trim
 * must still keep what is reserved. */
static void reserve_used_up(int ts)
{
    enum { N = 3000 };
    static void *b[N + 1];
    khl_pool_t *p = pool_with(0, 0, ts, 0, NULL);
    size_t sys, i;
    cr_assert_eq(khl_pool_reserve(p, 100, N), 0);
    for (i = 0; i < N / 2; i++)
        cr_assert_not_null(b[i] = khl_pool_alloc(p, 100));
    khl_pool_trim(p);
    sys = test_pool_stats(p).system_bytes;
    for (; i <= N; i++)
        cr_assert_not_null(b[i] = khl_pool_alloc(p, 100));
    cr_assert_eq(test_pool_stats(p).system_bytes, sys, "the reserve held across the trim");
    for (i = 0; i < 1000000; i++) {
        void *x = khl_pool_alloc(p, 100);
        cr_assert_not_null(x);
        khl_pool_free(p, x, 100);
    }
    for (i = 0; i <= N; i++)
        khl_pool_free(p, b[i], 100);
    khl_pool_trim(p);
    cr_assert_eq(test_pool_stats(p).system_bytes, 0, "thread_safe=%d: trim kept %zu bytes", ts,
                 test_pool_stats(p).system_bytes);
    cr_assert_eq(test_pool_stats(p).chunks, 0);
    khl_pool_destroy(p);
}

Test(pool_reserve, used_up_then_trimmed_single_threaded)
{
    reserve_used_up(0);
}

Test(pool_reserve, used_up_then_trimmed_thread_safe)
{
    reserve_used_up(1);
}

/* A reserve whose allocations all come from blocks freed after it never
 * touches the chunks it took: once it is used up, a trim gives them back,
 * and they leave the list of reserved chunks with it, so later
 * allocations take chunks the pool still holds. */
static void reserved_chunks_never_used(int checked)
{
    enum { N = 3000 };
    static void *b[3 * N];
    khl_pool_t *p = pool_with(0, 0, 0, checked, NULL);
    size_t i, before;
    for (i = 0; i < N; i++)
        cr_assert_not_null(b[i] = khl_pool_alloc(p, 100));
    before = test_pool_stats(p).system_bytes;
    cr_assert_eq(khl_pool_reserve(p, 100, N), 0);
    cr_assert_gt(test_pool_stats(p).system_bytes, before, "the reserve took chunks");
    for (i = 0; i < N; i++)
        khl_pool_free(p, b[i], 100);
    for (i = 0; i < N; i++)   /* the freed blocks: the reserve is used up */
        cr_assert_not_null(b[i] = khl_pool_alloc(p, 100));
    khl_pool_trim(p);
    cr_assert_eq(test_pool_stats(p).system_bytes, before, "the reserve's chunks went back");
    cr_assert_eq(khl_pool_check(p), 0);
    for (i = N; i < 3 * N; i++) {
        cr_assert_not_null(b[i] = khl_pool_alloc(p, 100));
        fill(b[i], 100, i);
    }
    cr_assert_eq(khl_pool_check(p), 0);
    for (i = 0; i < 3 * N; i++) {
        cr_assert(i < N || check(b[i], 100, i));
        khl_pool_free(p, b[i], 100);
    }
    khl_pool_trim(p);
    cr_assert_eq(test_pool_stats(p).system_bytes, 0);
    khl_pool_destroy(p);
}

Test(pool_trim, reserved_chunks_never_used_go_back)
{
    reserved_chunks_never_used(0);
}

Test(pool_trim, reserved_chunks_never_used_go_back_checked)
{
    reserved_chunks_never_used(1);
}

Test(pool_trim, returns_wholly_free_chunks_only)
{
    enum { N = 20000 };
    static void *b[N];
    counting_t *c = counting_new();
    khl_allocator_t a = counting_alloc(c);
    khl_pool_t *p = pool_with(0, 64 * 1024, 0, 0, &a);
    khl_pool_stats_t s;
    size_t i, full;
    for (i = 0; i < N; i++)
        b[i] = khl_pool_alloc(p, 100);
    full = test_pool_stats(p).system_bytes;
    cr_assert_gt(test_pool_stats(p).chunks, 10);
    for (i = 0; i < N; i++)
        if (i < N / 2 || i % 1000)   /* keep one block in every ~1000 of the second half */
            khl_pool_free(p, b[i], 100);
    khl_pool_trim(p);
    s = test_pool_stats(p);
    cr_assert_lt(s.system_bytes, full, "free chunks went back");
    cr_assert_gt(s.system_bytes, 0, "chunks with a live block stay");
    cr_assert_eq(c->live_bytes, s.system_bytes + s.meta_bytes);
    for (i = N / 2; i < N; i += 1000) {
        cr_assert(khl_pool_owns(p, b[i]));
        fill(b[i], 100, i);
    }
    /* the pool still works after a trim */
    for (i = 0; i < N / 2; i++)
        b[i] = khl_pool_alloc(p, 100);
    for (i = 0; i < N / 2; i++)
        khl_pool_free(p, b[i], 100);
    for (i = N / 2; i < N; i += 1000) {
        cr_assert(check(b[i], 100, i));
        khl_pool_free_unsized(p, b[i]);
    }
    khl_pool_trim(p);
    cr_assert_eq(test_pool_stats(p).system_bytes, 0);
    cr_assert_eq(test_pool_stats(p).in_use_bytes, 0);
    khl_pool_destroy(p);
    cr_assert_eq(c->live_bytes, 0);
    counting_free(c);
}

static int cmp_addr(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

/* A trim that gives back chunks mapped side by side (as the pool places
 * its chunks, one below the other) unmaps each run of them in one system
 * call, not one per chunk: on a VM an munmap of touched pages costs tens of
 * microseconds.  Blocks of growing sizes until 12 classes have a chunk
 * each; the expected count is the number of runs their addresses form. */
Test(pool_trim, side_by_side_chunks_leave_in_one_call)
{
    enum { CHUNKS = 12 };
    const size_t chunk = 64 * 1024;
    khl_pool_t *p = pool_with(4096, chunk, 0, 0, NULL);
    void *b[CHUNKS];
    size_t size[CHUNKS], n = 0, s, i, runs = 1;
    uintptr_t base[CHUNKS];
    uint64_t calls;
    for (s = 16; n < CHUNKS && s <= 4096; s += 16) {
        size_t had = test_pool_stats(p).chunks;
        void *q = khl_pool_alloc(p, s);
        cr_assert_not_null(q);
        fill(q, s, s);   /* every chunk has a touched page */
        if (test_pool_stats(p).chunks == had) {
            khl_pool_free(p, q, s);
            continue;
        }
        b[n] = q;
        size[n] = s;
        base[n++] = (uintptr_t)q & ~(uintptr_t)(chunk - 1);
    }
    cr_assert_eq(n, CHUNKS);
    qsort(base, CHUNKS, sizeof base[0], cmp_addr);
    for (i = 1; i < CHUNKS; i++)
        runs += base[i] != base[i - 1] + chunk;
    cr_assert_lt(runs, CHUNKS, "the chunks were mapped apart: nothing to join");
    for (i = 0; i < CHUNKS; i++)
        khl_pool_free(p, b[i], size[i]);
    calls = test_pool_stats(p).system_calls;
    khl_pool_trim(p);
    cr_assert_eq(test_pool_stats(p).chunks, 0);
    cr_assert_eq(test_pool_stats(p).system_bytes, 0);
    cr_assert_eq(test_pool_stats(p).system_calls - calls, runs, "%llu munmaps for %zu runs of chunks",
                 (unsigned long long)(test_pool_stats(p).system_calls - calls), runs);
    khl_pool_destroy(p);
}

/* ------------------------------------------------------------------------ */
/* Free blocks are kept in bundles (free blocks holding pointers to others):  */
/* every freed block must come back exactly once, across bundle boundaries,  */
/* and a trim must drop exactly the blocks of the chunks it releases.         */

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
    return x < y ? -1 : x > y;
}

Test(pool_bundles, freed_blocks_come_back_exactly_once)
{
    enum { K = 700 };
    /* 16 B holds one pointer per bundle, 16 KiB two thousand: both extremes */
    static const size_t sizes[] = {16, 48, 100, 1000, 16384};
    static void *got[K], *back[K];
    size_t si, i;
    rng_state = 0x9e3779b97f4a7c15u;
    for (si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        size_t n = sizes[si];
        khl_pool_t *p = pool_with(16384, 0, 0, 0, NULL);
        khl_pool_stats_t before, after;
        for (i = 0; i < K; i++)
            got[i] = khl_pool_alloc(p, n);
        for (i = K - 1; i > 0; i--) {   /* free in a shuffled order */
            size_t j = (size_t)(rng() % (i + 1));
            void *t = got[i];
            got[i] = got[j];
            got[j] = t;
        }
        for (i = 0; i < K; i++) {
            if (i % 3)
                khl_pool_free(p, got[i], n);
            else
                khl_pool_free_unsized(p, got[i]);
        }
        before = test_pool_stats(p);
        cr_assert_eq(before.in_use_bytes, 0);
        for (i = 0; i < K; i++) {
            back[i] = khl_pool_alloc(p, n);
            cr_assert_not_null(back[i]);
            fill(back[i], n, i);   /* a block still listed in a bundle would be overwritten */
        }
        after = test_pool_stats(p);
        cr_assert_eq(after.system_bytes, before.system_bytes, "size %zu: reuse took no new memory", n);
        for (i = 0; i < K; i++)
            cr_assert(check(back[i], n, i), "size %zu: block %zu handed out twice", n, i);
        qsort(got, K, sizeof *got, cmp_ptr);
        qsort(back, K, sizeof *back, cmp_ptr);
        for (i = 0; i < K; i++)
            cr_assert_eq(back[i], got[i], "size %zu: the blocks freed are the blocks reused", n);
        cr_assert_eq(after.allocs, 2 * K);
        cr_assert_eq(after.frees, K);
        khl_pool_destroy(p);
    }
}

Test(pool_bundles, trim_keeps_no_block_of_a_released_chunk)
{
    enum { N = 6000 };
    static void *b[N];
    counting_t *c = counting_new();
    khl_allocator_t a = counting_alloc(c);
    khl_pool_t *p = pool_with(0, 16 * 1024, 0, 0, &a);
    size_t i, kept = 0, reused = 0, system;
    for (i = 0; i < N; i++)
        b[i] = khl_pool_alloc(p, 100);
    /* Free in an order that mixes blocks of every chunk in each bundle, and
     * keep one block live in every fourth group of 300 (~2 chunks). */
    for (i = 0; i < N; i++) {
        size_t k = (i * 7919) % N;
        if ((k / 300) % 4 == 0 && k % 300 == 0) {
            kept++;
            continue;
        }
        khl_pool_free(p, b[k], 100);
        b[k] = NULL;
    }
    khl_pool_trim(p);
    system = test_pool_stats(p).system_bytes;
    cr_assert_gt(system, 0);
    /* Every block handed out before the pool needs a new chunk must be one of
     * the surviving chunks' (the others' memory is back with `backing`). */
    for (;;) {
        void *q = khl_pool_alloc(p, 100);
        cr_assert_not_null(q);
        if (test_pool_stats(p).system_bytes != system) {
            khl_pool_free(p, q, 100);
            break;
        }
        cr_assert(khl_pool_owns(p, q));
        for (i = 0; i < N; i++)
            cr_assert_neq(q, b[i], "a live block was handed out again");
        fill(q, 100, reused);
        reused++;
        cr_assert_lt(reused, (size_t)N, "more free blocks than the pool ever had");
    }
    cr_assert_gt(reused, 0);
    cr_assert_eq(test_pool_stats(p).in_use_bytes, (kept + reused) * khl_pool_block_size(p, b[0]));
    khl_pool_destroy(p);
    cr_assert_eq(c->live_bytes, 0);
    counting_free(c);
}

/* ------------------------------------------------------------------------ */
/* destroy, failures                                                         */

Test(pool_destroy, returns_every_byte_to_backing)
{
    counting_t *c = counting_new();
    khl_allocator_t a = counting_alloc(c);
    int mode;
    for (mode = 0; mode < 4; mode++) {
        khl_pool_t *p = pool_with(0, 0, mode & 1, mode >> 1, &a);
        size_t i;
        for (i = 0; i < 3000; i++)
            cr_assert_not_null(khl_pool_alloc(p, 1 + (i * 37) % 20000));   /* never freed */
        cr_assert_eq(khl_pool_reserve(p, 30, 5000), 0);
        cr_assert_gt(c->live_bytes, 0);
        khl_pool_destroy(p);
        cr_assert_eq(c->live_bytes, 0, "mode %d leaked %zu bytes", mode, c->live_bytes);
        cr_assert_eq(c->live_blocks, 0);
    }
    counting_free(c);
}

Test(pool_failure, new_fails_cleanly)
{
    counting_t *c = counting_new();
    khl_allocator_t a = counting_alloc(c);
    khl_pool_options_t o;
    memset(&o, 0, sizeof o);
    o.backing = &a;
    c->fail_at = 1;
    cr_assert_null(khl_pool_new(&o));
    cr_assert_eq(c->live_bytes, 0);
    counting_free(c);
}

/* A workload of allocations small and large, reserves and realloc growth
 * whose k-th backing call fails (k 0: none).  A call that reports failure
 * must leave every stats field as it was - meta_bytes included: the chunk
 * index must not grow for a chunk that never came - and a block that failed
 * to grow keeps its contents; nothing leaks.  Returns the failures seen and
 * the backing calls made in *calls. */
static int failure_run(int ts, int checked, size_t k, size_t *calls)
{
    counting_t *c = counting_new();
    khl_allocator_t a = counting_alloc(c);
    khl_pool_t *p = pool_with(0, 16 * 1024, ts, checked, &a);
    void *live[64];
    size_t size[64], nlive = 0, step, first = c->attempts;
    char what[64];
    int failures = 0;
    c->fail_at = k ? first + k : 0;
    for (step = 0; step < 80; step++) {
        khl_pool_stats_t before = test_pool_stats(p);
        size_t n = step % 3 == 0 ? 20000 + step : 16 + step * 100;
        snprintf(what, sizeof what, "k=%zu step=%zu", k, step);
        if (step % 7 == 6) {
            int r = khl_pool_reserve(p, 16 + step * 10, 200);
            if (r < 0) {
                failures++;
                test_assert_pool_unchanged(&before, p, what);
            } else {
                cr_assert_eq(r, 0);
            }
        } else if (step % 5 == 4 && nlive) {
            /* grow the newest block: to another class, or to large */
            size_t m = size[nlive - 1] * 2 + 100;
            void *q = khl_pool_realloc(p, live[nlive - 1], size[nlive - 1], m);
            if (!q) {
                failures++;
                test_assert_pool_unchanged(&before, p, what);
                cr_assert(check(live[nlive - 1], size[nlive - 1], nlive - 1), "%s", what);
            } else {
                cr_assert(check(q, size[nlive - 1], nlive - 1), "%s", what);
                live[nlive - 1] = q;
                size[nlive - 1] = m;
                fill(q, m, nlive - 1);
            }
        } else if ((live[nlive] = khl_pool_alloc(p, n)) == NULL) {
            failures++;
            test_assert_pool_unchanged(&before, p, what);
        } else {
            cr_assert_eq(test_pool_stats(p).allocs, before.allocs + 1);
            size[nlive] = n;
            fill(live[nlive], n, nlive);
            nlive++;
        }
        cr_assert_eq(khl_pool_check(p), 0, "%s: pool invariant broken", what);
    }
    *calls = c->attempts - first;
    while (nlive) {
        nlive--;
        cr_assert(check(live[nlive], size[nlive], nlive));
        khl_pool_free_unsized(p, live[nlive]);
    }
    cr_assert_eq(test_pool_stats(p).in_use_bytes, 0);
    khl_pool_destroy(p);
    cr_assert_eq(c->live_bytes, 0, "k=%zu leaked", k);
    counting_free(c);
    return failures;
}

/* Fails each backing call the workload makes, one run per call.  Where a
 * large block has room to grow in place depends on the address backing
 * gave, so runs differ in how many calls they make: a run that never
 * reaches its k-th call must see no failure. */
static void failure_sweep(int ts, int checked)
{
    size_t k, total, calls;
    cr_assert_eq(failure_run(ts, checked, 0, &total), 0);
    cr_assert_gt(total, 20, "the workload makes only %zu backing calls", total);
    for (k = 1; k <= total; k++) {
        int failures = failure_run(ts, checked, k, &calls);
        cr_assert_eq(failures, calls >= k, "k=%zu: %d failures reported in %zu backing calls", k,
                     failures, calls);
        if (calls > total)
            total = calls;
    }
}

Test(pool_failure, kth_backing_call_fails_single_threaded)
{
    failure_sweep(0, 0);
}

Test(pool_failure, kth_backing_call_fails_checked)
{
    failure_sweep(0, 1);
}

Test(pool_failure, kth_backing_call_fails_thread_safe)
{
    failure_sweep(1, 0);
}

Test(pool_failure, reserve_failure_reserves_nothing)
{
    counting_t *c = counting_new();
    khl_allocator_t a = counting_alloc(c);
    khl_pool_t *p = pool_with(2000, 16 * 1024, 0, 0, &a);
    khl_pool_stats_t s;
    c->fail_at = c->attempts + 3;   /* the third chunk of the reserve fails */
    s = test_pool_stats(p);
    cr_assert_eq(khl_pool_reserve(p, 100, 1000), -1);
    test_assert_pool_unchanged(&s, p, "failed reserve");   /* chunks and index growth undone */
    cr_assert_eq(test_pool_stats(p).chunks, 0);
    khl_pool_destroy(p);
    cr_assert_eq(c->live_bytes, 0);
    counting_free(c);
}

/* ------------------------------------------------------------------------ */
/* limit_bytes                                                               */

/* Fills a pool limited to three chunks (mmap: a chunk costs exactly
 * chunk_bytes) with 100-byte blocks; then every kind of call that needs more
 * system memory fails with the pool unchanged, and after everything is freed
 * and trimmed the whole limit is usable again. */
static void limit_holds(int ts, int checked)
{
    enum { MAX = 10000 };
    static void *b[MAX];
    const size_t limit = 3 * KHL_POOL_DEFAULT_CHUNK_BYTES;
    khl_pool_t *p = pool_with_limit(0, 0, ts, checked, NULL, limit);
    khl_pool_stats_t s;
    size_t n = 0, i;
    while (n < MAX && (b[n] = khl_pool_alloc(p, 100)) != NULL)
        fill(b[n], 100, n), n++;
    cr_assert_lt(n, MAX, "the limit never stopped allocation");
    s = test_pool_stats(p);
    cr_assert_eq(s.system_bytes, limit, "ts=%d checked=%d: %zu bytes held", ts, checked, s.system_bytes);
    cr_assert_eq(s.chunks, 3);
    cr_assert_null(khl_pool_alloc(p, 100));
    test_assert_pool_unchanged(&s, p, "small alloc past the limit");
    cr_assert_null(khl_pool_alloc(p, 16));
    test_assert_pool_unchanged(&s, p, "alloc of a new class past the limit");
    cr_assert_null(khl_pool_alloc(p, 20000));
    test_assert_pool_unchanged(&s, p, "large alloc past the limit");
    cr_assert_eq(khl_pool_reserve(p, 100, 1), -1);
    test_assert_pool_unchanged(&s, p, "reserve past the limit");
    cr_assert_null(khl_pool_realloc(p, b[0], 100, 5000));
    test_assert_pool_unchanged(&s, p, "realloc growth past the limit");
    cr_assert(check(b[0], 100, 0));
    for (i = 0; i < n; i++) {
        cr_assert(check(b[i], 100, i));
        khl_pool_free(p, b[i], 100);
    }
    khl_pool_trim(p);
    cr_assert_eq(test_pool_stats(p).system_bytes, 0);
    /* the limit counts what is held now: all of it is free again */
    cr_assert_null(khl_pool_alloc(p, limit), "a block plus its header exceeds the limit");
    cr_assert_not_null(b[0] = khl_pool_alloc(p, limit - 4096));
    cr_assert_eq(test_pool_stats(p).system_bytes, limit);
    khl_pool_free_unsized(p, b[0]);
    cr_assert_eq(khl_pool_reserve(p, 100, 1000), 0);
    cr_assert_leq(test_pool_stats(p).system_bytes, limit);
    khl_pool_destroy(p);
}

typedef struct pool_mode { int ts, checked; } pool_mode_t;

ParameterizedTestParameters(pool_limit, calls_past_the_limit_fail)
{
    static pool_mode_t modes[] = {{0, 0}, {0, 1}, {1, 0}};   /* single-threaded, checked, thread-safe */
    return cr_make_param_array(pool_mode_t, modes, sizeof modes / sizeof modes[0]);
}

ParameterizedTest(pool_mode_t *m, pool_limit, calls_past_the_limit_fail)
{
    limit_holds(m->ts, m->checked);
}

/* A backing allocator's chunk costs chunk_bytes - 16 more than it holds:
 * the limit counts what backing gave (system_bytes), not chunk_bytes. */
Test(pool_limit, counts_what_backing_gave)
{
    counting_t *c = counting_new();
    khl_allocator_t a = counting_alloc(c);
    khl_pool_t *p = pool_with_limit(0, 0, 0, 0, &a, 2 * KHL_POOL_DEFAULT_CHUNK_BYTES);
    khl_pool_stats_t s;
    void *x = khl_pool_alloc(p, 100);
    cr_assert_not_null(x);
    s = test_pool_stats(p);
    cr_assert_eq(s.system_bytes, 2 * KHL_POOL_DEFAULT_CHUNK_BYTES - 16);
    cr_assert_eq(c->live_bytes, s.system_bytes + s.meta_bytes);
    cr_assert_null(khl_pool_alloc(p, 16), "a second chunk would pass the limit");
    test_assert_pool_unchanged(&s, p, "second chunk");
    khl_pool_free(p, x, 100);
    khl_pool_destroy(p);
    cr_assert_eq(c->live_bytes, 0);
    counting_free(c);
}

/* A reserve touches every page it takes, so one the system cannot back got
 * the process killed by the OOM killer instead of failing.  Past the limit,
 * or (no limit) past any machine's memory, it fails before asking the
 * system for anything: the backing allocator, which would fail every call,
 * sees none. */
Test(pool_limit, huge_reserve_fails_without_touching_memory)
{
#if SIZE_MAX <= 0xFFFFFFFFu
    cr_skip_test("needs a 64-bit size_t");
#else
    counting_t *c = counting_new();
    khl_allocator_t a = counting_alloc(c);
    khl_pool_t *limited, *unlimited;
    khl_pool_stats_t s;
    limited = pool_with_limit(0, 0, 0, 0, &a, (size_t)64 << 20);
    unlimited = pool_with(0, 0, 0, 0, &a);
    c->fail_at = c->attempts + 1;
    c->fail_after = 1;
    s = test_pool_stats(limited);
    cr_assert_eq(khl_pool_reserve(limited, 1024, (size_t)1 << 30), -1, "1 TiB past a 64 MiB limit");
    test_assert_pool_unchanged(&s, limited, "1 TiB reserve");
    s = test_pool_stats(unlimited);
    cr_assert_eq(khl_pool_reserve(unlimited, 1024, (size_t)1 << 38), -1, "256 TiB, no limit");
    test_assert_pool_unchanged(&s, unlimited, "256 TiB reserve");
    cr_assert_eq(c->attempts, c->fail_at - 1, "the system was asked for %zu blocks",
                 c->attempts - (c->fail_at - 1));
    khl_pool_destroy(limited);
    khl_pool_destroy(unlimited);
    cr_assert_eq(c->live_bytes, 0);
    counting_free(c);
#endif
}

/* ------------------------------------------------------------------------ */
/* The allocator hook                                                        */

Test(pool_allocf, lua_style_hook)
{
    khl_pool_t *p = khl_pool_new(NULL);
    khl_allocator_t a = khl_pool_allocator(p);
    char *b;
    cr_assert_eq(a.fn, khl_pool_allocf);
    cr_assert_eq(a.ud, p);
    cr_assert_null(a.fn(a.ud, NULL, 0, 0));
    cr_assert_null(a.fn(a.ud, NULL, 5, 0), "Lua passes a type tag as osize");
    cr_assert_eq(test_pool_stats(p).allocs, 0, "(NULL, 0) counts nothing");
    cr_assert_eq(test_pool_stats(p).frees, 0);
    b = a.fn(a.ud, NULL, 4 /* LUA_TTABLE */, 48);
    cr_assert_not_null(b);
    fill(b, 48, 9);
    b = a.fn(a.ud, b, 48, 4000);
    cr_assert(check(b, 48, 9));
    b = a.fn(a.ud, b, 4000, 24);
    cr_assert(check(b, 24, 9));
    cr_assert_null(a.fn(a.ud, b, 24, 0));
    cr_assert_eq(test_pool_stats(p).in_use_bytes, 0);
    cr_assert_eq(test_pool_stats(p).allocs, 3);
    cr_assert_eq(test_pool_stats(p).frees, 3);
    khl_pool_destroy(p);
}

/* ------------------------------------------------------------------------ */
/* Checked mode: one test per check                                          */

static khl_pool_t *checked_pool(void)
{
    return pool_with(0, 0, 0, 1, NULL);
}

Test(pool_checked, double_free, .signal = SIGABRT)
{
    khl_pool_t *p = checked_pool();
    void *b = khl_pool_alloc(p, 100);
    khl_pool_free(p, b, 100);
    khl_pool_free(p, b, 100);
}

Test(pool_checked, double_free_unsized, .signal = SIGABRT)
{
    khl_pool_t *p = checked_pool();
    void *b = khl_pool_alloc(p, 100);
    khl_pool_free_unsized(p, b);
    khl_pool_free_unsized(p, b);
}

Test(pool_checked, double_free_large, .signal = SIGABRT)
{
    khl_pool_t *p = checked_pool();
    void *b = khl_pool_alloc(p, 100000);
    khl_pool_free(p, b, 100000);
    khl_pool_free(p, b, 100000);
}

Test(pool_checked, foreign_pointer_stack, .signal = SIGABRT)
{
    khl_pool_t *p = checked_pool();
    max_align_t on_stack[4];
    khl_pool_alloc(p, 100);
    khl_pool_free_unsized(p, on_stack);
}

Test(pool_checked, foreign_pointer_malloc, .signal = SIGABRT)
{
    khl_pool_t *p = checked_pool();
    void *m = malloc(100);
    khl_pool_free(p, m, 100);
}

Test(pool_checked, foreign_pointer_other_pool, .signal = SIGABRT)
{
    khl_pool_t *p = checked_pool(), *q = checked_pool();
    void *b = khl_pool_alloc(q, 100);
    khl_pool_free(p, b, 100);
}

Test(pool_checked, interior_pointer, .signal = SIGABRT)
{
    khl_pool_t *p = checked_pool();
    char *b = khl_pool_alloc(p, 100);
    khl_pool_free_unsized(p, b + 16);
}

Test(pool_checked, interior_pointer_large, .signal = SIGABRT)
{
    khl_pool_t *p = checked_pool();
    char *b = khl_pool_alloc(p, 100000);
    khl_pool_free_unsized(p, b + 64);
}

Test(pool_checked, misaligned_pointer, .signal = SIGABRT)
{
    khl_pool_t *p = checked_pool();
    char *b = khl_pool_alloc(p, 100);
    khl_pool_free(p, b + 1, 99);
}

Test(pool_checked, wrong_size_other_class, .signal = SIGABRT)
{
    khl_pool_t *p = checked_pool();
    void *b = khl_pool_alloc(p, 100);
    khl_pool_free(p, b, 200);
}

Test(pool_checked, wrong_size_small_as_large, .signal = SIGABRT)
{
    khl_pool_t *p = checked_pool();
    void *b = khl_pool_alloc(p, 100);
    khl_pool_free(p, b, 100000);
}

Test(pool_checked, wrong_size_large, .signal = SIGABRT)
{
    khl_pool_t *p = checked_pool();
    void *b = khl_pool_alloc(p, 100000);
    khl_pool_free(p, b, 100001);
}

Test(pool_checked, wrong_size_zero, .signal = SIGABRT)
{
    khl_pool_t *p = checked_pool();
    void *b = khl_pool_alloc(p, 100);
    khl_pool_free(p, b, 0);
}

Test(pool_checked, realloc_of_freed_block, .signal = SIGABRT)
{
    khl_pool_t *p = checked_pool();
    void *b = khl_pool_alloc(p, 100);
    khl_pool_free(p, b, 100);
    khl_pool_realloc(p, b, 100, 300);
}

Test(pool_checked, realloc_wrong_osize, .signal = SIGABRT)
{
    khl_pool_t *p = checked_pool();
    void *b = khl_pool_alloc(p, 100);
    khl_pool_realloc(p, b, 1000, 300);
}

Test(pool_checked, block_size_of_freed_block, .signal = SIGABRT)
{
    khl_pool_t *p = checked_pool();
    void *b = khl_pool_alloc(p, 100);
    khl_pool_free(p, b, 100);
    khl_pool_block_size(p, b);
}

Test(pool_checked, thread_safe_checked_double_free, .signal = SIGABRT)
{
    khl_pool_t *p = pool_with(0, 0, 1, 1, NULL);
    void *b = khl_pool_alloc(p, 100);
    khl_pool_free(p, b, 100);
    khl_pool_free(p, b, 100);
}

Test(pool_checked, any_class_size_is_accepted)
{
    khl_pool_t *p = checked_pool();
    void *b = khl_pool_alloc(p, 100);
    khl_pool_free(p, b, 112);   /* 97..112 all name the block's class */
    b = khl_pool_alloc(p, 100);
    khl_pool_free(p, b, 97);
    khl_pool_destroy(p);
}

/* ------------------------------------------------------------------------ */
/* Randomised differential run: the pool against a shadow table            */

#define SLOTS 1500

typedef struct shadow {
    void *p;
    size_t n;
    uint64_t id;
} shadow_t;

static size_t random_size(void)
{
    uint64_t r = rng() % 1000;
    if (r < 700)
        return 1 + (size_t)(rng() % 256);
    if (r < 950)
        return 1 + (size_t)(rng() % 16384);
    if (r < 995)
        return 16385 + (size_t)(rng() % 50000);
    return 100000 + (size_t)(rng() % 300000);
}

static void differential(khl_pool_t *p, unsigned long ops, uint64_t seed)
{
    static shadow_t s[SLOTS];
    uint64_t next_id = 1;
    unsigned long op;
    size_t i, live = 0, bytes = 0;
    memset(s, 0, sizeof s);
    rng_state = seed;
    for (op = 0; op < ops; op++) {
        shadow_t *x = &s[rng() % SLOTS];
        uint64_t what = rng() % 10;
        if (!x->p) {
            x->n = random_size();
            x->id = next_id++;
            x->p = (what < 2) ? khl_pool_calloc(p, 1, x->n) : khl_pool_alloc(p, x->n);
            cr_assert_not_null(x->p);
            cr_assert(aligned(x->p));
            cr_assert(khl_pool_owns(p, x->p));
            fill(x->p, x->n, x->id);
            live++;
            bytes += khl_pool_block_size(p, x->p);
        } else if (what < 4) {
            size_t n = random_size();
            void *q;
            cr_assert(check(x->p, x->n, x->id), "op %lu: block corrupted before realloc", op);
            bytes -= khl_pool_block_size(p, x->p);
            q = (what < 2) ? khl_pool_realloc(p, x->p, x->n, n) : khl_pool_realloc_unsized(p, x->p, n);
            cr_assert_not_null(q);
            cr_assert(check(q, x->n < n ? x->n : n, x->id), "op %lu: realloc lost contents", op);
            x->p = q;
            x->n = n;
            fill(x->p, x->n, x->id);
            bytes += khl_pool_block_size(p, x->p);
        } else {
            cr_assert(check(x->p, x->n, x->id), "op %lu: block corrupted before free", op);
            bytes -= khl_pool_block_size(p, x->p);
            if (what < 7)
                khl_pool_free(p, x->p, x->n);
            else
                khl_pool_free_unsized(p, x->p);
            x->p = NULL;
            live--;
        }
        if (op % 64 == 0)
            cr_assert_eq(khl_pool_check(p), 0, "op %lu: pool invariant broken", op);
        if (op % 4096 == 0) {
            khl_pool_stats_t st = test_pool_stats(p);
            cr_assert_eq(st.in_use_bytes, bytes, "op %lu", op);
            cr_assert_eq(st.allocs - st.frees, live);
            cr_assert_geq(st.peak_bytes, st.in_use_bytes);
            if (op % 16384 == 0)
                khl_pool_trim(p);
        }
    }
    for (i = 0; i < SLOTS; i++)
        if (s[i].p) {
            cr_assert(check(s[i].p, s[i].n, s[i].id));
            khl_pool_free_unsized(p, s[i].p);
        }
    cr_assert_eq(test_pool_stats(p).in_use_bytes, 0);
    cr_assert_eq(test_pool_stats(p).allocs, test_pool_stats(p).frees);
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_trim(p);
    cr_assert_eq(khl_pool_check(p), 0);
    cr_assert_eq(test_pool_stats(p).system_bytes, 0);
}

Test(pool_random, default_pool)
{
    khl_pool_t *p = khl_pool_new(NULL);
    differential(p, 60000, 0x9e3779b97f4a7c15ULL);
    khl_pool_destroy(p);
}

Test(pool_random, checked_pool_correct_use_does_not_abort)
{
    khl_pool_t *p = checked_pool();
    differential(p, 40000, 12345);
    khl_pool_destroy(p);
}

Test(pool_random, thread_safe_pool_one_thread)
{
    khl_pool_t *p = pool_with(0, 0, 1, 0, NULL);
    differential(p, 40000, 777);
    khl_pool_destroy(p);
}

Test(pool_random, small_chunks_counting_backing)
{
    counting_t *c = counting_new();
    khl_allocator_t a = counting_alloc(c);
    khl_pool_t *p = pool_with(2000, 16 * 1024, 0, 0, &a);
    differential(p, 30000, 4242);
    khl_pool_destroy(p);
    cr_assert_eq(c->live_bytes, 0);
    counting_free(c);
}

/* ------------------------------------------------------------------------ */
/* khashlite tables on a pool                                                */

KHL_MAP_INIT_INT(pm, uint64_t)
KHL_SET_INIT_INT64(ps)

static void table_workload(khl_pool_t *p)
{
    khl_allocator_t a = khl_pool_allocator(p);
    khl_t(pm) h;
    khl_t(ps) s;
    uint32_t i;
    int ret;
    khl_init(pm, &h, &a);
    khl_init(ps, &s, &a);
    for (i = 0; i < 50000; i++) {
        khl_iter_t k = khl_put(pm, &h, i * 7u, &ret);
        cr_assert_eq(ret, 1);
        khl_val(pm, &h, k) = (uint64_t)i * 3u;
        khl_put(ps, &s, (uint64_t)i << 20, &ret);
        cr_assert_eq(ret, 1);
    }
    cr_assert_gt(test_pool_stats(p).in_use_bytes, 0);
    cr_assert(khl_pool_owns(p, khl_single_base(h.b)), "the block (past its counters) is on the pool");
    for (i = 0; i < 50000; i += 2)
        khl_del(pm, &h, khl_get(pm, &h, i * 7u));
    for (i = 0; i < 50000; i++) {
        khl_iter_t k = khl_get(pm, &h, i * 7u);
        if (i % 2) {
            cr_assert_neq(k, khl_end(pm, &h), "key %u lost", i);
            cr_assert_eq(khl_val(pm, &h, k), (uint64_t)i * 3u);
        } else {
            cr_assert_eq(k, khl_end(pm, &h));
        }
        cr_assert_neq(khl_get(ps, &s, (uint64_t)i << 20), khl_end(ps, &s));
    }
    cr_assert_eq(khl_size(pm, &h), 25000);
    cr_assert_eq(khl_shrink(pm, &h), 0);
    cr_assert_eq(khl_size(pm, &h), 25000);
    khl_destroy(pm, &h);
    khl_destroy(ps, &s);
    cr_assert_eq(test_pool_stats(p).in_use_bytes, 0);
    cr_assert_eq(test_pool_stats(p).allocs, test_pool_stats(p).frees);
}

Test(pool_tables, map_and_set_on_a_pool)
{
    khl_pool_t *p = khl_pool_new(NULL);
    table_workload(p);
    khl_pool_destroy(p);
}

Test(pool_tables, on_checked_and_thread_safe_pools)
{
    khl_pool_t *p = checked_pool();
    table_workload(p);
    khl_pool_destroy(p);
    p = pool_with(0, 0, 1, 0, NULL);
    table_workload(p);
    khl_pool_destroy(p);
}

Test(pool_tables, out_of_memory_leaves_table_intact)
{
    counting_t *c = counting_new();
    khl_allocator_t back = counting_alloc(c);
    khl_pool_t *p = pool_with(0, 0, 0, 0, &back);
    khl_allocator_t a = khl_pool_allocator(p);
    khl_t(pm) h;
    uint32_t i = 0;
    int ret = 0;
    khl_init(pm, &h, &a);
    c->fail_at = 1;
    c->fail_after = 1;
    c->fail_at = c->attempts + 4;
    for (i = 0; i < 1000000; i++) {
        khl_put(pm, &h, i, &ret);
        if (ret < 0)
            break;
    }
    cr_assert_eq(ret, -1, "the pool ran out");
    cr_assert_eq(khl_size(pm, &h), i);
    for (uint32_t j = 0; j < i; j++)
        cr_assert_neq(khl_get(pm, &h, j), khl_end(pm, &h));
    khl_destroy(pm, &h);
    cr_assert_eq(test_pool_stats(p).in_use_bytes, 0);
    khl_pool_destroy(p);
    cr_assert_eq(c->live_bytes, 0);
    counting_free(c);
}
