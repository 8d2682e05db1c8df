/* Thread tests of khl_pool with thread_safe = 1: cross-thread frees through
 * a shared queue with contents checked, stats consistency, thread exit with
 * cached blocks, pools destroyed while their threads live, several pools per
 * thread, a reserve used up by several threads.  Run under ThreadSanitizer
 * as well. */
#define _POSIX_C_SOURCE 200809L   /* pthread barriers under -std=c11 */
#define _DEFAULT_SOURCE 1         /* mincore */
#include <criterion/criterion.h>

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "khashlite/khl_pool.h"
#include "khashlite/khl_pool_internal.h"   /* white box: a thread's record */
#include "support.h"

#define NTHREADS 4

/* keep: thread_keep_bytes (0: the default); pages: lazy_pages. */
static khl_pool_t *pt_pool_with(int checked, size_t keep, int pages)
{
    khl_pool_options_t o;
    khl_pool_t *p;
    memset(&o, 0, sizeof o);
    o.thread_safe = 1;
    o.checked = checked;
    o.thread_keep_bytes = keep;
    o.lazy_pages = pages;
    p = khl_pool_new(&o);
    cr_assert_not_null(p);
    return p;
}

static khl_pool_t *pt_pool_keeping(int checked, size_t keep)
{
    return pt_pool_with(checked, keep, 0);
}

static khl_pool_t *pt_pool(int checked)
{
    return pt_pool_keeping(checked, 0);
}

/* n blocks allocated and all freed, the stats say so exactly, and trim
 * gives every chunk back; then the pool goes. */
static void pt_all_back(khl_pool_t *p, uint64_t n)
{
    khl_pool_stats_t s;
    khl_pool_stats(p, &s);
    cr_assert_eq(s.allocs, n);
    cr_assert_eq(s.frees, n);
    cr_assert_eq(s.in_use_bytes, 0);
    khl_pool_trim(p);
    khl_pool_stats(p, &s);
    cr_assert_eq(s.system_bytes, 0);
    khl_pool_destroy(p);
}

/* Each block starts with its id and size; the rest is a pattern of the id. */
typedef struct hdr {
    uint64_t id;
    size_t n;
} hdr_t;

static void *pt_make(khl_pool_t *p, size_t n, uint64_t id)
{
    unsigned char *b = khl_pool_alloc(p, n);
    size_t i;
    hdr_t h;
    cr_assert_not_null(b);
    cr_assert_eq((uintptr_t)b % _Alignof(max_align_t), 0);
    h.id = id;
    h.n = n;
    memcpy(b, &h, sizeof h);
    for (i = sizeof h; i < n; i++)
        b[i] = (unsigned char)(id + i);
    return b;
}

static void pt_check_free(khl_pool_t *p, void *blk, int sized)
{
    unsigned char *b = blk;
    size_t i;
    hdr_t h;
    memcpy(&h, b, sizeof h);
    for (i = sizeof h; i < h.n; i++)
        if (b[i] != (unsigned char)(h.id + i))
            cr_assert_fail("block %llu corrupted at %zu", (unsigned long long)h.id, i);
    if (sized)
        khl_pool_free(p, b, h.n);
    else
        khl_pool_free_unsized(p, b);
}

/* ------------------------------------------------------------------------ */
/* A shared queue: blocks allocated by one thread are freed by another.      */

#define QCAP 512

typedef struct queue {
    pthread_mutex_t m;
    void *item[QCAP];
    size_t head, count;
} queue_t;

static int q_push(queue_t *q, void *b)
{
    int ok;
    pthread_mutex_lock(&q->m);
    ok = q->count < QCAP;
    if (ok) {
        q->item[(q->head + q->count) % QCAP] = b;
        q->count++;
    }
    pthread_mutex_unlock(&q->m);
    return ok;
}

static void *q_pop(queue_t *q)
{
    void *b = NULL;
    pthread_mutex_lock(&q->m);
    if (q->count) {
        b = q->item[q->head];
        q->head = (q->head + 1) % QCAP;
        q->count--;
    }
    pthread_mutex_unlock(&q->m);
    return b;
}

typedef struct worker {
    khl_pool_t *pool;
    queue_t *q;
    int tid, iters;
} worker_t;

static size_t pt_size(uint64_t *s)
{
    uint64_t r = prng_next(s) % 100;
    if (r < 80)
        return sizeof(hdr_t) + (size_t)(prng_next(s) % 240);
    if (r < 99)
        return sizeof(hdr_t) + (size_t)(prng_next(s) % 16000);
    return 20000 + (size_t)(prng_next(s) % 60000);
}

