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

static int popcount64(uint64_t x) { return __builtin_popcountll(x); }

Test(hash, integer_mixers_avalanche)
{
    /* Flipping one input bit flips about half of the output bits. */
    uint64_t s = 12345;
    double total64 = 0, total32 = 0;
    int n64 = 0, n32 = 0;
    for (int i = 0; i < 2000; ++i) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        for (int b = 0; b < 64; ++b, ++n64)
            total64 += popcount64(khl_hash_u64(s) ^ khl_hash_u64(s ^ (1ULL << b)));
        uint32_t x = (uint32_t)(s >> 17);
        for (int b = 0; b < 32; ++b, ++n32)
            total32 += popcount64((khl_hash_u32(x) ^ khl_hash_u32(x ^ (1u << b))) & 0xffffffffULL);
    }
    cr_assert_gt(total64 / n64, 30.0);
    cr_assert_lt(total64 / n64, 34.0);
    cr_assert_gt(total32 / n32, 12.0, "u32 mixer flips %.1f of the 32 bits the table uses", total32 / n32);
    cr_assert_neq(khl_hash_u32(1), 1);
    cr_assert_neq(khl_hash_u64(1), 1);
}

Test(hash, sequential_u32_fill_fragments_evenly)
{
    /* The 7-bit fragments of sequential keys must be spread: a table relies on
     * them to skip key comparisons. */
    unsigned counts[128] = {0};
    for (uint32_t i = 0; i < 128 * 1000; ++i)
        counts[khl_hash_u32(i) & 0x7f]++;
    for (int f = 0; f < 128; ++f) {
        cr_assert_gt(counts[f], 800, "fragment %d used %u times", f, counts[f]);
        cr_assert_lt(counts[f], 1200, "fragment %d used %u times", f, counts[f]);
    }
}
