/* largechurn.c: large_churn (issue 21), an interpreter's large buffers -
 * arrays and strings of 16 KiB to 1 MiB growing by realloc, replaced, freed
 * - with every allocator in one process, interleaved run by run with the
 * order rotated, as seed_fastmm does.
 *
 * One run: fill a live set of 64 MiB (8 MiB with --quick) with blocks of
 * sizes drawn log-uniformly from 16 KiB to 1 MiB; then OPS operations on
 * random live blocks (timed): half grow a block by realloc to 1.5x (a
 * block that would pass 1 MiB is replaced instead), half free a block and
 * allocate one of a new size; while the live set is above its target no
 * block grows and a replaced one restarts at 16-64 KiB.  Every new byte range is
 * written once per 4 KiB page, as a program writes its buffers, so page
 * faults are part of the cost.  Then everything is freed and the allocator
 * asked to give memory back (khl_pool_trim, malloc_trim, mi_collect,
 * jemalloc's arena purge, tcmalloc's ReleaseFreeMemory).  One fixed
 * sequence for every contender (same seed).
 *
 * Contenders: glibc (the process's malloc), tcmalloc, jemalloc, mimalloc
 * (dlopen'ed: harness/dl.h), khl_pool (default options, its calls through
 * pointers as a program linking the library makes them).
 *
 * Rows (workload large_churn, table alloc, layout 16K-1M/64MiB, n = OPS):
 *   seconds              the timed operations (median, min, max over runs)
 *   ratio_to_khl_pool    a contender's time over the pool's in the same
 *                        repetition
 *   syscalls_per_1000_ops  khl_pool only: the pool's own count of mmap,
 *                        munmap, mremap and madvise calls during the timed
 *                        operations (khl_pool_stats: system_calls), per
 *                        1,000 operations; the mallocs' calls are not
 *                        counted in-process (strace -c counts them)
 *   rss_after_ops_bytes  resident memory the run added by the end of the
 *                        operations (RSS then minus RSS before the run):
 *                        what the live set costs the allocator
 *   rss_after_trim_bytes resident memory the run left behind after
 *                        everything was freed and given back (RSS after
 *                        minus RSS before the run, at least 0)
 *   system_bytes_after_trim  khl_pool only: what the pool still holds */
#define _GNU_SOURCE
#include "harness/bench.h"
#include "harness/dl.h"
#include "khashlite/khl_pool.h"
#include "support/prng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIN_BLOCK ((size_t)16 * 1024)
#define MAX_BLOCK ((size_t)1024 * 1024)
#define SLOTS 4096
#define PAGE 4096

/* --- contenders ------------------------------------------------------------ */

typedef struct rival {
    const char *name;
    void *(*malloc)(size_t);
    void *(*realloc)(void *, size_t);
    void (*free)(void *);
    void (*trim)(void);
    khl_pool_t *pool;         /* khl_pool: its calls below instead */
} rival_t;

/* Through volatile pointers, as a program linking the library calls it. */
static void *(*volatile pool_alloc)(khl_pool_t *, size_t) = khl_pool_alloc;
static void *(*volatile pool_realloc)(khl_pool_t *, void *, size_t, size_t) = khl_pool_realloc;
static void (*volatile pool_free)(khl_pool_t *, void *, size_t) = khl_pool_free;

static int add_dl(rival_t *rv, int n, const bench_dl_lib_t *lib)
{
    void *h = bench_dl_malloc(lib->soname, lib->name);
    if (!h)
        return n;
    rv[n].name = lib->name;
    *(void **)&rv[n].malloc = bench_dl_sym(h, "malloc", (void *)malloc);
    *(void **)&rv[n].realloc = bench_dl_sym(h, "realloc", (void *)realloc);
    *(void **)&rv[n].free = bench_dl_sym(h, "free", (void *)free);
    rv[n].trim = bench_dl_trim(h, lib);
    rv[n].pool = NULL;
    return rv[n].realloc ? n + 1 : n;
}

