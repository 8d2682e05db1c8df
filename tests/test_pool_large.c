/* Tests of khl_pool's large blocks (above max_small): spans of the pool's
 * arenas reused without the system, realloc in place, huge blocks and
 * their kept mappings, exact stats, checked mode, limit_bytes, failure
 * injection, threads sharing spans (issue 21). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "khashlite/khl_pool.h"
#include "support.h"

#define KiB ((size_t)1024)
#define MiB ((size_t)1024 * 1024)
#define WINDOW KHL_POOL_DEFAULT_CHUNK_BYTES

/* The window a span block starts in (a block starts a cache colour past
 * its window's header). */
static uintptr_t window_of(const void *b)
{
    return (uintptr_t)b & ~(uintptr_t)(WINDOW - 1);
}

static khl_pool_t *lpool(int ts, int checked, const khl_allocator_t *backing, size_t limit,
                         size_t large_max)
{
    khl_pool_options_t o;
    khl_pool_t *p;
    memset(&o, 0, sizeof o);
    o.thread_safe = ts;
    o.checked = checked;
    o.backing = backing;
    o.limit_bytes = limit;
    o.large_max = large_max;
    p = khl_pool_new(&o);
    cr_assert_not_null(p);
    return p;
}

static check_alloc_t *backing_new(void)
{
    check_alloc_t *c = malloc(sizeof *c);
    cr_assert_not_null(c);
    test_check_init(c, CHECK_SIZES | CHECK_NO_RESIZE);
    return c;
}

static void backing_done(check_alloc_t *c)
{
    cr_assert_eq(c->live_bytes, 0, "the pool leaked %zu bytes", c->live_bytes);
    check_alloc_fini(c);
    free(c);
}


/* ------------------------------------------------------------------------ */
/* Reuse without the system                                                  */

/* The churn of issue 21: large blocks allocated and freed over and over.
 * Once the pool holds what the live set needs, the backing allocator sees
 * no call (it saw two per block: a frame per allocation, back on free). */
Test(pool_large, churn_makes_no_system_call_in_steady_state)
{
    check_alloc_t *c = backing_new();
    khl_pool_t *p = lpool(0, 0, &c->a, 0, 0);
    void *live[16] = {0};
    size_t size[16] = {0}, i;
    uint64_t rng = 1, warm = 0;
    for (i = 0; i < 4000; i++) {
        size_t j = prng_next(&rng) % 16;
        if (i == 1000)
            warm = c->attempts;
        if (live[j]) {
            cr_assert(test_marked(live[j], size[j], (unsigned)j));
            khl_pool_free(p, live[j], size[j]);
        }
        size[j] = 16 * KiB + 1 + prng_next(&rng) % (240 * KiB);
        cr_assert_not_null(live[j] = khl_pool_alloc(p, size[j]));
        test_mark(live[j], size[j], (unsigned)j);
    }
    cr_assert_eq(c->attempts, warm, "%llu backing calls in 3000 steady-state allocations",
                 (unsigned long long)(c->attempts - warm));
    cr_assert_eq(khl_pool_check(p), 0);
    for (i = 0; i < 16; i++)
        khl_pool_free_unsized(p, live[i]);
    khl_pool_destroy(p);
    backing_done(c);
}

/* Free and allocate one large block in turn: the mapped pool makes no
 * system call after the first (it made three per allocation: mmap and the
 * two munmaps of the alignment slack, and one per free). */
Test(pool_large, alloc_free_alternation_on_mmap)
{
    khl_pool_t *p = lpool(0, 0, NULL, 0, 0);
    uint64_t calls;
    int i;
    void *b = khl_pool_alloc(p, 100 * KiB);
    khl_pool_free(p, b, 100 * KiB);
    calls = test_pool_stats(p).system_calls;
    for (i = 0; i < 1000; i++) {
        b = khl_pool_alloc(p, 16 * KiB + 1 + (size_t)i * 997);
        cr_assert_not_null(b);
        khl_pool_free_unsized(p, b);
    }
    cr_assert_eq(test_pool_stats(p).system_calls, calls);
    khl_pool_destroy(p);
}

/* ------------------------------------------------------------------------ */
/* Exact stats                                                               */

