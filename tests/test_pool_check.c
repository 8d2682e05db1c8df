/* test_pool_check.c: khl_pool_check, the pool's validator.  Healthy pools
 * of every mode pass it; pools corrupted on purpose - the way a program's
 * use-after-free or wrong-size free would, or through the internal header
 * (white box) where no public call can reach - fail it with the message of
 * the invariant that broke, without crashing on the corrupted pointers. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "khashlite/khl_pool_internal.h"
#include "support.h"

static khl_pool_t *pool_of(int ts, int checked)
{
    khl_pool_options_t o;
    memset(&o, 0, sizeof o);
    o.thread_safe = ts;
    o.checked = checked;
    o.chunk_bytes = 16 * 1024;
    o.max_small = 1024;
    khl_pool_t *p = khl_pool_new(&o);
    cr_assert_not_null(p);
    return p;
}

static int run_check(const void *p)
{
    return khl_pool_check(p);
}

/* Asserts khl_pool_check(p) fails and says `needle` on stderr. */
static void assert_check_says(const khl_pool_t *p, const char *needle)
{
    char said[2048];
    int r = test_capture_stderr(run_check, p, said, sizeof said);
    cr_assert_eq(r, -1, "khl_pool_check passed a corrupted pool");
    cr_assert(strstr(said, "invariant broken") && strstr(said, needle),
              "khl_pool_check said \"%s\", expected \"%s\"", said, needle);
}

/* ------------------------------------------------------------------------ */
/* Healthy pools pass                                                        */

static void workload(khl_pool_t *p)
{
    void *b[300];
    size_t n[300];
    uint64_t s = 42;
    cr_assert_eq(khl_pool_check(p), 0, "a new pool");
    for (size_t i = 0; i < 300; i++) {
        n[i] = 1 + (size_t)(prng_next(&s) % 3000);   /* small and large */
        b[i] = khl_pool_alloc(p, n[i]);
        cr_assert_not_null(b[i]);
    }
    cr_assert_eq(khl_pool_check(p), 0, "after allocations");
    for (size_t i = 0; i < 300; i += 2)
        khl_pool_free(p, b[i], n[i]);
    cr_assert_eq(khl_pool_check(p), 0, "after frees");
    cr_assert_eq(khl_pool_reserve(p, 48, 500), 0);
    cr_assert_eq(khl_pool_check(p), 0, "after a reserve");
    khl_pool_trim(p);
    cr_assert_eq(khl_pool_check(p), 0, "after trim");
    for (size_t i = 1; i < 300; i += 2)
        khl_pool_free_unsized(p, b[i]);
    khl_pool_trim(p);
    cr_assert_eq(khl_pool_check(p), 0, "all freed and trimmed");
    khl_pool_destroy(p);
}

Test(pool_check, healthy_pools_of_every_mode_pass)
{
    cr_assert_eq(khl_pool_check(NULL), 0);
    workload(pool_of(0, 0));
    workload(pool_of(1, 0));
    workload(pool_of(0, 1));
    workload(pool_of(1, 1));
}

/* ------------------------------------------------------------------------ */
/* What a program can break                                                  */

/* Sixteen 16-byte blocks freed: the first eight fill the class's root
 * bundle, the ninth becomes a block bundle whose first word is its link. */
Test(pool_check, use_after_free_overwrites_a_bundle_link)
{
    khl_pool_t *p = pool_of(0, 0);
    void *b[16];
    int local;
    for (int i = 0; i < 16; i++)
        b[i] = khl_pool_alloc(p, 16);
    for (int i = 0; i < 16; i++)
        khl_pool_free(p, b[i], 16);
    cr_assert_eq(khl_pool_check(p), 0);
    *(void **)b[8] = &local;
    assert_check_says(p, "links to");
    *(void **)b[8] = NULL;
    cr_assert_eq(khl_pool_check(p), 0, "repaired");
    khl_pool_destroy(p);
}

Test(pool_check, use_after_free_overwrites_a_thread_cache_link)
{
    khl_pool_t *p = pool_of(1, 0);
    void *x = khl_pool_alloc(p, 64), *y = khl_pool_alloc(p, 64);
    khl_pool_free(p, x, 64);
    khl_pool_free(p, y, 64);        /* the cache's freed list: y -> x */
    cr_assert_eq(khl_pool_check(p), 0);
    void *was = *(void **)y;
    *(void **)y = (char *)x + 16;
    assert_check_says(p, "interior pointer");
    *(void **)y = was;
    cr_assert_eq(khl_pool_check(p), 0, "repaired");
    khl_pool_destroy(p);
}

