/* khl_table.c: the table operations that do not depend on the key type:
 * block sizes and layout, the growth policy, allocation, rebuilds (into a
 * new block, or in place to drop tombstones), copy, clear, destroy, and the
 * invariant checker.  The generated code calls them with
 * its khl_type_t; only the per-key work (hashing, comparing, moving pairs)
 * stays in the macros of khl_table_impl.h.
 *
 * Every allocation is made before anything is changed, so a failure returns
 * -1 with the table exactly as it was. */
#include "khashlite.h"

#include <stdio.h>
#include <stdlib.h>

#define GROUP KHL_GROUP_WIDTH

/* Built with -DKHL_DEBUG, every rebuild, copy and clear ends by checking the
 * table it leaves (O(n), as the rebuild itself) and aborts on the first
 * broken invariant, close to where the damage was done. */
#ifdef KHL_DEBUG
static void verified(const khl_block_t *b, const khl_type_t *t)
{
    if (khl_table_check(b, t) < 0)
        abort();
}
#else
#define verified(b, t) ((void)0)
#endif

static const khl_allocator_t *alloc_of(const khl_allocator_t *a)
{
    return a ? a : &khl_libc_allocator;
}

static uint32_t log2_u32(uint32_t x)
{
    uint32_t n = 0;
    while (x >>= 1)
        ++n;
    return n;
}

/* Keys a table of nb buckets may hold (live plus deleted): I2. */
static uint32_t capacity(uint32_t nb, const khl_type_t *t)
{
    if (nb <= GROUP)
        return nb;
    return (uint32_t)(((uint64_t)nb * t->max_load) >> 16);
}

static uint32_t shift_for(uint32_t nb)
{
    return 57u - (nb > GROUP ? log2_u32(nb / GROUP) : 0u);
}

/* --- layout --------------------------------------------------------------- */

static size_t pairs_align(uint32_t nb, const khl_type_t *t)
{
    size_t a = t->pair_align;
    if (nb >= KHL_LARGE_BUCKETS && a < 64)
        a = 64;
    return a;
}

/* Bytes of an allocation whose first `head` bytes (header, control bytes)
 * come before nb pairs, sized for the worst address the allocator may
 * return; 0 when that does not fit in size_t. */
static size_t region_bytes(size_t head, uint32_t nb, const khl_type_t *t)
{
    size_t a = pairs_align(nb, t), start = KHL_I_PAIRS_START(head, a);
    /* Pairs this small cannot overflow 2^31 buckets on a 64-bit size_t:
     * skip the division (a put into a new table computes this 3 times). */
    const size_t never_overflows = SIZE_MAX / 4 / KHL_MAX_BUCKETS;
    if (t->pair_size > never_overflows && nb > (SIZE_MAX - start) / t->pair_size)
        return 0;
    return start + (size_t)nb * t->pair_size;
}

/* Bytes between `head_end` (an address) and the first pair. */
static uint16_t pad_at(const void *head_end, uint32_t nb, const khl_type_t *t)
{
    uintptr_t p = (uintptr_t)head_end, a = pairs_align(nb, t);
    return (uint16_t)(((p + a - 1) & ~(a - 1)) - p);
}

/* The single block or split2's [ctrl|pairs]: `hdr` bytes of header first.
 * The control window of a tiny table reads 16 bytes from the control bytes. */
static size_t block_bytes(size_t hdr, uint32_t nb, const khl_type_t *t)
{
    size_t bytes = region_bytes(hdr + nb, nb, t);
    return bytes && bytes < hdr + GROUP ? hdr + GROUP : bytes;
}

static size_t ctrl3_bytes(uint32_t nb)          /* split3's control allocation */
{
    return nb < GROUP ? GROUP : nb;
}

size_t khl_table_block_size(const khl_block_t *b, const khl_type_t *t)
{
    uint32_t nb;
    if (!b)
        return 0;
    nb = b->n_buckets;
    switch (t->layout) {
    case KHL_LAYOUT_SINGLE:
        return block_bytes(sizeof(khl_block_t), nb, t);
    case KHL_LAYOUT_SPLIT2:
        return sizeof(khl_split_block_t) + block_bytes(0, nb, t);
    default:
        return sizeof(khl_split_block_t) + ctrl3_bytes(nb) + region_bytes(0, nb, t);
    }
}

/* --- storage -------------------------------------------------------------- */

/* New storage for nb buckets, all empty, the counters set for `size` keys to
 * come.  Split layouts put it under `old`'s header (allocating one when old
 * is NULL): the caller must keep old's regions until it has moved them.
 * Returns the block, NULL (nothing allocated) on failure. */
typedef struct storage {
    khl_block_t *b;
    unsigned char *ctrl;
    char *pairs;
    uint16_t pad;      /* pairs minus the end of the control bytes (split3: of its allocation) */
} storage_t;

