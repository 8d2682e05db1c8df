/* khl_pool_thread.h: the thread caches of thread-safe pools, above the
 * size classes they take blocks from (khl_pool_thread.c). */
#ifndef KHL_POOL_THREAD_H
#define KHL_POOL_THREAD_H

#include "khl_pool_class.h"

/* Per thread and class: blocks to hand out, blocks freed here (a batch
 * once there are `batch` of them), the batches the thread keeps, and a run
 * of never-used slots.  Only the owning thread reads or writes them (but
 * the counters), so none of it takes a lock or an atomic read-modify-write.
 * A full batch goes to the stash while the thread's stashes hold less than
 * the pool's keep_bytes, else onto the class's published stack; an empty
 * cache takes its own stash first, then the whole published stack, and only
 * then the lock.  Blocks stay warm in the core that freed them, and a
 * thread that frees what it allocated (up to keep_bytes) shares nothing. */
/* Its layout is khl_pool_inline.h's khl_pool_class_cache_t, whose fast
 * paths the library runs too.  The free fast path compares frees with
 * flush_at, so it keeps no count of its own: freed holds
 * batch - (flush_at - frees) blocks, and flush_at - frees is 1..batch.
 * The counters are read and written through counter()/set_counter()
 * only. */
KHL_STATIC_ASSERT(sizeof(khl_pool_class_cache_t) == 64, "a class's thread cache is one cache line");

/* The batches a refill takes at most from the class (those of drained
 * records of exited threads, and published ones trim took back), under the
 * pool's lock.  Each is a cold line (its link lives in its first block,
 * last written by the thread that freed it), about 0.15 us: taking as many
 * as fill half of what a thread keeps (73 batches of 100-byte blocks) held
 * the lock 10.8 us on average, longer than a contended thread spins before
 * it sleeps; 8 hold it 2 us. */
enum { REFILL_CHAINS = 8 };

/* The records of exited threads a pool keeps for threads to adopt (each
 * about 2.4 KiB with the default classes, and what its thread cached).
 * More threads than that exiting while none starts is a burst; the records
 * past it go back as before adoption: blocks to the classes, freed. */
enum { KEEP_ABANDONED = 64 };

/* One thread's caches for one pool.  It belongs to the thread while the
 * thread lives, so a pool can die while threads live (see
 * khl_pool_thread.c); once the thread exits it belongs to the pool, blocks
 * and all (abandoned), until a new thread adopts it.  It starts as
 * khl_pool_inline.h reads it: the pool's gen, then the class caches from
 * the next cache line. */
struct thread_cache {
    khl_pool_thread_head_t head;
    khl_pool_t *pool;
    thread_cache_t *tl_next;      /* the owning thread's records */
    thread_cache_t *prev, *next;  /* the pool's records, under its lock */
    size_t kept;                  /* bytes in the stashes, at most the pool's keep_bytes */
    thread_cache_t *adopt_next;   /* the pool's abandoned records, under its lock */
    int dead;                     /* under the registry lock */
    int abandoned;                /* its thread exited, its blocks kept; under the pool's lock */
    khl_pool_class_cache_t c[];
};
KHL_STATIC_ASSERT(offsetof(thread_cache_t, c) == KHL_POOL_I_CACHES_OFFSET,
                  "a thread's class caches start where khl_pool_inline.h reads them");

/* The thread caches' counters: one writer, readers on any thread. */
#define counter(x) khl_pool_i_counter(x)
#define set_counter(x, v) khl_pool_i_set_counter(x, v)

static inline void bump_counter(uint64_t *x)
{
    set_counter(x, counter(x) + 1);
}

/* khl_pool_thread.c: thread caches */

KHL_HIDDEN int khl_i_threads_attach(khl_pool_t *p);
KHL_HIDDEN void khl_i_threads_detach(khl_pool_t *p);
KHL_HIDDEN thread_cache_t *khl_i_own_cache(const khl_pool_t *p);
KHL_HIDDEN void khl_i_cache_return_blocks(khl_pool_t *p, thread_cache_t *e);
KHL_HIDDEN void khl_i_cache_counts(const khl_pool_t *p, const thread_cache_t *e, size_t *in_use,
                                   uint64_t *allocs, uint64_t *frees);
KHL_HIDDEN uint64_t khl_i_user_allocs(const khl_pool_t *p, unsigned ci);
KHL_HIDDEN void khl_i_sample_peak(khl_pool_t *p);
KHL_HIDDEN void khl_i_drain_published(khl_pool_t *p, unsigned ci);
KHL_HIDDEN thread_cache_t *khl_i_retire_abandoned(khl_pool_t *p);
KHL_HIDDEN void khl_i_records_free(thread_cache_t *e);
KHL_HIDDEN int khl_i_abandoned_return_class(khl_pool_t *p, unsigned ci);
KHL_HIDDEN thread_cache_t *khl_i_my_cache(khl_pool_t *p);
KHL_HIDDEN void *khl_i_ts_alloc_slow(khl_pool_t *p, thread_cache_t *e, size_t n);
KHL_HIDDEN void khl_i_ts_free_slow(khl_pool_t *p, thread_cache_t *e, void *ptr, unsigned ci);

/* 1 when the record whose head is h is p's (khl_pool_inline.h's test). */
static inline int head_is_for(const khl_pool_thread_head_t *h, const khl_pool_t *p)
{
    return h->gen == p->hot.gen;
}

static inline int cache_is_for(const thread_cache_t *e, const khl_pool_t *p)
{
    return head_is_for(&e->head, p);
}

/* The record the calling thread used last when it is p's, else NULL.  The
 * guess is converted to a record only once its generation says it is one
 * (a record's head is its first member). */
static inline thread_cache_t *khl_i_last_record(const khl_pool_t *p)
{
    khl_pool_thread_head_t *h = khl_pool_i_last_cache;
    return KHL_LIKELY(head_is_for(h, p)) ? (thread_cache_t *)(void *)h : NULL;
}

#endif /* KHL_POOL_THREAD_H */
