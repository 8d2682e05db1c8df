/* khl_pool_class.c: the single-threaded core of the pool, which thread-safe
 * pools run under their lock - chunks and the size classes they serve, the
 * free blocks' bundles and flushed batches, bump allocation, reserve and
 * trim.  It calls only the layers below it (system memory, large blocks):
 * what the thread caches know comes in as arguments.
 * Invariants: khl_pool_internal.h. */
#include "khl_pool_class.h"
#include "khl_pool_large.h"

/* ------------------------------------------------------------------------ */
/* Chunks                                                                    */

static inline uint32_t chunk_kind(const khl_pool_t *p)
{
    return p->flags ? KIND_SMALL_GUARDED : KIND_SMALL_PLAIN;
}

/* Where class c's first slot sits in a chunk (*off), and how many fit. */
size_t khl_i_chunk_layout(const khl_pool_t *p, unsigned c, size_t *off)
{
    size_t size = p->cls[c].size, bits = 0;
    if (p->flags & F_CHECKED)
        bits = (p->chunk_bytes - FRAME_HEADER_BYTES) / size;
    *off = (FRAME_HEADER_BYTES + (bits + 7) / 8 + GRAIN - 1) & ~(GRAIN - 1);
    /* Slab colouring: without it the first block of every class sits at the
     * same offset from a chunk_bytes boundary, so a table's old and new
     * blocks (neighbouring classes) alias in the L1 cache and in the CPU's
     * 4 KiB store/load disambiguation; a rebuild copying from one to the
     * other then stalls (churn at 16 and 32 keys ran 1.5x slower). */
    *off += (size_t)c * 11u % 64u * 64u;
    return (p->chunk_bytes - *off) / size;
}

/* Makes an adopted frame a chunk of class c. */
static void chunk_init(khl_pool_t *p, khl_pool_chunk_t *k, unsigned c)
{
    size_t off;
    k->cap = khl_i_chunk_layout(p, c, &off);
    k->cls = c;
    k->size = p->cls[c].size;
    k->slots = k->bump = (char *)k + off;
    k->trim_free = 0;
    if (p->flags & F_CHECKED)
        memset(k->live, 0, (k->cap + 7) / 8);
    chunk_list_push(&p->cls[c].chunks, k);
    p->nchunks++;
}

/* When the pages of a chunk the pool mapped come in.  A first write's page
 * fault traps into the kernel, 2-19 us a page on the VMs measured (about
 * 10 us on the last), while MADV_POPULATE_WRITE maps pages for 1-1.5 us
 * each: 4 pages in one call took 3.6 us, less than one trapped fault.
 * Pre-faulting a whole 128 KiB chunk in the call that takes it (as the pool
 * did) put 32 pages, 40-50 us, into one call and left the pool's p99.9 and
 * maximum behind glibc's, which faults lazily.  So a pool that faults
 * ahead (where that costs less than a trap: khl_i_faults_ahead_pay, in
 * khl_pool_os.c) faults a chunk's pages a step at a time, ahead of its
 * bump pointer: c->end stops at the last slot
 * whose pages are in, and the call that reaches it faults the next step
 * (cls_fault_ahead).  Steps of 4 pages cost one call in 146 of 100 B 4-8 us
 * on that VM, less than a trap; but on another (a trap 1.9 us, a populated
 * page 2-2.8 us) those steps were the pool's p99.9 (1.9x glibc's, paired)
 * and, holding four pages' share of the machine's rare 50-200 us stalls
 * each, its slowest calls.  One page a step is what glibc's slowest calls
 * fault too, in one system call instead of a trap (p99.9 0.92x glibc's
 * there).  But a page a step made every other 2 KiB block a system call:
 * with sizes of 16 B - 4 KiB the median call took one (2.2 us).  So a step
 * is a page or FAULT_STEP_BLOCKS blocks, whichever is more, up to
 * FAULT_STEP_MAX: a page for blocks up to 1 KiB, 16 KiB for 4 KiB ones
 * (the median call 40 ns again; p99.9 over glibc's, five paired runs each:
 * 1.27x (0.94-1.88) against 1.63x (0.95-1.81) a page a step).  The inline
 * fast path is unchanged: it already leaves at c->end.
 * A thread-safe pool hands a thread a chunk's whole never-used run at once
 * (khl_pool_thread.c says why) but only its faulted pages: the thread
 * faults the next step when it reaches them (khl_i_run_fault_ahead), as
 * the class would.  It used to fault a chunk of 1024 or more blocks whole
 * when it took it, the 40-50 us call above.  Otherwise (lazy_pages, a
 * machine where a trap costs less, a backing allocator) every page faults
 * at its first write. */
