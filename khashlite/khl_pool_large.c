/* khl_pool_large.c: blocks above max_small.  Up to large_max they are spans
 * of whole windows (chunk_bytes each) of arenas the pool keeps; above it,
 * "huge" blocks are frames of their own, and a few freed ones are kept for
 * reuse.  Memory goes back to the system on khl_pool_trim, when a second
 * arena falls empty, when a kept mapping is pushed out of the cache, or
 * when limit_bytes needs the room - never once per call.  Every function
 * runs with the pool's lock held (thread-safe pools).
 *
 * Why windows and not pages: a block's header must sit at the chunk_bytes
 * boundary at or below its first byte (chunk_of masks the address), so no
 * two blocks may start in one window.  A span's tail past its last byte is
 * address space only until something writes it, so a 20 KiB block in a
 * fresh 128 KiB window keeps 20 KiB of pages resident, not 128; once larger
 * blocks have used a window its pages stay (bench large_churn: 96 MiB
 * resident for a 57 MiB live set, where glibc holds 78 and mimalloc 99).
 *
 * Why a bitmap per arena: an arena has at most 64 windows, so its free
 * spans are the zero bits of one word - best fit is a scan of a few words,
 * coalescing is clearing bits, and growing in place is testing the bits
 * after the block.  Invariants: khl_pool_internal.h. */
#include "khl_pool_large.h"

/* Windows a span block of n bytes covers, `lead` bytes (header and colour)
 * before it; 0 when it cannot be a span. */
static unsigned span_windows(const khl_pool_t *p, size_t lead, size_t n)
{
    size_t w;
    if (n > p->large_max)
        return 0;
    w = (lead + n + p->chunk_bytes - 1) / p->chunk_bytes;
    return w <= ARENA_MAX_WINDOWS ? (unsigned)w : 0;
}

static uint64_t run_mask(unsigned start, unsigned w)
{
    uint64_t m = w >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << w) - 1;
    return m << start;
}

/* The shortest run of at least w free windows in a (its start in *start);
 * 0 when there is none. */
static unsigned best_run(const arena_t *a, unsigned w, unsigned *start)
{
    unsigned i = 0, best = 0;
    if (a->used == run_mask(0, a->nwin))   /* full: most arenas, once warm */
        return 0;
    while (i < a->nwin) {
        unsigned j = i;
        if (a->used >> i & 1) {
            i++;
            continue;
        }
        while (j < a->nwin && !(a->used >> j & 1))
            j++;
        if (j - i >= w && (!best || j - i < best)) {
            best = j - i;
            *start = i;
        }
        i = j;
    }
    return best;
}

/* ------------------------------------------------------------------------ */
/* Arenas                                                                    */

static void arena_release(khl_pool_t *p, arena_t *a)
{
    if (a->prev)
        a->prev->next = a->next;
    else
        p->arenas = a->next;
    if (a->next)
        a->next->prev = a->prev;
    p->system -= a->raw_size;
    p->narenas--;
    khl_i_frame_free(p, a->raw, a->raw_size);
    meta_free(p->meta, a, sizeof *a);
    p->meta_bytes -= sizeof *a;
}

/* An arena of at least w windows, counted but holding no block; NULL when
 * memory, the limit or the bookkeeping say no. */
static arena_t *arena_new(khl_pool_t *p, unsigned w)
{
    size_t want = (ARENA_BYTES + p->chunk_bytes - 1) / p->chunk_bytes, raw_size;
    unsigned nwin = want > ARENA_MAX_WINDOWS ? ARENA_MAX_WINDOWS : (unsigned)want;
    arena_t *a;
    void *raw;
    char *base;
    if (nwin < w)
        nwin = w;
    /* Under a tight limit an arena of just this block still serves it. */
    if (!within_limit(p, khl_i_frame_cost(p, nwin * p->chunk_bytes)))
        nwin = w;
    if (!within_limit(p, khl_i_frame_cost(p, nwin * p->chunk_bytes)))
        return NULL;
    a = (arena_t *)meta_alloc(p->meta, sizeof *a);
    if (!a)
        return NULL;
    base = khl_i_region_take(p, nwin * p->chunk_bytes, &raw, &raw_size);
    if (!base) {
        meta_free(p->meta, a, sizeof *a);
        return NULL;
    }
    a->base = base;
    a->raw = raw;
    a->raw_size = raw_size;
    a->nwin = nwin;
    a->used = 0;
    a->prev = NULL;
    a->next = p->arenas;
    if (p->arenas)
        p->arenas->prev = a;
    p->arenas = a;
    p->narenas++;
    p->meta_bytes += sizeof *a;
    p->system += raw_size;
    /* Counted as empty until its first block, so that a failure before it
     * takes one can simply release it. */
    p->nempty++;
    p->retained += raw_size;
    return a;
}

