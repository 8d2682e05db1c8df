/* khl_split.h: the split storages, the benchmarks' baselines for the one
 * block: the same table code (lookup, put, erase, rebuild) on storage that
 * takes two allocations (a header, then [ctrl|slots]: mruby since 2013) or
 * three (header, ctrl, slots: klib's khash), so that `make bench` measures
 * what merging them gains and nothing else.  Not installed and not part of
 * the library: the benchmarks, the tests, the fuzzer and the object-model
 * example include it.
 *
 *     KHL_INIT_LAYOUT(name, key_t, val_t, is_map, hash_fn, eq_fn, layout)
 *
 * is KHL_INIT on storage `layout`: KHL_LAYOUT_SINGLE (the library's block,
 * what KHL_INIT gives), KHL_LAYOUT_SPLIT2 or KHL_LAYOUT_SPLIT3.  Each is a
 * storage prefix as khl_table_impl.h describes under "storage". */
#ifndef KHL_BENCH_SPLIT_H
#define KHL_BENCH_SPLIT_H

#include "khashlite/khashlite.h"

#define KHL_LAYOUT_SINGLE khl_single
#define KHL_LAYOUT_SPLIT2 khl_split2
#define KHL_LAYOUT_SPLIT3 khl_split3

/* layout is expanded to its prefix before the generator pastes it. */
#define KHL_INIT_LAYOUT(name, khkey_t, khval_t, is_map, hash_fn, eq_fn, layout)     \
    KHL_I_INIT_STORAGE(name, khkey_t, khval_t, is_map, hash_fn, eq_fn, layout)

/* The header, allocated with a table's first storage and kept until it is
 * destroyed: the extension always (a split table's counters do not depend
 * on its size), then the block header the table code sees, then where the
 * control bytes and slots are. */
typedef struct khl_split_block {
    khl_block_ext_t x;
    khl_block_t h;
    unsigned char *ctrl;
    char *pairs;
} khl_split_block_t;

static inline khl_split_block_t *khl_split_of(const khl_block_t *b)
{
    return (khl_split_block_t *)(void *)((char *)(uintptr_t)b - offsetof(khl_split_block_t, h));
}

/* The bytes of allocation k of a table of nb buckets: the header (0),
 * split3's control bytes (1), the slots (2; split2's after its control
 * bytes).  0: none, or too large. */
static inline size_t khl_split_bytes(unsigned k, uint32_t nb, const khl_type_t *t, int three)
{
    size_t bytes;
    if (k == 0)
        return sizeof(khl_split_block_t);
    if (k == 1)     /* a tiny table's control window reads 16 bytes */
        return !three ? 0 : nb < KHL_GROUP_WIDTH ? KHL_GROUP_WIDTH : khl_ctrl_bytes(nb);
    if (three)
        return khl_table_region_bytes(0, nb, t);
    bytes = khl_table_region_bytes(khl_ctrl_bytes(nb), nb, t);
    return bytes && bytes < KHL_GROUP_WIDTH ? KHL_GROUP_WIDTH : bytes;
}

static inline size_t khl_split_size(const khl_block_t *b, const khl_type_t *t, int three)
{
    unsigned k;
    size_t bytes = 0;
    for (k = 0; b && k < 3; ++k)
        bytes += khl_split_bytes(k, b->n_buckets, t, three);
    return bytes;
}

static inline khl_regions_t khl_split_regions_of(khl_block_t *b)
{
    khl_regions_t r;
    r.ctrl = khl_split_of(b)->ctrl;
    r.pairs = khl_split_of(b)->pairs;
    r.n_buckets = b->n_buckets;
    r.shift = khl_shift_of(b);
    return r;
}

/* b's i-th allocation: split3's control bytes, the slots' allocation
 * (where split2's control bytes start), and the header last, which says
 * where the others are. */
static inline KHL_HOT_INLINE void *khl_split_allocation(khl_block_t *b, const khl_type_t *t, unsigned i,
                                                        size_t *bytes, int three)
{
    static const unsigned order[2][3] = {{2, 0, 3}, {1, 2, 0}};
    khl_split_block_t *sb = khl_split_of(b);
    unsigned k = i < 3 ? order[three][i] : 3u;
    if (k > 2)
        return NULL;
    *bytes = khl_split_bytes(k, b->n_buckets, t, three);
    if (k == 0)
        return sb;
    return k == 1 || !three ? (void *)sb->ctrl : (void *)(sb->pairs - sb->x.pad);
}

/* Allocates the new control bytes and slots (and the header, for a table
 * that had none) before anything changes, builds the table into them, then
 * frees the old ones; the header stays. */
