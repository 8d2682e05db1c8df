/* khl_pool_internal.h: what the pool's source files share - its types, the
 * invariants they keep, the inline fast-path helpers, and the functions one
 * file calls in another.  Not part of the API: the library's own sources
 * (and white-box tests) include it; programs include khl_pool.h.
 *
 * ===========================================================================
 * Files
 *
 *   khl_pool_inline.h    (public) the first cache line of a pool, the class
 *                        record and the plain pools' inline fast paths
 *   khl_pool_internal.h  this: types, invariants, inline helpers
 *   khl_pool_os.c        system memory (mmap or `backing`) and the chunk index
 *   khl_pool_class.c     chunks, size classes, bundles, bump, reserve, trim,
 *                        the locked paths
 *   khl_pool_large.c     blocks above max_small: spans of arenas, huge
 *                        frames and the mappings kept for them
 *   khl_pool_thread.c    per-thread caches of thread-safe pools
 *   khl_pool_check.c     checked mode's per-call checks, khl_pool_check
 *   khl_pool.c           the public functions and the pool's lifetime
 *
 * ===========================================================================
 * Names
 *
 *   core_*    works on a pool with its lock held (the lock exists only in
 *             thread-safe pools): every mode, every size, no fast path.
 *   locked_*  takes the lock (thread-safe pools), calls core_*, drops it:
 *             what a call runs when no fast path serves it.
 *   ts_*      the thread-cache paths of a thread-safe, unchecked pool.
 *   cls_*     one size class's structures (lock held).
 *   frame_*, index_*  system memory and the chunk index (lock held).
 *   khl_i_    prefix of every function or variable one of these files
 *             defines for another: the archive exports only khl_ names
 *             (tests/test_symbols.c), and KHL_I_HIDDEN keeps them out of a
 *             shared library built from it.
 *
 * A pool runs in one of three modes, fixed at khl_pool_new:
 *   plain         neither thread_safe nor checked: small calls run the
 *                 inline paths of khl_pool_inline.h on the class records.
 *   thread-cached thread_safe, not checked: small calls run ts_* on the
 *                 calling thread's cache; misses take the lock.
 *   checked       checked (thread-safe or not): every call is a locked_*
 *                 call that checks its pointer first.
 * plain_path_max and cache_path_max turn the mode into one unsigned compare
 * per call (`n - 1 < max`, false for n == 0 and for a disabled path).
 *
 * Lock order: khl_i_registry_lock (the threads' cache records, in
 * khl_pool_thread.c), then a pool's lock, then whatever `backing` takes.
 * No path takes the registry lock while holding a pool's lock.
 *
 * ===========================================================================
 * Invariants (khl_pool_check verifies them; "|x|" is a count)
 *
 * Frames.  Every chunk and every live large block is a frame: chunk_bytes-
 * aligned, a chunk_t header at its start, and its address in the chunk index:
 *   index_n = nchunks + nlarge,  2 * index_n <= index_cap (a power of two)
 *   system  = sum over chunks and huge blocks of raw_size
 *           + sum over arenas of raw_size + cached_bytes
 *   nchunks = sum over classes c of |c.chunks|,   nlarge = |large|
 * A large block is a span (cls = its windows, 1..64; raw = its arena_t) or
 * huge (cls = 0; a frame of its own).  A span covers windows start..start+
 * cls of its arena, whose `used` bits are exactly the union of its spans'
 * windows, no two overlapping.  Freed huge frames in huge_cache (ncached,
 * cached_bytes) are out of the index, their header as it was.
 *   retained = cached_bytes + sum over arenas with used == 0 of raw_size
 *   nempty   = |arenas with used == 0| <= KEEP_EMPTY_ARENAS after any call
 * A chunk of class c holds cap slots of c.size bytes from `slots`; slots
 * below its bump pointer were handed out at least once, the rest never were.
 * For the class's current chunk (c.cur) the bump pointer is c.bump, c.end is
 * its slots' end; other chunks keep theirs in chunk.bump.
 *
 * Free blocks.  Class c's free blocks are the entries of its bundles (the
 * root array in the class record, then block bundles linked through their
 * first word, each a free block itself) plus, in thread-safe pools, the
 * chains in c.batches (one batch = c.batch blocks each; chains of exited
 * threads and chains taken off the published stack under the lock).  The
 * blocks of thread caches, their stashes and the published stack count as
 * handed out: the class sees them again when a thread exits, or when trim
 * takes the published stack.
 *   carved + (c.bump - c.cur.slots) / c.size - (c.allocs - c.frees)
 *       = |bundle entries| + |block bundles| + c.batch * |flushed chains|
 * where carved = sum over chunks k != c.cur of (k.bump - k.slots) / c.size.
 * Only the current bundle (base..lim, filled to top) may be partly full.
 * Fresh chunks (reserved, never bumped into) have bump = slots, are not
 * c.cur, and c.fresh_slots = sum of their cap.
 *
 * Counts.  In a single-threaded pool
 *   in_use = sum over classes of (c.allocs - c.frees) * c.size
 *          + sum over large blocks of size,            peak >= in_use
 *   large_allocs - large_frees = nlarge
 * A thread-safe pool's c.allocs/c.frees count blocks leaving and entering
 * the class (into thread caches too); callers' allocations are counted in
 * the caches and summed lazily (khl_pool_stats).  In a checked pool the
 * live bits of class c's chunks number c.allocs - c.frees, and no free
 * block's bit is set.
 *
 * Reserve.  While c.reserve_until > user allocations of c, the blocks ready
 * (free + bump room + fresh slots) are at least the blocks still promised.
 */
