/* test_core.c: what the v2 core adds and what it promises beyond 0.1: the two
 * group implementations agree, tiny tables (first block sizes, one
 * allocation for a life of up to 8 keys, the masked control window),
 * khl_del_key, reserve's promise under churn, over-aligned types, and seeded integer
 * hashes against crafted keys. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "khashlite/khashlite.h"
#include "support.h"

KHL_MAP_INIT_INT(c32, uint32_t)
KHL_MAP_INIT_INT64(c64, uint64_t)
KHL_SET_INIT_INT64(cs64)
KHL_SET_INIT_INT(cs32)

#define W KHL_GROUP_WIDTH

/* --- the group implementations ------------------------------------------- */

#ifdef KHL_GROUP_SSE2
static void check_group_pair(const unsigned char *bytes)
{
    khl_group_swar_t p = khl_group_swar_load(bytes);
    khl_group_sse2_t s = khl_group_sse2_load(bytes);
    for (unsigned tag = 0; tag < 256; ++tag)
        cr_assert_eq(khl_group_swar_match(p, (unsigned char)tag),
                     khl_group_sse2_match(s, (unsigned char)tag), "match %u", tag);
    cr_assert_eq(khl_group_swar_empty(p), khl_group_sse2_empty(s));
    cr_assert_eq(khl_group_swar_free(p), khl_group_sse2_free(s));
    cr_assert_eq(khl_group_swar_full(p), khl_group_sse2_full(s));
    cr_assert_eq(khl_group_swar_high(p), khl_group_sse2_high(s));
    for (unsigned top = 0; top < 256; ++top)
        cr_assert_eq(khl_group_swar_match_tags(p, khl_group_swar_hash_tags((unsigned char)top)),
                     khl_group_sse2_match_tags(s, khl_group_sse2_hash_tags((unsigned char)top)),
                     "hash tags %u", top);
    unsigned char ma[W], mb[W];
    khl_group_swar_store(ma, khl_group_swar_marked(p));
    khl_group_sse2_store(mb, khl_group_sse2_marked(s));
    cr_assert_eq(memcmp(ma, mb, W), 0, "marked");
    for (uint32_t i = 0; i < W; ++i) {
        unsigned char a[W], b[W];
        khl_group_swar_store(a, khl_group_swar_with(p, i, 0x5A));
        khl_group_sse2_store(b, khl_group_sse2_with(s, i, 0x5A));
        cr_assert_eq(memcmp(a, b, W), 0, "with %u", i);
    }
}
#endif

Test(core, sse2_and_portable_groups_agree)
{
#ifdef KHL_GROUP_SSE2
    static const unsigned char special[] = {0x00, 0x01, 0x7F, 0x80, 0x81, 0xFD, 0xFE, 0xFF};
    unsigned char bytes[W];
    uint64_t s = 99;
    for (int round = 0; round < 2000; ++round) {
        for (uint32_t i = 0; i < W; ++i) {
            uint64_t r = prng_next(&s);
            bytes[i] = r & 1 ? special[(r >> 8) % sizeof special] : (unsigned char)(r >> 16);
        }
        check_group_pair(bytes);
    }
#else
    cr_skip_test("no SSE2 on this target: only the portable groups exist");
#endif
}

/* Hand-checked masks of the portable groups (they run on every target):
 * empty 0xFF, deleted 0xFE, every other byte a tag. */
Test(core, portable_group_masks)
{
    unsigned char g[W];
    memset(g, 0xFF, W);
    g[0] = 0x12; g[3] = 0x12; g[5] = 0xFD; g[9] = 0xFE; g[14] = 0x7F; g[15] = 0x80;
    khl_group_swar_t w = khl_group_swar_load(g);
    cr_assert_eq(khl_group_swar_match(w, 0x12), 0x0009u);
    cr_assert_eq(khl_group_swar_match(w, 0x80), 0x8000u);
    cr_assert_eq(khl_group_swar_empty(w), 0x3DD6u);
    cr_assert_eq(khl_group_swar_full(w), 0xC229u, "not empty: the deleted mark too");
    cr_assert_eq(khl_group_swar_free(w), 0x3FD6u, "empty or deleted");
    cr_assert_eq(khl_group_swar_high(w), 0xBFF6u);
    /* A larger table's tag is the hash's top byte with the marks folded
     * onto 0xFD. */
    cr_assert_eq(khl_group_swar_match_tags(w, khl_group_swar_hash_tags(0x12)), 0x0009u);
    cr_assert_eq(khl_group_swar_match_tags(w, khl_group_swar_hash_tags(0xFE)), 0x0020u);
    cr_assert_eq(khl_group_swar_match_tags(w, khl_group_swar_hash_tags(0xFF)), 0x0020u);
    /* A rehash's marks: keys to be placed again (deleted), the rest empty. */
    unsigned char m[W];
    khl_group_swar_store(m, khl_group_swar_marked(w));
    for (uint32_t i = 0; i < W; ++i)
        cr_assert_eq(m[i], g[i] == 0xFF ? 0xFF : 0xFE, "marked byte %u", i);
}