static void *stress_worker(void *arg)
{
    worker_t *w = arg;
    uint64_t seed = 0x1234567ULL * (uint64_t)(w->tid + 1), id = (uint64_t)w->tid << 40;
    void *mine[64];
    int nmine = 0, i;
    for (i = 0; i < w->iters; i++) {
        uint64_t r = prng_next(&seed) % 10;
        if (r < 4) {
            void *b = pt_make(w->pool, pt_size(&seed), id++);
            if (!q_push(w->q, b))
                pt_check_free(w->pool, b, 1);
        } else if (r < 7) {
            void *b = q_pop(w->q);   /* most likely another thread's */
            if (b)
                pt_check_free(w->pool, b, (int)(r & 1));
        } else if (r < 9 && nmine < 64) {
            mine[nmine++] = pt_make(w->pool, pt_size(&seed), id++);
        } else if (nmine) {
            pt_check_free(w->pool, mine[--nmine], (int)(r & 1));
        }
    }
    while (nmine)
        pt_check_free(w->pool, mine[--nmine], 0);
    return NULL;
}

static void stress(khl_pool_t *p, int iters)
{
    static queue_t q;
    pthread_t th[NTHREADS];
    worker_t w[NTHREADS];
    khl_pool_stats_t s;
    void *b;
    int i;
    memset(&q, 0, sizeof q);
    pthread_mutex_init(&q.m, NULL);
    for (i = 0; i < NTHREADS; i++) {
        w[i].pool = p;
        w[i].q = &q;
        w[i].tid = i;
        w[i].iters = iters;
        cr_assert_eq(pthread_create(&th[i], NULL, stress_worker, &w[i]), 0);
    }
    for (i = 0; i < 20; i++) {   /* stats while the threads run */
        s = test_pool_stats(p);
        cr_assert_geq(s.allocs, s.frees - 0);
    }
    for (i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    while ((b = q_pop(&q)) != NULL)
        pt_check_free(p, b, 1);
    pthread_mutex_destroy(&q.m);
    s = test_pool_stats(p);
    cr_assert_eq(s.in_use_bytes, 0);
    cr_assert_eq(s.allocs, s.frees);
    cr_assert_gt(s.allocs, (uint64_t)iters);
    cr_assert_geq(s.peak_bytes, 1);
    /* The workers exited: their caches went back, so trim returns it all. */
    khl_pool_trim(p);
    s = test_pool_stats(p);
    cr_assert_eq(s.system_bytes, 0, "%zu bytes still held", s.system_bytes);
}

Test(pool_threads, cross_thread_frees_through_a_queue)
{
    khl_pool_t *p = pt_pool(0);
    stress(p, 60000);
    khl_pool_destroy(p);
}

Test(pool_threads, checked_thread_safe_pool)
{
    khl_pool_t *p = pt_pool(1);
    stress(p, 20000);
    khl_pool_destroy(p);
}

/* ------------------------------------------------------------------------ */
/* Thread exit and pool lifetime                                             */

static void *alloc_and_free_many(void *arg)
{
    khl_pool_t *p = arg;
    void *b[2000];
    int i;
    for (i = 0; i < 2000; i++)
        b[i] = pt_make(p, 16 + (size_t)(i % 500), (uint64_t)i);
    for (i = 0; i < 2000; i++)
        pt_check_free(p, b[i], i & 1);
    return NULL;   /* its cache still holds blocks */
}

/* The exited thread's record, and the blocks it cached, are the pool's:
 * trim gives them back. */
Test(pool_threads, trim_gives_back_an_exited_threads_cache)
{
    khl_pool_t *p = pt_pool(0);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, alloc_and_free_many, p), 0);
    pthread_join(t, NULL);
    cr_assert_not_null(p->abandoned);
    cr_assert_gt(test_pool_stats(p).peak_bytes, 0);
    pt_all_back(p, 2000);
}

/* 2000 blocks of 64 B allocated, all but the last `keep` (up to 10) freed
 * (those go to live[]), then the thread exits. */
typedef struct leaver {
    khl_pool_t *p;
    int keep;
    void *live[10];
} leaver_t;

static void *free_most_and_exit(void *arg)
{
    leaver_t *l = arg;
    static void *b[2000];
    for (int i = 0; i < 2000; i++)
        b[i] = pt_make(l->p, 64, (uint64_t)i);
    for (int i = 0; i < 2000 - l->keep; i++)
        pt_check_free(l->p, b[i], 1);
    memcpy(l->live, b + 2000 - l->keep, (size_t)l->keep * sizeof *b);
    return NULL;
}

/* Trim frees the exited threads' records; the counts they kept go to the
 * pool's, blocks still live included, so the stats do not move. */
