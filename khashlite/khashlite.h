/* khashlite.h: type-generic open-addressing hash tables whose whole state
 * (header, control bytes, keys, values) lives in ONE allocation, obtained
 * through a Lua-style allocator hook.
 *
 * ---------------------------------------------------------------------------
 * Quick example
 *
 *     #include "khashlite/khashlite.h"
 *     KHL_MAP_INIT_INT(m32, double)          // no semicolon, as in khash
 *
 *     khl_t(m32) h;
 *     khl_init(m32, &h, NULL);               // libc allocator, allocates nothing
 *     int ret;
 *     khl_iter_t k = khl_put(m32, &h, 42, &ret);
 *     if (ret < 0) { ... out of memory: h is exactly as before ... }
 *     khl_val(m32, &h, k) = 3.5;
 *     k = khl_get(m32, &h, 42);              // khl_end(m32, &h) when absent
 *     khl_del(m32, &h, k);
 *     khl_destroy(m32, &h);
 *
 * ---------------------------------------------------------------------------
 * Allocator hook (the shape of Lua's lua_Alloc)
 *
 *     fn(ud, NULL, 0, n)         allocate n bytes, NULL on failure
 *     fn(ud, p, osize, 0)        free p (osize is exactly what was allocated), returns NULL
 *     fn(ud, p, osize, nsize)    resize (tables never ask for this)
 *
 * Every block a table frees is passed with the exact size it was allocated
 * with, so a pool needs no per-block header.  Blocks must be aligned for
 * max_align_t.
 *
 * ---------------------------------------------------------------------------
 * Contract
 *
 * - The handle khl_t(name) is owned by the caller.  A zero-initialised handle
 *   is an empty table on the libc allocator.  The handle points at the block
 *   and names the allocator; the block moves on growth, the handle does not.
 * - An empty table (never filled, destroyed, or shrunk while empty) holds no
 *   allocation.  A non-empty one holds exactly one: header, control bytes,
 *   keys, values, each region aligned for its type.  A resize allocates the
 *   new block, moves the keys, then frees the old block.
 * - Out of memory: the call returns -1 (khl_put: *ret = -1 and khl_end) and
 *   the table is exactly as it was.  Nothing leaks.
 * - A khl_put of a key already present never allocates and never fails.
 * - Bucket indices stay valid until the next call that can allocate
 *   (khl_put, khl_reserve, khl_shrink, khl_copy into this table).  khl_del
 *   moves nothing, so deleting the current key during a forward walk over
 *   khl_begin..khl_end visits every other key exactly once.
 * - Probe loops are bounded by the number of groups and deleted buckets are
 *   counted against the load limit, so any put/del sequence on a table that
 *   never holds more than N keys keeps probe lengths and block size bounded.
 * - Sizes that cannot be represented (more than KHL_MAX_BUCKETS buckets, or a
 *   block larger than SIZE_MAX) fail with -1; nothing wraps.
 * - hash_fn and eq_fn must not touch the table they are called for.
 * - Not thread-safe: concurrent readers are fine, any writer needs exclusion.
 *
 * ---------------------------------------------------------------------------
 * Design
 *
 * Buckets come in aligned groups of 8.  Each bucket has one control byte:
 * 0x80 empty, 0xFE deleted, or 0x00..0x7F, the low 7 bits of the key's hash.
 * A probe loads a group's 8 control bytes as one 64-bit word and compares all
 * of them at once (SWAR), so a key comparison happens only for a 7-bit
 * fragment match (1 in 128 per occupied bucket).  Groups are visited by
 * triangular steps, which reach every group of a power-of-two table.  A
 * lookup ends at the first group holding an empty bucket; a deletion leaves
 * an empty bucket where the group still has one (no probe can have passed
 * that group) and a tombstone otherwise.
 *
 * Block layout (one allocation):  [header 16 B][ctrl: n B][keys: n x K][vals: n x V]
 * with padding before keys and vals to their alignment.
 *
 * hash_fn must return a well-mixed 64-bit value: its low 7 bits are the
 * fragment and the bits above select the group.  khl_hash_u32/u64/str/bytes
 * are; an identity hash is not.
 */
#ifndef KHASHLITE_H
#define KHASHLITE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KHL_VERSION "0.1.0"

/* ------------------------------------------------------------------------ */
/* Configuration                                                             */

/* Maximum fraction of buckets that may be occupied (live keys plus deleted
 * buckets) before a put rebuilds the table.  Define before the include; it is
 * clamped so that at least one bucket stays empty.  0.875 (7/8) is the
 * default: it halves the memory of a table that sits just below a power of
 * two; near that load misses slow down (8-bucket groups fill up), so lower it
 * where absent-key lookups dominate (README, "Load factor", has the figures). */
#ifndef KHL_MAX_LOAD
#define KHL_MAX_LOAD 0.875
#endif

#define KHL_MIN_BUCKETS 8u              /* one group */
#define KHL_MAX_BUCKETS 0x80000000u     /* 2^31 */

/* Internal: the table layout.  Only the benchmarks choose another one, through
 * KHL_INIT_LAYOUT, to measure what the single block gains. */
#define KHL_LAYOUT_SINGLE 0   /* [hdr|ctrl|keys|vals] one allocation */
#define KHL_LAYOUT_SPLIT2 1   /* hdr + [ctrl|keys|vals]: mruby since 2013 */
#define KHL_LAYOUT_SPLIT3 2   /* hdr + ctrl + keys + vals: klib's khash */