#ifndef KHL_POOL_INTERNAL_H
#define KHL_POOL_INTERNAL_H

#define KHL_POOL_BUILDING_LIBRARY 1   /* keep the library's own names unmapped */
#include "khl_pool_inline.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

/* Every block starts at a multiple of GRAIN, which covers max_align_t. */
#define GRAIN ((size_t)16)
KHL_STATIC_ASSERT(KHL_ALIGNOF(max_align_t) <= 16, "GRAIN must cover max_align_t");

#define MIN_CHUNK ((size_t)16 * 1024)
#define MAX_CHUNK ((size_t)1 << 30)
#define MAX_SMALL_CAP ((size_t)1024 * 1024)
#define SLOTS_PER_CHUNK 8   /* chunk_bytes >= SLOTS_PER_CHUNK * max_small */

/* Frame kinds, doubling as magic numbers in checked mode's diagnostics.
 * Small chunks of a plain pool carry their own kind, so that unsized free
 * knows from the header it reads anyway that the plain path may take the
 * block. */
#define KIND_SMALL_PLAIN   KHL_POOL_I_KIND_SMALL_PLAIN   /* "khlF": small-block chunk of a plain pool */
#define KIND_SMALL_GUARDED KHL_POOL_I_KIND_SMALL_GUARDED   /* "khlS": small-block chunk of a thread-safe or checked pool */
#define KIND_LARGE         0x6b686c4cu   /* "khlL": a large block's frame */

/* Large blocks: spans of arenas up to large_max (see khl_pool_large.c). */
#define ARENA_MAX_WINDOWS 64u            /* one bit per window in a uint64_t */
#define ARENA_BYTES ((size_t)8 << 20)    /* an arena's size when the limit allows */
#define KEEP_EMPTY_ARENAS 1u             /* empty arenas kept for the next blocks */
#define HUGE_CACHE_FRAMES 4u             /* freed huge mappings kept */

#define F_THREADS 1u
#define F_CHECKED 2u

#if defined(__GNUC__) || defined(__clang__)
#define TLS_MODEL __attribute__((tls_model("initial-exec")))
#define NOINLINE __attribute__((noinline))
#define ALWAYS_INLINE inline __attribute__((always_inline))
#define KHL_I_HIDDEN __attribute__((visibility("hidden")))
#else
#define TLS_MODEL
#define NOINLINE
#define ALWAYS_INLINE inline
#define KHL_I_HIDDEN
#endif

