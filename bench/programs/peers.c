/* peers.c: program `peers`, khashlite against the fastest packaged
 * open-addressing tables in one process: boost::unordered_flat_map and
 * absl::flat_hash_map (bench/peers/flat.cpp), and htslib's klib khash, each
 * through its adapter in bench/peers/ (the loops are adapter.h's).  Every
 * measurement runs the tables in turns inside each repetition, the first
 * table rotating per repetition, so load from other processes falls on all
 * alike; rows are medians with min and max.  Built for glibc only (bench.mk):
 * its memory figures are glibc's.
 *
 * Workloads (the `workload` column):
 *   peers     the shape of Jackson Allan's C/C++ hash-table benchmark, for
 *             three blueprints (u32 -> u32, u64 -> 448-bit payload, 16-char
 *             string -> u64) at N = 200k and 2M: insert N distinct random
 *             keys into an empty table (no reserve); every N/20 inserts
 *             run a batch of 1,000 each of erase-existing (then re-inserted,
 *             untimed), replace-existing, erase-missing, get-existing,
 *             get-missing, and iterate the whole table.  Metric
 *             BLUEPRINT_OP_ns: ns per operation (per element for iterate):
 *             insert over the whole fill, the others the median over the
 *             points of each batch's figure (see peers_rep);
 *             BLUEPRINT_insert_faults: the page faults of one fill.
 *             --sizes sets N.
 *   vs_khash  u32 -> u32 against khash with its identity hash: 1M and 10M
 *             keys, sequential (0..n-1), multiplicative (i * 2654435761) and
 *             random distinct, and at 1M strided and pointer keys
 *             (harness/keys.h), insert / hit (shuffled order) / miss / erase
 *             (KEYS_OP_ns); and in cache, ns per table life (init, put n, get
 *             n, destroy) for n = 16 and 64 (KEYS_life_ns).  khashlite_unseeded
 *             (the integer hash without its seed) runs beside the 1M sets and
 *             the lives: what the seed costs.
 *   tiny      lives of n = 1..8 keys (life_ns; u64_life_ns and str16_life_ns:
 *             random u64 keys to u32 and 16-char strings to u64, khashlite
 *             and the flat array only), allocations per life
 *             (allocs_per_life), and the memory a table of 1..4 keys holds
 *             as glibc spends it (heap_bytes), with mruby 3.1's iv_tbl for
 *             the same keys (16-byte header + 48-byte array) computed the
 *             same way, and each table's handle size (handle_bytes).
 *   weak_hash u64 -> u32, sequential, multiplicative, strided and pointer
 *             keys (harness/keys.h), 2^14 and 2^20 of them: khashlite with the identity as its hash (which the
 *             table multiplies) against khl_hash_u64, vs_khash's operations
 *             (KEYS_OP_ns).
 *   growth    u64 -> 448-bit insert of 2M keys without reserve (insert_ns),
 *             the most bytes held at any moment (peak_bytes: the worst
 *             moment of a rebuild), the keys the table held then
 *             (keys_at_peak), peak_bytes_per_key, and bytes_per_key_end.
 *
 * In the peers workload every table gets the same hash, the one that suite
 * gives every table: MurmurHash3's finalizer for integers, FNV-1a for
 * strings (peers/suite_hash.h), so that its rows compare tables, not hashes,
 * and its ratios can be checked against the suite's.  The other workloads
 * use each table's own default hash for the key type (khash: identity for
 * u32, shift-xor for u64, X31 for strings; boost: boost::hash with its
 * post-mixing; absl: absl::Hash; khashlite: khl_hash_u32/u64/str).  String
 * keys are 16 characters and a NUL in one preallocated array; khashlite and
 * khash store const char * and compare with strcmp (their string maps).  The
 * C++ maps take a std::string_view of the 16 bytes with their own hash, and
 * in the peers workload const char *, FNV-1a up to the NUL and strcmp, as the
 * suite's shims give every table (a string_view's length let absl hash and
 * compare without looking for the NUL: its string rows took 4-30% less
 * time; boost's did not move; docs/benchmarks.md).
 *
 * Page faults.  glibc serves a large block from fresh pages (mmap, or heap
 * it grew), and a first touch costs 2-19 us here: a fill that faults its
 * blocks in takes several times as long as one that reuses warm pages.
 * Which table got warm pages used to depend on which ran before it and on
 * glibc's moving mmap threshold (boost's u32 fill at 20k keys: 90 ns per key
 * with 121 faults, khashlite's 15 ns with none).  So the peers workload runs
 * in child processes where glibc serves every block from its heap and never
 * returns memory (mallopt), and each first touches a heap as large as the
 * largest fill will need (peers_touch_heap): every table's fill reuses
 * touched pages.  The faults the inserts took are a metric
 * (BLUEPRINT_insert_faults, per fill).
 *
 * Processes.  A table's figures move from process to process as much as
 * from repetition to repetition inside one, whatever the order of the
 * tables, so the peers workload runs in PEERS_PROCESSES processes one after
 * another, each its share of the repetitions (2 at 200k, 1 at 2M in a
 * standard run), each opening with another table; a row is the median, min
 * and max over the repetitions of all of them.
 *
 * Memory is counted in untimed passes through each table's allocator: the
 * khashlite hook, khash's kmalloc/kcalloc/krealloc/kfree, the C++ maps'
 * std allocator; a block counts malloc_usable_size + 8 (glibc's header).  A
 * realloc counts old and new together unless glibc resized in place or
 * remapped (an mmapped chunk: mremap copies no pages).
 *
 * So that a standard run stays within its time budget (150 s on 2 cores),
 * sets of 2M keys and more (peers at 2M, vs_khash at 10M, growth) run at
 * most 3 repetitions and no warmup; the 10M sets run khashlite and khash
 * only, their sequential and multiplicative sets one repetition, and
 * no strided or pointer set. */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/bench.h"