Test(pool_large, stats_count_arenas_spans_and_trim)
{
    khl_pool_t *p = lpool(0, 0, NULL, 0, 0);
    khl_pool_stats_t s;
    void *a = khl_pool_alloc(p, 20000), *b = khl_pool_alloc(p, 300000);
    s = test_pool_stats(p);
    cr_assert_eq(s.in_use_bytes, 320000);
    cr_assert_eq(s.large_blocks, 2);
    cr_assert_eq(s.system_bytes, 8 * MiB, "one arena");
    cr_assert_eq(s.retained_bytes, 0);
    cr_assert_eq(s.chunks, 0);
    cr_assert_eq(khl_pool_block_size(p, a), 20000);
    cr_assert_eq(khl_pool_block_size(p, b), 300000);
    cr_assert(khl_pool_owns(p, a) && khl_pool_owns(p, b));
    cr_assert_not(khl_pool_owns(p, (char *)b + WINDOW), "a window inside a span is no block");
    khl_pool_free(p, a, 20000);
    khl_pool_free_unsized(p, b);
    s = test_pool_stats(p);
    cr_assert_eq(s.in_use_bytes, 0);
    cr_assert_eq(s.large_blocks, 0);
    cr_assert_eq(s.allocs, 2);
    cr_assert_eq(s.frees, 2);
    cr_assert_eq(s.system_bytes, 8 * MiB, "the empty arena is kept");
    cr_assert_eq(s.retained_bytes, 8 * MiB);
    cr_assert_not(khl_pool_owns(p, a));
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_trim(p);
    s = test_pool_stats(p);
    cr_assert_eq(s.system_bytes, 0);
    cr_assert_eq(s.retained_bytes, 0);
    khl_pool_destroy(p);
}

/* A second arena that falls empty goes back at once: the pool keeps one. */
Test(pool_large, one_empty_arena_is_kept)
{
    khl_pool_t *p = lpool(0, 0, NULL, 0, 0);
    void *b[4];
    int i;
    for (i = 0; i < 4; i++)
        cr_assert_not_null(b[i] = khl_pool_alloc(p, 3 * MiB));   /* 2 per arena */
    cr_assert_eq(test_pool_stats(p).system_bytes, 16 * MiB);
    for (i = 0; i < 4; i++)
        khl_pool_free(p, b[i], 3 * MiB);
    cr_assert_eq(test_pool_stats(p).system_bytes, 8 * MiB);
    cr_assert_eq(test_pool_stats(p).retained_bytes, 8 * MiB);
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_destroy(p);
}

/* ------------------------------------------------------------------------ */
/* realloc                                                                   */

/* A buffer doubling from 16 KiB to 2 MiB never moves while the windows
 * after it are free, shrinking never moves, and the pool asks the system
 * for nothing past the arena. */
Test(pool_large, realloc_grows_in_place_and_shrink_never_moves)
{
    check_alloc_t *c = backing_new();
    khl_pool_t *p = lpool(0, 0, &c->a, 0, 0);
    size_t n = 16 * KiB + 16;
    char *b = khl_pool_alloc(p, n), *q;
    uint64_t calls = c->attempts;
    test_mark(b, n, 7);
    while (n < 2 * MiB) {
        q = khl_pool_realloc(p, b, n, 2 * n);
        cr_assert_eq(q, b, "grew from %zu to %zu by moving", n, 2 * n);
        cr_assert(test_marked(q, n, 7));
        n *= 2;
        test_mark(b, n, 7);
        cr_assert_eq(test_pool_stats(p).in_use_bytes, n);
        cr_assert_eq(khl_pool_check(p), 0);
    }
    cr_assert_eq(c->attempts, calls);
    q = khl_pool_realloc(p, b, n, 20000);
    cr_assert_eq(q, b, "a shrink moved");
    cr_assert_eq(khl_pool_block_size(p, q), 20000);
    cr_assert_eq(test_pool_stats(p).in_use_bytes, 20000);
    /* the windows it gave back serve the next block, right after it */
    q = khl_pool_alloc(p, 100 * KiB);
    cr_assert_eq(window_of(q), window_of(b) + WINDOW, "the freed tail was not reused");
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_free_unsized(p, q);
    khl_pool_free_unsized(p, b);
    khl_pool_destroy(p);
    backing_done(c);
}

