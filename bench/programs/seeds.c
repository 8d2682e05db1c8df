/* seeds.c: program `seeds`, the allocator experiments of khashlite's seed
 * posts (docs/posts.md), rerun on this machine with the binary's malloc and
 * with khl_pool, so their conclusions can be checked rather than quoted.
 *
 *   (seed_fastmm, the loop of 003, is fastmm.c: every allocator in one process.)
 *   seed_hhs       000 (French, hhs_calloc): 1024 x 1024-byte pool; N blocks
 *                  calloc'ed then freed, 10 times, N = 50..10000; once in
 *                  range, once with 2048-byte requests mixed in 1:1.
 *   seed_lighttpd  000, second experiment: 10 live clients x 256 x 4096 B,
 *                  2000 clients, clients closed in a shuffled order.
 *   seed_latency   001 (Japanese, Boost.Pool latency): 100,000 single
 *                  allocations of 4/10/50/100 B, each one timed; tail
 *                  percentiles and the growth spikes that repeat by index.
 *   seed_locks     003 (Chinese, FastMM vs VC2008 malloc): what a lock
 *                  costs the pool on the post's loop (thread_safe = 1, a
 *                  mutex around a single-threaded pool, 2 threads).
 *
 * Rows from the binary's own malloc come from every binary; pool rows
 * (khl_pool*, the hhs-style slot pool, Boost) only from the glibc binary so
 * they are not repeated once per malloc.  The workloads run in the order
 * above except seed_locks, which runs last: starting a thread changes how
 * glibc locks for the rest of the process (see run_locks).  seed_latency
 * runs under SCHED_FIFO like the post when the system allows it (CSV metric
 * sched_fifo says whether it did); --trace-dir=DIR writes its per-call
 * timings for plotting. */
#define _GNU_SOURCE
#include "harness/alloc.h"
#include "harness/bench.h"
#include "fastmm_loop.h"
#include "khashlite/khl_pool.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --- the C++ side (bench/peers/boost_pool.cpp) ---------------------------- */
typedef struct seeds_bpool seeds_bpool;
typedef struct seeds_bobj seeds_bobj;
seeds_bpool *seeds_bpool_new(size_t size);
void *seeds_bpool_malloc(seeds_bpool *p);
void seeds_bpool_delete(seeds_bpool *p);
seeds_bobj *seeds_bobj_new(size_t size);
void *seeds_bobj_construct(seeds_bobj *o);
void seeds_bobj_delete(seeds_bobj *o);

/* --- common --------------------------------------------------------------- */

/* Pool rows do not depend on the linked malloc (khl_pool maps its own
 * chunks), so only one binary emits them. */
static int pool_rows(void)
{
    return strcmp(BENCH_MALLOC, "glibc") == 0;
}

static double seconds_since(uint64_t t0)
{
    return (double)(bench_now_ns() - t0) / 1e9;
}

static khl_pool_t *pool_open(int thread_safe)
{
    khl_pool_t *p = bench_pool_new(thread_safe);
    if (!p)
        fprintf(stderr, "seeds: khl_pool_new failed\n");
    return p;
}

/* Untimed sanity check after a workload has freed everything it took: a
 * pool that still counts live bytes has lost track of a block. */
static void pool_check(khl_pool_t *p, const char *workload, const char *allocator)
{
    khl_pool_stats_t st;
    if (!p)
        return;
    khl_pool_stats(p, &st);
    if (st.in_use_bytes != 0 || st.allocs != st.frees)
        fprintf(stderr, "seeds: %s/%s: pool reports %zu bytes in use, %llu allocs, %llu frees\n",
                workload, allocator, st.in_use_bytes, (unsigned long long)st.allocs,
                (unsigned long long)st.frees);
}

/* Runs warmup + reps measurements of fn(arg) (seconds, < 0 on failure) and
 * summarises the measured ones.  Returns 0 or -1. */
typedef double (*measure_fn)(void *arg);

