/* churn.c: program `churn`, what merging a table's allocations gains for the
 * tiny tables interpreters make by the million.  The same table code runs in three
 * layouts (KHL_INIT_LAYOUT, peers/khl_split.h): single (header + ctrl + keys + values in one
 * block), split2 (header + one data block: mruby since 2013) and split3
 * (header + ctrl + keys + values each allocated: klib's khash).
 *
 * churn_int, churn_str (and *_reserve): create, put n distinct keys, get each,
 *   destroy; ns per lifecycle, allocator calls per lifecycle, bytes asked for.
 * churn_alloc (on the pool): churn_int's single layout on one pool three
 *   ways: through the hook (khl_pool_allocator), and as KHL_INIT_ALLOC types
 *   naming khl_pool_allocf (the library's function, called directly) or
 *   khl_pool_allocf_inline (the pool's fast paths inlined into the table's
 *   code); interleaved, their order rotated each repetition.
 * hook_pair: one allocate + free through the allocator hook, at the sizes
 *   of these tables' blocks: the unit the layouts multiply.
 * many: a large number of live tables of n keys, random lookups across them,
 *   then destroy; ns per lookup, bytes per table as the allocator really
 *   spends them (RSS growth), page faults.  Each configuration runs in a
 *   forked child so RSS and faults start from the same clean process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/alloc.h"
#include "harness/bench.h"
#include "khashlite/khashlite.h"
#include "khashlite/khl_pool_inline.h"
#include "peers/khl_split.h"
#include "support/check_alloc.h"
#include "support/prng.h"

KHL_INIT_LAYOUT(ci_single, uint32_t, uint32_t, 1, khl_hash_u32, khl_eq_int, KHL_LAYOUT_SINGLE)
KHL_INIT_LAYOUT(ci_split2, uint32_t, uint32_t, 1, khl_hash_u32, khl_eq_int, KHL_LAYOUT_SPLIT2)
KHL_INIT_LAYOUT(ci_split3, uint32_t, uint32_t, 1, khl_hash_u32, khl_eq_int, KHL_LAYOUT_SPLIT3)
KHL_INIT_LAYOUT(cs_single, const char *, uint32_t, 1, khl_hash_str, khl_eq_str, KHL_LAYOUT_SINGLE)
KHL_INIT_LAYOUT(cs_split2, const char *, uint32_t, 1, khl_hash_str, khl_eq_str, KHL_LAYOUT_SPLIT2)
KHL_INIT_LAYOUT(cs_split3, const char *, uint32_t, 1, khl_hash_str, khl_eq_str, KHL_LAYOUT_SPLIT3)
KHL_INIT_ALLOC(ci_named, uint32_t, uint32_t, 1, khl_hash_u32, khl_eq_int, khl_pool_allocf)
KHL_INIT_ALLOC(ci_inline, uint32_t, uint32_t, 1, khl_hash_u32, khl_eq_int, khl_pool_allocf_inline)

#define MAX_N 64
static uint32_t int_keys[MAX_N];
static const char *str_keys[MAX_N];
static char str_buf[MAX_N][16];
static int churn_sizes[16] = {0, 1, 2, 4, 8, 16, 32, 64};
static int n_churn_sizes = 8;

static void make_keys(void)
{
    uint64_t s = 0;
    for (int i = 0; i < MAX_N; ++i) {
        int_keys[i] = (uint32_t)prng_next(&s);
        snprintf(str_buf[i], sizeof str_buf[i], "ivar_%d", i);   /* like @ivar names */
        str_keys[i] = str_buf[i];
    }
}

/* One table lifecycle per call, on allocator a: a khl_allocator_t, or for a
 * KHL_INIT_ALLOC type its ud (alloc_t says which), so that every lifecycle
 * has one type and one loop times them all.  The result feeds BENCH_KEEP so
 * nothing is optimised away. */
#define LIFECYCLE(fn, name, KEYS, alloc_t)                                          \
    static uint32_t fn(void *a, int n, int reserve)                                 \
    {                                                                               \
        khl_t(name) h;                                                              \
        uint32_t sum = 0;                                                           \
        khl_init(name, &h, (alloc_t)a);                                             \
        if (reserve && khl_reserve(name, &h, (size_t)n) < 0)                        \
            abort();                                                                \
        for (int i = 0; i < n; ++i) {                                               \
            int ret;                                                                \
            khl_iter_t k = khl_put(name, &h, KEYS[i], &ret);                        \
            if (ret < 0)                                                            \
                abort();                                                            \
            khl_val(name, &h, k) = (uint32_t)i;                                     \
        }                                                                           \
        for (int i = 0; i < n; ++i)                                                 \
            sum += khl_val(name, &h, khl_get(name, &h, KEYS[i]));                   \
        khl_destroy(name, &h);                                                      \
        return sum;                                                                 \
    }

