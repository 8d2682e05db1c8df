/* khl_pool_os.h: the ground floor of the pool, which every layer above
 * stands on - the pool's record, the frames (chunks and large blocks) and
 * arenas it takes from the system, the lock, and khl_pool_os.c's system
 * memory and chunk index.  Layers and invariants: khl_pool_internal.h. */
#ifndef KHL_POOL_OS_H
#define KHL_POOL_OS_H

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
/* Span blocks start a colour (a multiple of COLOUR_STEP below COLOUR_SPAN)
 * past their header, taken from the slack of their last window: see
 * khl_pool_large.c. */
#define COLOUR_STEP ((size_t)64)
#define COLOUR_SPAN ((size_t)4096)
#define HUGE_CACHE_FRAMES 4u             /* freed huge mappings kept */
/* Chunks' frames are cut from reservations of this many (khl_pool_os.c),
 * where those stay within RESERVE_MAX. */
#define RESERVE_CHUNKS 8u
#define RESERVE_MAX ((size_t)2 << 20)

#define F_THREADS 1u
#define F_CHECKED 2u

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
} khl_pool_chunk_t;

#define TRIM_DOOMED SIZE_MAX
/* Bytes before a large block's first byte, and the least before a chunk's
 * first slot: the header rounded up to GRAIN. */
#define FRAME_HEADER_BYTES (((sizeof(khl_pool_chunk_t)) + GRAIN - 1) & ~(GRAIN - 1))

#define ROOT_ENTRIES KHL_POOL_I_ROOT_ENTRIES
KHL_STATIC_ASSERT(offsetof(khl_pool_chunk_t, kind) == offsetof(khl_pool_frame_head_t, kind) &&
                  offsetof(khl_pool_chunk_t, cls) == offsetof(khl_pool_frame_head_t, cls),
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
    /* Thread-safe pools: small blocks allocated and freed outside every
     * thread's cache (the locked paths; an exited thread's counts stay in
     * its record, which the pool keeps). */
    uint64_t uncached_allocs, uncached_frees;
    size_t chunk_bytes, page;
    int prefault;                 /* 1: faults its own chunks' pages ahead, never with a backing allocator (lazy_pages; khl_pool_class.c) */
    char *map_last, *map_above;   /* the last mapping, and its end (map_at_hint) */
    /* Address space mapped for the next chunks: chunk frames are cut from
     * it upward (khl_pool_os.c, frame_alloc), so most chunk takes make no
     * system call.  Unwritten but for the first pages of a chunk that a
     * failed take gave back (khl_i_frame_drop); counted nowhere until cut. */
    char *resv_next, *resv_end;
    int map_up;                   /* 1: mappings are placed upward, as under valgrind */
    /* huge_pages: frames of at least this many bytes start on such a
     * boundary, advised; 0: off.  32 bits, in map_up's padding: the class
     * table at the pool's end stays where the fast paths' code expects it
     * (a size_t here moved it a line on and cost khl_pool_alloc 0.4
     * instructions a call in mruby's bm_ao_render). */
    uint32_t huge_page;
    size_t limit;                 /* limit_bytes; 0: none */
    size_t phys;                  /* physical memory, SIZE_MAX when unknown */
    khl_allocator_t backing;      /* fn NULL: mmap */
    const khl_allocator_t *meta;  /* where the pool and its index live */
    void *self_raw;               /* the pool's own allocation, aligned inside */
    size_t self_bytes;
    size_t system, meta_bytes, nchunks, nlarge;
    uint64_t sys_calls;           /* requests to mmap/munmap/mremap/madvise or backing */
    khl_pool_chunk_t *large;               /* live large blocks, spans and huge */
    size_t large_max;             /* largest span block; above it, huge */
    arena_t *arenas;
    size_t narenas, nempty;
    size_t colour;                /* the next span block's, in COLOUR_STEPs */
    khl_pool_chunk_t *huge_cache;          /* freed huge frames kept, newest first */
    size_t ncached, cached_bytes, cache_max;
    size_t retained;              /* system bytes no block holds: empty arenas, kept frames */
    uintptr_t *index;             /* open addressing set of frame addresses */
    size_t index_cap, index_n;
    unsigned ncls;
    /* thread-safe pools */
    pthread_mutex_t lock;
    thread_cache_t *threads;      /* every record, abandoned ones too */
    thread_cache_t *abandoned;    /* records of exited threads, newest first (adopt_next) */
    size_t nabandoned;            /* at most KEEP_ABANDONED */
    published_t *published;       /* ncls of them, after cls[] in the pool's allocation */
    size_t keep_bytes;            /* thread_keep_bytes: what a thread's stashes may hold */
    khl_pool_class_t cls[];
};

/* ------------------------------------------------------------------------ */
/* Inline helpers                                                           */

static inline uintptr_t align_up(uintptr_t x, uintptr_t a)
{
    return (x + a - 1) & ~(a - 1);
}

