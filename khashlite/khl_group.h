/* khl_group.h: 16 control bytes matched at once (internal to khashlite.h).
 *
 * A group is 16 consecutive control bytes.  Every query answers with a 16-bit
 * mask, bit i for byte i, so the table code above is the same on every
 * machine: SSE2 (pcmpeqb + pmovmskb, three instructions a query) where the
 * compiler targets it, otherwise two 64-bit words matched bytewise (SWAR)
 * and their byte-high bits gathered into the mask by one multiply.  Both
 * implementations are always compiled under their own names so the tests
 * can check they agree on every byte pattern; khl_group_* picks one.
 *
 * Control byte values: 0xFF empty, 0xFE deleted (only inside a rehash),
 * every other byte a key's tag (khl_table_impl.h: the top 8 bits of its hash
 * folded onto 0x00..0xFD in a larger table, the top 7 in a one-group table,
 * whose empty buckets are thus its bytes with the high bit set).  A tiny
 * table's bytes past its last bucket are masked off by the caller.
 */
#ifndef KHL_GROUP_H
#define KHL_GROUP_H

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__) && !defined(KHL_NO_SIMD)
#include <emmintrin.h>
#define KHL_GROUP_SSE2 1
#endif

#define KHL_GROUP_WIDTH 16u
#define KHL_CTRL_EMPTY ((unsigned char)0xFF)
#define KHL_CTRL_DELETED ((unsigned char)0xFE)
#define KHL_CTRL_TAG_MAX ((unsigned char)0xFD)

/* A hash's top byte as a larger table's tag: the marks folded onto
 * KHL_CTRL_TAG_MAX. */
static inline unsigned char khl_ctrl_fold(unsigned char top)
{
    return top < KHL_CTRL_TAG_MAX ? top : KHL_CTRL_TAG_MAX;
}

/* --- portable: two little-endian words ------------------------------------- */

typedef struct khl_group_swar { uint64_t lo, hi; } khl_group_swar_t;

#define KHL_SWAR_LSB 0x0101010101010101ULL
#define KHL_SWAR_MSB 0x8080808080808080ULL

static inline uint64_t khl_swar_word(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

static inline void khl_swar_put_word(unsigned char *p, uint64_t w)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    memcpy(p, &w, sizeof w);
}

/* The high bit of each byte of hits gathered into 8 bits: bit 8k+7 lands on
 * bit 56+k of the product, and no two partial products share a bit. */
static inline uint32_t khl_swar_bits(uint64_t hits)
{
    return (uint32_t)(((hits >> 7) * 0x0102040810204080ULL) >> 56);
}

/* Byte-high bit set where a byte of w equals the same byte of bs (a byte
 * repeated); exact (no borrow between bytes). */
static inline uint64_t khl_swar_eq(uint64_t w, uint64_t bs)
{
    uint64_t x = w ^ bs;
    return ~(((x & ~KHL_SWAR_MSB) + ~KHL_SWAR_MSB) | x | ~KHL_SWAR_MSB);
}

static inline khl_group_swar_t khl_group_swar_load(const unsigned char *p)
{
    khl_group_swar_t g;
    g.lo = khl_swar_word(p);
    g.hi = khl_swar_word(p + 8);
    return g;
}

static inline void khl_group_swar_store(unsigned char *p, khl_group_swar_t g)
{
    khl_swar_put_word(p, g.lo);
    khl_swar_put_word(p + 8, g.hi);
}

/* A tag in every byte: what a probe loop matches its groups against, built
 * once per lookup. */
typedef uint64_t khl_tags_swar_t;

static inline khl_tags_swar_t khl_group_swar_tags(unsigned char tag)
{
    return KHL_SWAR_LSB * tag;
}

/* A hash's top byte as a larger table's tag in every byte (khl_ctrl_fold). */
static inline khl_tags_swar_t khl_group_swar_hash_tags(unsigned char top)
{
    return khl_group_swar_tags(khl_ctrl_fold(top));
}

static inline uint32_t khl_group_swar_match_tags(khl_group_swar_t g, khl_tags_swar_t t)
{
    return khl_swar_bits(khl_swar_eq(g.lo, t)) | khl_swar_bits(khl_swar_eq(g.hi, t)) << 8;
}

static inline uint32_t khl_group_swar_match(khl_group_swar_t g, unsigned char tag)
{
    return khl_group_swar_match_tags(g, khl_group_swar_tags(tag));
}

static inline uint32_t khl_group_swar_empty(khl_group_swar_t g)
{
    return khl_group_swar_match(g, KHL_CTRL_EMPTY);
}

/* Empty or deleted: 0xFE and 0xFF, the bytes that are 0xFF with bit 0 set. */
static inline uint32_t khl_group_swar_free(khl_group_swar_t g)
{
    uint64_t lo = khl_swar_eq(g.lo | KHL_SWAR_LSB, ~0ULL);
    uint64_t hi = khl_swar_eq(g.hi | KHL_SWAR_LSB, ~0ULL);
    return khl_swar_bits(lo) | khl_swar_bits(hi) << 8;
}

