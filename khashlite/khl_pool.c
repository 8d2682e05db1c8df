/* khl_pool.c: the size-class pool behind khl_pool.h (design notes there).
 *
 * Layout of the code: size classes; the system (mmap or `backing`) and the
 * chunk index; chunks and classes (the single-threaded core, which thread-
 * safe pools run under their lock); checked mode; per-thread caches; the
 * public functions, fast paths first.
 */
#define _GNU_SOURCE 1   /* MAP_ANONYMOUS under -std=c11, adaptive mutexes */

#include "khl_pool.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Every block starts at a multiple of GRAIN, which covers max_align_t. */
#define GRAIN ((size_t)16)
KHL_STATIC_ASSERT(KHL_ALIGNOF(max_align_t) <= 16, "GRAIN must cover max_align_t");

#define MIN_CHUNK ((size_t)16 * 1024)
#define MAX_CHUNK ((size_t)1 << 30)
#define MAX_SMALL_CAP ((size_t)1024 * 1024)
#define SLOTS_PER_CHUNK 8   /* chunk_bytes >= SLOTS_PER_CHUNK * max_small */

/* Frame kinds, doubling as magic numbers in checked mode's diagnostics. */
#define KIND_SMALL 0x6b686c53u   /* "khlS" */
#define KIND_FAST  0x6b686c46u   /* "khlF": small, of a pool on the fast path */
#define KIND_LARGE 0x6b686c4cu   /* "khlL" */

#define F_THREADS 1u
#define F_CHECKED 2u

#if defined(__GNUC__) || defined(__clang__)
#define TLS_MODEL __attribute__((tls_model("initial-exec")))
#define NOINLINE __attribute__((noinline))
#define PREFETCH_W(a) __builtin_prefetch((a), 1)
#else
#define PREFETCH_W(a) ((void)(a))
#define TLS_MODEL
#define NOINLINE
#endif

/* The header at the aligned start of every chunk and large block. */
typedef struct chunk {
    uint32_t kind, cls;
    void *raw;                    /* what the system gave, and its size: */
    size_t raw_size;              /* passed back verbatim on release */
    struct chunk *prev, *next;    /* the class's chunks, or the large blocks */
    struct chunk *fresh_next;     /* reserved chunks nobody has bumped into */
    char *slots;                  /* first slot */
    char *bump;                   /* first never-used slot, while not current */
    size_t size;                  /* slot size; a large block's size */
    size_t cap;                   /* slots; a large block's usable bytes */
    size_t scratch;               /* trim: free blocks seen */
    unsigned char live[];         /* checked mode: one bit per slot */
} chunk_t;

#define HDR (((sizeof(chunk_t)) + GRAIN - 1) & ~(GRAIN - 1))

/* Entries of the bundle every class has in its own record (see cls_t). */
#define ROOT_ENTRIES 8

/* The fields the fast path touches come first and share one cache line.
 *
 * A class's free blocks are kept in bundles: arrays of pointers to free
 * blocks of the class.  The first bundle, the root, is an array in the
 * class record; every other is a free block whose first word links to the
 * bundle below it (NULL: the root).  Only the current bundle (entries
 * base..lim, filled up to top) may be partly filled; those below are full.
 * Free stores the block above top, and when the bundle is full makes the
 * block the new current bundle; allocation takes the entry below top, and
 * when a block bundle is empty hands out the bundle block itself.  So
 * neither touches the block it hands out or takes back (a list threaded
 * through the blocks writes into each freed block and reads each one it
 * allocates: a cache miss each when they are cold), allocation knows the
 * next block in advance and prefetches it for the caller's first write, and
 * a block freed and allocated in turn only moves top in the root.  Bundles
 * cost no memory: they are free blocks. */
typedef struct cls {
    /* top, base and lim are stored together and loaded one by one: they are
     * not neighbours, or the compiler merges their stores into one vector
     * store from which the next call's loads cannot be forwarded. */
    _Alignas(64) void **top;      /* next unused entry of the current bundle */
    char *bump;                   /* never-used slots of `cur`, up to end */
    void **base;                  /* first entry of the current bundle */
    char *end;
    void **lim;                   /* one past its last entry */
    size_t size;
    /* Blocks that left and came back to this class: the number of free
     * blocks follows from them (cls_nfree), and in a single-threaded pool
     * the reserve left (cls_reserved). */
    uint64_t allocs, frees;
    uint64_t reserve_until;       /* reserve holds until cls_user_allocs reaches this; 0: none */
    uint64_t ts_allocs;           /* thread-safe: callers' allocations no live thread record counts */
    size_t carved;                /* slots ever bumped, in chunks other than cur */
    chunk_t *cur;
    chunk_t *fresh;               /* chunks with all slots never used */
    void *batches;                /* thread-safe: flushed chains of exited threads */
    size_t fresh_slots;
    chunk_t *chunks;
    size_t batch;                 /* thread caches move this many at a time */
    size_t refills;
    size_t bundle_cap;            /* entries per block bundle: a block's words but the link */
    void *root[ROOT_ENTRIES];     /* the root bundle */
} cls_t;

typedef struct tentry tentry_t;

struct khl_pool {
    size_t fast_max;              /* max_small, or 0 when flags send every call off the fast path */
    size_t ts_max;                /* max_small when thread caches serve small blocks, else 0 */
    uintptr_t mask;               /* chunk_bytes - 1 */
    size_t in_use, peak;
    uint64_t gen;                 /* tells a pool from an earlier one at the same address */
    unsigned flags;
    size_t max_small;
    uint64_t large_allocs, large_frees;
    uint64_t x_allocs, x_frees;   /* thread-safe: small blocks counted outside thread records */
    size_t chunk_bytes, page;
    size_t limit;                 /* limit_bytes; 0: none */
    size_t phys;                  /* physical memory, SIZE_MAX when unknown */
    khl_allocator_t backing;      /* fn NULL: mmap */
    const khl_allocator_t *meta;  /* where the pool and its index live */
    void *self_raw;               /* the pool's own allocation, aligned inside */
    size_t self_bytes;
    size_t system, meta_bytes, nchunks, nlarge;
    chunk_t *large;
    uintptr_t *index;             /* open addressing set of frame addresses */
    size_t index_cap, index_n;
    unsigned ncls;
    /* thread-safe pools */
    pthread_mutex_t lock;
    tentry_t *threads;
    cls_t cls[];
};

/* ------------------------------------------------------------------------ */
/* Size classes                                                              */

static inline unsigned floor_log2(size_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)(sizeof(unsigned long long) * CHAR_BIT - 1) -
           (unsigned)__builtin_clzll((unsigned long long)x);
#else
    unsigned r = 0;
    while (x >>= 1)
        r++;
    return r;
#endif
}

/* 16-byte steps to 128, then 4 classes per doubling: arithmetic, no table. */
static inline unsigned class_of(size_t n)
{
    size_t m = n - 1;
    unsigned g;
    if (n <= 128)
        return (unsigned)(m >> 4);
    g = floor_log2(m);
    return 8u + (g - 7u) * 4u + (unsigned)((m >> (g - 2u)) & 3u);
}

