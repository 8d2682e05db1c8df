/* khl_pool_thread.c: the per-thread caches of thread-safe pools (ts_*).
 *
 * Each thread owns one record per pool it uses (thread_cache_t): per class,
 * a list of free blocks it may hand out without the lock.  Records belong
 * to the thread, never to the pool, so a pool can die while threads live:
 * destroy marks their records dead (under the registry lock) and the owners
 * free them on their next miss or at exit.  Thread exit gives live records
 * back to their pools.  Lock order: the registry lock, then a pool's lock.
 */
#define _GNU_SOURCE 1   /* adaptive mutexes */

#include "khl_pool_internal.h"

#include <stdlib.h>

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;        /* runs thread_exit on the thread's records */
static int exit_key_ok;
static uint64_t registry_gen;

/* The record the thread used last (the fast paths' one guess), and all its
 * records. */
_Thread_local thread_cache_t *khl_i_last_cache TLS_MODEL;
static _Thread_local thread_cache_t *my_caches TLS_MODEL;

/* What a thread record's counters add to the pool's (lock held). */
void khl_i_cache_counts(const khl_pool_t *p, const thread_cache_t *e, size_t *in_use,
                        uint64_t *allocs, uint64_t *frees)
{
    unsigned i;
    for (i = 0; i < p->ncls; i++) {
        uint64_t a = atomic_load_explicit(&e->c[i].allocs, memory_order_relaxed);
        uint64_t f = atomic_load_explicit(&e->c[i].frees, memory_order_relaxed);
        *allocs += a;
        *frees += f;
        *in_use += (size_t)(a - f) * p->cls[i].size;
    }
}

/* Allocations of class ci the live thread records count (lock held). */
uint64_t khl_i_caches_allocs(const khl_pool_t *p, unsigned ci)
{
    uint64_t n = 0;
    const thread_cache_t *e;
    for (e = p->threads; e; e = e->next)
        n += atomic_load_explicit(&e->c[ci].allocs, memory_order_relaxed);
    return n;
}

/* Exact in a quiet pool; sampled (lock held) at refills. */
void khl_i_sample_peak(khl_pool_t *p)
{
    size_t s = p->hot.in_use;
    uint64_t a = 0, f = 0;
    const thread_cache_t *e;
    for (e = p->threads; e; e = e->next)
        khl_i_cache_counts(p, e, &s, &a, &f);
    if (s > p->hot.peak)
        p->hot.peak = s;
}

/* A flushed batch of class ci (lock held): from the caller's own stash
 * first, then batches of exited threads, then any thread's stash. */
void *khl_i_take_chain(khl_pool_t *p, unsigned ci, void **own)
{
    cls_t *c = &p->cls[ci];
    void **from = own && *own ? own : c->batches ? &c->batches : NULL, *chain;
    thread_cache_t *e;
    for (e = p->threads; !from && e; e = e->next)
        if (e->c[ci].stash)
            from = &e->c[ci].stash;
    if (!from)
        return NULL;
    chain = *from;
    *from = batch_next(chain);
    return chain;
}

/* Gives a chain (linked through first words) back to the class's free
 * blocks; returns its length. */
size_t khl_i_splice_chain(cls_t *c, void *head)
{
    size_t n = 0;
    void *b, *next;
    for (b = head; b; b = next, n++) {
        next = *(void **)b;   /* before cls_push may make b a bundle */
        cls_push(c, b);
    }
    return n;
}

/* Gives the record's cached blocks back to its pool (its lock held). */
void khl_i_cache_return_blocks(khl_pool_t *p, thread_cache_t *e)
{
    unsigned i;
    for (i = 0; i < p->ncls; i++) {
        class_cache_t *t = &e->c[i];
        cls_t *c = &p->cls[i];
        c->frees += khl_i_splice_chain(c, t->alloc) + khl_i_splice_chain(c, t->freed);
        while (t->stash) {
            void *chain = t->stash;
            t->stash = batch_next(chain);
            ((void **)chain)[1] = c->batches;
            c->batches = chain;
        }
        for (; t->bump != t->end; t->bump += c->size) {
            cls_push(c, t->bump);
            c->frees++;
        }
        t->alloc = t->freed = NULL;
        t->nfreed = 0;
    }
}

/* The calling thread's record for p, or NULL. */
thread_cache_t *khl_i_own_cache(const khl_pool_t *p)
{
    thread_cache_t *e = p->hot.cache_path_max ? my_caches : NULL;
    while (e && !(e->pool == p && e->gen == p->gen))
        e = e->tl_next;
    return e;
}