#define FAULT_STEP_BLOCKS 4u
#define FAULT_STEP_MAX ((size_t)16 * 1024)

/* The end of k's last slot below `faulted`, where the pages stop. */
static char *slots_below(const khl_pool_chunk_t *k, const char *faulted)
{
    if (faulted >= slots_end(k))
        return slots_end(k);
    return k->slots + (faulted > k->slots ? (size_t)(faulted - k->slots) / k->size * k->size : 0);
}

/* Where the step of a chunk's pages from offset `from` ends, as an offset:
 * a page further or FAULT_STEP_BLOCKS of the class's blocks of `size`,
 * whichever is more, up to FAULT_STEP_MAX; at least to `least`, the end of
 * the next slot; at most the frame's end. */
static size_t fault_step_end(const khl_pool_t *p, size_t from, size_t least, size_t size)
{
    size_t step = size * FAULT_STEP_BLOCKS < p->page ? p->page : size * FAULT_STEP_BLOCKS;
    size_t to = from + (step < FAULT_STEP_MAX ? step : FAULT_STEP_MAX);
    if (to < least)
        to = least;
    to = (size_t)align_up(to, p->page);
    return to < p->chunk_bytes ? to : p->chunk_bytes;
}

/* A new chunk of class c, its pages in up to *faulted. */
static khl_pool_chunk_t *chunk_new(khl_pool_t *p, unsigned c, char **faulted)
{
    size_t first = 0, off;
    khl_pool_chunk_t *k;
    if (p->prefault) {
        khl_i_chunk_layout(p, c, &off);
        first = fault_step_end(p, 0, off + p->cls[c].size, p->cls[c].size);
    }
    k = khl_i_frame_new(p, p->chunk_bytes, chunk_kind(p), first);
    if (k) {
        chunk_init(p, k, c);
        khl_i_large_shed(p);   /* the limit may have counted on kept large memory */
        *faulted = (char *)k + (p->prefault ? first : p->chunk_bytes);
    }
    return k;
}

static void chunk_release(khl_pool_t *p, khl_pool_chunk_t *k, khl_pool_unmap_t *u)
{
    chunk_list_unlink(&p->cls[k->cls].chunks, k);
    p->nchunks--;
    khl_i_frame_release(p, k, u);
}

/* ------------------------------------------------------------------------ */
/* Classes: counts, bump, free blocks                                        */

size_t khl_i_cls_nfree(const khl_pool_class_t *c)
{
    size_t in_cur = c->cur ? (size_t)(c->bump - c->cur->slots) / c->size : 0;
    return c->carved + in_cur - (size_t)(c->allocs - c->frees);
}

/* Blocks of class ci still promised by reserves (lock held), given `done`,
 * the callers' allocations of the class so far (khl_i_user_allocs: the
 * thread caches count them in thread-safe pools, a layer above this one).
 * A reserve used up is forgotten, so later calls skip the count. */
size_t khl_i_cls_reserved(khl_pool_t *p, unsigned ci, uint64_t done)
{
    khl_pool_class_t *c = &p->cls[ci];
    if (!c->reserve_until)
        return 0;
    if (done < c->reserve_until)
        return (size_t)(c->reserve_until - done);
    c->reserve_until = 0;
    return 0;
}

size_t khl_i_cls_ready(const khl_pool_class_t *c)
{
    return khl_i_cls_nfree(c) + bump_left(c) + c->fresh_slots;
}

/* Makes k the chunk the class bumps through, its pages in up to `faulted`. */
static void cls_set_cur(khl_pool_class_t *c, khl_pool_chunk_t *k, const char *faulted)
{
    if (c->cur) {
        c->cur->bump = c->bump;
        c->carved += (size_t)(c->bump - c->cur->slots) / c->size;
    }
    c->cur = k;
    c->bump = k ? k->bump : NULL;
    c->end = k ? slots_below(k, faulted) : NULL;
}

