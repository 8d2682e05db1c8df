/* khl_table.c: the table operations that do not depend on the key type:
 * the block's sizes and layout, the growth policy, rebuilds (into new
 * storage, or in place to clear overflow bits), copy, clear, and the
 * invariant checker.  The generated code calls them with its khl_type_t and
 * with where the buckets are (khl_regions_t), so a rebuild works on any
 * storage its caller allocated; only the per-key work (hashing, comparing,
 * moving pairs) stays in the macros of khl_table_impl.h.
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
static int check(const khl_block_t *src, const khl_regions_t *r, const khl_type_t *t, int degenerate);

#ifdef KHL_DEBUG
/* A degenerate hash is slow, not broken: it does not abort. */
static void verified(const khl_block_t *b, const khl_regions_t *r, const khl_type_t *t)
{
    if (check(b, r, t, 0) < 0)
        abort();
}
#else
#define verified(b, r, t) ((void)0)
#endif

/* log2 of a bucket count, a power of two. */
static uint32_t log2_u32(uint32_t x)
{
    return khl_mask_lowest(x);
}

/* Keys a table of nb buckets may hold: I2. */
static uint32_t capacity(uint32_t nb, const khl_type_t *t)
{
    if (nb <= GROUP)
        return nb;
    return (uint32_t)(((uint64_t)nb * t->max_load) >> 16);
}

static uint32_t shift_for(uint32_t nb)
{
    return KHL_I_HOME_SHIFT - (nb > GROUP ? log2_u32(nb / GROUP) : 0u);
}

/* --- layout --------------------------------------------------------------- */

static size_t pairs_align(uint32_t nb, const khl_type_t *t)
{
    size_t a = t->pair_align;
    if (nb >= KHL_LARGE_BUCKETS && a < 64)
        a = 64;
    return a;
}

static size_t slots_bytes(uint32_t nb, const khl_type_t *t)
{
    return KHL_I_SLOTS_BYTES(nb, t->soa, t->pair_size, t->key_size, t->val_size, t->key_align);
}

size_t khl_table_region_bytes(size_t head, uint32_t nb, const khl_type_t *t)
{
    size_t a = pairs_align(nb, t), start = KHL_I_PAIRS_START(head, a);
    /* Slots this small cannot overflow 2^31 buckets on a 64-bit size_t:
     * skip the division (a put into a new table computes this 3 times). */
    const size_t never_overflows = SIZE_MAX / 4 / KHL_MAX_BUCKETS;
    /* soa slots take at most a pair each and one value's alignment. */
    if (t->pair_size > never_overflows && nb > (SIZE_MAX - start - t->key_align) / t->pair_size)
        return 0;
    return start + slots_bytes(nb, t);
}

/* Slot i's key in a table of nb buckets whose slots start at `slots`. */
static const char *key_at(const char *slots, uint32_t nb, uint32_t i, const khl_type_t *t)
{
    if (t->soa)
        return slots + KHL_I_SOA_KEYS(nb, t->val_size, t->key_align) + (size_t)i * t->key_size;
    return slots + (size_t)i * t->pair_size;
}

/* What follows a larger table's slots: the extension, the header, the
 * control and overflow bytes. */
static size_t large_tail(uint32_t nb)
{
    return sizeof(khl_block_ext_t) + KHL_I_HEADER_BYTES + khl_ctrl_bytes(nb);
}

/* A block.  One group: the header, the control bytes, the slots; the
 * control window of a tiny table reads 16 bytes from the control bytes.
 * More: the slots, then large_tail. */
static size_t block_bytes(uint32_t nb, const khl_type_t *t)
{
    size_t bytes;
    if (nb > GROUP) {
        bytes = khl_table_region_bytes(0, nb, t);
        return bytes && bytes <= SIZE_MAX - large_tail(nb) ? bytes + large_tail(nb) : 0;
    }
    bytes = khl_table_region_bytes(KHL_I_HEADER_BYTES + nb, nb, t);
    return bytes && bytes < KHL_I_HEADER_BYTES + GROUP ? KHL_I_HEADER_BYTES + GROUP : bytes;
}

/* --- storage -------------------------------------------------------------- */