#include "harness/keys.h"
#include "khashlite/khashlite.h"
#include "peers/flat_array.h"
#include "peers/khash.h"
#include "peers/khashlite.h"
#include "peers/suite_hash.h"
#include "support/prng.h"


/* --- khashlite ------------------------------------------------------------- */

PEERS_KHL_TABLE(kl_u32, u32, khl_hash_u32, khl_eq_int, KHL_LAYOUT_SINGLE)
PEERS_KHL_TABLE(kl_u64, u64, khl_hash_u64, khl_eq_int, KHL_LAYOUT_SINGLE)
PEERS_KHL_TABLE(kl_str, str, khl_hash_str, khl_eq_str, KHL_LAYOUT_SINGLE)

/* What the seed costs: khl_hash_u32/u64 without it (the same multiply),
 * declared as they are, mixed and a product, so that a larger table remixes
 * it as it remixes theirs and the two differ by the seed alone (declared
 * mixed only, it was not remixed, and its rows counted the remix as the
 * seed's cost).  Strings keep XXH3: its seed is an argument, free. */
static inline uint64_t unseeded_u64(uint64_t x) { return x * 0x9e3779b97f4a7c15ULL; }
#define KHL_HASH_MIXED_unseeded_u64 /* else the table multiplies again */
#define KHL_HASH_PRODUCT_unseeded_u64
PEERS_KHL_TABLE(kn_u32, u32, unseeded_u64, khl_eq_int, KHL_LAYOUT_SINGLE)
PEERS_KHL_TABLE(kn_u64, u64, unseeded_u64, khl_eq_int, KHL_LAYOUT_SINGLE)

/* A weak hash (workload weak_hash): the identity, not declared mixed, so
 * the table multiplies it (khashlite.h, Hashing), beside khl_hash_u64, which
 * is declared mixed; u64 keys to u32 values. */
static inline uint64_t identity_u64(uint64_t x) { return x; }
PEERS_KHL_TABLE(kw_u64, u64_u32, khl_hash_u64, khl_eq_int, KHL_LAYOUT_SINGLE)
PEERS_KHL_TABLE(ki_u64, u64_u32, identity_u64, khl_eq_int, KHL_LAYOUT_SINGLE)

/* The peers workload's (peers/suite_hash.h), declared mixed as the suite
 * declares them to boost (is_avalanching, bench/peers/flat.cpp), so that no
 * table mixes them further: fmix64 avalanches; FNV-1a's top bits barely
 * depend on a string's last characters, which the workload's random keys
 * make harmless, and boost takes its position from the same top bits. */
#define KHL_HASH_MIXED_peers_fmix64
#define KHL_HASH_MIXED_peers_fnv1a_str
PEERS_KHL_TABLE(ks_u32, u32, peers_fmix64, khl_eq_int, KHL_LAYOUT_SINGLE)
PEERS_KHL_TABLE(ks_u64, u64, peers_fmix64, khl_eq_int, KHL_LAYOUT_SINGLE)
#define KHL_HASH_INDIRECT_peers_fnv1a_str /* it reads the string, as khl_hash_str */
PEERS_KHL_TABLE(ks_str, str, peers_fnv1a_str, khl_eq_str, KHL_LAYOUT_SINGLE)

/* --- htslib's klib khash, its allocations counted (peers/khash.h) ---------- */

PEERS_KH_TABLE(kh_u32, u32, INT)
PEERS_KH_TABLE(kh_u64, u64, INT64)
PEERS_KH_TABLE(kh_str, str, STR)

/* The peers workload's, at that suite's maximum load, 0.875 for every table
 * (khash's own is 0.77): KHASH_INIT reads __ac_HASH_UPPER where it expands. */
#define kh_suite_int(k) ((khint32_t)peers_fmix64(k))
#define kh_suite_str(k) ((khint32_t)peers_fnv1a_str(k))
#define __ac_HASH_UPPER 0.875
PEERS_KH_TABLE_HASH(khs_u32, u32, kh_suite_int, kh_int_hash_equal)
PEERS_KH_TABLE_HASH(khs_u64, u64, kh_suite_int, kh_int64_hash_equal)
PEERS_KH_TABLE_HASH(khs_str, str, kh_suite_str, kh_str_hash_equal)
#undef __ac_HASH_UPPER

/* --- the contenders --------------------------------------------------------- */

typedef struct table {
    const char *name, *layout;
    const peers_ops_t *ops;   /* [PEERS_N_BP] */
} table_t;

static const peers_ops_t khl_ops[PEERS_N_BP] = PEERS_OPS3(kl_u32, kl_u64, kl_str);
#define PEERS_FLAT_EQ(a, b) ((a) == (b))
#define PEERS_FLAT_EQ_STR(a, b) (strcmp(a, b) == 0)
PEERS_FLAT(fa_u32, u32, PEERS_FLAT_EQ)
PEERS_FLAT(fa_u64, u64, PEERS_FLAT_EQ)
PEERS_FLAT(fa_str, str, PEERS_FLAT_EQ_STR)
static const peers_ops_t flat_ops[PEERS_N_BP] = PEERS_OPS3(fa_u32, fa_u64, fa_str);
static const peers_ops_t kh_ops[PEERS_N_BP] = PEERS_OPS3(kh_u32, kh_u64, kh_str);
static const peers_ops_t khn_ops[PEERS_N_BP] = PEERS_OPS3(kn_u32, kn_u64, kl_str);

/* Tiny tables of the other key types (workload tiny): u64 -> u32 and
 * 16-character strings -> u64, khashlite and the flat array only.
 * khashlite's, with its own hashes, are also weak_hash's reference. */
PEERS_FLAT(fa_u64u32, u64_u32, PEERS_FLAT_EQ)
static const peers_ops_t tiny_khl_ops[PEERS_N_BP] = {[PEERS_U64] = PEERS_OPS(kw_u64),
                                                     [PEERS_STR] = PEERS_OPS(kl_str)};