static size_t class_size(unsigned c)
{
    unsigned g;
    if (c < 8)
        return GRAIN * (c + 1u);
    g = 7u + (c - 8u) / 4u;
    return ((size_t)1 << g) + (size_t)((c - 8u) % 4u + 1u) * ((size_t)1 << (g - 2u));
}

/* ------------------------------------------------------------------------ */
/* The system: mmap by default, or the caller's backing allocator            */

static inline uintptr_t align_up(uintptr_t x, uintptr_t a)
{
    return (x + a - 1) & ~(a - 1);
}

/* What a frame of `bytes` keeps of the system's memory (its raw_size, what
 * system_bytes and limit_bytes count); 0 when that does not fit a size_t. */
static size_t frame_cost(const khl_pool_t *p, size_t bytes)
{
    size_t align = p->chunk_bytes;
    if (p->backing.fn)
        return bytes > SIZE_MAX - align ? 0 : bytes + align - GRAIN;
    return bytes > SIZE_MAX - align - p->page ? 0 : (size_t)align_up(bytes, p->page);
}

/* 1 when the pool may take `cost` more bytes from the system. */
static int within_limit(const khl_pool_t *p, size_t cost)
{
    return !p->limit || (cost <= p->limit && p->system <= p->limit - cost);
}

/* A frame of `bytes` aligned to chunk_bytes.  mmap over-maps and unmaps the
 * slack; a backing allocator only promises malloc alignment, so we ask it for
 * the slack too and keep it (raw/raw_size say exactly what to give back). */
static char *frame_alloc(khl_pool_t *p, size_t bytes, void **raw, size_t *raw_size)
{
    size_t align = p->chunk_bytes;
    *raw_size = frame_cost(p, bytes);
    if (!*raw_size)
        return NULL;
    if (p->backing.fn) {
        char *m = (char *)p->backing.fn(p->backing.ud, NULL, 0, *raw_size);
        if (!m)
            return NULL;
        *raw = m;
        return (char *)align_up((uintptr_t)m, align);
    } else {
        size_t len = *raw_size, map = len + align - p->page;
        char *m, *a;
        m = (char *)mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        a = (char *)align_up((uintptr_t)m, align);
        if (a > m)
            munmap(m, (size_t)(a - m));
        if (m + map > a + len)
            munmap(a + len, (size_t)(m + map - (a + len)));
        *raw = a;
        return a;
    }
}

static void frame_free(khl_pool_t *p, void *raw, size_t raw_size)
{
    if (p->backing.fn)
        p->backing.fn(p->backing.ud, raw, raw_size, 0);
    else
        munmap(raw, raw_size);
}

static void *meta_alloc(const khl_allocator_t *a, size_t n)
{
    return a->fn(a->ud, NULL, 0, n);
}

static void meta_free(const khl_allocator_t *a, void *ptr, size_t n)
{
    if (ptr)
        a->fn(a->ud, ptr, n, 0);
}

/* ------------------------------------------------------------------------ */
/* The chunk index: which aligned frames are ours.  Only owns, checked mode   */
/* and frame setup use it; free finds its chunk by masking alone.           */

static inline size_t index_slot(uintptr_t key, size_t cap)
{
    return (size_t)(((uint64_t)key * 0x9e3779b97f4a7c15ULL) >> 20) & (cap - 1);
}

static int index_has(const khl_pool_t *p, uintptr_t key)
{
    size_t i;
    if (!p->index)
        return 0;
    for (i = index_slot(key, p->index_cap); p->index[i]; i = (i + 1) & (p->index_cap - 1))
        if (p->index[i] == key)
            return 1;
    return 0;
}

static void index_put(uintptr_t *t, size_t cap, uintptr_t key)
{
    size_t i = index_slot(key, cap);
    while (t[i])
        i = (i + 1) & (cap - 1);
    t[i] = key;
}

/* Room for n more keys, so that inserting them once their frames are set
 * up cannot fail.  Kept at most half full. */
static int index_make_room(khl_pool_t *p, size_t n)
{
    size_t cap = p->index_cap ? p->index_cap * 2 : 16, i;
    uintptr_t *t;
    if (n > SIZE_MAX / (4 * sizeof *t) - p->index_n)
        return -1;
    if (2 * (p->index_n + n) <= p->index_cap)
        return 0;
    while (cap < 2 * (p->index_n + n))
        cap *= 2;
    t = (uintptr_t *)meta_alloc(p->meta, cap * sizeof *t);
    if (!t)
        return -1;
    memset(t, 0, cap * sizeof *t);
    for (i = 0; i < p->index_cap; i++)
        if (p->index[i])
            index_put(t, cap, p->index[i]);
    meta_free(p->meta, p->index, p->index_cap * sizeof *t);
    p->meta_bytes += (cap - p->index_cap) * sizeof *t;
    p->index = t;
    p->index_cap = cap;
    return 0;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void index_del(khl_pool_t *p, uintptr_t key)
{
    size_t mask = p->index_cap - 1, i = index_slot(key, p->index_cap), j;
    while (p->index[i] != key)
        i = (i + 1) & mask;
    for (j = (i + 1) & mask; p->index[j]; j = (j + 1) & mask) {
        size_t home = index_slot(p->index[j], p->index_cap);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            p->index[i] = p->index[j];
            i = j;
        }
    }
    p->index[i] = 0;
    p->index_n--;
}

/* A frame of the given kind with its header filled in, not yet indexed nor
 * counted: until frame_adopt, frame_free drops it without a trace, so a call
 * that fails later leaves the pool as it was. */
static chunk_t *frame_take(khl_pool_t *p, size_t bytes, uint32_t kind)
{
    void *raw;
    size_t raw_size;
    chunk_t *k = (chunk_t *)(void *)frame_alloc(p, bytes, &raw, &raw_size);
    if (!k)
        return NULL;
    k->kind = kind;
    k->raw = raw;
    k->raw_size = raw_size;
    k->prev = k->next = k->fresh_next = NULL;
    return k;
}

/* Makes a taken frame the pool's; the index must have room (index_make_room). */
static void frame_adopt(khl_pool_t *p, chunk_t *k)
{
    index_put(p->index, p->index_cap, (uintptr_t)k);
    p->index_n++;
    p->system += k->raw_size;
}

/* A frame of the given kind, indexed and counted.  The frame comes before
 * the index's room: a grown index is no use to a call that fails. */
static chunk_t *frame_new(khl_pool_t *p, size_t bytes, uint32_t kind)
{
    chunk_t *k;
    if (!within_limit(p, frame_cost(p, bytes)) || !(k = frame_take(p, bytes, kind)))
        return NULL;
    if (index_make_room(p, 1) < 0) {
        frame_free(p, k->raw, k->raw_size);
        return NULL;
    }
    frame_adopt(p, k);
    return k;
}

static void frame_release(khl_pool_t *p, chunk_t *k)
{
    index_del(p, (uintptr_t)k);
    p->system -= k->raw_size;
    frame_free(p, k->raw, k->raw_size);
}

static inline chunk_t *chunk_of(const khl_pool_t *p, const void *ptr)
{
    return (chunk_t *)((uintptr_t)ptr & ~p->mask);
}