/* The free fast path counts nothing but the thread's frees: the list must
 * hold as many blocks as the frees since the last flush. */
Test(pool_check, use_after_free_cuts_a_thread_cache_freed_list_short)
{
    khl_pool_t *p = pool_of(1, 0);
    void *x = khl_pool_alloc(p, 64), *y = khl_pool_alloc(p, 64), *z = khl_pool_alloc(p, 64);
    khl_pool_free(p, x, 64);
    khl_pool_free(p, y, 64);
    khl_pool_free(p, z, 64);        /* the cache's freed list: z -> y -> x */
    cr_assert_eq(khl_pool_check(p), 0);
    void *was = *(void **)z;
    *(void **)z = NULL;
    assert_check_says(p, "holds 1 freed blocks");
    *(void **)z = was;
    cr_assert_eq(khl_pool_check(p), 0, "repaired");
    khl_pool_destroy(p);
}

/* 128 blocks of 64 B allocated and freed by this thread: one full batch,
 * which it keeps.  b[127] heads it: its second word links to the next kept
 * batch. */
static khl_pool_t *pool_keeping_a_batch(void *b[128])
{
    khl_pool_t *p = pool_of(1, 0);
    for (int i = 0; i < 128; i++)
        b[i] = khl_pool_alloc(p, 64);
    for (int i = 0; i < 128; i++)
        khl_pool_free(p, b[i], 64);
    cr_assert_eq(khl_pool_check(p), 0);
    return p;
}

Test(pool_check, use_after_free_overwrites_a_kept_batch_link)
{
    void *b[128];
    khl_pool_t *p = pool_keeping_a_batch(b);
    ((void **)b[127])[1] = (char *)b[3] + 16;
    assert_check_says(p, "interior pointer");
    ((void **)b[127])[1] = NULL;
    cr_assert_eq(khl_pool_check(p), 0, "repaired");
    khl_pool_destroy(p);
}

/* An unchecked pool takes the size on trust: a 100-byte block freed as 16
 * bytes lands among the 16-byte class's free blocks. */
Test(pool_check, wrong_size_free_in_an_unchecked_pool)
{
    khl_pool_t *p = pool_of(0, 0);
    void *b = khl_pool_alloc(p, 100);
    khl_pool_free(p, b, 16);
    assert_check_says(p, "a block of another size class");
    khl_pool_destroy(p);
}

Test(pool_check, double_free_of_the_only_block)
{
    khl_pool_t *p = pool_of(0, 0);
    void *b = khl_pool_alloc(p, 32);
    khl_pool_free(p, b, 32);
    khl_pool_free(p, b, 32);
    assert_check_says(p, "more free blocks than slots handed out");
    khl_pool_destroy(p);
}

/* ------------------------------------------------------------------------ */
/* White box: what only a bug in the pool could break                        */

Test(pool_check, bundle_link_cycle_ends_the_walk)
{
    khl_pool_t *p = pool_of(0, 0);
    void *b[16];
    for (int i = 0; i < 16; i++)
        b[i] = khl_pool_alloc(p, 16);
    for (int i = 0; i < 16; i++)
        khl_pool_free(p, b[i], 16);
    void **bundle = p->cls[0].base - 1;
    bundle[0] = bundle;
    assert_check_says(p, "class 0");
    bundle[0] = NULL;
    khl_pool_destroy(p);
}

Test(pool_check, in_use_counter)
{
    khl_pool_t *p = pool_of(0, 0);
    void *b = khl_pool_alloc(p, 200);
    p->hot.in_use += 16;
    assert_check_says(p, "in_use");
    p->hot.in_use -= 16;
    cr_assert_eq(khl_pool_check(p), 0, "repaired");
    khl_pool_free(p, b, 200);
    khl_pool_destroy(p);
}

/* White box: the bytes a thread's kept batches hold, as its record counts
 * them, decide whether its next batch is kept or published. */
Test(pool_check, kept_bytes_counter)
{
    void *b[128];
    khl_pool_t *p = pool_keeping_a_batch(b);
    thread_cache_t *e = khl_i_own_cache(p);
    cr_assert_not_null(e);
    cr_assert_eq(e->kept, 128 * 64);
    e->kept += 64;
    assert_check_says(p, "kept batches");
    e->kept -= 64;
    cr_assert_eq(khl_pool_check(p), 0, "repaired");
    khl_pool_destroy(p);
}

/* One full batch of 64 B blocks allocated and freed, then the thread
 * exits: its record, the batch kept in it, goes to the pool. */
