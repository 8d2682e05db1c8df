/* test_churn.c: the shapes that broke other tables.  Put/delete churn must
 * not fill a table with tombstones (mruby #7346 hangs after 32 pairs), probing
 * across the end of the bucket array must survive deletions (khashl's
 * wrap-around bug, klib #135), and sequential or strided integer keys must
 * keep probe lengths short (identity hashes fail this).  String keys go
 * through the rebuilds that hash ahead (a hash declared indirect). */
#include <criterion/criterion.h>
#include <stdio.h>

#include "khashlite/khashlite.h"
#include "support.h"

KHL_SET_INIT_INT(cs)
KHL_MAP_INIT_INT64(cm, uint32_t)
KHL_MAP_INIT_STR(cstr, uint32_t)

#define W KHL_GROUP_WIDTH

/* Longest probe of any present key, and of `misses` absent keys. */
static uint32_t max_probe_cs(const khl_t(cs) *h, uint32_t miss_base, uint32_t misses)
{
    uint32_t nb = h->b->n_buckets, worst = 0;
    for (khl_iter_t k = 0; k < nb; ++k) {
        if (!khl_exist(cs, h, k))
            continue;
        uint32_t p = test_probe_groups(h->b, TEST_HASH(cs, h, khl_key(cs, h, k)), k);
        worst = p > worst ? p : worst;
    }
    for (uint32_t i = 0; i < misses; ++i) {
        uint32_t p = test_probe_groups(h->b, TEST_HASH(cs, h, miss_base + i), UINT32_MAX);
        worst = p > worst ? p : worst;
    }
    return worst;
}

Test(churn, insert_delete_pairs_stay_bounded, .timeout = 20)
{
    TEST_TABLE(cs, h, t);
    for (uint32_t i = 0; i < 20; ++i)
        khl_put(cs, &h, i, NULL);
    uint32_t max_nb = 0;
    /* mruby's shape: one new key in, one out, forever. */
    for (uint32_t i = 20; i < 200000; ++i) {
        khl_put(cs, &h, i, NULL);
        khl_del(cs, &h, khl_get(cs, &h, i - 20));
        cr_assert_eq(khl_size(cs, &h), 20);
        if (khl_n_buckets(cs, &h) > max_nb)
            max_nb = khl_n_buckets(cs, &h);
        if (i % 1000 == 0)
            cr_assert_leq(max_probe_cs(&h, 1u << 30, 64), 4, "probe length grew at %u", i);
    }
    cr_assert_leq(max_nb, 64, "20 live keys never need more than 64 buckets");
    cr_assert_eq(khl_check(cs, &h), 0);
    for (uint32_t i = 200000 - 20; i < 200000; ++i)
        cr_assert_neq(khl_get(cs, &h, i), khl_end(cs, &h));
    khl_destroy(cs, &h);
    cr_assert_lt(t.allocs, 200000 / 4, "rebuilds are amortised");
    test_alloc_fini(&t);
}

Test(churn, fill_and_drain_rounds, .timeout = 20)
{
    khl_t(cs) h;
    khl_init(cs, &h, NULL);
    uint32_t nb_first = 0;
    for (uint32_t round = 0; round < 300; ++round) {
        for (uint32_t i = 0; i < 1000; ++i)
            khl_put(cs, &h, round * 1000 + i, NULL);
        if (!nb_first)
            nb_first = khl_n_buckets(cs, &h);
        for (uint32_t i = 0; i < 1000; ++i)
            cr_assert_neq(khl_get(cs, &h, round * 1000 + i), khl_end(cs, &h));
        for (uint32_t i = 0; i < 1000; ++i)
            khl_del(cs, &h, khl_get(cs, &h, round * 1000 + i));
        cr_assert_eq(khl_size(cs, &h), 0);
        cr_assert_leq(khl_n_buckets(cs, &h), 2 * nb_first, "round %u", round);
    }
    khl_destroy(cs, &h);
}

Test(churn, probing_wraps_past_the_last_group)
{
    khl_t(cs) h;
    khl_init(cs, &h, NULL);
    cr_assert_eq(khl_reserve(cs, &h, W + 6), 0);
    uint32_t nb = khl_n_buckets(cs, &h), last = nb / W - 1;
    cr_assert_geq(nb, 2 * W);
    /* Keys whose home is the last group: W fill it, 6 more wrap to group 0. */
    uint32_t home_last[W + 6], n = 0;
    for (uint32_t x = 1; n < W + 6; ++x)
        if (test_home_group(h.b, TEST_HASH(cs, &h, x)) == last)
            home_last[n++] = x;
    for (uint32_t i = 0; i < W + 6; ++i)
        khl_put(cs, &h, home_last[i], NULL);
    cr_assert_eq(khl_n_buckets(cs, &h), nb, "the test needs the table not to grow");
    uint32_t wrapped = 0;
    for (uint32_t i = 0; i < W + 6; ++i)
        wrapped += khl_get(cs, &h, home_last[i]) < W;
    cr_assert_eq(wrapped, 6, "six keys must have wrapped to group 0");
    /* Delete from the full last group: the wrapped keys stay reachable. */
    for (uint32_t i = 0; i < W; i += 2)
        khl_del(cs, &h, khl_get(cs, &h, home_last[i]));
    for (uint32_t i = 0; i < W + 6; ++i)
        cr_assert_eq(khl_get(cs, &h, home_last[i]) != khl_end(cs, &h), i >= W || i % 2,
                     "key %u after deleting in the last group", i);
    cr_assert_eq(khl_check(cs, &h), 0);
    /* Delete the wrapped ones, re-insert everything, all findable. */
    for (uint32_t i = W; i < W + 6; ++i)
        khl_del(cs, &h, khl_get(cs, &h, home_last[i]));
    for (uint32_t i = 0; i < W + 6; ++i)
        khl_put(cs, &h, home_last[i], NULL);
    cr_assert_eq(khl_size(cs, &h), W + 6);
    for (uint32_t i = 0; i < W + 6; ++i)
        cr_assert_neq(khl_get(cs, &h, home_last[i]), khl_end(cs, &h));
    cr_assert_eq(khl_check(cs, &h), 0);
    khl_destroy(cs, &h);
}