/* The next step of k's pages after `end`, the end of its last faulted
 * slot: where the faulted slots end then, or NULL when the memory cannot be
 * had (as for mmap, the allocation fails and the pool is as it was). */
static char *fault_step(khl_pool_t *p, khl_pool_chunk_t *k, const char *end)
{
    char *base = (char *)k;
    size_t from = (size_t)align_up((uintptr_t)(end - base), p->page);
    size_t to = fault_step_end(p, from, (size_t)(end - base) + k->size, k->size);
    if (khl_i_pages_prefault(p, base + from, base + to) < 0)
        return NULL;
    return slots_below(k, base + to);
}

/* The current chunk's next step, when its bump pointer has reached the
 * last faulted slot.  -1 when the memory cannot be had. */
static int cls_fault_ahead(khl_pool_t *p, khl_pool_class_t *c)
{
    char *end = fault_step(p, c->cur, c->end);
    if (!end)
        return -1;
    c->end = end;
    return 0;
}

/* A thread's run that reached *end, where its pages stop short of its
 * chunk's last slot: the next step (lock held: the pool counts its system
 * calls).  -1, the run as it was, when the memory cannot be had. */
int khl_i_run_fault_ahead(khl_pool_t *p, char **end)
{
    char *to = fault_step(p, chunk_of(p, *end - 1), *end);
    if (!to)
        return -1;
    *end = to;
    return 0;
}

/* A thread's run of never-used slots bump..end (its pages faulted to end,
 * never-used to its chunk's last slot) back to class ci (lock held).  While
 * the chunk is still the one the class bumps through, the run becomes its
 * never-used slots again, nothing written into them: the next thread to
 * refill goes on where this one stopped, and pages past `end` are faulted
 * only when reached.  Pushing it as free blocks (as exits did) writes
 * into its slots (each bundle is one), faulting pages no thread reached.
 * Else the faulted slots become free blocks and the others stay never
 * used in the chunk, which trim frees once its blocks are back. */
void khl_i_run_return(khl_pool_t *p, unsigned ci, char *bump, char *end)
{
    khl_pool_class_t *c = &p->cls[ci];
    khl_pool_chunk_t *k = chunk_of(p, end - 1);
    size_t rest = (size_t)(slots_end(k) - end) / c->size;
    if (k == c->cur) {
        c->frees += (size_t)(slots_end(k) - bump) / c->size;
        c->bump = bump;
        c->end = end;
        return;
    }
    for (; bump != end; bump += c->size) {
        cls_push(c, bump);
        c->frees++;
    }
    k->bump = end;
    c->carved -= rest;
    c->frees += rest;
}

/* The class's free blocks as they stand, for a walk that may rebuild them:
 * the current bundle's entries and top, and a copy of the root's entries. */
typedef struct free_blocks {
    void **base, **top;
    void *root[ROOT_ENTRIES];
    size_t nroot;
} free_blocks_t;

static void free_blocks_save(const khl_pool_class_t *c, free_blocks_t *f)
{
    f->base = c->base;
    f->top = c->top;
    f->nroot = c->base == c->root ? (size_t)(c->top - c->root) : ROOT_ENTRIES;
    memcpy(f->root, c->root, f->nroot * sizeof *f->root);
}

/* Calls fn on every free block saved in f.  fn may push onto c: a block
 * bundle is read before fn sees it, and the root's entries are a copy. */
static void free_blocks_each(khl_pool_t *p, khl_pool_class_t *c, const free_blocks_t *f,
                             void (*fn)(khl_pool_t *, khl_pool_class_t *, void *))
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

/* A batch of class ci in c.batches (lock held), or NULL. */
void *khl_i_take_chain(khl_pool_t *p, unsigned ci)
{
    khl_pool_class_t *c = &p->cls[ci];
    void *chain = c->batches;
    if (chain)
        c->batches = batch_next(chain);
    return chain;
}

/* Gives a chain (linked through first words) back to the class's free
 * blocks; returns its length. */