Test(pool_threads, trim_frees_exited_threads_records_and_keeps_their_counts)
{
    khl_pool_t *p = pt_pool(0);
    leaver_t l = {.p = p, .keep = 10};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, free_most_and_exit, &l), 0);
    pthread_join(t, NULL);
    khl_pool_stats_t before = test_pool_stats(p), after;
    cr_assert_eq(before.in_use_bytes, 10 * 64);
    cr_assert_eq(p->nabandoned, 1);
    khl_pool_trim(p);
    cr_assert_null(p->abandoned);
    cr_assert_eq(p->nabandoned, 0);
    after = test_pool_stats(p);
    cr_assert_eq(after.allocs, before.allocs);
    cr_assert_eq(after.frees, before.frees);
    cr_assert_eq(after.in_use_bytes, before.in_use_bytes);
    cr_assert_eq(khl_pool_check(p), 0);
    for (int i = 0; i < 10; i++)
        pt_check_free(p, l.live[i], 1);
    pt_all_back(p, 2000);
}

/* Frees the blocks arg lists (allocated by another thread), then exits:
 * its record counts frees and no allocations. */
typedef struct freer {
    khl_pool_t *p;
    void **blocks;
    int n;
    pthread_barrier_t *bar;     /* NULL: exit at once */
} freer_t;

static void *free_theirs_and_exit(void *arg)
{
    freer_t *f = arg;
    for (int i = 0; i < f->n; i++)
        pt_check_free(f->p, f->blocks[i], 1);
    if (f->bar)
        pthread_barrier_wait(f->bar);
    return NULL;
}

/* What a pool's peak may be after blocks of `held` bytes at most were live
 * at once, then one large block allocated and grown; returns the
 * allocations that took (2 where the growth moved the block). */
static uint64_t pt_peak_sane(khl_pool_t *p, size_t held)
{
    khl_pool_stats_t s, s0 = test_pool_stats(p);
    void *big = khl_pool_alloc(p, 100000);   /* the locked path */
    cr_assert_not_null(big);
    big = khl_pool_realloc(p, big, 100000, 150000);
    cr_assert_not_null(big);
    khl_pool_stats(p, &s);
    cr_assert_eq(s.in_use_bytes, 150000);
    cr_assert_geq(s.peak_bytes, 150000);
    cr_assert_leq(s.peak_bytes, held + 250000, "peak %zu", s.peak_bytes);
    khl_pool_free(p, big, 150000);
    return s.allocs - s0.allocs;
}

/* A retired record of a thread that freed more than it allocated gives the
 * pool's own count a negative share; the peak is the whole sum's, never
 * that count's alone (which wrapped to about 2^64 on the next allocation
 * of the locked path). */
Test(pool_threads, a_retired_record_of_frees_leaves_the_peak_as_it_was)
{
    enum { N = 2000 };
    khl_pool_t *p = pt_pool(0);
    static void *b[N];
    freer_t f = {p, b, N, NULL};
    pthread_t t;
    for (int i = 0; i < N; i++)
        b[i] = pt_make(p, 64, (uint64_t)i);
    cr_assert_eq(pthread_create(&t, NULL, free_theirs_and_exit, &f), 0);
    pthread_join(t, NULL);
    khl_pool_trim(p);                        /* retires the record */
    cr_assert_eq(p->nabandoned, 0);
    pt_all_back(p, N + pt_peak_sane(p, N * 64));
}

/* The same for the records an exit retires at once, past KEEP_ABANDONED. */
Test(pool_threads, records_retired_past_keep_abandoned_leave_the_peak_as_it_was)
{
    enum { T = KEEP_ABANDONED + 3, PER = 2000 };
    khl_pool_t *p = pt_pool(0);
    static void *b[T * PER];
    static freer_t f[T];
    static pthread_t t[T];
    pthread_barrier_t bar;
    cr_assert_eq(pthread_barrier_init(&bar, NULL, T), 0);
    for (int i = 0; i < T * PER; i++)
        b[i] = pt_make(p, 64, (uint64_t)i);
    for (int i = 0; i < T; i++) {
        f[i] = (freer_t){p, b + i * PER, PER, &bar};
        cr_assert_eq(pthread_create(&t[i], NULL, free_theirs_and_exit, &f[i]), 0);
    }
    for (int i = 0; i < T; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&bar);
    cr_assert_eq(p->nabandoned, KEEP_ABANDONED);
    pt_all_back(p, T * PER + pt_peak_sane(p, T * PER * 64));
}

/* One 64 B block allocated and freed, then the thread waits for all the
 * others (every thread alive at once) and exits. */
typedef struct burst {
    khl_pool_t *p;
    pthread_barrier_t *bar;
} burst_t;

static void *one_block_all_alive(void *arg)
{
    burst_t *a = arg;
    pt_check_free(a->p, pt_make(a->p, 64, 1), 1);
    pthread_barrier_wait(a->bar);
    return NULL;
}

/* A burst of threads exiting while none starts leaves the pool at most
 * KEEP_ABANDONED records; the others go back at once, blocks and counts. */