/* Span blocks do not all start at one address modulo the page: 64 blocks
 * take 64 cache colours (else the same bytes of every block would compete
 * for a few cache sets), and the colour comes from the slack of the last
 * window: a block that fills its windows starts right after the header,
 * and a grown block keeps its colour. */
Test(pool_large, span_blocks_start_at_distinct_cache_colours_without_a_window_more)
{
    khl_pool_t *p = lpool(0, 0, NULL, 0, 0);
    char *b[64], *full, *next;
    uint64_t colours = 0;
    size_t header, i;
    for (i = 0; i < 64; i++) {
        cr_assert_not_null(b[i] = khl_pool_alloc(p, 20000));
        cr_assert_eq((uintptr_t)b[i] % 64, (uintptr_t)b[0] % 64, "a colour is a multiple of a cache line");
        colours |= (uint64_t)1 << ((uintptr_t)b[i] % 4096 / 64);
    }
    cr_assert_eq(colours, ~(uint64_t)0, "64 span blocks took %d colours", __builtin_popcountll(colours));
    header = (size_t)((uintptr_t)b[0] - window_of(b[0]));
    cr_assert_lt(header, 4096, "the first block starts past its header only");
    full = khl_pool_alloc(p, WINDOW - header);
    cr_assert_not_null(full);
    cr_assert_eq((uintptr_t)full - window_of(full), header, "a block filling its window has no room for a colour");
    next = khl_pool_alloc(p, 20000);
    cr_assert_eq(window_of(next), window_of(full) + WINDOW, "the full block took one window");
    cr_assert_eq(khl_pool_check(p), 0);
    cr_assert_neq((uintptr_t)next - window_of(next), header);
    cr_assert_eq(khl_pool_realloc(p, next, 20000, 2 * WINDOW), next, "grew by moving");
    cr_assert_eq(khl_pool_block_size(p, next), 2 * WINDOW);
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_free_unsized(p, full);
    khl_pool_free_unsized(p, next);
    for (i = 0; i < 64; i++)
        khl_pool_free(p, b[i], 20000);
    cr_assert_eq(test_pool_stats(p).in_use_bytes, 0);
    khl_pool_destroy(p);
}

/* A span whose next window is taken moves, with its bytes. */
Test(pool_large, realloc_moves_when_the_next_window_is_taken)
{
    khl_pool_t *p = lpool(0, 0, NULL, 0, 0);
    char *a = khl_pool_alloc(p, 50000), *b = khl_pool_alloc(p, 50000), *q;
    test_mark(a, 50000, 1);
    cr_assert_eq(window_of(b), window_of(a) + WINDOW);
    q = khl_pool_realloc(p, a, 50000, 200000);
    cr_assert_neq(q, a);
    cr_assert(test_marked(q, 50000, 1));
    cr_assert_eq(test_pool_stats(p).large_blocks, 2);
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_free(p, q, 200000);
    khl_pool_free(p, b, 50000);
    khl_pool_destroy(p);
}

/* A huge block (above large_max) of a mapped pool grows by mremap: its
 * bytes come along, the counts follow, and the pool stays valid. */
Test(pool_large, huge_block_grows_and_shrinks)
{
    khl_pool_t *p = lpool(0, 0, NULL, 0, 0);
    size_t n = 6 * MiB;
    char *b = khl_pool_alloc(p, n), *other;
    khl_pool_stats_t s;
    test_mark(b, n, 3);
    other = khl_pool_alloc(p, 5 * MiB);   /* may sit right after it */
    b = khl_pool_realloc(p, b, n, 24 * MiB);
    cr_assert_not_null(b);
    cr_assert(test_marked(b, n, 3));
    test_mark(b, 24 * MiB, 4);
    s = test_pool_stats(p);
    cr_assert_eq(s.in_use_bytes, 29 * MiB);
    cr_assert_geq(s.system_bytes, 29 * MiB);
    cr_assert_eq(khl_pool_check(p), 0);
    cr_assert_eq(khl_pool_realloc(p, b, 24 * MiB, 5 * MiB), b, "a huge shrink moved");
    cr_assert(test_prefix_marked(b, 5 * MiB, 4));
    cr_assert_lt(test_pool_stats(p).system_bytes, s.system_bytes, "the pages past a halved block went back");
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_free(p, b, 5 * MiB);
    khl_pool_free(p, other, 5 * MiB);
    khl_pool_destroy(p);
}