size_t khl_i_splice_chain(khl_pool_class_t *c, void *head)
{
    size_t n = 0;
    void *b, *next;
    for (b = head; b; b = next, n++) {
        next = *(void **)b;   /* before cls_push may make b a bundle */
        cls_push(c, b);
    }
    return n;
}

/* Puts a list of chains (linked by batch_next) on c.batches, where the
 * class counts their blocks free again (lock held); returns how many. */
size_t khl_i_batches_return(khl_pool_class_t *c, void *chains)
{
    void *next;
    size_t n = 0;
    for (; chains; chains = next, n++) {
        next = batch_next(chains);
        ((void **)chains)[1] = c->batches;
        c->batches = chains;
        c->frees += c->batch;
    }
    return n;
}

/* Moves one flushed batch among the free blocks; 0 when there is none. */
static int cls_unbatch(khl_pool_t *p, unsigned ci)
{
    void *chain = khl_i_take_chain(p, ci);
    if (!chain)
        return 0;
    khl_i_splice_chain(&p->cls[ci], chain);
    return 1;
}

/* Makes sure the class has never-used slots to bump: a reserved chunk, or
 * (if `sys`) one new chunk from the system.  0 on success. */
int khl_i_cls_fill_bump(khl_pool_t *p, unsigned ci, int sys)
{
    khl_pool_class_t *c = &p->cls[ci];
    khl_pool_chunk_t *k = c->fresh;
    char *faulted;
    if (c->bump != c->end)
        return 0;
    if (c->cur && c->end != slots_end(c->cur))
        return cls_fault_ahead(p, c);
    if (k) {
        c->fresh = k->fresh_next;
        c->fresh_slots -= k->cap;
        faulted = slots_end(k);   /* the reserve touched every page */
    } else if (!sys || !(k = chunk_new(p, ci, &faulted))) {
        return -1;
    }
    cls_set_cur(c, k, faulted);
    return 0;
}

/* A block of class ci: a free block, a flushed batch, bump, a reserved chunk,
 * or (if `sys`) one new chunk from the system.  NULL when none has one. */
void *khl_i_cls_pop(khl_pool_t *p, unsigned ci, int sys)
{
    khl_pool_class_t *c = &p->cls[ci];
    void *b = cls_pop_free(c);
    if (b || (cls_unbatch(p, ci) && (b = cls_pop_free(c)) != NULL))
        return b;
    if (khl_i_cls_fill_bump(p, ci, sys) < 0)
        return NULL;
    b = c->bump;
    c->bump += c->size;
    return b;
}

/* ------------------------------------------------------------------------ */
/* Reserve and trim                                                          */

/* Write one byte in every page from..to overlaps (never-used slots only, so
 * no other byte is written), so the first allocations do not fault. */
static void touch(const khl_pool_t *p, char *from, char *to)
{
    volatile char *q;
    for (q = from; q < (volatile char *)to; q += p->page)
        *q = 0;
    if (to > from)
        *(volatile char *)(to - 1) = 0;
}

/* Every chunk a reserve needs is taken, and the index made room for them,
 * before any becomes the pool's or has a page touched: a failure anywhere
 * drops them and leaves the pool as it was. */