Test(pool_threads, a_burst_of_exits_leaves_at_most_keep_abandoned_records)
{
    enum { T = KEEP_ABANDONED + 3 };
    khl_pool_t *p = pt_pool(0);
    static pthread_t t[T];
    pthread_barrier_t bar;
    burst_t a = {p, &bar};
    cr_assert_eq(pthread_barrier_init(&bar, NULL, T), 0);
    for (int i = 0; i < T; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, one_block_all_alive, &a), 0);
    for (int i = 0; i < T; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&bar);
    cr_assert_eq(p->nabandoned, KEEP_ABANDONED);
    cr_assert_eq(khl_pool_check(p), 0);
    pt_all_back(p, T);
}

/* 2000 blocks of 64 B allocated and freed, then the thread exits: its full
 * batches (128 blocks each) stay in its record, which the pool keeps. */
static void *free_batches_and_exit(void *arg)
{
    leaver_t l = {.p = arg, .keep = 0};
    return free_most_and_exit(&l);
}

/* This thread's record for p, made by one allocation of another class
 * (16 B) than the tests' own. */
static const thread_cache_t *pt_own_record(khl_pool_t *p)
{
    khl_pool_free(p, khl_pool_alloc(p, 16), 16);
    const thread_cache_t *e = khl_i_own_cache(p);
    cr_assert_not_null(e);
    return e;
}

/* A live thread whose class runs dry takes an exited thread's blocks
 * before a chunk from the system, and its full batches REFILL_CHAINS at a
 * time, not one batch per trip through the lock, and not all at once
 * either: each is a cold line read under the lock, and a long hold puts
 * the threads starting beside it to sleep. */
Test(pool_threads, a_refill_takes_an_exited_threads_batches_a_few_at_a_time)
{
    khl_pool_t *p = pt_pool(0);
    const thread_cache_t *e = pt_own_record(p);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, free_batches_and_exit, p), 0);
    pthread_join(t, NULL);
    unsigned ci = class_of(64);
    size_t batch = p->cls[ci].batch, batch_bytes = batch * p->cls[ci].size, chunks = p->nchunks;
    /* 2000 / 128: 15 full batches.  The first refill takes REFILL_CHAINS,
     * one to allocate from; the blocks of the others wait in the pool. */
    cr_assert_eq(2000 / batch, 15);
    static void *b[2000];
    b[0] = khl_pool_alloc(p, 64);   /* this thread's first of the class: a refill */
    cr_assert_not_null(b[0]);
    cr_assert_eq(e->kept, (REFILL_CHAINS - 1) * batch_bytes, "kept %zu bytes, %zu a batch", e->kept,
                 batch_bytes);
    /* The second takes the other 7: every full batch reused, no chunk more. */
    for (size_t i = 1; i < 15 * batch; i++)
        cr_assert_not_null(b[i] = khl_pool_alloc(p, 64));
    cr_assert_null(p->cls[ci].batches);
    cr_assert_eq(p->nchunks, chunks);
    for (size_t i = 0; i < 15 * batch; i++)
        khl_pool_free(p, b[i], 64);
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_destroy(p);
}

/* A reserve counts the blocks an exited thread's cache holds as ready: it
 * takes no chunk for them. */
Test(pool_threads, a_reserve_counts_an_exited_threads_blocks_ready)
{
    khl_pool_t *p = pt_pool(0);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, free_batches_and_exit, p), 0);
    pthread_join(t, NULL);
    size_t chunks = p->nchunks, system = test_pool_stats(p).system_bytes;
    cr_assert_eq(khl_pool_reserve(p, 64, 2000), 0);
    cr_assert_eq(p->nchunks, chunks, "the reserve took a chunk");
    cr_assert_eq(test_pool_stats(p).system_bytes, system);
    cr_assert_eq(khl_pool_check(p), 0);
    static void *b[2000];
    for (int i = 0; i < 2000; i++)
        cr_assert_not_null(b[i] = khl_pool_alloc(p, 64));
    cr_assert_eq(p->nchunks, chunks);
    for (int i = 0; i < 2000; i++)
        khl_pool_free(p, b[i], 64);
    pt_all_back(p, 4000);
}

/* Threads started after others exited adopt their records whole: each
 * goes on with one exited thread's blocks, however their allocations
 * interleave.  (Given back a batch at a time, an exited thread's blocks
 * were spread over the threads that came next; run after run, more pages
 * held blocks of two threads, and two threads sharing a pool ran slower
 * each run.) */
enum { ADOPT_N = 2000 };

typedef struct adopter {
    khl_pool_t *p;
    pthread_barrier_t *bar;
    int second;                /* 1: waits for the other before each step */
    void *b[ADOPT_N];
} adopter_t;

/* ADOPT_N blocks of 64 B in two steps, 200 and then the rest, taking
 * turns with the other thread (first: 200, other: 200, first: the rest,
 * other: the rest), all held until both are done, then freed. */