/* The header at the aligned start of every chunk and large block. */
typedef struct khl_pool_chunk {
    uint32_t kind, cls;           /* khl_pool_frame_head_t */
    void *raw;                    /* what the system gave, and its size: */
    size_t raw_size;              /* passed back verbatim on release */
    struct khl_pool_chunk *prev, *next; /* the class's chunks, or the large blocks */
    struct khl_pool_chunk *fresh_next;     /* reserved chunks nobody has bumped into */
    char *slots;                  /* first slot */
    char *bump;                   /* first never-used slot, while not current */
    size_t size;                  /* slot size; a large block's size */
    size_t cap;                   /* slots; a large block's usable bytes */
    size_t trim_free;             /* trim: free blocks counted here, or TRIM_DOOMED */
    unsigned char live[];         /* checked mode: one bit per slot */
} chunk_t;

#define TRIM_DOOMED SIZE_MAX
/* Bytes before a large block's first byte, and the least before a chunk's
 * first slot: the header rounded up to GRAIN. */
#define FRAME_HEADER_BYTES (((sizeof(chunk_t)) + GRAIN - 1) & ~(GRAIN - 1))

#define ROOT_ENTRIES KHL_POOL_I_ROOT_ENTRIES
KHL_STATIC_ASSERT(offsetof(chunk_t, kind) == offsetof(khl_pool_frame_head_t, kind) &&
                  offsetof(chunk_t, cls) == offsetof(khl_pool_frame_head_t, cls),
                  "a chunk header starts as khl_pool_inline.h reads it");

/* An arena: windows of chunk_bytes that span blocks are cut from.  Its
 * record lives in meta memory, so a wholly free arena holds no header. */
typedef struct khl_pool_arena {
    struct khl_pool_arena *prev, *next;
    char *base;                   /* first window, chunk_bytes-aligned */
    void *raw;                    /* what the system gave, and its size */
    size_t raw_size;
    unsigned nwin;                /* windows, at most ARENA_MAX_WINDOWS */
    uint64_t used;                /* bit i: window i belongs to a span */
} arena_t;

/* A size class's record and its bundles of free blocks: khl_pool_inline.h,
 * where the inline fast paths read them. */
typedef khl_pool_class_t cls_t;

typedef struct thread_cache thread_cache_t;

/* Thread-safe pools, per class: batches thread caches published for any
 * thread to take.  A stack that is only pushed (one compare-and-swap per
 * batch) and emptied whole (one exchange), never popped one by one, so no
 * taker can see a head that was taken and pushed again meanwhile (ABA).
 * Chains link through their first block's second word (batch_next).  One
 * cache line per class: threads freeing different classes do not share it. */
typedef struct published {
    _Alignas(64) _Atomic(void *) head;
} published_t;

struct khl_pool {
    khl_pool_head_t hot;          /* path switches (see Names above), mask, classes, in_use, peak, gen */
    unsigned flags;
    size_t max_small;
    uint64_t large_allocs, large_frees;
    /* Thread-safe pools: small blocks allocated and freed outside any live
     * thread's cache (locked paths, and the counts of exited threads). */
    uint64_t uncached_allocs, uncached_frees;
    size_t chunk_bytes, page;
    int prefault;                 /* 1 unless lazy_pages (see chunk_new) */
    size_t limit;                 /* limit_bytes; 0: none */
    size_t phys;                  /* physical memory, SIZE_MAX when unknown */
    khl_allocator_t backing;      /* fn NULL: mmap */
    const khl_allocator_t *meta;  /* where the pool and its index live */
    void *self_raw;               /* the pool's own allocation, aligned inside */
    size_t self_bytes;
    size_t system, meta_bytes, nchunks, nlarge;
    uint64_t sys_calls;           /* requests to mmap/munmap/mremap/madvise or backing */
    chunk_t *large;               /* live large blocks, spans and huge */
    size_t large_max;             /* largest span block; above it, huge */
    arena_t *arenas;
    size_t narenas, nempty;
    chunk_t *huge_cache;          /* freed huge frames kept, newest first */
    size_t ncached, cached_bytes, cache_max;
    size_t retained;              /* system bytes no block holds: empty arenas, kept frames */
    uintptr_t *index;             /* open addressing set of frame addresses */
    size_t index_cap, index_n;
    unsigned ncls;
    /* thread-safe pools */
    pthread_mutex_t lock;
    thread_cache_t *threads;
    published_t *published;       /* ncls of them, after cls[] in the pool's allocation */
    size_t keep_bytes;            /* thread_keep_bytes: what a thread's stashes may hold */
    cls_t cls[];
};

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
typedef khl_pool_class_cache_t class_cache_t;
KHL_STATIC_ASSERT(sizeof(class_cache_t) == 64, "a class's thread cache is one cache line");

