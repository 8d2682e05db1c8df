/* test_weak_hash.c: a hash whose top bits are not mixed (an identity, a
 * 32-bit hash, khash's X31 string hash) is multiplied by the table, unless
 * its name is declared mixed (KHL_HASH_MIXED_<hash>), and khl_check reports
 * a table whose keys all share one tag and one home group. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "khashlite/khashlite.h"
#include "support.h"

static uint64_t ident_hash(uint64_t x) { return x; }
static uint64_t hash32(uint64_t x) { return (uint32_t)(x * 2654435761u); }
static uint64_t x31_hash(const char *s)
{
    uint32_t h = (uint32_t)*s;
    if (h)
        for (++s; *s; ++s)
            h = (h << 5) - h + (uint32_t)*s;
    return h;
}
KHL_INIT(wid, uint64_t, uint64_t, 1, ident_hash, khl_eq_int)
KHL_INIT(w32, uint64_t, char, 0, hash32, khl_eq_int)
KHL_INIT(wx31, const char *, uint32_t, 1, x31_hash, khl_eq_str)
KHL_INIT(wu32, uint32_t, uint32_t, 1, khl_hash_u32, khl_eq_int)

/* Declared mixed, wrongly: the table takes these hashes as they are. */
static uint64_t declared_ident(uint64_t x) { return x; }
static uint64_t declared_tag(uint64_t x) { return (uint64_t)(x & 0x7f) << (KHL_I_TAG_SHIFT + 1); }
#define KHL_HASH_MIXED_declared_ident 1
#define KHL_HASH_MIXED_declared_tag
KHL_INIT(wdecl, uint64_t, char, 0, declared_ident, khl_eq_int)
KHL_INIT(wtag, uint64_t, char, 0, declared_tag, khl_eq_int)
KHL_INIT(wtagmixed, uint64_t, char, 0, ident_hash, khl_eq_int)
/* The same product declared mixed, once as a product too. */
static uint64_t fib_hash(uint64_t x) { return x * 0x9e3779b97f4a7c15ULL; }
static uint64_t fib_hash_p(uint64_t x) { return x * 0x9e3779b97f4a7c15ULL; }
#define KHL_HASH_MIXED_fib_hash
#define KHL_HASH_MIXED_fib_hash_p
#define KHL_HASH_PRODUCT_fib_hash_p
KHL_INIT(wfib, uint64_t, char, 0, fib_hash, khl_eq_int)
KHL_INIT(wfibp, uint64_t, char, 0, fib_hash_p, khl_eq_int)

/* The longest and total walks, in groups, that lookups of the table's keys
 * (bucket k holds a key whose table hash is hash_of(k)) take to reach them. */