static const peers_ops_t tiny_flat_ops[PEERS_N_BP] = {[PEERS_U64] = PEERS_OPS(fa_u64u32),
                                                      [PEERS_STR] = PEERS_OPS(fa_str)};

/* khashlite_unseeded runs only where vs_khash asks for it (SEED_COST), the
 * flat array (CRuby's ar_table shape) only in tiny (FLAT). */
enum { T_KHL, T_BOOST, T_ABSL, T_KHASH, T_KHL_UNSEEDED, T_FLAT, N_TABLES };
static const table_t own_tables[N_TABLES] = {
    {"khashlite", "single", khl_ops},
    {"boost", "single", peers_boost_ops},   /* groups and elements: one block */
    {"absl", "single", peers_absl_ops},     /* control bytes and slots: one block */
    {"khash", "split3", kh_ops},
    {"khashlite_unseeded", "single", khn_ops},
    {"flat_array", "single", flat_ops},
};
/* The peers workload's: the same tables, one hash for all. */
static const peers_ops_t khls_ops[PEERS_N_BP] = PEERS_OPS3(ks_u32, ks_u64, ks_str);
static const peers_ops_t khs_ops[PEERS_N_BP] = PEERS_OPS3(khs_u32, khs_u64, khs_str);
static const table_t suite_tables[N_TABLES] = {
    {"khashlite", "single", khls_ops},
    {"boost", "single", peers_boost_suite_ops},
    {"absl", "single", peers_absl_suite_ops},
    {"khash", "split3", khs_ops},
};
/* workload weak_hash's two, in the first two places (WEAK_TABLES). */
static const peers_ops_t ki_ops[PEERS_N_BP] = {[PEERS_U64] = PEERS_OPS(ki_u64)};
static const table_t weak_tables[N_TABLES] = {
    {"khashlite", "single", tiny_khl_ops},
    {"khashlite_identity", "single", ki_ops},
};
#define WEAK_TABLES ((1u << 0) | (1u << 1))
static const table_t tiny_key_tables[N_TABLES] = {
    [T_KHL] = {"khashlite", "single", tiny_khl_ops},
    [T_FLAT] = {"flat_array", "single", tiny_flat_ops},
};
#define ALL_TABLES ((1u << T_KHL_UNSEEDED) - 1)
#define SEED_COST (1u << T_KHL_UNSEEDED)
#define FLAT (1u << T_FLAT)


static void fail(const char *table, const char *what, size_t n)
{
    fprintf(stderr, "peers: %s, n=%zu: %s\n", table, n, what);
    exit(1);
}

/* keys_make, or exit when out of memory. */
static void keys_or_exit(keys_t *k, int type, int kind, size_t n, int shuffled)
{
    if (keys_make(k, type, kind, n, shuffled) < 0)
        peers_oom("keys");
}

/* --- rounds ----------------------------------------------------------------- */

/* One repetition of a measurement on one table: values into out[0..n_out). */
typedef void (*rep_fn)(const peers_ops_t *op, const char *table, void *ctx, double *out);

/* Where run_rounds leaves its values instead of making rows of them: one
 * process's share of a measurement that several processes make (the peers
 * workload).  v[(t * n_out + k) * total + first + r] is table t's metric k
 * in this process's repetition r; `first` also moves the rotation on, so
 * that each process opens with another table. */
typedef struct rounds_keep {
    double *v;
    int first, total;
} rounds_keep_t;

/* A row per metric of one table, from its values vt[k * reps + r]. */
static void table_rows(const bench_opts_t *o, const table_t *tb, const char *workload, long n,
                       int n_out, const char *const *metrics, double *vt, int reps)
{
    for (int k = 0; k < n_out; ++k)
        bench_row(o, workload, tb->name, tb->layout, bench_allocator(o), n, metrics[k],
                  bench_summarise(vt + k * reps, reps));
}

/* warmup + reps rounds, each running every table in `which` once, starting at
 * a different table each round; then a row per table and metric, or the
 * values into *keep. */
static void run_rounds(const bench_opts_t *o, const table_t *tables, const char *workload, int bp,
                       unsigned which,
                       long n, int warmup, int reps, rep_fn f, void *ctx, int n_out,
                       const char *const *metrics, int *step, int total, const rounds_keep_t *keep)
{
    double *v[N_TABLES] = {0};
    int run[N_TABLES], n_run = 0;
    for (int t = 0; t < N_TABLES; ++t) {
        if (!(which & (1u << t)))
            continue;
        run[n_run++] = t;
        if (!(v[t] = malloc(sizeof(double) * (size_t)(reps * n_out))))
            peers_oom("results");
    }
    for (int r = 0; r < warmup + reps; ++r) {
        bench_progress(workload, (*step)++, total);
        /* Each table opens a round in turn, among those that run. */
        for (int i = 0; i < n_run; ++i) {
            int t = run[((keep ? keep->first : 0) + r + i) % n_run];
            double one[16];
            f(&tables[t].ops[bp], tables[t].name, ctx, one);
            for (int k = 0; r >= warmup && k < n_out; ++k)
                v[t][k * reps + (r - warmup)] = one[k];
        }
    }
    if (keep) {
        for (int t = 0; t < N_TABLES; ++t) {
            for (int k = 0; v[t] && k < n_out; ++k)
                for (int r = 0; r < reps; ++r)
                    keep->v[(t * n_out + k) * keep->total + keep->first + r] = v[t][k * reps + r];
            free(v[t]);
        }
        return;
    }
    /* Against the flat array, where it ran: each table's time over the
     * flat array's in the same repetition, then the median of those ratios
     * (METRIC_over_flat).  A ratio of medians taken apart lets one slow
     * round of either move it: one run put the flat array's 2-key life
     * at 15 ns and its 1-key life at 24. */
    if (v[T_FLAT]) {
        double *ratio = malloc(sizeof(double) * (size_t)reps);
        char name[64];
        if (!ratio)
            peers_oom("results");
        for (int t = 0; t < N_TABLES; ++t) {
            if (!v[t] || t == T_FLAT)
                continue;
            for (int k = 0; k < n_out; ++k) {
                for (int r = 0; r < reps; ++r)
                    ratio[r] = v[t][k * reps + r] / v[T_FLAT][k * reps + r];
                snprintf(name, sizeof name, "%s_over_flat", metrics[k]);
                bench_row(o, workload, tables[t].name, tables[t].layout, bench_allocator(o), n, name,
                          bench_summarise(ratio, reps));
            }
        }
        free(ratio);
    }
    for (int t = 0; t < N_TABLES; ++t) {
        if (!v[t])
            continue;
        table_rows(o, &tables[t], workload, n, n_out, metrics, v[t], reps);
        free(v[t]);
    }
}