/* --- tiny tables ------------------------------------------------------------ */

/* 448 bits of payload, as in the peer benchmark's second blueprint. */
typedef struct { uint64_t w[7]; } payload_t;
KHL_MAP_INIT_INT64(big, payload_t)

/* Worked out by hand from the layout [8 B header][ctrl][pad][slots]. */
Test(core, first_blocks_fit_88_bytes)
{
    khl_t(c32) a;       /* uint32_t -> uint32_t: pairs of 8: 8 + 8 + 8 x 8 = 80 */
    khl_t(big) b;       /* uint64_t -> 56 B: pairs of 64: 8 + 1 + pad 7 + 64 = 80, */
                        /* pad 3 (76) where a uint64_t member aligns to 4 */
    khl_t(cs64) c;      /* uint64_t set: keys of 8: 8 + 8 + 8 x 8 = 80 */
    khl_init(c32, &a, NULL);
    khl_init(big, &b, NULL);
    khl_init(cs64, &c, NULL);
    khl_put(c32, &a, 1, NULL);
    khl_put(big, &b, 1, NULL);
    khl_put(cs64, &c, 1, NULL);
    cr_assert_eq(khl_n_buckets(c32, &a), 8);
    cr_assert_eq(khl_block_size(c32, &a), 80);
    cr_assert_eq(khl_n_buckets(big, &b), 1);
    cr_assert_eq(khl_block_size(big, &b), TEST_U64_MEMBER_ALIGN == 8 ? 80 : 76);
    cr_assert_eq(khl_n_buckets(cs64, &c), 8);
    cr_assert_eq(khl_block_size(cs64, &c), 80);
    /* A first put allocates the type's constant first_bytes: were it not
     * khl_table.c's block size, the checker would say so. */
    khl_type_t wrong = khl_typedesc_c32;
    wrong.first_bytes += 8;
    khl_regions_t r = khl_regionsof_c32(a.b);
    cr_assert_eq(khl_table_check(a.b, &r, &khl_typedesc_c32), 0);
    cr_assert_eq(khl_table_check(a.b, &r, &wrong), -1);
    khl_type_t wrong_small = khl_typedesc_c32;      /* a growth's block size, likewise */
    wrong_small.small_bytes[3] += 8;
    cr_assert_eq(khl_table_check(a.b, &r, &wrong_small), -1);
    khl_destroy(c32, &a);
    khl_destroy(big, &b);
    khl_destroy(cs64, &c);
}

Test(core, a_life_of_up_to_8_keys_is_one_allocation)
{
    for (uint32_t n = 1; n <= 8; ++n) {
        TEST_TABLE(c32, h, t);
        for (uint32_t i = 0; i < n; ++i)
            khl_val(c32, &h, khl_put(c32, &h, i * 0x9E3779B9u, NULL)) = i;
        for (uint32_t i = 0; i < n; ++i)
            cr_assert_eq(khl_val(c32, &h, khl_get(c32, &h, i * 0x9E3779B9u)), i);
        cr_assert_eq(khl_check(c32, &h), 0);
        khl_destroy(c32, &h);
        cr_assert_eq(t.attempts, 1, "a life of %u keys allocated %llu times", n,
                     (unsigned long long)t.attempts);
        test_alloc_fini(&t);
    }
}

/* A table of fewer than 16 buckets reads its control bytes 16 at a time: the
 * bytes past its last bucket are pair bytes.  Values made of bytes that look
 * empty (0xFF), deleted or like every tag must neither be taken as free
 * buckets nor match a key. */
Test(core, tiny_window_bytes_past_the_last_bucket_are_masked)
{
    static const uint32_t fills[] = {0xFFFFFFFFu, 0x80808080u, 0x00010203u, 0x7F7E7D7Cu, 0xFEFEFEFEu};
    for (unsigned f = 0; f < sizeof fills / sizeof fills[0]; ++f) {
        khl_t(c32) h;
        khl_init(c32, &h, NULL);
        for (uint32_t i = 0; i < 8; ++i) {
            khl_iter_t k = khl_put(c32, &h, i + 1000, NULL);
            cr_assert_lt(k, 8, "put placed a key past the last bucket");
            khl_val(c32, &h, k) = fills[f];
            khl_key(c32, &h, k) = i + 1000;
        }
        cr_assert_eq(khl_n_buckets(c32, &h), 8);
        for (uint32_t x = 0; x < 20000; ++x) {
            khl_iter_t k = khl_get(c32, &h, x);
            cr_assert_eq(k != khl_end(c32, &h), x >= 1000 && x < 1008, "key %u", x);
            cr_assert_leq(k, 8);
        }
        /* Deleting and re-adding in the full one-group table: no tombstone. */
        khl_del_key(c32, &h, 1003);
        khl_put(c32, &h, 5000, NULL);
        cr_assert_eq(khl_n_buckets(c32, &h), 8);
        cr_assert_eq(khl_check(c32, &h), 0);
        khl_destroy(c32, &h);
    }
}