static void list_push(chunk_t **head, chunk_t *k)
{
    k->prev = NULL;
    k->next = *head;
    if (*head)
        (*head)->prev = k;
    *head = k;
}

static void list_unlink(chunk_t **head, chunk_t *k)
{
    if (k->prev)
        k->prev->next = k->next;
    else
        *head = k->next;
    if (k->next)
        k->next->prev = k->prev;
}

/* ------------------------------------------------------------------------ */
/* Chunks and classes: the single-threaded core                              */

static inline void note_alloc(khl_pool_t *p, size_t bytes)
{
    p->in_use += bytes;
    if (p->in_use > p->peak)
        p->peak = p->in_use;
}

static inline uint32_t chunk_kind(const khl_pool_t *p)
{
    return p->flags ? KIND_SMALL : KIND_FAST;
}

/* Where class c's first slot sits in a chunk (*off), and how many fit. */
static size_t chunk_layout(const khl_pool_t *p, unsigned c, size_t *off)
{
    size_t size = p->cls[c].size, bits = 0;
    if (p->flags & F_CHECKED)
        bits = (p->chunk_bytes - HDR) / size;
    *off = (HDR + (bits + 7) / 8 + GRAIN - 1) & ~(GRAIN - 1);
    /* Slab colouring: without it the first block of every class sits at the
     * same offset from a chunk_bytes boundary, so a table's old and new
     * blocks (neighbouring classes) alias in the L1 cache and in the CPU's
     * 4 KiB store/load disambiguation; a rebuild copying from one to the
     * other then stalls (churn at 16 and 32 keys ran 1.5x slower). */
    *off += (size_t)c * 11u % 64u * 64u;
    return (p->chunk_bytes - *off) / size;
}

/* Makes an adopted frame a chunk of class c. */
static void chunk_init(khl_pool_t *p, chunk_t *k, unsigned c)
{
    size_t off;
    k->cap = chunk_layout(p, c, &off);
    k->cls = c;
    k->size = p->cls[c].size;
    k->slots = k->bump = (char *)k + off;
    k->scratch = 0;
    if (p->flags & F_CHECKED)
        memset(k->live, 0, (k->cap + 7) / 8);
    list_push(&p->cls[c].chunks, k);
    p->nchunks++;
}

static chunk_t *chunk_new(khl_pool_t *p, unsigned c)
{
    chunk_t *k = frame_new(p, p->chunk_bytes, chunk_kind(p));
    if (k)
        chunk_init(p, k, c);
    return k;
}

static void chunk_release(khl_pool_t *p, chunk_t *k)
{
    list_unlink(&p->cls[k->cls].chunks, k);
    p->nchunks--;
    frame_release(p, k);
}

static inline size_t bump_left(const cls_t *c)
{
    return c->bump == c->end ? 0 : (size_t)(c->end - c->bump) / c->size;
}

static size_t cls_nfree(const cls_t *c)
{
    size_t in_cur = c->cur ? (size_t)(c->bump - c->cur->slots) / c->size : 0;
    return c->carved + in_cur - (size_t)(c->allocs - c->frees);
}

static uint64_t entries_allocs(const khl_pool_t *p, unsigned ci);

/* Callers' allocations of class ci so far, which a reserve counts down
 * against (lock held).  A thread-safe pool's c->allocs counts blocks moved
 * to thread caches instead: surplus blocks a cache took and then handed out
 * would never use a reserve up, and trim would keep its chunks for ever. */
static uint64_t cls_user_allocs(const khl_pool_t *p, unsigned ci)
{
    const cls_t *c = &p->cls[ci];
    if (!(p->flags & F_THREADS))
        return c->allocs;
    return c->ts_allocs + entries_allocs(p, ci);
}

/* Blocks of class ci still promised by reserves (lock held).  A reserve
 * used up is forgotten, so later calls skip the count. */
static size_t cls_reserved(khl_pool_t *p, unsigned ci)
{
    cls_t *c = &p->cls[ci];
    uint64_t done;
    if (!c->reserve_until)
        return 0;
    done = cls_user_allocs(p, ci);
    if (done < c->reserve_until)
        return (size_t)(c->reserve_until - done);
    c->reserve_until = 0;
    return 0;
}

static size_t cls_ready(const cls_t *c)
{
    return cls_nfree(c) + bump_left(c) + c->fresh_slots;
}

/* Makes k the chunk the class bumps through. */
static void cls_set_cur(cls_t *c, chunk_t *k)
{
    if (c->cur) {
        c->cur->bump = c->bump;
        c->carved += (size_t)(c->bump - c->cur->slots) / c->size;
    }
    c->cur = k;
    c->bump = k ? k->bump : NULL;
    c->end = k ? k->slots + k->cap * k->size : NULL;
}

/* The bundles (see cls_t). */
static inline void cls_bundles_init(cls_t *c)
{
    c->base = c->top = c->root;
    c->lim = c->root + ROOT_ENTRIES;
}

static inline void cls_push(cls_t *c, void *b)
{
    if (KHL_LIKELY(c->top != c->lim)) {
        *c->top++ = b;
    } else {
        /* The current bundle is full: b becomes the current one. */
        *(void **)b = c->base == c->root ? NULL : (void *)(c->base - 1);
        c->base = c->top = (void **)b + 1;
        c->lim = c->base + c->bundle_cap;
    }
}

/* Called when the current bundle has no entry left: the bundle block itself
 * (the bundle below becomes current), NULL when the current bundle is the
 * root, that is when there is no free block. */
static inline void *cls_pop_bundle(cls_t *c)
{
    void **bundle, **next;
    if (c->base == c->root)
        return NULL;
    bundle = c->base - 1;
    next = (void **)bundle[0];
    if (next) {
        c->base = next + 1;
        c->top = c->lim = c->base + c->bundle_cap;
    } else {
        c->base = c->root;
        c->top = c->lim = c->root + ROOT_ENTRIES;
    }
    return bundle;
}

static inline void *cls_pop_free(cls_t *c)
{
    return c->top != c->base ? *--c->top : cls_pop_bundle(c);
}

/* The class's free blocks as they stand, for a walk that may rebuild them:
 * the current bundle's entries and top, and a copy of the root's entries. */
typedef struct free_blocks {
    void **base, **top;
    void *root[ROOT_ENTRIES];
    size_t nroot;
} free_blocks_t;

static void free_blocks_save(const cls_t *c, free_blocks_t *f)
{
    f->base = c->base;
    f->top = c->top;
    f->nroot = c->base == c->root ? (size_t)(c->top - c->root) : ROOT_ENTRIES;
    memcpy(f->root, c->root, f->nroot * sizeof *f->root);
}

/* Calls fn on every free block saved in f.  fn may push onto c: a block
 * bundle is read before fn sees it, and the root's entries are a copy. */
static void free_blocks_each(khl_pool_t *p, cls_t *c, const free_blocks_t *f,
                             void (*fn)(khl_pool_t *, cls_t *, void *))
{
    void **bundle = f->base == c->root ? NULL : f->base - 1, **top = f->top, **e, **next;
    size_t i;
    while (bundle) {
        next = (void **)bundle[0];
        for (e = bundle + 1; e < top; e++)
            fn(p, c, *e);
        fn(p, c, bundle);
        bundle = next;
        top = next ? next + 1 + c->bundle_cap : NULL;
    }
    for (i = 0; i < f->nroot; i++)
        fn(p, c, f->root[i]);
}