/* khl_pool_destroy returns every block, live or not: a span block and a
 * huge block never freed go back to the backing allocator with the rest. */
Test(pool_large, destroy_returns_live_span_and_huge_blocks)
{
    check_alloc_t *bk = backing_new();
    khl_pool_t *p = lpool(0, 0, &bk->a, 0, 256 * KiB);
    void *span = khl_pool_alloc(p, 100 * KiB), *huge = khl_pool_alloc(p, 3 * MiB);
    cr_assert_not_null(span);
    cr_assert_not_null(huge);
    cr_assert_geq(bk->live_bytes, 3 * MiB + 100 * KiB);
    khl_pool_destroy(p);
    backing_done(bk);
}

/* Freed huge mappings are kept for the next huge block, and trim gives
 * them back. */
Test(pool_large, huge_mappings_are_kept_and_trimmed)
{
    check_alloc_t *c = backing_new();
    khl_pool_t *p = lpool(0, 0, &c->a, 0, 0);
    uint64_t calls;
    void *b = khl_pool_alloc(p, 5 * MiB);
    int i;
    khl_pool_free(p, b, 5 * MiB);
    cr_assert_gt(test_pool_stats(p).retained_bytes, 5 * MiB);
    calls = c->attempts;
    for (i = 0; i < 100; i++) {
        cr_assert_not_null(b = khl_pool_alloc(p, 5 * MiB - (size_t)i * 1000));
        khl_pool_free_unsized(p, b);
    }
    cr_assert_eq(c->attempts, calls, "a kept mapping was not reused");
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_trim(p);
    cr_assert_eq(test_pool_stats(p).system_bytes, 0);
    cr_assert_eq(test_pool_stats(p).retained_bytes, 0);
    khl_pool_destroy(p);
    backing_done(c);
}

/* ------------------------------------------------------------------------ */
/* Huge pages                                                                */

/* The kernel's transparent huge page as the pool reads it: 2 MiB where the
 * kernel does not say. */
static size_t huge_page(void)
{
    unsigned long v = 0;
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r");
    if (f) {
        if (fscanf(f, "%lu", &v) != 1)
            v = 0;
        fclose(f);
    }
    return v >= 4096 && !(v & (v - 1)) ? (size_t)v : 2 * MiB;
}

static khl_pool_t *huge_pool(const khl_allocator_t *backing)
{
    khl_pool_options_t o;
    khl_pool_t *p;
    memset(&o, 0, sizeof o);
    o.huge_pages = 1;
    o.backing = backing;
    p = khl_pool_new(&o);
    cr_assert_not_null(p);
    return p;
}

/* The same calls on a pool and on one with huge_pages: the huge blocks
 * (each spanning a huge page) and the arena start in the first page after
 * a huge-page boundary, also once a grown block has moved; the bytes and
 * the counts are the same but for the system calls. */
