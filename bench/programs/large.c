/* large.c: program `large`, workload `large`, one large table.  Inserts n
 * random distinct keys into an empty table (no reserve), then looks all of
 * them up in shuffled order (get_hit), looks up n absent random keys
 * (get_miss), walks every entry summing the values (iterate) and deletes
 * every key (erase); each in ns per operation, median of o->reps
 * repetitions, a fresh table per repetition.  The tables take turns within
 * each repetition (see run_keytype); uthash, 5-10x slower than the rest, runs
 * at most 3 repetitions and no warmup so a standard run stays short.  Also
 * reports the bytes each table holds per key at the end of the inserts, its
 * maximum load factor and the load it ended at.
 *
 * Tables (the `table` column), each through its adapter in bench/peers/ (the
 * workload loops are adapter.h's, once for all): khashlite (default
 * KHL_MAX_LOAD, 0.875), khashlite_lf77 (KHL_MAX_LOAD 0.77, khash's limit;
 * large_lf77.c), khashlite_split3 (klib's four-allocation layout), and the
 * Debian-packaged peers: htslib's klib khash (`khash`), mruby 3.1's khash
 * with a real mrb_state (`mruby_khash`, peers/mruby.c),
 * absl::flat_hash_map (`absl`, peers/flat.cpp) and uthash (`uthash`).
 * Key types are the metric prefix: u32 (uint32_t keys), u64 (uint64_t keys),
 * str16 (16-byte strings); values are uint32_t throughout (blueprints u32,
 * u64_u32, str_u32).
 *
 * Fairness choices:
 * - every table uses its own default hash for the key type (khash: identity
 *   for u32, its shift-xor for u64, X31 for strings; mruby likewise; absl:
 *   absl::Hash; uthash: Jenkins; khashlite: khl_hash_u32/u64/str), since
 *   that is what a user of each gets.  Keys are random (harness/keys.h), so
 *   even the identity hash sees well-spread keys.
 * - str16 keys are 16 characters plus a NUL in one preallocated array of
 *   17-byte slots (the array is not counted as table memory).  The C tables
 *   store `const char *` and compare content: khashlite, khash and mruby with
 *   strcmp on NUL-terminated strings (their string maps), uthash over the 16
 *   bytes (memcmp), absl with std::string_view of length 16 (its idiomatic
 *   non-owning string key).
 * - uthash mallocs one item per key (its normal use) and frees it on erase.
 * - every table runs whole loops per call, so a call through a function
 *   pointer costs once per n operations, never per operation.
 *
 * Memory (peak_bytes_per_entry): bytes requested from the allocator and held
 * at the end of the inserts, divided by n; allocator headers and rounding
 * are not counted, for any table (each adapter's stats).  khashlite:
 * khl_block_size.  khash and mruby: computed from their documented layout
 * (header struct + flag words + n_buckets keys + n_buckets values).  absl:
 * counted exactly through its allocator.  uthash: counted exactly through
 * uthash_malloc/uthash_free plus the item mallocs.
 *
 * --alloc=pool runs only the khashlite tables, on bench_alloc_open's pool.
 */
#include <stdlib.h>
#include <string.h>

#include "harness/alloc.h"
#include "harness/bench.h"
#include "harness/keys.h"
#include "khashlite/khashlite.h"
#include "peers/khash.h"
#include "peers/khashlite.h"
#include "peers/uthash.h"
#include "large_khl.h"

/* --- khashlite, one block (large_khl.h) and klib's layout ------------------------- */
PEERS_KHL_TABLE(spl_u32, u32, khl_hash_u32, khl_eq_int, KHL_LAYOUT_SPLIT3)
PEERS_KHL_TABLE(spl_u64, u64_u32, khl_hash_u64, khl_eq_int, KHL_LAYOUT_SPLIT3)
PEERS_KHL_TABLE(spl_str, str_u32, khl_hash_str, khl_eq_str, KHL_LAYOUT_SPLIT3)

/* large_lf77.c: the single-block tables again at KHL_MAX_LOAD 0.77. */
extern const peers_ops_t large_khl_lf77_ops[N_KEYTYPES];
extern const double large_khl_lf77_max_load;

/* --- htslib's klib khash ---------------------------------------------------------- */
PEERS_KH_TABLE(kh_u32, u32, INT)
PEERS_KH_TABLE(kh_u64, u64_u32, INT64)
PEERS_KH_TABLE(kh_str, str_u32, STR)

/* --- uthash ------------------------------------------------------------------------ */
PEERS_UT(ut_u32, u32, sizeof(uint32_t), PEERS_UT_ADDR)
PEERS_UT(ut_u64, u64_u32, sizeof(uint64_t), PEERS_UT_ADDR)
PEERS_UT(ut_str, str_u32, 16, PEERS_UT_STR)

/* ---------------------------------------------------------------------------------- */

typedef struct large_table {
    const char *name, *layout;
    int khashlite;           /* runs on the pool with --alloc=pool */
    int slow;                /* at most 3 repetitions, no warmup */
    double max_load;         /* < 0: not an open-addressing limit */
    const peers_ops_t *ops;  /* per key type */
} large_table_t;

