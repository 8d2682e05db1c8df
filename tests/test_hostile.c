/* test_hostile.c: inputs chosen by an adversary.  String keys that collide
 * under one seed (found by brute force, as an attacker who knows the seed
 * would) pile into one group; under another seed, the per-process default's
 * situation, the same keys spread normally.  And sizes at the limits: a
 * reserve that would need 2^31 buckets or more memory than the allocator
 * gives fails cleanly and changes nothing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "khashlite/khashlite.h"
#include "support.h"

KHL_SET_INIT_STR(hs)
KHL_SET_INIT_INT(hi)

#define NCOLL 160
#define W KHL_GROUP_WIDTH

static char coll[NCOLL][24];

/* Groups the lookup of each key walks; the longest. */
static uint32_t max_probe(const khl_t(hs) *h)
{
    uint32_t nb = h->b->n_buckets, worst = 0;
    for (khl_iter_t k = 0; k < nb; ++k) {
        if (!khl_exist(hs, h, k))
            continue;
        uint32_t n = test_probe_groups(h->b, TEST_HASH(hs, h, khl_key(hs, h, k)), k);
        cr_assert_leq(n, nb / W, "a key outside its probe sequence");
        worst = n > worst ? n : worst;
    }
    return worst;
}

Test(hostile, colliding_strings_under_a_known_seed_only)
{
    khl_t(hs) h;
    khl_init(hs, &h, NULL);
    cr_assert_eq(khl_reserve(hs, &h, NCOLL), 0);

    /* The attacker's search: strings whose XXH3 under seed 1 all pick group 0. */
    khl_seed(1);
    int found = 0;
    for (unsigned long i = 0; found < NCOLL; ++i) {
        char s[24];
        snprintf(s, sizeof s, "attack-%lu", i);
        if (test_home_group(h.b, TEST_HASH(hs, &h, s)) == 0)
            memcpy(coll[found++], s, sizeof s);
        cr_assert_lt(i, 100000000ul, "brute force did not converge");
    }
    for (int i = 0; i < NCOLL; ++i)
        khl_put(hs, &h, coll[i], NULL);
    uint32_t attacked = max_probe(&h);
    cr_assert_geq(attacked, NCOLL / W - 2, "the collisions must really pile up (%u groups)", attacked);
    khl_destroy(hs, &h);

    /* Another seed, as every process draws its own: the same keys spread. */
    khl_seed(0x5eed5eed5eed5eedULL);
    khl_init(hs, &h, NULL);
    cr_assert_eq(khl_reserve(hs, &h, NCOLL), 0);
    for (int i = 0; i < NCOLL; ++i)
        khl_put(hs, &h, coll[i], NULL);
    uint32_t spread = max_probe(&h);
    cr_assert_leq(spread, 4, "under another seed the attack keys still collide (%u groups)", spread);
    cr_assert_lt(spread * 4, attacked);
    for (int i = 0; i < NCOLL; ++i)
        cr_assert_neq(khl_get(hs, &h, coll[i]), khl_end(hs, &h));
    khl_destroy(hs, &h);
}

Test(hostile, reserve_beyond_the_allocator_fails_cleanly)
{
    TEST_TABLE(hi, h, t);
    for (uint32_t i = 0; i < 100; ++i)
        khl_put(hi, &h, i, NULL);
    khl_block_t *block = h.b;
    /* The largest reserve 2^31 buckets hold (13/16 of them: capacity 7/8 less
     * the 1/16 reserve keeps spare): ~10 GiB, refused below. */
    size_t most = (size_t)KHL_MAX_BUCKETS / 16 * 13;
    t.fail_at = t.attempts + 1;
    t.fail_after = 1;
    cr_assert_eq(khl_reserve(hi, &h, most), -1);
    cr_assert_eq(h.b, block);
    cr_assert_eq(khl_size(hi, &h), 100);
    /* One more key than 2^31 buckets hold: fails before asking for memory. */
    uint64_t attempts = t.attempts;
    cr_assert_eq(khl_reserve(hi, &h, most + 1), -1);
    cr_assert_eq(t.attempts, attempts, "an impossible size must not reach the allocator");
    for (uint32_t i = 0; i < 100; ++i)
        cr_assert_neq(khl_get(hi, &h, i), khl_end(hi, &h));
    khl_destroy(hi, &h);
    test_alloc_fini(&t);
}

Test(hostile, zero_sized_requests)
{
    TEST_TABLE(hi, h, t);
    cr_assert_eq(khl_reserve(hi, &h, 0), 0);
    cr_assert_eq(khl_shrink(hi, &h), 0);
    cr_assert_eq(t.attempts, 0, "reserve(0) and shrink of an empty table allocate nothing");
    cr_assert_null(h.b);
    test_alloc_fini(&t);
}