static inline khl_pool_chunk_t *chunk_of(const khl_pool_t *p, const void *ptr)
{
    return (khl_pool_chunk_t *)((uintptr_t)ptr & ~p->hot.mask);
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

/* bytes more in use on the locked path.  A thread-safe pool's peak is
 * sampled by the caller, from the whole sum (khl_pool_head_t). */
static inline void note_alloc(khl_pool_t *p, size_t bytes)
{
    if (p->flags & F_THREADS)
        p->hot.in_use += bytes;
    else
        KHL_POOL_I_NOTE_USE(&p->hot, bytes);
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
static inline void chunk_list_push(khl_pool_chunk_t **head, khl_pool_chunk_t *k)
{
    k->prev = NULL;
    k->next = *head;
    if (*head)
        (*head)->prev = k;
    *head = k;
}

static inline void chunk_list_unlink(khl_pool_chunk_t **head, khl_pool_chunk_t *k)
{
    if (k->prev)
        k->prev->next = k->next;
    else
        *head = k->next;
    if (k->next)
        k->next->prev = k->prev;
}

/* khl_pool_os.c: system memory and the chunk index (lock held) */


KHL_HIDDEN size_t khl_i_frame_cost(const khl_pool_t *p, size_t bytes);
KHL_HIDDEN void khl_i_frame_free(khl_pool_t *p, void *raw, size_t raw_size);
/* Gives back a frame taken in the call that now fails, before it was
 * adopted: the reservation it was cut from gets it back when it was the
 * last cut (the pool's reservation is then as it was), else it is freed. */
KHL_HIDDEN void khl_i_frame_drop(khl_pool_t *p, void *raw, size_t raw_size);

/* Frames given back together (khl_pool_destroy gives back every one):
 * mappings that lie side by side, as the pool places them, leave in one
 * munmap.  On a VM each munmap of touched pages flushes TLBs: 16 chunks of
 * 128 KiB with a page touched in each took 134 us to unmap one by one and
 * 16 us in one call (4 pages each: 266 and 57 us).  Runs are kept on the
 * caller's stack, so giving back never allocates; when all are taken by
 * frames that touch none of them, they are unmapped and the batch starts
 * again.  A backing allocator gets each frame back as it gave it. */
enum { KHL_I_UNMAP_RUNS = 32 };
typedef struct khl_pool_unmap {
    unsigned n;
    struct {
        char *at;
        size_t len;
    } run[KHL_I_UNMAP_RUNS];
} khl_pool_unmap_t;
KHL_HIDDEN void khl_i_unmap_add(khl_pool_t *p, khl_pool_unmap_t *u, void *raw, size_t raw_size);
KHL_HIDDEN void khl_i_unmap_flush(khl_pool_t *p, khl_pool_unmap_t *u);
/* The reservation's uncut rest into u (khl_pool_destroy). */
KHL_HIDDEN void khl_i_reservation_release(khl_pool_t *p, khl_pool_unmap_t *u);
/* Drops an indexed frame from the pool, its memory into u. */
KHL_HIDDEN void khl_i_frame_release(khl_pool_t *p, khl_pool_chunk_t *k, khl_pool_unmap_t *u);
KHL_HIDDEN int khl_i_index_has(const khl_pool_t *p, uintptr_t key);
KHL_HIDDEN int khl_i_index_make_room(khl_pool_t *p, size_t n);
KHL_HIDDEN khl_pool_chunk_t *khl_i_frame_take(khl_pool_t *p, size_t bytes, uint32_t kind, size_t faulted);
KHL_HIDDEN void khl_i_frame_adopt(khl_pool_t *p, khl_pool_chunk_t *k);
KHL_HIDDEN khl_pool_chunk_t *khl_i_frame_new(khl_pool_t *p, size_t bytes, uint32_t kind, size_t faulted);
KHL_HIDDEN int khl_i_pages_prefault(khl_pool_t *p, char *from, char *to);
KHL_HIDDEN int khl_i_ahead_pays(uint64_t trap_ns, uint64_t ahead_ns);
KHL_HIDDEN int khl_i_faults_ahead_pay(size_t page);
KHL_HIDDEN uint32_t khl_i_huge_page_size(void);

/* Whether a frame of len bytes spans a huge page (huge_pages; never with a
 * backing allocator, whose pools keep huge_page 0): such a frame starts on
 * one. */
static inline int khl_i_frame_is_huge(const khl_pool_t *p, size_t len)
{
    return p->huge_page && len >= p->huge_page;
}
KHL_HIDDEN char *khl_i_region_take(khl_pool_t *p, size_t bytes, void **raw, size_t *raw_size);
KHL_HIDDEN void khl_i_index_add(khl_pool_t *p, uintptr_t key);
KHL_HIDDEN void khl_i_index_remove(khl_pool_t *p, uintptr_t key);
KHL_HIDDEN khl_pool_chunk_t *khl_i_frame_remap(khl_pool_t *p, khl_pool_chunk_t *k, size_t raw_size);
KHL_HIDDEN void khl_i_frame_cut(khl_pool_t *p, khl_pool_chunk_t *k, size_t raw_size);

#endif /* KHL_POOL_OS_H */