static int open_all(rival_t *rv)
{
    int n = 0;
    rv[n++] = (rival_t){"glibc", malloc, realloc, free, bench_dl_trim(NULL, NULL), NULL};
    for (int i = 0; i < BENCH_DL_LIBS; ++i)
        n = add_dl(rv, n, &bench_dl_libs[i]);
    rv[n] = (rival_t){"khl_pool", NULL, NULL, NULL, NULL, khl_pool_new(NULL)};
    return rv[n].pool ? n + 1 : -1;
}

static void *r_alloc(const rival_t *r, size_t n)
{
    return r->pool ? pool_alloc(r->pool, n) : r->malloc(n);
}

static void *r_realloc(const rival_t *r, void *p, size_t o, size_t n)
{
    return r->pool ? pool_realloc(r->pool, p, o, n) : r->realloc(p, n);
}

static void r_free(const rival_t *r, void *p, size_t n)
{
    if (r->pool)
        pool_free(r->pool, p, n);
    else
        r->free(p);
}

/* --- one run ---------------------------------------------------------------- */

typedef struct run_out {
    double seconds, syscalls_per_1000, rss_ops, rss_after, system_after;
} run_out_t;

static size_t draw(uint64_t *s, size_t lo, size_t hi)
{
    double u = (double)(prng_next(s) >> 11) / 9007199254740992.0;
    return (size_t)exp(log((double)lo) + u * (log((double)hi) - log((double)lo))) & ~(size_t)15;
}

static void touch(char *b, size_t from, size_t to)
{
    for (size_t i = from; i < to; i += PAGE)
        b[i] = (char)i;
    if (to > from)
        b[to - 1] = 1;
}

static uint64_t pool_calls(const rival_t *r)
{
    khl_pool_stats_t s;
    if (!r->pool)
        return 0;
    khl_pool_stats(r->pool, &s);
    return s.system_calls;
}

static int run_once(const rival_t *r, size_t live_target, long ops, run_out_t *out)
{
    static char *b[SLOTS];
    static size_t n[SLOTS];
    uint64_t s = 42, t0, calls;
    size_t live = 0, rss0 = bench_rss_bytes(), nslots = 0;
    while (live < live_target && nslots < SLOTS) {
        n[nslots] = draw(&s, MIN_BLOCK, MAX_BLOCK);
        if (!(b[nslots] = r_alloc(r, n[nslots])))
            return -1;
        touch(b[nslots], 0, n[nslots]);
        live += n[nslots++];
    }
    calls = pool_calls(r);
    t0 = bench_now_ns();
    for (long i = 0; i < ops; ++i) {
        size_t j = (size_t)(prng_next(&s) % nslots), m;
        if (live <= live_target && prng_next(&s) % 2 && n[j] + n[j] / 2 <= MAX_BLOCK) {
            char *q = r_realloc(r, b[j], n[j], m = n[j] + n[j] / 2);
            if (!q)
                return -1;
            b[j] = q;
            touch(q, n[j], m);
        } else {
            r_free(r, b[j], n[j]);
            m = live > live_target ? draw(&s, MIN_BLOCK, 4 * MIN_BLOCK) : draw(&s, MIN_BLOCK, MAX_BLOCK);
            if (!(b[j] = r_alloc(r, m)))
                return -1;
            touch(b[j], 0, m);
        }
        live = live - n[j] + m;
        n[j] = m;
    }
    out->seconds = (double)(bench_now_ns() - t0) / 1e9;
    out->syscalls_per_1000 = (double)(pool_calls(r) - calls) * 1000.0 / (double)ops;
    out->rss_ops = bench_rss_bytes() > rss0 ? (double)(bench_rss_bytes() - rss0) : 0;
    for (size_t j = 0; j < nslots; ++j)
        r_free(r, b[j], n[j]);
    if (r->pool)
        khl_pool_trim(r->pool);
    else if (r->trim)
        r->trim();
    out->rss_after = bench_rss_bytes() > rss0 ? (double)(bench_rss_bytes() - rss0) : 0;
    out->system_after = 0;
    if (r->pool) {
        khl_pool_stats_t st;
        khl_pool_stats(r->pool, &st);
        out->system_after = (double)st.system_bytes;
        if (st.in_use_bytes || khl_pool_check(r->pool) != 0)
            return -1;
    }
    return 0;
}

