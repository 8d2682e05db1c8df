/* pool_stress.c: the thread-safe pool under ThreadSanitizer.  Criterion's
 * runner cannot start under TSan (its shared arena collides with TSan's
 * shadow memory), so this stand-alone program repeats the shape of the
 * suite's pool_threads tests: four threads allocate blocks of mixed sizes,
 * fill them with a pattern, and hand them through a locked queue to the next
 * thread, which checks and frees them (cross-thread frees, sized and
 * unsized, small and large); some threads exit while others still free their
 * blocks, and a second wave of producers then adopts the records the first
 * left to the pool.  Producers reserve now and then and consumers trim, so a reserve's
 * count of every thread's allocations and a trim run while other threads'
 * caches change, and consumers run khl_pool_check meanwhile.  It runs twice:
 * with the default thread_keep_bytes, and with 1, so that every batch a
 * thread fills is published and taken by another thread.  Odd tags take
 * the inline paths of khl_pool_inline.h, compiled into this program, so
 * they read the library's thread records as a program does.  Then threads
 * switch between two pools on every block, so that each switch finds the
 * thread's record without a lock, while between two phases one of the
 * pools is destroyed and another made (the threads' records of the old one
 * dead, found in their lists and freed when they make the next).  Exit
 * status 0 when every pattern held and every pool ends empty. */
#define _POSIX_C_SOURCE 200809L   /* pthread barriers under -std=c11 */
#include <pthread.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "khashlite/khl_pool_inline.h"
#include "support/prng.h"

#define THREADS 4
#define ROUNDS 20000
#define WAVES 2   /* of producers, one after the other */
#define QCAP 256

typedef struct item { unsigned char *p; size_t n; unsigned tag; } item_t;

typedef struct queue {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    item_t items[QCAP];
    size_t head, count;
    int closed;
} queue_t;

static khl_pool_t *pool;
static queue_t queues[THREADS];
static int failures;
static _Atomic unsigned long long moves;   /* reallocs that moved a block */
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

static void fail(const char *what, unsigned tag)
{
    pthread_mutex_lock(&fail_lock);
    failures++;
    fprintf(stderr, "pool_stress: %s (block tag %u)\n", what, tag);
    pthread_mutex_unlock(&fail_lock);
}