static void *keep_a_batch_and_exit(void *arg)
{
    khl_pool_t *p = arg;
    void *b[128];
    for (int i = 0; i < 128; i++)
        cr_assert_not_null(b[i] = khl_pool_alloc(p, 64));
    for (int i = 0; i < 128; i++)
        khl_pool_free(p, b[i], 64);
    return NULL;
}

/* White box: the records of exited threads, which the pool holds, are
 * checked as the caller's own record is, and each must be marked so. */
Test(pool_check, an_exited_threads_record)
{
    khl_pool_t *p = pool_of(1, 0);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, keep_a_batch_and_exit, p), 0);
    pthread_join(t, NULL);
    thread_cache_t *e = p->abandoned;
    cr_assert_not_null(e);
    cr_assert_eq(e->kept, 128 * 64);
    cr_assert_eq(khl_pool_check(p), 0);
    e->kept += 64;
    assert_check_says(p, "kept batches");
    e->kept -= 64;
    e->abandoned = 0;
    assert_check_says(p, "not marked abandoned");
    e->abandoned = 1;
    cr_assert_eq(khl_pool_check(p), 0, "repaired");
    khl_pool_destroy(p);
}

Test(pool_check, class_counter)
{
    khl_pool_t *p = pool_of(0, 0);
    void *b = khl_pool_alloc(p, 200);
    p->cls[class_of(200)].frees++;
    assert_check_says(p, "the free lists hold");
    p->cls[class_of(200)].frees--;
    khl_pool_free(p, b, 200);
    khl_pool_destroy(p);
}

Test(pool_check, system_bytes_and_the_chunk_index)
{
    khl_pool_t *p = pool_of(0, 0);
    void *b = khl_pool_alloc(p, 40000);   /* large */
    void *s = khl_pool_alloc(p, 40);
    p->system += 4096;
    assert_check_says(p, "system_bytes");
    p->system -= 4096;
    khl_pool_chunk_t *k = chunk_of(p, b);
    size_t i;
    for (i = 0; p->index[i] != (uintptr_t)k; i++)
        ;
    p->index[i] = 0;
    assert_check_says(p, "index");   /* the frame, or a chunk whose probe chain it broke */
    p->index[i] = (uintptr_t)k;
    cr_assert_eq(khl_pool_check(p), 0, "repaired");
    khl_pool_free(p, b, 40000);
    khl_pool_free(p, s, 40);
    khl_pool_destroy(p);
}

/* Blocks above max_small: a span's header against its arena, the arena's
 * window bits against its spans, the large-block counts, the kept huge
 * mappings and the chunk reservation (issue 21: "khl_pool_check validates
 * spans"). */
Test(pool_check, span_header_and_arena_bits)
{
    khl_pool_t *p = pool_of(0, 0);
    void *b = khl_pool_alloc(p, 40000);   /* a span of 3 windows of 16 KiB */
    khl_pool_chunk_t *k = chunk_of(p, b);
    cr_assert_gt(k->cls, 0, "a span, not a mapping of its own");
    arena_t *a = k->raw;
    k->cls += ARENA_MAX_WINDOWS;
    assert_check_says(p, "windows of arena");
    k->cls -= ARENA_MAX_WINDOWS;
    const uint64_t last = (uint64_t)1 << (a->nwin - 1);   /* a window no span holds */
    cr_assert_eq(a->used & last, 0);
    a->used |= last;
    assert_check_says(p, "used bits");
    a->used &= ~last;
    size_t size = k->size;
    k->size = k->cap + 1;
    assert_check_says(p, "large block");
    k->size = size;
    p->large_allocs++;
    assert_check_says(p, "large allocs");
    p->large_allocs--;
    cr_assert_eq(khl_pool_check(p), 0, "repaired");
    khl_pool_free(p, b, 40000);
    khl_pool_destroy(p);
}

Test(pool_check, kept_mappings_and_the_reservation)
{
    khl_pool_t *p = pool_of(0, 0);
    const size_t huge = p->large_max + 1;   /* a mapping of its own, small enough to keep */
    void *b = khl_pool_alloc(p, huge), *s = khl_pool_alloc(p, 40);
    cr_assert_not_null(b);
    khl_pool_free(p, b, huge);
    cr_assert_eq(p->ncached, 1, "the freed mapping is kept");
    p->ncached++;
    assert_check_says(p, "kept mappings");
    p->ncached--;
    p->resv_next += 1;
    assert_check_says(p, "chunk reservation");
    p->resv_next -= 1;
    cr_assert_eq(khl_pool_check(p), 0, "repaired");
    khl_pool_free(p, s, 40);
    khl_pool_destroy(p);
}