/* Gives the record's blocks and counts back and unlinks it (lock held). */
static void cache_drain(khl_pool_t *p, thread_cache_t *e)
{
    unsigned i;
    khl_i_cache_return_blocks(p, e);
    khl_i_cache_counts(p, e, &p->hot.in_use, &p->uncached_allocs, &p->uncached_frees);
    for (i = 0; i < p->ncls; i++)
        p->cls[i].ts_allocs += atomic_load_explicit(&e->c[i].allocs, memory_order_relaxed);
    if (e->prev)
        e->prev->next = e->next;
    else
        p->threads = e->next;
    if (e->next)
        e->next->prev = e->prev;
}

static void thread_exit(void *head)
{
    thread_cache_t *e = (thread_cache_t *)head, *next;
    pthread_mutex_lock(&registry_lock);
    for (; e; e = next) {
        next = e->tl_next;
        if (!e->dead) {
            pthread_mutex_lock(&e->pool->lock);
            cache_drain(e->pool, e);
            pthread_mutex_unlock(&e->pool->lock);
        }
        free(e);
    }
    my_caches = khl_i_last_cache = NULL;
    pthread_mutex_unlock(&registry_lock);
}

/* The lock is held for a few dozen instructions at a time, so a contended
 * caller does better spinning a little than sleeping at once. */
static int lock_init(pthread_mutex_t *m)
{
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
    pthread_mutexattr_t a;
    int r;
    if (pthread_mutexattr_init(&a) != 0)
        return -1;
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
    r = pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
    return r;
#else
    return pthread_mutex_init(m, NULL);
#endif
}

static void key_init(void)
{
    exit_key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
}

/* Frees this thread's records of destroyed pools (registry lock held). */
static void purge_dead(void)
{
    thread_cache_t **ep = &my_caches;
    while (*ep) {
        thread_cache_t *e = *ep;
        if (e->dead) {
            *ep = e->tl_next;
            free(e);
        } else {
            ep = &e->tl_next;
        }
    }
    khl_i_last_cache = NULL;
    if (exit_key_ok)
        pthread_setspecific(exit_key, my_caches);
}

/* A new thread-safe pool's lock and generation.  0, or -1 when the lock
 * cannot be made. */
int khl_i_threads_attach(khl_pool_t *p)
{
    if (lock_init(&p->lock) != 0)
        return -1;
    pthread_mutex_lock(&registry_lock);
    p->gen = ++registry_gen;
    pthread_mutex_unlock(&registry_lock);
    return 0;
}

/* The pool is going: its threads' records die with it (see khl_pool_destroy). */
void khl_i_threads_detach(khl_pool_t *p)
{
    thread_cache_t *e;
    pthread_mutex_lock(&registry_lock);
    for (e = p->threads; e; e = e->next)
        e->dead = 1;
    purge_dead();
    pthread_mutex_unlock(&registry_lock);
    pthread_mutex_destroy(&p->lock);
}

/* This thread's record for p, created on first use; NULL when it cannot be
 * made (the caller then takes the locked path). */
static NOINLINE thread_cache_t *cache_slow(khl_pool_t *p)
{
    thread_cache_t *e;
    pthread_once(&registry_once, key_init);
    if (!exit_key_ok)
        return NULL;
    pthread_mutex_lock(&registry_lock);
    purge_dead();
    for (e = my_caches; e; e = e->tl_next)
        if (e->pool == p && e->gen == p->gen)
            break;
    if (!e) {
        /* Cache-line aligned: threads' records must not share lines. */
        size_t bytes = (sizeof *e + p->ncls * sizeof(class_cache_t) + 63) & ~(size_t)63;
        e = (thread_cache_t *)aligned_alloc(64, bytes);
        if (e) {
            unsigned i;
            memset(e, 0, bytes);
            for (i = 0; i < p->ncls; i++)
                e->c[i].limit = p->cls[i].batch;
            e->pool = p;
            e->gen = p->gen;
            e->tl_next = my_caches;
            if (pthread_setspecific(exit_key, e) != 0) {
                free(e);
                e = NULL;
            } else {
                my_caches = e;
                pthread_mutex_lock(&p->lock);
                e->next = p->threads;
                if (p->threads)
                    p->threads->prev = e;
                p->threads = e;
                pthread_mutex_unlock(&p->lock);
            }
        }
    }
    khl_i_last_cache = e;
    pthread_mutex_unlock(&registry_lock);
    return e;
}

static inline thread_cache_t *my_cache(khl_pool_t *p)
{
    thread_cache_t *e = khl_i_last_cache;
    if (KHL_LIKELY(e && e->pool == p && e->gen == p->gen))
        return e;
    return cache_slow(p);
}

/* Reserve held: blocks promised by khl_pool_reserve stay in the pool, where
 * any thread can get them.  Take only the surplus, or the single block the
 * caller is about to allocate.  Either counts against the reserve when
 * handed out (khl_i_cls_user_allocs), not here. */