/* One thread's caches for one pool.  It belongs to the thread, never to the
 * pool, so a pool can die while threads live (see khl_pool_thread.c).  It
 * starts as khl_pool_inline.h reads it: the pool's gen, then the class
 * caches from the next cache line. */
struct thread_cache {
    khl_pool_thread_head_t head;
    khl_pool_t *pool;
    thread_cache_t *tl_next;      /* the owning thread's records */
    thread_cache_t *prev, *next;  /* the pool's records, under its lock */
    size_t kept;                  /* bytes in the stashes, at most the pool's keep_bytes */
    int dead;                     /* under the registry lock */
    class_cache_t c[];
};
KHL_STATIC_ASSERT(offsetof(thread_cache_t, c) == KHL_POOL_I_CACHES_OFFSET,
                  "a thread's class caches start where khl_pool_inline.h reads them");

/* ------------------------------------------------------------------------ */
/* Inline helpers                                                           */

static inline unsigned class_of(size_t n)
{
    return khl_pool_i_class_of(n);
}

static inline size_t class_size(unsigned c)
{
    unsigned g;
    if (c < 8)
        return GRAIN * (c + 1u);
    g = 7u + (c - 8u) / 4u;
    return ((size_t)1 << g) + (size_t)((c - 8u) % 4u + 1u) * ((size_t)1 << (g - 2u));
}

static inline uintptr_t align_up(uintptr_t x, uintptr_t a)
{
    return (x + a - 1) & ~(a - 1);
}

static inline chunk_t *chunk_of(const khl_pool_t *p, const void *ptr)
{
    return (chunk_t *)((uintptr_t)ptr & ~p->hot.mask);
}

static inline void lock(const khl_pool_t *p)
{
    if (p->flags & F_THREADS)
        pthread_mutex_lock((pthread_mutex_t *)&p->lock);
}

static inline void unlock(const khl_pool_t *p)
{
    if (p->flags & F_THREADS)
        pthread_mutex_unlock((pthread_mutex_t *)&p->lock);
}

static inline void note_alloc(khl_pool_t *p, size_t bytes)
{
    p->hot.in_use += bytes;
    if (p->hot.in_use > p->hot.peak)
        p->hot.peak = p->hot.in_use;
}

/* 1 when the pool may take `cost` more bytes from the system: what it
 * retains without a block in it goes back first (khl_i_large_shed), so a
 * freed large block never makes a later call fail. */
static inline int within_limit(const khl_pool_t *p, size_t cost)
{
    return !p->limit || (cost <= p->limit && p->system - p->retained <= p->limit - cost);
}

static inline void *meta_alloc(const khl_allocator_t *a, size_t n)
{
    return a->fn(a->ud, NULL, 0, n);
}

static inline void meta_free(const khl_allocator_t *a, void *ptr, size_t n)
{
    if (ptr)
        a->fn(a->ud, ptr, n, 0);
}

/* A class's chunks, the live large blocks, the kept huge frames: lists
 * linked through prev/next. */
static inline void chunk_list_push(chunk_t **head, chunk_t *k)
{
    k->prev = NULL;
    k->next = *head;
    if (*head)
        (*head)->prev = k;
    *head = k;
}

static inline void chunk_list_unlink(chunk_t **head, chunk_t *k)
{
    if (k->prev)
        k->prev->next = k->next;
    else
        *head = k->next;
    if (k->next)
        k->next->prev = k->prev;
}