/* ------------------------------------------------------------------------ */
/* Allocator hook                                                            */

typedef uint32_t khl_iter_t;    /* bucket index */
typedef void *(*khl_allocf)(void *ud, void *ptr, size_t osize, size_t nsize);
typedef struct khl_allocator { khl_allocf fn; void *ud; } khl_allocator_t;

extern const khl_allocator_t khl_libc_allocator;   /* malloc/realloc/free */

/* ------------------------------------------------------------------------ */
/* Hashing                                                                   */

/* Process-wide seed of khl_hash_str and khl_hash_bytes: random per process
 * unless fixed here.  Call it before creating string-keyed tables; tables
 * filled under another seed cannot find their keys afterwards. */
void     khl_seed(uint64_t seed);
uint64_t khl_hash_str(const char *s);                  /* XXH3-64, seeded */
uint64_t khl_hash_bytes(const void *p, size_t n);      /* XXH3-64, seeded */

/* Integer hashes are unseeded bijective mixers (never the identity). */
static inline uint64_t khl_hash_u64(uint64_t x)
{
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ULL;
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ULL;
    x ^= x >> 32;
    return x;
}

static inline uint64_t khl_hash_u32(uint32_t x)
{
    uint64_t h = (uint64_t)x * 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 32);
}

#define khl_eq_int(a, b) ((a) == (b))
#define khl_eq_str(a, b) (strcmp((a), (b)) == 0)

/* ------------------------------------------------------------------------ */
/* Internals shared by every table type (not part of the API)                */

#if defined(__GNUC__) || defined(__clang__)
#define KHL_UNUSED __attribute__((unused))
#define KHL_PREFETCH(p) __builtin_prefetch(p)
#define KHL_LIKELY(x) __builtin_expect(!!(x), 1)
#define KHL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define KHL_UNUSED
#define KHL_PREFETCH(p) ((void)(p))
#define KHL_LIKELY(x) (x)
#define KHL_UNLIKELY(x) (x)
#endif

#ifdef __cplusplus
#define KHL_ALIGNOF(t) alignof(t)
#define KHL_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define KHL_ALIGNOF(t) _Alignof(t)
#define KHL_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

#define KHL_CTRL_EMPTY   ((unsigned char)0x80)
#define KHL_CTRL_DELETED ((unsigned char)0xFE)
#define KHL_GROUP 8u

/* What every table's storage starts with.  n_occupied counts live keys plus
 * deleted buckets: it is what the load limit is checked against. */
typedef struct khl_hdr {
    uint32_t n_buckets, size, n_occupied, upper_bound;
} khl_hdr_t;

/* The split layouts keep region pointers after the header. */
typedef struct khl_split_hdr {
    khl_hdr_t h;
    unsigned char *ctrl;
    void *keys, *vals;
} khl_split_hdr_t;

/* Where a table's regions are, and for a table being built, its memory. */
typedef struct khl_regions {
    khl_hdr_t *hdr;          /* the single block, or the split header */
    unsigned char *ctrl;
    char *keys, *vals;
    uint32_t n_buckets;
    int new_hdr;             /* split layouts: hdr was allocated for this build */
} khl_regions_t;

/* Sizes of one table type, all compile-time constants once inlined. */
typedef struct khl_shape {
    size_t ksize, kalign, vsize, valign;
    int layout;
} khl_shape_t;

static inline const khl_allocator_t *khl_alloc_of(const khl_allocator_t *a)
{
    return a ? a : &khl_libc_allocator;
}

static inline size_t khl_align_up(size_t x, size_t a)
{
    return (x + a - 1) & ~(a - 1);
}

static inline size_t khl_hdr_bytes(int layout)
{
    return layout == KHL_LAYOUT_SINGLE ? sizeof(khl_hdr_t) : sizeof(khl_split_hdr_t);
}

/* Byte offsets of the regions inside one block holding ctrl, keys and vals
 * after `base` bytes of header (single: the header; split2: none).  Returns
 * the block size, 0 when it does not fit in size_t. */
static inline size_t khl_block_layout(size_t base, uint32_t nb, const khl_shape_t *s,
                                      size_t *keys_off, size_t *vals_off)
{
    size_t ko = khl_align_up(base + nb, s->kalign), vo;
    if (s->ksize && nb > (SIZE_MAX - ko - s->valign) / s->ksize)
        return 0;
    vo = khl_align_up(ko + (size_t)nb * s->ksize, s->valign);
    if (s->vsize && nb > (SIZE_MAX - vo) / s->vsize)
        return 0;
    if (keys_off) *keys_off = ko;
    if (vals_off) *vals_off = vo;
    return vo + (size_t)nb * s->vsize;
}

/* Region pointers of a live table; all-NULL when it has no storage. */
static inline khl_regions_t khl_regions_of(khl_hdr_t *b, const khl_shape_t *s)
{
    khl_regions_t r;
    size_t ko = 0, vo = 0;
    r.hdr = b;
    r.new_hdr = 0;
    r.n_buckets = b ? b->n_buckets : 0;
    if (!b) {
        r.ctrl = NULL; r.keys = r.vals = NULL;
    } else if (s->layout == KHL_LAYOUT_SINGLE) {
        khl_block_layout(sizeof(khl_hdr_t), r.n_buckets, s, &ko, &vo);
        r.ctrl = (unsigned char *)b + sizeof(khl_hdr_t);
        r.keys = (char *)b + ko;
        r.vals = (char *)b + vo;
    } else {
        khl_split_hdr_t *sh = (khl_split_hdr_t *)(void *)b;
        r.ctrl = sh->ctrl;
        r.keys = (char *)sh->keys;
        r.vals = (char *)sh->vals;
    }
    return r;
}