static int measure(const bench_opts_t *o, measure_fn fn, void *arg, bench_stat_t *st, double *total)
{
    double *v = malloc((size_t)o->reps * sizeof *v);
    if (!v)
        return -1;
    double sum = 0;
    for (int i = 0; i < o->warmup + o->reps; ++i) {
        double s = fn(arg);
        if (s < 0) {
            free(v);
            return -1;
        }
        if (i >= o->warmup) {
            v[i - o->warmup] = s;
            sum += s;
        }
    }
    *st = bench_summarise(v, o->reps);
    if (total)
        *total = sum;
    free(v);
    return 0;
}

/* --- seed_locks: the FastMM loop with locks ------------------------------ */

static void *libc_alloc(void *c, size_t n)
{
    (void)c;
    return malloc(n);
}

static void libc_free(void *c, void *ptr, size_t n)
{
    (void)c, (void)n;
    free(ptr);
}

/* One byte written in each block, as seed_fastmm's "+write" layout. */
DEFINE_FASTMM(fastmm_libc, libc_alloc, libc_free, 1)
DEFINE_FASTMM(fastmm_pool, fastmm_pool_alloc, fastmm_pool_free, 1)
DEFINE_FASTMM(fastmm_mutex, locked_pool_alloc, locked_pool_free, 1)

/* One thread's share of a run: its own pointer array, a shared context. */
typedef struct fastmm_job {
    fastmm_fn run;
    void *ctx;
    void **ptr;
    int rounds;
    int rc;
} fastmm_job_t;

static void *fastmm_thread(void *arg)
{
    fastmm_job_t *j = arg;
    j->rc = j->run(j->ctx, j->ptr, j->rounds);
    return NULL;
}

enum { MAX_THREADS = 2 };

typedef struct fastmm_arg {
    fastmm_fn run;
    void *ctx;
    int rounds;
    int threads;              /* 1: run on the calling thread */
    void **ptr[MAX_THREADS];
} fastmm_arg_t;