/* The allocator is called by the inline code of khl_table_impl.h, never
 * from here: a table declared with its allocator (KHL_INIT_ALLOC) calls it
 * directly.  This file plans what to allocate, and builds the table in
 * what was. */

static void set_counters(khl_block_t *b, uint32_t nb, uint32_t size, int reserved, const khl_type_t *t)
{
    b->n_buckets = nb;
    b->size = size;
    if (nb > GROUP) {
        khl_ext(b)->growth_left = capacity(nb, t) - size;
        khl_ext(b)->shift = (uint8_t)shift_for(nb);
        khl_ext(b)->reserved = (uint8_t)reserved;
    }
}

/* The block for nb buckets.  -1 if its size does not fit. */
static int plan_block(khl_plan_t *p, uint32_t nb, const khl_type_t *t)
{
    p->nb = nb;
    if ((p->bytes = khl_small_bytes(nb, t)) != 0)
        return 1;
    p->bytes = block_bytes(nb, t);
    return p->bytes ? 1 : -1;
}

size_t khl_table_block_size(const khl_block_t *b, const khl_type_t *t)
{
    khl_plan_t p;
    if (!b)
        return 0;
    plan_block(&p, b->n_buckets, t);
    return p.bytes;
}

/* Empty control bytes, no overflow bit. */
static void reset_ctrl(unsigned char *ctrl, uint32_t nb)
{
    memset(ctrl, KHL_CTRL_EMPTY, nb);
    memset(khl_ovf_at(ctrl, nb), 0, khl_ctrl_bytes(nb) - nb);
}

void khl_table_build(khl_block_t *b, unsigned char *ctrl, char *pairs, size_t window,
                     const khl_block_t *src, const khl_regions_t *from, int rebuild,
                     const khl_plan_t *p, const khl_type_t *t)
{
    uint32_t nb = p->nb, size = src ? src->size : 0u;   /* read first: src may be b */
    khl_regions_t to;
    to.ctrl = ctrl;
    to.pairs = pairs;
    to.n_buckets = nb;
    to.shift = shift_for(nb);
    /* A tiny table's window reads past its control bytes: every byte of it
     * gets a defined value, so no tool sees an uninitialised read. */
    if (nb < GROUP)
        memset(ctrl + nb, 0xFF, (window < GROUP ? GROUP : window) - nb);
    reset_ctrl(ctrl, nb);
    set_counters(b, nb, size, p->reserved, t);
    if (src) {
        if (!rebuild) {
            khl_buckets_copy(&to, from, nb, t);
            if (nb > GROUP) {
                khl_ext(b)->growth_left = khl_ext(src)->growth_left;
                khl_ext(b)->reserved = khl_ext(src)->reserved;
            }
        } else if (nb <= GROUP && nb >= from->n_buckets &&
                   (nb <= t->scan_buckets || from->n_buckets > t->scan_buckets)) {
            /* One group into one group: a key's tag does not depend on the
             * size and any bucket of the group is its place, so the keys
             * keep their buckets.  Not out of a scanned table into a
             * matched one: its keys have no tags (I1). */
            khl_buckets_copy(&to, from, from->n_buckets, t);
        } else {
            t->move(&to, from);
        }
    }
    verified(b, &to, t);
}

/* A larger table's header: after nb buckets' slots from `slots` and the
 * extension. */
static khl_block_t *header_after(char *slots, uint32_t nb, const khl_type_t *t)
{
    return (khl_block_t *)(void *)(slots + slots_bytes(nb, t) + sizeof(khl_block_ext_t));
}

/* Where the header of a larger table's block goes in mem: after the slots,
 * which start at the first address there aligned for them (pad bytes in)
 * and which it records (khl_large_slots, khl_single_base). */
static khl_block_t *large_header(void *mem, size_t pad, uint32_t nb, const khl_type_t *t)
{
    char *slots = (char *)mem + pad;
    khl_block_t *b = header_after(slots, nb, t);
    khl_ext(b)->slots = (size_t)((char *)b - slots);
    khl_ext(b)->pad = (uint16_t)pad;
    return b;
}

/* The block: a one-group table's header at the allocation's start, a
 * larger one's after its slots. */
