/* khl_pool_check.c: everything that checks the pool rather than runs it -
 * checked mode's per-call checks (checked = 1: misuse becomes an abort with
 * a message) and khl_pool_check, the walk over the whole pool that verifies
 * the invariants written in khl_pool_internal.h.  Under -DKHL_DEBUG every
 * slow path ends with that walk (KHL_I_DEBUG_CHECK). */
#include "khl_pool_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------------------ */
/* Checked mode                                                              */

_Noreturn void khl_i_die(const char *who, const void *ptr, const char *check)
{
    fprintf(stderr, "khl_pool: %s(%p): %s\n", who, ptr, check);
    fflush(stderr);
    abort();
}

/* The end of k's slots handed out at least once. */
static const char *handed_out_end(const khl_pool_t *p, const khl_pool_chunk_t *k)
{
    const khl_pool_class_t *c = &p->cls[k->cls];
    return k == c->cur ? c->bump : k->bump;
}

/* The frame holding ptr if ptr is a block start inside it, else NULL.
 * Reads no header before the index says the frame is the pool's. */
khl_pool_chunk_t *khl_i_find_block(const khl_pool_t *p, const void *ptr, const char **why)
{
    khl_pool_chunk_t *k = chunk_of(p, ptr);
    const char *bump;
    if ((uintptr_t)ptr % GRAIN) {
        *why = "misaligned pointer: no block of this pool starts there";
        return NULL;
    }
    if (!khl_i_index_has(p, (uintptr_t)k)) {
        *why = "foreign pointer: not in any chunk or live large block of this pool"
               " (or a large block already freed)";
        return NULL;
    }
    if (k->kind == KIND_LARGE) {
        *why = "interior pointer: inside a large block, not its start";
        return (const char *)ptr == k->slots ? k : NULL;
    }
    bump = handed_out_end(p, k);
    *why = "interior pointer: inside a chunk, not the start of a handed-out block";
    if ((const char *)ptr < k->slots || (const char *)ptr >= bump ||
        (size_t)((const char *)ptr - k->slots) % k->size)
        return NULL;
    return k;
}

/* Aborts unless ptr is a live block and n (0: unknown) fits its class. */
khl_pool_chunk_t *khl_i_check_live(const khl_pool_t *p, const void *ptr, size_t n, const char *who)
{
    const char *why;
    khl_pool_chunk_t *k = khl_i_find_block(p, ptr, &why);
    if (!k)
        khl_i_die(who, ptr, why);
    if (k->kind != KIND_LARGE) {
        if (!live_bit(k, slot_index(k, ptr)))
            khl_i_die(who, ptr, "double free or use of a freed block: the block is not live");
        if (n && (n > p->max_small || class_of(n) != k->cls))
            khl_i_die(who, ptr, "wrong size: the size given is not of the block's size class");
    } else if (n && n != k->size) {
        khl_i_die(who, ptr, "wrong size: the size given is not the large block's size");
    }
    return k;
}

/* ------------------------------------------------------------------------ */
/* khl_pool_check: the invariants, verified by walking every structure.      */
/* Every pointer read from the pool is checked (index, kind, class, slot)    */
/* before it is followed, so a corrupted pool gives a message, not a crash.  */

