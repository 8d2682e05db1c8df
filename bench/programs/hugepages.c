/* hugepages.c: huge_pages, what transparent huge pages change for a large
 * table on khl_pool: a table of N u64 keys to 448-bit values (2M keys, a
 * 256 MiB block; 300k with --quick) on a pool with default options and on
 * one with huge_pages, taking turns in every repetition (the first
 * rotating), each on a new pool so that every fill maps and faults fresh
 * memory.
 *
 * One repetition of a contender: a new pool; N random keys put into an
 * empty table (no reserve: its growths map, fault and move); then 200,000
 * gets of present keys, distinct, in random order; then 200,000 erases of
 * the same keys; then the table and the pool are destroyed.
 *
 * Rows (workload huge_pages, table khashlite, layout single, allocator
 * khl_pool or khl_pool_huge, n = N), median, min and max over repetitions:
 *   insert_ns, get_ns, erase_ns   ns per operation; the inserts include
 *                                 their page faults
 *   ratio_to_khl_pool             khl_pool_huge only: each metric's time
 *                                 over khl_pool's in the same repetition
 *                                 (insert_ratio, get_ratio, erase_ratio)
 *   huge_page_bytes               the process's AnonHugePages after the
 *                                 fill (/proc/self/smaps_rollup): how much
 *                                 the kernel gave as huge pages (0 where
 *                                 transparent huge pages are off) */
#define _GNU_SOURCE
#include "harness/bench.h"
#include "khashlite/khashlite.h"
#include "khashlite/khl_pool.h"
#include "support/prng.h"

#include <stdlib.h>
#include <string.h>

typedef struct v448 {
    uint64_t w[7];
} v448_t;

KHL_INIT(hp, uint64_t, v448_t, 1, khl_hash_u64, khl_eq_int)

enum { OPS = 200000, MAX_REPS = 32, N_RIVALS = 2 };
enum { M_INSERT, M_GET, M_ERASE, N_METRICS };
static const char *const metric_names[N_METRICS] = {"insert_ns", "get_ns", "erase_ns"};
static const char *const ratio_names[N_METRICS] = {"insert_ratio", "get_ratio", "erase_ratio"};
static const char *const rival_names[N_RIVALS] = {"khl_pool", "khl_pool_huge"};

/* AnonHugePages of the process, in bytes; 0 when the kernel does not say. */
static double huge_page_bytes(void)
{
    char line[256];
    unsigned long kb = 0;
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
            break;
    fclose(f);
    return (double)kb * 1024.0;
}

/* One repetition of one contender; 0, or -1 (out of memory, or a key lost). */
static int run_once(int huge, const uint64_t *keys, size_t n, const uint32_t *probe, double *out,
                    double *thp)
{
    khl_pool_options_t opt;
    khl_pool_t *pool;
    khl_allocator_t al;
    khl_t(hp) h;
    v448_t v;
    uint64_t t0, sum = 0;
    int ret, rc = 0;
    memset(&opt, 0, sizeof opt);
    opt.huge_pages = huge;
    if (!(pool = khl_pool_new(&opt)))
        return -1;
    al = khl_pool_allocator(pool);
    khl_init(hp, &h, &al);
    memset(&v, 0, sizeof v);
    t0 = bench_now_ns();
    for (size_t i = 0; rc == 0 && i < n; ++i) {
        khl_iter_t k = khl_put(hp, &h, keys[i], &ret);
        if (ret < 0) {
            rc = -1;
        } else {
            v.w[0] = i;
            khl_val(hp, &h, k) = v;
        }
    }
    out[M_INSERT] = (double)(bench_now_ns() - t0) / (double)n;
    if (huge)
        *thp = huge_page_bytes();
    t0 = bench_now_ns();
    for (size_t j = 0; rc == 0 && j < OPS; ++j)
        sum += khl_getp(hp, &h, keys[probe[j]])->w[0];
    out[M_GET] = (double)(bench_now_ns() - t0) / OPS;
    BENCH_KEEP(sum);
    t0 = bench_now_ns();
    for (size_t j = 0; rc == 0 && j < OPS; ++j)
        if (!khl_del_key(hp, &h, keys[probe[j]]))
            rc = -1;
    out[M_ERASE] = (double)(bench_now_ns() - t0) / OPS;
    khl_destroy(hp, &h);
    khl_pool_destroy(pool);
    return rc;
}

int main(int argc, char **argv)
{
    static double res[N_RIVALS][N_METRICS][MAX_REPS];
    bench_opts_t o;
    double v[MAX_REPS], thp[MAX_REPS];
    size_t n;
    int reps;
    uint64_t *keys;
    uint32_t *probe;
    uint64_t s = 42;
    bench_parse(argc, argv, &o,
                "huge_pages: a table of u64 keys to 448-bit values on khl_pool, with and without "
                "huge_pages, in one process, taking turns.",
                NULL, 0);
    if (!bench_wanted(&o, "huge_pages"))
        return 0;
    n = o.quick ? 300000 : 2000000;   /* more than OPS */
    reps = o.reps < MAX_REPS ? o.reps : MAX_REPS;
    keys = malloc(n * sizeof *keys);
    probe = malloc(OPS * sizeof *probe);
    if (!keys || !probe)
        return 1;
    /* Distinct keys (a bijection of 0..n-1), and OPS distinct ones of them
     * in random order for the gets and erases (a partial shuffle). */
    for (size_t i = 0; i < n; ++i)
        keys[i] = prng_mix64(i + 1);
    {
        uint32_t *idx = malloc(n * sizeof *idx);
        if (!idx)
            return 1;
        for (size_t i = 0; i < n; ++i)
            idx[i] = (uint32_t)i;
        for (size_t j = 0; j < OPS; ++j) {
            size_t t = j + (size_t)(prng_next(&s) % (n - j));
            uint32_t x = idx[j];
            idx[j] = idx[t];
            idx[t] = x;
            probe[j] = idx[j];
        }
        free(idx);
    }
    for (int r = -o.warmup; r < reps; ++r) {
        bench_progress("huge_pages", (r + o.warmup) * N_RIVALS, (reps + o.warmup) * N_RIVALS);
        for (int k = 0; k < N_RIVALS; ++k) {
            int c = (k + r + o.warmup) % N_RIVALS;
            double out[N_METRICS] = {0}, t = 0;
            if (run_once(c, keys, n, probe, out, &t) != 0) {
                fprintf(stderr, "huge_pages: %s failed (out of memory?)\n", rival_names[c]);
                return 1;
            }
            if (r >= 0) {
                for (int m = 0; m < N_METRICS; ++m)
                    res[c][m][r] = out[m];
                if (c)
                    thp[r] = t;
            }
        }
    }
    for (int c = 0; c < N_RIVALS; ++c)
        for (int m = 0; m < N_METRICS; ++m) {
            bench_row(&o, "huge_pages", "khashlite", "single", rival_names[c], (long)n, metric_names[m],
                      bench_summarise(memcpy(v, res[c][m], (size_t)reps * sizeof *v), reps));
            if (c) {
                for (int r = 0; r < reps; ++r)
                    v[r] = res[1][m][r] / res[0][m][r];
                bench_row(&o, "huge_pages", "khashlite", "single", rival_names[c], (long)n, ratio_names[m],
                          bench_summarise(v, reps));
            }
        }
    bench_row(&o, "huge_pages", "khashlite", "single", rival_names[1], (long)n, "huge_page_bytes",
              bench_summarise(thp, reps));
    free(keys);
    free(probe);
    return 0;
}