Test(pool_check, chunk_header_and_bump)
{
    khl_pool_t *p = pool_of(0, 0);
    void *b = khl_pool_alloc(p, 64);
    khl_pool_chunk_t *k = chunk_of(p, b);
    k->size += 16;
    assert_check_says(p, "header");
    k->size -= 16;
    p->cls[class_of(64)].bump += 8;
    assert_check_says(p, "off a slot boundary");
    p->cls[class_of(64)].bump -= 8;
    cr_assert_eq(khl_pool_check(p), 0, "repaired");
    khl_pool_free(p, b, 64);
    khl_pool_destroy(p);
}

/* A class's own records: its chunk list's links, its counts of carved and
 * never-used slots, its current chunk and bundle. */
Test(pool_check, class_records)
{
    khl_pool_t *p = pool_of(0, 0);
    void *b = khl_pool_alloc(p, 64), *other = khl_pool_alloc(p, 500);
    khl_pool_class_t *c = &p->cls[class_of(64)];
    khl_pool_chunk_t *k = chunk_of(p, b);
    k->prev = k;
    assert_check_says(p, "wrong prev link");
    k->prev = NULL;
    c->carved += 1;
    assert_check_says(p, "carved");
    c->carved -= 1;
    c->fresh_slots += 1;
    assert_check_says(p, "fresh_slots");
    c->fresh_slots -= 1;
    c->cur = chunk_of(p, other);
    assert_check_says(p, "not among the class's chunks");
    c->cur = k;
    c->lim += 1;
    assert_check_says(p, "current bundle bounds");
    c->lim -= 1;
    cr_assert_eq(khl_pool_check(p), 0, "repaired");
    khl_pool_free(p, b, 64);
    khl_pool_free(p, other, 500);
    khl_pool_destroy(p);
}

/* A checked pool's live bits: a free block's, and a never-used slot's. */
Test(pool_check, checked_pool_live_bits)
{
    khl_pool_t *p = pool_of(0, 1);
    void *x = khl_pool_alloc(p, 48), *y = khl_pool_alloc(p, 48);
    khl_pool_chunk_t *k = chunk_of(p, x);
    khl_pool_free(p, x, 48);
    khl_i_set_live(k, x, 1);
    assert_check_says(p, "is marked live");
    khl_i_set_live(k, x, 0);
    char *last = k->slots + (k->cap - 1) * k->size;   /* beyond the bump */
    khl_i_set_live(k, last, 1);
    assert_check_says(p, "never-used slot");
    khl_i_set_live(k, last, 0);
    cr_assert_eq(khl_pool_check(p), 0, "repaired");
    khl_pool_free(p, y, 48);
    khl_pool_destroy(p);
}

Test(pool_check, reserve_promise)
{
    khl_pool_t *p = pool_of(0, 0);
    cr_assert_eq(khl_pool_reserve(p, 64, 100), 0);
    p->cls[class_of(64)].reserve_until += 100000;
    assert_check_says(p, "the reserve promises");
    p->cls[class_of(64)].reserve_until -= 100000;
    cr_assert_eq(khl_pool_check(p), 0, "repaired");
    khl_pool_destroy(p);
}

/* The fast paths take a small block's class from the pool's table, the
 * rest of the pool from class_of's arithmetic: they must agree on every
 * size, whatever max_small. */
Test(pool_check, the_class_table_agrees_with_class_of)
{
    static const size_t max_small[] = {0, 100, 16 * 1024 + 16, 1024 * 1024};
    for (size_t m = 0; m < sizeof max_small / sizeof *max_small; m++)
        for (int ts = 0; ts < 2; ts++) {
            khl_pool_options_t o;
            memset(&o, 0, sizeof o);
            o.max_small = max_small[m];
            o.thread_safe = ts;
            khl_pool_t *p = khl_pool_new(&o);
            cr_assert_not_null(p);
            for (size_t n = 1; n <= p->max_small; n++)
                cr_assert_eq(class_of_small(p, n), class_of(n), "max_small %zu, size %zu", p->max_small, n);
            khl_pool_destroy(p);
        }
}

#ifdef KHL_DEBUG
/* Built with -DKHL_DEBUG the pool checks itself when a call leaves the fast
 * path: a large allocation on a corrupted pool aborts. */
Test(pool_check, debug_build_aborts_on_a_broken_invariant, .signal = SIGABRT)
{
    khl_pool_t *p = pool_of(0, 0);
    p->hot.in_use += 16;
    khl_pool_alloc(p, 40000);
}
#endif