/* Keys region only: the lookup fast path. */
static inline char *khl_keys_of(khl_hdr_t *b, const khl_shape_t *s)
{
    if (s->layout != KHL_LAYOUT_SINGLE)
        return (char *)((khl_split_hdr_t *)(void *)b)->keys;
    return (char *)b + khl_align_up(sizeof(khl_hdr_t) + b->n_buckets, s->kalign);
}

static inline char *khl_vals_of(khl_hdr_t *b, const khl_shape_t *s)
{
    size_t ko;
    if (s->layout != KHL_LAYOUT_SINGLE)
        return (char *)((khl_split_hdr_t *)(void *)b)->vals;
    ko = khl_align_up(sizeof(khl_hdr_t) + b->n_buckets, s->kalign);
    return (char *)b + khl_align_up(ko + (size_t)b->n_buckets * s->ksize, s->valign);
}

static inline unsigned char *khl_ctrl_of(khl_hdr_t *b, const khl_shape_t *s)
{
    if (s->layout != KHL_LAYOUT_SINGLE)
        return ((khl_split_hdr_t *)(void *)b)->ctrl;
    return (unsigned char *)b + sizeof(khl_hdr_t);
}

static inline uint32_t khl_upper_bound(uint32_t nb)
{
    double u = (double)nb * (double)(KHL_MAX_LOAD);
    uint32_t up = u < 1.0 ? 1u : (u >= (double)nb ? nb - 1u : (uint32_t)u);
    return up < 1u ? 1u : up;
}

/* Smallest bucket count whose load limit admits n keys; 0 if none does. */
static inline uint32_t khl_buckets_for(size_t n)
{
    uint32_t nb = KHL_MIN_BUCKETS;
    while ((size_t)khl_upper_bound(nb) < n) {
        if (nb >= KHL_MAX_BUCKETS)
            return 0;
        nb <<= 1;
    }
    return nb;
}

/* Bytes each allocation of a table of nb buckets takes, for khl_block_size. */
static inline size_t khl_storage_bytes(uint32_t nb, const khl_shape_t *s)
{
    if (nb == 0)
        return 0;
    if (s->layout == KHL_LAYOUT_SINGLE)
        return khl_block_layout(sizeof(khl_hdr_t), nb, s, NULL, NULL);
    if (s->layout == KHL_LAYOUT_SPLIT2)
        return sizeof(khl_split_hdr_t) + khl_block_layout(0, nb, s, NULL, NULL);
    return sizeof(khl_split_hdr_t) + nb + nb * s->ksize + nb * s->vsize;
}

/* Allocates storage for nb buckets into r, ctrl all empty.  The split
 * layouts reuse the table's existing header `old` (allocating one if none).
 * On failure frees what it took and returns -1. */
static inline int khl_storage_alloc(const khl_allocator_t *a, khl_hdr_t *old, uint32_t nb,
                                    const khl_shape_t *s, khl_regions_t *r)
{
    size_t ko = 0, vo = 0, bytes;
    r->n_buckets = nb;
    r->new_hdr = 0;
    if (s->layout == KHL_LAYOUT_SPLIT3) {
        size_t kb = (size_t)nb * s->ksize, vb = (size_t)nb * s->vsize;
        if ((s->ksize && kb / s->ksize != nb) || (s->vsize && vb / s->vsize != nb))
            return -1;
        r->hdr = old;
        if (!old) {
            r->hdr = (khl_hdr_t *)a->fn(a->ud, NULL, 0, sizeof(khl_split_hdr_t));
            if (!r->hdr) return -1;
            r->new_hdr = 1;
        }
        r->ctrl = (unsigned char *)a->fn(a->ud, NULL, 0, nb);
        r->keys = (char *)a->fn(a->ud, NULL, 0, kb);
        r->vals = vb ? (char *)a->fn(a->ud, NULL, 0, vb) : NULL;
        if (!r->ctrl || !r->keys || (vb && !r->vals)) {
            if (r->ctrl) a->fn(a->ud, r->ctrl, nb, 0);
            if (r->keys) a->fn(a->ud, r->keys, kb, 0);
            if (r->vals) a->fn(a->ud, r->vals, vb, 0);
            if (r->new_hdr) a->fn(a->ud, r->hdr, sizeof(khl_split_hdr_t), 0);
            return -1;
        }
    } else {
        size_t base = s->layout == KHL_LAYOUT_SINGLE ? sizeof(khl_hdr_t) : 0;
        char *mem;
        bytes = khl_block_layout(base, nb, s, &ko, &vo);
        if (!bytes)
            return -1;
        if (s->layout == KHL_LAYOUT_SPLIT2) {
            r->hdr = old;
            if (!old) {
                r->hdr = (khl_hdr_t *)a->fn(a->ud, NULL, 0, sizeof(khl_split_hdr_t));
                if (!r->hdr) return -1;
                r->new_hdr = 1;
            }
        }
        mem = (char *)a->fn(a->ud, NULL, 0, bytes);
        if (!mem) {
            if (r->new_hdr) a->fn(a->ud, r->hdr, sizeof(khl_split_hdr_t), 0);
            return -1;
        }
        if (s->layout == KHL_LAYOUT_SINGLE)
            r->hdr = (khl_hdr_t *)(void *)mem;
        r->ctrl = (unsigned char *)mem + base;
        r->keys = mem + ko;
        r->vals = mem + vo;
    }
    memset(r->ctrl, KHL_CTRL_EMPTY, nb);
    return 0;
}