Test(pool_large, huge_pages_start_huge_blocks_and_arenas_on_huge_pages)
{
    size_t h = huge_page(), n = (h > 4 * MiB ? h : 4 * MiB) + MiB;
    khl_pool_t *pools[2] = {lpool(0, 0, NULL, 0, 0), huge_pool(NULL)};
    khl_pool_stats_t s[2];
    for (int v = 0; v < 2; v++) {
        khl_pool_t *p = pools[v];
        char *b[4], *span;
        int aligned = 0, i;
        for (i = 0; i < 4; i++) {
            cr_assert_not_null(b[i] = khl_pool_alloc(p, n));
            test_mark(b[i], n, (unsigned)i);
            aligned += ((uintptr_t)b[i] & ~(uintptr_t)4095) % h == 0;
        }
        cr_assert_not_null(span = khl_pool_alloc(p, 100 * KiB));
        cr_assert_not_null(b[0] = khl_pool_realloc(p, b[0], n, 4 * n), "a huge block could not grow");
        cr_assert(test_prefix_marked(b[0], n - 1, 0), "a grown huge block lost its bytes");
        aligned += ((uintptr_t)b[0] & ~(uintptr_t)4095) % h == 0;
        if (v) {
            cr_assert_eq(aligned, 5, "%d of 5 huge blocks start on a huge page", aligned);
            if (8 * MiB >= h)
                cr_assert_eq(window_of(span) % h, 0, "the arena does not start on a huge page");
        }
        cr_assert_eq(khl_pool_check(p), 0);
        s[v] = test_pool_stats(p);
        khl_pool_free(p, b[0], 4 * n);
        for (i = 1; i < 4; i++)
            khl_pool_free(p, b[i], n);
        khl_pool_free(p, span, 100 * KiB);
        cr_assert_eq(test_pool_stats(p).in_use_bytes, 0);
        khl_pool_destroy(p);
    }
    cr_assert(s[1].in_use_bytes == s[0].in_use_bytes && s[1].system_bytes == s[0].system_bytes &&
                  s[1].large_blocks == s[0].large_blocks && s[1].allocs == s[0].allocs,
              "huge_pages changed the counts (system %zu against %zu)", s[1].system_bytes, s[0].system_bytes);
}

/* A backing allocator's memory is not the pool's to advise: with one,
 * huge_pages changes nothing, not even the system calls. */
Test(pool_large, huge_pages_leave_a_backing_allocators_memory_alone)
{
    check_alloc_t *c[2] = {backing_new(), backing_new()};
    khl_pool_t *pools[2] = {lpool(0, 0, &c[0]->a, 0, 0), huge_pool(&c[1]->a)};
    khl_pool_stats_t s[2];
    for (int v = 0; v < 2; v++) {
        void *b = khl_pool_alloc(pools[v], 9 * MiB), *span = khl_pool_alloc(pools[v], 100 * KiB);
        cr_assert(b && span);
        cr_assert_not_null(b = khl_pool_realloc(pools[v], b, 9 * MiB, 30 * MiB));
        khl_pool_free(pools[v], span, 100 * KiB);
        khl_pool_free(pools[v], b, 30 * MiB);
        s[v] = test_pool_stats(pools[v]);
        khl_pool_destroy(pools[v]);
        backing_done(c[v]);
    }
    cr_assert_eq(s[1].system_calls, s[0].system_calls);
    cr_assert_eq(s[1].system_bytes, s[0].system_bytes);
}

/* ------------------------------------------------------------------------ */
/* limit_bytes                                                               */

/* Under a limit smaller than an arena, arenas are cut to the block; memory
 * kept for large blocks is given back for any later call that needs it, and
 * a call past the limit fails with the pool unchanged. */