/* Wall time of `threads` threads each running the whole loop. */
static double fastmm_once(void *argp)
{
    fastmm_arg_t *a = argp;
    fastmm_job_t job[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    int started = 0, rc = 0;
    uint64_t t0 = bench_now_ns();
    if (a->threads == 1) {
        rc = a->run(a->ctx, a->ptr[0], a->rounds);
    } else {
        for (; started < a->threads; ++started) {
            job[started] = (fastmm_job_t){a->run, a->ctx, a->ptr[started], a->rounds, 0};
            if (pthread_create(&tid[started], NULL, fastmm_thread, &job[started]) != 0) {
                rc = -1;
                break;
            }
        }
        for (int i = 0; i < started; ++i) {
            pthread_join(tid[i], NULL);
            rc |= job[i].rc;
        }
    }
    double s = seconds_since(t0);
    return rc ? -1.0 : s;
}

/* The contexts a FastMM contender runs on. */
enum fm_kind { FM_LIBC, FM_POOL, FM_POOL_TS, FM_MUTEX };

typedef struct fm_contender {
    const char *allocator;
    enum fm_kind kind;
} fm_contender_t;

typedef struct fm_ctx {
    khl_pool_t *pool;
    locked_pool_t locked;
    int has_mutex;
} fm_ctx_t;

static int fm_open(fm_ctx_t *c, enum fm_kind kind, fastmm_fn *run, void **ctx)
{
    memset(c, 0, sizeof *c);
    static const fastmm_fn runs[] = {fastmm_libc, fastmm_pool, fastmm_pool, fastmm_mutex};
    *run = runs[kind];
    *ctx = NULL;
    if (kind == FM_LIBC)
        return 0;
    c->pool = pool_open(kind == FM_POOL_TS);
    if (!c->pool)
        return -1;
    *ctx = c->pool;
    if (kind == FM_MUTEX) {
        if (pthread_mutex_init(&c->locked.mu, NULL) != 0) {
            khl_pool_destroy(c->pool);
            return -1;
        }
        c->has_mutex = 1;
        c->locked.pool = c->pool;
        *ctx = &c->locked;
    }
    return 0;
}

static void fm_close(fm_ctx_t *c)
{
    if (c->has_mutex)
        pthread_mutex_destroy(&c->locked.mu);
    khl_pool_destroy(c->pool);
}

/* Measures one contender with `threads` threads; emits its row. */
static int fastmm_contender(const bench_opts_t *o, const char *workload, const char *layout,
                            const fm_contender_t *fc, int rounds, int threads, long n)
{
    fm_ctx_t c;
    fastmm_arg_t a = {.rounds = rounds, .threads = threads};
    if (fm_open(&c, fc->kind, &a.run, &a.ctx) != 0)
        return -1;
    int rc = 0;
    for (int t = 0; t < threads; ++t)
        if (!(a.ptr[t] = malloc(FASTMM_N * sizeof(void *))))
            rc = -1;
    bench_stat_t st;
    if (rc == 0 && (rc = measure(o, fastmm_once, &a, &st, NULL)) == 0)
        bench_row(o, workload, "seed", layout, fc->allocator, n, "seconds", st);
    pool_check(c.pool, workload, fc->allocator);
    for (int t = 0; t < threads; ++t)
        free(a.ptr[t]);
    fm_close(&c);
    return rc;
}

/* seed_locks: n = threads.  The 2-thread rows run the whole loop in each
 * thread on one shared allocator, so ideal scaling keeps the time flat.
 * A 2-thread row comes first on purpose: once a process has started a
 * thread, glibc stops eliding the atomics of pthread_mutex_lock and of its
 * own malloc (it checks "single-threaded" per process), so the 1-thread rows
 * here show what a lock costs in a threaded program.  seed_fastmm (fastmm.c)
 * never starts a thread, so its khl_pool_mutex row shows the elided lock. */
static int run_locks(const bench_opts_t *o)
{
    const struct {
        fm_contender_t c;
        int threads, pool;
    } cs[] = {
        {{BENCH_MALLOC, FM_LIBC}, 2, 0},
        {{BENCH_MALLOC, FM_LIBC}, 1, 0},
        {{"khl_pool", FM_POOL}, 1, 1},
        {{"khl_pool_ts", FM_POOL_TS}, 1, 1},
        {{"khl_pool_mutex", FM_MUTEX}, 1, 1},
        {{"khl_pool_ts", FM_POOL_TS}, 2, 1},
    };
    /* The post's point is a ratio (0.14 -> 0.41 -> 0.71 s), so the standard
     * run halves the rounds to stay in its time budget; the layout column
     * names the rounds since n holds the thread count. */
    int total = (int)(sizeof cs / sizeof cs[0]);
    int rounds = o->quick ? 20 : o->full ? 1000 : 500;
    char layout[32];
    snprintf(layout, sizeof layout, "10000x100Bx%d", rounds);
    for (int i = 0; i < total; ++i) {
        if (cs[i].pool && !pool_rows())
            continue;
        bench_progress("seed_locks", i, total);
        if (fastmm_contender(o, "seed_locks", layout, &cs[i].c, rounds, cs[i].threads,
                             cs[i].threads) != 0)
            return -1;
    }
    return 0;
}

/* --- the hhs-style slot pool (post 000), our own code -------------------------
 * One block of `count` equal slots of a power-of-two size.  calloc takes a
 * slot off a stack of free indices and zeroes it; free decides by an address
 * range check whether the block is a slot, and finds its index with a shift,
 * so both are O(1).  Requests that are too big, or arrive when every slot is
 * taken, fall back to calloc/free as hhs_calloc does. */
typedef struct slot_pool {
    unsigned char *base;
    uintptr_t lo, hi;         /* slot range as integers: comparing pointers into
                                 different objects would be undefined */
    size_t slot;
    unsigned shift;
    uint32_t *free_idx;
    size_t nfree;
} slot_pool_t;

static slot_pool_t *slot_pool_new(size_t slot, size_t count)
{
    if (slot == 0 || (slot & (slot - 1)) != 0 || count == 0 || count > UINT32_MAX ||
        count > SIZE_MAX / slot)
        return NULL;
    slot_pool_t *sp = calloc(1, sizeof *sp);
    if (!sp)
        return NULL;
    sp->base = malloc(slot * count);
    sp->free_idx = malloc(count * sizeof *sp->free_idx);
    if (!sp->base || !sp->free_idx) {
        free(sp->base);
        free(sp->free_idx);
        free(sp);
        return NULL;
    }
    sp->slot = slot;
    sp->shift = (unsigned)__builtin_ctzll((unsigned long long)slot);
    sp->lo = (uintptr_t)sp->base;
    sp->hi = sp->lo + slot * count;
    /* Pushed in reverse so the first calloc gets slot 0, as in hhs. */
    for (size_t i = 0; i < count; ++i)
        sp->free_idx[i] = (uint32_t)(count - 1 - i);
    sp->nfree = count;
    return sp;
}

static void *slot_pool_calloc(slot_pool_t *sp, size_t n)
{
    if (n > sp->slot || sp->nfree == 0)
        return calloc(1, n);
    unsigned char *q = sp->base + ((size_t)sp->free_idx[--sp->nfree] << sp->shift);
    memset(q, 0, sp->slot);
    return q;
}

static void slot_pool_free(slot_pool_t *sp, void *ptr)
{
    uintptr_t a = (uintptr_t)ptr;
    if (a >= sp->lo && a < sp->hi)
        sp->free_idx[sp->nfree++] = (uint32_t)((a - sp->lo) >> sp->shift);
    else
        free(ptr);
}

static void slot_pool_delete(slot_pool_t *sp)
{
    if (!sp)
        return;
    free(sp->base);
    free(sp->free_idx);
    free(sp);
}

/* --- seed_hhs and seed_lighttpd: calloc/free contenders ---------------------- */

enum z_kind { Z_LIBC, Z_POOL, Z_SLOT };

typedef struct zalloc {
    enum z_kind kind;
    khl_pool_t *pool;
    slot_pool_t *slot;
} zalloc_t;

static const char *z_name(enum z_kind k)
{
    return k == Z_LIBC ? BENCH_MALLOC : k == Z_POOL ? "khl_pool" : "hhs_slot_pool";
}

static int z_open(zalloc_t *z, enum z_kind kind, size_t slot, size_t count)
{
    memset(z, 0, sizeof *z);
    z->kind = kind;
    if (kind == Z_POOL)
        return (z->pool = pool_open(0)) ? 0 : -1;
    if (kind == Z_SLOT)
        return (z->slot = slot_pool_new(slot, count)) ? 0 : -1;
    return 0;
}

static void z_close(zalloc_t *z)
{
    khl_pool_destroy(z->pool);
    slot_pool_delete(z->slot);
}

/* The switch costs a predictable branch beside a 1-4 KiB memset. */
static void *z_calloc(zalloc_t *z, size_t n)
{
    switch (z->kind) {
    case Z_POOL: return khl_pool_calloc(z->pool, 1, n);
    case Z_SLOT: return slot_pool_calloc(z->slot, n);
    default: return calloc(1, n);
    }
}

static void z_free(zalloc_t *z, void *ptr, size_t n)
{
    switch (z->kind) {
    case Z_POOL: khl_pool_free(z->pool, ptr, n); break;
    case Z_SLOT: slot_pool_free(z->slot, ptr); break;
    default: free(ptr);
    }
}

/* Allocates count blocks (sizes[i % nsizes]) into ptr; on failure frees what
 * it got.  Returns 0 or -1. */
static int z_fill(zalloc_t *z, void **ptr, long count, const size_t *sizes, int nsizes)
{
    for (long i = 0; i < count; ++i) {
        if (!(ptr[i] = z_calloc(z, sizes[i % nsizes]))) {
            for (long j = 0; j < i; ++j)
                z_free(z, ptr[j], sizes[j % nsizes]);
            return -1;
        }
    }
    return 0;
}

enum { HHS_SLOT = 1024, HHS_COUNT = 1024, HHS_PASSES = 10 };

typedef struct hhs_arg {
    zalloc_t *z;
    void **ptr;
    long n;
    int over;
} hhs_arg_t;

/* The post's main.c: in range, N x calloc(1024) then N frees in order; with
 * over-size, 2N x {calloc(1024), calloc(2048)} then all freed in order (so
 * 4N blocks, half of them too big for the pool).  The post's figure is the
 * total of 10 runs. */
static double hhs_once(void *argp)
{
    hhs_arg_t *a = argp;
    static const size_t sizes[] = {HHS_SLOT, 2 * HHS_SLOT};
    int nsizes = a->over ? 2 : 1;
    long count = a->over ? 4 * a->n : a->n;
    uint64_t t0 = bench_now_ns();
    for (int pass = 0; pass < HHS_PASSES; ++pass) {
        if (z_fill(a->z, a->ptr, count, sizes, nsizes) != 0)
            return -1.0;
        for (long i = 0; i < count; ++i)
            z_free(a->z, a->ptr[i], sizes[i % nsizes]);
    }
    return seconds_since(t0);
}

static int hhs_one(const bench_opts_t *o, enum z_kind kind, long n, int over)
{
    zalloc_t z;
    if (z_open(&z, kind, HHS_SLOT, HHS_COUNT) != 0)
        return -1;
    hhs_arg_t a = {&z, malloc((size_t)(4 * n) * sizeof(void *)), n, over};
    bench_stat_t st;
    int rc = a.ptr ? measure(o, hhs_once, &a, &st, NULL) : -1;
    if (rc == 0)
        bench_row(o, "seed_hhs", "seed", over ? "over_size" : "in_range", z_name(kind), n,
                  "seconds", st);
    pool_check(z.pool, "seed_hhs", z_name(kind));
    free(a.ptr);
    z_close(&z);
    return rc;
}

static int run_hhs(const bench_opts_t *o)
{
    static const long ns[] = {50, 100, 500, 1024, 10000};
    int nn = o->quick ? 4 : 5;  /* --quick stops at 1024, the pool's size */
    int kinds = pool_rows() ? 3 : 1, total = kinds * nn * 2, step = 0;
    for (int k = 0; k < kinds; ++k)
        for (int over = 0; over < 2; ++over)
            for (int i = 0; i < nn; ++i) {
                bench_progress("seed_hhs", step++, total);
                if (hhs_one(o, (enum z_kind)k, ns[i], over) != 0)
                    return -1;
            }
    return 0;
}

enum { LT_LIVE = 10, LT_BLOCKS = 256, LT_SIZE = 4096 };

typedef struct lighttpd_arg {
    zalloc_t *z;
    void **buf;               /* LT_LIVE * LT_BLOCKS */
    long clients;
} lighttpd_arg_t;

/* speedtest2: batches of 10 clients each take 256 x 4096 B, then close in
 * the post's fixed shuffled order; one run serves `clients` clients. */
static double lighttpd_once(void *argp)
{
    static const int close_order[LT_LIVE] = {3, 0, 5, 1, 6, 2, 4, 9, 8, 7};
    static const size_t size[] = {LT_SIZE};
    lighttpd_arg_t *a = argp;
    uint64_t t0 = bench_now_ns();
    for (long done = 0; done < a->clients; done += LT_LIVE) {
        if (z_fill(a->z, a->buf, LT_LIVE * LT_BLOCKS, size, 1) != 0)
            return -1.0;
        for (int c = 0; c < LT_LIVE; ++c)
            for (int j = 0; j < LT_BLOCKS; ++j)
                z_free(a->z, a->buf[close_order[c] * LT_BLOCKS + j], LT_SIZE);
    }
    return seconds_since(t0);
}

static int run_lighttpd(const bench_opts_t *o)
{
    long clients = o->quick ? 20 : 2000;
    int kinds = pool_rows() ? 3 : 1;
    void **buf = malloc(LT_LIVE * LT_BLOCKS * sizeof *buf);
    if (!buf)
        return -1;
    int rc = 0;
    for (int k = 0; k < kinds && rc == 0; ++k) {
        bench_progress("seed_lighttpd", k, kinds);
        zalloc_t z;
        if ((rc = z_open(&z, (enum z_kind)k, LT_SIZE, LT_LIVE * LT_BLOCKS)) != 0)
            break;
        lighttpd_arg_t a = {&z, buf, clients};
        bench_stat_t st;
        double total;
        if ((rc = measure(o, lighttpd_once, &a, &st, &total)) == 0) {
            /* seconds: one run; seconds_total: the measured runs added up, as
             * the post reports its 5 runs (compare at --reps=5). */
            bench_row(o, "seed_lighttpd", "seed", "10x256x4096B", z_name(z.kind), clients,
                      "seconds", st);
            bench_value(o, "seed_lighttpd", "seed", "10x256x4096B", z_name(z.kind), clients,
                        "seconds_total", total);
        }
        pool_check(z.pool, "seed_lighttpd", z_name(z.kind));
        z_close(&z);
    }
    free(buf);
    return rc;
}

/* --- seed_latency: one timed call at a time --------------------------------- */

enum l_kind { L_LIBC, L_BOOST_POOL, L_BOOST_OBJECT, L_KHL, L_KHL_RESERVED, L_KINDS };

static const char *l_name(enum l_kind k)
{
    static const char *const names[] = {NULL, "boost_pool", "boost_object_pool", "khl_pool",
                                        "khl_pool_reserved"};
    return k == L_LIBC ? BENCH_MALLOC : names[k];   /* BENCH_MALLOC is a variable */
}

typedef struct lat_ctx {
    enum l_kind kind;
    size_t size;
    khl_pool_t *pool;
    seeds_bpool *bpool;
    seeds_bobj *bobj;
    void **ptr;               /* every block of a run, freed after it */
    long live;
} lat_ctx_t;

static void *l_malloc(void *c, size_t n)
{
    (void)c;
    return malloc(n);
}

static void *l_khl(void *c, size_t n)
{
    return khl_pool_alloc(c, n);
}

static void *l_bpool(void *c, size_t n)
{
    (void)n;
    return seeds_bpool_malloc(c);
}

static void *l_bobj(void *c, size_t n)
{
    (void)n;
    return seeds_bobj_construct(c);
}

typedef void *(*l_alloc_fn)(void *ctx, size_t n);

/* A fresh allocator per run, as the post creates its pool per test: growth
 * happens inside the timed calls, which is what the post looked at. */
static int lat_open(lat_ctx_t *c, long count)
{
    switch (c->kind) {
    case L_BOOST_POOL: c->bpool = seeds_bpool_new(c->size); return c->bpool ? 0 : -1;
    case L_BOOST_OBJECT: c->bobj = seeds_bobj_new(c->size); return c->bobj ? 0 : -1;
    case L_KHL:
    case L_KHL_RESERVED:
        if (!(c->pool = pool_open(0)))
            return -1;
        /* Untimed: the reserve is the point of the comparison. */
        return c->kind == L_KHL ? 0 : khl_pool_reserve(c->pool, c->size, (size_t)count);
    default: return 0;
    }
}

static void lat_close(lat_ctx_t *c)
{
    if (c->kind == L_LIBC)
        for (long i = 0; i < c->live; ++i)
            free(c->ptr[i]);
    c->live = 0;
    khl_pool_destroy(c->pool);
    seeds_bpool_delete(c->bpool);
    seeds_bobj_delete(c->bobj);
    c->pool = NULL, c->bpool = NULL, c->bobj = NULL;
}

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The post's loop: clock, allocate, clock; plus the first write, since a
 * block's page fault is part of what the caller waits for. */
static int lat_run(lat_ctx_t *c, long count, uint32_t *ns)
{
    static const l_alloc_fn fns[] = {l_malloc, l_bpool, l_bobj, l_khl, l_khl};
    l_alloc_fn fn = fns[c->kind];
    void *ctx = c->kind == L_BOOST_POOL     ? (void *)c->bpool
                : c->kind == L_BOOST_OBJECT ? (void *)c->bobj
                                            : (void *)c->pool;
    for (long i = 0; i < count; ++i) {
        uint64_t t0 = now_ns();
        void *q = fn(ctx, c->size);
        if (q)
            *(volatile char *)q = 1;
        uint64_t d = now_ns() - t0;
        if (!q)
            return -1;
        c->ptr[c->live++] = q;
        ns[i] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
    }
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

enum { M_P50, M_P99, M_P999, M_MAX, M_OVER10, M_OVER100, M_METRICS };
static const char *const metric_names[M_METRICS] = {"p50_ns", "p99_ns", "p999_ns", "max_ns",
                                                     "calls_over_10us", "calls_over_100us"};

/* Fills m[] for one run; sorts the scratch copy. */
static void lat_metrics(const uint32_t *ns, uint32_t *scratch, long count, double *m)
{
    memcpy(scratch, ns, (size_t)count * sizeof *ns);
    qsort(scratch, (size_t)count, sizeof *scratch, cmp_u32);
    m[M_P50] = scratch[(count - 1) / 2];
    m[M_P99] = scratch[(long)((double)(count - 1) * 0.99)];
    m[M_P999] = scratch[(long)((double)(count - 1) * 0.999)];
    m[M_MAX] = scratch[count - 1];
    m[M_OVER10] = m[M_OVER100] = 0;
    for (long i = 0; i < count; ++i) {
        m[M_OVER10] += ns[i] > 10000;
        m[M_OVER100] += ns[i] > 100000;
    }
}

/* Growth spikes land on the same call index run after run; preemption
 * does not.  Counts indices over 100 us in both runs. */
static double lat_repeats(const uint32_t *a, const uint32_t *b, long count)
{
    double n = 0;
    for (long i = 0; i < count; ++i)
        n += a[i] > 100000 && b[i] > 100000;
    return n;
}

static void lat_trace(const char *dir, const char *name, size_t size, const uint32_t *ns, long count)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/latency_%s_%zu.dat", dir, name, size);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return;
    }
    for (long i = 0; i < count; ++i)
        fprintf(f, "%ld %u\n", i, (unsigned)ns[i]);
    if (fclose(f) != 0)
        perror(path);
}

