/* khl_table_impl.h: the internals of khashlite.h's tables: the block and its
 * invariants, the probe walk, and the macros that generate a table type.
 * Not API: names here may change in any release.  Read khashlite.h first.
 *
 * ---------------------------------------------------------------------------
 * The block
 *
 *     one group (n <= 16):  [khl_block_t 8 B][ctrl: n B][pad][slots]
 *     more (n >= 32):       [pad][slots][khl_block_ext_t 16 B][khl_block_t 8 B][ctrl: n B][overflow: n/16 B]
 *
 * The block pointer is the header's address: the control bytes are always
 * 8 bytes past it.  A one-group table's header {n_buckets, size} is all its
 * counters (it has no overflow bits, may fill, and its shift is constant), so 4
 * keys of 4 bytes with 4 values of 8 fit 64 bytes and 8 of them 112, what
 * mruby 3.1's iv_tbl asks for in two allocations.  A larger table keeps
 * growth_left, shift, the reserve flag and where its slots are just before
 * the header, and its slots first: a growth through the allocator's resize
 * (realloc, mremap) then finds them where they were, and moves only the
 * control bytes, a sixtieth of a block of 64-byte pairs, where slots after
 * them had to move by the control bytes' growth.
 *
 * Slots are pairs, the key then the value (boost's shape: a hit reads one
 * control group and one pair), or, for a map whose pair would carry padding
 * (a 4-byte key beside an 8-byte value), the values then the keys, each
 * array aligned for its type (khl_soa_: one mechanism, chosen per type at
 * compile time).  Values first: a value's address depends on its bucket
 * alone.  Slots are aligned for their type in memory (not only within the
 * block: the hook promises max_align_t, khl_max_align_t here; an
 * over-aligned type gets slack), and in tables of 256 buckets or more to 64
 * bytes, so a group's first slots share its first line.
 *
 * Buckets form aligned groups of 16 (khl_group.h).  A one-group table is
 * found without a probe loop: up to khl_scanb buckets (4, or 8 where the
 * first block holds 8 and the hash is not declared indirect:
 * KHL_I_SCAN_LIMIT) by scanning its occupied keys (no hash: a put marks its
 * bucket KHL_CTRL_UNTAGGED, and the keys are tagged when the table grows
 * past the scan), up to 16 by one group match whose 16-byte window reads
 * past the last control byte into the slots, masked off with
 * khl_small_mask.  Tiny tables thus cost no sentinel bytes.  A put takes the
 * highest free bucket of a group, so a tiny table's first slots (the ones
 * inside the window) are written last: a slot store followed by the next
 * put's window load would defeat store-to-load forwarding.  Larger tables'
 * lookups are functions of their own, not forced inline: forced into every
 * caller, their probe loop made it save registers the one-group paths never
 * need; left to the compiler, a loop over one large table still inlines them
 * (mruby's bm_ao_render: 458.7 M instructions so, 459.7 M as calls).
 *
 * A larger table's tag is the hash's top byte (0xFE and 0xFF, the marks,
 * folded onto 0xFD), a one-group table's its top 7 bits (khl_tag_in); the
 * log2(groups) bits below the top byte select the home group (shift = 56 -
 * log2(groups)).  A larger table first remixes a hash that is one multiply
 * (khl_remix, khl_hashin_<name>): the table's own product of an undeclared
 * hash, or khl_hash_u32/u64's.  Groups are probed by triangular steps (g, g+1, g+3, g+6,
 * ...), which visit every group of a power-of-two table once; every walk is
 * bounded by the group count.  A table of more than one group keeps an
 * overflow byte per group (khl_ovf_at): bit c is set when a put of a key of
 * class c (the low 3 bits of its tag) passes the group full, and a lookup
 * stops at the first group without its key's bit.
 *
 * Invariants (khl_table_check verifies them):
 *   I1  size = number of full buckets: control byte not KHL_CTRL_EMPTY,
 *       the key's tag for the table's size, or in a table of at most
 *       khl_scanb buckets any byte but the marks (KHL_CTRL_UNTAGGED
 *       where a put left it).
 *   I2  growth_left = capacity(n_buckets) - size in a one-group table, at
 *       most that in larger ones, where capacity(n) = n for one-group
 *       tables (they may fill: a walk cannot pass their only group) and n *
 *       KHL_MAX_LOAD otherwise.  A larger table's deletions do not add to
 *       it; when it runs out, the empty buckets of groups without an
 *       overflow bit are counted back, and those of groups with one (freed
 *       since a key was pushed past the group) wait for the rebuild that
 *       clears the bit (boost's drift rule, counted late).
 *   I3  A key in group G: every group before G on its walk has the key's
 *       overflow bit.  So a lookup stops at the first group without it.
 *   I4  No bucket is marked deleted (the mark only exists inside an
 *       in-place rehash): a deletion empties its bucket.
 * When a put finds no growth left, the block is rehashed in place (no
 * allocation; overflow bits cleared) if the live keys fill at most half the
 * capacity, and grows otherwise: a churned table then runs at most half
 * full, and rebuilds stay amortised O(1) per put.  A block sized by
 * khl_reserve(n) holds n keys with 1/16 of its buckets to spare and is
 * rehashed in place as long as that spare is free, which keeps reserve's
 * promise (never allocate below n keys) at an amortised cost of 16 buckets
 * per put.
 */
#ifndef KHL_TABLE_IMPL_H
#define KHL_TABLE_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef KHL_DEBUG
#include <stdlib.h>
#endif

#include "khl_group.h"
#include "khl_port.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The alignment every allocator hook gives (it promises max_align_t's, at
 * least this), spelled so that a C99 translation unit can include us. */
typedef union khl_max_align {
    long double ld;
    long long ll;
    double d;
    void *p;
    void (*fp)(void);
} khl_max_align_t;

/* KHL_MAX_LOAD's range check.  Any spelling of a floating (or integer)
 * constant may be compared in a constant expression: 0.5, .5, 5e-1, 0.5f,
 * (0.5).  C++ takes the comparison in a static_assert.  C11 does not (6.6p6:
 * an integer constant expression takes a floating constant only as the
 * operand of a cast), so with gcc and clang the comparison is folded into an
 * enumerator, their pedantic warning for the folding silenced, and asserted
 * from there; another C compiler divides the type's max_load by it, and a
 * division by zero makes that initializer not constant. */