/* Batches that thread caches flushed: a chain of blocks whose first block
 * also links to the next chain (second word: every class has two). */
static inline void *batch_next(void *chain)
{
    return ((void **)chain)[1];
}

static void *take_chain(khl_pool_t *p, unsigned ci, void **own);

static size_t splice_chain(cls_t *c, void *head);

/* Moves one flushed batch among the free blocks; 0 when there is none. */
static int cls_unbatch(khl_pool_t *p, unsigned ci)
{
    void *chain = take_chain(p, ci, NULL);
    if (!chain)
        return 0;
    splice_chain(&p->cls[ci], chain);
    return 1;
}

/* Makes sure the class has never-used slots to bump: a reserved chunk, or
 * (if `sys`) one new chunk from the system.  0 on success. */
static int cls_fill_bump(khl_pool_t *p, unsigned ci, int sys)
{
    cls_t *c = &p->cls[ci];
    chunk_t *k = c->fresh;
    if (c->bump != c->end)
        return 0;
    if (k) {
        c->fresh = k->fresh_next;
        c->fresh_slots -= k->cap;
    } else if (!sys || !(k = chunk_new(p, ci))) {
        return -1;
    }
    cls_set_cur(c, k);
    return 0;
}

/* A block of class ci: a free block, a flushed batch, bump, a reserved chunk,
 * or (if `sys`) one new chunk from the system.  NULL when none has one. */
static void *cls_pop(khl_pool_t *p, unsigned ci, int sys)
{
    cls_t *c = &p->cls[ci];
    void *b = cls_pop_free(c);
    if (b || (cls_unbatch(p, ci) && (b = cls_pop_free(c)) != NULL))
        return b;
    if (cls_fill_bump(p, ci, sys) < 0)
        return NULL;
    b = c->bump;
    c->bump += c->size;
    return b;
}

static void *large_alloc(khl_pool_t *p, size_t n)
{
    chunk_t *k;
    if (n > SIZE_MAX - HDR)
        return NULL;
    k = frame_new(p, HDR + n, KIND_LARGE);
    if (!k)
        return NULL;
    k->cls = 0;
    k->size = n;
    k->slots = (char *)k + HDR;
    k->cap = (size_t)((char *)k->raw + k->raw_size - k->slots);
    list_push(&p->large, k);
    p->nlarge++;
    return k->slots;
}

static void large_free(khl_pool_t *p, chunk_t *k)
{
    list_unlink(&p->large, k);
    p->nlarge--;
    frame_release(p, k);
}

/* Write one byte per page so the first allocations do not fault. */
static void touch(const khl_pool_t *p, char *from, char *to)
{
    volatile char *q;
    for (q = from; q < (volatile char *)to; q += p->page)
        *q = 0;
}

/* Every chunk a reserve needs is taken, and the index made room for them,
 * before any becomes the pool's or has a page touched: a failure anywhere
 * drops them and leaves the pool as it was. */
static int core_reserve(khl_pool_t *p, unsigned ci, size_t count)
{
    cls_t *c = &p->cls[ci];
    chunk_t *added = NULL, *k;
    size_t off, cap = chunk_layout(p, ci, &off), cost = frame_cost(p, p->chunk_bytes);
    size_t need, ready = cls_ready(c), in_bump, nfree = cls_nfree(c), held = cls_reserved(p, ci);
    size_t nk, i;
    if (count > SIZE_MAX - held || held + count > SIZE_MAX / c->size)
        return -1;
    need = held + count;
    nk = need > ready ? (need - ready + cap - 1) / cap : 0;
    /* The new chunks' pages are all touched: more than limit_bytes, or than
     * the machine has, would not fail but wake the kernel's OOM killer. */
    if (nk && (nk > SIZE_MAX / cost || !within_limit(p, nk * cost) || nk * cost > p->phys))
        return -1;
    for (i = 0; i < nk && (k = frame_take(p, p->chunk_bytes, chunk_kind(p))) != NULL; i++) {
        k->fresh_next = added;
        added = k;
    }
    if (i < nk || index_make_room(p, nk) < 0) {
        for (; added; added = k) {
            k = added->fresh_next;
            frame_free(p, added->raw, added->raw_size);
        }
        return -1;
    }
    for (; added; added = k) {
        k = added->fresh_next;
        frame_adopt(p, added);
        chunk_init(p, added, ci);
        touch(p, added->slots, added->slots + added->cap * added->size);
        added->fresh_next = c->fresh;
        c->fresh = added;
        c->fresh_slots += added->cap;
    }
    /* Free blocks were used, so their pages are in; the rest of the
     * reserve comes first from the current chunk's never-used slots. */
    in_bump = need > nfree ? need - nfree : 0;
    if (in_bump > bump_left(c))
        in_bump = bump_left(c);
    if (in_bump)
        touch(p, c->bump, c->bump + in_bump * c->size);
    c->reserve_until = cls_user_allocs(p, ci) + need;
    return 0;
}

/* A chunk is wholly free when its free blocks and never-used slots
 * make up all its slots. */
static size_t never_used(const cls_t *c, const chunk_t *k)
{
    const char *bump = k == c->cur ? c->bump : k->bump;
    return k->cap - (size_t)(bump - k->slots) / k->size;
}

static void count_free(khl_pool_t *p, cls_t *c, void *b)
{
    (void)c;
    chunk_of(p, b)->scratch++;
}

static void keep_unless_doomed(khl_pool_t *p, cls_t *c, void *b)
{
    if (chunk_of(p, b)->scratch != SIZE_MAX)
        cls_push(c, b);
}

static void core_trim_class(khl_pool_t *p, unsigned ci)
{
    cls_t *c = &p->cls[ci];
    chunk_t *k, *next, **fp;
    free_blocks_t fb;
    size_t ready = cls_ready(c), held = cls_reserved(p, ci), doomed = 0;
    while (cls_unbatch(p, ci))
        ;
    for (k = c->chunks; k; k = k->next)
        k->scratch = 0;
    free_blocks_save(c, &fb);
    free_blocks_each(p, c, &fb, count_free);
    for (k = c->chunks; k; k = k->next) {
        if (k->scratch + never_used(c, k) != k->cap || ready - k->cap < held)
            continue;
        ready -= k->cap;
        if (k != c->cur)
            c->carved -= k->cap - never_used(c, k);
        k->scratch = SIZE_MAX;   /* doomed */
        doomed++;
    }
    if (!doomed)
        return;
    for (fp = &c->fresh; *fp;) {
        if ((*fp)->scratch == SIZE_MAX) {
            c->fresh_slots -= (*fp)->cap;
            *fp = (*fp)->fresh_next;
        } else {
            fp = &(*fp)->fresh_next;
        }
    }
    /* Rebuilt from the blocks of the chunks that stay. */
    cls_bundles_init(c);
    free_blocks_each(p, c, &fb, keep_unless_doomed);
    if (c->cur && c->cur->scratch == SIZE_MAX) {
        c->cur = NULL;
        c->bump = c->end = NULL;
    }
    for (k = c->chunks; k; k = next) {
        next = k->next;
        if (k->scratch == SIZE_MAX)
            chunk_release(p, k);
    }
}