#define PROBE_STATS(name, h, max, total)                                              \
    do {                                                                              \
        khl_cursor_t c_ = khl_cursor(name, h);                                        \
        max = total = 0;                                                              \
        while (khl_cursor_next(name, h, &c_)) {                                       \
            uint32_t n_ = test_probe_groups((h)->b,                                   \
                                            khl_typedesc_##name.hash(&khl_key(name, h, c_.k), (h)->b->n_buckets), c_.k); \
            max = n_ > max ? n_ : max;                                                \
            total += n_;                                                              \
        }                                                                             \
    } while (0)

/* A regression: the identity's top bits are 0 for keys below 2^57, so every
 * key had tag 0 and home group 0, and a put walked all the groups before it
 * (477 -> 7,959 ns from 2^10 to 2^14 keys) while khl_check passed. */
Test(weak_hash, identity_on_sequential_keys_probes_few_groups)
{
    enum { N = 1 << 14 };
    khl_t(wid) h;
    khl_init(wid, &h, NULL);
    for (uint64_t i = 0; i < N; ++i)
        khl_val(wid, &h, khl_put(wid, &h, i, NULL)) = i;
    uint32_t max, total;
    PROBE_STATS(wid, &h, max, total);
    cr_assert_leq(max, 4, "a key %u groups from its home", max);
    cr_assert_leq(total, N + N / 4, "%u groups walked for %u keys", total, (unsigned)N);
    uint32_t miss_max = 0;
    for (uint64_t i = N; i < 2 * N; ++i) {
        uint64_t hash = khl_typedesc_wid.hash(&i, h.b->n_buckets);
        uint32_t n = test_probe_groups(h.b, hash, UINT32_MAX);
        miss_max = n > miss_max ? n : miss_max;
        cr_assert_eq(khl_get(wid, &h, i), khl_end(wid, &h));
    }
    cr_assert_leq(miss_max, 4, "a miss walked %u groups", miss_max);
    for (uint64_t i = 0; i < N; ++i)
        cr_assert_eq(*khl_getp(wid, &h, i), i);
    cr_assert_eq(khl_check(wid, &h), 0);
    khl_destroy(wid, &h);
}

Test(weak_hash, a_32_bit_hash_and_x31_strings_probe_few_groups)
{
    enum { N = 1 << 14 };
    static char words[N][8];
    khl_t(w32) s;
    khl_t(wx31) m;
    khl_init(w32, &s, NULL);
    khl_init(wx31, &m, NULL);
    for (uint32_t i = 0; i < N; ++i) {
        khl_put(w32, &s, i, NULL);
        snprintf(words[i], sizeof words[i], "k%u", i);
        khl_val(wx31, &m, khl_put(wx31, &m, words[i], NULL)) = i;
    }
    uint32_t max, total;
    PROBE_STATS(w32, &s, max, total);
    cr_assert_leq(max, 4, "32-bit hash: a key %u groups from its home", max);
    cr_assert_leq(total, N + N / 4);
    PROBE_STATS(wx31, &m, max, total);
    cr_assert_leq(max, 4, "X31: a key %u groups from its home", max);
    cr_assert_leq(total, N + N / 4);
    cr_assert_eq(khl_check(w32, &s), 0);
    cr_assert_eq(khl_check(wx31, &m), 0);
    khl_destroy(w32, &s);
    khl_destroy(wx31, &m);
}

/* A regression: one multiply left the bits under the top byte, the home
 * group, a Fibonacci hash by 2^8 times the multiplier times the keys'
 * stride, which for some strides spreads keys over a fraction of the
 * groups: 200,000 keys 256 to 4,096 apart put 17-42% of them past their
 * home group, and 1M keys 64 to 512 apart 34-61%, whatever the seed.  Keys
 * of interpreters and C programs are often such: ids of aligned records,
 * offsets, pointers to objects of one size.  The table's own hash
 * (khl_hash_u32) and the mixing of an undeclared one (the identity, as
 * pointers are often hashed) must spread them as random keys. */
Test(weak_hash, strided_keys_and_pointers_probe_few_groups)
{
    enum { N = 200000 };
    static const uint32_t strides[] = {64, 256, 1024, 4096};
    const uint64_t base = 0x00007f3a40000000ULL;
    for (size_t s = 0; s < sizeof strides / sizeof strides[0]; ++s) {
        khl_t(wu32) a;
        khl_t(wid) p;
        uint32_t max, total;
        khl_init(wu32, &a, NULL);
        khl_init(wid, &p, NULL);
        for (uint32_t i = 0; i < N; ++i) {
            khl_val(wu32, &a, khl_put(wu32, &a, i * strides[s], NULL)) = i;
            khl_val(wid, &p, khl_put(wid, &p, base + (uint64_t)i * strides[s], NULL)) = i;
        }
        PROBE_STATS(wu32, &a, max, total);
        cr_assert_leq(total, N + N / 8, "khl_hash_u32, stride %u: %u groups walked for %u keys",
                      strides[s], total, (unsigned)N);
        PROBE_STATS(wid, &p, max, total);
        cr_assert_leq(total, N + N / 8, "identity, pointers %u apart: %u groups walked for %u keys",
                      strides[s], total, (unsigned)N);
        for (uint32_t i = 0; i < N; ++i) {
            cr_assert_eq(*khl_getp(wu32, &a, i * strides[s]), i);
            cr_assert_eq(*khl_getp(wid, &p, base + (uint64_t)i * strides[s]), i);
        }
        khl_destroy(wu32, &a);
        khl_destroy(wid, &p);
    }
}

/* A table of more than one group remixes a product (an undeclared hash's,
 * or one declared KHL_HASH_PRODUCT_): its tag is the top byte of the product
 * xor its top half, times the remixing constant; a hash declared mixed and
 * nothing else is taken as it is there too; a one-group table takes the
 * product as it is. */
Test(weak_hash, a_larger_table_remixes_a_product)
{
    khl_t(wfib) m;
    khl_t(wfibp) p;
    khl_t(wid) u;
    khl_init(wfib, &m, NULL);
    khl_init(wfibp, &p, NULL);
    khl_init(wid, &u, NULL);
    cr_assert_eq(khl_reserve(wfib, &m, 100), 0);
    cr_assert_eq(khl_reserve(wfibp, &p, 100), 0);
    cr_assert_eq(khl_reserve(wid, &u, 100), 0);
    cr_assert_gt(khl_n_buckets(wfib, &m), KHL_GROUP_WIDTH);
    for (uint64_t key = 1; key <= 40; ++key) {
        const uint64_t product = key * 0x9e3779b97f4a7c15ULL;
        const uint64_t remixed = (product ^ (product >> 32)) * 0xd6e8feb86659fd93ULL;
        const unsigned char top = (unsigned char)(product >> 56), stop = (unsigned char)(remixed >> 56);
        khl_iter_t a = khl_put(wfib, &m, key, NULL), b = khl_put(wfibp, &p, key, NULL);
        khl_iter_t c = khl_put(wid, &u, key, NULL);
        if (top < KHL_CTRL_DELETED)   /* else folded */
            cr_assert_eq(((const unsigned char *)(m.b + 1))[a], top, "declared mixed: taken as it is");
        if (stop < KHL_CTRL_DELETED) {
            cr_assert_eq(((const unsigned char *)(p.b + 1))[b], stop, "declared a product: remixed");
            cr_assert_eq(((const unsigned char *)(u.b + 1))[c], stop, "undeclared: multiplied, remixed");
        }
    }
    for (uint64_t key = 1; key <= 40; ++key)
        cr_assert(khl_exist(wfibp, &p, khl_get(wfibp, &p, key)) && khl_exist(wid, &u, khl_get(wid, &u, key)));
    cr_assert_eq(khl_check(wfib, &m), 0);
    cr_assert_eq(khl_check(wfibp, &p), 0);
    cr_assert_eq(khl_check(wid, &u), 0);
    khl_destroy(wfib, &m);
    khl_destroy(wfibp, &p);
    khl_destroy(wid, &u);
}

/* A hash declared mixed is taken as it is: its top 7 bits are the tag (of
 * a table past the scan of its first block: the 9th key). */
Test(weak_hash, a_hash_declared_mixed_is_not_multiplied)
{
    khl_t(wtag) a;
    khl_t(wtagmixed) b;
    khl_init(wtag, &a, NULL);
    khl_init(wtagmixed, &b, NULL);
    for (uint64_t i = 1; i <= 8; ++i) {
        khl_put(wtag, &a, i, NULL);
        khl_put(wtagmixed, &b, i, NULL);
    }
    khl_iter_t k = khl_put(wtag, &a, 0x55, NULL);
    cr_assert_gt(khl_n_buckets(wtag, &a), 8);
    cr_assert_eq(((const unsigned char *)(a.b + 1))[k], 0x55);
    uint64_t key = (uint64_t)0x55 << (KHL_I_TAG_SHIFT + 1);
    k = khl_put(wtagmixed, &b, key, NULL);
    cr_assert_gt(khl_n_buckets(wtagmixed, &b), 8);
    cr_assert_eq(((const unsigned char *)(b.b + 1))[k], khl_tag_small(key * 0x9e3779b97f4a7c15ULL),
                 "an undeclared hash is multiplied");
    uint64_t k55 = 0x55;
    cr_assert_eq(khl_typedesc_wtag.hash(&k55, a.b->n_buckets), key, "the hash as declared_tag returns it");
    khl_destroy(wtag, &a);
    khl_destroy(wtagmixed, &b);
}

static int check_wdecl(const void *h)
{
    return khl_check(wdecl, (const khl_t(wdecl) *)h);
}

/* khl_check reports more than a group's worth of keys sharing one tag and
 * one home group; 16 such keys in a one-group table are no evidence. */
Test(weak_hash, check_reports_a_degenerate_hash)
{
    khl_t(wdecl) h;
    khl_init(wdecl, &h, NULL);
    for (uint64_t i = 0; i < 16; ++i)
        khl_put(wdecl, &h, i, NULL);
    cr_assert_eq(khl_n_buckets(wdecl, &h), 16);
    cr_assert_eq(khl_check(wdecl, &h), 0, "16 keys in one group: not reported");
    for (uint64_t i = 16; i < 1024; ++i)
        khl_put(wdecl, &h, i, NULL);
    char said[512];
    cr_assert_eq(test_capture_stderr(check_wdecl, &h, said, sizeof said), -1,
                 "1024 keys of tag 0 in group 0: reported");
    cr_assert(strstr(said, "degenerate hash: all 1024 keys have one tag and one home group"),
              "khl_check said \"%s\"", said);
    khl_destroy(wdecl, &h);
}