/* Sets of 2M keys and more run at most 3 repetitions and no warmup (each
 * repetition builds a fresh table anyway), to keep a standard run within its
 * time budget. */
#define BIG_SET 2000000u
static int warmup_for(const bench_opts_t *o, size_t n)
{
    return n >= BIG_SET ? 0 : o->warmup;
}
static int reps_for(const bench_opts_t *o, size_t n)
{
    return n >= BIG_SET && o->reps > 3 ? 3 : o->reps;
}
/* Above BIG_SET (vs_khash's 10M sets) the sequential and multiplicative sets,
 * whose only target is hit >= khash, run once; the random set as reps_for. */
static int huge_reps(const bench_opts_t *o, size_t n, int kind)
{
    return n > BIG_SET && kind != KS_RAND ? 1 : reps_for(o, n);
}

/* The strided and pointer keys run at 1M only: khash's identity hash puts
 * i * 64 in one bucket of 64 (i * 48 in one of 16), and at 10M its misses
 * would wade through runs of occupied buckets as the sequential ones do. */
static int vs_khash_runs(size_t n, int kind)
{
    return n <= BIG_SET || kind <= KS_RAND;
}

/* --- workload peers ---------------------------------------------------------- */

enum { P_INSERT, P_ERASE, P_REPLACE, P_ERASE_MISSING, P_GET, P_GET_MISSING, P_ITERATE, P_N_OPS };
static const char *const p_ops[P_N_OPS] = {"insert", "erase", "replace", "erase_missing",
                                           "get", "get_missing", "iterate"};
/* After the operations' figures, a repetition's: the faults its inserts took. */
#define P_FAULTS P_N_OPS
#define BATCH 1000

typedef struct peers_ctx {
    const keys_t *k;
    int points;              /* at most MAX_POINTS */
} peers_ctx_t;
#define MAX_POINTS 64

/* Minor page faults of the process so far. */
static long minor_faults(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) ? 0 : u.ru_minflt;
}

/* ns per operation since t0. */
static double per_op(uint64_t t0, size_t ops)
{
    return (double)(bench_now_ns() - t0) / (double)ops;
}

/* Insert is the whole fill's time over N, rebuilds included.  Every other
 * operation is the median over the measurement points of its batch's ns per
 * operation: a batch lasts 10-300 µs, so on this shared machine one turn of
 * another process inside it would otherwise outweigh the rest. */
static void peers_rep(const peers_ops_t *op, const char *table, void *vctx, double *out)
{
    const peers_ctx_t *c = vctx;
    const keys_t *k = c->k;
    size_t n = k->n, done = 0;
    uint64_t insert_ns = 0, s = 7, sum, t0;
    long faults = 0, f0;
    double per[P_N_OPS][MAX_POINTS];
    void *h = op->create();
    if (!h)
        peers_oom("create");
    for (int p = 0; p < c->points; ++p) {
        size_t upto = n * (size_t)(p + 1) / (size_t)c->points, b, off;
        f0 = minor_faults();
        t0 = bench_now_ns();
        if (op->put(h, k->hit, done, upto) != (long)(upto - done))
            fail(table, "insert did not add every key", n);
        insert_ns += bench_now_ns() - t0;
        faults += minor_faults() - f0;
        done = upto;
        b = done < BATCH ? done : BATCH;

        off = prng_next(&s) % (done - b + 1);   /* erase-existing, re-inserted untimed */
        t0 = bench_now_ns();
        if (op->erase(h, key_at(k, k->hit, off), b) != b)
            fail(table, "erase missed a key", n);
        per[P_ERASE][p] = per_op(t0, b);
        if (op->put(h, k->hit, off, off + b) != (long)b)
            fail(table, "re-insert did not add every key", n);

        off = prng_next(&s) % (done - b + 1);   /* replace-existing */
        t0 = bench_now_ns();
        if (op->put(h, k->hit, off, off + b) != 0)
            fail(table, "replace added a key", n);
        per[P_REPLACE][p] = per_op(t0, b);

        off = prng_next(&s) % (n - b + 1);      /* erase-missing */
        t0 = bench_now_ns();
        if (op->erase(h, key_at(k, k->miss, off), b) != 0)
            fail(table, "erase-missing erased a key", n);
        per[P_ERASE_MISSING][p] = per_op(t0, b);

        off = prng_next(&s) % (done - b + 1);   /* get-existing */
        t0 = bench_now_ns();
        if (op->get(h, key_at(k, k->hit, off), b, &sum) != b)
            fail(table, "get-existing missed a key", n);
        per[P_GET][p] = per_op(t0, b);
        if (sum != (uint64_t)b * off + (uint64_t)b * (b - 1) / 2)
            fail(table, "get-existing read a wrong value", n);

        off = prng_next(&s) % (n - b + 1);      /* get-missing */
        t0 = bench_now_ns();
        if (op->get(h, key_at(k, k->miss, off), b, &sum) != 0)
            fail(table, "get-missing found a key", n);
        per[P_GET_MISSING][p] = per_op(t0, b);

        t0 = bench_now_ns();
        sum = op->iterate(h);
        per[P_ITERATE][p] = per_op(t0, done);
        if (sum != (uint64_t)done * (done - 1) / 2)
            fail(table, "iterate sum is wrong", n);
    }
    if (op->size(h) != n)
        fail(table, "size at the end is wrong", n);
    op->destroy(h);
    out[P_INSERT] = (double)insert_ns / (double)n;
    for (int i = P_INSERT + 1; i < P_N_OPS; ++i)
        out[i] = bench_summarise(per[i], c->points).median;
    out[P_FAULTS] = (double)faults;
}

