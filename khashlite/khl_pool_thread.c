/* khl_pool_thread.c: the per-thread caches of thread-safe pools (ts_*).
 *
 * Each thread owns one record per pool it uses (thread_cache_t): per class,
 * a list of free blocks it may hand out without the lock.  A live
 * thread's records are its own, so a pool can die while threads live:
 * destroy marks their records dead (under the registry lock) and the owners
 * free them when they next make a record, or at exit.  At exit a thread
 * abandons its live records to their pools, blocks and all (up to
 * KEEP_ABANDONED a pool); a thread that starts on the pool adopts one
 * whole, a refill that would take a new chunk takes their blocks first,
 * and trim gives them back and frees them.  Lock order: the
 * registry lock, then a pool's lock.
 */
#define _GNU_SOURCE 1   /* adaptive mutexes */

#include "khl_pool_thread.h"

#include <stdlib.h>

/* Adaptive where glibc has it, as the pools' locks (lock_init): threads a
 * program starts together meet here at their first allocation. */
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
static pthread_mutex_t registry_lock = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
#else
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
#endif
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;        /* runs thread_exit on the thread's records */
static int exit_key_ok;
static uint64_t registry_gen;

/* The record the thread used last (the fast paths' one guess, read inline
 * by programs too: khl_pool_inline.h), and all its records.  Before its
 * first record and after its records are gone, the thread's guess is
 * no_record, whose generation no pool has (pools count theirs from 1). */
static khl_pool_thread_head_t no_record = {UINT64_MAX};
KHL_POOL_I_TLS khl_pool_thread_head_t *khl_pool_i_last_cache = &no_record;
static _Thread_local thread_cache_t *my_caches KHL_TLS_INITIAL_EXEC;

static uint64_t frees_now(const khl_pool_class_cache_t *t)
{
    return counter(&t->frees);
}

/* What a thread record's counters add to the pool's (lock held). */
void khl_i_cache_counts(const khl_pool_t *p, const thread_cache_t *e, size_t *in_use,
                        uint64_t *allocs, uint64_t *frees)
{
    unsigned i;
    for (i = 0; i < p->ncls; i++) {
        uint64_t a = counter(&e->c[i].allocs);
        uint64_t f = counter(&e->c[i].frees);
        *allocs += a;
        *frees += f;
        *in_use += (size_t)(a - f) * p->cls[i].size;
    }
}

/* Allocations of class ci the live thread records count (lock held). */
static uint64_t caches_allocs(const khl_pool_t *p, unsigned ci)
{
    uint64_t n = 0;
    const thread_cache_t *e;
    for (e = p->threads; e; e = e->next)
        n += counter(&e->c[ci].allocs);
    return n;
}

/* Callers' allocations of class ci so far, which a reserve counts down
 * against (lock held).  A thread-safe pool's c->allocs counts blocks moved
 * to thread caches instead: surplus blocks a cache took and then handed out
 * would never use a reserve up, and trim would keep its chunks for ever. */