/* ------------------------------------------------------------------------ */
/* Checked mode                                                              */

static void die(const char *who, const void *ptr, const char *check)
{
    fprintf(stderr, "khl_pool: %s(%p): %s\n", who, ptr, check);
    fflush(stderr);
    abort();
}

static size_t slot_index(const chunk_t *k, const void *ptr)
{
    return (size_t)((const char *)ptr - k->slots) / k->size;
}

static int live_bit(const chunk_t *k, size_t i)
{
    return (k->live[i / 8] >> (i % 8)) & 1;
}

static void set_live(chunk_t *k, const void *ptr, int on)
{
    size_t i = slot_index(k, ptr);
    unsigned char bit = (unsigned char)(1u << (i % 8));
    k->live[i / 8] = (unsigned char)(on ? k->live[i / 8] | bit : k->live[i / 8] & ~bit);
}

/* The frame holding ptr if ptr is a block start inside it, else NULL. */
static chunk_t *find_block(const khl_pool_t *p, const void *ptr, const char **why)
{
    chunk_t *k = chunk_of(p, ptr);
    const cls_t *c;
    const char *bump;
    if ((uintptr_t)ptr % GRAIN) {
        *why = "misaligned pointer: no block of this pool starts there";
        return NULL;
    }
    if (!index_has(p, (uintptr_t)k)) {
        *why = "foreign pointer: not in any chunk or live large block of this pool"
               " (or a large block already freed)";
        return NULL;
    }
    if (k->kind == KIND_LARGE) {
        *why = "interior pointer: inside a large block, not its start";
        return (const char *)ptr == k->slots ? k : NULL;
    }
    c = &p->cls[k->cls];
    bump = k == c->cur ? c->bump : k->bump;
    *why = "interior pointer: inside a chunk, not the start of a handed-out block";
    if ((const char *)ptr < k->slots || (const char *)ptr >= bump ||
        (size_t)((const char *)ptr - k->slots) % k->size)
        return NULL;
    return k;
}

/* Aborts unless ptr is a live block and n (0: unknown) fits its class. */
static chunk_t *check_live(const khl_pool_t *p, const void *ptr, size_t n, const char *who)
{
    const char *why;
    chunk_t *k = find_block(p, ptr, &why);
    if (!k)
        die(who, ptr, why);
    if (k->kind != KIND_LARGE) {
        if (!live_bit(k, slot_index(k, ptr)))
            die(who, ptr, "double free or use of a freed block: the block is not live");
        if (n && (n > p->max_small || class_of(n) != k->cls))
            die(who, ptr, "wrong size: the size given is not of the block's size class");
    } else if (n && n != k->size) {
        die(who, ptr, "wrong size: the size given is not the large block's size");
    }
    return k;
}

/* ------------------------------------------------------------------------ */
/* Locked paths: every call of a checked pool, large blocks, and anything a  */
/* thread cache cannot serve.  The lock is taken only by thread-safe pools.  */

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

static void sample_peak(khl_pool_t *p);

/* Allocation with the lock held. */
static void *core_alloc(khl_pool_t *p, size_t n)
{
    void *b;
    if (n <= p->max_small) {
        unsigned ci = class_of(n);
        cls_t *c = &p->cls[ci];
        b = cls_pop(p, ci, 1);
        if (!b)
            return NULL;
        c->allocs++;
        c->ts_allocs++;
        p->x_allocs++;
        if (p->flags & F_CHECKED)
            set_live(chunk_of(p, b), b, 1);
        note_alloc(p, c->size);
    } else {
        b = large_alloc(p, n);
        if (!b)
            return NULL;
        p->large_allocs++;
        note_alloc(p, n);
    }
    if (p->flags & F_THREADS)
        sample_peak(p);
    return b;
}

/* Free with the lock held; n == 0: size unknown. */
static void core_free(khl_pool_t *p, void *ptr, size_t n, const char *who)
{
    chunk_t *k = (p->flags & F_CHECKED) ? check_live(p, ptr, n, who) : chunk_of(p, ptr);
    if (n ? n > p->max_small : k->kind == KIND_LARGE) {
        p->large_frees++;
        p->in_use -= k->size;
        large_free(p, k);
        return;
    }
    if (p->flags & F_CHECKED)
        set_live(k, ptr, 0);
    {
        cls_t *c = &p->cls[n ? class_of(n) : k->cls];
        cls_push(c, ptr);
        c->frees++;
        p->x_frees++;
        p->in_use -= c->size;
    }
}

static NOINLINE void *locked_alloc(khl_pool_t *p, size_t n)
{
    void *b;
    if (n == 0)
        return NULL;
    lock(p);
    b = core_alloc(p, n);
    unlock(p);
    return b;
}

static NOINLINE void locked_free(khl_pool_t *p, void *ptr, size_t n, const char *who)
{
    lock(p);
    core_free(p, ptr, n, who);
    unlock(p);
}

/* ------------------------------------------------------------------------ */
/* Thread caches (thread_safe = 1)                                           */
/*                                                                           */
/* Each thread owns one record per pool it uses: per class, a list of free   */
/* blocks it may hand out without the lock.  Records belong to the thread,   */
/* never to the pool, so a pool can die while threads live: destroy marks    */
/* their records dead (under g_lock) and the owners free them on their next  */
/* miss or at exit.  Thread exit flushes live records back to their pools.  */
/* Lock order: g_lock, then a pool's lock.                                   */

/* Per thread and class: blocks to hand out, blocks freed here (flushed to
 * the pool as one batch once there are `batch` of them), and a run of
 * never-used slots.  None of it needs a write per block to move.  Flushed
 * batches stay on the thread's stash, which belongs to the pool (any
 * thread may take from it under the lock), but the thread that flushed
 * them takes them back first: blocks stay warm in that core's cache instead
 * of wandering between threads. */
typedef struct tcls {
    _Alignas(64) void *alloc;     /* one cache line per class */
    void *freed;
    void *stash;                  /* batches this thread flushed, under the pool's lock */
    size_t nfreed, limit;         /* limit: the class's batch, copied here */
    char *bump, *end;
    /* Blocks this thread allocated and freed, written by the owner only,
     * read by khl_pool_stats: relaxed loads and stores, no atomic RMW. */
    _Atomic uint64_t allocs, frees;
} tcls_t;