LIFECYCLE(life_ci_single, ci_single, int_keys, const khl_allocator_t *)
LIFECYCLE(life_ci_split2, ci_split2, int_keys, const khl_allocator_t *)
LIFECYCLE(life_ci_split3, ci_split3, int_keys, const khl_allocator_t *)
LIFECYCLE(life_cs_single, cs_single, str_keys, const khl_allocator_t *)
LIFECYCLE(life_cs_split2, cs_split2, str_keys, const khl_allocator_t *)
LIFECYCLE(life_cs_split3, cs_split3, str_keys, const khl_allocator_t *)
LIFECYCLE(life_ci_named, ci_named, int_keys, void *)
LIFECYCLE(life_ci_inline, ci_inline, int_keys, void *)

typedef uint32_t (*life_fn)(void *, int, int);
static const char *const layouts[3] = {"single", "split2", "split3"};
static const life_fn int_life[3] = {life_ci_single, life_ci_split2, life_ci_split3};
static const life_fn str_life[3] = {life_cs_single, life_cs_split2, life_cs_split3};

/* Lifecycles per repetition: about the same work for every n, ~5-20 ms. */
static long lifecycles_for(const bench_opts_t *o, int n)
{
    long budget = o->quick ? 20000 : o->full ? 2000000 : 400000;
    return budget / (n + 4);
}

/* Times L lifecycles of layout `life` on allocator a: ns per lifecycle. */
static double time_lifecycles(life_fn life, void *a, long L, int n, int reserve)
{
    uint32_t keep = 0;
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < L; ++i)
        keep += life(a, n, reserve);
    BENCH_KEEP(keep);
    return (double)(bench_now_ns() - t0) / (double)L;
}

/* On the pool, the binary's malloc runs the single layout in the same
 * repetitions too: the pool-vs-malloc ratio then comes from one process and
 * one stretch of time, not from two runs minutes apart on a shared machine. */
static void churn(const bench_opts_t *o, const char *workload, const life_fn life[3], int reserve)
{
    bench_alloc_t ba;
    int on_pool = strcmp(o->alloc, "pool") == 0;
    if (bench_alloc_open(&ba, o) < 0) {
        fprintf(stderr, "churn: no pool\n");
        exit(1);
    }
    int reps = o->reps < 64 ? o->reps : 64;
    for (int si = 0; si < n_churn_sizes; ++si) {
        int n = churn_sizes[si];
        long L = lifecycles_for(o, n);
        double t[3][64], libc_over_pool[64];
        /* Layouts interleaved within each repetition: drift hits all alike. */
        for (int r = -o->warmup; r < reps; ++r) {
            for (int l = 0; l < 3; ++l) {
                double ns = time_lifecycles(life[l], &ba.a, L, n, reserve);
                if (r >= 0)
                    t[l][r] = ns;
            }
            if (on_pool) {
                double ns = time_lifecycles(life[0], (void *)(uintptr_t)&khl_libc_allocator, L, n, reserve);
                if (r >= 0)
                    libc_over_pool[r] = ns / t[0][r];
            }
        }
        for (int l = 0; l < 3; ++l) {
            check_alloc_t c;
            check_alloc_init(&c, &ba.a, 0);
            BENCH_KEEP(life[l](&c.a, n, reserve));
            bench_row(o, workload, "khashlite", layouts[l], bench_allocator(o), n, "ns_per_lifecycle",
                      bench_summarise(t[l], reps));
            bench_value(o, workload, "khashlite", layouts[l], bench_allocator(o), n,
                        "allocs_per_lifecycle", (double)c.allocs);
            bench_value(o, workload, "khashlite", layouts[l], bench_allocator(o), n,
                        "bytes_asked_per_table", (double)c.peak_bytes);
        }
        if (on_pool)
            bench_row(o, workload, "khashlite", "single", bench_allocator(o), n,
                      "malloc_over_pool_same_process", bench_summarise(libc_over_pool, reps));
    }
    bench_alloc_close(&ba);
}

/* --- the allocator named at compile time ------------------------------------ */