/* --- runs and rows ------------------------------------------------------------ */

enum { MAX_RIVALS = 2 + BENCH_DL_LIBS, MAX_REPS = 64 };

int main(int argc, char **argv)
{
    static run_out_t res[MAX_RIVALS][MAX_REPS];
    static const char layout[] = "16K-1M/64MiB";
    bench_opts_t o;
    rival_t rv[MAX_RIVALS];
    double v[MAX_REPS];
    int n, reps, pool, rc = 0;
    long ops;
    size_t live;
    bench_dl_make_room_for_jemalloc(argv);
    bench_parse(argc, argv, &o,
                "large_churn: buffers of 16 KiB-1 MiB growing by realloc and replaced, a 64 MiB live set, "
                "glibc, tcmalloc, jemalloc, mimalloc and khl_pool in one process, interleaved.",
                NULL, 0);
    if (!bench_wanted(&o, "large_churn"))
        return 0;
    n = open_all(rv);
    if (n < 0)
        return 1;
    pool = n - 1;
    reps = 2 * o.reps + 1 < MAX_REPS ? 2 * o.reps + 1 : MAX_REPS;
    ops = o.quick ? 2000 : 20000;
    live = o.quick ? (size_t)8 << 20 : (size_t)64 << 20;
    for (int r = -o.warmup; rc == 0 && r < reps; ++r) {
        bench_progress("large_churn", (r + o.warmup) * n, (reps + o.warmup) * n);
        for (int k = 0; rc == 0 && k < n; ++k) {
            int c = (k + r + o.warmup) % n;
            run_out_t x;
            if (run_once(&rv[c], live, ops, &x) != 0) {
                fprintf(stderr, "large_churn: %s failed (out of memory?)\n", rv[c].name);
                rc = 1;
            } else if (r >= 0) {
                res[c][r] = x;
            }
        }
    }
    for (int c = 0; rc == 0 && c < n; ++c) {
        for (int r = 0; r < reps; ++r)
            v[r] = res[c][r].seconds;
        bench_row(&o, "large_churn", "alloc", layout, rv[c].name, ops, "seconds", bench_summarise(v, reps));
        if (c != pool) {
            for (int r = 0; r < reps; ++r)
                v[r] = res[c][r].seconds / res[pool][r].seconds;
            bench_row(&o, "large_churn", "alloc", layout, rv[c].name, ops, "ratio_to_khl_pool",
                      bench_summarise(v, reps));
        }
        for (int r = 0; r < reps; ++r)
            v[r] = res[c][r].rss_ops;
        bench_row(&o, "large_churn", "alloc", layout, rv[c].name, ops, "rss_after_ops_bytes",
                  bench_summarise(v, reps));
        for (int r = 0; r < reps; ++r)
            v[r] = res[c][r].rss_after;
        bench_row(&o, "large_churn", "alloc", layout, rv[c].name, ops, "rss_after_trim_bytes",
                  bench_summarise(v, reps));
        if (c == pool) {
            for (int r = 0; r < reps; ++r)
                v[r] = res[c][r].syscalls_per_1000;
            bench_row(&o, "large_churn", "alloc", layout, rv[c].name, ops, "syscalls_per_1000_ops",
                      bench_summarise(v, reps));
            for (int r = 0; r < reps; ++r)
                v[r] = res[c][r].system_after;
            bench_row(&o, "large_churn", "alloc", layout, rv[c].name, ops, "system_bytes_after_trim",
                      bench_summarise(v, reps));
        }
    }
    khl_pool_destroy(rv[pool].pool);
    if (o.out != stdout)
        fclose(o.out);
    return rc;
}