/* Frees a table's bucket storage; the split header too when `all`. */
static inline void khl_storage_free(const khl_allocator_t *a, khl_hdr_t *b,
                                    const khl_shape_t *s, int all)
{
    uint32_t nb;
    if (!b)
        return;
    nb = b->n_buckets;
    if (s->layout == KHL_LAYOUT_SINGLE) {
        a->fn(a->ud, b, khl_block_layout(sizeof(khl_hdr_t), nb, s, NULL, NULL), 0);
        return;
    }
    {
        khl_split_hdr_t *sh = (khl_split_hdr_t *)(void *)b;
        if (s->layout == KHL_LAYOUT_SPLIT2) {
            a->fn(a->ud, sh->ctrl, khl_block_layout(0, nb, s, NULL, NULL), 0);
        } else {
            a->fn(a->ud, sh->ctrl, nb, 0);
            a->fn(a->ud, sh->keys, (size_t)nb * s->ksize, 0);
            if (s->vsize)
                a->fn(a->ud, sh->vals, (size_t)nb * s->vsize, 0);
        }
        if (all)
            a->fn(a->ud, b, sizeof(khl_split_hdr_t), 0);
    }
}

/* Makes the storage in r the table's: writes the counters (and for split
 * layouts the region pointers) and returns the new block/header pointer. */
static inline khl_hdr_t *khl_storage_install(const khl_regions_t *r, uint32_t size,
                                             uint32_t n_occupied, const khl_shape_t *s)
{
    khl_hdr_t *b = r->hdr;
    b->n_buckets = r->n_buckets;
    b->size = size;
    b->n_occupied = n_occupied;
    b->upper_bound = khl_upper_bound(r->n_buckets);
    if (s->layout != KHL_LAYOUT_SINGLE) {
        khl_split_hdr_t *sh = (khl_split_hdr_t *)(void *)b;
        sh->ctrl = r->ctrl;
        sh->keys = r->keys;
        sh->vals = r->vals;
    }
    return b;
}

/* --- group scanning: 8 control bytes as one little-endian word ---------- */

#define KHL_LSB 0x0101010101010101ULL
#define KHL_MSB 0x8080808080808080ULL

static inline uint64_t khl_group_load(const unsigned char *ctrl, uint32_t base)
{
    uint64_t w;
    memcpy(&w, ctrl + base, sizeof w);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

/* Control bytes are written a whole group word at a time: a byte store
 * followed by the next probe's 8-byte load of the same word defeats the CPU's
 * store-to-load forwarding and stalls every put into a small table. */
static inline void khl_group_store(unsigned char *ctrl, uint32_t base, uint64_t w)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    memcpy(ctrl + base, &w, sizeof w);
}

/* w with byte i (0 = lowest bucket of the group) replaced by c. */
static inline uint64_t khl_group_with(uint64_t w, uint32_t i, unsigned char c)
{
    return (w & ~((uint64_t)0xff << (i * 8))) | ((uint64_t)c << (i * 8));
}

static inline unsigned char khl_group_byte(uint64_t w, uint32_t i)
{
    return (unsigned char)(w >> (i * 8));
}

/* High bit set in each byte equal to b (exact: no borrow between bytes). */
static inline uint64_t khl_group_match(uint64_t w, unsigned char b)
{
    uint64_t x = w ^ (KHL_LSB * b);
    return ~(((x & ~KHL_MSB) + ~KHL_MSB) | x | ~KHL_MSB);
}

/* Empty is 0x80: high bit set, bit 1 clear (deleted 0xFE has bit 1 set). */
static inline uint64_t khl_group_empty(uint64_t w)
{
    return w & (~w << 6) & KHL_MSB;
}

static inline uint64_t khl_group_free(uint64_t w)      /* empty or deleted */
{
    return w & KHL_MSB;
}

static inline uint32_t khl_lowest_byte(uint64_t m)     /* m != 0 */
{
#if defined(__GNUC__) || defined(__clang__)
    return (uint32_t)__builtin_ctzll(m) >> 3;
#else
    uint32_t i = 0;
    while (!(m & 0x80)) { m >>= 8; ++i; }
    return i;
#endif
}

/* First free bucket on the probe path of `hash` (the table has one: the load
 * limit keeps at least one bucket empty); *word is its group's control word. */
static inline uint32_t khl_find_free(const unsigned char *ctrl, uint32_t nb, uint64_t hash,
                                     uint64_t *word)
{
    uint32_t gmask = nb / KHL_GROUP - 1, g = (uint32_t)(hash >> 7) & gmask, step = 0;
    for (;;) {
        uint64_t w = khl_group_load(ctrl, g * KHL_GROUP), f = khl_group_free(w);
        if (f) {
            *word = w;
            return g * KHL_GROUP + khl_lowest_byte(f);
        }
        g = (g + ++step) & gmask;
    }
}

static inline unsigned char khl_fragment(uint64_t hash)
{
    return (unsigned char)(hash & 0x7f);
}

/* Marks bucket k free after a deletion (see the design note above).  No
 * branch: whether the group has an empty bucket is data-dependent, and a
 * mispredict here stalls the loads of the deletes that follow. */
