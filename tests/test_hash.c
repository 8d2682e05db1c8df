/* test_hash.c: the public hash helpers.  String hashing is XXH3-64 under the
 * process seed (checked against libxxhash itself), khl_seed fixes it, the
 * default seed differs between processes, and the integer mixers are
 * bijective-looking and spread their input bits. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "khashlite/khashlite.h"
#include "support.h"

Test(hash, str_is_seeded_xxh3)
{
    const char *s = "the quick brown fox";
    khl_seed(99);
    cr_assert_eq(khl_hash_str(s), XXH3_64bits_withSeed(s, strlen(s), 99));
    cr_assert_eq(khl_hash_bytes(s, 3), XXH3_64bits_withSeed(s, 3, 99));
    uint64_t a = khl_hash_str(s);
    khl_seed(100);
    cr_assert_neq(khl_hash_str(s), a, "another seed, another hash");
    khl_seed(99);
    cr_assert_eq(khl_hash_str(s), a, "the same seed, the same hash");
    cr_assert_eq(khl_hash_bytes("", 0), XXH3_64bits_withSeed("", 0, 99));
}

/* The default seed is drawn per process: run the seed probe program twice. */
Test(hash, default_seed_differs_between_processes)
{
    char cmd[4096];
    test_build_path(cmd, sizeof cmd, "tests/seed-probe");
    unsigned long long v[2];
    for (int i = 0; i < 2; ++i) {
        FILE *p = popen(cmd, "r");
        cr_assert_not_null(p);
        cr_assert_eq(fscanf(p, "%llx", &v[i]), 1, "%s printed no hash", cmd);
        cr_assert_eq(pclose(p), 0);
    }
    cr_assert_neq(v[0], v[1], "two processes hashed \"x\" alike: the seed is not random");
}

/* What a table takes from an integer hash: the top 7 bits (the tag) and the
 * bits below them (the group).  Every input bit must reach them. */
Test(hash, integer_hash_top_bits_see_every_key_bit)
{
    for (int b = 0; b < 64; ++b) {
        int changed = 0;
        for (uint64_t x = 1; x < 200; ++x)
            changed += (khl_hash_u64(x) >> 40) != (khl_hash_u64(x ^ (1ULL << b)) >> 40);
        cr_assert_eq(changed, 199, "flipping key bit %d left the top 24 bits alone", b);
    }
    for (int b = 0; b < 32; ++b)
        cr_assert_neq(khl_hash_u32(7) >> 40, khl_hash_u32(7 ^ (1u << b)) >> 40, "u32 bit %d", b);
}

Test(hash, integer_hashes_follow_the_seed)
{
    khl_seed(1);
    uint64_t a = khl_hash_u64(42), a32 = khl_hash_u32(42);
    khl_seed(2);
    cr_assert_neq(khl_hash_u64(42), a);
    cr_assert_neq(khl_hash_u32(42), a32);
    khl_seed(1);
    cr_assert_eq(khl_hash_u64(42), a, "the same seed gives the same hash");
}

Test(hash, sequential_u32_fill_tags_evenly)
{
    /* The 7-bit tags (top bits) of sequential keys must be spread: a table
     * relies on them to skip key comparisons. */
    unsigned counts[128] = {0};
    for (uint32_t i = 0; i < 128 * 1000; ++i)
        counts[khl_hash_u32(i) >> 57]++;
    for (int f = 0; f < 128; ++f) {
        cr_assert_gt(counts[f], 800, "tag %d used %u times", f, counts[f]);
        cr_assert_lt(counts[f], 1200, "tag %d used %u times", f, counts[f]);
    }
}