typedef struct lat_buf {
    uint32_t *cur, *prev, *scratch;
    double *m[M_METRICS + 1]; /* per measured run; the last is the repeats */
    void **ptr;
} lat_buf_t;

static void lat_buf_free(lat_buf_t *b)
{
    free(b->cur), free(b->prev), free(b->scratch), free(b->ptr);
    for (int i = 0; i <= M_METRICS; ++i)
        free(b->m[i]);
}

static int lat_buf_alloc(lat_buf_t *b, long count, int runs)
{
    memset(b, 0, sizeof *b);
    b->cur = malloc((size_t)count * sizeof *b->cur);
    b->prev = malloc((size_t)count * sizeof *b->prev);
    b->scratch = malloc((size_t)count * sizeof *b->scratch);
    b->ptr = malloc((size_t)count * sizeof *b->ptr);
    int ok = b->cur && b->prev && b->scratch && b->ptr;
    for (int i = 0; i <= M_METRICS; ++i)
        ok &= (b->m[i] = malloc((size_t)runs * sizeof(double))) != NULL;
    if (!ok)
        lat_buf_free(b);
    return ok ? 0 : -1;
}

/* Runs one contender and size `warmup + runs` times, each on a fresh
 * allocator, and emits its rows.  runs >= 2 so repeats can be counted. */