static int broken(const char *fmt, ...)
{
    va_list ap;
    fputs("khl_pool_check: invariant broken: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    return -1;
}

/* NULL when b is a handed-out slot of class ci, else why not. */
static const char *not_of_class(const khl_pool_t *p, unsigned ci, const void *b)
{
    const char *why;
    const khl_pool_chunk_t *k = khl_i_find_block(p, b, &why);
    if (!k)
        return why;
    if (k->kind == KIND_LARGE)
        return "a large block";
    if (k->cls != ci)
        return "a block of another size class";
    return NULL;
}

/* A free block of class ci, as the walks meet it: of the class, and in a
 * checked pool not marked live.  `n` counts it; more than `bound` means a
 * cycle or a block counted twice. */
static int free_block_ok(const khl_pool_t *p, unsigned ci, const void *b, const char *where,
                         size_t *n, size_t bound)
{
    const char *why = not_of_class(p, ci, b);
    if (why)
        return broken("class %u (%zu B): %s %p is not a free block of it: %s", ci,
                      p->cls[ci].size, where, b, why);
    if ((p->flags & F_CHECKED) && live_bit(chunk_of(p, b), slot_index(chunk_of(p, b), b)))
        return broken("class %u: %s %p is marked live", ci, where, b);
    if (++*n > bound)
        return broken("class %u: more free blocks than slots handed out (a cycle?) at %p", ci, b);
    return 0;
}

/* A chain of blocks linked through their first words. */
static int chain_ok(const khl_pool_t *p, unsigned ci, void *head, const char *where,
                    size_t *n, size_t bound)
{
    void *b;
    for (b = head; b; b = *(void **)b)
        if (free_block_ok(p, ci, b, where, n, bound) < 0)
            return -1;
    return 0;
}

/* Per class: chunks, bump, fresh list, bundles, flushed chains, counts. */
typedef struct class_totals {
    size_t chunks, raw, live_bits;
} class_totals_t;

static int chunks_ok(const khl_pool_t *p, unsigned ci, class_totals_t *tot, size_t *handed)
{
    const khl_pool_class_t *c = &p->cls[ci];
    const khl_pool_chunk_t *k, *prev = NULL;
    uint32_t kind = p->flags ? KIND_SMALL_GUARDED : KIND_SMALL_PLAIN;
    size_t off, cap = khl_i_chunk_layout(p, ci, &off), carved = 0, n = 0;
    int cur_seen = 0;
    *handed = 0;
    for (k = c->chunks; k; prev = k, k = k->next) {
        const char *end = handed_out_end(p, k);
        if (++n > p->nchunks)
            return broken("class %u: chunk list longer than nchunks (%zu)", ci, p->nchunks);
        if ((uintptr_t)k & p->hot.mask || !khl_i_index_has(p, (uintptr_t)k))
            return broken("class %u: chunk %p unaligned or not in the chunk index", ci, (const void *)k);
        if (k->kind != kind || k->cls != ci || k->size != c->size || k->cap != cap ||
            k->slots != (const char *)k + off)
            return broken("class %u: chunk %p header (kind %#x class %u size %zu cap %zu) is not the class's",
                          ci, (const void *)k, k->kind, k->cls, k->size, k->cap);
        if (k->prev != prev)
            return broken("class %u: chunk %p has a wrong prev link", ci, (const void *)k);
        if (end < k->slots || end > k->slots + cap * c->size || (size_t)(end - k->slots) % c->size)
            return broken("class %u: chunk %p bump %p outside its slots or off a slot boundary",
                          ci, (const void *)k, (const void *)end);
        *handed += (size_t)(end - k->slots) / c->size;
        if (k == c->cur)
            cur_seen = 1;
        else
            carved += (size_t)(end - k->slots) / c->size;
        tot->raw += k->raw_size;
        if (p->flags & F_CHECKED) {
            size_t i;
            for (i = 0; i < cap; i++)
                if (live_bit(k, i)) {
                    if (k->slots + i * c->size >= end)
                        return broken("class %u: never-used slot %zu of chunk %p marked live",
                                      ci, i, (const void *)k);
                    tot->live_bits++;
                }
        }
    }
    tot->chunks += n;
    if (c->cur && !cur_seen)
        return broken("class %u: current chunk %p not among the class's chunks", ci, (const void *)c->cur);
    /* end may stop short of the chunk's slots, where their pages do (steps of faults). */
    if (c->cur ? c->end < c->bump || c->end > c->cur->slots + cap * c->size ||
                     (size_t)(c->end - c->cur->slots) % c->size
               : c->bump || c->end)
        return broken("class %u: bump range %p..%p does not match the current chunk", ci,
                      (const void *)c->bump, (const void *)c->end);
    if (carved != c->carved)
        return broken("class %u: carved %zu, chunks other than the current say %zu", ci, c->carved, carved);
    {
        size_t fresh = 0;
        n = 0;
        for (k = c->fresh; k; k = k->fresh_next) {
            if (++n > p->nchunks || !khl_i_index_has(p, (uintptr_t)k) || k->kind != kind || k->cls != ci)
                return broken("class %u: fresh list holds %p, not a chunk of the class", ci, (const void *)k);
            if (k == c->cur || k->bump != k->slots)
                return broken("class %u: fresh chunk %p was bumped into", ci, (const void *)k);
            fresh += k->cap;
        }
        if (fresh != c->fresh_slots)
            return broken("class %u: fresh_slots %zu, fresh chunks hold %zu", ci, c->fresh_slots, fresh);
    }
    return 0;
}

/* Batches flushed by thread caches, linked through second words: c.batch
 * blocks each. */
static int chains_ok(const khl_pool_t *p, unsigned ci, void *chain, size_t bound, size_t *n)
{
    size_t nchains = 0;
    for (; chain; chain = batch_next(chain)) {
        size_t before = *n;
        if (++nchains > bound)
            return broken("class %u: flushed batches form a cycle", ci);
        if (chain_ok(p, ci, chain, "flushed batch", n, bound) < 0)
            return -1;
        if (*n - before != p->cls[ci].batch)
            return broken("class %u: flushed batch %p holds %zu blocks, not %zu", ci, chain,
                          *n - before, p->cls[ci].batch);
    }
    return 0;
}

/* Free blocks: the bundles, then the flushed chains.  *n counts them. */
static int free_blocks_ok(const khl_pool_t *p, unsigned ci, size_t bound, size_t *n)
{
    const khl_pool_class_t *c = &p->cls[ci];
    void *const *base = c->base, *const *top = c->top, *const *e;
    size_t i;
    while (base != c->root) {
        void **bundle = (void **)base - 1;
        if (free_block_ok(p, ci, bundle, "bundle", n, bound) < 0)
            return -1;
        if (top < base || top > base + c->bundle_cap ||
            (base != c->base && top != base + c->bundle_cap))
            return broken("class %u: bundle %p holds %td entries of %zu (only the current may be partial)",
                          ci, (void *)bundle, top - base, c->bundle_cap);
        for (e = base; e < top; e++)
            if (free_block_ok(p, ci, *e, "bundle entry", n, bound) < 0)
                return -1;
        if (!bundle[0]) {
            base = c->root;
            top = c->root + ROOT_ENTRIES;
        } else {
            const char *why = not_of_class(p, ci, bundle[0]);
            if (why)
                return broken("class %u: bundle %p links to %p: %s", ci, (void *)bundle, bundle[0], why);
            base = (void **)bundle[0] + 1;
            top = base + c->bundle_cap;
        }
    }
    if (c->base == c->root ? c->lim != c->root + ROOT_ENTRIES || c->top < c->root || c->top > c->lim
                           : c->lim != c->base + c->bundle_cap)
        return broken("class %u: current bundle bounds (top %p, base %p, lim %p) inconsistent", ci,
                      (void *)c->top, (void *)c->base, (void *)c->lim);
    for (i = 0; i < (size_t)(top - c->root); i++)
        if (free_block_ok(p, ci, c->root[i], "root entry", n, bound) < 0)
            return -1;
    return chains_ok(p, ci, c->batches, bound, n);
}

/* A record's caches: the calling thread's own, or an exited thread's the
 * pool holds (abandoned), the only ones it may read. */
static int record_ok(const khl_pool_t *p, const thread_cache_t *e)
{
    unsigned ci;
    size_t kept = 0;
    for (ci = 0; ci < p->ncls; ci++) {
        const khl_pool_class_cache_t *t = &e->c[ci];
        size_t n = 0, nfreed = 0, nkept = 0, bound = p->nchunks * (p->chunk_bytes / GRAIN);
        if (chain_ok(p, ci, t->alloc, "thread cache entry", &n, bound) < 0 ||
            chain_ok(p, ci, t->freed, "thread cache freed entry", &nfreed, bound) < 0 ||
            chains_ok(p, ci, t->stash, bound, &nkept) < 0)
            return -1;
        kept += nkept * p->cls[ci].size;
        uint64_t to_flush = t->flush_at - counter(&t->frees);
        size_t batch = p->cls[ci].batch;
        if (to_flush < 1 || to_flush > batch || nfreed != batch - to_flush)
            return broken("class %u: thread cache holds %zu freed blocks, flushes in %llu frees "
                          "(batch %zu)", ci, nfreed, (unsigned long long)to_flush, batch);
        if (t->bump != t->end) {
            const char *why = not_of_class(p, ci, t->bump);
            if (why || t->end < t->bump || (size_t)(t->end - t->bump) % p->cls[ci].size ||
                chunk_of(p, t->end - 1) != chunk_of(p, t->bump))
                return broken("class %u: thread cache's never-used run %p..%p: %s", ci,
                              (void *)t->bump, (void *)t->end, why ? why : "not within one chunk");
        }
    }
    if (kept != e->kept)
        return broken("thread cache counts %zu bytes in kept batches, holds %zu", e->kept, kept);
    return 0;
}

/* The records: every abandoned one is on the pool's list of records and
 * marked so, no other is marked, the pool counts them (at most
 * KEEP_ABANDONED), and each abandoned one and the caller's own hold what
 * they count.  The lists are walked at most MAX_RECORDS far,
 * so that a corrupted link gives a message, not an endless loop. */
enum { MAX_RECORDS = 1 << 20 };

static int records_ok(const khl_pool_t *p)
{
    const thread_cache_t *e;
    size_t nthreads = 0, marked = 0, nabandoned = 0;
    for (e = p->threads; e && nthreads < MAX_RECORDS; e = e->next, nthreads++)
        marked += e->abandoned != 0;
    for (e = p->abandoned; e && nabandoned < MAX_RECORDS; e = e->adopt_next, nabandoned++) {
        if (!e->abandoned || e->head.gen != p->hot.gen)
            return broken("abandoned record %p: not marked abandoned, or of another pool", (const void *)e);
        if (record_ok(p, e) < 0)
            return -1;
    }
    if (nthreads == MAX_RECORDS || nabandoned == MAX_RECORDS || marked != nabandoned ||
        nabandoned != p->nabandoned || nabandoned > KEEP_ABANDONED)
        return broken("%zu records, %zu of them marked abandoned, %zu on the abandoned list, "
                      "which counts %zu", nthreads, marked, nabandoned, p->nabandoned);
    e = khl_i_own_cache(p);
    return e ? record_ok(p, e) : 0;
}

/* A span: in one of the pool's arenas, its windows inside it and in use,
 * its header saying as much. */
static int span_ok(const khl_pool_t *p, const khl_pool_chunk_t *k)
{
    const arena_t *a;
    size_t n = 0;
    for (a = p->arenas; a && a != (const arena_t *)k->raw; a = a->next)
        if (++n > p->narenas)
            return broken("arena list longer than narenas (%zu)", p->narenas);
    if (!a)
        return broken("large block %p: arena %p is not one of the pool's", (const void *)k->slots, k->raw);
    if ((const char *)k < a->base || (size_t)((const char *)k - a->base) % p->chunk_bytes ||
        k->cls > ARENA_MAX_WINDOWS ||
        (size_t)((const char *)k - a->base) / p->chunk_bytes + k->cls > a->nwin ||
        k->raw_size != (size_t)k->cls * p->chunk_bytes || k->cap != k->raw_size - (size_t)(k->slots - (const char *)k) ||
        k->size > p->large_max)
        return broken("span %p: %u windows of arena %p (%u windows), room %zu, size %zu",
                      (const void *)k->slots, k->cls, (const void *)a, a->nwin, k->cap, k->size);
    return 0;
}

/* huge_pages: a mapped frame that spans a huge page starts on one. */
static int huge_page_aligned(const khl_pool_t *p, const void *raw, size_t raw_size)
{
    return !khl_i_frame_is_huge(p, raw_size) || !((uintptr_t)raw % p->huge_page);
}

/* Every arena's used bits are exactly its spans' windows, none twice;
 * empty arenas and the bytes they retain are counted right. */
static int arenas_ok(const khl_pool_t *p, size_t *raw)
{
    const arena_t *a, *prev = NULL;
    size_t n = 0, empty = 0, retained = 0;
    for (a = p->arenas; a; prev = a, a = a->next) {
        uint64_t seen = 0;
        const khl_pool_chunk_t *k;
        if (++n > p->narenas)
            return broken("arena list longer than narenas (%zu)", p->narenas);
        if (a->prev != prev || (uintptr_t)a->base & p->hot.mask || !a->nwin || a->nwin > ARENA_MAX_WINDOWS ||
            a->raw_size != khl_i_frame_cost(p, a->nwin * p->chunk_bytes) ||
            !huge_page_aligned(p, a->raw, a->raw_size))
            return broken("arena %p: mislinked, unaligned or of %u windows in %zu bytes", (const void *)a,
                          a->nwin, a->raw_size);
        for (k = p->large; k; k = k->next)
            if (k->cls && k->raw == (const void *)a) {
                unsigned start = (unsigned)((size_t)((const char *)k - a->base) / p->chunk_bytes);
                uint64_t m = (k->cls >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << k->cls) - 1) << start;
                if (seen & m)
                    return broken("arena %p: span %p overlaps another", (const void *)a, (const void *)k);
                seen |= m;
            }
        if (seen != a->used)
            return broken("arena %p: used bits %#llx, its spans cover %#llx", (const void *)a,
                          (unsigned long long)a->used, (unsigned long long)seen);
        if (!a->used) {
            empty++;
            retained += a->raw_size;
        }
        *raw += a->raw_size;
    }
    if (n != p->narenas || empty != p->nempty || empty > KEEP_EMPTY_ARENAS)
        return broken("%zu arenas, %zu empty; the pool counts %zu and %zu", n, empty, p->narenas, p->nempty);
    if (retained + p->cached_bytes != p->retained)
        return broken("retained %zu, empty arenas and kept mappings hold %zu", p->retained,
                      retained + p->cached_bytes);
    return 0;
}