static const peers_ops_t khl_ops[N_KEYTYPES] = PEERS_OPS3(khl_u32, khl_u64, khl_str);
static const peers_ops_t spl_ops[N_KEYTYPES] = PEERS_OPS3(spl_u32, spl_u64, spl_str);
static const peers_ops_t kh_ops[N_KEYTYPES] = PEERS_OPS3(kh_u32, kh_u64, kh_str);
static const peers_ops_t ut_ops[N_KEYTYPES] = PEERS_OPS3(ut_u32, ut_u64, ut_str);

#define N_TABLES 7
static large_table_t tables[N_TABLES] = {
    {"khashlite", "single", 1, 0, KHL_MAX_LOAD, khl_ops},
    {"khashlite_lf77", "single", 1, 0, 0, large_khl_lf77_ops},   /* max_load set in main */
    {"khashlite_split3", "split3", 1, 0, KHL_MAX_LOAD, spl_ops},
    {"khash", "split3", 0, 0, 0.77, kh_ops},
    {"mruby_khash", "split2", 0, 0, 0.75, peers_mruby_ops},   /* UPPER_BOUND(x) = x/4 + x/2 */
    {"absl", "single", 0, 0, 0.875, peers_absl_v32_ops},     /* 7/8 */
    /* 5-10x slower than the rest: capped so a standard run stays short. */
    {"uthash", "chained", 0, 1, -1, ut_ops},
};

enum { OP_INSERT, OP_GET_HIT, OP_GET_MISS, OP_ITERATE, OP_ERASE, N_OPS };
static const char *const op_names[N_OPS] = {"insert", "get_hit", "get_miss", "iterate", "erase"};

static void fail(const char *table, const char *kt, size_t n, const char *what)
{
    fprintf(stderr, "large: %s %s n=%zu: %s\n", table, kt, n, what);
    exit(1);
}

/* One repetition of the five operations on a fresh table: ns per operation
 * into ns[0..N_OPS); with stats != NULL also the bytes, size and buckets
 * the table has at the end of the inserts. */
static void run_rep(const large_table_t *tb, int kt, const keys_t *ks, size_t n,
                    const khl_allocator_t *a, double ns[N_OPS], size_t stats[3])
{
    const peers_ops_t *op = &tb->ops[kt];
    const char *ktn = key_type_names[kt];
    uint64_t expect = (uint64_t)n * (n - 1) / 2;
    uint64_t t0, sum = 0, it;
    size_t got, b2, s2, n2;
    long added;
    void *h;
    peers_khl_alloc = a;    /* the khashlite tables' allocator; the others have their own */
    if (!(h = op->create()))
        fail(tb->name, ktn, n, "cannot create the table");

    t0 = bench_now_ns();
    added = op->put(h, ks->hit, 0, n);
    ns[OP_INSERT] = (double)(bench_now_ns() - t0);
    if (added < 0)
        fail(tb->name, ktn, n, "insert ran out of memory");
    op->stats(h, &b2, &n2);    /* untimed */
    s2 = op->size(h);
    if (s2 != n || (size_t)added != n)
        fail(tb->name, ktn, n, "size after insert is wrong");
    if (stats) {
        stats[0] = b2;
        stats[1] = s2;
        stats[2] = n2;
    }
    t0 = bench_now_ns();
    got = op->get(h, ks->shuf, n, &sum);
    ns[OP_GET_HIT] = (double)(bench_now_ns() - t0);
    BENCH_KEEP(sum);
    if (got != n || sum != expect)
        fail(tb->name, ktn, n, "get_hit did not find every key");
    t0 = bench_now_ns();
    got = op->get(h, ks->miss, n, &sum);
    ns[OP_GET_MISS] = (double)(bench_now_ns() - t0);
    BENCH_KEEP(sum);
    if (got != 0)
        fail(tb->name, ktn, n, "get_miss found a key");
    t0 = bench_now_ns();
    it = op->iterate(h);
    ns[OP_ITERATE] = (double)(bench_now_ns() - t0);
    BENCH_KEEP(it);
    if (it != expect)
        fail(tb->name, ktn, n, "iterate sum is wrong");
    t0 = bench_now_ns();
    got = op->erase(h, ks->hit, n);
    ns[OP_ERASE] = (double)(bench_now_ns() - t0);
    BENCH_KEEP(got);
    if (got != n)
        fail(tb->name, ktn, n, "erase did not delete every key");
    if (op->size(h) != 0)
        fail(tb->name, ktn, n, "table not empty after erase");
    op->destroy(h);
    for (int k = 0; k < N_OPS; ++k)
        ns[k] /= (double)n;
}

/* One key type at one size: warmup + reps rounds, each running every table
 * once (starting at a different table each round), so load from other
 * processes on a shared machine falls on all tables alike; then the rows. */