/* Marks windows start..start+w of a used (or free). */
static void arena_mark(khl_pool_t *p, arena_t *a, unsigned start, unsigned w, int used)
{
    if (!a->used) {
        p->nempty--;
        p->retained -= a->raw_size;
    }
    if (used)
        a->used |= run_mask(start, w);
    else
        a->used &= ~run_mask(start, w);
    if (!a->used) {
        p->nempty++;
        p->retained += a->raw_size;
    }
}

static unsigned span_start(const khl_pool_t *p, const khl_pool_chunk_t *k)
{
    const arena_t *a = (const arena_t *)k->raw;
    return (unsigned)((size_t)((const char *)k - a->base) / p->chunk_bytes);
}

/* Sets a span's header for `w` windows holding n bytes from k->slots. */
static void span_set(const khl_pool_t *p, khl_pool_chunk_t *k, unsigned w, size_t n)
{
    k->cls = w;
    k->raw_size = (size_t)w * p->chunk_bytes;
    k->size = n;
    k->cap = k->raw_size - (size_t)(k->slots - (char *)k);
}

/* Where a span block of n bytes in w windows starts past its header.
 * Windows are chunk_bytes-aligned, so without a colour every span block
 * would start at one address modulo the page, and the same bytes of every
 * block (their first ones, a field at a fixed offset) would compete for
 * the same few sets of the caches: 16 arrays of 20 KiB read in step took
 * 829 k L1 misses uncoloured and 110 k coloured (cachegrind, 32 KiB 8-way).
 * Successive blocks step by COLOUR_STEP through COLOUR_SPAN, within the
 * slack of their last window so that a colour never costs a window
 * (jemalloc's cache_oblivious spends a page on it instead). */
static size_t span_colour(const khl_pool_t *p, unsigned w, size_t n)
{
    size_t slack = (size_t)w * p->chunk_bytes - FRAME_HEADER_BYTES - n;
    size_t colour = p->colour * COLOUR_STEP % COLOUR_SPAN;
    return colour <= slack ? colour : slack & ~(COLOUR_STEP - 1);
}

static void *span_alloc(khl_pool_t *p, size_t n, unsigned w)
{
    arena_t *a, *best = NULL, *fresh = NULL;
    unsigned start = 0, s = 0, len, best_len = 0;
    khl_pool_chunk_t *k;
    for (a = p->arenas; a; a = a->next)
        if ((len = best_run(a, w, &s)) != 0 && (!best || len < best_len)) {
            best = a;
            best_len = len;
            start = s;
            if (len == w)
                break;
        }
    if (!best) {
        if (!(best = fresh = arena_new(p, w)))
            return NULL;
        start = 0;
    }
    if (khl_i_index_make_room(p, 1) < 0) {
        if (fresh) {
            p->nempty--;
            p->retained -= fresh->raw_size;
            arena_release(p, fresh);
        }
        return NULL;
    }
    arena_mark(p, best, start, w, 1);
    k = (khl_pool_chunk_t *)(void *)(best->base + (size_t)start * p->chunk_bytes);
    k->kind = KIND_LARGE;
    k->raw = best;
    k->fresh_next = NULL;
    k->slots = (char *)k + FRAME_HEADER_BYTES + span_colour(p, w, n);
    p->colour++;
    span_set(p, k, w, n);
    khl_i_index_add(p, (uintptr_t)k);
    if (fresh)
        khl_i_large_shed(p);
    return k->slots;
}