/* Kept huge mappings: out of the index, counted in cached_bytes. */
static int huge_cache_ok(const khl_pool_t *p, size_t *raw)
{
    const khl_pool_chunk_t *k, *prev = NULL;
    size_t n = 0, bytes = 0;
    for (k = p->huge_cache; k; prev = k, k = k->next) {
        if (++n > HUGE_CACHE_FRAMES || k->prev != prev || (uintptr_t)k & p->hot.mask ||
            khl_i_index_has(p, (uintptr_t)k) || k->kind != KIND_LARGE || k->cls ||
            !huge_page_aligned(p, k->raw, k->raw_size))
            return broken("kept mapping %p: mislinked, indexed or not a huge frame", (const void *)k);
        bytes += k->raw_size;
    }
    if (n != p->ncached || bytes != p->cached_bytes || bytes > p->cache_max)
        return broken("%zu kept mappings of %zu bytes; the pool counts %zu of %zu", n, bytes, p->ncached,
                      p->cached_bytes);
    *raw += bytes;
    return 0;
}

/* The chunk reservation: whole chunks, aligned, none of them a frame, and
 * none with a backing allocator (khl_pool_os.c, reservation_cut). */
static int reservation_ok(const khl_pool_t *p)
{
    const char *at;
    if (p->resv_next > p->resv_end || (p->resv_end && p->backing.fn) ||
        ((uintptr_t)p->resv_next & p->hot.mask) || (size_t)(p->resv_end - p->resv_next) % p->chunk_bytes ||
        (size_t)(p->resv_end - p->resv_next) > RESERVE_MAX)
        return broken("chunk reservation %p..%p is not whole aligned chunks", (const void *)p->resv_next,
                      (const void *)p->resv_end);
    for (at = p->resv_next; at != p->resv_end; at += p->chunk_bytes)
        if (khl_i_index_has(p, (uintptr_t)at))
            return broken("frame %p lies in the chunk reservation", (const void *)at);
    return 0;
}