/* Not empty.  A deleted mark counts: marks exist only inside a rehash,
 * which finds them by their own match. */
static inline uint32_t khl_group_swar_full(khl_group_swar_t g)
{
    return ~khl_group_swar_empty(g) & 0xffffu;
}

/* Bytes with the high bit set: a one-group table's empty buckets. */
static inline uint32_t khl_group_swar_high(khl_group_swar_t g)
{
    return khl_swar_bits(g.lo & KHL_SWAR_MSB) | khl_swar_bits(g.hi & KHL_SWAR_MSB) << 8;
}

static inline khl_group_swar_t khl_group_swar_with(khl_group_swar_t g, uint32_t i, unsigned char c)
{
    uint32_t shift = (i & 7u) * 8u;
    uint64_t *w = i < 8u ? &g.lo : &g.hi;
    *w = (*w & ~((uint64_t)0xff << shift)) | ((uint64_t)c << shift);
    return g;
}

/* The tag a broadcast holds. */
static inline unsigned char khl_group_swar_tag_of(khl_tags_swar_t t)
{
    return (unsigned char)t;
}

/* Byte i set to the tag a broadcast holds (a lookup's, reused by its put). */
static inline khl_group_swar_t khl_group_swar_with_tags(khl_group_swar_t g, uint32_t i, khl_tags_swar_t t)
{
    return khl_group_swar_with(g, i, khl_group_swar_tag_of(t));
}

/* A rehash's marks: every key (a tag) becomes KHL_CTRL_DELETED, to be
 * placed again, every empty byte stays KHL_CTRL_EMPTY: DELETED with bit 0
 * set where a byte is empty. */
static inline uint64_t khl_swar_marked(uint64_t w)
{
    return (KHL_CTRL_DELETED * KHL_SWAR_LSB) | (khl_swar_eq(w, KHL_CTRL_EMPTY * KHL_SWAR_LSB) >> 7);
}

static inline khl_group_swar_t khl_group_swar_marked(khl_group_swar_t g)
{
    g.lo = khl_swar_marked(g.lo);
    g.hi = khl_swar_marked(g.hi);
    return g;
}

/* --- SSE2 ------------------------------------------------------------------ */

#ifdef KHL_GROUP_SSE2
typedef __m128i khl_group_sse2_t;

static inline khl_group_sse2_t khl_group_sse2_load(const unsigned char *p)
{
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}

static inline void khl_group_sse2_store(unsigned char *p, khl_group_sse2_t g)
{
    _mm_storeu_si128((__m128i *)(void *)p, g);
}

typedef __m128i khl_tags_sse2_t;

/* Four copies of a 32-bit product: three instructions where _mm_set1_epi8
 * takes four without SSSE3. */
static inline khl_tags_sse2_t khl_group_sse2_tags(unsigned char tag)
{
    return _mm_set1_epi32((int)(tag * 0x01010101u));
}

/* As khl_group_swar_hash_tags, the fold after the broadcast: one pminub,
 * where a scalar compare and move took three instructions before it. */
static inline khl_tags_sse2_t khl_group_sse2_hash_tags(unsigned char top)
{
    return _mm_min_epu8(khl_group_sse2_tags(top), _mm_set1_epi8((char)KHL_CTRL_TAG_MAX));
}

static inline uint32_t khl_group_sse2_match_tags(khl_group_sse2_t g, khl_tags_sse2_t t)
{
    return (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(g, t));
}

static inline uint32_t khl_group_sse2_match(khl_group_sse2_t g, unsigned char tag)
{
    return khl_group_sse2_match_tags(g, khl_group_sse2_tags(tag));
}

static inline uint32_t khl_group_sse2_empty(khl_group_sse2_t g)
{
    return khl_group_sse2_match(g, KHL_CTRL_EMPTY);
}

/* Empty or deleted: the bytes at or above 0xFE, unsigned. */
static inline uint32_t khl_group_sse2_free(khl_group_sse2_t g)
{
    return (uint32_t)_mm_movemask_epi8(
        _mm_cmpeq_epi8(_mm_max_epu8(g, _mm_set1_epi8((char)KHL_CTRL_DELETED)), g));
}

static inline uint32_t khl_group_sse2_full(khl_group_sse2_t g)
{
    return ~khl_group_sse2_empty(g) & 0xffffu;
}

static inline uint32_t khl_group_sse2_high(khl_group_sse2_t g)
{
    return (uint32_t)_mm_movemask_epi8(g);
}

/* 16 bytes loaded from byte 15 - i have only byte i set: the lane of a
 * one-byte update in one load, where broadcasting i and comparing takes
 * five instructions. */
static const unsigned char khl_group_sse2_lanes[31] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