static void set_counters(khl_block_t *b, uint32_t nb, uint32_t size, const khl_type_t *t)
{
    b->n_buckets = nb;
    b->size = size;
    b->growth_left = capacity(nb, t) - size;
    b->shift = (uint8_t)shift_for(nb);
    b->reserved = 0;
}

/* Empty control bytes.  A tiny table's window reads past them into the
 * pairs (their padding too): the whole of its few bytes gets a defined
 * value first, so no tool sees an uninitialised read. */
static void clear_ctrl(const storage_t *s, uint32_t nb, const khl_type_t *t)
{
    if (nb < GROUP) {
        /* Up to the end of the pairs where they follow the control bytes. */
        const char *end = s->pairs + (size_t)nb * t->pair_size;
        size_t bytes = t->layout == KHL_LAYOUT_SPLIT3 ? GROUP : (size_t)(end - (char *)s->ctrl);
        memset(s->ctrl + nb, 0xFF, (bytes < GROUP ? GROUP : bytes) - nb);
    }
    memset(s->ctrl, KHL_CTRL_EMPTY, nb);
}

static int storage_alloc(const khl_allocator_t *a, const khl_block_t *old, uint32_t nb,
                         const khl_type_t *t, storage_t *s)
{
    size_t bytes;
    char *mem;
    if (t->layout == KHL_LAYOUT_SINGLE) {
        bytes = block_bytes(sizeof(khl_block_t), nb, t);
        if (!bytes || !(mem = (char *)a->fn(a->ud, NULL, 0, bytes)))
            return -1;
        s->b = (khl_block_t *)(void *)mem;
        s->ctrl = (unsigned char *)(s->b + 1);
        s->pad = pad_at(s->ctrl + nb, nb, t);
        s->pairs = (char *)s->ctrl + nb + s->pad;
    } else {
        khl_split_block_t *sb = (khl_split_block_t *)(void *)(uintptr_t)old;
        size_t pbytes = t->layout == KHL_LAYOUT_SPLIT2 ? block_bytes(0, nb, t) : region_bytes(0, nb, t);
        char *ctrl3 = NULL;
        if (!pbytes)
            return -1;
        if (!sb && !(sb = (khl_split_block_t *)a->fn(a->ud, NULL, 0, sizeof *sb)))
            return -1;
        if (t->layout == KHL_LAYOUT_SPLIT3 && !(ctrl3 = (char *)a->fn(a->ud, NULL, 0, ctrl3_bytes(nb))))
            mem = NULL;
        else
            mem = (char *)a->fn(a->ud, NULL, 0, pbytes);
        if (!mem) {
            if (ctrl3)
                a->fn(a->ud, ctrl3, ctrl3_bytes(nb), 0);
            if (!old)
                a->fn(a->ud, sb, sizeof *sb, 0);
            return -1;
        }
        s->b = &sb->h;
        s->ctrl = ctrl3 ? (unsigned char *)ctrl3 : (unsigned char *)mem;
        s->pairs = ctrl3 ? mem : mem + nb;
        s->pad = pad_at(s->pairs, nb, t);
        s->pairs += s->pad;
    }
    clear_ctrl(s, nb, t);
    return 0;
}

/* Frees the bucket storage of b; the split header too when `all`. */
static void storage_free(const khl_allocator_t *a, khl_block_t *b, const khl_type_t *t, int all)
{
    khl_split_block_t *sb = (khl_split_block_t *)(void *)b;
    uint32_t nb;
    if (!b)
        return;
    nb = b->n_buckets;
    switch (t->layout) {
    case KHL_LAYOUT_SINGLE:
        a->fn(a->ud, b, block_bytes(sizeof(khl_block_t), nb, t), 0);
        return;
    case KHL_LAYOUT_SPLIT2:
        a->fn(a->ud, sb->ctrl, block_bytes(0, nb, t), 0);
        break;
    default:
        a->fn(a->ud, sb->ctrl, ctrl3_bytes(nb), 0);
        a->fn(a->ud, sb->pairs - b->pairs_pad, region_bytes(0, nb, t), 0);
        break;
    }
    if (all)
        a->fn(a->ud, sb, sizeof *sb, 0);
}

/* Makes s the table's storage, with `size` keys in it. */
static khl_block_t *storage_install(const storage_t *s, uint32_t nb, uint32_t size,
                                    const khl_type_t *t)
{
    set_counters(s->b, nb, size, t);
    s->b->pairs_pad = s->pad;
    if (t->layout != KHL_LAYOUT_SINGLE) {
        khl_split_block_t *sb = (khl_split_block_t *)(void *)s->b;
        sb->ctrl = s->ctrl;
        sb->pairs = s->pairs;
    }
    return s->b;
}