/* --- khl_del_key ---------------------------------------------------------------- */

Test(core, del_key_erases_once_and_reports_absence)
{
    khl_t(c64) h;
    khl_init(c64, &h, NULL);
    cr_assert_eq(khl_del_key(c64, &h, 1), 0, "empty table");
    for (uint64_t i = 0; i < 5000; ++i)
        khl_val(c64, &h, khl_put(c64, &h, i << 20, NULL)) = i;
    for (uint64_t i = 0; i < 5000; i += 3)
        cr_assert_eq(khl_del_key(c64, &h, i << 20), 1);
    for (uint64_t i = 0; i < 5000; i += 3)
        cr_assert_eq(khl_del_key(c64, &h, i << 20), 0, "erased twice");
    cr_assert_eq(khl_del_key(c64, &h, 12345), 0);
    for (uint64_t i = 0; i < 5000; ++i) {
        khl_iter_t k = khl_get(c64, &h, i << 20);
        cr_assert_eq(k != khl_end(c64, &h), i % 3 != 0);
        if (i % 3)
            cr_assert_eq(khl_val(c64, &h, k), i);
    }
    cr_assert_eq(khl_size(c64, &h), 5000 - 1667);
    cr_assert_eq(khl_check(c64, &h), 0);
    khl_destroy(c64, &h);
}

/* --- KHL_DEBUG: rebuilds check what they leave ------------------------------ */

#ifdef KHL_DEBUG
/* A size that disagrees with the control bytes (what a stray write would
 * leave) aborts at the next rebuild instead of spreading. */
Test(core, debug_build_aborts_when_a_rebuild_leaves_a_broken_table, .signal = SIGABRT)
{
    khl_t(c64) h;
    khl_init(c64, &h, NULL);
    for (uint64_t i = 0; i < 5; ++i)
        khl_val(c64, &h, khl_put(c64, &h, i, NULL)) = i;
    h.b->size += 1;
    khl_reserve(c64, &h, 1000);
    cr_assert_fail("the rebuild returned");
}
#endif

/* --- reserve's promise (a regression: 0.1 rebuilt reserved tables after deletes) --- */

Test(core, reserve_holds_under_churn_with_no_memory_left)
{
    static const size_t sizes[] = {14, 100, 1000, 5000};
    for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
        size_t n = sizes[s];
        TEST_TABLE(c32, h, t);
        cr_assert_eq(khl_reserve(c32, &h, n), 0);
        for (uint32_t i = 0; i < n; ++i)
            khl_put(c32, &h, i, NULL);
        t.fail_at = t.attempts + 1;
        t.fail_after = 1;
        uint64_t r = 7;
        uint32_t next = (uint32_t)n;
        for (int step = 0; step < 200000; ++step) {
            /* Delete a random present key, then put a new one: n keys always. */
            uint32_t victim = (uint32_t)(prng_next(&r) % next);
            if (khl_del_key(c32, &h, victim) == 0)
                continue;
            int ret;
            khl_put(c32, &h, next++, &ret);
            cr_assert_eq(ret, 1, "reserve(%zu): a put at %zu keys failed at step %d", n,
                         (size_t)khl_size(c32, &h), step);
        }
        cr_assert_eq(khl_size(c32, &h), n);
        cr_assert_eq(khl_check(c32, &h), 0);
        khl_destroy(c32, &h);
        test_alloc_fini(&t);
    }
}

/* --- KHL_INIT_ALLOC: the allocator named at compile time ---------------------- */

/* The checking allocator called by name; ud is the test_alloc_t.  Named
 * through a function-like macro, as khash's kmalloc often is (it did not
 * compile: the rebuild took allocf's address); test_resize.c and
 * test_pool_inline.c name functions. */
#define check_allocf_macro(ud, p, osize, nsize) check_allocf(ud, p, osize, nsize)
KHL_INIT_ALLOC(n64, uint64_t, uint64_t, 1, khl_hash_u64, khl_eq_int, check_allocf_macro)

/* The same operations on a hook table and a named-allocator table ask for
 * the same blocks, and leave the same tables. */