static void span_free(khl_pool_t *p, khl_pool_chunk_t *k)
{
    arena_t *a = (arena_t *)k->raw;
    arena_mark(p, a, span_start(p, k), k->cls, 0);
    /* One empty arena stays for the next blocks; a second goes back. */
    if (!a->used && p->nempty > KEEP_EMPTY_ARENAS) {
        p->nempty--;
        p->retained -= a->raw_size;
        arena_release(p, a);
    }
}

/* ------------------------------------------------------------------------ */
/* Huge blocks and the mappings kept for them                                */

static void cache_drop(khl_pool_t *p, khl_pool_chunk_t *k)
{
    chunk_list_unlink(&p->huge_cache, k);
    p->ncached--;
    p->cached_bytes -= k->raw_size;
    p->retained -= k->raw_size;
}

static void cache_release(khl_pool_t *p, khl_pool_chunk_t *k)
{
    cache_drop(p, k);
    p->system -= k->raw_size;
    khl_i_frame_free(p, k->raw, k->raw_size);
}

/* Keeps a freed huge frame for the next huge block if it is small enough,
 * pushing out the oldest beyond HUGE_CACHE_FRAMES or cache_max bytes. */
static void cache_put(khl_pool_t *p, khl_pool_chunk_t *k)
{
    khl_pool_chunk_t *old;
    if (k->raw_size > p->cache_max) {
        p->system -= k->raw_size;
        khl_i_frame_free(p, k->raw, k->raw_size);
        return;
    }
    chunk_list_push(&p->huge_cache, k);
    p->ncached++;
    p->cached_bytes += k->raw_size;
    p->retained += k->raw_size;
    while (p->ncached > HUGE_CACHE_FRAMES || p->cached_bytes > p->cache_max) {
        for (old = p->huge_cache; old->next; old = old->next)
            ;
        cache_release(p, old);
    }
}

/* A kept frame whose raw size fits `cost` and wastes less than half. */
static khl_pool_chunk_t *cache_take(khl_pool_t *p, size_t cost)
{
    khl_pool_chunk_t *k, *best = NULL;
    for (k = p->huge_cache; k; k = k->next)
        if (k->raw_size >= cost && k->raw_size - cost <= cost / 2 && (!best || k->raw_size < best->raw_size))
            best = k;
    return best;
}

static void huge_set(khl_pool_chunk_t *k, size_t n)
{
    k->cls = 0;
    k->size = n;
    k->slots = (char *)k + FRAME_HEADER_BYTES;
    k->cap = (size_t)((char *)k->raw + k->raw_size - k->slots);
}

static void *huge_alloc(khl_pool_t *p, size_t n)
{
    size_t cost = khl_i_frame_cost(p, FRAME_HEADER_BYTES + n);
    khl_pool_chunk_t *k;
    if (!cost)
        return NULL;
    if ((k = cache_take(p, cost)) != NULL) {
        if (khl_i_index_make_room(p, 1) < 0)
            return NULL;
        cache_drop(p, k);
        khl_i_index_add(p, (uintptr_t)k);
    } else {
        if (!(k = khl_i_frame_new(p, FRAME_HEADER_BYTES + n, KIND_LARGE, 0)))
            return NULL;
        khl_i_large_shed(p);
    }
    huge_set(k, n);
    return k->slots;
}

/* ------------------------------------------------------------------------ */
/* The calls                                                                 */

void *khl_i_large_alloc(khl_pool_t *p, size_t n)
{
    unsigned w = span_windows(p, FRAME_HEADER_BYTES, n);
    void *b;
    if (n > SIZE_MAX / 2)
        return NULL;
    b = w ? span_alloc(p, n, w) : huge_alloc(p, n);
    if (!b)
        return NULL;
    chunk_list_push(&p->large, chunk_of(p, b));
    p->nlarge++;
    return b;
}

void khl_i_large_free(khl_pool_t *p, khl_pool_chunk_t *k)
{
    chunk_list_unlink(&p->large, k);
    p->nlarge--;
    khl_i_index_remove(p, (uintptr_t)k);
    if (k->cls)
        span_free(p, k);
    else
        cache_put(p, k);
}

