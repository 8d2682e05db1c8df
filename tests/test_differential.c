/* test_differential.c: long random sequences of operations run against the
 * table and against an obviously correct model (an array indexed by key id),
 * compared after every step; and the same workload with the k-th allocation
 * failing, for every k, checking that a failed call changed nothing.
 * Covers int, int64 and string keys, sets and maps, a map of 56-byte values
 * (its first blocks hold 1, 2 and 4 buckets: the sizes of the scan, with u32 -> u32 and the
 * u64 set's 8), and the split layouts
 * the benchmarks use (bench/peers/khl_split.h); the table's invariants are checked as it goes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/peers/khl_split.h"
#include "khashlite/khashlite.h"
#include "support.h"

KHL_MAP_INIT_INT(d32, uint32_t)
KHL_MAP_INIT_INT64(d64, uint32_t)
KHL_MAP_INIT_STR(dstr, uint32_t)
/* 56 bytes of value: pairs of 64, a first block of 1 bucket. */
typedef struct { uint64_t w[7]; } big_t;
KHL_MAP_INIT_INT64(dbig, big_t)
KHL_SET_INIT_INT(ds32)
KHL_SET_INIT_INT64(ds64)
KHL_SET_INIT_STR(dsstr)
KHL_INIT_LAYOUT(d32split2, uint32_t, uint32_t, 1, khl_hash_u32, khl_eq_int, KHL_LAYOUT_SPLIT2)
KHL_INIT_LAYOUT(d32split3, uint32_t, uint32_t, 1, khl_hash_u32, khl_eq_int, KHL_LAYOUT_SPLIT3)
KHL_INIT_LAYOUT(dstrsplit3, const char *, uint32_t, 1, khl_hash_str, khl_eq_str, KHL_LAYOUT_SPLIT3)
KHL_INIT_LAYOUT(ds64split2, uint64_t, char, 0, khl_hash_u64, khl_eq_int, KHL_LAYOUT_SPLIT2)

#define NKEYS 600
#define MODEL_KEYS NKEYS
#include "support/table_model.h"

/* Key spaces: key id i <-> key value.  Ints are scattered, int64 use the
 * high bits, strings are distinct buffers so equality is by content. */
static uint32_t keys32[NKEYS];
static uint64_t keys64[NKEYS];
static const char *keysstr[NKEYS];
static char strbuf[NKEYS][24];

static void make_keys(void)
{
    uint64_t s = 0x1234567;
    khl_seed(42);
    for (int i = 0; i < NKEYS; ++i) {
        keys32[i] = (uint32_t)prng_next(&s) | 1u;
        keys64[i] = ((uint64_t)i << 41) ^ (uint64_t)i;
        snprintf(strbuf[i], sizeof strbuf[i], "key-%d-%x", i, i * 2654435761u);
        keysstr[i] = strbuf[i];
    }
}

/* One differential run, written once for every table type.  IS_MAP selects
 * value checks, VAL reads a value.  FAILK > 0 makes the FAILK-th allocation fail and checks the
 * failing call left the table exactly as the model says.  Returns the
 * number of allocation attempts the run made. */