int khl_i_core_reserve(khl_pool_t *p, unsigned ci, size_t count, uint64_t done)
{
    khl_pool_class_t *c = &p->cls[ci];
    khl_pool_chunk_t *added = NULL, *k;
    size_t off, cap = khl_i_chunk_layout(p, ci, &off), cost = khl_i_frame_cost(p, p->chunk_bytes);
    size_t need, ready = khl_i_cls_ready(c), in_bump, nfree = khl_i_cls_nfree(c);
    size_t held = khl_i_cls_reserved(p, ci, done), nk, i;
    if (count > SIZE_MAX - held || held + count > SIZE_MAX / c->size)
        return -1;
    need = held + count;
    nk = need > ready ? (need - ready + cap - 1) / cap : 0;
    /* The new chunks' pages are all touched: more than limit_bytes, or than
     * the machine has, would not fail but wake the kernel's OOM killer. */
    if (nk && (nk > SIZE_MAX / cost || !within_limit(p, nk * cost) || nk * cost > p->phys))
        return -1;
    for (i = 0; i < nk && (k = khl_i_frame_take(p, p->chunk_bytes, chunk_kind(p), 0)) != NULL; i++) {
        k->fresh_next = added;
        added = k;
    }
    if (i < nk || khl_i_index_make_room(p, nk) < 0) {
        for (; added; added = k) {
            k = added->fresh_next;
            khl_i_frame_drop(p, added->raw, added->raw_size);
        }
        return -1;
    }
    for (; added; added = k) {
        k = added->fresh_next;
        khl_i_frame_adopt(p, added);
        chunk_init(p, added, ci);
        touch(p, added->slots, added->slots + added->cap * added->size);
        added->fresh_next = c->fresh;
        c->fresh = added;
        c->fresh_slots += added->cap;
    }
    khl_i_large_shed(p);
    /* Free blocks were used, so their pages are in; the rest of the
     * reserve comes first from the current chunk's never-used slots. */
    in_bump = need > nfree ? need - nfree : 0;
    if (in_bump > bump_left(c))
        in_bump = bump_left(c);
    if (in_bump) {
        char *to = c->bump + in_bump * c->size, *faulted;
        touch(p, c->bump, to);
        /* Bumping through them must not stop to fault the next step. */
        faulted = slots_below(c->cur, (char *)align_up((uintptr_t)to, p->page));
        if (faulted > c->end)
            c->end = faulted;
    }
    c->reserve_until = done + need;
    return 0;
}

/* A chunk is wholly free when its free blocks and never-used slots
 * make up all its slots. */
static size_t never_used(const khl_pool_class_t *c, const khl_pool_chunk_t *k)
{
    const char *bump = k == c->cur ? c->bump : k->bump;
    return k->cap - (size_t)(bump - k->slots) / k->size;
}

static void count_free(khl_pool_t *p, khl_pool_class_t *c, void *b)
{
    (void)c;
    chunk_of(p, b)->trim_free++;
}

static void keep_unless_doomed(khl_pool_t *p, khl_pool_class_t *c, void *b)
{
    if (chunk_of(p, b)->trim_free != TRIM_DOOMED)
        cls_push(c, b);
}

/* done: as for khl_i_cls_reserved.  A thread-safe pool's published
 * batches are drained first (khl_i_drain_published), by the caller. */
void khl_i_core_trim_class(khl_pool_t *p, unsigned ci, uint64_t done, khl_pool_unmap_t *u)
{
    khl_pool_class_t *c = &p->cls[ci];
    khl_pool_chunk_t *k, *next, **fp;
    free_blocks_t fb;
    size_t ready, held, doomed = 0;
    ready = khl_i_cls_ready(c);
    held = khl_i_cls_reserved(p, ci, done);
    while (cls_unbatch(p, ci))
        ;
    for (k = c->chunks; k; k = k->next)
        k->trim_free = 0;
    free_blocks_save(c, &fb);
    free_blocks_each(p, c, &fb, count_free);
    for (k = c->chunks; k; k = k->next) {
        if (k->trim_free + never_used(c, k) != k->cap || ready - k->cap < held)
            continue;
        ready -= k->cap;
        if (k != c->cur)
            c->carved -= k->cap - never_used(c, k);
        k->trim_free = TRIM_DOOMED;
        doomed++;
    }
    if (!doomed)
        return;
    for (fp = &c->fresh; *fp;) {
        if ((*fp)->trim_free == TRIM_DOOMED) {
            c->fresh_slots -= (*fp)->cap;
            *fp = (*fp)->fresh_next;
        } else {
            fp = &(*fp)->fresh_next;
        }
    }
    /* Rebuilt from the blocks of the chunks that stay. */
    cls_bundles_init(c);
    free_blocks_each(p, c, &fb, keep_unless_doomed);
    if (c->cur && c->cur->trim_free == TRIM_DOOMED) {
        c->cur = NULL;
        c->bump = c->end = NULL;
    }
    for (k = c->chunks; k; k = next) {
        next = k->next;
        if (k->trim_free == TRIM_DOOMED)
            chunk_release(p, k, u);
    }
}