/* The processes the peers workload runs in, one after another, each its
 * share of the repetitions: a table's figures move between processes as
 * much as between its repetitions in one (in nine processes of the same
 * binary, boost's string get-missing at 2M took 30 to 55 ns), so rows are
 * taken over the repetitions of all of them. */
#define PEERS_PROCESSES 3

/* The heap each process touches before its rounds, per key of the largest
 * N: every table's fill then reuses pages (see the top), without a warmup
 * round, which at 2M keys took 8 s a process.  The most a table held at 2M
 * (u64 -> 448-bit, during a growth) and the key arrays fit in it. */
#define PEERS_HEAP_PER_KEY 320u

static void peers_touch_heap(size_t bytes)
{
    volatile char *p = malloc(bytes);
    if (!p)
        peers_oom("heap");
    /* A byte a page, through volatile: gcc drops a memset of a block that
     * is only freed, and the malloc with it. */
    for (size_t i = 0; i < bytes; i += 4096)
        p[i] = 1;
    /* Not trimmed (M_TRIM_THRESHOLD): the pages stay the heap's. */
    free((void *)p);
}

/* Each process's timed repetitions: its share of reps_for. */
static int peers_reps(const bench_opts_t *o, size_t n)
{
    return (reps_for(o, n) + PEERS_PROCESSES - 1) / PEERS_PROCESSES;
}

/* The rounds one process of the peers workload runs at size n (progress). */
static int peers_rounds(const bench_opts_t *o, size_t n)
{
    return PEERS_N_BP * (warmup_for(o, n) + peers_reps(o, n));
}

typedef char peers_metric_t[48];

static void peers_metrics(int bp, peers_metric_t *names, const char **metrics)
{
    for (int i = 0; i < P_N_OPS; ++i)
        snprintf(names[i], sizeof names[i], "%s_%s_ns", key_type_names[bp], p_ops[i]);
    snprintf(names[P_FAULTS], sizeof names[P_FAULTS], "%s_insert_faults", key_type_names[bp]);
    for (int i = 0; i <= P_N_OPS; ++i)
        metrics[i] = names[i];
}

/* Where size s and blueprint bp keep their values among v's: blocks of
 * `stride` doubles (see workload_peers_apart), run_rounds's layout inside. */
static double *peers_block(double *v, size_t stride, int s, int bp)
{
    return v + (size_t)(s * PEERS_N_BP + bp) * stride;
}

/* One process's share of the peers workload: its values into v. */
static void workload_peers(const bench_opts_t *o, const size_t *sizes, int n_sizes, int points,
                           int proc, double *v, size_t stride, int *step, int total)
{
    for (int s = 0; s < n_sizes; ++s)
        for (int bp = 0; bp < PEERS_N_BP; ++bp) {
            peers_metric_t names[P_N_OPS + 1];
            const char *metrics[P_N_OPS + 1];
            int reps = peers_reps(o, sizes[s]);
            rounds_keep_t keep = {peers_block(v, stride, s, bp), proc * reps, PEERS_PROCESSES * reps};
            keys_t k;
            peers_ctx_t c = {&k, points};
            peers_metrics(bp, names, metrics);
            keys_or_exit(&k, bp, KS_RAND, sizes[s], 0);
            run_rounds(o, suite_tables, "peers", bp, ALL_TABLES, (long)sizes[s],
                       warmup_for(o, sizes[s]), reps, peers_rep, &c, P_N_OPS + 1, metrics, step,
                       total, &keep);
            keys_free(&k);
        }
}

/* The peers workload in PEERS_PROCESSES child processes, one after
 * another, whose glibc serves every block from its heap and keeps what is
 * freed (see the top): the setting, which cannot be undone (it fixes
 * glibc's moving mmap threshold), stays out of the other workloads.  They
 * leave their values in shared memory; the rows are made here, a table's
 * median, min and max over every process's repetitions.  Exits when a
 * child fails. */
static void workload_peers_apart(const bench_opts_t *o, const size_t *sizes, int n_sizes,
                                 int points, int *step, int total)
{
    size_t reps = 1, most = 0, stride, bytes;
    double *v;
    for (int s = 0; s < n_sizes; ++s) {
        if ((size_t)peers_reps(o, sizes[s]) > reps)
            reps = (size_t)peers_reps(o, sizes[s]);
        if (sizes[s] > most)
            most = sizes[s];
    }
    /* A block per size and blueprint, each with room for the most repetitions. */
    stride = N_TABLES * (P_N_OPS + 1) * PEERS_PROCESSES * reps;
    bytes = (size_t)n_sizes * PEERS_N_BP * stride * sizeof *v;
    v = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (v == MAP_FAILED)
        peers_oom("results");
    for (int proc = 0; proc < PEERS_PROCESSES; ++proc) {
        int status, first = *step;
        pid_t pid;
        fflush(o->out);
        fflush(stderr);
        if ((pid = fork()) < 0) {
            perror("peers: fork");
            exit(1);
        }
        if (pid == 0) {
            if (!mallopt(M_MMAP_MAX, 0) || !mallopt(M_TRIM_THRESHOLD, -1)) {
                fprintf(stderr, "peers: mallopt failed\n");
                _exit(1);
            }
            peers_touch_heap(most * PEERS_HEAP_PER_KEY);
            workload_peers(o, sizes, n_sizes, points, proc, v, stride, &first, total);
            _exit(0);
        }
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
            fprintf(stderr, "peers: the peers workload failed\n");
            exit(1);
        }
        for (int s = 0; s < n_sizes; ++s)
            *step += peers_rounds(o, sizes[s]);
    }
    for (int s = 0; s < n_sizes; ++s)
        for (int bp = 0; bp < PEERS_N_BP; ++bp) {
            peers_metric_t names[P_N_OPS + 1];
            const char *metrics[P_N_OPS + 1];
            int all = PEERS_PROCESSES * peers_reps(o, sizes[s]);
            double *at = peers_block(v, stride, s, bp);
            peers_metrics(bp, names, metrics);
            for (int t = 0; t < N_TABLES; ++t)
                if (ALL_TABLES >> t & 1u)
                    table_rows(o, &suite_tables[t], "peers", (long)sizes[s], P_N_OPS + 1, metrics,
                               at + (size_t)t * (P_N_OPS + 1) * (size_t)all, all);
        }
    munmap(v, bytes);
}