static inline size_t bump_left(const cls_t *c)
{
    return c->bump == c->end ? 0 : (size_t)(c->end - c->bump) / c->size;
}

/* The bundles (see cls_t). */
static inline void cls_bundles_init(cls_t *c)
{
    c->base = c->top = c->root;
    c->lim = c->root + ROOT_ENTRIES;
}

static inline void cls_push(cls_t *c, void *b)
{
    khl_pool_i_push(c, b);
}

static inline void *cls_pop_bundle(cls_t *c)
{
    return khl_pool_i_pop_bundle(c);
}

static inline void *cls_pop_free(cls_t *c)
{
    return c->top != c->base ? *--c->top : cls_pop_bundle(c);
}

/* Batches that thread caches flushed: a chain of blocks whose first block
 * also links to the next chain (second word: every class has two). */
static inline void *batch_next(void *chain)
{
    return ((void **)chain)[1];
}

/* Checked mode's live bits. */
static inline size_t slot_index(const chunk_t *k, const void *ptr)
{
    return (size_t)((const char *)ptr - k->slots) / k->size;
}

static inline int live_bit(const chunk_t *k, size_t i)
{
    return (k->live[i / 8] >> (i % 8)) & 1;
}

static inline void khl_i_set_live(chunk_t *k, const void *ptr, int on)
{
    size_t i = slot_index(k, ptr);
    unsigned char bit = (unsigned char)(1u << (i % 8));
    k->live[i / 8] = (unsigned char)(on ? k->live[i / 8] | bit : k->live[i / 8] & ~bit);
}

/* The thread caches' counters: one writer, readers on any thread. */
#define counter(x) khl_pool_i_counter(x)
#define set_counter(x, v) khl_pool_i_set_counter(x, v)

static inline void bump_counter(uint64_t *x)
{
    set_counter(x, counter(x) + 1);
}

/* Under -DKHL_DEBUG every slow path ends by checking the whole pool (lock
 * held) and aborts on the first broken invariant. */
#ifdef KHL_DEBUG
#define KHL_I_DEBUG_CHECK(p) khl_i_check_or_die(p)
#else
#define KHL_I_DEBUG_CHECK(p) ((void)0)
#endif

/* ------------------------------------------------------------------------ */
/* khl_pool_os.c: system memory and the chunk index (lock held)             */

KHL_I_HIDDEN size_t khl_i_frame_cost(const khl_pool_t *p, size_t bytes);
KHL_I_HIDDEN void khl_i_frame_free(khl_pool_t *p, void *raw, size_t raw_size);
KHL_I_HIDDEN int khl_i_index_has(const khl_pool_t *p, uintptr_t key);
KHL_I_HIDDEN int khl_i_index_make_room(khl_pool_t *p, size_t n);
KHL_I_HIDDEN chunk_t *khl_i_frame_take(khl_pool_t *p, size_t bytes, uint32_t kind);
KHL_I_HIDDEN void khl_i_frame_adopt(khl_pool_t *p, chunk_t *k);
KHL_I_HIDDEN chunk_t *khl_i_frame_new(khl_pool_t *p, size_t bytes, uint32_t kind);
KHL_I_HIDDEN void khl_i_frame_release(khl_pool_t *p, chunk_t *k);
KHL_I_HIDDEN int khl_i_frame_prefault(khl_pool_t *p, chunk_t *k);
KHL_I_HIDDEN char *khl_i_region_take(khl_pool_t *p, size_t bytes, void **raw, size_t *raw_size);
KHL_I_HIDDEN void khl_i_index_add(khl_pool_t *p, uintptr_t key);
KHL_I_HIDDEN void khl_i_index_remove(khl_pool_t *p, uintptr_t key);
KHL_I_HIDDEN chunk_t *khl_i_frame_remap(khl_pool_t *p, chunk_t *k, size_t raw_size);
KHL_I_HIDDEN void khl_i_frame_cut(khl_pool_t *p, chunk_t *k, size_t raw_size);

/* khl_pool_large.c: blocks above max_small (lock held) */