#define KHL_I_MAX_LOAD_OK ((KHL_MAX_LOAD) >= 0.25 && (KHL_MAX_LOAD) <= 0.9375)
#define KHL_I_MAX_LOAD_MSG "KHL_MAX_LOAD must be a constant from 0.25 to 0.9375"
#if defined(__cplusplus)
#define KHL_I_MAX_LOAD_CHECK(name) static_assert(KHL_I_MAX_LOAD_OK, KHL_I_MAX_LOAD_MSG);
#define KHL_I_MAX_LOAD_DIVISOR 1
#elif defined(__GNUC__) || defined(__clang__)
#define KHL_I_MAX_LOAD_CHECK(name)                                                  \
    _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wpedantic\"") \
    enum { khl_max_load_ok_##name = KHL_I_MAX_LOAD_OK };                            \
    _Pragma("GCC diagnostic pop")                                                   \
    _Static_assert(khl_max_load_ok_##name, KHL_I_MAX_LOAD_MSG);
#define KHL_I_MAX_LOAD_DIVISOR 1
#else
#define KHL_I_MAX_LOAD_CHECK(name)
#define KHL_I_MAX_LOAD_DIVISOR (KHL_I_MAX_LOAD_OK)
#endif

#define KHL_MAX_BUCKETS 0x80000000u
#define KHL_I_CACHE_LINE 64u
#define KHL_LARGE_BUCKETS 256u      /* from here slots start on a cache line */
#define KHL_FIRST_BLOCK_BYTES 88u   /* a first block fits one 96-byte glibc chunk */
/* From this block size, a table on an allocator that resizes grows through
 * it (khl_table_resize_from).  Below it, a new block in the caches and a move
 * cost less than the in-place spread's swaps, and blocks come from an
 * allocator's heap or classes, where a resize copies anyway. */
#ifndef KHL_RESIZE_BYTES
#define KHL_RESIZE_BYTES (64u * 1024u)
#endif

/* Where slots aligned to `align` start after `head` bytes of an allocation
 * aligned for max_align_t (for the worst address).  Macros so that a type's
 * first block size (KHL_I_FIRST_BUCKETS) is a constant expression;
 * khl_table.c uses them at run time. */
#define KHL_I_ALIGN_UP(x, a) (((x) + (a) - 1u) & ~((size_t)(a) - 1u))
/* A larger table's tag is the hash's top byte; the group bits are just
 * below it.  A table's shift brings them down to bit 4 (a group's first
 * bucket is 16 times its number): KHL_I_HOME_SHIFT for one group, one less
 * for each doubling of groups. */
#define KHL_I_TAG_SHIFT 56u
#define KHL_I_HOME_SHIFT (KHL_I_TAG_SHIFT - 4u)
#define KHL_I_PAIRS_START(head, align)                                              \
    ((align) <= KHL_ALIGNOF(khl_max_align_t)                                        \
         ? KHL_I_ALIGN_UP(head, align)                                              \
         : KHL_I_ALIGN_UP(head, KHL_ALIGNOF(khl_max_align_t)) + (align) - KHL_ALIGNOF(khl_max_align_t))
/* Where (soa) the keys start after nb values, and the bytes of nb slots:
 * pairs, or (soa) nb values then nb keys aligned. */
#define KHL_I_SOA_KEYS(nb, val_size, key_align) KHL_I_ALIGN_UP((size_t)(nb) * (val_size), key_align)
#define KHL_I_SLOTS_BYTES(nb, soa, pair_size, key_size, val_size, key_align)        \
    ((soa) ? KHL_I_SOA_KEYS(nb, val_size, key_align) + (size_t)(nb) * (key_size)    \
           : (size_t)(nb) * (pair_size))
#define KHL_I_SLOTS_BYTES_OF(name, nb)                                              \
    KHL_I_SLOTS_BYTES(nb, khl_soa_##name, sizeof(khl_pairt_##name), sizeof(khl_keyt_##name), \
                      sizeof(khl_valt_##name), KHL_ALIGNOF(khl_keyt_##name))
/* A one-group single block: header, control bytes, slots; at least the 16
 * bytes a tiny table's control window reads after the header. */
#define KHL_I_SMALL_BYTES_(nb, name)                                                \
    (KHL_I_PAIRS_START(KHL_I_HEADER_BYTES + (nb), KHL_ALIGNOF(khl_pairt_##name))    \
     + KHL_I_SLOTS_BYTES_OF(name, nb))
#define KHL_I_SMALL_BYTES(nb, name)                                                 \
    (KHL_I_SMALL_BYTES_(nb, name) < KHL_I_HEADER_BYTES + 16u ? KHL_I_HEADER_BYTES + 16u \
                                                            : KHL_I_SMALL_BYTES_(nb, name))
/* A table's first block: the most buckets (up to one group) that fit
 * KHL_FIRST_BLOCK_BYTES: 8 pairs of 8 bytes, 4 of 16 (or 4 keys of 4 bytes
 * and 4 values of 8), 1 of 64. */
#define KHL_I_FIRST_BUCKETS(name)                                                   \
    (KHL_I_SMALL_BYTES(16u, name) <= KHL_FIRST_BLOCK_BYTES ? 16u                    \
     : KHL_I_SMALL_BYTES(8u, name) <= KHL_FIRST_BLOCK_BYTES ? 8u                    \
     : KHL_I_SMALL_BYTES(4u, name) <= KHL_FIRST_BLOCK_BYTES ? 4u                    \
     : KHL_I_SMALL_BYTES(2u, name) <= KHL_FIRST_BLOCK_BYTES ? 2u : 1u)

/* The block's header: all a one-group table needs.  A one-group table
 * has no overflow bytes and may fill, so its growth_left is n_buckets -
 * size; its shift is KHL_I_HOME_SHIFT; its slots start at the first address
 * aligned for them after the control bytes.  Eight bytes, so that 4 keys of
 * 4 bytes with 4 values of 8 fit 64 bytes and 8 of them 112. */
typedef struct khl_block {
    uint32_t n_buckets;      /* a power of two */
    uint32_t size;           /* live keys */
} khl_block_t;
#define KHL_I_HEADER_BYTES 8u

/* What a table of more than one group adds, in the 16 bytes just before its
 * header (its slots come before them): the control bytes stay at a constant
 * offset from the block pointer whatever the table's size.  `slots` saves a
 * lookup the arithmetic of where they start (5 instructions of a hit's 90,
 * and the registers they held: a 200k-key u32 table's hit 90 -> 85, miss
 * 82 -> 77). */
typedef struct khl_block_ext {
    size_t   slots;          /* bytes from slot 0 to the block pointer */
    uint32_t growth_left;    /* puts into empty buckets before a rebuild (I2) */
    uint8_t  shift;          /* KHL_I_HOME_SHIFT - log2(groups) */
    uint8_t  reserved;       /* 1: sized by khl_reserve, whose promise khl_table_grow keeps */
    uint16_t pad;            /* bytes from the start of the slots' allocation to
                              * slot 0, for this address */
} khl_block_ext_t;

static inline khl_block_ext_t *khl_ext(const khl_block_t *b)
{
    return (khl_block_ext_t *)(void *)(uintptr_t)b - 1;
}

/* Where a table's buckets are: what a rebuild moves keys between. */
typedef struct khl_regions {
    unsigned char *ctrl;
    char *pairs;             /* the slots */
    uint32_t n_buckets, shift;
} khl_regions_t;

/* What the type-independent code (khl_table.c) needs of a table type.  Its
 * slots are pairs {key, value}, or (soa, for maps whose pair would be
 * padded) an array of values then an array of keys: the 4 bytes of padding
 * of a 4-byte key beside an 8-byte value are a quarter of a pair.  Values
 * first, so that a value's address does not depend on the bucket count.
 * The rebuild loops are reached through pointers, so that one compiled
 * khl_table.c serves every type: a rebuild makes one such call, whose
 * per-key loop is the type's own code (callgrind, 20,008 moves of 40-key
 * tables: 1,669 instructions each, of which the indirect call costs one
 * load more than a direct one would). */
typedef struct khl_type {
    size_t pair_size, pair_align;   /* pair_align: the slots' alignment */
    size_t key_size, val_size, key_align;
    int soa;
    uint32_t max_load;          /* KHL_MAX_LOAD in 1/65536 */
    uint32_t first_buckets;     /* KHL_I_FIRST_BUCKETS */
    uint32_t scan_buckets;      /* khl_scanb: tables of at most this many are scanned */
    /* Puts every key of `from` into `to`, which is empty and large enough. */
    void (*move)(const khl_regions_t *to, const khl_regions_t *from);
    /* Buckets [0, n_placed) hold keys placed for another geometry (or under
     * stale overflow bits), the rest are empty: places them for this one,
     * overflow bits anew, without allocating. */
    void (*rehash)(const khl_regions_t *r, uint32_t n_placed);
    /* The key's hash as a table of nb buckets uses it: khl_table_check. */
    uint64_t (*hash)(const void *key, uint32_t nb);
    size_t first_bytes;         /* KHL_I_SMALL_BYTES of first_buckets: the first block */
    /* KHL_I_SMALL_BYTES of 1, 2, 4, 8 and 16 buckets: the one-group blocks,
     * constants so that a small table's growth and free compute no layout
     * (0: computed by khl_table.c). */
    size_t small_bytes[5];
} khl_type_t;

/* The constant bytes of a one-group block of nb buckets (t->small_bytes),
 * or 0: more than one group, or a type that leaves them to khl_table.c. */
static inline size_t khl_small_bytes(uint32_t nb, const khl_type_t *t)
{
    return nb <= KHL_GROUP_WIDTH ? t->small_bytes[khl_mask_lowest(nb)] : 0;
}

/* --- type-independent operations (khl_table.c) ------------------------------ */

/* What a rebuild, reserve, shrink or copy is to allocate: a block of
 * `bytes` for nb buckets; reserved is the new block's flag.  A storage
 * other than the block (a benchmark's split layouts) sizes its own
 * allocations from nb. */
typedef struct khl_plan {
    size_t bytes;
    uint32_t nb;
    int reserved;
} khl_plan_t;

/* The plans: 1, allocate and build; 0, done without allocating (nothing to
 * do, or rehashed in place: r is where b's buckets are, NULL without b); -1,
 * impossible (too large; for a copy, dst not empty), the table unchanged. */
int    khl_table_grow_plan(khl_block_t *b, const khl_regions_t *r, const khl_type_t *t, khl_plan_t *p);
int    khl_table_reserve_plan(khl_block_t *b, size_t n, const khl_type_t *t, khl_plan_t *p);
int    khl_table_shrink_plan(const khl_block_t *b, const khl_type_t *t, khl_plan_t *p);
int    khl_table_copy_plan(const khl_block_t *dst, const khl_block_t *src, const khl_type_t *t,
                           khl_plan_t *p);
/* Grows a block in place: mem is its allocation resized (by the allocator's
 * resize) to p->bytes for p->nb buckets, its first bytes as the block of
 * old_nb buckets was, whose slots started old_pad bytes in.  Moves the
 * header and control bytes to where the larger block keeps them (and the
 * slots, where the new address aligns them otherwise, or soa keys) and
 * spreads the keys in place.  Returns the block. */
khl_block_t *khl_table_spread(void *mem, uint32_t old_nb, size_t old_pad, const khl_plan_t *p,
                              const khl_type_t *t);
/* The bytes of b's block (b not NULL) when a plan for b is carried out by
 * resizing it (growth of a block of more than one group, of at least
 * KHL_RESIZE_BYTES), else 0. */
size_t khl_table_resize_from(const khl_block_t *b, const khl_plan_t *p, const khl_type_t *t);
/* Builds a table of p->nb buckets in storage its caller laid out: b the
 * header (its counters are set here), ctrl and pairs where its control
 * bytes and slots go, `window` the bytes from ctrl that a tiny table's
 * control window may read (every one gets a defined value).  Takes the keys
 * of src, whose buckets are `from` (NULL: none): moved on a rebuild (src is
 * the table being replaced; it may be b itself), copied otherwise. */
void   khl_table_build(khl_block_t *b, unsigned char *ctrl, char *pairs, size_t window,
                       const khl_block_t *src, const khl_regions_t *from, int rebuild,
                       const khl_plan_t *p, const khl_type_t *t);
/* khl_table_build into a block: mem, of p->bytes.  Returns the block. */
khl_block_t *khl_table_build_block(void *mem, const khl_plan_t *p, const khl_block_t *src,
                                   int rebuild, const khl_type_t *t);
void   khl_table_clear(khl_block_t *b, const khl_regions_t *r, const khl_type_t *t);
size_t khl_table_block_size(const khl_block_t *b, const khl_type_t *t);
/* Bytes of an allocation whose first `head` bytes come before nb slots,
 * for the worst address the allocator may return; 0 when that does not fit
 * in size_t. */
size_t khl_table_region_bytes(size_t head, uint32_t nb, const khl_type_t *t);
/* Returns 0, or prints the first broken invariant on stderr and returns -1. */
int    khl_table_check(const khl_block_t *b, const khl_regions_t *r, const khl_type_t *t);

/* Bytes from address end to the next multiple of align (a power of two):
 * where pairs start after the control bytes. */
static inline uint16_t khl_pad_to(const void *end, size_t align)
{
    return (uint16_t)((0u - (uintptr_t)end) & (align - 1u));
}

/* What a put's out-of-line part returns: the table's block (it may have
 * moved), the key's bucket, and put's *ret.  Returned, not written through
 * the handle, so that the inline part's handle never has its address taken:
 * an interpreter's handle, made on the stack from an object's table
 * pointer, then stays in registers (mruby's instance-variable write: 4
 * instructions a call). */
typedef struct khl_putres {
    khl_block_t *b;
    khl_iter_t i;
    int ret;
} khl_putres_t;

/* From byte 16 - nb: a first block's control window, nb empty bytes then
 * bytes past the buckets, which every reader masks off (0).  Not all of it
 * EMPTY: gcc built an all-ones window with pcmpeqd and blended the tag in
 * with four instructions more than a loaded constant takes. */
static const unsigned char khl_first_window[2 * KHL_GROUP_WIDTH] = {
    KHL_CTRL_EMPTY, KHL_CTRL_EMPTY, KHL_CTRL_EMPTY, KHL_CTRL_EMPTY, KHL_CTRL_EMPTY, KHL_CTRL_EMPTY,
    KHL_CTRL_EMPTY, KHL_CTRL_EMPTY, KHL_CTRL_EMPTY, KHL_CTRL_EMPTY, KHL_CTRL_EMPTY, KHL_CTRL_EMPTY,
    KHL_CTRL_EMPTY, KHL_CTRL_EMPTY, KHL_CTRL_EMPTY, KHL_CTRL_EMPTY,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

/* A table's first block laid out in mem (t->first_bytes)
 * holding one key whose tag is `tag`, in its highest bucket (where any put
 * into an empty group goes), inline: it is the first put of every tiny
 * table, and with t a constant its control window is one store.  As
 * khl_table.c lays out any block: every byte after the header defined (a
 * tiny table's control window reads into the slots), the other control
 * bytes empty.  A one-group table's header is all its counters (khl_check
 * holds them to khl_table.c's). */
static inline khl_block_t *khl_first_block(void *mem, const khl_type_t *t, unsigned char tag)
{
    khl_block_t *b = (khl_block_t *)mem;
    unsigned char *ctrl = (unsigned char *)(b + 1);
    uint32_t nb = t->first_buckets;
    /* The control window's 16 bytes defined (it may reach into the slots);
     * every other byte is written before it is read.  One store, from which
     * the next put's window load forwards: pieces of it would make that load
     * wait for them to reach the cache. */
    khl_group_store(ctrl, khl_group_with(khl_group_load(khl_first_window + KHL_GROUP_WIDTH - nb),
                                         nb - 1u, tag));
    b->n_buckets = nb;
    b->size = 1;
    return b;
}

static inline const khl_allocator_t *khl_allocator_of(const khl_allocator_t *a)
{
    return a ? a : &khl_libc_allocator;
}

/* --- the hot path's view of a block ------------------------------------------ */

/* The slots' alignment in a table of nb buckets: from KHL_LARGE_BUCKETS on,
 * a cache line, so that a group's first slots share its first line. */
static inline size_t khl_pairs_align(uint32_t nb, size_t align)
{
    return nb >= KHL_LARGE_BUCKETS && align < KHL_I_CACHE_LINE ? KHL_I_CACHE_LINE : align;
}

/* A single block's slots: the first address aligned for them after the
 * control bytes (computed, not stored: the header stays 8 bytes). */
static inline char *khl_pairs_after(unsigned char *ctrl, uint32_t nb, size_t align)
{
    unsigned char *end = ctrl + nb;
    return (char *)end + khl_pad_to(end, align);
}

/* The slots of a single block of more than one group: its extension keeps
 * how far before the header they start. */
static inline char *khl_large_slots(khl_block_t *b)
{
    return (char *)b - khl_ext(b)->slots;
}


/* Where a table of nb buckets' key array starts in soa slots. */
static inline char *khl_keys_soa(char *slots, uint32_t nb, size_t val_size, size_t key_align)
{
    return slots + KHL_I_SOA_KEYS(nb, val_size, key_align);
}

/* Buckets a one-group table has, as a mask of its group: nb <= 16. */
static inline uint32_t khl_small_mask(uint32_t nb)
{
    return (1u << nb) - 1u;
}

/* Live buckets of the group a table of nb buckets reads first. */
static inline uint32_t khl_live_mask(uint32_t nb)
{
    return nb >= KHL_GROUP_WIDTH ? 0xffffu : khl_small_mask(nb);
}

/* A one-group put's free buckets in the group it loaded: its empty ones,
 * since no bucket is marked deleted outside a rehash (I4), and, its tags
 * being 7 bits (khl_tag_small), the bytes with the high bit set: one
 * movemask, where the compare with KHL_CTRL_EMPTY a larger table's put
 * needs (khl_group_empty) takes two instructions more (a life of 8 u32
 * keys 1,029 -> 1,021 instructions).  Callers mask off a tiny table's bytes
 * past its last bucket. */
static inline uint32_t khl_group_small_free(khl_group_t w)
{
    return khl_group_high(w);
}

/* The counters a table of more than one group keeps in its extension; a
 * one-group table's follow from its header. */
static inline uint32_t khl_shift_of(const khl_block_t *b)
{
    return b->n_buckets > KHL_GROUP_WIDTH ? khl_ext(b)->shift : KHL_I_HOME_SHIFT;
}

static inline uint32_t khl_growth_left(const khl_block_t *b)
{
    return b->n_buckets > KHL_GROUP_WIDTH ? khl_ext(b)->growth_left : b->n_buckets - b->size;
}

/* Tags.  A larger table's is the hash's top byte, the marks (0xFE, 0xFF)
 * folded onto KHL_CTRL_TAG_MAX: 254 values, so that a miss compares half as
 * many keys as with 7 bits, each a pair's line to fetch from memory in a
 * table larger than the caches (docs/design.md, "Tags of 8 bits").  Lookups
 * broadcast the top byte and fold it there (khl_group_hash_tags), and read
 * the tag's low 3 bits, the key's overflow class, back from the broadcast
 * (khl_group_tag_of): no scalar tag stays live across a walk, which in
 * mruby's method search cost a register.  A one-group table's tag is the
 * top 7 bits: its group is in the cache, and its empty buckets are then the
 * bytes with the high bit set (khl_group_small_free), as its puts find
 * them.  A rebuild tags every key for the table it builds (khl_tag_in). */
static inline unsigned char khl_tag_top(uint64_t hash)
{
    return (unsigned char)(hash >> KHL_I_TAG_SHIFT);
}

static inline unsigned char khl_tag_large(uint64_t hash)
{
    return khl_ctrl_fold(khl_tag_top(hash));
}

/* khl_tag_large(hash) in every byte, folded after the broadcast. */
static inline khl_tags_t khl_tags_large(uint64_t hash)
{
    return khl_group_hash_tags(khl_tag_top(hash));
}

static inline unsigned char khl_tag_small(uint64_t hash)
{
    return (unsigned char)(hash >> (KHL_I_TAG_SHIFT + 1u));
}

static inline unsigned char khl_tag_in(uint64_t hash, uint32_t nb)
{
    return nb > KHL_GROUP_WIDTH ? khl_tag_large(hash) : khl_tag_small(hash);
}

/* What a put writes into a scanned table's control byte (I1): full, no
 * tag, so that no put into a table of at most khl_scanb buckets
 * hashes.  16-character string keys hashed by FNV-1a, a life of 1-4 keys:
 * 1.35-1.61 of a flat array's time with the tag, 1.01-1.27 without.  It
 * is also khl_tag_small(0): a growth that stays scanned is passed hash 0
 * (khl_putgrow). */
#define KHL_CTRL_UNTAGGED ((unsigned char)0x00)

/* The walk over groups every lookup, insertion and rebuild uses, in
 * buckets: base is the group's first bucket, mask keeps a base in the table
 * (n_buckets - 16 from two groups on, 0 for one), so a step is an add and an
 * and, with no multiply by the group width. */
typedef struct khl_probe {
    uint32_t base, step, mask;
} khl_probe_t;

/* A table's group mask in buckets: nb - 16, or 0 for a one-group table. */
static inline uint32_t khl_probe_mask(uint32_t nb)
{
    return (nb - 1u) & ~(KHL_GROUP_WIDTH - 1u);
}

/* The home group's first bucket.  hash >> shift is the tag over the group
 * bits from bit 4 up; the mask keeps the group bits alone (a shift, an and). */
static inline uint32_t khl_probe_home(uint64_t hash, uint32_t shift, uint32_t mask)
{
    return (uint32_t)(hash >> shift) & mask;
}

static inline khl_probe_t khl_probe_start(uint64_t hash, uint32_t shift, uint32_t nb)
{
    khl_probe_t p;
    p.mask = khl_probe_mask(nb);
    p.base = khl_probe_home(hash, shift, p.mask);
    p.step = 0;
    return p;
}

/* Moves to the next group, by triangular steps; 0 once every group has been
 * visited. */
static inline int khl_probe_next(khl_probe_t *p)
{
    if (p->step == p->mask)
        return 0;
    p->step += KHL_GROUP_WIDTH;
    p->base = (p->base + p->step) & p->mask;
    return 1;
}

static inline uint32_t khl_probe_base(const khl_probe_t *p)
{
    return p->base;
}

/* Writes control byte i through its group's whole window: a byte store
 * followed by the next query's 16-byte load of the window would defeat
 * store-to-load forwarding.  The byte comes broadcast (khl_group_tags, or
 * a larger table's key tag folded as a lookup folds it: khl_group_hash_tags,
 * where the scalar fold and a broadcast of its result took 2 instructions
 * more and a register in the rehash's loop). */
static inline void khl_ctrl_set_tags(unsigned char *ctrl, uint32_t i, khl_tags_t tags)
{
    uint32_t base = i & ~(KHL_GROUP_WIDTH - 1u);
    khl_group_store(ctrl + base, khl_group_with_tags(khl_group_load(ctrl + base), i - base, tags));
}

static inline void khl_ctrl_set(unsigned char *ctrl, uint32_t i, unsigned char c)
{
    khl_ctrl_set_tags(ctrl, i, khl_group_tags(c));
}

/* The overflow bytes of a table of more than one group: one per group,
 * after its control bytes (boost's overflow byte, kept apart so that a
 * group stays 16 buckets).  Bit c of a group's byte is set when a put of a
 * key of class c passed the group full; a key's class is the low 3 bits of
 * its tag (khl_ovf_bit).  A lookup stops at the first group without its
 * class's bit (I3): a miss ends in its home group unless a key of its class
 * was ever pushed past it, so most misses read one group, and a deletion
 * frees its bucket without a tombstone.  Bits are never cleared but by a
 * rebuild. */
static inline unsigned char *khl_ovf_at(unsigned char *ctrl, uint32_t nb)
{
    return ctrl + nb;
}

static inline unsigned khl_ovf_class(unsigned char tag)
{
    return tag & 7u;
}

static inline unsigned khl_ovf_bit(unsigned char tag)
{
    return 1u << khl_ovf_class(tag);
}

/* Whether a key of tag `tag` was ever pushed past the group at base.  A
 * shift of the byte, not a mask built from the tag: a hit, which never gets
 * here, then pays nothing for it before its loop. */
static inline unsigned khl_ovf_passed(const unsigned char *ctrl, uint32_t nb, uint32_t base,
                                      unsigned char tag)
{
    return (unsigned)(ctrl[nb + base / KHL_GROUP_WIDTH] >> khl_ovf_class(tag)) & 1u;
}

/* The control bytes of a table of nb buckets, with its overflow bytes. */
static inline uint32_t khl_ctrl_bytes(uint32_t nb)
{
    return nb > KHL_GROUP_WIDTH ? nb + nb / KHL_GROUP_WIDTH : nb;
}

/* From this many buckets (64 groups) a put stores its tag as one byte. */
#define KHL_I_BYTE_FILL_BUCKETS 1024u

/* Puts tag in empty bucket j of the group at gp, whose control bytes are w,
 * in a table of nb buckets: it uses up a larger table's growth (a one-group
 * table's follows from its size).  The group is stored whole, so that the
 * next load of it forwards from the store, unless the table has so many
 * groups that the next put or lookup seldom loads the same one: then a byte
 * store (a put into a reserved table of 200k u32 keys 105.7 -> 98.6
 * instructions, its key's making included).  Lives of n sequential u32
 * keys from empty, byte stores at every size against none: n = 100 (8
 * groups at the end) 7% longer, 200 8%, 400 1%, 800 (64 groups) 1.5%
 * shorter, 1,600 4%, 3,200 5-10% (docs/design.md, "The put's store"). */
static inline void khl_fill_in(khl_block_t *b, uint32_t nb, unsigned char *gp, khl_group_t w,
                               uint32_t j, khl_tags_t tags)
{
    if (nb > KHL_GROUP_WIDTH)
        khl_ext(b)->growth_left--;
    if (nb >= KHL_I_BYTE_FILL_BUCKETS)
        gp[j] = khl_group_tag_of(tags);
    else
        khl_group_store(gp, khl_group_with_tags(w, j, tags));
    b->size++;
}

/* The bucket of its group a key starts from, in a table of more than one
 * group: a put, a walk and a doubling take the first free bucket at or below
 * it, cyclically (khl_pick_free), and a lookup fetches its line early
 * (KHL_I_PREFETCH_HOME).  start_bits is the type's (khl_startbits_<name>):
 * where keys lie at most 16 B apart (four or more a line), 0, and every key
 * starts from the group's last bucket, so that keys gather on the group's
 * last line, the one fetched; further apart, 15, and a key starts from a
 * bucket of its own, named by the 4 hash bits under the group bits, whose
 * line is the one fetched (docs/design.md, "Which bucket of a group"). */
static inline uint32_t khl_start_off(uint64_t hash, uint32_t shift, uint32_t start_bits)
{
    return ((uint32_t)(hash >> shift) | ~start_bits) & (KHL_GROUP_WIDTH - 1u);
}

/* The free bucket of mask f (not 0) that a key of hash `hash` takes: the
 * first at or below its start, cyclically (the highest, for a type whose
 * keys start from the group's last bucket: a constant start_bits of 0 leaves
 * no more than the one instruction). */
static inline uint32_t khl_pick_free(uint32_t f, uint64_t hash, uint32_t shift, uint32_t start_bits)
{
    uint32_t below;
    if (!start_bits)
        return khl_mask_highest(f);
    below = f & ((2u << khl_start_off(hash, shift, start_bits)) - 1u);
    return khl_mask_highest(below ? below : f);
}

/* First free bucket on the walk of `hash`, the table having one; every full
 * group passed on the way gets the key's overflow bit (only a table of more
 * than one group has a walk that passes one).  During an in-place rehash a
 * bucket marked deleted (a key still to place) counts as free.  taken: NULL,
 * or the buckets a move into a new table has filled, a bit a bucket, 16 a
 * group, where the free ones are read instead of from the control bytes
 * (and the bucket returned is marked taken).  In its group, the bucket is
 * khl_pick_free's from the key's start (a one-group table's: its highest).
 * A free bucket in the first group is the likely case: without the hint gcc
 * laid it out of line, two instructions a key of a growth's move. */
static inline uint32_t khl_find_free(unsigned char *ctrl, uint32_t nb, uint32_t shift,
                                     uint64_t hash, uint16_t *taken, uint32_t start_bits)
{
    khl_probe_t p = khl_probe_start(hash, shift, nb);
    uint32_t live = khl_live_mask(nb);
    if (nb <= KHL_GROUP_WIDTH)
        start_bits = 0;
    for (;;) {
        uint32_t g = khl_probe_base(&p) / KHL_GROUP_WIDTH, f;
        f = (taken ? (uint32_t)(uint16_t)~taken[g] : khl_group_free(khl_group_load(ctrl + khl_probe_base(&p)))) &
            live;
        if (KHL_LIKELY(f)) {
            uint32_t j = khl_pick_free(f, hash, shift, start_bits);
            if (taken)
                taken[g] = (uint16_t)(taken[g] | 1u << j);
            return khl_probe_base(&p) + j;
        }
        khl_ovf_at(ctrl, nb)[g] |= (unsigned char)khl_ovf_bit(khl_tag_large(hash));
        khl_probe_next(&p);
    }
}

/* The most groups a move into a new table tracks in a bitmap on the stack
 * (KHL_MOVE_GROUPS * 2 bytes). */
#define KHL_MOVE_GROUPS 256u

/* Empties bucket i, which holds a key.  No tombstone: lookups end by the
 * overflow bits (I3).  A larger table's deletion leaves growth_left as it
 * is: the buckets deletions give back are counted when the growth runs out
 * (khl_table_grow_plan), so an erase stores nothing that it must first read
 * from the table.  Taking the bucket back here unless its group had the
 * key's overflow bit made an erase of 2M u64 keys with 56-byte values 16-51
 * ns dearer than a hit of the same keys; without, 1-4 (docs/design.md).  A
 * larger table's bucket is cleared by a byte store (1M random u32 keys: an
 * erase 36 -> 30 ns against the whole group's load, blend and store); a
 * one-group table's whole window is stored, since its next lookup loads
 * that same window and a byte store would defeat store-to-load forwarding.  Forced inline: when
 * the table code around it changed shape, gcc -O3 stopped inlining it into
 * a benchmark's erase loop (peers, 20k u32 keys: 8 instructions more an
 * erase). */
static inline KHL_HOT_INLINE void khl_erase_at(khl_block_t *b, unsigned char *ctrl, uint32_t i)
{
    uint32_t nb = b->n_buckets;
    if (nb > KHL_GROUP_WIDTH)
        ctrl[i] = KHL_CTRL_EMPTY;
    else
        khl_ctrl_set(ctrl, i, KHL_CTRL_EMPTY);
    b->size--;
}

/* The walk over occupied buckets, a group of 16 at a time, that khl_next,
 * the foreach macros and a rebuild share.  The state is the group at *base
 * and the mask of its occupied buckets not visited yet.  khl_walk_from sets
 * it up for the buckets at or after i (i < nb); khl_walk_step finds the
 * next one (*i, and 1; 0 after the last), loading the next groups as masks
 * run out.  A bucket freed since its group was loaded (a foreach body may
 * delete keys it has not reached) is skipped.  The answer is a flag apart
 * from the bucket, not nb for the end: a cursor's caller then tests no
 * bucket against nb a key (the collector's walk over mruby's method tables:
 * 2 instructions of 15 a key). */
static inline void khl_walk_from(const unsigned char *ctrl, uint32_t nb, uint32_t i,
                                 uint32_t *base, uint32_t *mask)
{
    *base = i & ~(KHL_GROUP_WIDTH - 1u);
    *mask = khl_group_full(khl_group_load(ctrl + *base)) & khl_live_mask(nb) &
            (0xffffu << (i - *base));
}

static inline int khl_walk_step(const unsigned char *ctrl, uint32_t nb, uint32_t *base,
                                uint32_t *mask, uint32_t *i)
{
    for (;;) {
        while (*mask) {
            uint32_t k = *base + khl_mask_lowest(*mask);
            *mask &= *mask - 1u;
            if (ctrl[k] != KHL_CTRL_EMPTY) {
                *i = k;
                return 1;
            }
        }
        *base += KHL_GROUP_WIDTH;
        if (*base >= nb)
            return 0;
        *mask = khl_group_full(khl_group_load(ctrl + *base));
    }
}

/* First occupied bucket at or after i, or nb. */
static inline uint32_t khl_scan_full(const unsigned char *ctrl, uint32_t nb, uint32_t i)
{
    uint32_t base, mask, k;
    if (i >= nb)
        return nb;
    khl_walk_from(ctrl, nb, i, &base, &mask);
    return khl_walk_step(ctrl, nb, &base, &mask, &k) ? k : nb;
}

/* The public cursor (khashlite.h) is this walk with its state in a struct:
 * the control bytes and bucket count are copied in, so that a step reloads
 * nothing that the loop body's stores might have changed. */
static inline khl_cursor_t khl_cursor_start(const unsigned char *ctrl, uint32_t nb)
{
    khl_cursor_t c;
    c.k = 0;
    c.nb = nb;
    c.ctrl = ctrl;
    c.base = 0;
    c.mask = 0;
    if (nb)
        khl_walk_from(ctrl, nb, 0, &c.base, &c.mask);
    return c;
}

static inline int khl_cursor_step(khl_cursor_t *c)
{
    return khl_walk_step(c->ctrl, c->nb, &c->base, &c->mask, &c->k);
}

/* --- storage ------------------------------------------------------------------ */

/* Where a table keeps its buckets, and how its storage is allocated and
 * freed, is a storage: a prefix S whose functions the generated code calls
 * (KHL_I_TYPE takes it).  The library has one, khl_single, the one block;
 * a benchmark defines others over the same table code (bench/peers/
 * khl_split.h: the two- and three-allocation baselines).  A storage S
 * defines, all inline:
 *   S_ctrl(b)                      the control bytes
 *   S_slots(b, align)              the slots (pairs aligned to align)
 *   S_largeslots(b, nb)            the slots of a table of more than one group
 *   S_smallslots(b, ctrl, nb, align)   those of a one-group table
 *   S_regions(b, align)            both, as a rebuild takes them
 *   S_carry_out(planned, p, bp, from, t, fn, ud, resizes)
 *                                  allocates what a plan asks, builds the
 *                                  table into it (khl_table_build), frees
 *                                  the old storage: 0, or -1 unchanged
 *   S_allocation(b, t, i, &bytes)  b's i-th allocation and its bytes, NULL
 *                                  past the last: what a destroy frees (the
 *                                  allocator's calls stay in the generated
 *                                  code, which loads fn and ud only then)
 *   S_size(b, t)                   the bytes of b's storage (0: NULL)
 *   S_small_inline                 an enum constant: 1 if a put lays out a
 *                                  one-group block itself, the first
 *                                  (khl_first_block) and a full one's
 *                                  larger one (khl_grow_small), 0 if
 *                                  it carries out a plan as any growth does */

static inline KHL_HOT_INLINE unsigned char *khl_single_ctrl(khl_block_t *b)
{
    return (unsigned char *)(b + 1);
}

static inline KHL_HOT_INLINE char *khl_single_largeslots(khl_block_t *b, uint32_t nb)
{
    (void)nb;
    return khl_large_slots(b);
}

/* The block starts at b for one group, aligned for max_align_t, so the
 * slots' offset follows from nb alone (align a constant: no address
 * arithmetic). */
static inline KHL_HOT_INLINE char *khl_single_smallslots(khl_block_t *b, unsigned char *ctrl, uint32_t nb,
                                          size_t align)
{
    if (align <= KHL_ALIGNOF(khl_max_align_t))
        return (char *)b + KHL_I_ALIGN_UP(KHL_I_HEADER_BYTES + nb, align);
    return khl_pairs_after(ctrl, nb, align);
}

static inline KHL_HOT_INLINE char *khl_single_slots(khl_block_t *b, size_t align)
{
    uint32_t nb = b->n_buckets;
    if (nb > KHL_GROUP_WIDTH)
        return khl_large_slots(b);
    return khl_pairs_after(khl_single_ctrl(b), nb, align);
}

static inline khl_regions_t khl_single_regions(khl_block_t *b, size_t align)
{
    khl_regions_t r;
    r.ctrl = khl_single_ctrl(b);
    r.pairs = khl_single_slots(b, align);
    r.n_buckets = b->n_buckets;
    r.shift = khl_shift_of(b);
    return r;
}

enum { khl_single_small_inline = 1 };

/* Copies buckets [0, n) of `from` to the same buckets of `to` (at least n
 * buckets): control bytes and slots, no hashing; all the overflow bytes
 * when both have n buckets (a copy).  Inline: where the type and n are
 * constants (khl_grow_small) the copies are a few moves, not calls. */
static inline KHL_HOT_INLINE void khl_buckets_copy(const khl_regions_t *to, const khl_regions_t *from,
                                                   uint32_t n, const khl_type_t *t)
{
    memcpy(to->ctrl, from->ctrl, khl_ctrl_bytes(n));
    if (!t->soa) {
        memcpy(to->pairs, from->pairs, (size_t)n * t->pair_size);
        return;
    }
    memcpy(to->pairs, from->pairs, (size_t)n * t->val_size);
    memcpy(to->pairs + KHL_I_SOA_KEYS(to->n_buckets, t->val_size, t->key_align),
           from->pairs + KHL_I_SOA_KEYS(from->n_buckets, t->val_size, t->key_align),
           (size_t)n * t->key_size);
}

/* A put's growth of src, a full single block of onb < 16 buckets, into
 * mem, the block of twice its buckets (khl_small_bytes): the keys keep
 * their buckets, the new ones are empty, as khl_table_build_block would
 * make it without a plan.  Inline in the type's khl_putgrow, where the
 * type, and for a scanned table onb, are constants, so that its copies are
 * a few moves: the growth at an mruby object's fifth variable took 228
 * instructions besides the allocator's 257 as a library call (its memcpy
 * and memset calls), 94 so (callgrind, object_churn.rb). */
static inline KHL_HOT_INLINE khl_block_t *khl_grow_small(void *mem, khl_block_t *src, uint32_t onb,
                                                         const khl_type_t *t)
{
    khl_block_t *b = (khl_block_t *)mem;
    khl_regions_t from, to;
    from.ctrl = khl_single_ctrl(src);
    from.pairs = khl_single_smallslots(src, from.ctrl, onb, t->pair_align);
    from.n_buckets = onb;
    from.shift = KHL_I_HOME_SHIFT;
    to.ctrl = khl_single_ctrl(b);
    to.pairs = khl_single_smallslots(b, to.ctrl, 2u * onb, t->pair_align);
    to.n_buckets = 2u * onb;
    to.shift = KHL_I_HOME_SHIFT;
    /* The new buckets empty, and the window past them defined, before the
     * slots, which may start inside that window, are written. */
    memset(to.ctrl, KHL_CTRL_EMPTY, KHL_GROUP_WIDTH);
    b->n_buckets = 2u * onb;
    b->size = src->size;
    khl_buckets_copy(&to, &from, onb, t);
    return b;
}

/* KHL_DEBUG: the block of a put's growth, checked once the key is in it
 * (the keys of a scanned table are tagged after khl_grow_small). */
static inline void khl_grow_small_done(khl_block_t *b, const khl_type_t *t)
{
#ifdef KHL_DEBUG
    khl_regions_t r = khl_single_regions(b, t->pair_align);
    if (khl_table_check(b, &r, t) < 0)
        abort();
#else
    (void)b;
    (void)t;
#endif
}

/* Where a block's allocation starts: a table of more than one group's
 * slots come first, after the bytes that align them. */
static inline void *khl_single_base(khl_block_t *b)
{
    return b->n_buckets > KHL_GROUP_WIDTH ? (void *)(khl_large_slots(b) - khl_ext(b)->pad) : (void *)b;
}

/* A block's bytes: a one-group block's are a constant (the first block's
 * tested first: most tables never grow). */
static inline size_t khl_single_bytes(const khl_block_t *b, const khl_type_t *t)
{
    uint32_t nb = b->n_buckets;
    size_t small;
    if (nb == t->first_buckets)
        return t->first_bytes;
    small = khl_small_bytes(nb, t);
    return small ? small : khl_table_block_size(b, t);
}

static inline size_t khl_single_size(const khl_block_t *b, const khl_type_t *t)
{
    return khl_table_block_size(b, t);
}

/* The block is b's only allocation. */
static inline void *khl_single_allocation(khl_block_t *b, const khl_type_t *t, unsigned i, size_t *bytes)
{
    if (i)
        return NULL;
    *bytes = khl_single_bytes(b, t);
    return khl_single_base(b);
}

/* The new block allocated before anything changes, the old one freed after
 * the build; or, on an allocator that resizes, a growing block resized and
 * spread in place (a failed resize leaves the old block as it was). */
static inline int khl_single_carry_out(int planned, khl_plan_t *p, khl_block_t **bp,
                                       const khl_block_t *from, const khl_type_t *t,
                                       khl_allocf fn, void *ud, int resizes)
{
    khl_block_t *old = *bp;
    size_t old_bytes;
    void *mem;
    if (planned <= 0)
        return planned;
    /* A table without a block has nothing to resize.  Tested here, not in
     * resize_from: gcc then sees that the header below is never read
     * through NULL (-Warray-bounds, where a caller passes none). */
    if (resizes && old && from == old && (old_bytes = khl_table_resize_from(old, p, t)) != 0) {
        uint32_t old_nb = old->n_buckets;     /* the resize may free old */
        size_t old_pad = khl_ext(old)->pad;
        if (!(mem = fn(ud, khl_single_base(old), old_bytes, p->bytes)))
            return -1;
        *bp = khl_table_spread(mem, old_nb, old_pad, p, t);
        return 0;
    }
    if (!(mem = fn(ud, NULL, 0, p->bytes)))
        return -1;
    *bp = khl_table_build_block(mem, p, from, from && from == old, t);
    if (old)
        fn(ud, khl_single_base(old), khl_table_block_size(old, t), 0);
    return 0;
}

/* khl_val, khl_getp and the value foreach on a set: a compile-time error
 * that says why. */
#define KHL_I_REQUIRE_MAP_MSG "khl_val / khl_getp / khl_foreach: this table is a set, it has keys only"
#ifdef __cplusplus
}

template <bool IsMap> constexpr int khl_require_map()
{
    static_assert(IsMap, KHL_I_REQUIRE_MAP_MSG);
    return 0;
}
#define KHL_I_REQUIRE_MAP(name) ((void)khl_require_map<khl_ismap_##name != 0>())
#else
#define KHL_I_REQUIRE_MAP(name)                                                     \
    ((void)sizeof(struct {                                                          \
        _Static_assert(khl_ismap_##name, KHL_I_REQUIRE_MAP_MSG);                    \
        int khl_unused_;                                                            \
    }))
#endif

/* ------------------------------------------------------------------------------ */
/* Type generation.  Generated names are khl_<op>_<name> with one-word ops, so   */
/* no two tables' names and no library name can collide.                         */

#define KHL_I_PAIR_1(name, khkey_t, khval_t)                                        \
    typedef struct khl_pairt_##name { khkey_t key; khval_t val; } khl_pairt_##name;
#define KHL_I_PAIR_0(name, khkey_t, khval_t)                                        \
    typedef struct khl_pairt_##name { khkey_t key; } khl_pairt_##name;

/* Slot i's value, and copying or swapping it: a set has none (khl_val and
 * khl_getp do not compile on one). */
#define KHL_I_VALP_1(name, slots, nb, i)                                            \
    ((void)(nb), khl_soa_##name ? (khl_valt_##name *)(void *)(slots) + (i)          \
                                : &((khl_pairt_##name *)(void *)(slots))[i].val)
#define KHL_I_VALP_0(name, slots, nb, i) ((void)(slots), (void)(nb), (void)(i), (khl_valt_##name *)NULL)
#define KHL_I_VALCOPY_1(name, to, tnb, j, from, fnb, i)                             \
    *khl_valp_##name(to, tnb, j) = *khl_valp_##name(from, fnb, i);
#define KHL_I_VALCOPY_0(name, to, tnb, j, from, fnb, i) (void)(tnb); (void)(fnb);
#define KHL_I_VALSWAP_1(name, s, nb, i, j)                                          \
    {                                                                               \
        khl_valt_##name tv_ = *khl_valp_##name(s, nb, i);                           \
        *khl_valp_##name(s, nb, i) = *khl_valp_##name(s, nb, j);                    \
        *khl_valp_##name(s, nb, j) = tv_;                                           \
    }
#define KHL_I_VALSWAP_0(name, s, nb, i, j) (void)(nb);

/* A table type: its handle, where its storage S keeps the buckets, its
 * slots, and the inline accessors the public macros use (KHL_I_IMPL
 * generates the operations). */
#define KHL_I_TYPE(name, khkey_t, khval_t, is_map, S, alloc_t, alloc_m)             \
    KHL_I_TYPE_HANDLE(name, khkey_t, khval_t, is_map, alloc_t, alloc_m)             \
    KHL_I_TYPE_STORAGE(name, S)                                                     \
    KHL_I_TYPE_SLOTS(name, khkey_t, khval_t, is_map)                                \
    KHL_I_TYPE_ACCESS(name, khkey_t, khval_t)

/* The key, value and pair types, the handle, and the type's constants. */
#define KHL_I_TYPE_HANDLE(name, khkey_t, khval_t, is_map, alloc_t, alloc_m)         \
    KHL_STATIC_ASSERT((is_map) == 0 || (is_map) == 1, "is_map must be 0 or 1");     \
    typedef khkey_t khl_keyt_##name;                                                \
    typedef khval_t khl_valt_##name;                                                \
    KHL_I_PAIR_##is_map(name, khkey_t, khval_t)                                     \
    KHL_STATIC_ASSERT(KHL_ALIGNOF(khl_pairt_##name) <= 4096,                        \
                      "khashlite: key or value types aligned beyond 4096 bytes");   \
    /* A one-group block's size is a constant computed without checks: 16 */      \
    /* pairs and their header must fit size_t (a 32-bit one too). */               \
    KHL_STATIC_ASSERT(sizeof(khl_pairt_##name) < ((size_t)1 << 30)                  \
                          && sizeof(khl_pairt_##name) <= SIZE_MAX / 32u,            \
                      "khashlite: a key and its value take 1 GiB or more "          \
                      "(128 MiB or more where size_t has 32 bits)");                \
    typedef struct khl_t_##name {                                                   \
        khl_block_t *b;                                                             \
        alloc_t alloc_m;                                                            \
    } khl_t_##name;                                                                 \
    enum { khl_ismap_##name = (is_map),                                             \
           khl_soa_##name = (is_map) && sizeof(khl_pairt_##name) != sizeof(khkey_t) + sizeof(khval_t) }; \
    /* How far apart keys lie; over 16 B apart they start from a bucket of */       \
    /* their own (khl_start_off). */                                                \
    enum { khl_keystride_##name =                                                   \
               khl_soa_##name ? sizeof(khkey_t) : sizeof(khl_pairt_##name) };       \
    enum { khl_startbits_##name = khl_keystride_##name > 16u ? KHL_GROUP_WIDTH - 1u : 0u };

/* The type's names for its storage's functions (see "storage" above), so
 * that the operations, which a KHL_DEFINE generates apart from the type,
 * need not be told the storage.  The hot ones are forced inline, as are
 * khl_single's: left to gcc -O3, the extra level of inlining changed its
 * choices in a benchmark's erase loop. */
#define KHL_I_TYPE_STORAGE(name, S)                                                 \
    enum { khl_smallinline_##name = S##_small_inline };                             \
    static inline KHL_UNUSED KHL_HOT_INLINE unsigned char *khl_ctrlof_##name(       \
        khl_block_t *b)                                                             \
    {                                                                               \
        return S##_ctrl(b);                                                         \
    }                                                                               \
    static inline KHL_UNUSED KHL_HOT_INLINE char *khl_slots_##name(khl_block_t *b)  \
    {                                                                               \
        return S##_slots(b, KHL_ALIGNOF(khl_pairt_##name));                         \
    }                                                                               \
    static inline KHL_UNUSED KHL_HOT_INLINE char *khl_largeslots_##name(            \
        khl_block_t *b, uint32_t nb)                                                \
    {                                                                               \
        return S##_largeslots(b, nb);                                               \
    }                                                                               \
    static inline KHL_UNUSED KHL_HOT_INLINE char *khl_smallslots_##name(            \
        khl_block_t *b, unsigned char *ctrl, uint32_t nb)                           \
    {                                                                               \
        return S##_smallslots(b, ctrl, nb, KHL_ALIGNOF(khl_pairt_##name));          \
    }                                                                               \
    static inline KHL_UNUSED khl_regions_t khl_regionsof_##name(khl_block_t *b)     \
    {                                                                               \
        return S##_regions(b, KHL_ALIGNOF(khl_pairt_##name));                       \
    }                                                                               \
    static inline KHL_UNUSED int khl_carryout_##name(int planned, khl_plan_t *p, khl_block_t **bp, \
        const khl_block_t *from, const khl_type_t *t, khl_allocf fn, void *ud, int resizes) \
    {                                                                               \
        return S##_carry_out(planned, p, bp, from, t, fn, ud, resizes);             \
    }                                                                               \
    static inline KHL_UNUSED void *khl_allocation_##name(khl_block_t *b, const khl_type_t *t, \
                                                         unsigned i, size_t *bytes) \
    {                                                                               \
        return S##_allocation(b, t, i, bytes);                                      \
    }                                                                               \
    static inline KHL_UNUSED size_t khl_bytesof_##name(const khl_block_t *b, const khl_type_t *t) \
    {                                                                               \
        return S##_size(b, t);                                                      \
    }

/* Slot i's key and value, and copying or swapping slots.  Slots are pairs,
 * or (khl_soa_: a map whose pair would be padded) values then keys: chosen
 * per type at compile time. */
#define KHL_I_TYPE_SLOTS(name, khkey_t, khval_t, is_map)                            \
    static inline KHL_UNUSED khkey_t *khl_keyp_##name(char *slots, uint32_t nb, uint32_t i) \
    {                                                                               \
        return khl_soa_##name                                                       \
                   ? (khkey_t *)(void *)khl_keys_soa(slots, nb, sizeof(khval_t), KHL_ALIGNOF(khkey_t)) + i \
                   : &((khl_pairt_##name *)(void *)slots)[i].key;                   \
    }                                                                               \
    static inline KHL_UNUSED khval_t *khl_valp_##name(char *slots, uint32_t nb, uint32_t i) \
    {                                                                               \
        return KHL_I_VALP_##is_map(name, slots, nb, i);                             \
    }                                                                               \
    static inline KHL_UNUSED void khl_slotcopy_##name(char *to, uint32_t tnb, uint32_t j, \
                                                      char *from, uint32_t fnb, uint32_t i) \
    {                                                                               \
        if (khl_soa_##name) {                                                       \
            *khl_keyp_##name(to, tnb, j) = *khl_keyp_##name(from, fnb, i);          \
            KHL_I_VALCOPY_##is_map(name, to, tnb, j, from, fnb, i)                  \
        } else {                                                                    \
            ((khl_pairt_##name *)(void *)to)[j] = ((khl_pairt_##name *)(void *)from)[i]; \
        }                                                                           \
    }                                                                               \
    static inline KHL_UNUSED void khl_slotswap_##name(char *s, uint32_t nb, uint32_t i, uint32_t j) \
    {                                                                               \
        if (khl_soa_##name) {                                                       \
            khkey_t tk_ = *khl_keyp_##name(s, nb, i);                               \
            *khl_keyp_##name(s, nb, i) = *khl_keyp_##name(s, nb, j);                \
            *khl_keyp_##name(s, nb, j) = tk_;                                       \
            KHL_I_VALSWAP_##is_map(name, s, nb, i, j)                               \
        } else {                                                                    \
            khl_pairt_##name tp_ = ((khl_pairt_##name *)(void *)s)[i];              \
            ((khl_pairt_##name *)(void *)s)[i] = ((khl_pairt_##name *)(void *)s)[j]; \
            ((khl_pairt_##name *)(void *)s)[j] = tp_;                               \
        }                                                                           \
    }

/* The public accessors: khl_key, khl_val, khl_exist, khl_next, the cursor,
 * khl_size and khl_n_buckets. */
#define KHL_I_TYPE_ACCESS(name, khkey_t, khval_t)                                   \
    static inline KHL_UNUSED khkey_t *khl_keyat_##name(const khl_t_##name *h, khl_iter_t k) \
    {                                                                               \
        return khl_keyp_##name(khl_slots_##name(h->b), h->b->n_buckets, k);         \
    }                                                                               \
    static inline KHL_UNUSED khval_t *khl_valat_##name(const khl_t_##name *h, khl_iter_t k) \
    {                                                                               \
        return khl_valp_##name(khl_slots_##name(h->b), h->b->n_buckets, k);         \
    }                                                                               \
    static inline KHL_UNUSED int khl_exist_##name(const khl_t_##name *h, khl_iter_t k) \
    {                                                                               \
        return khl_ctrlof_##name(h->b)[k] != KHL_CTRL_EMPTY;                        \
    }                                                                               \
    static inline KHL_UNUSED khl_iter_t khl_next_##name(const khl_t_##name *h, khl_iter_t k) \
    {                                                                               \
        return h->b ? khl_scan_full(khl_ctrlof_##name(h->b), h->b->n_buckets, k) : 0u; \
    }                                                                               \
    static inline KHL_UNUSED khl_cursor_t khl_cursorof_##name(const khl_t_##name *h) \
    {                                                                               \
        return khl_cursor_start(h->b ? khl_ctrlof_##name(h->b) : NULL,              \
                                h->b ? h->b->n_buckets : 0u);                       \
    }                                                                               \
    static inline KHL_UNUSED int khl_cursornext_##name(const khl_t_##name *h, khl_cursor_t *c) \
    {                                                                               \
        (void)h;                                                                    \
        return khl_cursor_step(c);                                                  \
    }                                                                               \
    static inline KHL_UNUSED khl_iter_t khl_nbuckets_##name(const khl_t_##name *h)  \
    {                                                                               \
        return h->b ? h->b->n_buckets : 0u;                                         \
    }                                                                               \
    static inline KHL_UNUSED khl_iter_t khl_size_##name(const khl_t_##name *h)      \
    {                                                                               \
        return h->b ? h->b->size : 0u;                                              \
    }

#define KHL_I_PROTOTYPES(name)                                                      \
    void khl_init_##name(khl_t_##name *h, const khl_allocator_t *a);                \
    void khl_destroy_##name(khl_t_##name *h);                                       \
    void khl_clear_##name(khl_t_##name *h);                                         \
    int khl_reserve_##name(khl_t_##name *h, size_t n);                              \
    int khl_shrink_##name(khl_t_##name *h);                                         \
    int khl_copy_##name(khl_t_##name *dst, const khl_t_##name *src);                \
    size_t khl_blocksize_##name(const khl_t_##name *h);                             \
    int khl_check_##name(const khl_t_##name *h);                                    \
    khl_iter_t khl_get_##name(const khl_t_##name *h, khl_keyt_##name key);          \
    khl_valt_##name *khl_getp_##name(const khl_t_##name *h, khl_keyt_##name key);   \
    khl_iter_t khl_put_##name(khl_t_##name *h, khl_keyt_##name key, int *ret);      \
    void khl_delat_##name(khl_t_##name *h, khl_iter_t k);                           \
    int khl_delkey_##name(khl_t_##name *h, khl_keyt_##name key);

/* A hook table's allocator as the generated functions see it: the handle's
 * second word a (NULL: libc); their table is always named h. */
#define KHL_I_HOOK_FN khl_allocator_of(h->a)->fn
#define KHL_I_HOOK_UD khl_allocator_of(h->a)->ud
#define KHL_I_HOOK_RESIZES khl_allocator_of(h->a)->resizes

/* The candidates of a group match: FOUND with i = base + each bit of the
 * mask m (a variable it consumes) whose key equals `key`, lowest first. */
#define KHL_I_CANDIDATES(name, eq_fn, slots, nb, base, m, key, FOUND)               \
    while (m) {                                                                     \
        uint32_t i = (base) + khl_mask_lowest(m);                                   \
        if (KHL_LIKELY(eq_fn(*khl_keyp_##name(slots, nb, i), (key)))) { FOUND }     \
        m &= m - 1u;                                                                \
    }

/* The lookup of a one-group table (nb <= 16): one group match, no walk.
 * Declares ctrl_, w_ (its control bytes) and slots_; runs FOUND with i =
 * the bucket holding key, or falls through. */
#define KHL_I_SMALL_LOOKUP(name, eq_fn, b, nb, hash, key, FOUND)                    \
    unsigned char *ctrl_ = khl_ctrlof_##name(b);                                    \
    khl_group_t w_ = khl_group_load(ctrl_);                                         \
    char *slots_ = khl_smallslots_##name(b, ctrl_, nb);                             \
    {                                                                               \
        uint32_t m_ = khl_group_match(w_, khl_tag_small(hash)) & khl_small_mask(nb); \
        KHL_I_CANDIDATES(name, eq_fn, slots_, nb, 0u, m_, key, FOUND)               \
    }

/* Tables of at most this many buckets, every type's, are found by
 * scanning their keys, occupied buckets only, from the highest (where puts
 * begin): no hash, no group match.  At most 4 calls of eq_fn, about what
 * hashing the key costs where eq_fn is dear (strcmp against XXH3), and far
 * less where it is cheap (an interpreter's symbol keys). */
#define KHL_SCAN_BUCKETS 4u
/* A type's scan (khl_scanb) reaches 8 buckets where its first block holds
 * 8 or more (a key and its value of about 8 bytes or fewer) and its hash is
 * not declared indirect, so that such a first block never hashes: a life
 * of 4 u32 keys to u32 values 592 -> 502 instructions, 8 keys 1012 -> 935
 * (a flat array's: 379, 749), while a lookup of an absent key among 8
 * costs 45 instructions against 31 (its loop's included).  Not where
 * comparing keys reads memory: a string set's life of 8 keys and 8 misses
 * cost 4647 instructions scanned, 2717 matched.  Not further, and not for
 * larger pairs: mruby's 8-bucket tables (symbols to 8-byte values) scanned
 * made bm_ao_render 0.5% dearer, their misses along a class chain reading
 * every key where a match reads none. */
#define KHL_I_SCAN_LIMIT(first_buckets, indirect)                                   \
    ((first_buckets) >= 8u && !(indirect) ? 8u : KHL_SCAN_BUCKETS)
KHL_STATIC_ASSERT(KHL_SCAN_BUCKETS == 4u, "KHL_I_SCAN is written out for 4 and 8 buckets");

/* The scan of a table of at most khl_scanb buckets (8, 4, 2 or 1),
 * from the highest bucket down, unrolled, a control byte at a time (a byte
 * load forwards from the byte store of the put before it; a wider one would
 * wait).  Runs FOUND with i = the bucket holding key, slots_ its slots and
 * sctrl_ its control bytes, or EMPTY for each empty bucket i, then falls
 * through. */
#define KHL_I_SCAN_AT(name, eq_fn, nb, at, key, FOUND, EMPTY)                       \
    {                                                                               \
        const uint32_t i = (at);                                                    \
        if (sctrl_[i] != KHL_CTRL_EMPTY) {                                          \
            if (eq_fn(*khl_keyp_##name(slots_, nb, i), (key))) { FOUND }            \
        } else {                                                                    \
            EMPTY                                                                   \
        }                                                                           \
    }
/* Buckets at + 3 down to at of a table of nb buckets. */
#define KHL_I_SCAN_4AT(name, eq_fn, nb, at, key, FOUND, EMPTY)                      \
    KHL_I_SCAN_AT(name, eq_fn, nb, (at) + 3u, key, FOUND, EMPTY)                    \
    KHL_I_SCAN_AT(name, eq_fn, nb, (at) + 2u, key, FOUND, EMPTY)                    \
    KHL_I_SCAN_AT(name, eq_fn, nb, (at) + 1u, key, FOUND, EMPTY)                    \
    KHL_I_SCAN_AT(name, eq_fn, nb, (at), key, FOUND, EMPTY)
#define KHL_I_SCAN(name, eq_fn, b, nb, key, FOUND, EMPTY)                           \
    unsigned char *sctrl_ = khl_ctrlof_##name(b);                                   \
    char *slots_;                                                                   \
    if (khl_scanb_##name == 8u && nb == 8u) {                                       \
        slots_ = khl_smallslots_##name(b, sctrl_, 8u);                              \
        KHL_I_SCAN_4AT(name, eq_fn, 8u, 4u, key, FOUND, EMPTY)                      \
        KHL_I_SCAN_4AT(name, eq_fn, 8u, 0u, key, FOUND, EMPTY)                      \
    } else if (nb == 4u) {                                                          \
        /* Where the slots start, a constant offset: a slot's address is one */     \
        /* displacement. */                                                         \
        slots_ = khl_smallslots_##name(b, sctrl_, 4u);                              \
        KHL_I_SCAN_4AT(name, eq_fn, 4u, 0u, key, FOUND, EMPTY)                      \
    } else {                                                                        \
        slots_ = khl_smallslots_##name(b, sctrl_, nb);                              \
        if (nb == 2u)                                                               \
            KHL_I_SCAN_AT(name, eq_fn, 2u, 1u, key, FOUND, EMPTY)                   \
        KHL_I_SCAN_AT(name, eq_fn, nb, 0u, key, FOUND, EMPTY)                       \
    }

/* The walk of a table of more than one group from the group at bucket
 * base0, step0 buckets of triangular steps taken: runs FOUND with i = the
 * bucket holding `key`, or leaves the loop at the first group without the
 * key's overflow bit (I3), or after the last group. */
#define KHL_I_WALK(name, eq_fn, b, nb, hash, key, slots, base0, step0, FOUND)       \
    {                                                                               \
        unsigned char *ctrl_ = khl_ctrlof_##name(b);                                \
        const khl_tags_t tags_ = khl_tags_large(hash);                              \
        const uint32_t mask_ = (nb) - KHL_GROUP_WIDTH;                              \
        uint32_t base_ = (base0);                                                   \
        uint32_t step_ = (step0);                                                   \
        for (;;) {                                                                  \
            khl_group_t w_ = khl_group_load(ctrl_ + base_);                         \
            uint32_t m_ = khl_group_match_tags(w_, tags_);                          \
            unsigned passed_;                                                       \
            KHL_I_CANDIDATES(name, eq_fn, slots, nb, base_, m_, key, FOUND)         \
            passed_ = khl_ovf_passed(ctrl_, nb, base_, khl_group_walk_tag_of(tags_)); \
            if (KHL_LIKELY(!passed_) || step_ == mask_)                             \
                break;                                                              \
            step_ += KHL_GROUP_WIDTH;                                               \
            base_ = (base_ + step_) & mask_;                                        \
        }                                                                           \
    }

/* The walk from the key's home group: get's, getp's and del_key's.  They
 * keep it whole and inline: a home group peeled off with the walk on from
 * there out of line (as put's below) saved 4-7 instructions a lookup in a
 * benchmark's loop, but the call, even on a path rarely taken, gave the
 * functions an interpreter inlines them into a frame: mruby's method cache
 * hit, whose miss path holds a get, 2 instructions more a call (every
 * script 0.2-0.8% dearer). */
#define KHL_I_LOOKUP(name, eq_fn, b, nb, hash, key, slots, FOUND)                   \
    KHL_I_WALK(name, eq_fn, b, nb, hash, key, slots,                                \
               khl_probe_home(hash, khl_ext(b)->shift, (nb) - KHL_GROUP_WIDTH), 0u, FOUND)

/* The home group of a lookup of a table of more than one group, alone (a
 * put's): runs FOUND with i = the bucket holding `key`; PASSED when keys of
 * the key's class were pushed past the group; else ABSENT, with w_ the
 * group's control bytes and home_ its first bucket.  The walk on from there
 * is out of line (khl_putrest_<name>), so the home group's path, where nine
 * lookups in ten end at the maximum load, keeps no probe state. */
#define KHL_I_HOME(name, eq_fn, b, nb, hash, key, slots, FOUND, PASSED, ABSENT)     \
    {                                                                               \
        unsigned char *ctrl_ = khl_ctrlof_##name(b);                                \
        const uint32_t home_ = khl_probe_home(hash, khl_ext(b)->shift, (nb) - KHL_GROUP_WIDTH); \
        const khl_group_t w_ = khl_group_load(ctrl_ + home_);                       \
        const khl_tags_t tags_ = khl_tags_large(hash);                              \
        uint32_t m_ = khl_group_match_tags(w_, tags_);                              \
        KHL_I_CANDIDATES(name, eq_fn, slots, nb, home_, m_, key, FOUND)             \
        if (KHL_UNLIKELY(khl_ovf_passed(ctrl_, nb, home_, khl_group_tag_of(tags_)))) { PASSED } \
        ABSENT                                                                      \
    }

/* The lookup of get, getp and delkey: the one-group path inline, running
 * SMALL_FOUND for the bucket i holding key; LARGE for a larger table (a
 * function the compiler inlines or not: see the block's description).
 * Falls through when absent, with
 * b_ the block and nb_ its bucket count (0 without a block).  One
 * predictable branch chooses the path, and it carries no hint: marked
 * unlikely, it left a larger table's path the registers the small ones
 * spared, and a caller's loop of lookups reloaded the block's header,
 * spilled the walk and remade its constants at every call (1M u64 keys
 * to 448-bit values, one process: a hit 1.33 -> 1.10-1.14 of boost's time, a
 * miss 1.22 -> 0.95; 55 -> 50 instructions a hit).  A life of 1-8 keys
 * costs about 1% more instructions for it. */
#define KHL_I_FIND(name, eq_fn, h, key, SMALL_FOUND, LARGE)                         \
    khl_block_t *b_ = (h)->b;                                                       \
    uint32_t nb_ = 0;                                                               \
    if (b_) {                                                                       \
        nb_ = b_->n_buckets;                                                        \
        if (nb_ > KHL_GROUP_WIDTH) {                                                \
            uint64_t hash_ = khl_hashlarge_##name(khl_hashof_##name(key));          \
            LARGE                                                                   \
        } else if (nb_ <= khl_scanb_##name) {                                       \
            KHL_I_SCAN(name, eq_fn, b_, nb_, key, SMALL_FOUND, )                    \
        } else {                                                                    \
            uint64_t hash_ = khl_hashof_##name(key);                                \
            KHL_I_SMALL_LOOKUP(name, eq_fn, b_, nb_, hash_, key, SMALL_FOUND)       \
        }                                                                           \
    }

/* Starts the line of the key's start bucket (khl_start_off) while the
 * control group arrives: a hit, an erase and a put usually need that line
 * (the key they find, or the bucket they fill), and would otherwise wait for
 * the group before asking for it.  At 1M u32 keys (8-byte pairs): a hit 24.8
 * -> 19.5 ns, an erase 31.6 -> 24.5 (median of 4 interleaved runs); 16-byte
 * pairs: an erase 35.4 -> 32.5, hits and misses unchanged.  Where a pair
 * fills a line (u64 keys with 56-byte values) the start bucket is the key's
 * own, and 62-77% of keys sit there; before keys had one, the line was the
 * group's first, seldom the key's, and such types did not fetch.  A miss
 * pays for a line it never reads (docs/design.md): such types' lookups
 * fetch in large tables only (KHL_I_LOOKUP_FETCH).  Other types fetch in
 * every table of more than one group, however small: where the line is in
 * the nearest caches the fetch costs its one instruction, less than the test
 * of the table's size that used to skip tables below 4,096 buckets (without
 * it, a lookup of a 2M-key u32 table takes 3 instructions fewer, and every
 * mruby script 0.1-0.3% fewer: its method tables are of that size).  The
 * start bucket is the home group's bits and the key's start bits under one
 * mask, or, for keys starting from the group's last bucket, the home group
 * and a constant displacement: their lookups compute nothing for it. */
#define KHL_I_PREFETCH_HOME(name, b, nb, hash, slots)                               \
    KHL_PREFETCH((const char *)khl_keyp_##name(                                     \
                     slots, nb,                                                     \
                     khl_probe_home(hash, khl_ext(b)->shift,                        \
                                    ((nb) - KHL_GROUP_WIDTH) | khl_startbits_##name)) + \
                 (KHL_GROUP_WIDTH - 1u - khl_startbits_##name) * khl_keystride_##name)

/* A lookup's early fetch where a pair fills a cache line: in a table of
 * more than 2^20 buckets only.  That line holds the key's pair alone, which
 * a miss never reads.  The fetch pays where it overlaps the control group's
 * own trip beyond the L2; up to 2^20 control bytes (a core's L2 holds 1-2
 * MiB on current x86) the group comes sooner than that, the hit's line is
 * asked for a few ns later, and every miss saves a line.  A trade: u64 keys
 * to 448-bit values at 600k keys, a miss 14.4 -> 10.7 ns, a hit 33.0 ->
 * 33.3; at 200k a miss 6.1 -> 5.1, a hit and an erase up to 15% and 24%
 * longer; at 1M keys (2^21 buckets) a hit took 31.5 -> 38.3 without the
 * fetch (docs/design.md, "The early fetch by table size"). */
#define KHL_I_NEAR_CTRL_BUCKETS (1u << 20)
#define KHL_I_LOOKUP_FETCH(name, b, nb, hash, slots)                                \
    ((khl_keystride_##name < KHL_I_CACHE_LINE || (nb) > KHL_I_NEAR_CTRL_BUCKETS)    \
         ? KHL_I_PREFETCH_HOME(name, b, nb, hash, slots)                            \
         : (void)0)

/* Whether hash_fn is declared mixed: 1 when KHL_HASH_MIXED_<hash_fn> is
 * defined empty or as 1, 0 when it is not defined.  Its expansion pasted
 * onto KHL_I_MIXED_IS_ names a macro of two arguments, which moves the 1
 * into second place, or an undefined name, which leaves the 0 there.  A
 * preprocessor test, so that a declaration is a #define beside the hash and
 * every KHL_INIT* form honours it alike. */
#define KHL_I_MIXED_IS_ ~, 1
#define KHL_I_MIXED_IS_1 ~, 1
#define KHL_I_MIXED_PASTE_(x) KHL_I_MIXED_IS_##x
#define KHL_I_MIXED_PASTE(x) KHL_I_MIXED_PASTE_(x)
#define KHL_I_SECOND_(a, b, ...) b
#define KHL_I_SECOND(...) KHL_I_SECOND_(__VA_ARGS__)
/* 1 when the macro m is defined empty or as 1, 0 when it is not defined:
 * KHL_HASH_MIXED_<hash_fn>, KHL_ALLOC_RESIZES_<allocf>. */
#define KHL_I_DECLARED(m) KHL_I_SECOND(KHL_I_MIXED_PASTE(m), 0, ~)
#define KHL_I_MIXED(hash_fn) KHL_I_DECLARED(KHL_HASH_MIXED_##hash_fn)
/* Whether a table of more than one group remixes hash_fn's hashes
 * (khl_remix): the table's own product of a hash not declared mixed, or a
 * hash declared a product (KHL_HASH_PRODUCT_<hash_fn>). */
#define KHL_I_REMIXES(hash_fn)                                                      \
    (!KHL_I_MIXED(hash_fn) || KHL_I_DECLARED(KHL_HASH_PRODUCT_##hash_fn))

/* What a hash not declared mixed goes through: Fibonacci hashing, whose
 * product's top bits depend on every bit of the hash below them.  An
 * identity hash's sequential keys, whose top bits are all 0, then spread
 * over every group instead of sharing the first; a 32-bit hash's bits reach
 * the top.  Such a product is a hash declared KHL_HASH_PRODUCT_<hash_fn>
 * (khl_hash_u32/u64 are): a larger table remixes it (khl_remix). */
static inline uint64_t khl_mix(uint64_t hash)
{
    return hash * 0x9e3779b97f4a7c15ULL;
}

/* What a table of more than one group makes of a product (khl_mix, or a
 * hash declared KHL_HASH_PRODUCT_): an xor-shift and a second multiply.  A
 * one-group table reads only the product's top 7 bits, which depend on
 * every key bit; a larger one also reads its home group from the bits under
 * the top byte, and for keys k apart those are a Fibonacci hash by the
 * multiplier times 256 k, which for some strides leaves most groups empty:
 * 1M keys 64 to 512 apart put 34-61% of them past their home group (random
 * keys 0.1%), 200,000 keys 256 to 4,096 apart 17-42%, whatever the seed.
 * Ids of aligned records and pointers to objects of one size are such keys.
 * The shift brings the product's top half, in which every key bit is mixed,
 * down to the bits that the multiply carries back up through the word: over
 * 95 strides and grids tried at 5,000 to 2M keys, none is placed much worse
 * than random keys (at most 4.9% past their home, where random keys have
 * 2.4%).  4 instructions and 5 cycles a lookup, a larger table's only. */
static inline uint64_t khl_remix(uint64_t hash)
{
    return (hash ^ (hash >> 32)) * 0xd6e8feb86659fd93ULL;
}

/* The operations.  SCOPE is "static inline KHL_UNUSED" or empty (DEFINE);
 * HOT, for get, put and the deletions, adds always_inline to the former:
 * their fast paths are a few dozen instructions, and a call costs as much. */
#define KHL_I_IMPL(SCOPE, HOT, name, hash_fn, eq_fn, alloc_t, alloc_m, FN, UD, RESIZES) \
    KHL_I_MAX_LOAD_CHECK(name)                                                      \
    KHL_I_IMPL_HASH(name, hash_fn)                                                  \
    KHL_I_IMPL_REBUILD(name)                                                        \
    KHL_I_IMPL_LIFE(SCOPE, name, alloc_t, alloc_m, FN, UD, RESIZES)                 \
    KHL_I_IMPL_LARGE(name, eq_fn)                                                   \
    KHL_I_IMPL_FIND(HOT, name, eq_fn)                                               \
    KHL_I_IMPL_PUTSLOW(name, FN, UD, RESIZES)                                       \
    KHL_I_IMPL_PUTGROW(name, FN, UD)                                                \
    KHL_I_IMPL_PUTLARGE(name, eq_fn)                                                \
    KHL_I_IMPL_PUT(HOT, name, eq_fn)                                                \
    KHL_I_IMPL_DEL(HOT, name)

/* How many keys ahead of its placements a rebuild hashes, for a hash
 * declared indirect: enough for a few reads of scattered strings at once,
 * few enough that hashing still overlaps the placements' own cache misses
 * (2M and 200k string keys grown from empty: docs/design.md). */
#ifndef KHL_I_HASH_AHEAD
#define KHL_I_HASH_AHEAD 4u
#endif

/* The key's hash, mixed unless hash_fn is declared mixed, as a one-group
 * table uses it; khl_hashin_<name> makes it a table of nb buckets' (remixed
 * in a larger table where khl_remixes_<name>).  khl_indirect_<name>: whether
 * hash_fn is declared indirect, so that a rebuild hashes keys ahead of
 * placing them. */
#define KHL_I_IMPL_HASH(name, hash_fn)                                              \
    enum { khl_indirect_##name = KHL_I_DECLARED(KHL_HASH_INDIRECT_##hash_fn) };     \
    /* Tables of at most this many buckets are scanned (KHL_I_SCAN). */            \
    enum { khl_scanb_##name = KHL_I_SCAN_LIMIT(KHL_I_FIRST_BUCKETS(name), khl_indirect_##name) }; \
    enum { khl_remixes_##name = KHL_I_REMIXES(hash_fn) };                           \
    /* The only call of hash_fn: every lookup, put, check and rebuild hashes */     \
    /* through here (see KHL_I_MIXED). */                                           \
    static inline KHL_UNUSED KHL_HOT_INLINE uint64_t khl_hashof_##name(khl_keyt_##name key) \
    {                                                                               \
        uint64_t hash_ = (uint64_t)(hash_fn(key));                                  \
        return KHL_I_MIXED(hash_fn) ? hash_ : khl_mix(hash_);                       \
    }                                                                               \
    static inline KHL_UNUSED KHL_HOT_INLINE uint64_t khl_hashlarge_##name(uint64_t hash) \
    {                                                                               \
        return khl_remixes_##name ? khl_remix(hash) : hash;                        \
    }                                                                               \
    static inline KHL_UNUSED KHL_HOT_INLINE uint64_t khl_hashin_##name(uint64_t hash, uint32_t nb) \
    {                                                                               \
        return nb > KHL_GROUP_WIDTH ? khl_hashlarge_##name(hash) : hash;            \
    }                                                                               \
    static KHL_UNUSED uint64_t khl_hashkey_##name(const void *k, uint32_t nb)       \
    {                                                                               \
        return khl_hashin_##name(khl_hashof_##name(*(const khl_keyt_##name *)k), nb); \
    }

/* How many groups ahead of the one it places a rebuild fetches the keys of
 * (khl_fetchkeys_<name>: a line at a time over the group's 16 keys).  Where
 * a pair fills a line (u64 keys with 448-bit values) each key read is a line
 * of its own, which the rebuild waited for: the growths of 2M such keys
 * through realloc took 219-266 ms without the fetch, 179-224 ms with it
 * (1, 2, 4 and 8 groups ahead alike).  Forced inline: gcc -O2 finds a
 * function of prefetches alone free of side effects and deletes its calls
 * (docs/design.md, "Growth through the allocator's resize"). */
#ifndef KHL_I_FETCH_AHEAD
#define KHL_I_FETCH_AHEAD 2u
#endif

#define KHL_I_IMPL_FETCHKEYS(name)                                                  \
    static inline KHL_UNUSED KHL_HOT_INLINE void khl_fetchkeys_##name(char *slots, uint32_t nb, \
                                                                      uint32_t base) \
    {                                                                               \
        const char *first_ = (const char *)khl_keyp_##name(slots, nb, base);        \
        const size_t span_ = (size_t)((const char *)khl_keyp_##name(slots, nb, base + KHL_GROUP_WIDTH - 1u) - first_); \
        size_t at_;                                                                 \
        for (at_ = 0; at_ < span_; at_ += 64)                                       \
            KHL_PREFETCH(first_ + at_);                                             \
        KHL_PREFETCH(first_ + span_);                                               \
    }

/* The walk of a move: every key of `from` to the first free bucket j_ of
 * its walk in `to` (khl_find_free with `taken`), whose control byte SET
 * writes.  Where hash_fn reads through the key (declared indirect, as
 * khl_hash_str is), a group's keys are hashed KHL_I_HASH_AHEAD ahead of
 * their placements: the hashes do not wait on one another, so their reads of
 * scattered strings overlap, where each waited behind the previous key's
 * placement and its mispredicted branches.  For a hash of the key's own bits
 * that costs instructions and gains nothing (docs/design.md, "Hashes
 * first"). */
#define KHL_I_MOVE_LOOP(name, to, from, taken, DOUBLING, SET)                       \
    {                                                                               \
        /* Locals: a control byte's store may alias the regions' fields. */         \
        unsigned char *const fc_ = (from)->ctrl, *const tc_ = (to)->ctrl;           \
        char *const fp_ = (from)->pairs;                                            \
        char *const tp_ = (to)->pairs;                                              \
        const uint32_t nb_ = (from)->n_buckets, tnb_ = (to)->n_buckets, tsh_ = (to)->shift; \
        uint32_t base_, mask_;                                                      \
        khl_walk_from(fc_, nb_, 0, &base_, &mask_);                                 \
        for (;;) {                                                                  \
            uint64_t hashes_[KHL_GROUP_WIDTH], walk_[KHL_GROUP_WIDTH];              \
            uint32_t ahead_;                                                        \
            if (base_ + KHL_I_FETCH_AHEAD * KHL_GROUP_WIDTH < nb_)                  \
                khl_fetchkeys_##name(fp_, nb_, base_ + KHL_I_FETCH_AHEAD * KHL_GROUP_WIDTH); \
            ahead_ = khl_hashstart_##name(hashes_, mask_, fp_, nb_, base_, tnb_);   \
            if (DOUBLING)                                                           \
                mask_ = khl_placehome_##name(to, from, base_, mask_, hashes_, ahead_, walk_, 0); \
            for (; mask_; mask_ &= mask_ - 1u) {                                    \
                const uint32_t i_ = base_ + khl_mask_lowest(mask_);                 \
                const uint64_t hash_ = DOUBLING ? walk_[i_ - base_]                 \
                                                : khl_hashat_##name(hashes_, &ahead_, fp_, nb_, base_, i_, tnb_); \
                const uint32_t j_ = khl_find_free(tc_, tnb_, tsh_, hash_, taken,    \
                                                  khl_startbits_##name);            \
                SET;                                                                \
                khl_slotcopy_##name(tp_, tnb_, j_, fp_, nb_, i_);                   \
            }                                                                       \
            base_ += KHL_GROUP_WIDTH;                                               \
            if (base_ >= nb_)                                                       \
                break;                                                              \
            mask_ = khl_group_full(khl_group_load(fc_ + base_));                    \
        }                                                                           \
    }

/* The two rebuild loops, into new storage and in place, and the type's
 * description for khl_table.c. */
#define KHL_I_IMPL_REBUILD(name)                                                    \
    KHL_I_IMPL_HASHAHEAD(name)                                                      \
    KHL_I_IMPL_FETCHKEYS(name)                                                      \
    KHL_I_IMPL_PLACEHOME(name)                                                      \
    KHL_I_IMPL_MOVE(name)                                                           \
    KHL_I_IMPL_SPREAD(name)                                                         \
    KHL_I_IMPL_TYPEDESC(name)

/* A rebuild's hashes, KHL_I_HASH_AHEAD keys ahead of the placements, for a
 * hash declared indirect: start hashes the first keys of `ahead` (a mask of
 * the buckets of the group at base) and returns the rest; next hashes one
 * more; at gives bucket i's hash, from hashes[] (indexed by bucket in the
 * group) after hashing one more ahead, or computed.  Each is the hash the
 * table being built, of tnb buckets, uses (khl_hashin). */
#define KHL_I_IMPL_HASHAHEAD(name)                                                  \
    static inline KHL_UNUSED void khl_hashnext_##name(uint64_t *hashes, uint32_t *ahead, \
                                                      char *slots, uint32_t nb, uint32_t base, \
                                                      uint32_t tnb)                 \
    {                                                                               \
        const uint32_t q = khl_mask_lowest(*ahead);                                 \
        hashes[q] = khl_hashin_##name(khl_hashof_##name(*khl_keyp_##name(slots, nb, base + q)), tnb); \
        *ahead &= *ahead - 1u;                                                      \
    }                                                                               \
    static inline KHL_UNUSED uint32_t khl_hashstart_##name(uint64_t *hashes, uint32_t mask, \
                                                           char *slots, uint32_t nb, uint32_t base, \
                                                           uint32_t tnb)            \
    {                                                                               \
        uint32_t ahead = khl_indirect_##name ? mask : 0u, k;                        \
        for (k = 0; k < KHL_I_HASH_AHEAD && ahead; ++k)                             \
            khl_hashnext_##name(hashes, &ahead, slots, nb, base, tnb);              \
        return ahead;                                                               \
    }                                                                               \
    static inline KHL_UNUSED uint64_t khl_hashat_##name(uint64_t *hashes, uint32_t *ahead, \
                                                        char *slots, uint32_t nb, uint32_t base, \
                                                        uint32_t i, uint32_t tnb)   \
    {                                                                               \
        if (*ahead)                                                                 \
            khl_hashnext_##name(hashes, ahead, slots, nb, base, tnb);               \
        return khl_indirect_##name ? hashes[i - base]                               \
                                   : khl_hashin_##name(khl_hashof_##name(*khl_keyp_##name(slots, nb, i)), tnb); \
    }

/* A doubling's keys at home, those of group base whose home was that group:
 * their new home is group 2g or 2g+1 (g = base / 16), whose free buckets,
 * its empty ones, are read once for the group (a move fills a new table from
 * group 0 up; the spread in place walks down, and for g > 0 those groups are
 * walked already or new).  Each such key takes the one left that a put
 * would take (khl_pick_free), with byte stores and no walk: a placement that
 * loaded its group waited for the store of the one before (keys of one group
 * go to the same two).  `in_place`: the
 * bucket the key leaves is emptied.  Returns the keys left for the walk
 * (pushed past their home, or whose new home filled first), their hashes in
 * walk[]. */
#define KHL_I_IMPL_PLACEHOME(name)                                                  \
    static inline KHL_UNUSED uint32_t khl_placehome_##name(                         \
        const khl_regions_t *to, const khl_regions_t *from, uint32_t base, uint32_t keys, \
        uint64_t *hashes, uint32_t ahead, uint64_t *walk, int in_place)             \
    {                                                                               \
        /* Locals: a control byte's store may alias the regions' fields. */         \
        unsigned char *const tc = to->ctrl, *const fc = from->ctrl;                 \
        char *const tp = to->pairs, *const fp = from->pairs;                        \
        const uint32_t tnb = to->n_buckets, fnb = from->n_buckets, shift = to->shift; \
        const uint32_t dst = 2u * base;                                             \
        uint32_t free_[2], rest = 0;                                                \
        free_[0] = khl_group_empty(khl_group_load(tc + dst));                       \
        free_[1] = khl_group_empty(khl_group_load(tc + dst + KHL_GROUP_WIDTH));     \
        for (; keys; keys &= keys - 1u) {                                           \
            const uint32_t i = base + khl_mask_lowest(keys);                        \
            const uint64_t hash = khl_hashat_##name(hashes, &ahead, fp, fnb, base, i, tnb); \
            const uint32_t d = khl_probe_home(hash, shift, tnb - KHL_GROUP_WIDTH) - dst; \
            if (d < 2u * KHL_GROUP_WIDTH && free_[d / KHL_GROUP_WIDTH]) {           \
                const uint32_t o = khl_pick_free(free_[d / KHL_GROUP_WIDTH], hash, shift, \
                                                 khl_startbits_##name);             \
                const uint32_t j = dst + d + o;                                     \
                free_[d / KHL_GROUP_WIDTH] &= ~(1u << o);                           \
                tc[j] = khl_tag_large(hash);                                        \
                if (in_place)                                                       \
                    fc[i] = KHL_CTRL_EMPTY;                                         \
                khl_slotcopy_##name(tp, tnb, j, fp, fnb, i);                        \
            } else {                                                                \
                walk[i - base] = hash;                                              \
                rest |= 1u << (i - base);                                           \
            }                                                                       \
        }                                                                           \
        return rest;                                                                \
    }

/* The rebuild into new storage.  Up to KHL_MOVE_GROUPS groups, the new
 * table's free buckets are a bitmap on the stack and its control bytes are
 * stored a byte at a time, never loaded: a group's load, blend and store
 * waited on the store before it (a life of 64 sequential u32 keys 1.27 ->
 * 0.92 us).  That loop is written twice, for a new table of more than one
 * group and for one of one group (a shrink's, a copy's): in the first the
 * compiler knows the size's tests (the remix, the tag, the live mask) and
 * drops them, where it tested the size twice a key from a stack slot (gcc
 * -O2, a move of 56 u32 keys: 4,229 -> 3,837 instructions).  Past
 * KHL_MOVE_GROUPS a doubling places the keys at home first
 * (khl_placehome). */
#define KHL_I_IMPL_MOVE(name)                                                       \
    static KHL_UNUSED void khl_move_##name(const khl_regions_t *to, const khl_regions_t *from) \
    {                                                                               \
        uint16_t taken_[KHL_MOVE_GROUPS];                                           \
        if (to->n_buckets <= KHL_MOVE_GROUPS * KHL_GROUP_WIDTH) {                   \
            memset(taken_, 0, (to->n_buckets + KHL_GROUP_WIDTH - 1u) / KHL_GROUP_WIDTH * sizeof *taken_); \
            if (to->n_buckets > KHL_GROUP_WIDTH)                                    \
                KHL_I_MOVE_LOOP(name, to, from, taken_, 0, tc_[j_] = khl_tag_in(hash_, tnb_)) \
            else                                                                    \
                KHL_I_MOVE_LOOP(name, to, from, taken_, 0, tc_[j_] = khl_tag_in(hash_, tnb_)) \
        } else if (to->n_buckets == 2u * from->n_buckets) {                         \
            KHL_I_MOVE_LOOP(name, to, from, NULL, 1, khl_ctrl_set(tc_, j_, khl_tag_in(hash_, tnb_))); \
        } else {                                                                    \
            KHL_I_MOVE_LOOP(name, to, from, NULL, 0, khl_ctrl_set(tc_, j_, khl_tag_in(hash_, tnb_))); \
        }                                                                           \
    }

/* The rebuild in place (hashbrown's way), in a table of more than one group:
 * the keys of buckets [0, n_placed), whole groups (n_placed is the old bucket
 * count, 32 or more), are marked deleted a group at a time; each goes to the
 * first free bucket of its walk, unless that is in its own group; a marked
 * key found there swaps in and is placed next.  From the last bucket down:
 * after a doubling (a resize), the keys of group g go to groups 2g and 2g+1,
 * which the walk has emptied of their own keys already, so a key in its home
 * group moves once and swaps with none.  A group's marked keys in a mask,
 * hashed ahead where the hash is indirect (as in a move): placing a key
 * changes no other bucket of its group (it stays there, or goes to another
 * group), so the mask and the hashes hold until each key's turn; a key
 * swapped in is hashed then.  A key's new bucket is set by a group store:
 * the next placement loads that group, and a byte store would not forward to
 * the load (timed: no faster).  The bucket it leaves, in the group being
 * walked, which no load reads again soon, is a byte store (2M u64 -> 448-bit
 * inserts: 630 -> 583 M instructions). */
#define KHL_I_IMPL_SPREAD(name)                                                     \
    static inline KHL_UNUSED void khl_spreadkey_##name(const khl_regions_t *r, uint32_t i, \
                                                       uint64_t hash)               \
    {                                                                               \
        const uint32_t nb = r->n_buckets;                                           \
        for (;;) {                                                                  \
            uint32_t j = khl_find_free(r->ctrl, nb, r->shift, hash, NULL,           \
                                       khl_startbits_##name);                       \
            if (j / KHL_GROUP_WIDTH == i / KHL_GROUP_WIDTH) {                       \
                r->ctrl[i] = khl_tag_large(hash);                                   \
                return;                                                             \
            }                                                                       \
            if (r->ctrl[j] == KHL_CTRL_EMPTY) {                                     \
                khl_ctrl_set_tags(r->ctrl, j, khl_tags_large(hash));                \
                r->ctrl[i] = KHL_CTRL_EMPTY;                                        \
                khl_slotcopy_##name(r->pairs, nb, j, r->pairs, nb, i);              \
                return;                                                             \
            }                                                                       \
            /* A marked key: it swaps in and is placed next. */                     \
            khl_ctrl_set_tags(r->ctrl, j, khl_tags_large(hash));                    \
            khl_slotswap_##name(r->pairs, nb, i, j);                                \
            hash = khl_hashlarge_##name(khl_hashof_##name(*khl_keyp_##name(r->pairs, nb, i))); \
        }                                                                           \
    }                                                                               \
    static KHL_UNUSED void khl_rehash_##name(const khl_regions_t *r, uint32_t n_placed) \
    {                                                                               \
        uint32_t i, base, nb = r->n_buckets;                                        \
        memset(khl_ovf_at(r->ctrl, nb), 0, khl_ctrl_bytes(nb) - nb);                \
        for (i = 0; i < n_placed; i += KHL_GROUP_WIDTH)                             \
            khl_group_store(r->ctrl + i, khl_group_marked(khl_group_load(r->ctrl + i))); \
        for (base = n_placed; base > 0;) {                                          \
            uint64_t hashes[KHL_GROUP_WIDTH];                                       \
            uint32_t marked, ahead;                                                 \
            base -= KHL_GROUP_WIDTH;                                                \
            if (base >= KHL_I_FETCH_AHEAD * KHL_GROUP_WIDTH)                        \
                khl_fetchkeys_##name(r->pairs, nb, base - KHL_I_FETCH_AHEAD * KHL_GROUP_WIDTH); \
            marked = khl_group_match(khl_group_load(r->ctrl + base), KHL_CTRL_DELETED); \
            ahead = khl_hashstart_##name(hashes, marked, r->pairs, nb, base, nb);   \
            if (nb == 2u * n_placed && base > 0) {                                  \
                uint64_t walk[KHL_GROUP_WIDTH];                                     \
                marked = khl_placehome_##name(r, r, base, marked, hashes, ahead, walk, 1); \
                for (; marked; marked &= marked - 1u) {                             \
                    i = base + khl_mask_lowest(marked);                             \
                    khl_spreadkey_##name(r, i, walk[i - base]);                     \
                }                                                                   \
                continue;                                                           \
            }                                                                       \
            for (; marked; marked &= marked - 1u) {                                 \
                i = base + khl_mask_lowest(marked);                                 \
                khl_spreadkey_##name(r, i, khl_hashat_##name(hashes, &ahead, r->pairs, nb, base, i, nb)); \
            }                                                                       \
        }                                                                           \
    }

/* The type as khl_table.c sees it: sizes, load, first block, rebuilds. */
#define KHL_I_IMPL_TYPEDESC(name)                                                   \
    static const khl_type_t khl_typedesc_##name KHL_UNUSED = {                      \
        sizeof(khl_pairt_##name), KHL_ALIGNOF(khl_pairt_##name),                    \
        sizeof(khl_keyt_##name), sizeof(khl_valt_##name), KHL_ALIGNOF(khl_keyt_##name), \
        khl_soa_##name,                                                             \
        (uint32_t)((KHL_MAX_LOAD) * 65536) / KHL_I_MAX_LOAD_DIVISOR,                \
        KHL_I_FIRST_BUCKETS(name), khl_scanb_##name,                                \
        khl_move_##name, khl_rehash_##name, khl_hashkey_##name,                     \
        KHL_I_SMALL_BYTES(KHL_I_FIRST_BUCKETS(name), name),                         \
        {KHL_I_SMALL_BYTES(1u, name), KHL_I_SMALL_BYTES(2u, name), KHL_I_SMALL_BYTES(4u, name), \
         KHL_I_SMALL_BYTES(8u, name), KHL_I_SMALL_BYTES(16u, name)}};

/* init, destroy, clear, reserve, shrink, copy, block size and check: every
 * allocator call but a put's. */
#define KHL_I_IMPL_LIFE(SCOPE, name, alloc_t, alloc_m, FN, UD, RESIZES)             \
    SCOPE void khl_init_##name(khl_t_##name *h, alloc_t alloc_m)                    \
    {                                                                               \
        h->b = NULL;                                                                \
        h->alloc_m = alloc_m;                                                       \
    }                                                                               \
    SCOPE void khl_destroy_##name(khl_t_##name *h)                                  \
    {                                                                               \
        void *p_;                                                                   \
        size_t bytes_;                                                              \
        unsigned i_;                                                                \
        if (h->b)                                                                   \
            for (i_ = 0; (p_ = khl_allocation_##name(h->b, &khl_typedesc_##name, i_, &bytes_)); ++i_) \
                FN(UD, p_, bytes_, 0);                                              \
        h->b = NULL;                                                                \
    }                                                                               \
    SCOPE void khl_clear_##name(khl_t_##name *h)                                    \
    {                                                                               \
        khl_regions_t r_;                                                           \
        if (!h->b)                                                                  \
            return;                                                                 \
        r_ = khl_regionsof_##name(h->b);                                            \
        khl_table_clear(h->b, &r_, &khl_typedesc_##name);                           \
    }                                                                               \
    SCOPE int khl_reserve_##name(khl_t_##name *h, size_t n)                         \
    {                                                                               \
        khl_plan_t p_;                                                              \
        int planned_ = khl_table_reserve_plan(h->b, n, &khl_typedesc_##name, &p_);  \
        return khl_carryout_##name(planned_, &p_, &h->b, h->b, &khl_typedesc_##name, \
                                   FN, UD, RESIZES);                                \
    }                                                                               \
    SCOPE int khl_shrink_##name(khl_t_##name *h)                                    \
    {                                                                               \
        khl_plan_t p_;                                                              \
        int planned_;                                                               \
        if (h->b && !h->b->size) {                                                  \
            khl_destroy_##name(h);                                                  \
            return 0;                                                               \
        }                                                                           \
        planned_ = khl_table_shrink_plan(h->b, &khl_typedesc_##name, &p_);          \
        return khl_carryout_##name(planned_, &p_, &h->b, h->b, &khl_typedesc_##name, \
                                   FN, UD, RESIZES);                                \
    }                                                                               \
    SCOPE int khl_copy_##name(khl_t_##name *h, const khl_t_##name *src)             \
    {                                                                               \
        khl_plan_t p_;                                                              \
        int planned_ = khl_table_copy_plan(h->b, src->b, &khl_typedesc_##name, &p_); \
        return khl_carryout_##name(planned_, &p_, &h->b, src->b, &khl_typedesc_##name, \
                                   FN, UD, RESIZES);                                \
    }                                                                               \
    SCOPE size_t khl_blocksize_##name(const khl_t_##name *h)                        \
    {                                                                               \
        return khl_bytesof_##name(h->b, &khl_typedesc_##name);                      \
    }                                                                               \
    SCOPE int khl_check_##name(const khl_t_##name *h)                               \
    {                                                                               \
        khl_regions_t r_;                                                           \
        if (!h->b)                                                                  \
            return 0;                                                               \
        r_ = khl_regionsof_##name(h->b);                                            \
        return khl_table_check(h->b, &r_, &khl_typedesc_##name);                    \
    }

/* The lookups of a table of more than one group, for get, getp and del_key:
 * functions of their own, which the compiler inlines or not (see the block's
 * description). */
#define KHL_I_IMPL_LARGE(name, eq_fn)                                               \
    /* The larger tables' lookup: the bucket holding key, or nb. */                 \
    static inline KHL_UNUSED khl_iter_t khl_findlarge_##name(                       \
        khl_block_t *b, uint32_t nb, uint64_t hash, khl_keyt_##name key)            \
    {                                                                               \
        char *slots_ = khl_largeslots_##name(b, nb);                                \
        KHL_I_LOOKUP_FETCH(name, b, nb, hash, slots_);                              \
        KHL_I_LOOKUP(name, eq_fn, b, nb, hash, key, slots_, return i;)              \
        return nb;                                                                  \
    }                                                                               \
    /* getp's own copy of the lookup: as findlarge and an index, gcc stopped */     \
    /* inlining it (a hit in a 200k-key table: 63 -> 82 instructions). */           \
    static inline KHL_UNUSED khl_valt_##name *khl_getplarge_##name(                 \
        khl_block_t *b, uint32_t nb, uint64_t hash, khl_keyt_##name key)            \
    {                                                                               \
        char *slots_ = khl_largeslots_##name(b, nb);                                \
        KHL_I_LOOKUP_FETCH(name, b, nb, hash, slots_);                              \
        KHL_I_LOOKUP(name, eq_fn, b, nb, hash, key, slots_,                         \
                     return khl_valp_##name(slots_, nb, i);)                        \
        return NULL;                                                                \
    }                                                                               \
    /* The erase after the walk, not inside it: the walk then keeps no group */     \
    /* or tag for it, and a miss saves the registers (200k u32 keys: a miss */      \
    /* 99 -> 88 instructions, a hit 102 -> 103). */                                 \
    static inline KHL_UNUSED int khl_dellarge_##name(                               \
        khl_block_t *b, uint32_t nb, uint64_t hash, khl_keyt_##name key)            \
    {                                                                               \
        khl_iter_t i = khl_findlarge_##name(b, nb, hash, key);                      \
        if (i == nb)                                                                \
            return 0;                                                               \
        khl_erase_at(b, khl_ctrlof_##name(b), i);                                   \
        return 1;                                                                   \
    }

/* get, getp and del_key: the one-group lookup inline, a larger table's by
 * its function. */
#define KHL_I_IMPL_FIND(HOT, name, eq_fn)                                           \
    HOT khl_iter_t khl_get_##name(const khl_t_##name *h, khl_keyt_##name key)       \
    {                                                                               \
        KHL_I_FIND(name, eq_fn, h, key, return i;,                                  \
                   return khl_findlarge_##name(b_, nb_, hash_, key);)               \
        return nb_;                                                                 \
    }                                                                               \
    HOT khl_valt_##name *khl_getp_##name(const khl_t_##name *h, khl_keyt_##name key) \
    {                                                                               \
        KHL_I_FIND(name, eq_fn, h, key,                                             \
                   return khl_valp_##name(slots_, nb_, i);,                         \
                   return khl_getplarge_##name(b_, nb_, hash_, key);)               \
        return NULL;                                                                \
    }                                                                               \
    HOT int khl_delkey_##name(khl_t_##name *h, khl_keyt_##name key)                 \
    {                                                                               \
        KHL_I_FIND(name, eq_fn, h, key,                                             \
                   khl_erase_at(b_, khl_ctrlof_##name(b_), i); return 1;,           \
                   return khl_dellarge_##name(b_, nb_, hash_, key);)                \
        return 0;                                                                   \
    }

/* A put's out-of-line parts: the first put, and growth or a walk that
 * passes full groups. */
#define KHL_I_IMPL_PUTSLOW(name, FN, UD, RESIZES)                                   \
    /* The first put of a table, kept out of line and apart from the growth */      \
    /* (its frame would cost every first put): the first block, of a */             \
    /* constant size, laid out inline with the key. */                              \
    static KHL_NOINLINE KHL_UNUSED khl_putres_t khl_putfirst_##name(                \
        khl_t_##name hv, khl_keyt_##name key)                                       \
    {                                                                               \
        const uint32_t nb = khl_typedesc_##name.first_buckets;                      \
        khl_t_##name *h = &hv;                                                      \
        khl_putres_t r = {NULL, 0, -1};                                             \
        void *mem_ = FN(UD, NULL, 0, khl_typedesc_##name.first_bytes);              \
        if (!mem_)                                                                  \
            return r;                                                               \
        r.b = khl_first_block(mem_, &khl_typedesc_##name,                           \
                              nb <= khl_scanb_##name ? KHL_CTRL_UNTAGGED            \
                                                     : khl_tag_in(khl_hashof_##name(key), nb)); \
        *khl_keyp_##name(khl_smallslots_##name(r.b, (unsigned char *)(r.b + 1), nb), nb, nb - 1u) = key; \
        r.i = nb - 1u;                                                              \
        r.ret = 1;                                                                  \
        return r;                                                                   \
    }                                                                               \
    /* The rare part of a put, kept out of line: no growth left (the table */       \
    /* is rebuilt first), or a walk that passes full groups (their overflow */      \
    /* bits are set only here, once the put cannot fail).  hash is the key's */     \
    /* khl_hashof, whatever the table's size, as for putgrow and putrest. */       \
    static KHL_NOINLINE KHL_UNUSED khl_putres_t khl_putslow_##name(                 \
        khl_t_##name hv, uint64_t hash, khl_keyt_##name key)                        \
    {                                                                               \
        khl_t_##name *h = &hv;                                                      \
        khl_block_t *b = h->b;                                                      \
        unsigned char *ctrl;                                                        \
        uint32_t base, nb;                                                          \
        khl_plan_t p_;                                                              \
        khl_putres_t r;                                                             \
        if (!b || !khl_growth_left(b)) {                                            \
            khl_regions_t r_ = {NULL, NULL, 0, 0};                                  \
            if (b)                                                                  \
                r_ = khl_regionsof_##name(b);                                       \
            if (khl_carryout_##name(khl_table_grow_plan(b, &r_, &khl_typedesc_##name, &p_), &p_, \
                                    &h->b, b, &khl_typedesc_##name, FN, UD, RESIZES) < 0) { \
                r.b = h->b;                                                         \
                r.i = khl_nbuckets_##name(h);                                       \
                r.ret = -1;                                                         \
                return r;                                                           \
            }                                                                       \
        }                                                                           \
        r.b = b = h->b;                                                             \
        nb = b->n_buckets;                                                          \
        ctrl = khl_ctrlof_##name(b);                                                \
        hash = khl_hashin_##name(hash, nb);                                         \
        r.i = khl_find_free(ctrl, nb, khl_shift_of(b), hash, NULL,                  \
                            khl_startbits_##name);                                  \
        base = r.i & ~(KHL_GROUP_WIDTH - 1u);                                       \
        khl_fill_in(b, nb, ctrl + base, khl_group_load(ctrl + base), r.i - base,    \
                    khl_group_tags(khl_tag_in(hash, nb)));                          \
        *khl_keyp_##name(khl_slots_##name(b), nb, r.i) = key;                       \
        r.ret = 1;                                                                  \
        return r;                                                                   \
    }

/* A put into a full one-group table: a one-block storage grows one of */
/* less than a group into twice its buckets here (an object's 5th instance */
/* variable: 340 -> 130 instructions besides the allocator's); the rest is */
/* putslow's.  hash is the key's khl_hashof, or 0 from a put into a */
/* scanned table, which hashes nothing: the growth past the scan hashes */
/* the key here; one that stays scanned (fewer than khl_scanb */
/* buckets) gives it 0's tag, KHL_CTRL_UNTAGGED (I1). */
#define KHL_I_IMPL_PUTGROW(name, FN, UD)                                            \
    static KHL_NOINLINE KHL_UNUSED khl_putres_t khl_putgrow_##name(                 \
        khl_t_##name hv, uint64_t hash, khl_keyt_##name key)                        \
    {                                                                               \
        khl_t_##name *h = &hv;                                                      \
        khl_block_t *old = h->b, *b;                                                \
        const uint32_t onb = old->n_buckets, nb = 2u * onb;                         \
        unsigned char *ctrl;                                                        \
        void *mem;                                                                  \
        khl_putres_t r = {old, onb, -1};                                            \
        if (!khl_smallinline_##name || onb == KHL_GROUP_WIDTH)                      \
            return khl_putslow_##name(                                              \
                hv, onb <= khl_scanb_##name ? khl_hashof_##name(key) : hash, key);  \
        if (!(mem = FN(UD, NULL, 0, khl_small_bytes(nb, &khl_typedesc_##name))))    \
            return r;                                                               \
        if (onb == khl_scanb_##name) {                                              \
            /* Past the scan the keys need their tags (I1): a full scanned */       \
            /* table's khl_scanb, over the untagged bytes copied. */                \
            /* Not into the old block before the copy: the copy's load of */        \
            /* bytes just stored one by one would wait for them to reach the */     \
            /* cache.  Its growth's own call, all constants. */                     \
            char *oslots_ = khl_smallslots_##name(old, khl_ctrlof_##name(old), khl_scanb_##name);       \
            b = khl_grow_small(mem, old, khl_scanb_##name, &khl_typedesc_##name);   \
            ctrl = khl_ctrlof_##name(b);                                            \
            for (uint32_t i_ = 0; i_ < khl_scanb_##name; ++i_)                      \
                ctrl[i_] = khl_tag_small(khl_hashof_##name(*khl_keyp_##name(oslots_, khl_scanb_##name, i_))); \
            hash = khl_hashof_##name(key);                                          \
        } else {                                                                    \
            b = khl_grow_small(mem, old, onb, &khl_typedesc_##name);                \
            ctrl = khl_ctrlof_##name(b);                                            \
        }                                                                           \
        r.b = b;                                                                    \
        FN(UD, old, khl_small_bytes(onb, &khl_typedesc_##name), 0);                 \
        /* The keys kept their buckets: the new ones are empty, and a put */        \
        /* takes the highest. */                                                    \
        ctrl[nb - 1u] = khl_tag_small(hash);                                        \
        b->size++;                                                                  \
        *khl_keyp_##name(khl_smallslots_##name(b, ctrl, nb), nb, nb - 1u) = key;    \
        khl_grow_small_done(b, &khl_typedesc_##name);                               \
        r.i = nb - 1u;                                                              \
        r.ret = 1;                                                                  \
        return r;                                                                   \
    }

/* The end of a put by its out-of-line part: the block and *ret it returns. */
#define KHL_I_PUT_OUT(h, ret, call)                                                 \
    {                                                                               \
        khl_putres_t r_ = call;                                                     \
        (h)->b = r_.b;                                                              \
        *(ret) = r_.ret;                                                            \
        return r_.i;                                                                \
    }

/* The put into a table of more than one group. */
#define KHL_I_IMPL_PUTLARGE(name, eq_fn)                                            \
    /* A put that passed its home group: on with the walk for the key, then */      \
    /* putslow's insertion into the first group with room. */                       \
    static KHL_NOINLINE KHL_UNUSED khl_putres_t khl_putrest_##name(                 \
        khl_t_##name hv, uint64_t hash, khl_keyt_##name key)                        \
    {                                                                               \
        khl_block_t *b = hv.b;                                                      \
        const uint32_t nb = b->n_buckets, mask = nb - KHL_GROUP_WIDTH;              \
        const uint64_t lhash = khl_hashlarge_##name(hash);                          \
        khl_putres_t r = {b, 0, 0};                                                 \
        KHL_I_WALK(name, eq_fn, b, nb, lhash, key, khl_largeslots_##name(b, nb),    \
                   (khl_probe_home(lhash, khl_ext(b)->shift, mask) + KHL_GROUP_WIDTH) & mask, \
                   KHL_GROUP_WIDTH, r.i = i; return r;)                             \
        return khl_putslow_##name(hv, hash, key);                                   \
    }                                                                               \
    /* A put into a table of more than one group: into its home group when */       \
    /* the key is not there, no key passed the group and it has an empty */         \
    /* bucket; the rest out of line (peers, 20k keys: a put 7.5-8.6% fewer */       \
    /* instructions than with the whole walk inline).  Forced inline: called, */    \
    /* its index came back through memory and khl_val reloaded the block (200k */   \
    /* u32 keys: a replace 106 -> 86 instructions). */                              \
    static inline KHL_UNUSED KHL_HOT_INLINE khl_iter_t khl_putlarge_##name(         \
        khl_t_##name *h, khl_block_t *b, uint32_t nb, uint64_t hash, khl_keyt_##name key, int *ret) \
    {                                                                               \
        char *slots = khl_largeslots_##name(b, nb);                                 \
        const uint64_t lhash = khl_hashlarge_##name(hash);                          \
        KHL_I_PREFETCH_HOME(name, b, nb, lhash, slots);                             \
        KHL_I_HOME(name, eq_fn, b, nb, lhash, key, slots, *ret = 0; return i;,      \
                   KHL_I_PUT_OUT(h, ret, khl_putrest_##name(*h, hash, key)),        \
                   const uint32_t f_ = khl_group_empty(w_);                         \
                   if (KHL_UNLIKELY(!f_ || !khl_ext(b)->growth_left))               \
                       KHL_I_PUT_OUT(h, ret, khl_putslow_##name(*h, hash, key))     \
                   const uint32_t j_ = khl_pick_free(f_, lhash, khl_ext(b)->shift,  \
                                                     khl_startbits_##name);         \
                   khl_fill_in(b, nb, ctrl_ + home_, w_, j_, tags_);                \
                   *khl_keyp_##name(slots, nb, home_ + j_) = key;                   \
                   *ret = 1;                                                        \
                   return home_ + j_;)                                              \
    }

/* put: the first block, a tiny table's scan, a one-group table's match
 * inline; a larger table's put by khl_putlarge. */
#define KHL_I_IMPL_PUT(HOT, name, eq_fn)                                            \
    HOT khl_iter_t khl_put_##name(khl_t_##name *h, khl_keyt_##name key, int *ret)   \
    {                                                                               \
        khl_block_t *b = h->b;                                                      \
        uint64_t hash;                                                              \
        uint32_t nb, f_, j;                                                         \
        int dummy;                                                                  \
        if (!ret)                                                                   \
            ret = &dummy;                                                           \
        if (KHL_UNLIKELY(b == NULL))                                                \
            KHL_I_PUT_OUT(h, ret, khl_smallinline_##name                            \
                                      ? khl_putfirst_##name(*h, key)                \
                                      : khl_putslow_##name(*h, khl_hashof_##name(key), key)) \
        nb = b->n_buckets;                                                          \
        /* No hint, as in KHL_I_FIND: a replace of 1M u64 keys to 448-bit */        \
        /* values 1.25 -> 1.16 of boost's time, mruby's scripts +0.02% at most. */  \
        if (nb > KHL_GROUP_WIDTH)                                                   \
            return khl_putlarge_##name(h, b, nb, khl_hashof_##name(key), key, ret); \
        if (nb <= khl_scanb_##name) {                                               \
            /* A bucket not full is empty (I4).  j: the */                          \
            /* highest; a byte store, which the next scan's loads forward. */       \
            j = UINT32_MAX;                                                         \
            KHL_I_SCAN(name, eq_fn, b, nb, key, *ret = 0; return i;,                \
                       if (j == UINT32_MAX) j = i;)                                 \
            /* No hash: the bucket is marked full (I1), and only a growth */        \
            /* past the scan tags the keys. */                                      \
            if (KHL_UNLIKELY(j == UINT32_MAX))                                      \
                KHL_I_PUT_OUT(h, ret, khl_putgrow_##name(*h, 0, key))               \
            sctrl_[j] = KHL_CTRL_UNTAGGED;                                          \
            b->size++;                                                              \
            *khl_keyp_##name(slots_, nb, j) = key;                                  \
            *ret = 1;                                                               \
            return j;                                                               \
        }                                                                           \
        {                                                                           \
            /* A free bucket is an empty one (I4), and the */                       \
            /* table may fill.  Puts fill from the highest bucket down (the */      \
            /* block's description): with no hole left by a deletion, the */        \
            /* bucket is nb - 1 - size, known without this put's match, so */       \
            /* the next put's window load no longer waits for it (8 puts */         \
            /* into a new u32 table: 55 -> 37 ns).  Else the highest empty. */      \
            hash = khl_hashof_##name(key);                                          \
            KHL_I_SMALL_LOOKUP(name, eq_fn, b, nb, hash, key, *ret = 0; return i;)  \
            f_ = khl_group_small_free(w_) & khl_small_mask(nb);                     \
            j = nb - 1u - b->size;                                                  \
            if (KHL_UNLIKELY(j >= nb || !((f_ >> j) & 1u))) {                       \
                if (KHL_UNLIKELY(!f_))                                              \
                    KHL_I_PUT_OUT(h, ret, khl_putgrow_##name(*h, hash, key))        \
                j = khl_mask_highest(f_);                                           \
            }                                                                       \
            khl_group_store(ctrl_, khl_group_with(w_, j, khl_tag_small(hash)));     \
            b->size++;                                                              \
            *khl_keyp_##name(slots_, nb, j) = key;                                  \
            *ret = 1;                                                               \
            return j;                                                               \
        }                                                                           \
    }

/* del: the deletion of the key in a bucket. */
#define KHL_I_IMPL_DEL(HOT, name)                                                   \
    HOT void khl_delat_##name(khl_t_##name *h, khl_iter_t k)                        \
    {                                                                               \
        unsigned char *ctrl;                                                        \
        if (!h->b || k >= h->b->n_buckets)                                          \
            return;                                                                 \
        ctrl = khl_ctrlof_##name(h->b);                                             \
        if (ctrl[k] != KHL_CTRL_EMPTY)                                              \
            khl_erase_at(h->b, ctrl, k);                                            \
    }

/* KHL_INIT (khashlite.h) on storage S: khl_single, the one block; a
 * benchmark's other storages run the same table code. */
#define KHL_I_INIT_STORAGE(name, khkey_t, khval_t, is_map, hash_fn, eq_fn, S)       \
    KHL_I_TYPE(name, khkey_t, khval_t, is_map, S, const khl_allocator_t *, a)       \
    KHL_I_IMPL(static inline KHL_UNUSED, static inline KHL_UNUSED KHL_HOT_INLINE, name, hash_fn, eq_fn, \
               const khl_allocator_t *, a, KHL_I_HOOK_FN, KHL_I_HOOK_UD, KHL_I_HOOK_RESIZES)

/* KHL_INIT_ALLOC (khashlite.h): the allocator is allocf, the handle's
 * second word its ud.  The table calls it through a function of its own,
 * inline: the rebuild takes the allocator as a pointer, and allocf may be
 * a function-like macro, which has no address. */
#define KHL_I_INIT_ALLOC(name, khkey_t, khval_t, is_map, hash_fn, eq_fn, allocf)    \
    KHL_I_TYPE(name, khkey_t, khval_t, is_map, khl_single, void *, ud)              \
    static inline KHL_UNUSED void *khl_allocfn_##name(void *ud, void *p, size_t osize, size_t nsize) \
    {                                                                               \
        return allocf(ud, p, osize, nsize);                                         \
    }                                                                               \
    KHL_I_IMPL(static inline KHL_UNUSED, static inline KHL_UNUSED KHL_HOT_INLINE, name, hash_fn, eq_fn, \
               void *, ud, khl_allocfn_##name, h->ud, KHL_I_DECLARED(KHL_ALLOC_RESIZES_##allocf))

#endif /* KHL_TABLE_IMPL_H */