static inline void khl_erase_at(khl_hdr_t *b, unsigned char *ctrl, uint32_t k)
{
    uint32_t base = k & ~(KHL_GROUP - 1);
    uint64_t w = khl_group_load(ctrl, base);
    uint32_t empty = khl_group_empty(w) != 0;
    unsigned char c = (unsigned char)(KHL_CTRL_DELETED - empty * (KHL_CTRL_DELETED - KHL_CTRL_EMPTY));
    khl_group_store(ctrl, base, khl_group_with(w, k - base, c));
    b->n_occupied -= empty;
    b->size--;
}

/* ------------------------------------------------------------------------ */
/* Type generation                                                           */

/* The handle and the inline accessors the public macros expand to. */
#define KHL_I_TYPE(name, khkey_t, khval_t, is_map, layout)                          \
    typedef struct khl_##name##__t {                                                \
        khl_hdr_t *b;                                                               \
        const khl_allocator_t *a;                                                   \
    } khl_##name##__t;                                                              \
    typedef khkey_t khl_##name##__key_t;                                            \
    typedef khval_t khl_##name##__val_t;                                            \
    static const khl_shape_t khl_##name##__shape KHL_UNUSED = {                     \
        sizeof(khkey_t), KHL_ALIGNOF(khkey_t),                                      \
        (is_map) ? sizeof(khval_t) : 0, KHL_ALIGNOF(khval_t), (layout)};             \
    static inline KHL_UNUSED khl_##name##__key_t *khl_##name##__keyp(              \
        const khl_##name##__t *h, khl_iter_t k)                                     \
    {                                                                               \
        return (khl_##name##__key_t *)(void *)khl_keys_of(h->b, &khl_##name##__shape) + k; \
    }                                                                               \
    static inline KHL_UNUSED khl_##name##__val_t *khl_##name##__valp(              \
        const khl_##name##__t *h, khl_iter_t k)                                     \
    {                                                                               \
        return (khl_##name##__val_t *)(void *)khl_vals_of(h->b, &khl_##name##__shape) + k; \
    }                                                                               \
    static inline KHL_UNUSED int khl_##name##__exist(const khl_##name##__t *h,      \
                                                     khl_iter_t k)                  \
    {                                                                               \
        return khl_ctrl_of(h->b, &khl_##name##__shape)[k] < KHL_CTRL_EMPTY;          \
    }                                                                               \
    static inline KHL_UNUSED khl_iter_t khl_##name##__n_buckets(const khl_##name##__t *h) \
    {                                                                               \
        return h->b ? h->b->n_buckets : 0u;                                         \
    }                                                                               \
    static inline KHL_UNUSED khl_iter_t khl_##name##__size(const khl_##name##__t *h) \
    {                                                                               \
        return h->b ? h->b->size : 0u;                                              \
    }                                                                               \
    static inline KHL_UNUSED size_t khl_##name##__block_size(const khl_##name##__t *h) \
    {                                                                               \
        return khl_storage_bytes(h->b ? h->b->n_buckets : 0u, &khl_##name##__shape); \
    }

#define KHL_I_PROTOTYPES(name, khkey_t)                                             \
    void khl_##name##__init(khl_##name##__t *h, const khl_allocator_t *a);          \
    void khl_##name##__destroy(khl_##name##__t *h);                                 \
    void khl_##name##__clear(khl_##name##__t *h);                                   \
    int khl_##name##__reserve(khl_##name##__t *h, size_t n);                        \
    int khl_##name##__shrink(khl_##name##__t *h);                                   \
    khl_iter_t khl_##name##__get(const khl_##name##__t *h, khl_##name##__key_t key);            \
    khl_iter_t khl_##name##__put(khl_##name##__t *h, khl_##name##__key_t key, int *ret);        \
    void khl_##name##__del(khl_##name##__t *h, khl_iter_t k);                       \
    int khl_##name##__copy(khl_##name##__t *dst, const khl_##name##__t *src);

/* The operations.  SCOPE is "static inline KHL_UNUSED" or empty (DEFINE). */
#define KHL_I_IMPL(SCOPE, name, khkey_t, khval_t, is_map, hash_fn, eq_fn)          \
    SCOPE void khl_##name##__init(khl_##name##__t *h, const khl_allocator_t *a)     \
    {                                                                               \
        h->b = NULL;                                                                \
        h->a = a;                                                                   \
    }                                                                               \
    SCOPE void khl_##name##__destroy(khl_##name##__t *h)                            \
    {                                                                               \
        khl_storage_free(khl_alloc_of(h->a), h->b, &khl_##name##__shape, 1);        \
        h->b = NULL;                                                                \
    }                                                                               \
    SCOPE void khl_##name##__clear(khl_##name##__t *h)                              \
    {                                                                               \
        if (!h->b)                                                                  \
            return;                                                                 \
        memset(khl_ctrl_of(h->b, &khl_##name##__shape), KHL_CTRL_EMPTY,             \
               h->b->n_buckets);                                                    \
        h->b->size = h->b->n_occupied = 0;                                          \
    }                                                                               \
    SCOPE khl_iter_t khl_##name##__get(const khl_##name##__t *h, khl_##name##__key_t key)       \
    {                                                                               \
        khl_hdr_t *b = h->b;                                                        \
        const unsigned char *ctrl;                                                  \
        const khl_##name##__key_t *keys;                                                        \
        uint64_t hash;                                                              \
        uint32_t gmask, g, step = 0;                                                \
        unsigned char frag;                                                         \
        if (!b)                                                                     \
            return 0;                                                               \
        ctrl = khl_ctrl_of(b, &khl_##name##__shape);                                \
        keys = (const khl_##name##__key_t *)(const void *)khl_keys_of(b, &khl_##name##__shape); \
        hash = (uint64_t)(hash_fn(key));                                            \
        frag = khl_fragment(hash);                                                  \
        gmask = b->n_buckets / KHL_GROUP - 1;                                       \
        g = (uint32_t)(hash >> 7) & gmask;                                          \
        /* Start the keys' line while the control word arrives: in a table */      \
        /* larger than the cache that halves a delete's wait for its key. */       \
        KHL_PREFETCH(&keys[g * KHL_GROUP]);                                         \
        for (;;) {                                                                  \
            uint64_t w = khl_group_load(ctrl, g * KHL_GROUP);                       \
            uint64_t m = khl_group_match(w, frag);                                  \
            while (m) {                                                             \
                uint32_t i = g * KHL_GROUP + khl_lowest_byte(m);                    \
                if (KHL_LIKELY(eq_fn(keys[i], key)))                                \
                    return i;                                                       \
                m &= m - 1;                                                         \
            }                                                                       \
            if (KHL_LIKELY(khl_group_empty(w)) || step == gmask)                    \
                return b->n_buckets;                                                \
            g = (g + ++step) & gmask;                                               \
        }                                                                           \
    }                                                                               \
    /* Moves every live key of the table into fresh storage r. */                   \
    static inline KHL_UNUSED void khl_##name##__move(const khl_##name##__t *h, khl_regions_t *r) \
    {                                                                               \
        khl_regions_t o = khl_regions_of(h->b, &khl_##name##__shape);               \
        khl_##name##__key_t *ok = (khl_##name##__key_t *)(void *)o.keys, *nk = (khl_##name##__key_t *)(void *)r->keys;  \
        khl_##name##__val_t *ov = (khl_##name##__val_t *)(void *)o.vals, *nv = (khl_##name##__val_t *)(void *)r->vals;  \
        uint32_t i;                                                                 \
        for (i = 0; i < o.n_buckets; ++i) {                                         \
            uint64_t hash, w;                                                       \
            uint32_t j;                                                             \
            if (o.ctrl[i] >= KHL_CTRL_EMPTY)                                        \
                continue;                                                           \
            hash = (uint64_t)(hash_fn(ok[i]));                                      \
            j = khl_find_free(r->ctrl, r->n_buckets, hash, &w);                     \
            khl_group_store(r->ctrl, j & ~(KHL_GROUP - 1),                          \
                            khl_group_with(w, j % KHL_GROUP, khl_fragment(hash)));  \
            nk[j] = ok[i];                                                          \
            if (is_map)                                                             \
                nv[j] = ov[i];                                                      \
        }                                                                           \
    }                                                                               \
    /* Rebuilds into nb buckets, dropping tombstones; -1 and unchanged on OOM. */  \
    static inline KHL_UNUSED int khl_##name##__rebuild(khl_##name##__t *h, uint32_t nb)        \
    {                                                                               \
        const khl_allocator_t *a = khl_alloc_of(h->a);                              \
        khl_regions_t r;                                                            \
        uint32_t size = h->b ? h->b->size : 0u;                                     \
        if (khl_storage_alloc(a, h->b, nb, &khl_##name##__shape, &r) < 0)           \
            return -1;                                                              \
        khl_##name##__move(h, &r);                                                  \
        khl_storage_free(a, h->b, &khl_##name##__shape, 0);                         \
        h->b = khl_storage_install(&r, size, size, &khl_##name##__shape);           \
        return 0;                                                                   \
    }                                                                               \
    SCOPE int khl_##name##__reserve(khl_##name##__t *h, size_t n)                   \
    {                                                                               \
        khl_hdr_t *b = h->b;                                                        \
        size_t need = n > (b ? b->size : 0u) ? n - (b ? b->size : 0u) : 0;         \
        uint32_t nb;                                                                \
        if (!need || (b && b->upper_bound - b->n_occupied >= need))                 \
            return 0;                                                               \
        nb = khl_buckets_for(b && b->size > n ? b->size : n);                       \
        if (!nb)                                                                    \
            return -1;                                                              \
        if (b && nb < b->n_buckets)                                                 \
            nb = b->n_buckets;                                                      \
        return khl_##name##__rebuild(h, nb);                                        \
    }                                                                               \
    SCOPE int khl_##name##__shrink(khl_##name##__t *h)                              \
    {                                                                               \
        uint32_t nb;                                                                \
        if (!h->b)                                                                  \
            return 0;                                                               \
        if (h->b->size == 0) {                                                      \
            khl_##name##__destroy(h);                                               \
            return 0;                                                               \
        }                                                                           \
        nb = khl_buckets_for(h->b->size);                                           \
        return nb < h->b->n_buckets ? khl_##name##__rebuild(h, nb) : 0;             \
    }                                                                               \
    SCOPE khl_iter_t khl_##name##__put(khl_##name##__t *h, khl_##name##__key_t key, int *ret)   \
    {                                                                               \
        khl_hdr_t *b = h->b;                                                        \
        khl_##name##__key_t *keys;                                                              \
        unsigned char *ctrl;                                                        \
        uint64_t hash = (uint64_t)(hash_fn(key));                                   \
        unsigned char frag = khl_fragment(hash);                                    \
        uint32_t slot = UINT32_MAX;                                                 \
        uint64_t slot_word = 0;                                                     \
        int dummy;                                                                  \
        if (!ret)                                                                   \
            ret = &dummy;                                                           \
        if (b) {                                                                    \
            uint32_t gmask = b->n_buckets / KHL_GROUP - 1, step = 0;                \
            uint32_t g = (uint32_t)(hash >> 7) & gmask;                             \
            ctrl = khl_ctrl_of(b, &khl_##name##__shape);                            \
            keys = (khl_##name##__key_t *)(void *)khl_keys_of(b, &khl_##name##__shape);         \
            for (;;) {                                                              \
                uint64_t w = khl_group_load(ctrl, g * KHL_GROUP);                   \
                uint64_t m = khl_group_match(w, frag), f;                           \
                while (m) {                                                         \
                    uint32_t i = g * KHL_GROUP + khl_lowest_byte(m);                \
                    if (eq_fn(keys[i], key)) {                                      \
                        *ret = 0;                                                   \
                        return i;                                                   \
                    }                                                               \
                    m &= m - 1;                                                     \
                }                                                                   \
                f = khl_group_free(w);                                              \
                if (slot == UINT32_MAX && f) {                                      \
                    slot = g * KHL_GROUP + khl_lowest_byte(f);                      \
                    slot_word = w;                                                  \
                }                                                                   \
                if (khl_group_empty(w) || step == gmask)                            \
                    break;                                                          \
                g = (g + ++step) & gmask;                                           \
            }                                                                       \
            /* An empty bucket raises the load; a tombstone does not. */            \
            if (slot != UINT32_MAX &&                                               \
                (khl_group_byte(slot_word, slot % KHL_GROUP) == KHL_CTRL_DELETED ||  \
                 b->n_occupied < b->upper_bound))                                   \
                goto place;                                                         \
        }                                                                           \
        {                                                                           \
            uint32_t size = b ? b->size : 0u, nb = khl_buckets_for((size_t)size + 1); \
            /* Rebuild in place only when it frees at least half the limit, */     \
            /* so the rebuilds stay amortised O(1) per put. */                      \
            if (nb && b && nb <= b->n_buckets) {                                    \
                nb = b->n_buckets;                                                  \
                if ((size_t)size + 1 > b->upper_bound / 2)                          \
                    nb = nb < KHL_MAX_BUCKETS ? nb * 2 : nb;                        \
            }                                                                       \
            if (!nb || khl_##name##__rebuild(h, nb) < 0) {                          \
                *ret = -1;                                                          \
                return h->b ? h->b->n_buckets : 0u;                                 \
            }                                                                       \
            b = h->b;                                                               \
            ctrl = khl_ctrl_of(b, &khl_##name##__shape);                            \
            keys = (khl_##name##__key_t *)(void *)khl_keys_of(b, &khl_##name##__shape);         \
            slot = khl_find_free(ctrl, b->n_buckets, hash, &slot_word);             \
        }                                                                           \
    place:                                                                          \
        b->n_occupied += khl_group_byte(slot_word, slot % KHL_GROUP) == KHL_CTRL_EMPTY; \
        khl_group_store(ctrl, slot & ~(KHL_GROUP - 1),                              \
                        khl_group_with(slot_word, slot % KHL_GROUP, frag));         \
        keys[slot] = key;                                                           \
        b->size++;                                                                  \
        *ret = 1;                                                                   \
        return slot;                                                                \
    }                                                                               \
    SCOPE void khl_##name##__del(khl_##name##__t *h, khl_iter_t k)                 \
    {                                                                               \
        unsigned char *ctrl;                                                        \
        if (!h->b || k >= h->b->n_buckets)                                          \
            return;                                                                 \
        ctrl = khl_ctrl_of(h->b, &khl_##name##__shape);                             \
        if (ctrl[k] < KHL_CTRL_EMPTY)                                               \
            khl_erase_at(h->b, ctrl, k);                                            \
    }                                                                               \
    SCOPE int khl_##name##__copy(khl_##name##__t *dst, const khl_##name##__t *src)  \
    {                                                                               \
        const khl_allocator_t *a = khl_alloc_of(dst->a);                            \
        khl_regions_t s, r;                                                         \
        size_t kb, vb;                                                              \
        if (dst->b && dst->b->size)                                                 \
            return -1;                                                              \
        if (!src->b || !src->b->size)                                               \
            return 0;                                                               \
        s = khl_regions_of(src->b, &khl_##name##__shape);                           \
        if (khl_storage_alloc(a, dst->b, s.n_buckets, &khl_##name##__shape, &r) < 0) \
            return -1;                                                              \
        kb = (size_t)s.n_buckets * sizeof(khl_##name##__key_t);                                 \
        vb = (is_map) ? (size_t)s.n_buckets * sizeof(khl_##name##__val_t) : 0;                  \
        memcpy(r.ctrl, s.ctrl, s.n_buckets);                                        \
        memcpy(r.keys, s.keys, kb);                                                 \
        if (vb)                                                                     \
            memcpy(r.vals, s.vals, vb);                                             \
        khl_storage_free(a, dst->b, &khl_##name##__shape, 0);                       \
        dst->b = khl_storage_install(&r, src->b->size, src->b->n_occupied,          \
                                     &khl_##name##__shape);                         \
        return 0;                                                                   \
    }

/* ------------------------------------------------------------------------ */
/* Public type macros                                                        */

/* All functions static inline in the including file. */
#define KHL_INIT(name, khkey_t, khval_t, is_map, hash_fn, eq_fn)                    \
    KHL_INIT_LAYOUT(name, khkey_t, khval_t, is_map, hash_fn, eq_fn, KHL_LAYOUT_SINGLE)

/* Benchmarks only: the same table in another layout. */
#define KHL_INIT_LAYOUT(name, khkey_t, khval_t, is_map, hash_fn, eq_fn, layout)     \
    KHL_I_TYPE(name, khkey_t, khval_t, is_map, layout)                              \
    KHL_I_IMPL(static inline KHL_UNUSED, name, khkey_t, khval_t, is_map, hash_fn, eq_fn)

/* For static libraries: KHL_DECLARE in a header, KHL_DEFINE in one .c file. */
#define KHL_DECLARE(name, khkey_t, khval_t, is_map)                                 \
    KHL_I_TYPE(name, khkey_t, khval_t, is_map, KHL_LAYOUT_SINGLE)                   \
    KHL_I_PROTOTYPES(name, khkey_t)

#define KHL_DEFINE(name, khkey_t, khval_t, is_map, hash_fn, eq_fn)                  \
    KHL_I_IMPL(, name, khkey_t, khval_t, is_map, hash_fn, eq_fn)

#define KHL_MAP_INIT_INT(name, khval_t)                                             \
    KHL_INIT(name, uint32_t, khval_t, 1, khl_hash_u32, khl_eq_int)
#define KHL_MAP_INIT_INT64(name, khval_t)                                           \
    KHL_INIT(name, uint64_t, khval_t, 1, khl_hash_u64, khl_eq_int)
#define KHL_MAP_INIT_STR(name, khval_t)                                             \
    KHL_INIT(name, const char *, khval_t, 1, khl_hash_str, khl_eq_str)
#define KHL_SET_INIT_INT(name)                                                      \
    KHL_INIT(name, uint32_t, char, 0, khl_hash_u32, khl_eq_int)
#define KHL_SET_INIT_INT64(name)                                                    \
    KHL_INIT(name, uint64_t, char, 0, khl_hash_u64, khl_eq_int)
#define KHL_SET_INIT_STR(name)                                                      \
    KHL_INIT(name, const char *, char, 0, khl_hash_str, khl_eq_str)

/* ------------------------------------------------------------------------ */
/* Operations: the type name first, h is a khl_t(name) *                     */

#define khl_t(name) khl_##name##__t

#define khl_init(name, h, a)        khl_##name##__init(h, a)
#define khl_destroy(name, h)        khl_##name##__destroy(h)
#define khl_clear(name, h)          khl_##name##__clear(h)
#define khl_reserve(name, h, n)     khl_##name##__reserve(h, n)
#define khl_shrink(name, h)         khl_##name##__shrink(h)
#define khl_put(name, h, key, ret)  khl_##name##__put(h, key, ret)
#define khl_get(name, h, key)       khl_##name##__get(h, key)
#define khl_del(name, h, k)         khl_##name##__del(h, k)
#define khl_copy(name, dst, src)    khl_##name##__copy(dst, src)

#define khl_size(name, h)           khl_##name##__size(h)
#define khl_n_buckets(name, h)      khl_##name##__n_buckets(h)
#define khl_begin(name, h)          ((khl_iter_t)0)
#define khl_end(name, h)            khl_##name##__n_buckets(h)
#define khl_block_size(name, h)     khl_##name##__block_size(h)

/* Occupied?  k must be in [khl_begin, khl_end). */
#define khl_exist(name, h, k)       khl_##name##__exist(h, k)
/* Lvalues; khl_val only for maps.  k is evaluated before the block is
 * looked up, so khl_val(name, h, khl_put(name, h, key, &ret)) = v is safe
 * (check ret first in real code: on failure k is khl_end). */
#define khl_key(name, h, k)         (*khl_##name##__keyp(h, k))
#define khl_val(name, h, k)         (*khl_##name##__valp(h, k))

/* Iteration as in khash; the code (which may contain commas) runs once per
 * key and may delete the current key. */
#define khl_foreach(name, h, kvar, vvar, ...)                                       \
    KHL_I_FOREACH(name, h, (kvar) = khl_key(name, h, khl_it_);                      \
                  (vvar) = khl_val(name, h, khl_it_); __VA_ARGS__;)
#define khl_foreach_key(name, h, kvar, ...)                                         \
    KHL_I_FOREACH(name, h, (kvar) = khl_key(name, h, khl_it_); __VA_ARGS__;)
#define khl_foreach_value(name, h, vvar, ...)                                       \
    KHL_I_FOREACH(name, h, (vvar) = khl_val(name, h, khl_it_); __VA_ARGS__;)

/* The walk the three share: the body runs for each occupied bucket khl_it_. */
#define KHL_I_FOREACH(name, h, ...)                                                 \
    {                                                                               \
        khl_iter_t khl_it_;                                                         \
        for (khl_it_ = 0; khl_it_ < khl_end(name, h); ++khl_it_) {                  \
            if (!khl_exist(name, h, khl_it_))                                       \
                continue;                                                           \
            __VA_ARGS__                                                             \
        }                                                                           \
    }

#ifdef __cplusplus
}
#endif

#endif /* KHASHLITE_H */