static void run_keytype(const bench_opts_t *o, int kt, const keys_t *ks, size_t n, int pool,
                        int *step, int total)
{
    const char *ktn = key_type_names[kt];
    double *ns[N_TABLES] = {0};
    size_t stats[N_TABLES][3] = {{0}};
    int reps[N_TABLES];
    bench_alloc_t ba[N_TABLES];
    char metric[64];
    int rounds = o->warmup + o->reps;

    for (int t = 0; t < N_TABLES; ++t) {
        const large_table_t *tb = &tables[t];
        reps[t] = (pool && !tb->khashlite) ? 0 : tb->slow && o->reps > 3 ? 3 : o->reps;
        if (!reps[t])
            continue;
        ns[t] = malloc(sizeof(double) * (size_t)reps[t] * N_OPS);
        if (!ns[t])
            fail(tb->name, ktn, n, "out of memory");
        if (bench_alloc_open(&ba[t], o) < 0)
            fail(tb->name, ktn, n, "cannot open the allocator");
    }
    for (int r = 0; r < rounds; ++r) {
        int m = r - o->warmup;   /* measured index, < 0 while warming up */
        bench_progress("large", (*step)++, total);
        for (int i = 0; i < N_TABLES; ++i) {
            int t = (r + i) % N_TABLES;
            double one[N_OPS];
            /* The slow table: no warmup, only its first reps[t] rounds. */
            int mt = tables[t].slow ? r : m;
            if (!reps[t] || mt < 0 || mt >= reps[t])
                continue;
            run_rep(&tables[t], kt, ks, n, &ba[t].a, one, mt == 0 ? stats[t] : NULL);
            for (int k = 0; k < N_OPS; ++k)
                ns[t][k * reps[t] + mt] = one[k];
        }
    }
    for (int t = 0; t < N_TABLES; ++t) {
        const large_table_t *tb = &tables[t];
        const char *al = bench_allocator(o);
        if (!reps[t])
            continue;
        bench_alloc_close(&ba[t]);
        for (int k = 0; k < N_OPS; ++k) {
            snprintf(metric, sizeof metric, "%s_%s_ns", ktn, op_names[k]);
            bench_row(o, "large", tb->name, tb->layout, al, (long)n, metric,
                      bench_summarise(ns[t] + k * reps[t], reps[t]));
        }
        snprintf(metric, sizeof metric, "%s_peak_bytes_per_entry", ktn);
        bench_value(o, "large", tb->name, tb->layout, al, (long)n, metric,
                    (double)stats[t][0] / (double)n);
        snprintf(metric, sizeof metric, "%s_load_at_end", ktn);
        bench_value(o, "large", tb->name, tb->layout, al, (long)n, metric,
                    stats[t][2] ? (double)stats[t][1] / (double)stats[t][2] : 0.0);
        if (tb->max_load > 0) {
            snprintf(metric, sizeof metric, "%s_max_load", ktn);
            bench_value(o, "large", tb->name, tb->layout, al, (long)n, metric, tb->max_load);
        }
        free(ns[t]);
    }
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    size_t sizes[16];
    int n_sizes, pool, step = 0, total, peers = 0;

    bench_parse(argc, argv, &o, "workload large: one large table, u32/u64/str16 keys; "
                                "insert, get_hit, get_miss, iterate, erase in ns/op",
                "  sizes: --quick 50,000 keys; standard 1,000,000; --full 1M and 10M\n"
                "  tables: khashlite khashlite_lf77 khashlite_split3 khash mruby_khash "
                "absl uthash\n"
                "  (--alloc=pool runs only the khashlite tables)", 1);
    if (!bench_wanted(&o, "large"))
        return 0;

    tables[1].max_load = large_khl_lf77_max_load;
    khl_seed(0x6b686c6974650001ULL);   /* reproducible khl_hash_str */

    if (o.quick) {
        sizes[0] = 50000;
        n_sizes = 1;
    } else if (o.full) {
        sizes[0] = 1000000;
        sizes[1] = 10000000;
        n_sizes = 2;
    } else {
        sizes[0] = 1000000;
        n_sizes = 1;
    }
    pool = strcmp(o.alloc, "pool") == 0;
    if (!pool) {
        if (peers_mruby_open() < 0) {
            fprintf(stderr, "large: mrb_open failed\n");
            return 1;
        }
        peers = 1;
    }
    if (o.n_sizes) {                       /* --sizes overrides the defaults */
        n_sizes = o.n_sizes;
        for (int i = 0; i < n_sizes; ++i)
            sizes[i] = (size_t)(o.sizes[i] > 0 ? o.sizes[i] : 1);
    }
    total = n_sizes * N_KEYTYPES * (o.warmup + o.reps);

    for (int s = 0; s < n_sizes; ++s) {
        for (int kt = 0; kt < N_KEYTYPES; ++kt) {
            keys_t ks;
            if (keys_make(&ks, kt, KS_RAND, sizes[s], 1) < 0) {
                fprintf(stderr, "large: out of memory for %zu keys\n", sizes[s]);
                return 1;
            }
            run_keytype(&o, kt, &ks, sizes[s], pool, &step, total);
            keys_free(&ks);
        }
    }
    bench_progress("large", step, total);
    if (peers)
        peers_mruby_close();
    if (o.out != stdout)
        fclose(o.out);
    return 0;
}