Test(core, a_named_allocator_allocates_as_the_hook_does)
{
    test_alloc_t ta, tn;
    test_alloc_init(&ta);
    test_alloc_init(&tn);
    khl_t(c64) a, a2;
    khl_t(n64) n, n2;
    khl_init(c64, &a, &ta.a);
    khl_init(c64, &a2, &ta.a);
    khl_init(n64, &n, &tn);
    khl_init(n64, &n2, &tn);
    cr_assert_eq(sizeof n, 2 * sizeof(void *));
    uint64_t r = 11;
    for (int step = 0; step < 6; ++step) {
        switch (step) {
        case 0:   /* grow from nothing through every size */
            for (int i = 0; i < 5000; ++i) {
                uint64_t k = prng_next(&r);
                khl_val(c64, &a, khl_put(c64, &a, k, NULL)) = k;
                khl_val(n64, &n, khl_put(n64, &n, k, NULL)) = k;
            }
            break;
        case 1: { /* deletions, then puts that drop the tombstones */
            khl_iter_t k;
            for (k = khl_begin(c64, &a); k < khl_end(c64, &a); k += 3)
                if (khl_exist(c64, &a, k)) {
                    uint64_t key = khl_key(c64, &a, k);
                    khl_del(c64, &a, k);
                    cr_assert_eq(khl_del_key(n64, &n, key), 1);
                }
            for (int i = 0; i < 3000; ++i) {
                uint64_t key = prng_next(&r);
                khl_val(c64, &a, khl_put(c64, &a, key, NULL)) = key;
                khl_val(n64, &n, khl_put(n64, &n, key, NULL)) = key;
            }
            break;
        }
        case 2:
            cr_assert_eq(khl_reserve(c64, &a, 40000), 0);
            cr_assert_eq(khl_reserve(n64, &n, 40000), 0);
            break;
        case 3:
            cr_assert_eq(khl_shrink(c64, &a), 0);
            cr_assert_eq(khl_shrink(n64, &n), 0);
            break;
        case 4:
            cr_assert_eq(khl_copy(c64, &a2, &a), 0);
            cr_assert_eq(khl_copy(n64, &n2, &n), 0);
            break;
        case 5:
            khl_clear(c64, &a);
            khl_clear(n64, &n);
            cr_assert_eq(khl_shrink(c64, &a), 0);
            cr_assert_eq(khl_shrink(n64, &n), 0);
            break;
        }
        cr_assert_eq(tn.allocs, ta.allocs, "step %d", step);
        cr_assert_eq(tn.frees, ta.frees, "step %d", step);
        cr_assert_eq(tn.live_bytes, ta.live_bytes, "step %d", step);
        cr_assert_eq(khl_size(n64, &n), khl_size(c64, &a), "step %d", step);
        cr_assert_eq(khl_n_buckets(n64, &n), khl_n_buckets(c64, &a), "step %d", step);
        cr_assert_eq(khl_check(n64, &n), 0);
        cr_assert_eq(khl_check(n64, &n2), 0);
    }
    cr_assert_null(n.b, "a shrunk empty table holds no block");
    for (khl_iter_t k = khl_next(c64, &a2, 0); k < khl_end(c64, &a2); k = khl_next(c64, &a2, k + 1)) {
        khl_iter_t j = khl_get(n64, &n2, khl_key(c64, &a2, k));
        cr_assert_neq(j, khl_end(n64, &n2));
        cr_assert_eq(khl_val(n64, &n2, j), khl_val(c64, &a2, k));
    }
    khl_destroy(c64, &a2);
    khl_destroy(n64, &n2);
    khl_destroy(c64, &a);
    khl_destroy(n64, &n);
    test_alloc_fini(&ta);
    test_alloc_fini(&tn);
}

/* Every allocation a put, reserve or copy makes may fail: -1, and the table
 * is as it was. */
Test(core, a_named_allocator_failing_leaves_the_table_as_it_was)
{
    for (uint64_t nth = 1; nth <= 12; ++nth) {
        test_alloc_t t;
        test_alloc_init(&t);
        khl_t(n64) h, copy;
        khl_init(n64, &h, &t);
        khl_init(n64, &copy, &t);
        t.fail_at = nth;
        uint64_t key = 0;
        int ret = 1;
        while (ret == 1) {
            khl_iter_t k = khl_put(n64, &h, key * 977, &ret);
            if (ret == 1)
                khl_val(n64, &h, k) = key++;
        }
        cr_assert_eq(ret, -1, "allocation %llu", (unsigned long long)nth);
        cr_assert_eq(khl_size(n64, &h), key);
        for (uint64_t i = 0; i < key; ++i)
            cr_assert_eq(khl_val(n64, &h, khl_get(n64, &h, i * 977)), i);
        cr_assert_eq(khl_get(n64, &h, key * 977), khl_end(n64, &h), "the failed put stored nothing");
        cr_assert_eq(khl_check(n64, &h), 0);
        size_t nb = khl_n_buckets(n64, &h);
        t.fail_at = t.attempts + 1;
        t.fail_after = 1;
        if (key) {
            cr_assert_eq(khl_reserve(n64, &h, 100000), -1);
            cr_assert_eq(khl_n_buckets(n64, &h), nb);
            cr_assert_eq(khl_copy(n64, &copy, &h), -1);
            cr_assert_null(copy.b);
        }
        cr_assert_eq(khl_size(n64, &h), key);
        khl_destroy(n64, &h);
        test_alloc_fini(&t);
    }
}