static void churn_alloc(const bench_opts_t *o)
{
    static const char *const ways[3] = {"hook", "named", "named_inline"};
    const life_fn life[3] = {life_ci_single, life_ci_named, life_ci_inline};
    bench_alloc_t ba;
    if (bench_alloc_open(&ba, o) < 0 || !ba.pool) {
        fprintf(stderr, "churn_alloc: runs on the pool only\n");
        exit(1);
    }
    int reps = o->reps < 64 ? o->reps : 64;
    for (int si = 0; si < n_churn_sizes; ++si) {
        int n = churn_sizes[si];
        long L = lifecycles_for(o, n);
        double t[3][64], hook_over_inline[64];
        for (int r = -o->warmup; r < reps; ++r) {
            double ns[3];
            for (int k = 0; k < 3; ++k) {
                int w = (k + (r < 0 ? 0 : r)) % 3;
                ns[w] = time_lifecycles(life[w], w == 0 ? (void *)&ba.a : (void *)ba.pool, L, n, 0);
            }
            if (r >= 0) {
                for (int w = 0; w < 3; ++w)
                    t[w][r] = ns[w];
                hook_over_inline[r] = ns[0] / ns[2];
            }
        }
        for (int w = 0; w < 3; ++w)
            bench_row(o, "churn_alloc", "khashlite", ways[w], bench_allocator(o), n,
                      "ns_per_lifecycle", bench_summarise(t[w], reps));
        bench_row(o, "churn_alloc", "khashlite", "named_inline", bench_allocator(o), n,
                  "hook_over_inline_same_process", bench_summarise(hook_over_inline, reps));
    }
    bench_alloc_close(&ba);
}

/* --- the price of one allocation -------------------------------------------- */

/* ns per allocate + first write + free through the hook, at the block sizes
 * of a uint32 -> uint32 table of 8, 16 and 32 buckets: what a layout pays per
 * extra allocation, to read the churn ratios against. */
static void hook_pair(const bench_opts_t *o)
{
    static const size_t sizes[] = {88, 160, 304};
    bench_alloc_t ba;
    if (bench_alloc_open(&ba, o) < 0) {
        fprintf(stderr, "hook_pair: no pool\n");
        exit(1);
    }
    long pairs = o->quick ? 100000 : 4000000;
    for (int si = 0; si < 3; ++si) {
        double t[64];
        int reps = o->reps < 64 ? o->reps : 64;
        for (int r = -o->warmup; r < reps; ++r) {
            uint64_t t0 = bench_now_ns();
            for (long i = 0; i < pairs; ++i) {
                char *q = ba.a.fn(ba.a.ud, NULL, 0, sizes[si]);
                if (!q)
                    abort();
                *(volatile char *)q = 1;
                ba.a.fn(ba.a.ud, q, sizes[si], 0);
            }
            if (r >= 0)
                t[r] = (double)(bench_now_ns() - t0) / (double)pairs;
        }
        bench_row(o, "hook_pair", "hook", "-", bench_allocator(o), (long)sizes[si], "ns_per_pair",
                  bench_summarise(t, reps));
    }
    bench_alloc_close(&ba);
}

/* --- many live tables ------------------------------------------------------ */

#define MANY_FN(fn, name)                                                           \
    static void fn(const bench_opts_t *o, const khl_allocator_t *a, long tables,    \
                   int n, const char *layout)                                       \
    {                                                                               \
        khl_t(name) *hs = malloc((size_t)tables * sizeof *hs);                      \
        uint32_t *keys = malloc((size_t)tables * (size_t)n * sizeof *keys);         \
        if (!hs || !keys)                                                           \
            abort();                                                                \
        uint64_t s = 42;                                                            \
        for (long i = 0; i < tables * n; ++i)                                       \
            keys[i] = (uint32_t)prng_next(&s);                                      \
        size_t rss0 = bench_rss_bytes();                                            \
        long flt0 = bench_minor_faults();                                           \
        uint64_t t0 = bench_now_ns();                                               \
        for (long t = 0; t < tables; ++t) {                                         \
            khl_init(name, &hs[t], a);                                              \
            for (int i = 0; i < n; ++i) {                                           \
                int ret;                                                            \
                khl_iter_t k = khl_put(name, &hs[t], keys[t * n + i], &ret);        \
                if (ret < 0)                                                        \
                    abort();                                                        \
                khl_val(name, &hs[t], k) = (uint32_t)i;                             \
            }                                                                       \
        }                                                                           \
        uint64_t t1 = bench_now_ns();                                               \
        double rss_per = (double)(bench_rss_bytes() - rss0) / (double)tables;       \
        double flt_per = (double)(bench_minor_faults() - flt0) / (double)tables;    \
        double asked = 0;                                                           \
        for (long t = 0; t < tables; ++t)                                           \
            asked += (double)khl_block_size(name, &hs[t]);                          \
        long lookups = o->quick ? 200000 : 1000000;                                 \
        double look[64];                                                            \
        int reps = o->reps < 64 ? o->reps : 64;                                     \
        for (int r = -o->warmup; r < reps; ++r) {                                   \
            uint64_t ls = 7, sum = 0, l0 = bench_now_ns();                          \
            for (long i = 0; i < lookups; ++i) {                                    \
                uint64_t x = prng_next(&ls);                                        \
                long t = (long)(x % (uint64_t)tables);                              \
                int j = (int)((x >> 40) % (uint64_t)n);                             \
                sum += khl_val(name, &hs[t], khl_get(name, &hs[t], keys[t * n + j])); \
            }                                                                       \
            BENCH_KEEP(sum);                                                        \
            if (r >= 0)                                                             \
                look[r] = (double)(bench_now_ns() - l0) / (double)lookups;          \
        }                                                                           \
        uint64_t d0 = bench_now_ns();                                               \
        for (long t = 0; t < tables; ++t)                                           \
            khl_destroy(name, &hs[t]);                                              \
        uint64_t d1 = bench_now_ns();                                               \
        const char *al = bench_allocator(o);                                        \
        bench_row(o, "many", "khashlite", layout, al, n, "ns_per_lookup",           \
                  bench_summarise(look, reps));                                     \
        bench_value(o, "many", "khashlite", layout, al, n, "ns_per_table_build",    \
                    (double)(t1 - t0) / (double)tables);                            \
        bench_value(o, "many", "khashlite", layout, al, n, "ns_per_table_destroy",  \
                    (double)(d1 - d0) / (double)tables);                            \
        bench_value(o, "many", "khashlite", layout, al, n, "rss_bytes_per_table",   \
                    rss_per + (double)sizeof hs[0]);                                \
        bench_value(o, "many", "khashlite", layout, al, n, "bytes_asked_per_table", \
                    asked / (double)tables + (double)sizeof hs[0]);                 \
        bench_value(o, "many", "khashlite", layout, al, n, "faults_per_table", flt_per); \
        free(keys);                                                                 \
        free(hs);                                                                   \
    }