/* --- rebuilds -------------------------------------------------------------- */

/* Same size, tombstones dropped: never allocates. */
static void rehash_in_place(khl_block_t *b, const khl_type_t *t)
{
    khl_regions_t r = khl_regions_of(b, t->layout);
    t->rehash(&r, b->n_buckets);
    b->growth_left = capacity(b->n_buckets, t) - b->size;
}

/* Rebuilds the table with nb buckets (nb holds its keys); -1 and unchanged
 * when memory runs out. */
static int rebuild(khl_block_t **bp, const khl_allocator_t *a, const khl_type_t *t, uint32_t nb,
                   uint8_t reserved)
{
    khl_block_t *b = *bp;
    uint32_t size = b ? b->size : 0u;
    storage_t s;
    if (b && nb == b->n_buckets) {
        rehash_in_place(b, t);
        b->reserved = reserved;
        verified(b, t);
        return 0;
    }
    if (storage_alloc(a, b, nb, t, &s) < 0)
        return -1;
    if (b) {
        khl_regions_t from = khl_regions_of(b, t->layout), to;
        to.ctrl = s.ctrl;
        to.pairs = s.pairs;
        to.n_buckets = nb;
        to.shift = shift_for(nb);
        t->move(&to, &from);
        storage_free(a, b, t, 0);
    }
    *bp = storage_install(&s, nb, size, t);
    (*bp)->reserved = reserved;
    verified(*bp, t);
    return 0;
}

/* --- the growth policy ------------------------------------------------------ */

/* Smallest bucket count whose capacity holds n keys with `slack` of the
 * buckets to spare (in 1/16ths, multi-group tables only); 0 if none. */
static uint32_t buckets_for(size_t n, uint32_t slack, const khl_type_t *t)
{
    uint32_t nb = 1;
    if (n > KHL_MAX_BUCKETS)
        return 0;
    for (;;) {
        size_t spare = nb > GROUP ? (size_t)nb / GROUP * slack : 0;
        if ((size_t)capacity(nb, t) >= n + spare)
            return nb;
        if (nb >= KHL_MAX_BUCKETS)
            return 0;
        nb *= 2;
    }
}

static uint32_t count_deleted(khl_block_t *b, const khl_type_t *t)
{
    const unsigned char *ctrl = khl_ctrl_at(b, t->layout);
    uint32_t base, n = 0;
    for (base = 0; base < b->n_buckets; base += GROUP) {
        uint32_t m = khl_group_match(khl_group_load(ctrl + base), KHL_CTRL_DELETED);
        for (; m; m &= m - 1)
            ++n;
    }
    return n;
}

/* A put found no bucket it may fill.  A table of more than one group first
 * counts what its deletions left (they do not give buckets back one by one,
 * khl_erase_in): if 1/16 of the buckets are free after all, it goes on.
 * Otherwise it drops the tombstones in place when the live keys fill at most
 * half the capacity, or (a reserved block) leave 1/16 of the buckets spare;
 * else it grows: 2x below one group (an interpreter object with 5 to 8
 * instance variables keeps a block of 8 buckets, not 16), 4x from there to
 * 128 buckets (small tables reach their size in fewer rebuilds), 2x above.
 * Each of the three costs O(n) and comes at most once per n/16 puts into
 * empty buckets. */
int khl_table_grow(khl_block_t **bp, const khl_allocator_t *a, const khl_type_t *t)
{
    khl_block_t *b = *bp;
    uint32_t nb, cap;
    a = alloc_of(a);
    if (!b)
        return rebuild(bp, a, t, t->first_buckets, 0);
    nb = b->n_buckets;
    cap = capacity(nb, t);
    if (nb > GROUP) {
        uint32_t spare = cap - b->size - count_deleted(b, t);
        if (spare >= nb / GROUP) {
            b->growth_left = spare;
            return 0;
        }
        if (b->size < cap / 2 || (b->reserved && cap - b->size >= nb / GROUP))
            return rebuild(bp, a, t, nb, b->reserved);
    }
    if (nb >= KHL_MAX_BUCKETS)
        return -1;
    return rebuild(bp, a, t, nb >= GROUP && nb < 128 ? nb * 4 : nb * 2, 0);
}

/* A table that holds up to n keys with 1/16 of its buckets to spare never
 * needs to grow while marked reserved: when tombstones exhaust its capacity,
 * khl_table_grow finds that much to free in place.  That is reserve's
 * promise. */