KHL_I_HIDDEN void *khl_i_large_alloc(khl_pool_t *p, size_t n);
KHL_I_HIDDEN void khl_i_large_free(khl_pool_t *p, chunk_t *k);
KHL_I_HIDDEN void *khl_i_large_resize(khl_pool_t *p, chunk_t *k, size_t nsize);
KHL_I_HIDDEN void khl_i_large_shed(khl_pool_t *p);
KHL_I_HIDDEN void khl_i_large_trim(khl_pool_t *p);
KHL_I_HIDDEN void khl_i_large_destroy(khl_pool_t *p);

/* khl_pool_class.c: classes, reserve, trim, the locked paths */

KHL_I_HIDDEN size_t khl_i_chunk_layout(const khl_pool_t *p, unsigned c, size_t *off);
KHL_I_HIDDEN size_t khl_i_cls_nfree(const cls_t *c);
KHL_I_HIDDEN size_t khl_i_cls_ready(const cls_t *c);
KHL_I_HIDDEN size_t khl_i_cls_reserved(khl_pool_t *p, unsigned ci, uint64_t done);
KHL_I_HIDDEN int khl_i_cls_fill_bump(khl_pool_t *p, unsigned ci, int sys);
KHL_I_HIDDEN void *khl_i_cls_pop(khl_pool_t *p, unsigned ci, int sys);
KHL_I_HIDDEN int khl_i_core_reserve(khl_pool_t *p, unsigned ci, size_t count, uint64_t done);
KHL_I_HIDDEN void khl_i_core_trim_class(khl_pool_t *p, unsigned ci, uint64_t done);
KHL_I_HIDDEN void *khl_i_take_chain(khl_pool_t *p, unsigned ci);
KHL_I_HIDDEN size_t khl_i_splice_chain(cls_t *c, void *head);
KHL_I_HIDDEN void khl_i_batches_return(cls_t *c, void *chains);

/* khl_pool_check.c: checked mode, the validator */

KHL_I_HIDDEN _Noreturn void khl_i_die(const char *who, const void *ptr, const char *check);
KHL_I_HIDDEN chunk_t *khl_i_find_block(const khl_pool_t *p, const void *ptr, const char **why);
KHL_I_HIDDEN chunk_t *khl_i_check_live(const khl_pool_t *p, const void *ptr, size_t n, const char *who);
KHL_I_HIDDEN int khl_i_check_held(const khl_pool_t *p);
KHL_I_HIDDEN void khl_i_check_or_die(const khl_pool_t *p);

/* khl_pool_thread.c: thread caches */

KHL_I_HIDDEN int khl_i_threads_attach(khl_pool_t *p);
KHL_I_HIDDEN void khl_i_threads_detach(khl_pool_t *p);
KHL_I_HIDDEN thread_cache_t *khl_i_own_cache(const khl_pool_t *p);
KHL_I_HIDDEN void khl_i_cache_return_blocks(khl_pool_t *p, thread_cache_t *e);
KHL_I_HIDDEN void khl_i_cache_counts(const khl_pool_t *p, const thread_cache_t *e, size_t *in_use,
                                     uint64_t *allocs, uint64_t *frees);
KHL_I_HIDDEN uint64_t khl_i_user_allocs(const khl_pool_t *p, unsigned ci);
KHL_I_HIDDEN void khl_i_sample_peak(khl_pool_t *p);
KHL_I_HIDDEN void khl_i_drain_published(khl_pool_t *p, unsigned ci);
KHL_I_HIDDEN thread_cache_t *khl_i_my_cache(khl_pool_t *p);
KHL_I_HIDDEN void *khl_i_ts_alloc_slow(khl_pool_t *p, thread_cache_t *e, size_t n);
KHL_I_HIDDEN void khl_i_ts_free_slow(khl_pool_t *p, thread_cache_t *e, void *ptr, unsigned ci);

/* 1 when e is p's record (khl_pool_inline.h's test). */
static inline int cache_is_for(const thread_cache_t *e, const khl_pool_t *p)
{
    return e && e->head.gen == p->hot.gen;
}

#endif /* KHL_POOL_INTERNAL_H */