Test(pool_large, limit_counts_arenas_and_kept_memory)
{
    const size_t limit = 6 * WINDOW;
    khl_pool_t *p = lpool(0, 0, NULL, limit, 0);
    khl_pool_stats_t s;
    void *a = khl_pool_alloc(p, 3 * WINDOW), *b, *small[64];
    int i;
    cr_assert_not_null(a);
    cr_assert_eq(test_pool_stats(p).system_bytes, 4 * WINDOW, "an arena cut to its block");
    s = test_pool_stats(p);
    cr_assert_null(khl_pool_alloc(p, 3 * WINDOW));
    test_assert_pool_unchanged(&s, p, "a span past the limit");
    cr_assert_null(khl_pool_realloc(p, a, 3 * WINDOW, 6 * WINDOW));
    test_assert_pool_unchanged(&s, p, "a realloc past the limit");
    khl_pool_free(p, a, 3 * WINDOW);
    cr_assert_eq(test_pool_stats(p).retained_bytes, 4 * WINDOW);
    /* small blocks need chunks: the empty arena makes room for them */
    for (i = 0; i < 64; i++)
        cr_assert_not_null(small[i] = khl_pool_alloc(p, 8000), "chunk %d", i);
    s = test_pool_stats(p);
    cr_assert_leq(s.system_bytes, limit);
    cr_assert_eq(s.retained_bytes, 0);
    for (i = 0; i < 64; i++)
        khl_pool_free(p, small[i], 8000);
    khl_pool_trim(p);
    /* a huge block kept after its free is given back for a span */
    khl_pool_destroy(p);
    p = lpool(0, 0, NULL, limit, 2 * WINDOW);
    cr_assert_not_null(b = khl_pool_alloc(p, 4 * WINDOW));
    khl_pool_free(p, b, 4 * WINDOW);
    cr_assert_gt(test_pool_stats(p).retained_bytes, 4 * WINDOW);
    cr_assert_not_null(a = khl_pool_alloc(p, 50000));
    cr_assert_not_null(b = khl_pool_alloc(p, WINDOW));
    cr_assert_leq(test_pool_stats(p).system_bytes, limit);
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_free_unsized(p, a);
    khl_pool_free_unsized(p, b);
    khl_pool_trim(p);
    /* a huge block's mremap growth counts against the limit too */
    cr_assert_not_null(b = khl_pool_alloc(p, 3 * WINDOW));
    test_mark(b, 3 * WINDOW, 9);
    s = test_pool_stats(p);
    cr_assert_null(khl_pool_realloc(p, b, 3 * WINDOW, 6 * WINDOW));
    test_assert_pool_unchanged(&s, p, "a huge realloc past the limit");
    cr_assert(test_marked(b, 3 * WINDOW, 9));
    cr_assert_not_null(b = khl_pool_realloc(p, b, 3 * WINDOW, 5 * WINDOW));
    cr_assert(test_prefix_marked(b, 3 * WINDOW, 9));
    cr_assert_leq(test_pool_stats(p).system_bytes, limit);
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_free_unsized(p, b);
    khl_pool_destroy(p);
}

/* ------------------------------------------------------------------------ */
/* Failure injection                                                         */

/* Large blocks allocated, grown, shrunk and freed while the k-th backing
 * call fails (meta allocations included: arena records, index growth).  A
 * call that fails leaves every stats field as it was and the block as it
 * was; nothing leaks.  Returns the failures seen, the calls made in
 * *calls. */
static int large_failure_run(int ts, int checked, uint64_t k, uint64_t *calls)
{
    check_alloc_t *c = backing_new();
    khl_pool_t *p = lpool(ts, checked, &c->a, 0, 2 * MiB);
    void *live[12] = {0};
    size_t size[12] = {0}, step;
    uint64_t first = c->attempts, rng = 5;
    int failures = 0;
    c->fail_at = k ? first + k : 0;
    for (step = 0; step < 120; step++) {
        size_t j = prng_next(&rng) % 12, n = 16 * KiB + 1 + prng_next(&rng) % (3 * MiB);
        khl_pool_stats_t before = test_pool_stats(p);
        if (live[j] && step % 3 == 0) {
            void *q = khl_pool_realloc(p, live[j], size[j], n);
            if (!q) {
                failures++;
                test_assert_pool_unchanged(&before, p, "failed realloc");
                cr_assert(test_marked(live[j], size[j], (unsigned)j));
            } else {
                cr_assert(test_prefix_marked(q, size[j] < n ? size[j] : n, (unsigned)j));
                live[j] = q;
                size[j] = n;
                test_mark(q, n, (unsigned)j);
            }
        } else if (live[j]) {
            cr_assert(test_marked(live[j], size[j], (unsigned)j));
            khl_pool_free(p, live[j], size[j]);
            live[j] = NULL;
        } else if ((live[j] = khl_pool_alloc(p, n)) == NULL) {
            failures++;
            test_assert_pool_unchanged(&before, p, "failed alloc");
        } else {
            size[j] = n;
            test_mark(live[j], n, (unsigned)j);
        }
        if (step % 40 == 39)
            khl_pool_trim(p);
        cr_assert_eq(khl_pool_check(p), 0, "k=%llu step %zu", (unsigned long long)k, step);
    }
    *calls = c->attempts - first;
    for (step = 0; step < 12; step++)
        khl_pool_free_unsized(p, live[step]);
    khl_pool_destroy(p);
    backing_done(c);
    return failures;
}