static inline KHL_HOT_INLINE int khl_split_carry_out(int planned, khl_plan_t *p, khl_block_t **bp,
                                                     const khl_block_t *from, const khl_type_t *t,
                                                     khl_allocf fn, void *ud, int three)
{
    khl_block_t *old = *bp;
    khl_split_block_t *sb;
    khl_regions_t r_from;
    size_t bytes[3], old_bytes[2];
    void *mem[3] = {NULL, NULL, NULL}, *old_mem[2] = {NULL, NULL};
    unsigned char *ctrl;
    char *pairs;
    unsigned i;
    if (planned <= 0)
        return planned;
    for (i = 0; i < 3; ++i)
        bytes[i] = i == 0 && old ? 0 : khl_split_bytes(i, p->nb, t, three);
    if (!bytes[2])
        return -1;
    for (i = 0; i < 3; ++i) {
        if (bytes[i] && !(mem[i] = fn(ud, NULL, 0, bytes[i]))) {
            while (i--)
                if (mem[i])
                    fn(ud, mem[i], bytes[i], 0);
            return -1;
        }
    }
    /* Read before the build reuses the header. */
    if (from)
        r_from = khl_split_regions_of((khl_block_t *)(uintptr_t)from);
    for (i = 0; old && i < (three ? 2u : 1u); ++i)
        old_mem[i] = khl_split_allocation(old, t, i, &old_bytes[i], three);
    sb = old ? khl_split_of(old) : (khl_split_block_t *)mem[0];
    ctrl = (unsigned char *)(three ? mem[1] : mem[2]);
    pairs = three ? (char *)mem[2] : (char *)mem[2] + khl_ctrl_bytes(p->nb);
    sb->x.pad = khl_pad_to(pairs, khl_pairs_align(p->nb, t->pair_align));
    sb->ctrl = ctrl;
    sb->pairs = pairs + sb->x.pad;
    khl_table_build(&sb->h, ctrl, sb->pairs,
                    three ? KHL_GROUP_WIDTH
                          : (size_t)(sb->pairs - (char *)ctrl) +
                                KHL_I_SLOTS_BYTES(p->nb, t->soa, t->pair_size, t->key_size,
                                                  t->val_size, t->key_align),
                    from, from ? &r_from : NULL, from && from == old, p, t);
    for (i = 0; i < 2; ++i)
        if (old_mem[i])
            fn(ud, old_mem[i], old_bytes[i], 0);
    *bp = &sb->h;
    return 0;
}

/* The storage functions of both, from those above. */
#define KHL_SPLIT_STORAGE(S, three)                                                 \
    enum { S##_small_inline = 0 };                                                  \
    static inline unsigned char *S##_ctrl(khl_block_t *b)                           \
    {                                                                               \
        return khl_split_of(b)->ctrl;                                               \
    }                                                                               \
    static inline char *S##_slots(khl_block_t *b, size_t align)                     \
    {                                                                               \
        (void)align;                                                                \
        return khl_split_of(b)->pairs;                                              \
    }                                                                               \
    static inline char *S##_largeslots(khl_block_t *b, uint32_t nb)                 \
    {                                                                               \
        (void)nb;                                                                   \
        return khl_split_of(b)->pairs;                                              \
    }                                                                               \
    static inline char *S##_smallslots(khl_block_t *b, unsigned char *ctrl, uint32_t nb, \
                                       size_t align)                                \
    {                                                                               \
        (void)ctrl, (void)nb, (void)align;                                          \
        return khl_split_of(b)->pairs;                                              \
    }                                                                               \
    static inline khl_regions_t S##_regions(khl_block_t *b, size_t align)           \
    {                                                                               \
        (void)align;                                                                \
        return khl_split_regions_of(b);                                             \
    }                                                                               \
    static inline int S##_carry_out(int planned, khl_plan_t *p, khl_block_t **bp,   \
                                    const khl_block_t *from, const khl_type_t *t,   \
                                    khl_allocf fn, void *ud, int resizes)           \
    {                                                                               \
        (void)resizes;                                                              \
        return khl_split_carry_out(planned, p, bp, from, t, fn, ud, three);         \
    }                                                                               \
    static inline void *S##_allocation(khl_block_t *b, const khl_type_t *t, unsigned i, \
                                       size_t *bytes)                               \
    {                                                                               \
        return khl_split_allocation(b, t, i, bytes, three);                         \
    }                                                                               \
    static inline size_t S##_size(const khl_block_t *b, const khl_type_t *t)        \
    {                                                                               \
        return khl_split_size(b, t, three);                                         \
    }

KHL_SPLIT_STORAGE(khl_split2, 0)
KHL_SPLIT_STORAGE(khl_split3, 1)

#endif