static void push(queue_t *q, item_t it)
{
    pthread_mutex_lock(&q->lock);
    while (q->count == QCAP)
        pthread_cond_wait(&q->cond, &q->lock);
    q->items[(q->head + q->count++) % QCAP] = it;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

/* 0 when the queue is closed and drained. */
static int pop(queue_t *q, item_t *it)
{
    pthread_mutex_lock(&q->lock);
    while (q->count == 0 && !q->closed)
        pthread_cond_wait(&q->cond, &q->lock);
    int got = q->count > 0;
    if (got) {
        *it = q->items[q->head];
        q->head = (q->head + 1) % QCAP;
        q->count--;
        pthread_cond_broadcast(&q->cond);
    }
    pthread_mutex_unlock(&q->lock);
    return got;
}

static size_t size_for(unsigned x)
{
    if (x % 1024 == 0)
        return 100000 + x % 900000;   /* spans of several windows */
    return x % 64 == 0 ? 20000 + x % 50000 : 1 + x % 700;   /* mostly small, some large */
}

static void *producer(void *arg)
{
    unsigned id = (unsigned)(size_t)arg;
    uint64_t seed = id;
    for (unsigned r = 0; r < ROUNDS; ++r) {
        item_t it = {NULL, size_for((unsigned)prng_next(&seed)), id * ROUNDS + r};
        if (r % 1000 == 999 && khl_pool_reserve(pool, it.n < 700 ? it.n : 100, 64) != 0)
            fail("reserve failed", it.tag);
        it.p = it.tag % 2 ? khl_pool_alloc_inline(pool, it.n) : khl_pool_alloc(pool, it.n);
        if (!it.p) {
            fail("allocation failed", it.tag);
            continue;
        }
        memset(it.p, (int)(it.tag & 0xff), it.n);
        push(&queues[(id + 1) % THREADS], it);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    unsigned id = (unsigned)(size_t)arg;
    item_t it;
    for (unsigned popped = 1; pop(&queues[id], &it); ++popped) {
        if (popped % 4096 == 0) {
            khl_pool_trim(pool);
            if (khl_pool_check(pool) != 0)   /* while the other threads run */
                fail("khl_pool_check", popped);
        }
        for (size_t i = 0; i < it.n; ++i)
            if (it.p[i] != (unsigned char)(it.tag & 0xff)) {
                fail("a block's contents changed before its free", it.tag);
                break;
            }
        /* A span regrown by another thread than its allocator: in place
         * over free windows, or moved, while others cut and free spans. */
        if (it.n > 16384 && it.tag % 3 == 0) {
            unsigned char *q = khl_pool_realloc(pool, it.p, it.n, it.n * 3);
            if (!q) {
                fail("realloc failed", it.tag);
            } else {
                if (q != it.p)   /* a move is an allocation and a free */
                    atomic_fetch_add(&moves, 1);
                if (q[it.n - 1] != (unsigned char)(it.tag & 0xff))
                    fail("realloc lost a block's contents", it.tag);
                it.p = q;
                it.n *= 3;
                memset(q, (int)(it.tag & 0xff), it.n);
            }
        }
        switch (it.tag % 4) {
        case 0: khl_pool_free_unsized(pool, it.p); break;
        case 1: khl_pool_free_inline(pool, it.p, it.n); break;
        case 2: khl_pool_free(pool, it.p, it.n); break;
        default: khl_pool_free_unsized_inline(pool, it.p);
        }
    }
    return NULL;
}

/* 1 when p checks out and holds no block; else 0, said on stderr. */
static int empty(khl_pool_t *p, const char *which)
{
    khl_pool_stats_t s;
    khl_pool_stats(p, &s);
    if (khl_pool_check(p) == 0 && s.in_use_bytes == 0 && s.allocs == s.frees)
        return 1;
    fprintf(stderr, "pool_stress: %s pool: %zu bytes still in use, %llu allocs vs %llu frees\n", which,
            s.in_use_bytes, (unsigned long long)s.allocs, (unsigned long long)s.frees);
    return 0;
}

/* One run on a new pool; failures counts what went wrong. */
static void run(size_t keep)
{
    khl_pool_options_t opt;
    memset(&opt, 0, sizeof opt);
    opt.thread_safe = 1;
    opt.thread_keep_bytes = keep;
    atomic_store(&moves, 0);
    pool = khl_pool_new(&opt);
    if (!pool) {
        fputs("pool_stress: no pool\n", stderr);
        failures++;
        return;
    }
    pthread_t prod[THREADS], cons[THREADS];
    for (size_t i = 0; i < THREADS; ++i) {
        queues[i].head = queues[i].count = 0;
        queues[i].closed = 0;
        pthread_create(&cons[i], NULL, consumer, (void *)i);
    }
    for (size_t w = 0; w < WAVES; ++w) {
        for (size_t i = 0; i < THREADS; ++i)
            pthread_create(&prod[i], NULL, producer, (void *)(w * THREADS + i));
        for (size_t i = 0; i < THREADS; ++i)
            pthread_join(prod[i], NULL);      /* producers exit, their blocks still queued */
    }
    for (size_t i = 0; i < THREADS; ++i) {
        pthread_mutex_lock(&queues[i].lock);
        queues[i].closed = 1;
        pthread_cond_broadcast(&queues[i].cond);
        pthread_mutex_unlock(&queues[i].lock);
    }
    for (size_t i = 0; i < THREADS; ++i)
        pthread_join(cons[i], NULL);
    khl_pool_stats_t s;
    failures += !empty(pool, "shared");
    khl_pool_stats(pool, &s);
    if (s.allocs != (uint64_t)WAVES * THREADS * ROUNDS + atomic_load(&moves)) {
        fprintf(stderr, "pool_stress: %llu allocations counted, %d made and %llu moved by realloc\n",
                (unsigned long long)s.allocs, WAVES * THREADS * ROUNDS, (unsigned long long)atomic_load(&moves));
        failures++;
    }
    khl_pool_destroy(pool);
    printf("pool_stress: %d waves of %d threads x %d blocks, thread_keep_bytes %zu: %s\n", WAVES, THREADS, ROUNDS, keep,
           failures ? "FAILED" : "ok");
}

/* Pool switching: each thread allocates from and frees into two pools in
 * turn, SWITCHES blocks in all, in each of two phases; between them the
 * main thread replaces the second pool while the threads wait. */
#define SWITCHES 4000
static khl_pool_t *pair[2];
static pthread_barrier_t phase;

static void *switcher(void *arg)
{
    unsigned tag = (unsigned)(uintptr_t)arg;
    for (int ph = 0; ph < 2; ++ph) {
        for (int i = 0; i < SWITCHES; ++i, ++tag) {
            khl_pool_t *p = pair[i & 1];
            size_t n = 16 + (tag % 200);
            unsigned char *b = i % 3 ? khl_pool_alloc(p, n) : khl_pool_alloc_inline(p, n);
            if (!b) {
                fail("switch: no block", tag);
                continue;
            }
            memset(b, (int)(tag & 0xff), n);
            if (b[n - 1] != (unsigned char)(tag & 0xff))
                fail("switch: a block lost its contents", tag);
            khl_pool_free(p, b, n);
        }
        pthread_barrier_wait(&phase);   /* the main thread replaces pair[1] */
        pthread_barrier_wait(&phase);
    }
    return NULL;
}

static void run_switching(void)
{
    khl_pool_options_t opt;
    memset(&opt, 0, sizeof opt);
    opt.thread_safe = 1;
    pair[0] = khl_pool_new(&opt);
    pair[1] = khl_pool_new(&opt);
    if (!pair[0] || !pair[1]) {
        fputs("pool_stress: no pool\n", stderr);
        failures++;
        return;
    }
    pthread_t t[THREADS];
    pthread_barrier_init(&phase, NULL, THREADS + 1);
    for (size_t i = 0; i < THREADS; ++i)
        pthread_create(&t[i], NULL, switcher, (void *)(uintptr_t)(i * 1000003u));
    for (int ph = 0; ph < 2; ++ph) {
        pthread_barrier_wait(&phase);
        if (ph == 0) {
            failures += !empty(pair[1], "switching: replaced");
            khl_pool_destroy(pair[1]);
            if (!(pair[1] = khl_pool_new(&opt))) {
                fputs("pool_stress: no pool\n", stderr);
                exit(1);
            }
        }
        pthread_barrier_wait(&phase);
    }
    for (size_t i = 0; i < THREADS; ++i)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&phase);
    failures += !empty(pair[0], "switching: first") + !empty(pair[1], "switching: second");
    khl_pool_destroy(pair[0]);
    khl_pool_destroy(pair[1]);
    printf("pool_stress: %d threads switching pools on every block, one replaced: %s\n", THREADS,
           failures ? "FAILED" : "ok");
}

int main(void)
{
    for (size_t i = 0; i < THREADS; ++i) {
        pthread_mutex_init(&queues[i].lock, NULL);
        pthread_cond_init(&queues[i].cond, NULL);
    }
    run(0);
    run(1);
    run_switching();
    return failures != 0;
}