uint64_t khl_i_user_allocs(const khl_pool_t *p, unsigned ci)
{
    const khl_pool_class_t *c = &p->cls[ci];
    if (!(p->flags & F_THREADS))
        return c->allocs;
    return c->ts_allocs + caches_allocs(p, ci);
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

/* The published stack (see published_t).  Push: the chain's link is written
 * before the release that makes it visible. */
static void publish(khl_pool_t *p, unsigned ci, void *chain)
{
    _Atomic(void *) *head = &p->published[ci].head;
    void *old = atomic_load_explicit(head, memory_order_relaxed);
    do
        ((void **)chain)[1] = old;
    while (!atomic_compare_exchange_weak_explicit(head, &old, chain, memory_order_release,
                                                  memory_order_relaxed));
}

/* Every published chain of class ci, or NULL; a plain load first, so that
 * an empty stack costs no read-modify-write. */
static void *take_published(khl_pool_t *p, unsigned ci)
{
    _Atomic(void *) *head = &p->published[ci].head;
    if (!atomic_load_explicit(head, memory_order_relaxed))
        return NULL;
    return atomic_exchange_explicit(head, NULL, memory_order_acquire);
}

/* Trim's part: the published chains back among the class's free blocks
 * (lock held). */
void khl_i_drain_published(khl_pool_t *p, unsigned ci)
{
    khl_i_batches_return(&p->cls[ci], take_published(p, ci));
}

/* Gives class ci of the record's cached blocks back to its pool (its lock
 * held); 1 when it held any. */
static int cache_return_class(khl_pool_t *p, thread_cache_t *e, unsigned ci)
{
    khl_pool_class_cache_t *t = &e->c[ci];
    khl_pool_class_t *c = &p->cls[ci];
    int any = t->alloc || t->freed || t->stash || t->end;
    c->frees += khl_i_splice_chain(c, t->alloc) + khl_i_splice_chain(c, t->freed);
    e->kept -= khl_i_batches_return(c, t->stash) * c->batch * c->size;
    if (t->end)
        khl_i_run_return(p, ci, t->bump, t->end);
    t->alloc = t->freed = t->stash = NULL;
    t->bump = t->end = NULL;
    t->flush_at = frees_now(t) + c->batch;
    return any;
}

/* Gives the record's cached blocks back to its pool (its lock held). */
void khl_i_cache_return_blocks(khl_pool_t *p, thread_cache_t *e)
{
    unsigned i;
    for (i = 0; i < p->ncls; i++)
        cache_return_class(p, e, i);
}

/* Gives the record's blocks and counts back and unlinks it (lock held);
 * the caller frees it once the lock is released. */
static void retire(khl_pool_t *p, thread_cache_t *e)
{
    unsigned i;
    khl_i_cache_return_blocks(p, e);
    khl_i_cache_counts(p, e, &p->hot.in_use, &p->uncached_allocs, &p->uncached_frees);
    for (i = 0; i < p->ncls; i++)
        p->cls[i].ts_allocs += counter(&e->c[i].allocs);
    if (e->prev)
        e->prev->next = e->next;
    else
        p->threads = e->next;
    if (e->next)
        e->next->prev = e->prev;
}

/* An exiting thread's record goes to its pool whole, blocks and all (lock
 * held), and the next thread to start on the pool adopts it: the blocks
 * stay together in one thread.  Given back a batch at a time, they were
 * spread over the threads that started next, and two threads started per
 * run of the FastMM loop ended with more pages holding blocks of both each
 * run, and ran slower each run (docs/pool.md, "Exited threads' caches").
 * The pool keeps at most KEEP_ABANDONED of them, so that a burst of
 * threads leaves no more records behind than that: past it, the record is
 * retired, and 0 tells the caller to free it. */
static int abandon(khl_pool_t *p, thread_cache_t *e)
{
    if (p->nabandoned == KEEP_ABANDONED) {
        retire(p, e);
        return 0;
    }
    e->abandoned = 1;
    e->tl_next = NULL;
    e->adopt_next = p->abandoned;
    p->abandoned = e;
    p->nabandoned++;
    return 1;
}

static thread_cache_t *adopt(khl_pool_t *p)
{
    thread_cache_t *e = p->abandoned;
    if (e) {
        p->abandoned = e->adopt_next;
        p->nabandoned--;
        e->adopt_next = NULL;
        e->abandoned = 0;
    }
    return e;
}

/* Class ci of every abandoned record back to the class (lock held), so
 * that a refill takes an exited thread's blocks before a new chunk, and a
 * reserve counts them ready; 1 when any came back. */
int khl_i_abandoned_return_class(khl_pool_t *p, unsigned ci)
{
    thread_cache_t *e;
    int any = 0;
    for (e = p->abandoned; e; e = e->adopt_next)
        any |= cache_return_class(p, e, ci);
    return any;
}

/* Trim's part: every abandoned record retired (lock held), its blocks and
 * counts back.  Returns them, linked by adopt_next, for
 * khl_i_records_free once the lock is released. */
thread_cache_t *khl_i_retire_abandoned(khl_pool_t *p)
{
    thread_cache_t *e, *all = p->abandoned;
    for (e = all; e; e = e->adopt_next)
        retire(p, e);
    p->abandoned = NULL;
    p->nabandoned = 0;
    return all;
}

void khl_i_records_free(thread_cache_t *e)
{
    thread_cache_t *next;
    for (; e; e = next) {
        next = e->adopt_next;
        free(e);
    }
}

/* The calling thread's record for p, or NULL. */
thread_cache_t *khl_i_own_cache(const khl_pool_t *p)
{
    thread_cache_t *e = p->hot.cache_path_max ? my_caches : NULL;
    while (e && !cache_is_for(e, p))
        e = e->tl_next;
    return e;
}

static void thread_exit(void *head)
{
    thread_cache_t *e = (thread_cache_t *)head, *next;
    pthread_mutex_lock(&registry_lock);
    for (; e; e = next) {
        next = e->tl_next;
        if (e->dead) {
            free(e);
        } else {
            int kept;
            pthread_mutex_lock(&e->pool->lock);
            kept = abandon(e->pool, e);
            pthread_mutex_unlock(&e->pool->lock);
            if (!kept)
                free(e);
        }
    }
    my_caches = NULL;
    khl_pool_i_last_cache = &no_record;
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
    khl_pool_i_last_cache = &no_record;
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
    p->hot.gen = ++registry_gen;
    pthread_mutex_unlock(&registry_lock);
    return 0;
}

/* The pool is going: its threads' records die with it (see
 * khl_pool_destroy); the abandoned ones, which no thread holds, go now. */
void khl_i_threads_detach(khl_pool_t *p)
{
    thread_cache_t *e, *next;
    pthread_mutex_lock(&registry_lock);
    pthread_mutex_lock(&p->lock);
    for (e = p->threads; e; e = next) {
        next = e->next;
        if (e->abandoned)
            free(e);
        else
            e->dead = 1;
    }
    p->threads = p->abandoned = NULL;
    p->nabandoned = 0;
    pthread_mutex_unlock(&p->lock);
    purge_dead();
    pthread_mutex_unlock(&registry_lock);
    pthread_mutex_destroy(&p->lock);
}

/* A new record for p, not yet linked anywhere; NULL without memory.
 * Cache-line aligned: threads' records must not share lines. */
static thread_cache_t *record_new(khl_pool_t *p)
{
    size_t bytes = (sizeof(thread_cache_t) + p->ncls * sizeof(khl_pool_class_cache_t) + 63) & ~(size_t)63;
    thread_cache_t *e = (thread_cache_t *)aligned_alloc(64, bytes);
    unsigned i;
    if (!e)
        return NULL;
    memset(e, 0, bytes);
    for (i = 0; i < p->ncls; i++)
        e->c[i].flush_at = p->cls[i].batch;
    e->pool = p;
    e->head.gen = p->hot.gen;
    return e;
}

/* This thread's record for p: an exited thread's, adopted, else a new one;
 * NULL when there is neither (the caller then takes the locked path).  The
 * thread's list is its own, and a generation names one pool for ever, so
 * the search takes no lock; nor does making a record (a new thread's first
 * malloc, its first touch), so that the registry lock, which the threads a
 * program starts together all take here, is held for a few stores.  A
 * thread that sleeps on it may be woken onto its waker's core and share it
 * for milliseconds: two threads started together on one thread-safe pool
 * ran 4-12 ms longer than their CPU time in 12 of 16 runs of a 13-20 ms
 * loop, swapping cores on the way (docs/pool.md). */
static KHL_NOINLINE thread_cache_t *cache_slow(khl_pool_t *p)
{
    thread_cache_t *e;
    int adopted;
    pthread_once(&registry_once, key_init);
    if (!exit_key_ok)
        return NULL;
    if ((e = khl_i_own_cache(p)) != NULL) {
        khl_pool_i_last_cache = &e->head;
        return e;
    }
    pthread_mutex_lock(&p->lock);
    e = adopt(p);
    pthread_mutex_unlock(&p->lock);
    adopted = e != NULL;
    if (!adopted)
        e = record_new(p);
    pthread_mutex_lock(&registry_lock);
    purge_dead();
    if (e) {
        e->tl_next = my_caches;
        if (pthread_setspecific(exit_key, e) != 0) {
            int kept = 0;
            if (adopted) {
                pthread_mutex_lock(&p->lock);
                kept = abandon(p, e);
                pthread_mutex_unlock(&p->lock);
            }
            if (!kept)
                free(e);
            e = NULL;
        } else {
            my_caches = e;
            if (!adopted) {
                pthread_mutex_lock(&p->lock);
                e->next = p->threads;
                if (p->threads)
                    p->threads->prev = e;
                p->threads = e;
                pthread_mutex_unlock(&p->lock);
            }
        }
    }
    khl_pool_i_last_cache = e ? &e->head : &no_record;
    pthread_mutex_unlock(&registry_lock);
    return e;
}

/* The calling thread's record for p, made on first use; NULL when it
 * cannot be made, and the caller (the layer above) takes the locked path:
 * this layer never calls up into it. */
thread_cache_t *khl_i_my_cache(khl_pool_t *p)
{
    thread_cache_t *e = khl_i_last_record(p);
    if (KHL_LIKELY(e != NULL))
        return e;
    return cache_slow(p);
}

/* Reserve held: blocks promised by khl_pool_reserve stay in the pool, where
 * any thread can get them.  Take only the surplus, or the single block the
 * caller is about to allocate.  Either counts against the reserve when
 * handed out (khl_i_user_allocs), not here. */
static void *refill_reserved(khl_pool_t *p, khl_pool_class_cache_t *t, unsigned ci, size_t held)
{
    khl_pool_class_t *c = &p->cls[ci];
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

/* A run of never-used slots (t->bump..t->end) used up: at its chunk's last
 * slot it is dropped, since the chunk may go (trim) once its blocks are
 * back; else it stops where its pages do, and bump == end != NULL tells
 * run_step to fault the next step.  b: a block of the run, so of a chunk
 * that stays. */
static void run_settle(const khl_pool_t *p, khl_pool_class_cache_t *t, const void *b)
{
    if (t->bump == t->end && t->end == slots_end(chunk_of(p, b)))
        t->bump = t->end = NULL;
}

/* The next step of pages of a run that stopped where they do; 0, or -1
 * with the run as it was. */
static int run_step(khl_pool_t *p, khl_pool_class_cache_t *t)
{
    int r;
    pthread_mutex_lock(&p->lock);
    r = khl_i_run_fault_ahead(p, &t->end);
    pthread_mutex_unlock(&p->lock);
    return r;
}

/* Freed blocks of class ci for e (lock held): batches from c.batches (the
 * stashes of drained records, published chains trim took back), up to
 * REFILL_CHAINS of them and no more than fill half of what the thread may
 * keep, else up to a batch of loose blocks.  Returns one block, the rest
 * goes to e, *n counts all; NULL when the class has none. */
static void *refill_freed(khl_pool_t *p, thread_cache_t *e, unsigned ci, size_t *n)
{
    khl_pool_class_t *c = &p->cls[ci];
    khl_pool_class_cache_t *t = &e->c[ci];
    size_t bytes = c->batch * c->size;
    void *b, *more;
    if ((b = khl_i_take_chain(p, ci)) != NULL) {
        t->alloc = *(void **)b;
        *n = c->batch;
        while (*n < REFILL_CHAINS * c->batch && e->kept + bytes <= p->keep_bytes / 2 &&
               (more = khl_i_take_chain(p, ci)) != NULL) {
            ((void **)more)[1] = t->stash;
            t->stash = more;
            e->kept += bytes;
            *n += c->batch;
        }
    } else if ((b = cls_pop_free(c)) != NULL) {
        void *x;
        for (*n = 1; *n < c->batch && (x = cls_pop_free(c)) != NULL; ++*n) {
            *(void **)x = t->alloc;
            t->alloc = x;
        }
    }
    return b;
}

/* Blocks of class ci for e, with the lock: freed ones (refill_freed), else
 * those the abandoned records hold, else every never-used slot of the
 * class's current chunk (taking at most one chunk from the system), its
 * pages faulted as far as the class had them, the thread faulting the
 * others a step at a time as it reaches them (run_step).  The whole rest of
 * a chunk, not a batch of it: two threads allocating one class from runs of
 * one chunk ran the FastMM loop 1.5 to 2 times slower than from chunks of
 * their own (their blocks interleaved in memory), and a thread holds at
 * most one chunk's unused slots per class this way.  Returns one block,
 * the rest goes to e. */
static KHL_NOINLINE void *ts_refill(khl_pool_t *p, thread_cache_t *e, unsigned ci)
{
    khl_pool_class_t *c = &p->cls[ci];
    khl_pool_class_cache_t *t = &e->c[ci];
    size_t held, n = 0;
    void *b = NULL;
    pthread_mutex_lock(&p->lock);
    /* The sum over the threads' counters only where a reserve holds. */
    held = c->reserve_until ? khl_i_cls_reserved(p, ci, khl_i_user_allocs(p, ci)) : 0;
    if (held) {
        b = refill_reserved(p, t, ci, held);
    } else {
        b = refill_freed(p, e, ci, &n);
        if (!b && khl_i_abandoned_return_class(p, ci))
            b = refill_freed(p, e, ci, &n);
        if (!b && khl_i_cls_fill_bump(p, ci, 1) == 0) {
            /* The whole rest of the chunk is the thread's; its pages as far
             * as they are in, the thread faults the others (run_step). */
            n = bump_left(c);
            b = c->bump;
            t->bump = c->bump + c->size;
            t->end = c->end;
            c->bump = c->end = slots_end(c->cur);
            run_settle(p, t, b);
            c->refills = 0;   /* growth: sample the peak now */
        }
    }
    if (b) {
        c->allocs += n;
        /* Summing every thread's counters reads lines other threads write,
         * so the peak is sampled on growth and every 16th refill only. */
        if (c->refills++ % 16 == 0)
            khl_i_sample_peak(p);
    }
    pthread_mutex_unlock(&p->lock);
    return b;
}

/* A full batch of freed blocks: kept while the thread's stashes have room,
 * else published. */
static KHL_NOINLINE void ts_flush(khl_pool_t *p, thread_cache_t *e, unsigned ci)
{
    khl_pool_class_cache_t *t = &e->c[ci];
    size_t bytes = p->cls[ci].batch * p->cls[ci].size;
    void *chain = t->freed;
    t->freed = NULL;
    t->flush_at = frees_now(t) + p->cls[ci].batch;
    if (e->kept + bytes <= p->keep_bytes) {
        ((void **)chain)[1] = t->stash;
        t->stash = chain;
        e->kept += bytes;
    } else {
        publish(p, ci, chain);
    }
}

/* Refills t->alloc from the stash, else from the published stack, whose
 * chains past the first go to the stash (the cache then holds them, even
 * beyond keep_bytes, until its frees publish again).  NULL when both are
 * empty. */
static void *take_kept(khl_pool_t *p, thread_cache_t *e, unsigned ci)
{
    khl_pool_class_cache_t *t = &e->c[ci];
    size_t bytes = p->cls[ci].batch * p->cls[ci].size;
    void *b = t->stash, *x;
    if (!b) {
        if (!(b = take_published(p, ci)))
            return NULL;
        t->stash = batch_next(b);
        for (x = t->stash; x; x = batch_next(x))
            e->kept += bytes;
    } else {
        t->stash = batch_next(b);
        e->kept -= bytes;
    }
    t->alloc = *(void **)b;
    return b;
}

/* Thread-safe allocation past the fast path, for e (khl_i_my_cache): an
 * empty list - then the blocks freed here, the run of never-used slots
 * (faulting its next step where its pages stop), or a refill from the
 * pool. */
KHL_NOINLINE void *khl_i_ts_alloc_slow(khl_pool_t *p, thread_cache_t *e, size_t n)
{
    unsigned ci = class_of(n);
    khl_pool_class_cache_t *t = &e->c[ci];
    void *b = t->alloc;
    if (b) {
        t->alloc = *(void **)b;
    } else if (t->freed) {
        b = t->freed;
        t->alloc = *(void **)b;
        t->freed = NULL;
        t->flush_at = frees_now(t) + p->cls[ci].batch;
    } else if (t->bump != t->end || (t->end && run_step(p, t) == 0)) {
        b = t->bump;
        t->bump += p->cls[ci].size;
        run_settle(p, t, b);
    } else if (t->end) {
        return NULL;   /* the run's next pages cannot be had */
    } else if (!(b = take_kept(p, e, ci)) && !(b = ts_refill(p, e, ci))) {
        return NULL;
    }
    bump_counter(&t->allocs);
    return b;
}

KHL_NOINLINE void khl_i_ts_free_slow(khl_pool_t *p, thread_cache_t *e, void *ptr, unsigned ci)
{
    khl_pool_class_cache_t *t = &e->c[ci];
    *(void **)ptr = t->freed;
    t->freed = ptr;
    bump_counter(&t->frees);
    if (frees_now(t) == t->flush_at)
        ts_flush(p, e, ci);
}