/* --- workload vs_khash -------------------------------------------------------- */

enum { B_INSERT, B_HIT, B_ERASE, B_MISS, B_N_OPS };
static const char *const b_ops[B_N_OPS] = {"insert", "hit", "erase", "miss"};

typedef struct big_ctx {
    const keys_t *k;
    int misses;              /* 0: the miss phase is skipped */
} big_ctx_t;

/* insert, hit, then miss while every key is in, then erase. */
static void big_rep(const peers_ops_t *op, const char *table, void *ctx, double *out)
{
    const big_ctx_t *c = ctx;
    const keys_t *k = c->k;
    size_t n = k->n;
    uint64_t sum, t0;
    void *h = op->create();
    if (!h)
        peers_oom("create");
    t0 = bench_now_ns();
    if (op->put(h, k->hit, 0, n) != (long)n)
        fail(table, "insert did not add every key", n);
    out[B_INSERT] = (double)(bench_now_ns() - t0) / (double)n;
    t0 = bench_now_ns();
    if (op->get(h, k->shuf, n, &sum) != n || sum != (uint64_t)n * (n - 1) / 2)
        fail(table, "hit missed a key or its value", n);
    out[B_HIT] = (double)(bench_now_ns() - t0) / (double)n;
    if (c->misses) {
        t0 = bench_now_ns();
        if (op->get(h, k->miss, n, &sum) != 0)
            fail(table, "miss found a key", n);
        out[B_MISS] = (double)(bench_now_ns() - t0) / (double)n;
    }
    t0 = bench_now_ns();
    if (op->erase(h, k->hit, n) != n)
        fail(table, "erase missed a key", n);
    out[B_ERASE] = (double)(bench_now_ns() - t0) / (double)n;
    op->destroy(h);
}

/* A pool of 65,536 distinct keys lives take their keys from. */
#define POOL_MASK 65535u

typedef struct life_ctx {
    const void *pool;   /* POOL_MASK + 1 keys of the blueprint's key type */
    size_t n, iters;
} life_ctx_t;

static void life_rep(const peers_ops_t *op, const char *table, void *ctx, double *out)
{
    const life_ctx_t *c = ctx;
    uint64_t t0 = bench_now_ns();
    uint64_t s = op->life(c->pool, POOL_MASK, c->n, c->iters);
    out[0] = (double)(bench_now_ns() - t0) / (double)c->iters;
    /* Every life finds values 0..n-1, each counted + 1. */
    if (s != (uint64_t)c->iters * c->n * (c->n + 1) / 2)
        fail(table, "a life lost a key", c->n);
}

/* Lives long enough to time (~10-20 ms per measurement), fewer with --quick. */
static size_t life_iters(const bench_opts_t *o, size_t n)
{
    size_t it = 1000000 / (n + 4);
    return o->quick ? it / 20 + 1 : it;
}

static void pool_make(uint32_t *pool, int kind)
{
    for (uint32_t i = 0; i <= POOL_MASK; ++i)
        pool[i] = kind == KS_SEQ ? i : prng_mix32(i);
}

static void workload_vs_khash(const bench_opts_t *o, const size_t *sizes, int n_sizes,
                              int *step, int total)
{
    static const int life_kinds[2] = {KS_RAND, KS_SEQ};
    static const size_t life_n[2] = {16, 64};
    static uint32_t pool[POOL_MASK + 1];
    for (int s = 0; s < n_sizes; ++s)
        for (int kind = 0; kind < N_KINDS; ++kind) {
            /* The 10M sets: khashlite and khash only. */
            int huge = sizes[s] > 2000000;
            if (!vs_khash_runs(sizes[s], kind))
                continue;
            unsigned which = huge ? (1u << T_KHL) | (1u << T_KHASH) : ALL_TABLES | SEED_COST;
            char names[B_N_OPS][48];
            const char *metrics[B_N_OPS];
            keys_t k;
            /* Sequential misses are n..2n-1.  khash puts key x at bucket
             * x mod 2^b; at 10M keys (2^24 buckets) the misses from 2^24 on
             * start inside the 10M-long run of occupied buckets and each
             * probes thousands of them: over a minute per repetition, so
             * that set times no misses. */
            big_ctx_t c = {&k, !(huge && kind == KS_SEQ)};
            for (int i = 0; i < B_N_OPS; ++i) {
                snprintf(names[i], sizeof names[i], "%s_%s_ns", key_kind_names[kind], b_ops[i]);
                metrics[i] = names[i];
            }
            keys_or_exit(&k, KEY_U32, kind, sizes[s], 1);
            run_rounds(o, own_tables, "vs_khash", PEERS_U32, which, (long)sizes[s], warmup_for(o, sizes[s]),
                       huge_reps(o, sizes[s], kind), big_rep, &c, c.misses ? B_N_OPS : B_MISS,
                       metrics, step, total, NULL);
            keys_free(&k);
        }
    for (int kind = 0; kind < 2; ++kind) {
        char name[48];
        const char *metric = name;
        pool_make(pool, life_kinds[kind]);
        snprintf(name, sizeof name, "%s_life_ns", key_kind_names[life_kinds[kind]]);
        for (int i = 0; i < 2; ++i) {
            life_ctx_t c = {pool, life_n[i], life_iters(o, life_n[i])};
            run_rounds(o, own_tables, "vs_khash", PEERS_U32, ALL_TABLES | SEED_COST, (long)life_n[i], o->warmup,
                       o->reps, life_rep, &c, 1, &metric, step, total, NULL);
        }
    }
}