struct tentry {
    khl_pool_t *pool;
    uint64_t gen;
    tentry_t *tl_next;            /* the owning thread's records */
    tentry_t *prev, *next;        /* the pool's records, under its lock */
    int dead;                     /* under g_lock */
    tcls_t c[];
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static int g_key_ok;
static uint64_t g_gen;

static _Thread_local tentry_t *tl_last TLS_MODEL;
static _Thread_local tentry_t *tl_list TLS_MODEL;

static inline void bump_counter(_Atomic uint64_t *x)
{
    atomic_store_explicit(x, atomic_load_explicit(x, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* What a thread record's counters add to the pool's (lock held). */
static void entry_counts(const khl_pool_t *p, const tentry_t *e, size_t *in_use,
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
static uint64_t entries_allocs(const khl_pool_t *p, unsigned ci)
{
    uint64_t n = 0;
    const tentry_t *e;
    for (e = p->threads; e; e = e->next)
        n += atomic_load_explicit(&e->c[ci].allocs, memory_order_relaxed);
    return n;
}

/* Exact in a quiet pool; sampled (lock held) at refills. */
static void sample_peak(khl_pool_t *p)
{
    size_t s = p->in_use;
    uint64_t a = 0, f = 0;
    const tentry_t *e;
    for (e = p->threads; e; e = e->next)
        entry_counts(p, e, &s, &a, &f);
    if (s > p->peak)
        p->peak = s;
}

/* A flushed batch of class ci (lock held): from the caller's own stash
 * first, then batches of exited threads, then any thread's stash. */
static void *take_chain(khl_pool_t *p, unsigned ci, void **own)
{
    cls_t *c = &p->cls[ci];
    void **from = own && *own ? own : c->batches ? &c->batches : NULL, *chain;
    tentry_t *e;
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
static size_t splice_chain(cls_t *c, void *head)
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
static void entry_return_blocks(khl_pool_t *p, tentry_t *e)
{
    unsigned i;
    for (i = 0; i < p->ncls; i++) {
        tcls_t *t = &e->c[i];
        cls_t *c = &p->cls[i];
        c->frees += splice_chain(c, t->alloc) + splice_chain(c, t->freed);
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

/* Gives the record's blocks and counts back and unlinks it (lock held). */
static void entry_drain(khl_pool_t *p, tentry_t *e)
{
    unsigned i;
    entry_return_blocks(p, e);
    entry_counts(p, e, &p->in_use, &p->x_allocs, &p->x_frees);
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
    tentry_t *e = (tentry_t *)head, *next;
    pthread_mutex_lock(&g_lock);
    for (; e; e = next) {
        next = e->tl_next;
        if (!e->dead) {
            pthread_mutex_lock(&e->pool->lock);
            entry_drain(e->pool, e);
            pthread_mutex_unlock(&e->pool->lock);
        }
        free(e);
    }
    tl_list = tl_last = NULL;
    pthread_mutex_unlock(&g_lock);
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
    g_key_ok = pthread_key_create(&g_key, thread_exit) == 0;
}

/* Frees this thread's records of destroyed pools (g_lock held). */
static void purge_dead(void)
{
    tentry_t **ep = &tl_list;
    while (*ep) {
        tentry_t *e = *ep;
        if (e->dead) {
            *ep = e->tl_next;
            free(e);
        } else {
            ep = &e->tl_next;
        }
    }
    tl_last = NULL;
    if (g_key_ok)
        pthread_setspecific(g_key, tl_list);
}

/* This thread's record for p, created on first use; NULL when it cannot be
 * made (the caller then takes the locked path). */
static NOINLINE tentry_t *entry_slow(khl_pool_t *p)
{
    tentry_t *e;
    pthread_once(&g_once, key_init);
    if (!g_key_ok)
        return NULL;
    pthread_mutex_lock(&g_lock);
    purge_dead();
    for (e = tl_list; e; e = e->tl_next)
        if (e->pool == p && e->gen == p->gen)
            break;
    if (!e) {
        /* Cache-line aligned: threads' records must not share lines. */
        size_t bytes = (sizeof *e + p->ncls * sizeof(tcls_t) + 63) & ~(size_t)63;
        e = (tentry_t *)aligned_alloc(64, bytes);
        if (e) {
            unsigned i;
            memset(e, 0, bytes);
            for (i = 0; i < p->ncls; i++)
                e->c[i].limit = p->cls[i].batch;
            e->pool = p;
            e->gen = p->gen;
            e->tl_next = tl_list;
            if (pthread_setspecific(g_key, e) != 0) {
                free(e);
                e = NULL;
            } else {
                tl_list = e;
                pthread_mutex_lock(&p->lock);
                e->next = p->threads;
                if (p->threads)
                    p->threads->prev = e;
                p->threads = e;
                pthread_mutex_unlock(&p->lock);
            }
        }
    }
    tl_last = e;
    pthread_mutex_unlock(&g_lock);
    return e;
}

static inline tentry_t *my_entry(khl_pool_t *p)
{
    tentry_t *e = tl_last;
    if (KHL_LIKELY(e && e->pool == p && e->gen == p->gen))
        return e;
    return entry_slow(p);
}

/* Reserve held: blocks promised by khl_pool_reserve stay in the pool, where
 * any thread can get them.  Take only the surplus, or the single block the
 * caller is about to allocate.  Either counts against the reserve when
 * handed out (cls_user_allocs), not here. */
static void *refill_reserved(khl_pool_t *p, tcls_t *t, unsigned ci, size_t held)
{
    cls_t *c = &p->cls[ci];
    size_t ready = cls_ready(c), want = ready > held ? ready - held : 1, i;
    void *b = cls_pop(p, ci, 1);
    if (want > c->batch)
        want = c->batch;
    for (i = 1; b && i < want; i++) {
        void *x = cls_pop(p, ci, 0);
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
static NOINLINE void *ts_refill(khl_pool_t *p, tcls_t *t, unsigned ci)
{
    cls_t *c = &p->cls[ci];
    size_t held, n = 0;
    void *b = NULL;
    pthread_mutex_lock(&p->lock);
    held = cls_reserved(p, ci);
    if (held) {
        b = refill_reserved(p, t, ci, held);
    } else if ((b = take_chain(p, ci, &t->stash)) != NULL) {
        t->alloc = *(void **)b;
        n = c->batch;
    } else if ((b = cls_pop_free(c)) != NULL) {
        void *x;
        for (n = 1; n < c->batch && (x = cls_pop_free(c)) != NULL; n++) {
            *(void **)x = t->alloc;
            t->alloc = x;
        }
    } else if (cls_fill_bump(p, ci, 1) == 0) {
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
            sample_peak(p);
    }
    pthread_mutex_unlock(&p->lock);
    return b;
}

static NOINLINE void ts_flush(khl_pool_t *p, tcls_t *t, unsigned ci)
{
    cls_t *c = &p->cls[ci];
    pthread_mutex_lock(&p->lock);
    ((void **)t->freed)[1] = t->stash;
    t->stash = t->freed;
    c->frees += t->nfreed;
    pthread_mutex_unlock(&p->lock);
    t->freed = NULL;
    t->nfreed = 0;
}

/* Thread-safe allocation past the fast path: no record for this pool yet,
 * or an empty list - then the blocks freed here, the run of never-used
 * slots, or a refill from the pool. */
static NOINLINE void *ts_alloc_slow(khl_pool_t *p, size_t n)
{
    tentry_t *e = my_entry(p);
    unsigned ci;
    tcls_t *t;
    void *b;
    if (KHL_UNLIKELY(!e))
        return locked_alloc(p, n);
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

static NOINLINE void ts_free_slow(khl_pool_t *p, void *ptr, unsigned ci)
{
    tentry_t *e = my_entry(p);
    tcls_t *t;
    if (KHL_UNLIKELY(!e)) {
        locked_free(p, ptr, p->cls[ci].size, "khl_pool_free");
        return;
    }
    t = &e->c[ci];
    *(void **)ptr = t->freed;
    t->freed = ptr;
    bump_counter(&t->frees);
    if (++t->nfreed >= t->limit)
        ts_flush(p, t, ci);
}

/* The thread-safe fast paths touch only this thread's record: no lock, no
 * atomic read-modify-write, nothing another thread writes. */
static inline void *ts_alloc(khl_pool_t *p, size_t n)
{
    tentry_t *e = tl_last;
    if (KHL_LIKELY(e && e->pool == p && e->gen == p->gen)) {
        tcls_t *t = &e->c[class_of(n)];
        void *b = t->alloc;
        if (KHL_LIKELY(b != NULL)) {
            t->alloc = *(void **)b;
            bump_counter(&t->allocs);
            return b;
        }
    }
    return ts_alloc_slow(p, n);
}

static inline void ts_free(khl_pool_t *p, void *ptr, unsigned ci)
{
    tentry_t *e = tl_last;
    if (KHL_LIKELY(e && e->pool == p && e->gen == p->gen)) {
        tcls_t *t = &e->c[ci];
        *(void **)ptr = t->freed;
        t->freed = ptr;
        bump_counter(&t->frees);
        if (KHL_UNLIKELY(++t->nfreed >= t->limit))
            ts_flush(p, t, ci);
        return;
    }
    ts_free_slow(p, ptr, ci);
}

/* ------------------------------------------------------------------------ */
/* Pool lifetime                                                             */

static size_t round_pow2(size_t x)
{
    size_t r = 1;
    while (r < x)
        r <<= 1;
    return r;
}

khl_pool_t *khl_pool_new(const khl_pool_options_t *opt)
{
    khl_pool_options_t o;
    const khl_allocator_t *meta;
    size_t max_small, chunk, bytes;
    unsigned ncls, i;
    long page = sysconf(_SC_PAGESIZE), phys = sysconf(_SC_PHYS_PAGES);
    khl_pool_t *p;
    void *raw;
    if (opt)
        o = *opt;
    else
        memset(&o, 0, sizeof o);
    max_small = o.max_small ? o.max_small : KHL_POOL_DEFAULT_MAX_SMALL;
    if (max_small > MAX_SMALL_CAP)
        max_small = MAX_SMALL_CAP;
    max_small = (max_small + GRAIN - 1) & ~(GRAIN - 1);
    chunk = o.chunk_bytes ? o.chunk_bytes : KHL_POOL_DEFAULT_CHUNK_BYTES;
    if (chunk < SLOTS_PER_CHUNK * max_small)
        chunk = SLOTS_PER_CHUNK * max_small;
    if (chunk > MAX_CHUNK)
        chunk = MAX_CHUNK;
    chunk = round_pow2(chunk < MIN_CHUNK ? MIN_CHUNK : chunk);
    ncls = class_of(max_small) + 1;
    meta = o.backing ? o.backing : &khl_libc_allocator;
    /* meta only promises malloc alignment; the pool wants cache lines */
    bytes = sizeof *p + ncls * sizeof(cls_t) + 64;
    raw = meta_alloc(meta, bytes);
    if (!raw)
        return NULL;
    p = (khl_pool_t *)align_up((uintptr_t)raw, 64);
    memset(p, 0, sizeof *p + ncls * sizeof(cls_t));
    p->self_raw = raw;
    p->self_bytes = bytes;
    p->flags = (o.thread_safe ? F_THREADS : 0u) | (o.checked ? F_CHECKED : 0u);
    p->max_small = max_small;
    p->fast_max = p->flags ? 0 : max_small;
    p->ts_max = p->flags == F_THREADS ? max_small : 0;
    p->chunk_bytes = chunk;
    p->mask = (uintptr_t)chunk - 1;
    p->page = page > 0 ? (size_t)page : 4096;
    p->limit = o.limit_bytes;
    p->phys = phys > 0 && (unsigned long)phys <= SIZE_MAX / p->page ? (size_t)phys * p->page : SIZE_MAX;
    if (o.backing)
        p->backing = *o.backing;
    p->meta = meta;
    p->meta_bytes = bytes;
    p->ncls = ncls;
    for (i = 0; i < ncls; i++) {
        size_t s = class_size(i);
        cls_t *c = &p->cls[i];
        c->size = s < max_small ? s : max_small;
        /* A batch is 32 KiB or 128 blocks, whichever is fewer (at least 2):
         * one lock per batch keeps the lock cold, and a thread caches less
         * than three batches per class. */
        c->batch = c->size >= 16384 ? 2 : 32768 / c->size;
        if (c->batch > 128)
            c->batch = 128;
        c->bundle_cap = c->size / sizeof(void *) - 1;
        cls_bundles_init(c);
    }
    if (p->flags & F_THREADS) {
        if (lock_init(&p->lock) != 0) {
            meta_free(meta, raw, bytes);
            return NULL;
        }
        pthread_mutex_lock(&g_lock);
        p->gen = ++g_gen;
        pthread_mutex_unlock(&g_lock);
    }
    return p;
}

void khl_pool_destroy(khl_pool_t *p)
{
    unsigned i;
    chunk_t *k, *next;
    if (!p)
        return;
    if (p->flags & F_THREADS) {
        tentry_t *e;
        pthread_mutex_lock(&g_lock);
        for (e = p->threads; e; e = e->next)
            e->dead = 1;
        purge_dead();
        pthread_mutex_unlock(&g_lock);
        pthread_mutex_destroy(&p->lock);
    }
    for (i = 0; i < p->ncls; i++)
        for (k = p->cls[i].chunks; k; k = next) {
            next = k->next;
            frame_free(p, k->raw, k->raw_size);
        }
    for (k = p->large; k; k = next) {
        next = k->next;
        frame_free(p, k->raw, k->raw_size);
    }
    meta_free(p->meta, p->index, p->index_cap * sizeof *p->index);
    meta_free(p->meta, p->self_raw, p->self_bytes);
}

/* ------------------------------------------------------------------------ */
/* Allocation and free: the single-threaded and the thread-cache fast paths */
/* inline; every other call is a tail call out of line, so that the fast    */
/* paths need no stack frame.                                               */

static NOINLINE void free_other(khl_pool_t *p, void *ptr, size_t n)
{
    if (n == 0 && (p->flags & F_CHECKED))
        die("khl_pool_free", ptr, "wrong size: 0 is no block's size");
    locked_free(p, ptr, n, "khl_pool_free");
}

void *khl_pool_alloc(khl_pool_t *p, size_t n)
{
    if (KHL_LIKELY(n - 1 < p->fast_max)) {
        cls_t *c = &p->cls[class_of(n)];
        void **top = c->top, **base = c->base, *b;
        if (KHL_LIKELY(top != base)) {
            b = *--top;
            c->top = top;
            /* The caller's first write to the next block will not miss. */
            if (KHL_LIKELY(top != base))
                PREFETCH_W(top[-1]);
        } else if (base != c->root) {
            b = cls_pop_bundle(c);
        } else if (KHL_LIKELY(c->bump != c->end)) {
            b = c->bump;
            c->bump += c->size;
        } else {
            return locked_alloc(p, n);
        }
        c->allocs++;
        note_alloc(p, c->size);
        return b;
    }
    if (n - 1 < p->ts_max)
        return ts_alloc(p, n);
    return locked_alloc(p, n);
}

void *khl_pool_calloc(khl_pool_t *p, size_t count, size_t n)
{
    void *b;
    if (n && count > SIZE_MAX / n)
        return NULL;
    b = khl_pool_alloc(p, count * n);
    if (b)
        memset(b, 0, count * n);
    return b;
}

/* A small block back to class c, on a pool whose calls take the fast path. */
static inline void fast_free(khl_pool_t *p, cls_t *c, void *ptr)
{
    cls_push(c, ptr);
    c->frees++;
    p->in_use -= c->size;
}

void khl_pool_free(khl_pool_t *p, void *ptr, size_t n)
{
    if (!ptr)
        return;
    if (KHL_LIKELY(n - 1 < p->fast_max)) {
        fast_free(p, &p->cls[class_of(n)], ptr);
        return;
    }
    if (n - 1 < p->ts_max)
        ts_free(p, ptr, class_of(n));
    else
        free_other(p, ptr, n);
}

void khl_pool_free_unsized(khl_pool_t *p, void *ptr)
{
    chunk_t *k;
    if (!ptr)
        return;
    /* A checked pool must not read the header before it knows the frame is
     * its own, so only unchecked pools look at it here. */
    if (KHL_LIKELY(p->fast_max != 0)) {
        k = chunk_of(p, ptr);
        if (KHL_LIKELY(k->kind == KIND_FAST)) {
            fast_free(p, &p->cls[k->cls], ptr);
            return;
        }
    } else if (p->ts_max && (k = chunk_of(p, ptr))->kind == KIND_SMALL) {
        ts_free(p, ptr, k->cls);
        return;
    }
    locked_free(p, ptr, 0, "khl_pool_free_unsized");
}

/* A large block resized within its frame: counts neither alloc nor free. */
static int large_in_place(khl_pool_t *p, chunk_t *k, size_t nsize)
{
    if (nsize <= p->max_small || nsize > k->cap || nsize < k->size / 2)
        return 0;
    lock(p);
    p->in_use = p->in_use - k->size + nsize;
    if (p->in_use > p->peak)
        p->peak = p->in_use;
    k->size = nsize;
    unlock(p);
    return 1;
}

/* osize 0: unknown (from realloc_unsized). */
static void *realloc_common(khl_pool_t *p, void *ptr, size_t osize, size_t nsize, const char *who)
{
    chunk_t *k;
    void *q;
    size_t have;
    if (!ptr)
        return khl_pool_alloc(p, nsize);
    if (nsize == 0) {
        if (osize)
            khl_pool_free(p, ptr, osize);
        else
            khl_pool_free_unsized(p, ptr);
        return NULL;
    }
    if (p->flags & F_CHECKED) {
        lock(p);
        k = check_live(p, ptr, osize, who);
        unlock(p);
    } else {
        k = chunk_of(p, ptr);
    }
    if (k->kind != KIND_LARGE) {
        have = k->size;
        if (nsize <= p->max_small && class_of(nsize) == k->cls)
            return ptr;
    } else {
        have = k->size;
        if (large_in_place(p, k, nsize))
            return ptr;
    }
    q = khl_pool_alloc(p, nsize);
    if (!q)
        return NULL;
    if (osize && osize < have)
        have = osize;
    memcpy(q, ptr, have < nsize ? have : nsize);
    if (osize)
        khl_pool_free(p, ptr, osize);
    else
        khl_pool_free_unsized(p, ptr);
    return q;
}

void *khl_pool_realloc(khl_pool_t *p, void *ptr, size_t osize, size_t nsize)
{
    return realloc_common(p, ptr, osize, nsize, "khl_pool_realloc");
}

void *khl_pool_realloc_unsized(khl_pool_t *p, void *ptr, size_t nsize)
{
    return realloc_common(p, ptr, 0, nsize, "khl_pool_realloc_unsized");
}

size_t khl_pool_block_size(const khl_pool_t *p, const void *ptr)
{
    const chunk_t *k;
    if (!ptr)
        return 0;
    if (p->flags & F_CHECKED) {
        lock(p);
        k = check_live(p, ptr, 0, "khl_pool_block_size");
        unlock(p);
    } else {
        k = chunk_of(p, ptr);
    }
    return k->size;
}

int khl_pool_owns(const khl_pool_t *p, const void *ptr)
{
    const char *why;
    const chunk_t *k;
    int yes;
    if (!ptr)
        return 0;
    lock(p);
    k = find_block(p, ptr, &why);
    yes = k && (k->kind == KIND_LARGE || !(p->flags & F_CHECKED) ||
                live_bit(k, slot_index(k, ptr)));
    unlock(p);
    return yes;
}

int khl_pool_reserve(khl_pool_t *p, size_t n, size_t count)
{
    int r;
    if (n == 0 || n > p->max_small)
        return -1;
    if (count == 0)
        return 0;
    lock(p);
    r = core_reserve(p, class_of(n), count);
    unlock(p);
    return r;
}

void khl_pool_trim(khl_pool_t *p)
{
    unsigned i;
    tentry_t *mine = p->ts_max ? tl_list : NULL;
    while (mine && !(mine->pool == p && mine->gen == p->gen))
        mine = mine->tl_next;
    lock(p);
    /* The caller's own cache can go too; other threads' caches are theirs. */
    if (mine)
        entry_return_blocks(p, mine);
    for (i = 0; i < p->ncls; i++)
        core_trim_class(p, i);
    unlock(p);
}

void khl_pool_stats(const khl_pool_t *p, khl_pool_stats_t *s)
{
    const tentry_t *e;
    memset(s, 0, sizeof *s);
    lock(p);
    s->in_use_bytes = p->in_use;
    s->allocs = p->large_allocs;
    s->frees = p->large_frees;
    if (p->flags & F_THREADS) {
        s->allocs += p->x_allocs;
        s->frees += p->x_frees;
    } else {
        unsigned i;
        for (i = 0; i < p->ncls; i++) {
            s->allocs += p->cls[i].allocs;
            s->frees += p->cls[i].frees;
        }
    }
    for (e = p->threads; e; e = e->next)
        entry_counts(p, e, &s->in_use_bytes, &s->allocs, &s->frees);
    s->peak_bytes = p->peak > s->in_use_bytes ? p->peak : s->in_use_bytes;
    s->system_bytes = p->system;
    s->meta_bytes = p->meta_bytes;
    s->chunks = p->nchunks;
    s->large_blocks = p->nlarge;
    unlock(p);
}

void *khl_pool_allocf(void *ud, void *ptr, size_t osize, size_t nsize)
{
    khl_pool_t *p = (khl_pool_t *)ud;
    if (nsize == 0) {
        khl_pool_free(p, ptr, osize);
        return NULL;
    }
    if (!ptr)
        return khl_pool_alloc(p, nsize);
    return khl_pool_realloc(p, ptr, osize, nsize);
}

khl_allocator_t khl_pool_allocator(khl_pool_t *p)
{
    khl_allocator_t a;
    a.fn = khl_pool_allocf;
    a.ud = p;
    return a;
}