/* --- over-aligned types (a regression: 0.1 aligned them inside the block only) ----- */

typedef struct { alignas(64) uint64_t x; } line_t;
static uint64_t line_hash(line_t k) { return khl_hash_u64(k.x); }
#define line_eq(a, b) ((a).x == (b).x)
KHL_INIT(lines, line_t, uint32_t, 1, line_hash, line_eq)

Test(core, over_aligned_keys_are_aligned_in_memory)
{
    TEST_TABLE(lines, h, t);
    for (uint32_t i = 0; i < 3000; ++i) {
        line_t k = {i * 7u};
        khl_iter_t it = khl_put(lines, &h, k, NULL);
        khl_val(lines, &h, it) = i;
        cr_assert_eq((uintptr_t)&khl_key(lines, &h, it) % 64, 0, "key %u at %p", i,
                     (void *)&khl_key(lines, &h, it));
    }
    for (uint32_t i = 0; i < 3000; ++i) {
        line_t k = {i * 7u};
        cr_assert_eq(khl_val(lines, &h, khl_get(lines, &h, k)), i);
    }
    khl_t(lines) c;
    khl_init(lines, &c, &t.a);
    cr_assert_eq(khl_copy(lines, &c, &h), 0);
    for (khl_iter_t k = khl_next(lines, &c, 0); k < khl_end(lines, &c); k = khl_next(lines, &c, k + 1))
        cr_assert_eq((uintptr_t)&khl_key(lines, &c, k) % 64, 0);
    cr_assert_eq(khl_check(lines, &h), 0);
    cr_assert_eq(khl_check(lines, &c), 0);
    khl_destroy(lines, &c);
    khl_destroy(lines, &h);
    test_alloc_fini(&t);
}

/* --- seeded integer hashes (a regression: 0.1's were unseeded) --------------------- */

#define NCRAFT 1500

/* Average groups a lookup of each key walks in h (its own group included). */
static double mean_walk(const khl_t(cs64) *h, const uint64_t *keys, uint32_t n)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; ++i) {
        khl_iter_t k = khl_get(cs64, h, keys[i]);
        cr_assert_neq(k, khl_end(cs64, h));
        total += test_probe_groups(h->b, TEST_HASH(cs64, h, keys[i]), k);
    }
    return (double)total / n;
}

static double fill_and_walk(const uint64_t *keys, uint32_t n)
{
    khl_t(cs64) h;
    khl_init(cs64, &h, NULL);
    cr_assert_eq(khl_reserve(cs64, &h, 4 * NCRAFT), 0);
    for (uint32_t i = 0; i < n; ++i)
        khl_put(cs64, &h, keys[i], NULL);
    double walk = mean_walk(&h, keys, n);
    khl_destroy(cs64, &h);
    return walk;
}

Test(core, integer_keys_crafted_under_one_seed_are_ordinary_under_another)
{
    static uint64_t crafted[NCRAFT], ordinary[NCRAFT];
    /* The attacker knows seed 1 and the table size: keys whose home is group 0. */
    khl_seed(1);
    khl_t(cs64) probe;
    khl_init(cs64, &probe, NULL);
    cr_assert_eq(khl_reserve(cs64, &probe, 4 * NCRAFT), 0);
    uint32_t n = 0;
    for (uint64_t x = 1; n < NCRAFT; ++x)
        if (test_home_group(probe.b, TEST_HASH(cs64, &probe, x)) == 0)
            crafted[n++] = x;
    khl_destroy(cs64, &probe);
    uint64_t s = 5;
    for (uint32_t i = 0; i < NCRAFT; ++i)
        ordinary[i] = prng_next(&s);
    double attacked = fill_and_walk(crafted, NCRAFT);
    cr_assert_gt(attacked, 20.0, "the crafted keys must really collide under seed 1 (%.1f groups)",
                 attacked);
    /* Another process draws another seed. */
    khl_seed(0xC0FFEE1234567ULL);
    double crafted_walk = fill_and_walk(crafted, NCRAFT), random_walk = fill_and_walk(ordinary, NCRAFT);
    cr_assert_leq(crafted_walk, 2.0 * random_walk,
                  "crafted keys walk %.2f groups, random %.2f", crafted_walk, random_walk);
}

/* --- foreach walks a group at a time ------------------------------------------------ */