static void large_failure_sweep(int ts, int checked)
{
    uint64_t k, total, calls;
    cr_assert_eq(large_failure_run(ts, checked, 0, &total), 0);
    cr_assert_gt(total, 10);
    for (k = 1; k <= total; k++) {
        int f = large_failure_run(ts, checked, k, &calls);
        cr_assert_eq(f, calls >= k, "k=%llu: %d failures in %llu calls", (unsigned long long)k, f,
                     (unsigned long long)calls);
        if (calls > total)
            total = calls;
    }
}

Test(pool_large, kth_backing_call_fails)
{
    large_failure_sweep(0, 0);
}

Test(pool_large, kth_backing_call_fails_checked_thread_safe)
{
    large_failure_sweep(1, 1);
}

/* ------------------------------------------------------------------------ */
/* Checked mode                                                              */

static khl_pool_t *checked(void)
{
    return lpool(0, 1, NULL, 0, 0);
}

Test(pool_large, checked_double_free_of_a_span, .signal = SIGABRT)
{
    khl_pool_t *p = checked();
    void *keep = khl_pool_alloc(p, 40000), *b = khl_pool_alloc(p, 40000);
    (void)keep;
    khl_pool_free(p, b, 40000);
    khl_pool_free(p, b, 40000);
}

Test(pool_large, checked_wrong_size_of_a_span, .signal = SIGABRT)
{
    khl_pool_t *p = checked();
    void *b = khl_pool_alloc(p, 40000);
    khl_pool_free(p, b, 40001);
}

Test(pool_large, checked_window_inside_a_span, .signal = SIGABRT)
{
    khl_pool_t *p = checked();
    char *b = khl_pool_alloc(p, 3 * WINDOW);
    khl_pool_free_unsized(p, b + WINDOW);
}

Test(pool_large, checked_free_window_of_an_arena, .signal = SIGABRT)
{
    khl_pool_t *p = checked();
    char *b = khl_pool_alloc(p, 40000);
    khl_pool_free_unsized(p, b + WINDOW);   /* a free window's start, as a span would have it */
}

Test(pool_large, checked_double_free_of_a_kept_mapping, .signal = SIGABRT)
{
    khl_pool_t *p = checked();
    void *b = khl_pool_alloc(p, 5 * MiB);
    khl_pool_free(p, b, 5 * MiB);
    khl_pool_free(p, b, 5 * MiB);
}

/* ------------------------------------------------------------------------ */
/* Threads sharing spans                                                     */

typedef struct share {
    khl_pool_t *p;
    unsigned id;
} share_t;

static void *sharer(void *arg)
{
    share_t *s = arg;
    void *live[8] = {0};
    size_t size[8] = {0}, i;
    uint64_t rng = s->id + 1;
    for (i = 0; i < 3000; i++) {
        size_t j = prng_next(&rng) % 8, n = 16 * KiB + 1 + prng_next(&rng) % (600 * KiB);
        unsigned id = s->id * 8 + (unsigned)j;
        if (live[j] && i % 2) {
            void *q;
            cr_assert(test_marked(live[j], size[j], id));
            q = khl_pool_realloc(s->p, live[j], size[j], n);
            cr_assert_not_null(q);
            live[j] = q;
        } else {
            if (live[j]) {
                cr_assert(test_marked(live[j], size[j], id));
                khl_pool_free_unsized(s->p, live[j]);
            }
            cr_assert_not_null(live[j] = khl_pool_alloc(s->p, n));
        }
        size[j] = n;
        test_mark(live[j], n, id);
    }
    for (i = 0; i < 8; i++)
        khl_pool_free(s->p, live[i], size[i]);
    return NULL;
}

Test(pool_large, threads_share_arenas)
{
    khl_pool_t *p = lpool(1, 0, NULL, 0, 0);
    pthread_t t[4];
    share_t s[4];
    unsigned i;
    for (i = 0; i < 4; i++) {
        s[i].p = p;
        s[i].id = i;
        cr_assert_eq(pthread_create(&t[i], NULL, sharer, &s[i]), 0);
    }
    for (i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(test_pool_stats(p).large_blocks, 0);
    cr_assert_eq(test_pool_stats(p).in_use_bytes, 0);
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_trim(p);
    cr_assert_eq(test_pool_stats(p).system_bytes, 0);
    khl_pool_destroy(p);
}