khl_block_t *khl_table_build_block(void *mem, const khl_plan_t *p, const khl_block_t *src,
                                   int rebuild, const khl_type_t *t)
{
    uint32_t nb = p->nb;
    khl_block_t *b;
    char *pairs;
    size_t window;
    khl_regions_t from;
    if (src)
        from = khl_single_regions((khl_block_t *)(uintptr_t)src, t->pair_align);
    if (nb > GROUP) {
        b = large_header(mem, khl_pad_to(mem, pairs_align(nb, t)), nb, t);
        pairs = khl_large_slots(b);
        window = khl_ctrl_bytes(nb);
    } else {
        b = (khl_block_t *)mem;
        pairs = khl_pairs_after(khl_single_ctrl(b), nb, pairs_align(nb, t));
        window = (size_t)(pairs + slots_bytes(nb, t) - (char *)khl_single_ctrl(b));
    }
    khl_table_build(b, khl_single_ctrl(b), pairs, window, src, src ? &from : NULL, rebuild, p, t);
    return b;
}

size_t khl_table_resize_from(const khl_block_t *b, const khl_plan_t *p, const khl_type_t *t)
{
    size_t bytes;
    if (b->n_buckets <= GROUP || p->nb <= b->n_buckets)
        return 0;
    bytes = khl_table_block_size(b, t);
    return bytes >= KHL_RESIZE_BYTES ? bytes : 0;
}

/* Moves n slots' worth of an array of `size`-byte items from `from` to `to`
 * (to >= from: the larger block keeps them further on). */
static void move_up(char *to, const char *from, uint32_t n, size_t size)
{
    memmove(to, from, (size_t)n * size);
}

/* The resized allocation holds the old block byte for byte: its slots
 * where they were (old_pad bytes in), its header and control bytes after
 * them.  Those move past the larger block's slots, which end beyond the
 * old block (its slots take twice the bytes); the slots stay where the new
 * address aligns them as the old one did (mremap keeps an address's offset
 * in its page), a soa table's keys move up past the larger value array;
 * the new buckets are empty, and the keys, still in their old buckets, are
 * spread by the in-place rehash, which treats them as placed for another
 * geometry. */
khl_block_t *khl_table_spread(void *mem, uint32_t old_nb, size_t old_pad, const khl_plan_t *p,
                              const khl_type_t *t)
{
    uint32_t nb = p->nb;
    size_t pad = khl_pad_to(mem, pairs_align(nb, t));
    char *from = (char *)mem + old_pad, *to = (char *)mem + pad;
    khl_block_t *old = header_after(from, old_nb, t), *b = header_after(to, nb, t);
    uint32_t size = old->size;
    khl_regions_t r;
    /* The control bytes first: the new header may fall on the old ones
     * (a block of 1-byte keys), never on the slots. */
    memmove(khl_single_ctrl(b), khl_single_ctrl(old), old_nb);
    large_header(mem, pad, nb, t);
    if (pad != old_pad)
        memmove(to, from, slots_bytes(old_nb, t));
    if (t->soa)
        move_up(to + KHL_I_SOA_KEYS(nb, t->val_size, t->key_align),
                to + KHL_I_SOA_KEYS(old_nb, t->val_size, t->key_align), old_nb, t->key_size);
    memset(khl_single_ctrl(b) + old_nb, KHL_CTRL_EMPTY, nb - old_nb);
    set_counters(b, nb, size, p->reserved, t);
    r = khl_single_regions(b, t->pair_align);
    t->rehash(&r, old_nb);
    verified(b, &r, t);
    return b;
}

/* --- the growth policy ------------------------------------------------------ */

/* Same size, overflow bits cleared: never allocates. */
static void rehash_in_place(khl_block_t *b, const khl_regions_t *r, const khl_type_t *t)
{
    t->rehash(r, b->n_buckets);
    khl_ext(b)->growth_left = capacity(b->n_buckets, t) - b->size;
    verified(b, r, t);
}

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

/* The empty buckets of a table of more than one group that its deletions
 * have not given back (I2): those of groups with an overflow bit.  Such a
 * group was full when a key passed it, so its empty buckets were freed
 * since; they wait for the rebuild that clears the bit (boost's drift rule:
 * otherwise a table churned at a steady size would never be rebuilt, and
 * its overflow bits would pile up). */