Test(core, foreach_may_delete_the_current_key_and_keys_ahead)
{
    enum { N = 3000 };
    static unsigned char seen[N];
    khl_t(c32) h;
    khl_init(c32, &h, NULL);
    for (uint32_t i = 0; i < N; ++i)
        khl_val(c32, &h, khl_put(c32, &h, i, NULL)) = i;
    uint32_t k, v, visits = 0;
    khl_foreach(c32, &h, k, v, {
        cr_assert_eq(k, v);
        cr_assert_eq(seen[k], 0, "key %u visited twice or after its deletion", k);
        seen[k] = 1;
        visits++;
        khl_del_key(c32, &h, k);
        /* A key not reached yet, likely in the same group: must not show up. */
        if (k % 3 == 0 && k + 1 < N && !seen[k + 1] && khl_del_key(c32, &h, k + 1))
            seen[k + 1] = 2;
    });
    for (uint32_t i = 0; i < N; ++i)
        cr_assert_neq(seen[i], 0, "key %u never visited", i);
    cr_assert_eq(khl_size(c32, &h), 0);
    cr_assert_gt(visits, N / 2);
    khl_destroy(c32, &h);
}

/* --- the cursor ------------------------------------------------------------------- */

/* Walks table h (of type name, keys 1..n, so key k's visit count is seen[k])
 * with a cursor, deleting every key whose number is divisible by del_mod as
 * it is visited (del_mod 0: none), and checks each key is visited once.
 * Records which of the bucket-count classes (<= 4, 5..16, > 16) it covered. */
#define CURSOR_WALK(name, h, n, del_mod, covered)                                     \
    do {                                                                              \
        static unsigned char seen_[256];                                              \
        uint32_t nb_ = khl_n_buckets(name, h), visits_ = 0;                           \
        memset(seen_, 0, sizeof seen_);                                               \
        khl_cursor_t c_ = khl_cursor(name, h);                                        \
        while (khl_cursor_next(name, h, &c_)) {                                       \
            uint64_t key_ = khl_key(name, h, c_.k);                                   \
            cr_assert(c_.k < nb_ && khl_exist(name, h, c_.k));                        \
            cr_assert(key_ >= 1 && key_ <= (n), "key %llu", (unsigned long long)key_); \
            cr_assert_eq(seen_[key_]++, 0, "key %llu visited twice", (unsigned long long)key_); \
            ++visits_;                                                                \
            if ((del_mod) && key_ % (del_mod) == 0)                                   \
                khl_del(name, h, c_.k);                                               \
        }                                                                             \
        cr_assert_eq(visits_, (n));                                                   \
        cr_assert_eq(khl_cursor_next(name, h, &c_), 0, "a finished cursor stays finished"); \
        covered |= nb_ <= 4 ? 1u : nb_ <= W ? 2u : 4u;                                \
        cr_assert_eq(khl_size(name, h), (n) - ((del_mod) ? (n) / (del_mod) : 0));     \
        cr_assert_eq(khl_check(name, h), 0);                                          \
    } while (0)

#define CURSOR_SIZES(name, covered)                                                   \
    do {                                                                              \
        unsigned covered_ = 0;                                                        \
        for (uint32_t n = 0; n <= 200; ++n)                                           \
            for (uint32_t del_mod = 0; del_mod <= 3; del_mod += 1 + (del_mod == 0)) { \
                khl_t(name) h;                                                        \
                khl_init(name, &h, NULL);                                             \
                for (uint32_t i = 1; i <= n; ++i)                                     \
                    khl_put(name, &h, i, NULL);                                       \
                if (n % 2) /* the smallest block: tables of 1 to 4 buckets */         \
                    cr_assert_eq(khl_shrink(name, &h), 0);                            \
                CURSOR_WALK(name, &h, n, del_mod, covered_);                          \
                khl_destroy(name, &h);                                                \
            }                                                                         \
        covered |= covered_ << 3 * (unsigned)khl_ismap_##name;                        \
    } while (0)

Test(cursor, visits_every_key_once_in_tables_of_every_size)
{
    unsigned covered = 0;      /* bits 0-2: sets' bucket-count classes, 3-5: maps' */
    CURSOR_SIZES(c64, covered);     /* a map whose first block has 4 buckets */
    CURSOR_SIZES(c32, covered);     /* a map of 8-byte pairs */
    CURSOR_SIZES(cs64, covered);    /* a set, first block of 8 buckets */
    CURSOR_SIZES(cs32, covered);    /* a set, first block of 16 buckets */
    cr_assert_eq(covered & 070, 070, "maps: bucket-count classes covered: %o", covered);
    cr_assert_eq(covered & 007, 007, "sets: bucket-count classes covered: %o", covered);
}

Test(cursor, empty_tables)
{
    khl_t(c32) h;
    khl_init(c32, &h, NULL);
    khl_cursor_t c = khl_cursor(c32, &h);
    cr_assert_eq(khl_cursor_next(c32, &h, &c), 0, "no block: no key");
    khl_put(c32, &h, 7, NULL);
    khl_del_key(c32, &h, 7);
    c = khl_cursor(c32, &h);
    cr_assert_eq(khl_cursor_next(c32, &h, &c), 0, "a block without keys: no key");
    khl_destroy(c32, &h);
}