static int lat_contender(const bench_opts_t *o, lat_buf_t *b, enum l_kind kind, size_t size,
                         long count, int runs, const char *trace_dir)
{
    lat_ctx_t c = {.kind = kind, .size = size, .ptr = b->ptr};
    int measured = 0;
    for (int r = 0; r < o->warmup + runs; ++r) {
        int rc = lat_open(&c, count);
        if (rc == 0)
            rc = lat_run(&c, count, b->cur);
        lat_close(&c);
        if (rc != 0)
            return -1;
        if (r < o->warmup)
            continue;
        double m[M_METRICS];
        lat_metrics(b->cur, b->scratch, count, m);
        for (int i = 0; i < M_METRICS; ++i)
            b->m[i][measured] = m[i];
        if (measured > 0)
            b->m[M_METRICS][measured - 1] = lat_repeats(b->prev, b->cur, count);
        else if (trace_dir)
            lat_trace(trace_dir, l_name(kind), size, b->cur, count);
        uint32_t *t = b->prev;
        b->prev = b->cur, b->cur = t;
        ++measured;
    }
    const char *name = l_name(kind);
    for (int i = 0; i < M_METRICS; ++i)
        bench_row(o, "seed_latency", "seed", "single_allocs", name, (long)size, metric_names[i],
                  bench_summarise(b->m[i], runs));
    bench_row(o, "seed_latency", "seed", "single_allocs", name, (long)size, "spike_indices_repeat",
              bench_summarise(b->m[M_METRICS], runs - 1));
    return 0;
}