MANY_FN(many_single, ci_single)
MANY_FN(many_split2, ci_split2)
MANY_FN(many_split3, ci_split3)

typedef void (*many_fn)(const bench_opts_t *, const khl_allocator_t *, long, int, const char *);

static void many(const bench_opts_t *o)
{
    static const int sizes[] = {4, 8, 16};
    static const many_fn fns[3] = {many_single, many_split2, many_split3};
    long tables = o->quick ? 20000 : o->full ? 1000000 : 250000;
    int step = 0;
    for (int si = 0; si < 3; ++si) {
        for (int l = 0; l < 3; ++l) {
            bench_progress("many", ++step, 9);
            fflush(NULL);
            pid_t pid = fork();
            if (pid < 0) {
                perror("fork");
                exit(1);
            }
            if (pid == 0) {
                bench_alloc_t ba;
                if (bench_alloc_open(&ba, o) < 0)
                    _exit(1);
                fns[l](o, &ba.a, tables, sizes[si], layouts[l]);
                fflush(NULL);
                _exit(0);   /* the pool goes with the process: exit is the fast destroy */
            }
            int status;
            if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
                fprintf(stderr, "many: child failed\n");
                exit(1);
            }
        }
    }
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    bench_parse(argc, argv, &o, "Small-table churn and many live tables, three layouts.",
                "  churn: --sizes=LIST sets n (default 0,1,2,4,8,16,32,64; at most 64);\n"
                "  many: 250,000 tables of 4, 8 and 16 keys (--quick 20,000, --full 1,000,000)", 1);
    if (o.n_sizes) {                       /* --sizes: the n of the churn workloads */
        n_churn_sizes = o.n_sizes;
        for (int i = 0; i < o.n_sizes; ++i) {
            if (o.sizes[i] > MAX_N) {
                fprintf(stderr, "%s: churn sizes go up to %d keys\n", argv[0], MAX_N);
                return 2;
            }
            churn_sizes[i] = (int)o.sizes[i];
        }
    }
    khl_seed(1);
    make_keys();
    struct { const char *name; const life_fn *life; int reserve; } runs[] = {
        {"churn_int", int_life, 0}, {"churn_int_reserve", int_life, 1},
        {"churn_str", str_life, 0}, {"churn_str_reserve", str_life, 1},
    };
    for (int i = 0; i < 4; ++i) {
        if (!bench_wanted(&o, runs[i].name))
            continue;
        bench_progress(runs[i].name, i + 1, 4);
        churn(&o, runs[i].name, runs[i].life, runs[i].reserve);
    }
    if (strcmp(o.alloc, "pool") == 0 && bench_wanted(&o, "churn_alloc"))
        churn_alloc(&o);
    if (bench_wanted(&o, "hook_pair"))
        hook_pair(&o);
    if (bench_wanted(&o, "many"))
        many(&o);
    return 0;
}