static void *adopter_run(void *arg)
{
    adopter_t *a = arg;
    int i;
    if (a->second)
        pthread_barrier_wait(a->bar);
    for (i = 0; i < 200; i++)
        a->b[i] = pt_make(a->p, 64, (uint64_t)i);
    pthread_barrier_wait(a->bar);
    pthread_barrier_wait(a->bar);
    for (; i < ADOPT_N; i++)
        a->b[i] = pt_make(a->p, 64, (uint64_t)i);
    pthread_barrier_wait(a->bar);
    if (!a->second)
        pthread_barrier_wait(a->bar);
    for (i = 0; i < ADOPT_N; i++)
        pt_check_free(a->p, a->b[i], 1);
    return NULL;
}

/* The one chunk all of a's blocks lie in, NULL when they span several. */
static const khl_pool_chunk_t *adopter_chunk(const khl_pool_t *p, const adopter_t *a)
{
    const khl_pool_chunk_t *k = chunk_of(p, a->b[0]);
    for (int i = 1; i < ADOPT_N; i++)
        if (chunk_of(p, a->b[i]) != k)
            return NULL;
    return k;
}

Test(pool_threads, threads_started_after_others_exited_adopt_their_caches_whole)
{
    khl_pool_t *p = pt_pool(0);
    static adopter_t a[4];
    pthread_barrier_t bar;
    pthread_t t[4];
    int i;
    cr_assert_eq(pthread_barrier_init(&bar, NULL, 2), 0);
    /* Phase 1: two threads; each takes a chunk of its own. */
    for (i = 0; i < 2; i++) {
        a[i] = (adopter_t){.p = p, .bar = &bar, .second = i};
        cr_assert_eq(pthread_create(&t[i], NULL, adopter_run, &a[i]), 0);
    }
    for (i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    const khl_pool_chunk_t *k0 = adopter_chunk(p, &a[0]), *k1 = adopter_chunk(p, &a[1]);
    cr_assert(k0 && k1 && k0 != k1, "phase 1: each thread's blocks in a chunk of its own");
    /* Phase 2: two new threads, whose allocations take turns. */
    for (i = 2; i < 4; i++) {
        a[i] = (adopter_t){.p = p, .bar = &bar, .second = i == 3};
        cr_assert_eq(pthread_create(&t[i], NULL, adopter_run, &a[i]), 0);
    }
    for (i = 2; i < 4; i++)
        pthread_join(t[i], NULL);
    const khl_pool_chunk_t *k2 = adopter_chunk(p, &a[2]), *k3 = adopter_chunk(p, &a[3]);
    cr_assert(k2 && k3, "a new thread's blocks span both exited threads' chunks");
    cr_assert((k2 == k0 && k3 == k1) || (k2 == k1 && k3 == k0), "the new threads took a chunk each");
    pthread_barrier_destroy(&bar);
    pt_all_back(p, 4 * ADOPT_N);
}

/* One 100 B block allocated, written and freed; then, if arg names a
 * barrier, waits there twice (while another thread takes a chunk). */
typedef struct one_block {
    khl_pool_t *p;
    pthread_barrier_t *bar;
} one_block_t;

static void *one_block_and_exit(void *arg)
{
    one_block_t *o = arg;
    char *b = khl_pool_alloc(o->p, 100);
    cr_assert_not_null(b);
    *b = 1;
    khl_pool_free(o->p, b, 100);
    if (o->bar) {
        pthread_barrier_wait(o->bar);
        pthread_barrier_wait(o->bar);
    }
    return NULL;
}

/* Resident pages of the default-sized chunk k. */
static size_t chunk_resident_pages(const khl_pool_chunk_t *k)
{
    unsigned char vec[KHL_POOL_DEFAULT_CHUNK_BYTES / 4096];
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = KHL_POOL_DEFAULT_CHUNK_BYTES / page, r = 0;
    cr_assert_leq(n, sizeof vec);
    cr_assert_eq(mincore((void *)k, KHL_POOL_DEFAULT_CHUNK_BYTES, vec), 0);
    for (size_t i = 0; i < n; i++)
        r += vec[i] & 1;
    return r;
}

/* A thread that exits with its run of never-used slots nearly whole keeps
 * it in its record, unwritten; a thread that adopts the record goes on
 * where it stopped, and a refill that takes the record's blocks gives the
 * run back as the class's never-used slots, nothing written into them (it
 * used to push them as free blocks, which writes into them and faulted the
 * chunk's pages in): the pages no thread reached stay out. */
Test(pool_threads, an_exited_threads_run_goes_back_unwritten)
{
    khl_pool_t *p = pt_pool(0);
    const thread_cache_t *mine = pt_own_record(p);
    one_block_t o = {p, NULL};
    pthread_t t;
    unsigned ci = class_of(100);
    cr_assert_eq(pthread_create(&t, NULL, one_block_and_exit, &o), 0);
    pthread_join(t, NULL);
    const khl_pool_class_t *c = &p->cls[ci];
    const thread_cache_t *e = p->abandoned;
    cr_assert_not_null(c->cur);
    cr_assert(e && e != mine, "the exited thread's record is the pool's");
    cr_assert_eq(e->c[ci].bump, c->cur->slots + c->size, "its run from the chunk's second slot");
    cr_assert_leq(chunk_resident_pages(c->cur), 2);
    cr_assert_eq(khl_pool_check(p), 0);
    cr_assert_eq(pthread_create(&t, NULL, one_block_and_exit, &o), 0);
    pthread_join(t, NULL);
    cr_assert_eq(p->abandoned, e, "the second thread adopted the record");
    cr_assert_eq(e->c[ci].bump, c->cur->slots + c->size, "the freed block served the second thread");
    void *b = khl_pool_alloc(p, 100);   /* this thread's refill takes the record's blocks */
    cr_assert_not_null(b);
    cr_assert_eq(c->bump, c->cur->slots + c->size, "the run back as the class's never-used slots");
    cr_assert_null(e->c[ci].end);
    cr_assert_leq(chunk_resident_pages(c->cur), 2);
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_free(p, b, 100);
    pt_all_back(p, 4);
}

/* When another thread has taken a new chunk meanwhile, an exited thread's
 * run goes back as free blocks as far as its pages are in and stays never
 * used past them; the counts hold and trim frees both chunks.  (A pool
 * that leaves pages to first writes has them all "in": its run goes back
 * whole, and the pages its free blocks' links land on fault.) */
Test(pool_threads, a_run_given_back_after_its_chunk_is_no_longer_current)
{
    khl_pool_t *p = pt_pool_with(0, 0, KHL_POOL_PAGES_AHEAD);
    pthread_barrier_t bar;
    pthread_t a, b;
    pt_own_record(p);
    cr_assert_eq(pthread_barrier_init(&bar, NULL, 2), 0);
    one_block_t oa = {p, &bar}, ob = {p, NULL};
    cr_assert_eq(pthread_create(&a, NULL, one_block_and_exit, &oa), 0);
    pthread_barrier_wait(&bar);   /* a holds the rest of the first chunk */
    cr_assert_eq(pthread_create(&b, NULL, one_block_and_exit, &ob), 0);
    pthread_join(b, NULL);        /* b took a second chunk */
    pthread_barrier_wait(&bar);
    pthread_join(a, NULL);
    pthread_barrier_destroy(&bar);
    const khl_pool_class_t *c = &p->cls[class_of(100)];
    cr_assert_not_null(c->chunks->next, "two chunks");
    void *x = khl_pool_alloc(p, 100);   /* takes both records' blocks and runs back */
    cr_assert_not_null(x);
    cr_assert_eq(khl_pool_check(p), 0);
    for (const khl_pool_chunk_t *k = c->chunks; k; k = k->next)
        cr_assert_leq(chunk_resident_pages(k), 2);
    khl_pool_free(p, x, 100);
    pt_all_back(p, 4);
}

typedef struct lifetime {
    pthread_barrier_t *bar;
    khl_pool_t **pool;
} lifetime_t;

/* Uses a pool, waits while main destroys it and makes another (maybe at the
 * same address), then uses the new one: no stale cache may leak across. */
static void *outlive_pool(void *arg)
{
    lifetime_t *l = arg;
    void *b[100];
    int i;
    for (i = 0; i < 100; i++)
        b[i] = pt_make(*l->pool, 48, (uint64_t)i);
    for (i = 0; i < 100; i++)
        pt_check_free(*l->pool, b[i], 1);
    pthread_barrier_wait(l->bar);   /* main destroys the pool */
    pthread_barrier_wait(l->bar);   /* main made a new one */
    for (i = 0; i < 100; i++)
        b[i] = pt_make(*l->pool, 48, (uint64_t)i + 1000);
    for (i = 0; i < 100; i++)
        pt_check_free(*l->pool, b[i], 0);
    return NULL;
}

Test(pool_threads, pool_destroyed_while_threads_live)
{
    pthread_barrier_t bar;
    khl_pool_t *p = pt_pool(0);
    lifetime_t l;
    pthread_t t[3];
    khl_pool_stats_t s;
    int i;
    pthread_barrier_init(&bar, NULL, 4);
    l.bar = &bar;
    l.pool = &p;
    for (i = 0; i < 3; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, outlive_pool, &l), 0);
    pthread_barrier_wait(&bar);
    khl_pool_destroy(p);
    p = pt_pool(0);
    pthread_barrier_wait(&bar);
    for (i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    s = test_pool_stats(p);
    cr_assert_eq(s.allocs, 300, "only the new pool's calls count");
    cr_assert_eq(s.frees, 300);
    cr_assert_eq(s.in_use_bytes, 0);
    khl_pool_trim(p);
    cr_assert_eq(test_pool_stats(p).system_bytes, 0);
    khl_pool_destroy(p);
    pthread_barrier_destroy(&bar);
}

static void *several_pools(void *arg)
{
    khl_pool_t **pools = arg;
    void *b[3][300];
    int i, k;
    for (i = 0; i < 300; i++)
        for (k = 0; k < 3; k++)
            b[k][i] = pt_make(pools[k], 24 + (size_t)(i * k), (uint64_t)(i * 3 + k));
    for (i = 0; i < 300; i++)
        for (k = 0; k < 3; k++)
            pt_check_free(pools[k], b[k][i], (i + k) & 1);
    return NULL;
}

Test(pool_threads, several_pools_in_several_threads)
{
    khl_pool_t *pools[3];
    pthread_t t[NTHREADS];
    int i, k;
    for (k = 0; k < 3; k++)
        pools[k] = pt_pool(0);
    for (i = 0; i < NTHREADS; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, several_pools, pools), 0);
    for (i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    for (k = 0; k < 3; k++) {
        khl_pool_stats_t s = test_pool_stats(pools[k]);
        cr_assert_eq(s.allocs, 300 * NTHREADS);
        cr_assert_eq(s.frees, 300 * NTHREADS);
        cr_assert_eq(s.in_use_bytes, 0);
        khl_pool_destroy(pools[k]);
    }
}

/* A thread that exits with live blocks: they stay valid for other threads. */
static void *alloc_and_exit(void *arg)
{
    khl_pool_t *p = ((void **)arg)[0];
    void **out = arg;
    int i;
    for (i = 1; i <= 50; i++)
        out[i] = pt_make(p, 100, (uint64_t)i);
    return NULL;
}

Test(pool_threads, blocks_outlive_their_thread)
{
    khl_pool_t *p = pt_pool(0);
    void *slots[51];
    pthread_t t;
    int i;
    slots[0] = p;
    cr_assert_eq(pthread_create(&t, NULL, alloc_and_exit, slots), 0);
    pthread_join(t, NULL);
    cr_assert_eq(test_pool_stats(p).in_use_bytes, 50 * khl_pool_block_size(p, slots[1]));
    for (i = 1; i <= 50; i++)
        pt_check_free(p, slots[i], i & 1);
    cr_assert_eq(test_pool_stats(p).in_use_bytes, 0);
    khl_pool_destroy(p);
}

/* A reserve is used up by allocations in any thread: two threads take 1501
 * blocks each of a 3000-block reserve (thread caches take surplus blocks
 * beyond it, which must count once handed out) and exit; once main has
 * freed them all, trim gives every chunk back. */
typedef struct reserve_share {
    khl_pool_t *pool;
    void *b[1501];
} reserve_share_t;

static void *take_share(void *arg)
{
    reserve_share_t *r = arg;
    int i;
    for (i = 0; i < 1501; i++)
        r->b[i] = pt_make(r->pool, 100, (uint64_t)i);
    return NULL;
}

Test(pool_threads, reserve_used_up_by_several_threads)
{
    static reserve_share_t share[2];
    khl_pool_t *p = pt_pool(0);
    pthread_t t[2];
    size_t sys;
    int i, j;
    cr_assert_eq(khl_pool_reserve(p, 100, 3000), 0);
    sys = test_pool_stats(p).system_bytes;
    for (i = 0; i < 2; i++) {
        share[i].pool = p;
        cr_assert_eq(pthread_create(&t[i], NULL, take_share, &share[i]), 0);
    }
    for (i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(test_pool_stats(p).system_bytes, sys, "3000 of the 3002 blocks were reserved");
    for (i = 0; i < 2; i++)
        for (j = 0; j < 1501; j++)
            pt_check_free(p, share[i].b[j], j & 1);
    khl_pool_trim(p);
    cr_assert_eq(test_pool_stats(p).system_bytes, 0, "trim kept %zu bytes", test_pool_stats(p).system_bytes);
    khl_pool_destroy(p);
}

/* One thread only allocates, another only frees: the freeing thread's
 * flushed batches must reach the allocating thread, not pile up. */
typedef struct pc {
    khl_pool_t *pool;
    queue_t q;
    int total;
} pc_t;

static void *producer(void *arg)
{
    pc_t *pc = arg;
    int i;
    for (i = 0; i < pc->total; i++) {
        void *b = pt_make(pc->pool, 100, (uint64_t)i);
        while (!q_push(&pc->q, b))
            sched_yield();
    }
    return NULL;
}

static void *consumer(void *arg)
{
    pc_t *pc = arg;
    int done = 0;
    while (done < pc->total) {
        void *b = q_pop(&pc->q);
        if (!b) {
            sched_yield();
            continue;
        }
        pt_check_free(pc->pool, b, done & 1);
        done++;
    }
    return NULL;
}

Test(pool_threads, producer_consumer_reuses_memory)
{
    static pc_t pc;
    pthread_t a, b;
    khl_pool_stats_t s;
    memset(&pc, 0, sizeof pc);
    pthread_mutex_init(&pc.q.m, NULL);
    pc.pool = pt_pool(0);
    pc.total = 200000;   /* 22 MB if nothing were reused */
    cr_assert_eq(pthread_create(&a, NULL, producer, &pc), 0);
    cr_assert_eq(pthread_create(&b, NULL, consumer, &pc), 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    s = test_pool_stats(pc.pool);
    cr_assert_eq(s.in_use_bytes, 0);
    cr_assert_eq(s.allocs, 200000);
    cr_assert_lt(s.system_bytes, (size_t)4 << 20, "%zu bytes taken: freed blocks were not reused",
                 s.system_bytes);
    khl_pool_destroy(pc.pool);
    pthread_mutex_destroy(&pc.q.m);
}

/* ------------------------------------------------------------------------ */
/* What a thread keeps, what it publishes                                    */

#define KEEP_BLOCKS 1280   /* ten batches of the 112-byte class */

/* A thread that allocates and frees KEEP_BLOCKS blocks of 100 B, then waits
 * at the barrier while the test looks at the pool, then at it again before
 * exiting. */
typedef struct keeper {
    khl_pool_t *pool;
    pthread_barrier_t freed, done;
    void *blocks[KEEP_BLOCKS];
} keeper_t;

static void *keeper_run(void *arg)
{
    keeper_t *k = arg;
    int i;
    for (i = 0; i < KEEP_BLOCKS; i++)
        k->blocks[i] = pt_make(k->pool, 100, (uint64_t)i);
    for (i = 0; i < KEEP_BLOCKS; i++)
        pt_check_free(k->pool, k->blocks[i], 1);
    pthread_barrier_wait(&k->freed);
    pthread_barrier_wait(&k->done);
    return NULL;
}

static void keeper_start(keeper_t *k, pthread_t *t, size_t keep)
{
    k->pool = pt_pool_keeping(0, keep);
    pthread_barrier_init(&k->freed, NULL, 2);
    pthread_barrier_init(&k->done, NULL, 2);
    cr_assert_eq(pthread_create(t, NULL, keeper_run, k), 0);
    pthread_barrier_wait(&k->freed);
}

static void keeper_finish(keeper_t *k, pthread_t t)
{
    pthread_barrier_wait(&k->done);
    pthread_join(t, NULL);
    cr_assert_eq(khl_pool_check(k->pool), 0);
    khl_pool_destroy(k->pool);
    pthread_barrier_destroy(&k->freed);
    pthread_barrier_destroy(&k->done);
}

/* How many of the keeper's freed blocks this thread gets back among
 * KEEP_BLOCKS allocations (freed again before returning). */
static int blocks_reused(keeper_t *k)
{
    static void *mine[KEEP_BLOCKS];
    int i, j, reused = 0;
    for (i = 0; i < KEEP_BLOCKS; i++) {
        mine[i] = pt_make(k->pool, 100, (uint64_t)i);
        for (j = 0; j < KEEP_BLOCKS; j++)
            if (mine[i] == k->blocks[j]) {
                reused++;
                break;
            }
    }
    for (i = 0; i < KEEP_BLOCKS; i++)
        pt_check_free(k->pool, mine[i], 0);
    return reused;
}

/* 140 KiB freed is well under the default thread_keep_bytes: the thread
 * keeps every batch, and another thread gets none of its blocks. */
Test(pool_threads, a_thread_keeps_the_batches_it_frees)
{
    static keeper_t k;
    pthread_t t;
    keeper_start(&k, &t, 0);
    cr_assert_eq(blocks_reused(&k), 0, "another thread got blocks the freeing thread keeps");
    keeper_finish(&k, t);
}

/* With thread_keep_bytes = 1 every full batch is published: another
 * thread's allocations take all ten batches. */
Test(pool_threads, batches_past_thread_keep_bytes_go_to_other_threads)
{
    static keeper_t k;
    pthread_t t;
    keeper_start(&k, &t, 1);
    cr_assert_eq(blocks_reused(&k), KEEP_BLOCKS, "the published batches did not reach another thread");
    keeper_finish(&k, t);
}

/* Published batches belong to no thread: trim takes them back, and the
 * chunk whose blocks they hold all goes back to the system while the thread
 * that freed them still lives. */
Test(pool_threads, trim_takes_back_published_batches)
{
    static keeper_t k;
    pthread_t t;
    khl_pool_stats_t before, after;
    keeper_start(&k, &t, 1);
    before = test_pool_stats(k.pool);
    khl_pool_trim(k.pool);
    after = test_pool_stats(k.pool);
    cr_assert_eq(before.chunks, 2, "1280 blocks of 112 B fill one chunk and start another");
    cr_assert_eq(after.chunks, 1, "trim kept the chunk whose blocks are all published");
    cr_assert_eq(after.in_use_bytes, 0);
    keeper_finish(&k, t);
}