/* A good spread gives averages near 1.1 groups per hit and 1.7 per miss at
 * this load (measured with a strong 64-bit mixer); an identity hash on
 * strided keys uses 1/stride of the groups and blows both up. */
static void check_pattern(uint32_t start, uint32_t stride, uint32_t count)
{
    khl_t(cs) h;
    khl_init(cs, &h, NULL);
    for (uint32_t i = 0; i < count; ++i)
        khl_put(cs, &h, start + i * stride, NULL);
    cr_assert_eq(khl_size(cs, &h), count);
    uint32_t nb = h.b->n_buckets, worst = 0;
    double hits = 0, misses = 0;
    for (khl_iter_t k = 0; k < nb; ++k) {
        if (!khl_exist(cs, &h, k))
            continue;
        uint32_t p = test_probe_groups(h.b, TEST_HASH(cs, &h, khl_key(cs, &h, k)), k);
        hits += p;
        worst = p > worst ? p : worst;
    }
    for (uint32_t i = 0; i < 20000; ++i) {
        uint32_t p = test_probe_groups(h.b, TEST_HASH(cs, &h, 0x7fff0000u + i * 3u), UINT32_MAX);
        misses += p;
        worst = p > worst ? p : worst;
    }
    cr_assert_lt(hits / count, 1.3, "stride %u: %.2f groups per hit", stride, hits / count);
    cr_assert_lt(misses / 20000, 2.2, "stride %u: %.2f groups per miss", stride, misses / 20000);
    cr_assert_leq(worst, 24, "stride %u: a probe visits %u groups", stride, worst);
    khl_destroy(cs, &h);
}

Test(churn, sequential_and_strided_keys_probe_short)
{
    check_pattern(0, 1, 100000);
    check_pattern(0, 8, 100000);
    check_pattern(0, 64, 100000);
    check_pattern(0, 1024, 100000);
    check_pattern(0, 1u << 16, 60000);
    check_pattern(7, 4096, 100000);
}

Test(churn, int64_high_bit_keys)
{
    khl_t(cm) h;
    khl_init(cm, &h, NULL);
    for (uint64_t i = 0; i < 50000; ++i)
        khl_val(cm, &h, khl_put(cm, &h, i << 40, NULL)) = (uint32_t)i;
    for (uint64_t i = 0; i < 50000; ++i)
        cr_assert_eq(khl_val(cm, &h, khl_get(cm, &h, i << 40)), (uint32_t)i);
    khl_destroy(cm, &h);
}

/* A window of live string keys slides through many more names in a
 * reserved table, which rebuilds in place near its maximum load, where many
 * keys lie past their home group and the rebuild swaps them between groups.
 * khl_hash_str is declared indirect, so these rebuilds hash keys ahead of
 * placing them; a key swapped into a bucket must be hashed then, not taken
 * from those hashes.  A key placed wrongly is lost until the next rebuild,
 * so the window is checked every few dozen steps. */
Test(churn, string_keys_survive_rebuilds_in_place, .timeout = 30)
{
    enum { NAMES = 20000, LIVE = 3000, STEPS = 60000 };
    static char names[NAMES][12];
    TEST_TABLE(cstr, h, t);
    for (uint32_t i = 0; i < NAMES; ++i)
        snprintf(names[i], sizeof names[i], "k%06u", i);
    cr_assert_eq(khl_reserve(cstr, &h, LIVE), 0);
    for (uint32_t s = 0; s < STEPS; ++s) {
        int ret;
        khl_val(cstr, &h, khl_put(cstr, &h, names[s % NAMES], &ret)) = s;
        cr_assert_eq(ret, 1, "step %u", s);
        if (s >= LIVE)
            cr_assert(khl_del_key(cstr, &h, names[(s - LIVE) % NAMES]), "step %u", s);
        if (s % 37 == 0)
            for (uint32_t k = s >= LIVE - 1 ? s - (LIVE - 1) : 0; k <= s; ++k) {
                const uint32_t *v = khl_getp(cstr, &h, names[k % NAMES]);
                cr_assert(v && *v == k, "step %u: key %u lost", s, k);
            }
    }
    cr_assert_eq(t.allocs, 1, "the reserved block was rebuilt in place");
    cr_assert_eq(khl_check(cstr, &h), 0);
    khl_destroy(cstr, &h);
    test_alloc_fini(&t);
}
