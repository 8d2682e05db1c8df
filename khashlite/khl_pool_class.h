/* khl_pool_class.h: the size classes - their free blocks' bundles, the
 * flushed batches, checked mode's live bits, and khl_pool_class.c's chunks,
 * reserve and trim - on the system memory below them. */
#ifndef KHL_POOL_CLASS_H
#define KHL_POOL_CLASS_H

#include "khl_pool_os.h"

static inline unsigned class_of(size_t n)
{
    return khl_pool_i_class_of(n);
}

/* class_of for 1 <= n <= max_small, from the pool's table. */
static inline unsigned class_of_small(const khl_pool_t *p, size_t n)
{
    return p->hot.class_index[(n - 1) / GRAIN];
}

static inline size_t class_size(unsigned c)
{
    unsigned g;
    if (c < 8)
        return GRAIN * (c + 1u);
    g = 7u + (c - 8u) / 4u;
    return ((size_t)1 << g) + (size_t)((c - 8u) % 4u + 1u) * ((size_t)1 << (g - 2u));
}

static inline char *slots_end(const khl_pool_chunk_t *k)
{
    return k->slots + k->cap * k->size;
}

/* Never-used slots of the current chunk, to its end (c->end may stop
 * before, where the pages faulted so far do). */
static inline size_t bump_left(const khl_pool_class_t *c)
{
    return c->cur ? c->cur->cap - (size_t)(c->bump - c->cur->slots) / c->size : 0;
}

/* The bundles (see khl_pool_class_t). */
static inline void cls_bundles_init(khl_pool_class_t *c)
{
    c->base = c->top = c->root;
    c->lim = c->root + ROOT_ENTRIES;
}

static inline void cls_push(khl_pool_class_t *c, void *b)
{
    khl_pool_i_push(c, b);
}

static inline void *cls_pop_bundle(khl_pool_class_t *c)
{
    return khl_pool_i_pop_bundle(c);
}

static inline void *cls_pop_free(khl_pool_class_t *c)
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
static inline size_t slot_index(const khl_pool_chunk_t *k, const void *ptr)
{
    return (size_t)((const char *)ptr - k->slots) / k->size;
}

static inline int live_bit(const khl_pool_chunk_t *k, size_t i)
{
    return (k->live[i / 8] >> (i % 8)) & 1;
}

static inline void khl_i_set_live(khl_pool_chunk_t *k, const void *ptr, int on)
{
    size_t i = slot_index(k, ptr);
    unsigned char bit = (unsigned char)(1u << (i % 8));
    k->live[i / 8] = (unsigned char)(on ? k->live[i / 8] | bit : k->live[i / 8] & ~bit);
}

/* khl_pool_class.c: chunks, classes, flushed batches, reserve, trim (lock held) */

KHL_HIDDEN size_t khl_i_chunk_layout(const khl_pool_t *p, unsigned c, size_t *off);
KHL_HIDDEN size_t khl_i_cls_nfree(const khl_pool_class_t *c);
KHL_HIDDEN size_t khl_i_cls_ready(const khl_pool_class_t *c);
KHL_HIDDEN size_t khl_i_cls_reserved(khl_pool_t *p, unsigned ci, uint64_t done);
KHL_HIDDEN int khl_i_cls_fill_bump(khl_pool_t *p, unsigned ci, int sys);
KHL_HIDDEN void *khl_i_cls_pop(khl_pool_t *p, unsigned ci, int sys);
KHL_HIDDEN int khl_i_core_reserve(khl_pool_t *p, unsigned ci, size_t count, uint64_t done);
KHL_HIDDEN void khl_i_core_trim_class(khl_pool_t *p, unsigned ci, uint64_t done, khl_pool_unmap_t *u);
KHL_HIDDEN void *khl_i_take_chain(khl_pool_t *p, unsigned ci);
KHL_HIDDEN size_t khl_i_splice_chain(khl_pool_class_t *c, void *head);
KHL_HIDDEN size_t khl_i_batches_return(khl_pool_class_t *c, void *chains);
KHL_HIDDEN int khl_i_run_fault_ahead(khl_pool_t *p, char **end);
KHL_HIDDEN void khl_i_run_return(khl_pool_t *p, unsigned ci, char *bump, char *end);

#endif /* KHL_POOL_CLASS_H */