/* --- overflow bytes: how misses end, deletions, failed puts ------------------ */

/* A u32 map of 2^14 buckets filled with random (odd) keys to its growth
 * point, KHL_MAX_LOAD. */
static void fill_to_growth(khl_t(c32) *h, uint64_t *r)
{
    khl_init(c32, h, NULL);
    while (!h->b || h->b->n_buckets < (1u << 14) || khl_growth_left(h->b) > 1)
        khl_put(c32, h, (uint32_t)prng_next(r) | 1u, NULL);
    cr_assert_eq(khl_n_buckets(c32, h), 1u << 14, "filled without growing");
}

Test(overflow, misses_end_in_their_home_group_when_groups_are_full)
{
    uint64_t r = 42;
    khl_t(c32) h;
    fill_to_growth(&h, &r);
    const unsigned char *ctrl = (const unsigned char *)(h.b + 1);
    uint32_t nb = h.b->n_buckets, full_groups = 0, home_ends = 0, home_has_empty = 0;
    for (uint32_t g = 0; g < nb; g += W) {
        uint32_t empty = 0;
        for (uint32_t i = 0; i < W; ++i)
            empty += ctrl[g + i] == KHL_CTRL_EMPTY;
        full_groups += !empty;
    }
    enum { MISSES = 20000 };
    for (uint32_t i = 0; i < MISSES; ++i) {
        uint32_t key = (uint32_t)prng_next(&r) & ~1u;      /* keys are odd */
        uint64_t hash = TEST_HASH(c32, &h, key);
        cr_assert_eq(khl_get(c32, &h, key), khl_end(c32, &h));
        home_ends += test_probe_groups(h.b, hash, UINT32_MAX) == 1;
        uint32_t home = test_home_group(h.b, hash) * W;
        for (uint32_t j = 0; j < W; ++j)
            if (ctrl[home + j] == KHL_CTRL_EMPTY) {
                ++home_has_empty;
                break;
            }
    }
    /* The groups displaced keys fill: at this load nearly half of them (473
     * of 1024 with these keys), and a miss that stopped at the first group
     * with an empty bucket (0.2) would go on from about 46% of its home
     * groups.  With the overflow bits, 86% end at home. */
    cr_assert_geq(full_groups * 3, nb / W, "%u of %u groups full", full_groups, nb / W);
    cr_assert_lt(home_has_empty, MISSES * 7 / 10);
    cr_assert_geq(home_ends, MISSES * 80 / 100, "%u of %u misses end at home (%u home groups with an empty bucket, %u of %u groups full)", home_ends, MISSES, home_has_empty, full_groups, nb / W);
    cr_assert_eq(khl_check(c32, &h), 0);
    khl_destroy(c32, &h);
}

/* A larger table's tags are 8 bits (254 values): a miss at the maximum load
 * compares about half as many keys as with the 7-bit tags of one-group
 * tables (each a pair's line to read in a table bigger than the caches). */
static uint64_t key_compares;
static inline int counted_eq(uint32_t a, uint32_t b)
{
    ++key_compares;
    return a == b;
}
KHL_INIT(counted, uint32_t, uint32_t, 1, khl_hash_u32, counted_eq)

Test(overflow, a_miss_compares_fewer_keys_with_8_bit_tags)
{
    uint64_t r = 11;
    khl_t(counted) h;
    khl_init(counted, &h, NULL);
    while (!h.b || h.b->n_buckets < (1u << 14) || khl_growth_left(h.b) > 1)
        khl_put(counted, &h, (uint32_t)prng_next(&r) | 1u, NULL);
    cr_assert_eq(khl_n_buckets(counted, &h), 1u << 14);
    enum { MISSES = 100000 };
    key_compares = 0;
    for (uint32_t i = 0; i < MISSES; ++i)
        cr_assert_eq(khl_get(counted, &h, (uint32_t)prng_next(&r) & ~1u), khl_end(counted, &h));
    /* 14 keys a group: 14/254 = 0.055 compares a group with 8-bit tags,
     * 14/128 = 0.109 with 7, and misses that go on past their home group
     * add more: 6,700-7,500 over eight seeds, 14,100-14,700 with 7 bits. */
    cr_assert_lt(key_compares, MISSES * 10 / 100, "%llu key compares in %u misses",
                 (unsigned long long)key_compares, (unsigned)MISSES);
    khl_destroy(counted, &h);
}

/* A regression against 0.2, whose deletions in a full group left a tombstone
 * (0xFE) that only a rebuild took away. */