static uint32_t stale_buckets(const khl_block_t *b, const khl_regions_t *r)
{
    uint32_t nb = b->n_buckets, stale = 0, g;
    const unsigned char *ovf = khl_ovf_at(r->ctrl, nb);
    for (g = 0; g < nb / GROUP; ++g)
        if (ovf[g])
            stale += khl_mask_count(khl_group_empty(khl_group_load(r->ctrl + g * GROUP)));
    return stale;
}

/* A put found no growth left.  A table of more than one group first counts
 * back what its deletions gave (its spare capacity less stale_buckets): if
 * that is a bucket a group or more, it goes on, so the count (a pass over
 * the groups) comes at most once per groups' worth of puts.  Else it is rebuilt
 * in place (its overflow bits cleared, deletions' buckets given back) when
 * its live keys fill at most half the capacity, or (a reserved block) leave
 * 1/16 of the buckets spare; else it grows: 2x below one group (an
 * interpreter object with 5 to 8 instance variables keeps a block of 8
 * buckets, not 16), 4x from there to 128 buckets (small tables reach their
 * size in fewer rebuilds), 2x above.  Each costs O(n) and comes at most once
 * per n/16 puts into empty buckets. */
int khl_table_grow_plan(khl_block_t *b, const khl_regions_t *r, const khl_type_t *t, khl_plan_t *p)
{
    uint32_t nb, cap, spare;
    p->reserved = 0;
    if (!b)
        return plan_block(p, t->first_buckets, t);
    nb = b->n_buckets;
    cap = capacity(nb, t);
    spare = cap - b->size;
    /* Without a group's worth of deletions since the last rebuild (a table
     * only ever put into, the usual growth) there is nothing to count. */
    if (nb > GROUP && spare >= nb / GROUP) {
        uint32_t stale = stale_buckets(b, r);
        if (stale <= spare - nb / GROUP) {
            khl_ext(b)->growth_left = spare - stale;
            return 0;
        }
    }
    if (nb > GROUP && (b->size < cap / 2 || (khl_ext(b)->reserved && spare >= nb / GROUP))) {
        rehash_in_place(b, r, t);
        return 0;
    }
    if (nb >= KHL_MAX_BUCKETS)
        return -1;
    /* A full group holds 16 keys, but 64 buckets hold fewer than 17 below a
     * KHL_MAX_LOAD of 17/64: the growth doubles on until the put that asked
     * for it fits, or growth_left would wrap and the table never grow again. */
    for (nb = nb >= GROUP && nb < 128 ? nb * 4 : nb * 2; capacity(nb, t) <= b->size; nb *= 2)
        if (nb >= KHL_MAX_BUCKETS)
            return -1;
    return plan_block(p, nb, t);
}

/* A table that holds up to n keys with 1/16 of its buckets to spare never
 * needs to grow while marked reserved: when deletions exhaust its capacity,
 * khl_table_grow_plan finds that much to free in place.  That is reserve's
 * promise. */
int khl_table_reserve_plan(khl_block_t *b, size_t n, const khl_type_t *t, khl_plan_t *p)
{
    size_t keep = b && b->size > n ? b->size : n;
    uint32_t nb;
    p->reserved = 1;
    if (!keep)
        return 0;
    if (!(nb = buckets_for(keep, 1, t)))
        return -1;
    if (b && nb <= b->n_buckets) {
        /* A one-group table may fill: it needs no flag to keep the promise. */
        if (b->n_buckets > GROUP)
            khl_ext(b)->reserved = 1;
        return 0;
    }
    return plan_block(p, nb, t);
}

int khl_table_shrink_plan(const khl_block_t *b, const khl_type_t *t, khl_plan_t *p)
{
    uint32_t nb;
    p->reserved = 0;
    if (!b)
        return 0;
    nb = buckets_for(b->size, 0, t);
    return nb < b->n_buckets ? plan_block(p, nb, t) : 0;
}

int khl_table_copy_plan(const khl_block_t *dst, const khl_block_t *src, const khl_type_t *t,
                        khl_plan_t *p)
{
    p->reserved = 0;
    if (dst && dst->size)
        return -1;
    if (!src || !src->size)
        return 0;
    return plan_block(p, src->n_buckets, t);
}