/* SCHED_FIFO as in the post, when the system allows it; 1 if it is on. */
static int fifo_on(void)
{
    struct sched_param sp = {.sched_priority = sched_get_priority_max(SCHED_FIFO)};
    if (sp.sched_priority < 0 || sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
        fprintf(stderr, "seed_latency: SCHED_FIFO not available (%s), timing at normal priority\n",
                strerror(errno));
        return 0;
    }
    return 1;
}

static void fifo_off(void)
{
    struct sched_param sp = {.sched_priority = 0};
    if (sched_setscheduler(0, SCHED_OTHER, &sp) != 0)
        perror("seed_latency: back to SCHED_OTHER");
}

static int run_latency(const bench_opts_t *o, const char *trace_dir)
{
    static const size_t sizes[] = {4, 10, 50, 100};
    long count = o->quick ? 10000 : 100000;
    int runs = o->reps < 2 ? 2 : o->reps;
    int kinds = pool_rows() ? L_KINDS : 1, total = kinds * 4, step = 0;
    lat_buf_t b;
    if (lat_buf_alloc(&b, count, runs) != 0)
        return -1;
    int fifo = fifo_on(), rc = 0;
    for (int k = 0; k < kinds && rc == 0; ++k)
        for (int s = 0; s < 4 && rc == 0; ++s) {
            bench_progress("seed_latency", step++, total);
            rc = lat_contender(o, &b, (enum l_kind)k, sizes[s], count, runs, trace_dir);
        }
    if (fifo)
        fifo_off();
    bench_value(o, "seed_latency", "seed", "single_allocs", BENCH_MALLOC, 0, "sched_fifo", fifo);
    lat_buf_free(&b);
    return rc;
}