/* A huge block grown by moving its pages (mremap), never its bytes. */
static khl_pool_chunk_t *huge_grow(khl_pool_t *p, khl_pool_chunk_t *k, size_t nsize)
{
    size_t cost = khl_i_frame_cost(p, FRAME_HEADER_BYTES + nsize), old = k->raw_size;
    khl_pool_chunk_t *moved;
    if (!cost || p->backing.fn || !within_limit(p, cost - old))
        return NULL;
    chunk_list_unlink(&p->large, k);
    khl_i_index_remove(p, (uintptr_t)k);
    moved = khl_i_frame_remap(p, k, cost);
    if (moved)
        k = moved;
    khl_i_index_add(p, (uintptr_t)k);
    chunk_list_push(&p->large, k);
    if (!moved)
        return NULL;
    p->system += cost - old;
    huge_set(k, k->size);
    khl_i_large_shed(p);
    return k;
}

/* A huge block that shrank below half its frame gives the pages past its
 * end back: it stays where it is, and shrinking by little costs no call. */
static void huge_shrink(khl_pool_t *p, khl_pool_chunk_t *k, size_t nsize)
{
    size_t keep = khl_i_frame_cost(p, FRAME_HEADER_BYTES + nsize);
    if (p->backing.fn || keep > k->raw_size / 2)
        return;
    khl_i_frame_cut(p, k, keep);
    p->system -= k->raw_size - keep;
    k->raw_size = keep;
    huge_set(k, k->size);
}

void *khl_i_large_resize(khl_pool_t *p, khl_pool_chunk_t *k, size_t nsize)
{
    size_t old = k->size;
    if (nsize <= p->max_small)
        return NULL;
    if (k->cls) {
        unsigned w = span_windows(p, (size_t)(k->slots - (char *)k), nsize), start = span_start(p, k);
        arena_t *a = (arena_t *)k->raw;
        if (!w)
            return NULL;
        if (w < k->cls) {
            arena_mark(p, a, start + w, k->cls - w, 0);
        } else if (w > k->cls) {
            if (start + w > a->nwin || (a->used & run_mask(start + k->cls, w - k->cls)))
                return NULL;
            arena_mark(p, a, start + k->cls, w - k->cls, 1);
        }
        span_set(p, k, w, nsize);
    } else if (nsize > k->cap) {
        if (!(k = huge_grow(p, k, nsize)))
            return NULL;
        k->size = nsize;
    } else {
        k->size = nsize;
        if (nsize < old)
            huge_shrink(p, k, nsize);
    }
    p->hot.in_use -= old;
    note_alloc(p, nsize);
    return k->slots;
}

/* Gives back kept memory - the oldest kept mappings, then empty arenas -
 * until the pool is within limit_bytes again, or all of it (every = 1). */
static int over(const khl_pool_t *p, int every)
{
    return every || (p->limit && p->system > p->limit);
}

static void shed(khl_pool_t *p, int every)
{
    arena_t *a, *next;
    while (p->huge_cache && over(p, every)) {
        khl_pool_chunk_t *old;
        for (old = p->huge_cache; old->next; old = old->next)
            ;
        cache_release(p, old);
    }
    for (a = p->arenas; a && over(p, every); a = next) {
        next = a->next;
        if (!a->used) {
            p->nempty--;
            p->retained -= a->raw_size;
            arena_release(p, a);
        }
    }
}

void khl_i_large_shed(khl_pool_t *p)
{
    shed(p, 0);
}

void khl_i_large_trim(khl_pool_t *p)
{
    shed(p, 1);
}

void khl_i_large_destroy(khl_pool_t *p, khl_pool_unmap_t *u)
{
    khl_pool_chunk_t *k, *next;
    for (k = p->large; k; k = next) {
        next = k->next;
        if (!k->cls)
            khl_i_unmap_add(p, u, k->raw, k->raw_size);
    }
    for (k = p->huge_cache; k; k = next) {
        next = k->next;
        khl_i_unmap_add(p, u, k->raw, k->raw_size);
    }
    while (p->arenas) {
        arena_t *a = p->arenas;
        p->arenas = a->next;
        khl_i_unmap_add(p, u, a->raw, a->raw_size);
        meta_free(p->meta, a, sizeof *a);
    }
}