void khl_table_clear(khl_block_t *b, const khl_regions_t *r, const khl_type_t *t)
{
    reset_ctrl(r->ctrl, b->n_buckets);
    b->size = 0;
    if (b->n_buckets > GROUP)
        khl_ext(b)->growth_left = capacity(b->n_buckets, t);
    verified(b, r, t);
}

/* --- the invariants (khl_table_impl.h) -------------------------------------- */

static int broken(const char *what, uint32_t i)
{
    fprintf(stderr, "khashlite: table invariant broken: %s (bucket %u)\n", what, i);
    return -1;
}

/* More keys than a group holds, all of one tag and one home group: a hash
 * whose top bits do not depend on the key (one declared mixed that is not).
 * A hash that is mixed does that with probability (1/(128 * groups))^16,
 * under 2^-128, and a one-group table never holds that many. */
#define DEGENERATE_KEYS GROUP

/* The invariants; with `degenerate`, a degenerate hash too. */
static int check(const khl_block_t *src, const khl_regions_t *r, const khl_type_t *t, int degenerate)
{
    khl_block_t *b = (khl_block_t *)(uintptr_t)src;
    unsigned char *ctrl;
    const unsigned char *ovf;
    const char *pairs;
    uint32_t nb, i, n, full = 0, shift, home = 0, alike = 0;
    unsigned char tag = 0;
    if (!b)
        return 0;
    nb = b->n_buckets;
    if (!nb || (nb & (nb - 1)) || nb > KHL_MAX_BUCKETS)
        return broken("bucket count not a power of two", nb);
    ctrl = r->ctrl;
    ovf = khl_ovf_at(ctrl, nb);
    pairs = r->pairs;
    shift = khl_shift_of(b);
    if (shift != shift_for(nb))
        return broken("shift does not match the bucket count", nb);
    if ((uintptr_t)pairs % pairs_align(nb, t))
        return broken("slots misaligned", 0);
    if (t->first_bytes != block_bytes(t->first_buckets, t))
        return broken("the type's first block size (KHL_I_SMALL_BYTES) is not khl_table.c's", 0);
    for (n = 1; n <= GROUP; n *= 2)
        if (t->small_bytes[log2_u32(n)] != block_bytes(n, t))
            return broken("the type's one-group block sizes (KHL_I_SMALL_BYTES) are not khl_table.c's", n);
    for (i = 0; i < nb; ++i) {
        unsigned char c = ctrl[i];
        if (c < KHL_CTRL_DELETED) {
            uint64_t hash;
            khl_probe_t p;
            ++full;
            if (nb <= t->scan_buckets)
                continue;   /* scanned: any byte but the marks is full (I1) */
            hash = t->hash(key_at(pairs, nb, i, t), nb);
            p = khl_probe_start(hash, shift, nb);
            if (c != khl_tag_in(hash, nb))
                return broken("tag is not the key's", i);
            if (full == 1) {
                tag = c;
                home = p.base;
            }
            alike += c == tag && p.base == home;
            while (khl_probe_base(&p) != (i & ~(GROUP - 1))) {
                if (!(ovf[khl_probe_base(&p) / GROUP] & khl_ovf_bit(c)))
                    return broken("a group earlier on the key's walk lacks its overflow bit (I3)", i);
                if (!khl_probe_next(&p))
                    return broken("key outside its walk", i);
            }
        } else if (c != KHL_CTRL_EMPTY) {
            return broken("control byte neither tag nor empty", i);
        }
    }
    if (full != b->size)
        return broken("size is not the number of keys (I1)", b->size);
    if ((uint64_t)khl_growth_left(b) + full > capacity(nb, t))
        return broken("growth_left does not match capacity (I2)", khl_growth_left(b));
    if (degenerate && full > DEGENERATE_KEYS && alike == full) {
        fprintf(stderr, "khashlite: degenerate hash: all %u keys have one tag and one home "
                        "group (a hash declared mixed whose top bits are not?)\n", full);
        return -1;
    }
    return 0;
}

int khl_table_check(const khl_block_t *src, const khl_regions_t *r, const khl_type_t *t)
{
    return check(src, r, t, 1);
}