/* --- main ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    bench_opts_t o;
    bench_parse(argc, argv, &o,
                "The seed posts' allocator experiments (docs/posts.md): seed_hhs, seed_lighttpd, "
                "seed_latency, seed_locks (seed_fastmm: khl-bench-fastmm).",
                "  seed_latency with --trace-dir=DIR writes DIR/latency_<allocator>_<size>.dat\n"
                "  (columns: index ns) for each contender and size", 0);
    if (!strcmp(o.alloc, "pool")) {        /* every contender, pools included, is already a row */
        fprintf(stderr, "%s: the pool contenders run in the glibc binary's default run; "
                        "nothing to do for --alloc=pool\n", argv[0]);
        return 0;
    }
    const char *trace_dir = o.trace_dir;
    static const struct {
        const char *name;
        int (*run)(const bench_opts_t *);
    } ws[] = {
        {"seed_hhs", run_hhs},
        {"seed_lighttpd", run_lighttpd},
        {"seed_latency", NULL},
        {"seed_locks", run_locks},  /* last: it leaves the process multithreaded */
    };
    for (size_t i = 0; i < sizeof ws / sizeof ws[0]; ++i) {
        if (!bench_wanted(&o, ws[i].name))
            continue;
        int rc = ws[i].run ? ws[i].run(&o) : run_latency(&o, trace_dir);
        if (rc != 0) {
            fprintf(stderr, "%s: %s failed (out of memory?)\n", argv[0], ws[i].name);
            return 1;
        }
    }
    if (o.out != stdout)
        fclose(o.out);
    return 0;
}