static void *refill_reserved(khl_pool_t *p, class_cache_t *t, unsigned ci, size_t held)
{
    cls_t *c = &p->cls[ci];
    size_t ready = khl_i_cls_ready(c), want = ready > held ? ready - held : 1, i;
    void *b = khl_i_cls_pop(p, ci, 1);
    if (want > c->batch)
        want = c->batch;
    for (i = 1; b && i < want; i++) {
        void *x = khl_i_cls_pop(p, ci, 0);
        if (!x)
            break;
        *(void **)x = t->alloc;
        t->alloc = x;
    }
    if (b)
        c->allocs += i;
    return b;
}

/* Up to a batch of class ci for t, with the lock: a flushed batch whole
 * (O(1), or O(threads) to find another thread's), else loose blocks left by
 * exited threads or locked paths (a walk of up to a batch), else a run of
 * never-used slots (taking at most one chunk from the system).  Returns
 * one block, the rest goes to t. */
static NOINLINE void *ts_refill(khl_pool_t *p, class_cache_t *t, unsigned ci)
{
    cls_t *c = &p->cls[ci];
    size_t held, n = 0;
    void *b = NULL;
    pthread_mutex_lock(&p->lock);
    held = khl_i_cls_reserved(p, ci);
    if (held) {
        b = refill_reserved(p, t, ci, held);
    } else if ((b = khl_i_take_chain(p, ci, &t->stash)) != NULL) {
        t->alloc = *(void **)b;
        n = c->batch;
    } else if ((b = cls_pop_free(c)) != NULL) {
        void *x;
        for (n = 1; n < c->batch && (x = cls_pop_free(c)) != NULL; n++) {
            *(void **)x = t->alloc;
            t->alloc = x;
        }
    } else if (khl_i_cls_fill_bump(p, ci, 1) == 0) {
        n = bump_left(c) < c->batch ? bump_left(c) : c->batch;
        b = c->bump;
        t->bump = c->bump + c->size;
        t->end = c->bump + n * c->size;
        c->bump = t->end;
        c->refills = 0;   /* growth: sample the peak now */
    }
    if (b) {
        c->allocs += n;
        /* Summing every thread's counters reads lines other threads write,
         * so the peak is sampled on growth and every 16th refill only. */
        if (c->refills++ % 16 == 0)
            khl_i_sample_peak(p);
    }
    KHL_I_DEBUG_CHECK(p);
    pthread_mutex_unlock(&p->lock);
    return b;
}

NOINLINE void khl_i_ts_flush(khl_pool_t *p, class_cache_t *t, unsigned ci)
{
    cls_t *c = &p->cls[ci];
    pthread_mutex_lock(&p->lock);
    ((void **)t->freed)[1] = t->stash;
    t->stash = t->freed;
    c->frees += t->nfreed;
    t->freed = NULL;
    t->nfreed = 0;
    KHL_I_DEBUG_CHECK(p);
    pthread_mutex_unlock(&p->lock);
}

/* Thread-safe allocation past the fast path: no record for this pool yet,
 * or an empty list - then the blocks freed here, the run of never-used
 * slots, or a refill from the pool. */
NOINLINE void *khl_i_ts_alloc_slow(khl_pool_t *p, size_t n)
{
    thread_cache_t *e = my_cache(p);
    unsigned ci;
    class_cache_t *t;
    void *b;
    if (KHL_UNLIKELY(!e))
        return khl_i_locked_alloc(p, n);
    ci = class_of(n);
    t = &e->c[ci];
    b = t->alloc;
    if (b) {
        t->alloc = *(void **)b;
    } else if (t->freed) {
        b = t->freed;
        t->alloc = *(void **)b;
        t->freed = NULL;
        t->nfreed = 0;
    } else if (t->bump != t->end) {
        b = t->bump;
        t->bump += p->cls[ci].size;
    } else if (!(b = ts_refill(p, t, ci))) {
        return NULL;
    }
    bump_counter(&t->allocs);
    return b;
}

NOINLINE void khl_i_ts_free_slow(khl_pool_t *p, void *ptr, unsigned ci)
{
    thread_cache_t *e = my_cache(p);
    class_cache_t *t;
    if (KHL_UNLIKELY(!e)) {
        khl_i_locked_free(p, ptr, p->cls[ci].size, "khl_pool_free");
        return;
    }
    t = &e->c[ci];
    *(void **)ptr = t->freed;
    t->freed = ptr;
    bump_counter(&t->frees);
    if (++t->nfreed >= t->limit)
        khl_i_ts_flush(p, t, ci);
}