int khl_i_check_held(const khl_pool_t *p)
{
    class_totals_t tot = {0, 0, 0};
    size_t large_bytes = 0, nlarge = 0, i, slots_in_index = 0;
    uint64_t class_bytes = 0;
    const khl_pool_chunk_t *k, *prev = NULL;
    unsigned ci;
    if (p->hot.cache_path_max != (p->flags == F_THREADS ? p->max_small : 0) ||
        p->hot.plain_path_max != (p->flags ? 0 : p->max_small) || p->hot.classes != p->cls)
        return broken("path switches (plain %zu, cache %zu) or class array do not match the pool", p->hot.plain_path_max,
                      p->hot.cache_path_max);
    for (ci = 0; ci < p->ncls; ci++) {
        const khl_pool_class_t *c = &p->cls[ci];
        size_t handed, nfree = 0, live_before = tot.live_bits, in_cur;
        if (chunks_ok(p, ci, &tot, &handed) < 0 || free_blocks_ok(p, ci, handed, &nfree) < 0)
            return -1;
        in_cur = c->cur ? (size_t)(c->bump - c->cur->slots) / c->size : 0;
        if (c->allocs - c->frees > c->carved + in_cur ||
            c->carved + in_cur - (size_t)(c->allocs - c->frees) != nfree)
            return broken("class %u: allocs %llu - frees %llu leave %lld of %zu handed-out slots free, "
                          "the free lists hold %zu", ci, (unsigned long long)c->allocs,
                          (unsigned long long)c->frees,
                          (long long)(c->carved + in_cur) - (long long)(c->allocs - c->frees),
                          c->carved + in_cur, nfree);
        if ((p->flags & F_CHECKED) && tot.live_bits - live_before != c->allocs - c->frees)
            return broken("class %u: %zu blocks marked live, counts say %llu", ci,
                          tot.live_bits - live_before, (unsigned long long)(c->allocs - c->frees));
        if (!(p->flags & F_THREADS) && c->reserve_until > c->allocs &&
            khl_i_cls_ready(c) < c->reserve_until - c->allocs)
            return broken("class %u: %zu blocks ready, the reserve promises %llu", ci, khl_i_cls_ready(c),
                          (unsigned long long)(c->reserve_until - c->allocs));
        class_bytes += (c->allocs - c->frees) * c->size;
    }
    for (k = p->large; k; prev = k, k = k->next) {
        if (++nlarge > p->nlarge)
            return broken("large block list longer than nlarge (%zu)", p->nlarge);
        if ((uintptr_t)k & p->hot.mask || !khl_i_index_has(p, (uintptr_t)k) || k->kind != KIND_LARGE ||
            k->prev != prev || (!k->cls && !huge_page_aligned(p, k->raw, k->raw_size)))
            return broken("large block frame %p unaligned, unindexed, of another kind or mislinked",
                          (const void *)k);
        if (k->size <= p->max_small || k->size > k->cap || k->slots < (const char *)k + FRAME_HEADER_BYTES ||
            (size_t)(k->slots - ((const char *)k + FRAME_HEADER_BYTES)) % COLOUR_STEP ||
            k->slots >= (const char *)k + FRAME_HEADER_BYTES + (k->cls ? COLOUR_SPAN : 1))
            return broken("large block %p: size %zu, room %zu", (const void *)k->slots, k->size, k->cap);
        if (k->cls && span_ok(p, k) < 0)
            return -1;
        large_bytes += k->size;
        if (!k->cls)
            tot.raw += k->raw_size;
    }
    if (arenas_ok(p, &tot.raw) < 0 || huge_cache_ok(p, &tot.raw) < 0)
        return -1;
    if (tot.chunks != p->nchunks || nlarge != p->nlarge)
        return broken("nchunks %zu, nlarge %zu; the lists hold %zu and %zu", p->nchunks, p->nlarge,
                      tot.chunks, nlarge);
    if (p->large_allocs - p->large_frees != p->nlarge)
        return broken("large allocs %llu - frees %llu != %zu live large blocks",
                      (unsigned long long)p->large_allocs, (unsigned long long)p->large_frees, p->nlarge);
    if (tot.raw != p->system)
        return broken("system_bytes %zu, the frames hold %zu", p->system, tot.raw);
    if (reservation_ok(p) < 0)
        return -1;
    if (p->index_cap & (p->index_cap - 1) || 2 * p->index_n > p->index_cap ||
        p->index_n != p->nchunks + p->nlarge)
        return broken("chunk index: %zu keys in %zu slots for %zu frames", p->index_n, p->index_cap,
                      p->nchunks + p->nlarge);
    for (i = 0; i < p->index_cap; i++)
        slots_in_index += p->index[i] != 0;
    if (slots_in_index != p->index_n)
        return broken("chunk index holds %zu keys, counts %zu", slots_in_index, p->index_n);
    if (!(p->flags & F_THREADS) && (class_bytes + large_bytes != p->hot.in_use || p->hot.peak < p->hot.in_use))
        return broken("in_use %zu (peak %zu), the classes and large blocks hold %llu", p->hot.in_use,
                      p->hot.peak, (unsigned long long)(class_bytes + large_bytes));
    return p->hot.cache_path_max ? records_ok(p) : 0;
}

void khl_i_check_or_die(const khl_pool_t *p)
{
    if (khl_i_check_held(p) != 0)
        abort();
}

int khl_pool_check(const khl_pool_t *p)
{
    int r;
    if (!p)
        return 0;
    lock(p);
    r = khl_i_check_held(p);
    unlock(p);
    return r;
}