static inline unsigned char khl_group_sse2_tag_of(khl_tags_sse2_t t)
{
    return (unsigned char)_mm_cvtsi128_si32(t);
}

/* Byte i set to the tag t holds in every byte, so that a put's match and
 * its update share one broadcast of the tag. */
static inline khl_group_sse2_t khl_group_sse2_with_tags(khl_group_sse2_t g, uint32_t i, khl_tags_sse2_t t)
{
    __m128i at = _mm_loadu_si128((const __m128i *)(const void *)(khl_group_sse2_lanes + 15u - i));
    return _mm_or_si128(_mm_andnot_si128(at, g), _mm_and_si128(at, t));
}

static inline khl_group_sse2_t khl_group_sse2_with(khl_group_sse2_t g, uint32_t i, unsigned char c)
{
    return khl_group_sse2_with_tags(g, i, khl_group_sse2_tags(c));
}
/* As khl_group_swar_marked: an empty byte's compare (0xFF) or DELETED. */
static inline khl_group_sse2_t khl_group_sse2_marked(khl_group_sse2_t g)
{
    return _mm_or_si128(_mm_cmpeq_epi8(g, _mm_set1_epi8((char)KHL_CTRL_EMPTY)),
                        _mm_set1_epi8((char)KHL_CTRL_DELETED));
}
#endif

/* --- the implementation the tables use -------------------------------------- */

#ifdef KHL_GROUP_SSE2
#define KHL_GROUP_IMPL(op) khl_group_sse2_##op
typedef khl_group_sse2_t khl_group_t;
typedef khl_tags_sse2_t khl_tags_t;
#else
#define KHL_GROUP_IMPL(op) khl_group_swar_##op
typedef khl_group_swar_t khl_group_t;
typedef khl_tags_swar_t khl_tags_t;
#endif

#define khl_group_load  KHL_GROUP_IMPL(load)
#define khl_group_store KHL_GROUP_IMPL(store)
#define khl_group_match KHL_GROUP_IMPL(match)
#define khl_group_tags  KHL_GROUP_IMPL(tags)
#define khl_group_hash_tags KHL_GROUP_IMPL(hash_tags)
#define khl_group_match_tags KHL_GROUP_IMPL(match_tags)
#define khl_group_empty KHL_GROUP_IMPL(empty)
#define khl_group_free  KHL_GROUP_IMPL(free)
#define khl_group_full  KHL_GROUP_IMPL(full)
#define khl_group_high  KHL_GROUP_IMPL(high)
#define khl_group_with  KHL_GROUP_IMPL(with)
#define khl_group_with_tags KHL_GROUP_IMPL(with_tags)
#define khl_group_tag_of KHL_GROUP_IMPL(tag_of)
#define khl_group_marked KHL_GROUP_IMPL(marked)

/* khl_group_tag_of inside a loop over groups whose tags do not change.
 * clang hoists the read out of the loop, as any invariant, and then pays
 * it on every lookup, hits included, before the first group match: a
 * store and a reload of the broadcast, and a shift building the overflow
 * bit.  The empty asm makes the tags new at each pass, so the read stays
 * where the walk needs it, past a group without the key (clang 14, a
 * loop of lookups in a 200k-key table: a hit 60.6 -> 50.8 instructions, a
 * miss 56.9 -> 52.8).  gcc leaves the read in place, and the asm cost it
 * 1 to 3 instructions a lookup.  The portable tags are a byte of a
 * register, which costs nothing wherever the compiler reads it. */
static inline unsigned char khl_group_walk_tag_of(khl_tags_t t)
{
#if defined(__clang__) && defined(KHL_GROUP_SSE2)
    __asm__("" : "+x"(t));
#endif
    return khl_group_tag_of(t);
}

/* Index of the lowest / highest set bit of a nonzero mask. */
static inline uint32_t khl_mask_lowest(uint32_t m)
{
#if defined(__GNUC__) || defined(__clang__)
    return (uint32_t)__builtin_ctz(m);
#else
    uint32_t i = 0;
    while (!(m & 1u)) { m >>= 1; ++i; }
    return i;
#endif
}

/* Set bits of a mask. */
static inline uint32_t khl_mask_count(uint32_t m)
{
#if defined(__GNUC__) || defined(__clang__)
    return (uint32_t)__builtin_popcount(m);
#else
    uint32_t n = 0;
    for (; m; m &= m - 1u)
        ++n;
    return n;
#endif
}

static inline uint32_t khl_mask_highest(uint32_t m)
{
#if defined(__GNUC__) || defined(__clang__)
    return (uint32_t)__builtin_clz(m) ^ 31u;    /* one bsr: gcc leaves 31 - clz as three */
#else
    uint32_t i = 31;
    while (!(m & 0x80000000u)) { m <<= 1; --i; }
    return i;
#endif
}

#endif /* KHL_GROUP_H */