Test(overflow, deletions_leave_no_tombstone)
{
    uint64_t r = 7;
    khl_t(c32) h;
    fill_to_growth(&h, &r);
    uint32_t nb = h.b->n_buckets, deleted = 0;
    for (uint32_t k = 0; k < nb; ++k)
        if (khl_exist(c32, &h, k) && (khl_key(c32, &h, k) & 2u)) {
            khl_del(c32, &h, k);
            ++deleted;
        }
    cr_assert_gt(deleted, 5000);
    const unsigned char *ctrl = (const unsigned char *)(h.b + 1);
    for (uint32_t k = 0; k < nb; ++k)
        cr_assert_neq(ctrl[k], KHL_CTRL_DELETED, "bucket %u", k);
    cr_assert_eq(khl_check(c32, &h), 0);
    khl_destroy(c32, &h);
}

/* A larger table's deletion leaves its growth as it is (an erase then
 * stores nothing it must first read from the table: a regression against
 * giving the bucket back at each deletion); the buckets freed in groups
 * without an overflow bit are counted back when the growth runs out,
 * without a rebuild. */
Test(overflow, deletions_are_counted_back_when_the_growth_runs_out)
{
    uint64_t r = 5;
    TEST_TABLE(c32, h, t);
    while (!h.b || h.b->n_buckets < (1u << 14) || khl_growth_left(h.b) > 0)
        khl_put(c32, &h, (uint32_t)prng_next(&r) | 1u, NULL);
    /* No deletion yet: the keys are the capacity. */
    uint32_t nb = h.b->n_buckets, capacity = khl_size(c32, &h), deleted = 0;
    for (khl_iter_t k = 0; k < nb && deleted < 6000; ++k)
        if (khl_exist(c32, &h, k) && (khl_key(c32, &h, k) & 2u)) {
            khl_del(c32, &h, k);
            ++deleted;
            cr_assert_eq(khl_growth_left(h.b), 0, "deletion %u gave growth back", deleted);
        }
    /* Empty buckets in groups no key passed: the overflow bytes follow
     * the control bytes, one per group. */
    const unsigned char *ctrl = (const unsigned char *)(h.b + 1);
    uint32_t clean = 0;
    for (uint32_t g = 0; g < nb / W; ++g)
        if (!ctrl[nb + g])
            for (uint32_t i = 0; i < W; ++i)
                clean += ctrl[g * W + i] == KHL_CTRL_EMPTY;
    /* What is counted back: the capacity less the keys and the empty
     * buckets of passed groups, the empty buckets of clean groups less the
     * buckets the maximum load keeps empty. */
    cr_assert_geq(clean - (nb - capacity), 1500 + nb / W, "%u empty buckets in clean groups", clean);
    size_t allocs = t.allocs;
    unsigned char *passed = malloc(nb / W);
    memcpy(passed, ctrl + nb, nb / W);
    for (uint32_t i = 0; i < 1500; ++i)
        khl_put(c32, &h, (uint32_t)prng_next(&r) & ~1u, NULL);
    cr_assert_eq(t.allocs, allocs, "no growth: the deletions were counted back");
    cr_assert_eq(khl_n_buckets(c32, &h), nb);
    ctrl = (const unsigned char *)(h.b + 1);
    for (uint32_t g = 0; g < nb / W; ++g)       /* no rehash in place either */
        cr_assert(!passed[g] || (ctrl[nb + g] & passed[g]) == passed[g], "group %u", g);
    free(passed);
    cr_assert_eq(khl_check(c32, &h), 0);
    khl_destroy(c32, &h);
    test_alloc_fini(&t);
}

/* A put that cannot grow changes no byte of the block, overflow bytes
 * included: it sets them only once it cannot fail. */
Test(overflow, a_failed_put_leaves_every_byte_as_it_was)
{
    test_alloc_t t;
    test_alloc_init(&t);
    khl_t(c32) h;
    khl_init(c32, &h, &t.a);
    uint64_t r = 3;
    uint32_t nb = 0;
    while (!h.b || h.b->n_buckets <= W || khl_growth_left(h.b) > 0) {
        khl_put(c32, &h, (uint32_t)prng_next(&r) | 1u, NULL);
        nb = h.b->n_buckets;
    }
    size_t bytes = khl_block_size(c32, &h);
    unsigned char *before = malloc(bytes);
    memcpy(before, khl_single_base(h.b), bytes);
    t.fail_at = t.attempts + 1;
    t.fail_after = 1;
    uint32_t failed = 0;
    for (uint32_t i = 0; i < 1000; ++i) {
        int ret;
        khl_put(c32, &h, (uint32_t)prng_next(&r) & ~1u, &ret);
        failed += ret == -1;
    }
    cr_assert_eq(failed, 1000);
    cr_assert_eq(h.b->n_buckets, nb);
    cr_assert_eq(memcmp(before, khl_single_base(h.b), bytes), 0, "the block changed");
    free(before);
    khl_destroy(c32, &h);
    test_alloc_fini(&t);
}