#define DIFF_RUN(fn, name, KEYS, IS_MAP, VAL, LIVE)                                                  \
    static uint64_t fn(uint64_t seed, int steps, uint64_t failk)                         \
    {                                                                                     \
        test_alloc_t t;                                                                   \
        khl_t(name) h, c;                                                                 \
        static model_t m;                                                                 \
        int failed = 0;                                                                   \
        memset(&m, 0, sizeof m);                                                          \
        test_alloc_init(&t);                                                              \
        t.fail_at = failk;                                                                \
        khl_init(name, &h, &t.a);                                                         \
        for (int step = 0; step < steps; ++step) {                                        \
            uint64_t r = prng_next(&seed);                                                \
            int id = (int)((r >> 8) % (step % 2000 < 1000 ? NKEYS : NKEYS / 8));          \
            unsigned op = (unsigned)(r % 1000);                                           \
            khl_block_t *before = h.b;                                                      \
            uint32_t nb_before = khl_n_buckets(name, &h);                                 \
            uint64_t attempts_before = t.attempts;                                        \
            int fail = 0;                                                                 \
            if (op < 500) {                                                               \
                int ret;                                                                  \
                khl_iter_t k = khl_put(name, &h, KEYS[id], &ret);                         \
                if (ret < 0) {                                                            \
                    fail = 1;                                                             \
                    cr_assert_eq(k, khl_end(name, &h));                                   \
                } else {                                                                  \
                    cr_assert_eq(ret, m.present[id] ? 0 : 1, "step %d put", step);        \
                    cr_assert(khl_exist(name, &h, k));                                    \
                    if (!m.present[id])                                                   \
                        m.size++;                                                         \
                    m.present[id] = 1;                                                    \
                    if (IS_MAP) {                                                         \
                        if (ret == 0)                                                     \
                            cr_assert_eq(VAL(name, &h, k),      \
                                         m.val[id]);                                      \
                        m.val[id] = (uint32_t)(r >> 32);                                  \
                        VAL(name, &h, k) = m.val[id];           \
                    }                                                                     \
                }                                                                         \
            } else if (op < 700) {                                                        \
                khl_iter_t k = khl_get(name, &h, KEYS[id]);                               \
                cr_assert_eq(k != khl_end(name, &h), m.present[id], "step %d get", step);  \
                if (IS_MAP && m.present[id])                                              \
                    cr_assert_eq(VAL(name, &h, k), m.val[id]);  \
            } else if (op < 960) {                                                        \
                khl_del(name, &h, khl_get(name, &h, KEYS[id]));                           \
                if (m.present[id])                                                        \
                    m.size--;                                                             \
                m.present[id] = 0;                                                        \
            } else if (op < 970) {                                                        \
                if (khl_reserve(name, &h, (size_t)(r >> 40) % (2 * NKEYS)) < 0)           \
                    fail = 1;                                                             \
            } else if (op < 980) {                                                        \
                if (khl_shrink(name, &h) < 0)                                             \
                    fail = 1;                                                             \
            } else if (op < 990) {                                                        \
                khl_init(name, &c, &t.a);                                                 \
                if (khl_copy(name, &c, &h) < 0) {                                         \
                    fail = 1;                                                             \
                    cr_assert_null(c.b, "failed copy left dst changed");                  \
                } else {                                                                  \
                    khl_destroy(name, &h);                                                \
                    h = c;                                                                \
                    before = h.b;                                                         \
                    nb_before = khl_n_buckets(name, &h);                                  \
                }                                                                         \
            } else if (op < 993) {                                                        \
                khl_clear(name, &h);                                                      \
                memset(&m, 0, sizeof m);                                                  \
            }                                                                             \
            if (fail) {                                                                   \
                cr_assert(failk && attempts_before < failk && t.attempts >= failk,         \
                          "step %d failed unasked", step);                                \
                cr_assert_eq(h.b, before, "a failed call moved the block");               \
                cr_assert_eq(khl_n_buckets(name, &h), nb_before);                         \
                failed = 1;                                                               \
            }                                                                             \
            cr_assert_eq(khl_size(name, &h), m.size, "step %d size", step);               \
            cr_assert_eq(t.live_blocks, h.b ? (size_t)(LIVE) : 0u, "step %d live blocks", step); \
            if (step % 64 == 0 || fail) {                                                 \
                uint32_t seen = 0;                                                        \
                cr_assert_eq(khl_check(name, &h), 0, "step %d invariants", step);         \
                for (int i = 0; i < NKEYS; ++i) {                                         \
                    khl_iter_t k = khl_get(name, &h, KEYS[i]);                            \
                    cr_assert_eq(k != khl_end(name, &h), m.present[i], "key %d", i);      \
                    if (IS_MAP && m.present[i])                                           \
                        cr_assert_eq(VAL(name, &h, k), m.val[i]); \
                }                                                                         \
                for (khl_iter_t k = 0; k < khl_end(name, &h); ++k)                        \
                    seen += khl_exist(name, &h, k) ? 1u : 0u;                             \
                cr_assert_eq(seen, m.size);                                               \
            }                                                                             \
        }                                                                                 \
        cr_assert(!failk || failed || t.attempts < failk, "fail_at %llu never reported",   \
                  (unsigned long long)failk);                                             \
        khl_destroy(name, &h);                                                            \
        test_alloc_fini(&t);                                                              \
        return t.attempts;                                                                \
    }

DIFF_RUN(run_d32, d32, keys32, 1, MAP_VAL, 1)
DIFF_RUN(run_d64, d64, keys64, 1, MAP_VAL, 1)
DIFF_RUN(run_dstr, dstr, keysstr, 1, MAP_VAL, 1)
DIFF_RUN(run_dbig, dbig, keys64, 1, MAP_VAL, 1)
DIFF_RUN(run_ds32, ds32, keys32, 0, SET_VAL, 1)
DIFF_RUN(run_ds64, ds64, keys64, 0, SET_VAL, 1)
DIFF_RUN(run_dsstr, dsstr, keysstr, 0, SET_VAL, 1)
DIFF_RUN(run_d32split2, d32split2, keys32, 1, MAP_VAL, 2)
DIFF_RUN(run_d32split3, d32split3, keys32, 1, MAP_VAL, 3)
DIFF_RUN(run_dstrsplit3, dstrsplit3, keysstr, 1, MAP_VAL, 3)
DIFF_RUN(run_ds64split2, ds64split2, keys64, 0, SET_VAL, 2)

typedef uint64_t (*run_fn)(uint64_t seed, int steps, uint64_t failk);

static void differential(run_fn run)
{
    make_keys();
    for (uint64_t seed = 1; seed <= 4; ++seed)
        run(seed * 0x9E3779B97F4A7C15ULL, 30000, 0);
}

/* Every allocation of a shorter scripted run fails once, in turn. */
static void failure_injection(run_fn run)
{
    make_keys();
    uint64_t total = run(77, 4000, 0);
    cr_assert_gt(total, 10, "the workload must allocate to test anything");
    for (uint64_t k = 1; k <= total; ++k)
        run(77, 4000, k);
}

Test(differential, int_map) { differential(run_d32); }
Test(differential, int64_map) { differential(run_d64); }
Test(differential, str_map) { differential(run_dstr); }
Test(differential, int64_map_of_large_values) { differential(run_dbig); }
Test(differential, int_set) { differential(run_ds32); }
Test(differential, int64_set) { differential(run_ds64); }
Test(differential, str_set) { differential(run_dsstr); }
Test(differential, int_map_split2) { differential(run_d32split2); }
Test(differential, int_map_split3) { differential(run_d32split3); }
Test(differential, str_map_split3) { differential(run_dstrsplit3); }
Test(differential, int64_set_split2) { differential(run_ds64split2); }

Test(oom, int_map) { failure_injection(run_d32); }
Test(oom, str_map) { failure_injection(run_dstr); }
Test(oom, int64_map_of_large_values) { failure_injection(run_dbig); }
Test(oom, int64_set) { failure_injection(run_ds64); }
Test(oom, int_map_split2) { failure_injection(run_d32split2); }
Test(oom, int_map_split3) { failure_injection(run_d32split3); }
Test(oom, str_map_split3) { failure_injection(run_dstrsplit3); }