/* --- workload weak_hash ------------------------------------------------------ */

/* Issue 22's weak hash: the identity on sequential, multiplicative, strided
 * and pointer u64 keys (an interpreter's object addresses), against khl_hash_u64, big_rep's four operations at sizes that fit
 * in the caches and that do not (the identity's cost is the multiply the
 * table adds; before the tables mixed undeclared hashes, its sequential
 * keys all shared one tag and group: O(n) an operation). */
static const int weak_kinds[] = {KS_SEQ, KS_MULT, KS_STRIDE, KS_PTR};
#define N_WEAK_KINDS ((int)(sizeof weak_kinds / sizeof weak_kinds[0]))

/* A pass over 2^14 keys in cache lasts 40-60 us, where one turn of another
 * process weighs: three times the repetitions there. */
static int weak_reps(const bench_opts_t *o, size_t n)
{
    return n <= ((size_t)1 << 16) ? 3 * o->reps : o->reps;
}

static void workload_weak_hash(const bench_opts_t *o, const size_t *sizes, int n_sizes, int *step,
                               int total)
{
    for (int s = 0; s < n_sizes; ++s)
        for (int i = 0; i < N_WEAK_KINDS; ++i) {
            char names[B_N_OPS][48];
            const char *metrics[B_N_OPS];
            keys_t k;
            big_ctx_t c = {&k, 1};
            for (int p = 0; p < B_N_OPS; ++p) {
                snprintf(names[p], sizeof names[p], "%s_%s_ns", key_kind_names[weak_kinds[i]], b_ops[p]);
                metrics[p] = names[p];
            }
            keys_or_exit(&k, KEY_U64, weak_kinds[i], sizes[s], 1);
            run_rounds(o, weak_tables, "weak_hash", PEERS_U64, WEAK_TABLES, (long)sizes[s], o->warmup,
                       weak_reps(o, sizes[s]), big_rep, &c, B_N_OPS, metrics, step, total, NULL);
            keys_free(&k);
        }
}

/* --- workload tiny ----------------------------------------------------------- */

/* A table's counted lives of 1..8 keys from pool (allocations per life,
 * PREFIX"allocs_per_life") and the heap of a table of 1..4 of them
 * (PREFIX"heap_bytes"): untimed passes through peers_malloc. */
static void tiny_counts(const bench_opts_t *o, const table_t *tb, int bp, const void *pool,
                        const char *prefix)
{
    const peers_ops_t *op = &tb->ops[bp];
    const char *al = bench_allocator(o);
    char metric[48];
    for (size_t n = 1; n <= 8; ++n) {
        peers_count_t cnt = {0};
        void *h;
        peers_counting = &cnt;
        if (op->life(pool, POOL_MASK, n, 1) == UINT64_MAX)
            peers_oom("life");
        snprintf(metric, sizeof metric, "%sallocs_per_life", prefix);
        bench_value(o, "tiny", tb->name, tb->layout, al, (long)n, metric, (double)cnt.allocs);
        if (n <= 4) {
            memset(&cnt, 0, sizeof cnt);
            h = op->create();   /* the handle itself is not counted */
            if (!h || op->put(h, pool, 0, n) != (long)n)
                peers_oom("tiny table");
            snprintf(metric, sizeof metric, "%sheap_bytes", prefix);
            bench_value(o, "tiny", tb->name, tb->layout, al, (long)n, metric, (double)cnt.live);
            op->destroy(h);
        }
        peers_counting = NULL;
    }
}

static void workload_tiny(const bench_opts_t *o, int *step, int total)
{
    static uint32_t pool[POOL_MASK + 1];
    static const char *const metric = "life_ns";
    const char *al = bench_allocator(o);
    pool_make(pool, KS_RAND);
    for (size_t n = 1; n <= 8; ++n) {
        life_ctx_t c = {pool, n, life_iters(o, n)};
        run_rounds(o, own_tables, "tiny", PEERS_U32, ALL_TABLES | FLAT, (long)n, o->warmup, o->reps,
                   life_rep, &c, 1, &metric, step, total, NULL);
    }
    for (int t = 0; t < N_TABLES; ++t) {
        if (t == T_KHL_UNSEEDED)
            continue;
        bench_value(o, "tiny", own_tables[t].name, own_tables[t].layout, al, 0, "handle_bytes",
                    (double)own_tables[t].ops[PEERS_U32].handle_bytes);
        tiny_counts(o, &own_tables[t], PEERS_U32, pool, "");
    }
    /* Any key type (issue 20): random u64 and string keys, against the flat
     * array, whose string scan is a strcmp a key. */
    for (int bp = PEERS_U64; bp <= PEERS_STR; ++bp) {
        char name[48], prefix[16];
        const char *m = name;
        keys_t k;
        keys_or_exit(&k, bp == PEERS_U64 ? KEY_U64 : KEY_STR, KS_RAND, POOL_MASK + 1, 0);
        snprintf(prefix, sizeof prefix, "%s_", key_type_names[bp]);
        snprintf(name, sizeof name, "%slife_ns", prefix);
        for (size_t n = 1; n <= 8; ++n) {
            life_ctx_t c = {k.hit, n, life_iters(o, n)};
            run_rounds(o, tiny_key_tables, "tiny", bp, (1u << T_KHL) | FLAT, (long)n, o->warmup, o->reps,
                       life_rep, &c, 1, &m, step, total, NULL);
        }
        tiny_counts(o, &tiny_key_tables[T_KHL], bp, k.hit, prefix);
        tiny_counts(o, &tiny_key_tables[T_FLAT], bp, k.hit, prefix);
        keys_free(&k);
    }
    /* mruby 3.1-3.4 iv_tbl holding 1..4 ivars: a 16-byte header and one
     * 48-byte block (4 x 8-byte values, 4 x 4-byte symbols), as glibc spends
     * them. */
    {
        void *hdr = malloc(16), *blk = malloc(48);
        if (!hdr || !blk)
            peers_oom("mruby iv_tbl");
        for (long n = 1; n <= 4; ++n)
            bench_value(o, "tiny", "mruby_iv_tbl", "split2", al, n, "heap_bytes",
                        (double)(peers_spend(hdr) + peers_spend(blk)));
        bench_value(o, "tiny", "mruby_iv_tbl", "split2", al, 0, "handle_bytes", sizeof(void *));
        free(hdr);
        free(blk);
    }
}