int khl_table_reserve(khl_block_t **bp, const khl_allocator_t *a, const khl_type_t *t, size_t n)
{
    khl_block_t *b = *bp;
    size_t keep = b && b->size > n ? b->size : n;
    uint32_t nb;
    if (!keep)
        return 0;
    if (!(nb = buckets_for(keep, 1, t)))
        return -1;
    if (b && nb <= b->n_buckets) {
        b->reserved = 1;
        return 0;
    }
    return rebuild(bp, alloc_of(a), t, nb, 1);
}

int khl_table_shrink(khl_block_t **bp, const khl_allocator_t *a, const khl_type_t *t)
{
    khl_block_t *b = *bp;
    uint32_t nb;
    if (!b)
        return 0;
    if (b->size == 0) {
        khl_table_destroy(bp, a, t);
        return 0;
    }
    nb = buckets_for(b->size, 0, t);
    return nb < b->n_buckets ? rebuild(bp, alloc_of(a), t, nb, 0) : 0;
}

void khl_table_destroy(khl_block_t **bp, const khl_allocator_t *a, const khl_type_t *t)
{
    storage_free(alloc_of(a), *bp, t, 1);
    *bp = NULL;
}

void khl_table_clear(khl_block_t *b, const khl_type_t *t)
{
    if (!b)
        return;
    memset(khl_ctrl_at(b, t->layout), KHL_CTRL_EMPTY, b->n_buckets);
    b->size = 0;
    b->growth_left = capacity(b->n_buckets, t);
    verified(b, t);
}

int khl_table_copy(khl_block_t **dst, const khl_allocator_t *a, const khl_block_t *src,
                   const khl_type_t *t)
{
    khl_block_t *from = (khl_block_t *)(uintptr_t)src;
    uint32_t nb;
    storage_t s;
    if (*dst && (*dst)->size)
        return -1;
    if (!src || !src->size)
        return 0;
    a = alloc_of(a);
    nb = src->n_buckets;
    if (storage_alloc(a, *dst, nb, t, &s) < 0)
        return -1;
    memcpy(s.ctrl, khl_ctrl_at(from, t->layout), nb);
    memcpy(s.pairs, khl_pairs_at(from, t->layout), (size_t)nb * t->pair_size);
    storage_free(a, *dst, t, 0);
    *dst = storage_install(&s, nb, src->size, t);
    (*dst)->growth_left = src->growth_left;
    (*dst)->reserved = src->reserved;
    verified(*dst, t);
    return 0;
}

/* --- the invariants (khl_table_impl.h) -------------------------------------- */

static int broken(const char *what, uint32_t i)
{
    fprintf(stderr, "khashlite: table invariant broken: %s (bucket %u)\n", what, i);
    return -1;
}

int khl_table_check(const khl_block_t *src, const khl_type_t *t)
{
    khl_block_t *b = (khl_block_t *)(uintptr_t)src;
    const unsigned char *ctrl;
    const char *pairs;
    uint32_t nb, i, full = 0, deleted = 0;
    if (!b)
        return 0;
    nb = b->n_buckets;
    ctrl = khl_ctrl_at(b, t->layout);
    pairs = khl_pairs_at(b, t->layout);
    if (!nb || (nb & (nb - 1)) || nb > KHL_MAX_BUCKETS)
        return broken("bucket count not a power of two", nb);
    if (b->shift != shift_for(nb))
        return broken("shift does not match the bucket count", nb);
    if ((uintptr_t)pairs % pairs_align(nb, t))
        return broken("pairs misaligned", 0);
    for (i = 0; i < nb; ++i) {
        unsigned char c = ctrl[i];
        if (c == KHL_CTRL_DELETED) {
            ++deleted;
        } else if (c < KHL_CTRL_EMPTY) {
            uint64_t hash = t->hash(pairs + (size_t)i * t->pair_size);
            khl_probe_t p = khl_probe_start(hash, b->shift, nb);
            ++full;
            if (c != khl_tag(hash))
                return broken("tag is not the key's", i);
            while (khl_probe_base(&p) != (i & ~(GROUP - 1))) {
                if (khl_group_empty(khl_group_load(ctrl + khl_probe_base(&p))) & khl_live_mask(nb))
                    return broken("an empty bucket earlier on the key's walk (I3)", i);
                if (!khl_probe_next(&p))
                    return broken("key outside its walk", i);
            }
        } else if (c != KHL_CTRL_EMPTY) {
            return broken("control byte neither tag, empty nor deleted", i);
        }
    }
    if (full != b->size)
        return broken("size is not the number of keys (I1)", b->size);
    if (nb <= GROUP && deleted)
        return broken("a one-group table holds a tombstone (I4)", deleted);
    if ((uint64_t)b->growth_left + full + deleted > capacity(nb, t) ||
        (nb <= GROUP && (uint64_t)b->growth_left + full + deleted != capacity(nb, t)))
        return broken("growth_left does not match capacity (I2)", b->growth_left);
    return 0;
}