/* --- workload growth ---------------------------------------------------------- */

static void growth_rep(const peers_ops_t *op, const char *table, void *ctx, double *out)
{
    const keys_t *k = ctx;
    void *h = op->create();
    uint64_t t0;
    if (!h)
        peers_oom("create");
    t0 = bench_now_ns();
    if (op->put(h, k->hit, 0, k->n) != (long)k->n)
        fail(table, "insert did not add every key", k->n);
    out[0] = (double)(bench_now_ns() - t0) / (double)k->n;
    op->destroy(h);
}

static void workload_growth(const bench_opts_t *o, size_t n, int *step, int total)
{
    static const char *const metric = "insert_ns";
    const char *al = bench_allocator(o);
    keys_t k;
    keys_or_exit(&k, KEY_U64, KS_RAND, n, 0);
    run_rounds(o, own_tables, "growth", PEERS_U64, ALL_TABLES, (long)n, warmup_for(o, n), reps_for(o, n),
               growth_rep, &k, 1, &metric, step, total, NULL);
    /* Untimed: one key per call, to see after which put the peak was set. */
    for (int t = 0; t < T_KHL_UNSEEDED; ++t) {
        const peers_ops_t *op = &own_tables[t].ops[PEERS_U64];
        peers_count_t cnt = {0};
        size_t at_peak = 0, peak = 0;
        void *h;
        peers_counting = &cnt;
        if (!(h = op->create()))
            peers_oom("create");
        for (size_t i = 0; i < n; ++i) {
            if (op->put(h, k.hit, i, i + 1) != 1)
                peers_oom("growth");
            if (cnt.peak > peak) {
                peak = cnt.peak;
                at_peak = i ? i : 1;   /* the keys the rebuild moved */
            }
        }
        bench_value(o, "growth", own_tables[t].name, own_tables[t].layout, al, (long)n, "peak_bytes",
                    (double)peak);
        bench_value(o, "growth", own_tables[t].name, own_tables[t].layout, al, (long)n, "keys_at_peak",
                    (double)at_peak);
        bench_value(o, "growth", own_tables[t].name, own_tables[t].layout, al, (long)n,
                    "peak_bytes_per_key", (double)peak / (double)at_peak);
        bench_value(o, "growth", own_tables[t].name, own_tables[t].layout, al, (long)n,
                    "bytes_per_key_end", (double)cnt.live / (double)n);
        op->destroy(h);
        peers_counting = NULL;
    }
    keys_free(&k);
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    size_t peers_n[16] = {200000, 2000000}, big_n[2] = {1000000, 10000000}, growth_n = 2000000;
    size_t weak_n[2] = {(size_t)1 << 14, (size_t)1 << 20};
    int n_peers = 2, n_big = 2, n_weak = 2, points = 20, step = 0, total;

    bench_parse(argc, argv, &o,
                "program peers: khashlite against boost::unordered_flat_map, absl::flat_hash_map "
                "and htslib's khash, in one process",
                "  workloads: peers (200k, 2M), vs_khash (1M, 10M; lives of 16, 64), tiny "
                "(n = 1..8), growth (2M), weak_hash (2^14, 2^20)\n"
                "  --quick: 20k / 50k keys; glibc only (--alloc is ignored)\n"
                "  --sizes=N,...: the peers workload's N (its rows checked against the suite's)",
                1);
    khl_seed(0x6b686c6974650002ULL);   /* reproducible khl_hash_str */
    if (o.quick) {
        peers_n[0] = 20000;
        big_n[0] = 50000;
        growth_n = 50000;
        n_peers = n_big = n_weak = 1;
    }
    if (o.n_sizes) {   /* each of the 20 points needs keys to time */
        n_peers = o.n_sizes;
        for (int i = 0; i < n_peers; ++i)
            peers_n[i] = (size_t)(o.sizes[i] < 1000 ? 1000 : o.sizes[i]);
    }
    total = (o.warmup + o.reps) * (4 + 3 * 8) + warmup_for(&o, growth_n) + reps_for(&o, growth_n);
    for (int s = 0; s < n_weak; ++s)
        total += N_WEAK_KINDS * (o.warmup + weak_reps(&o, weak_n[s]));
    for (int s = 0; s < n_peers; ++s)
        total += PEERS_PROCESSES * peers_rounds(&o, peers_n[s]);
    for (int s = 0; s < n_big; ++s)
        for (int kind = 0; kind < N_KINDS; ++kind)
            if (vs_khash_runs(big_n[s], kind))
                total += warmup_for(&o, big_n[s]) + huge_reps(&o, big_n[s], kind);
    if (bench_wanted(&o, "peers"))
        workload_peers_apart(&o, peers_n, n_peers, points, &step, total);
    if (bench_wanted(&o, "vs_khash"))
        workload_vs_khash(&o, big_n, n_big, &step, total);
    if (bench_wanted(&o, "tiny"))
        workload_tiny(&o, &step, total);
    if (bench_wanted(&o, "growth"))
        workload_growth(&o, growth_n, &step, total);
    if (bench_wanted(&o, "weak_hash"))
        workload_weak_hash(&o, weak_n, n_weak, &step, total);
    bench_progress("peers", step, total);
    if (o.out != stdout)
        fclose(o.out);
    return 0;
}
