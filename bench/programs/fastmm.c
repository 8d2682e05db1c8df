/* fastmm.c: seed_fastmm, the loop of post 003 (docs/posts.md; 1000 rounds of 10,000 x
 * 100-byte allocations, then all freed in order), with every allocator in
 * one process and the contenders interleaved repetition by repetition, so
 * their ratios are measured side by side on a shared, noisy machine.
 *
 * Contenders:
 *   glibc, tcmalloc, jemalloc, mimalloc  malloc and free of the process
 *       (glibc) or of each Debian shared library, dlopen'ed with RTLD_LOCAL
 *       so each keeps its own heap; all called through pointers, as a
 *       shared library's functions are.
 *   khl_pool          khl_pool_alloc / khl_pool_free called through pointers:
 *       what a program that links libkhashlite.a without LTO, or reaches the
 *       pool through its hook, pays.
 *   khl_pool_hook     the pool as a table reaches it: khl_pool_allocf called
 *       through a khl_allocator_t (function pointer and ud), with the old
 *       and new sizes, as every hook call of a table is made.
 *   khl_pool_direct   the same calls made directly from a file compiled
 *       without LTO (fastmm_direct.c): a program linking libkhashlite.a the
 *       ordinary way.
 *   khl_pool_header   the same file, calling khl_pool_alloc_inline and
 *       khl_pool_free_inline (khl_pool_inline.h): the inline fast paths a
 *       program gets by including a header, without LTO.
 *   khl_pool_inline   the same calls with the pool's fast paths inlined
 *       into the loop, as the post's FixedAlloc was into its own: this
 *       binary is linked with -flto against the library's sources (bench.mk)
 *       and the loop is flattened.  What a program gets when it compiles the
 *       pool in with LTO and its hot loop inlines the calls.
 *   khl_pool_ts_header  a thread-safe pool through khl_pool_inline.h's
 *       inline paths (its thread cache read in the loop), without LTO.
 *   khl_pool_unsized, khl_pool_ts, khl_pool_mutex  unsized free, a
 *       thread-safe pool, and the post's "critical section": a
 *       single-threaded pool behind a mutex (no thread is ever started here,
 *       so glibc elides the lock's atomics, as it does for any
 *       single-threaded program).
 *   floor             no allocator: blocks handed out in turn from one array
 *       of 10,000 x 112 B (the size class every contender rounds 100 B up to),
 *       free does nothing.  What the loop costs with nothing to allocate, its
 *       memory traffic included.
 *
 * Layouts: "10000x100B" is the loop as published (the blocks are never
 * touched); "10000x100B+write" writes one byte in each block, as a program
 * would.  Rows per contender and layout (n = rounds): seconds (median, min,
 * max over the repetitions), and ratio_to_khl_pool, ratio_to_khl_pool_hook,
 * ratio_to_khl_pool_direct, ratio_to_khl_pool_header and ratio_to_khl_pool_inline: its time
 * over that pool's in the same repetition (median, min, max).  pool_latency and pool_threads
 * are described at their code. */
#define _GNU_SOURCE
#include "harness/alloc.h"
#include "harness/bench.h"
#include "harness/dl.h"
#include "fastmm_direct.h"
#include "fastmm_loop.h"
#include "khashlite/khl_pool.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FLOOR_STRIDE 112

/* --- the contenders' calls --------------------------------------------------- */

typedef struct libc_like {
    void *(*malloc)(size_t);
    void (*free)(void *);
    bench_trim_fn trim;   /* gives its free memory back (pool_latency) */
} libc_like_t;

static inline void *libc_like_alloc(void *c, size_t n)
{
    return ((libc_like_t *)c)->malloc(n);
}

static inline void libc_like_free(void *c, void *ptr, size_t n)
{
    (void)n;
    ((libc_like_t *)c)->free(ptr);
}

typedef struct pool_called {
    khl_pool_t *pool;
    void *(*alloc)(khl_pool_t *, size_t);
    void (*free)(khl_pool_t *, void *, size_t);
    void (*free_unsized)(khl_pool_t *, void *);
} pool_called_t;

static inline void *pool_called_alloc(void *c, size_t n)
{
    pool_called_t *pc = c;
    return pc->alloc(pc->pool, n);
}

static inline void pool_called_free(void *c, void *ptr, size_t n)
{
    pool_called_t *pc = c;
    pc->free(pc->pool, ptr, n);
}

static inline void pool_called_free_unsized(void *c, void *ptr, size_t n)
{
    pool_called_t *pc = c;
    (void)n;
    pc->free_unsized(pc->pool, ptr);
}

/* A table's hook call: {fn, ud} read from the table, fn called with the
 * old and new sizes. */
static inline void *pool_hook_alloc(void *c, size_t n)
{
    const khl_allocator_t *a = c;
    return a->fn(a->ud, NULL, 0, n);
}

static inline void pool_hook_free(void *c, void *ptr, size_t n)
{
    const khl_allocator_t *a = c;
    a->fn(a->ud, ptr, n, 0);
}

/* Read through volatile, so that link-time optimisation cannot turn the
 * calls made through them back into direct (inlinable) calls. */
static void *(*volatile opaque_alloc)(khl_pool_t *, size_t) = khl_pool_alloc;
static void (*volatile opaque_free)(khl_pool_t *, void *, size_t) = khl_pool_free;
static void (*volatile opaque_free_unsized)(khl_pool_t *, void *) = khl_pool_free_unsized;
static khl_allocf volatile opaque_allocf = khl_pool_allocf;
static void *(*volatile opaque_malloc)(size_t) = malloc;
static void (*volatile opaque_libc_free)(void *) = free;

typedef struct floor_arena {
    char *base, *next, *end;
} floor_arena_t;

static inline void *floor_alloc(void *c, size_t n)
{
    floor_arena_t *f = c;
    char *b = f->next;
    (void)n;
    f->next = b + FLOOR_STRIDE == f->end ? f->base : b + FLOOR_STRIDE;
    return b;
}

static inline void floor_free(void *c, void *ptr, size_t n)
{
    (void)c, (void)ptr, (void)n;
}

#define FASTMM_BOTH(NAME, ALLOC, FREE)               \
    DEFINE_FASTMM(NAME##_published, ALLOC, FREE, 0) \
    DEFINE_FASTMM(NAME##_write, ALLOC, FREE, 1)

FASTMM_BOTH(fm_libc_like, libc_like_alloc, libc_like_free)
FASTMM_BOTH(fm_pool_called, pool_called_alloc, pool_called_free)
FASTMM_BOTH(fm_pool_hook, pool_hook_alloc, pool_hook_free)
FASTMM_BOTH(fm_pool_direct, fastmm_pool_alloc, fastmm_pool_free)
FASTMM_BOTH(fm_pool_unsized, pool_called_alloc, pool_called_free_unsized)
FASTMM_BOTH(fm_mutex, locked_pool_alloc, locked_pool_free)
FASTMM_BOTH(fm_floor, floor_alloc, floor_free)

/* The pool's fast paths inlined into the loop, as the post's FixedAlloc was
 * into its own.  The library's code is here through -flto; flatten makes
 * the compiler inline what it can see (the pool's slow paths stay out of
 * line: they are noinline), where its size heuristics would not. */
__attribute__((flatten)) static int fm_pool_inline_published(void *ctx, void **ptr, int rounds)
{
    return fm_pool_direct_published(ctx, ptr, rounds);
}

__attribute__((flatten)) static int fm_pool_inline_write(void *ctx, void **ptr, int rounds)
{
    return fm_pool_direct_write(ctx, ptr, rounds);
}

/* --- contenders ------------------------------------------------------------- */

enum { N_LAYOUTS = 2, MAX_CONTENDERS = 14 };
static const char *const layout_name[N_LAYOUTS] = {"10000x100B", "10000x100B+write"};

typedef struct contender {
    const char *name;
    fastmm_fn run[N_LAYOUTS];
    void *ctx;
    khl_pool_t *pool;         /* checked after the runs: nothing may be left in use */
} contender_t;

enum pool_kind {
    POOL_CALLED, POOL_HOOK, POOL_DIRECT, POOL_HEADER, POOL_INLINE, POOL_UNSIZED, POOL_TS, POOL_TS_HEADER,
    POOL_KINDS
};

typedef struct contenders {
    contender_t c[MAX_CONTENDERS];
    int n;
    libc_like_t libc[1 + BENCH_DL_LIBS];
    pool_called_t called[POOL_KINDS];
    khl_allocator_t hook;
    locked_pool_t locked;
    floor_arena_t floor;
} contenders_t;

static void add(contenders_t *cs, const char *name, fastmm_fn published, fastmm_fn write, void *ctx,
                khl_pool_t *pool)
{
    cs->c[cs->n++] = (contender_t){name, {published, write}, ctx, pool};
}

/* A malloc from a Debian shared library, loaded beside glibc's
 * (harness/dl.h).  If it cannot be loaded its rows are missing from the
 * report, nothing else. */
static void add_dl(contenders_t *cs, int i, const bench_dl_lib_t *lib)
{
    void *h = bench_dl_malloc(lib->soname, lib->name);
    libc_like_t *l = &cs->libc[i];
    if (!h)
        return;
    *(void **)&l->malloc = bench_dl_sym(h, "malloc", (void *)malloc);
    *(void **)&l->free = bench_dl_sym(h, "free", (void *)free);
    l->trim = bench_dl_trim(h, lib);
    add(cs, lib->name, fm_libc_like_published, fm_libc_like_write, l, NULL);
}

static int add_pool(contenders_t *cs, const char *name, enum pool_kind kind)
{
    static const fastmm_fn runs[POOL_KINDS][N_LAYOUTS] = {
        {fm_pool_called_published, fm_pool_called_write},
        {fm_pool_hook_published, fm_pool_hook_write},
        {fastmm_direct_published, fastmm_direct_write},
        {fastmm_header_published, fastmm_header_write},
        {fm_pool_inline_published, fm_pool_inline_write},
        {fm_pool_unsized_published, fm_pool_unsized_write},
        {fm_pool_called_published, fm_pool_called_write},
        {fastmm_header_published, fastmm_header_write},
    };
    khl_pool_t *p = bench_pool_new(kind == POOL_TS || kind == POOL_TS_HEADER);
    pool_called_t *pc = &cs->called[kind];
    if (!p)
        return -1;
    void *ctx = pc;
    *pc = (pool_called_t){p, opaque_alloc, opaque_free, opaque_free_unsized};
    if (kind == POOL_DIRECT || kind == POOL_HEADER || kind == POOL_INLINE || kind == POOL_TS_HEADER)
        ctx = p;
    if (kind == POOL_HOOK) {
        cs->hook = (khl_allocator_t){opaque_allocf, p, 0};
        ctx = &cs->hook;
    }
    add(cs, name, runs[kind][0], runs[kind][1], ctx, p);
    return 0;
}

static int add_mutex(contenders_t *cs)
{
    khl_pool_t *p = bench_pool_new(0);
    if (!p)
        return -1;
    if (pthread_mutex_init(&cs->locked.mu, NULL) != 0) {
        khl_pool_destroy(p);
        return -1;
    }
    cs->locked.pool = p;
    add(cs, "khl_pool_mutex", fm_mutex_published, fm_mutex_write, &cs->locked, p);
    return 0;
}

static int add_floor(contenders_t *cs)
{
    size_t bytes = (size_t)FASTMM_N * FLOOR_STRIDE;
    if (!(cs->floor.base = aligned_alloc(64, bytes)))
        return -1;
    cs->floor.next = cs->floor.base;
    cs->floor.end = cs->floor.base + bytes;
    add(cs, "floor", fm_floor_published, fm_floor_write, &cs->floor, NULL);
    return 0;
}

static int open_all(contenders_t *cs)
{
    memset(cs, 0, sizeof *cs);
    cs->libc[0] = (libc_like_t){opaque_malloc, opaque_libc_free, bench_dl_trim(NULL, NULL)};
    add(cs, "glibc", fm_libc_like_published, fm_libc_like_write, &cs->libc[0], NULL);
    for (int i = 0; i < BENCH_DL_LIBS; ++i)
        add_dl(cs, 1 + i, &bench_dl_libs[i]);
    if (add_pool(cs, "khl_pool", POOL_CALLED) || add_pool(cs, "khl_pool_hook", POOL_HOOK) ||
        add_pool(cs, "khl_pool_direct", POOL_DIRECT) ||
        add_pool(cs, "khl_pool_header", POOL_HEADER) ||
        add_pool(cs, "khl_pool_inline", POOL_INLINE) ||
        add_pool(cs, "khl_pool_unsized", POOL_UNSIZED) || add_pool(cs, "khl_pool_ts", POOL_TS) ||
        add_pool(cs, "khl_pool_ts_header", POOL_TS_HEADER) ||
        add_mutex(cs))
        return -1;
    return add_floor(cs);
}

static void close_all(contenders_t *cs)
{
    for (int i = 0; i < cs->n; ++i) {
        khl_pool_stats_t st;
        if (!cs->c[i].pool)
            continue;
        khl_pool_stats(cs->c[i].pool, &st);
        if (st.in_use_bytes != 0 || st.allocs != st.frees)
            fprintf(stderr, "fastmm: %s: pool reports %zu bytes in use after the runs\n",
                    cs->c[i].name, st.in_use_bytes);
        khl_pool_destroy(cs->c[i].pool);
    }
    if (cs->locked.pool)
        pthread_mutex_destroy(&cs->locked.mu);
    free(cs->floor.base);
}

/* --- measurement ---------------------------------------------------------------- */

static int pool_index(const contenders_t *cs, const char *name)
{
    for (int i = 0; i < cs->n; ++i)
        if (!strcmp(cs->c[i].name, name))
            return i;
    return -1;
}

/* Each repetition runs every (layout, contender) once, starting one further
 * along each time, so no contender always follows the same one. */
static int measure_all(const bench_opts_t *o, contenders_t *cs, int rounds, int reps, double *t)
{
    void **ptr = malloc(FASTMM_N * sizeof *ptr);
    int runs = N_LAYOUTS * cs->n, step = 0, total = (o->warmup + reps) * runs;
    if (!ptr)
        return -1;
    for (int r = -o->warmup; r < reps; ++r)
        for (int k = 0; k < runs; ++k, ++step) {
            int j = (k + (r + o->warmup)) % runs, l = j / cs->n, c = j % cs->n;
            uint64_t t0;
            if (step % cs->n == 0)
                bench_progress("seed_fastmm", step, total);
            t0 = bench_now_ns();
            if (cs->c[c].run[l](cs->c[c].ctx, ptr, rounds) != 0) {
                free(ptr);
                return -1;
            }
            if (r >= 0)
                t[(l * cs->n + c) * reps + r] = (double)(bench_now_ns() - t0) / 1e9;
        }
    free(ptr);
    return 0;
}

static void emit(const bench_opts_t *o, const contenders_t *cs, int rounds, int reps, const double *t)
{
    static const char *const against[] = {"khl_pool", "khl_pool_hook", "khl_pool_direct", "khl_pool_header",
                                          "khl_pool_inline"};
    double *v = malloc((size_t)reps * sizeof *v);
    if (!v)
        return;
    for (int l = 0; l < N_LAYOUTS; ++l)
        for (int c = 0; c < cs->n; ++c) {
            const double *mine = &t[(l * cs->n + c) * reps];
            memcpy(v, mine, (size_t)reps * sizeof *v);
            bench_row(o, "seed_fastmm", "seed", layout_name[l], cs->c[c].name, rounds, "seconds",
                      bench_summarise(v, reps));
            for (int a = 0; a < (int)(sizeof against / sizeof against[0]); ++a) {
                int p = pool_index(cs, against[a]);
                char metric[48];
                if (p < 0 || p == c)
                    continue;
                for (int r = 0; r < reps; ++r)
                    v[r] = mine[r] / t[(l * cs->n + p) * reps + r];
                snprintf(metric, sizeof metric, "ratio_to_%s", against[a]);
                bench_row(o, "seed_fastmm", "seed", layout_name[l], cs->c[c].name, rounds, metric,
                          bench_summarise(v, reps));
            }
        }
    free(v);
}

/* order[0..n) := a permutation of 0..n-1 drawn from *x (xorshift): the
 * contenders' order for one repetition, so that none always follows the
 * same one (what an allocator leaves behind can slow the next). */
static void bench_shuffle(int *order, int n, uint64_t *x)
{
    for (int k = 0; k < n; ++k)
        order[k] = k;
    for (int k = n - 1; k > 0; --k) {
        *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
        int at = (int)(*x % (uint64_t)(k + 1)), t = order[k];
        order[k] = order[at], order[at] = t;
    }
}

/* --- pool_latency: one timed allocation at a time -------------------------------- */

/* Issue 14's latency question: on a fresh allocator with no reserve, how
 * long does each single allocation (and its first write, which takes the
 * page fault if there is one) take?  200,000 allocations of 100 B, and of
 * sizes drawn uniformly from 16 B to 4 KiB (one fixed sequence for every
 * contender), each run on a new pool, or on a malloc that gave its free
 * memory back first (bench_dl_trim): freeing its blocks alone left glibc,
 * tcmalloc and mimalloc their last run's pages, faulted already, so their
 * runs after the first measured a warm heap against a new pool (glibc's
 * median mixed-size call 0.3 us instead of a fault's 1.5, mimalloc's
 * 100 B p99.9 0.6 us instead of 4.7; docs/pool.md).  khl_pool is a
 * default pool, which faults its chunks' pages ahead of its bump pointer
 * or leaves them to first writes as this machine's costs say
 * (pages_ahead: 1 for ahead); khl_pool_ahead always faults them a step at
 * a time ahead (lazy_pages = KHL_POOL_PAGES_AHEAD);
 * khl_pool_lazy has lazy_pages = 1, each page faulted by its first write;
 * khl_pool_reserved reserved the 100 B blocks first (untimed); khl_pool_ts
 * is a default thread-safe pool, called from this one thread, which takes
 * a chunk's whole never-used run.
 * Rows (workload pool_latency, table pool, n = calls): p50_ns, p99_ns,
 * p999_ns, max_ns, calls_over_100us, and for the pools chunk_take_ns, the
 * median time of the calls that took a chunk from the system, system_bytes,
 * what the pool took from the system for the run (the pages some call had
 * to fault), pages_ahead, and p999_over_glibc and max_over_glibc, the pool's p99.9 and
 * maximum over glibc's in the same repetition.
 * Median, min and max over runs; contenders interleaved run by run, in a
 * shuffled order each run. */

enum { LAT_LAYOUTS = 2, LAT_MAX = 9 };
static const char *const lat_layout[LAT_LAYOUTS] = {"100B", "16B-4KiB"};
enum lat_pool { LAT_MALLOC, LAT_POOL, LAT_POOL_AHEAD, LAT_POOL_LAZY, LAT_POOL_RESERVED, LAT_POOL_TS };
enum { LAT_P50, LAT_P99, LAT_P999, LAT_MAXNS, LAT_OVER100, LAT_CHUNK, LAT_SYSTEM, LAT_AHEAD, LAT_METRICS };
static const char *const lat_metric[LAT_METRICS] = {"p50_ns", "p99_ns", "p999_ns", "max_ns",
                                                     "calls_over_100us", "chunk_take_ns", "system_bytes",
                                                     "pages_ahead"};

typedef struct lat_rival {
    const char *name;
    const libc_like_t *libc;  /* LAT_MALLOC */
    enum lat_pool kind;
} lat_rival_t;

typedef struct lat_work {
    long count;
    size_t *size[LAT_LAYOUTS];
    uint32_t *ns, *chunk_ns;
    void **ptr;
} lat_work_t;

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static double quantile(const uint32_t *sorted, long n, double q)
{
    return n ? sorted[(long)((double)(n - 1) * q)] : NAN;
}

/* One run of rival r on layout l; fills m[LAT_METRICS].  -1 on failure. */
static int lat_run(const lat_rival_t *r, int l, lat_work_t *w, double *m)
{
    khl_pool_t *p = NULL;
    khl_pool_stats_t st;
    size_t chunks = 0;
    long taken = 0, over = 0;
    if (r->kind != LAT_MALLOC) {
        khl_pool_options_t opt;
        memset(&opt, 0, sizeof opt);
        opt.lazy_pages = r->kind == LAT_POOL_LAZY ? 1 : r->kind == LAT_POOL_AHEAD ? KHL_POOL_PAGES_AHEAD : 0;
        opt.thread_safe = r->kind == LAT_POOL_TS;
        if (!(p = khl_pool_new(&opt)) ||
            (r->kind == LAT_POOL_RESERVED && khl_pool_reserve(p, 100, (size_t)w->count) != 0)) {
            khl_pool_destroy(p);
            return -1;
        }
        khl_pool_stats(p, &st);
        chunks = st.chunks;
    } else if (r->libc->trim)
        r->libc->trim();   /* fresh pages, as a new pool's: not the last run's */
    for (long i = 0; i < w->count; ++i) {
        size_t n = w->size[l][i];
        uint64_t t0 = bench_now_ns();
        void *q = p ? opaque_alloc(p, n) : r->libc->malloc(n);
        if (q)
            *(volatile char *)q = 1;
        uint64_t d = bench_now_ns() - t0;
        w->ptr[i] = q;
        w->ns[i] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
        over += d > 100000;
        if (!q) {
            w->count = i;   /* free what was allocated, then fail */
            break;
        }
        if (p) {
            khl_pool_stats(p, &st);
            if (st.chunks != chunks)
                w->chunk_ns[taken++] = w->ns[i];
            chunks = st.chunks;
        }
    }
    int ok = !p || khl_pool_check(p) == 0;
    m[LAT_SYSTEM] = m[LAT_AHEAD] = NAN;
    if (p) {
        khl_pool_stats(p, &st);
        m[LAT_SYSTEM] = (double)st.system_bytes;
        m[LAT_AHEAD] = st.pages_ahead;
        khl_pool_destroy(p);
    }
    else
        for (long i = 0; i < w->count; ++i)
            r->libc->free(w->ptr[i]);
    qsort(w->ns, (size_t)w->count, sizeof *w->ns, cmp_u32);
    qsort(w->chunk_ns, (size_t)taken, sizeof *w->chunk_ns, cmp_u32);
    m[LAT_P50] = quantile(w->ns, w->count, 0.5);
    m[LAT_P99] = quantile(w->ns, w->count, 0.99);
    m[LAT_P999] = quantile(w->ns, w->count, 0.999);
    m[LAT_MAXNS] = quantile(w->ns, w->count, 1.0);
    m[LAT_OVER100] = (double)over;
    m[LAT_CHUNK] = quantile(w->chunk_ns, taken, 0.5);
    return ok ? 0 : -1;
}

static int run_latency(const bench_opts_t *o, const contenders_t *cs)
{
    lat_rival_t rv[LAT_MAX];
    int n = 0, runs = o->reps < 3 ? 3 : o->reps, rc = 0;
    for (int i = 0; i < cs->n; ++i)
        if (cs->c[i].run[0] == fm_libc_like_published)
            rv[n++] = (lat_rival_t){cs->c[i].name, cs->c[i].ctx, LAT_MALLOC};
    rv[n++] = (lat_rival_t){"khl_pool", NULL, LAT_POOL};
    rv[n++] = (lat_rival_t){"khl_pool_ahead", NULL, LAT_POOL_AHEAD};
    rv[n++] = (lat_rival_t){"khl_pool_lazy", NULL, LAT_POOL_LAZY};
    rv[n++] = (lat_rival_t){"khl_pool_reserved", NULL, LAT_POOL_RESERVED};
    rv[n++] = (lat_rival_t){"khl_pool_ts", NULL, LAT_POOL_TS};
    long count = o->quick ? 20000 : 200000;
    lat_work_t w = {count, {NULL, NULL}, NULL, NULL, NULL};
    double *m = malloc((size_t)(LAT_LAYOUTS * n * runs * LAT_METRICS) * sizeof *m), v[64];
    w.size[0] = malloc((size_t)count * sizeof(size_t));
    w.size[1] = malloc((size_t)count * sizeof(size_t));
    w.ns = malloc((size_t)count * sizeof *w.ns);
    w.chunk_ns = malloc((size_t)count * sizeof *w.chunk_ns);
    w.ptr = malloc((size_t)count * sizeof *w.ptr);
    if (!m || !w.size[0] || !w.size[1] || !w.ns || !w.chunk_ns || !w.ptr || runs > 64)
        rc = -1;
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (long i = 0; rc == 0 && i < count; ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        w.size[0][i] = 100;
        w.size[1][i] = 16 + (size_t)(x % (4096 - 16 + 1));
    }
    /* Each run in an order of its own (a seeded shuffle), not a rotation:
     * rotated, every contender always followed the same one, and the one
     * after mimalloc with mixed sizes had its p99.9 at 2-5x glibc's in 5 of
     * 9 runs where the same pool later in the order stayed at 0.3-0.9x. */
    int order[LAT_LAYOUTS * LAT_MAX];
    for (int r = 0, step = 0; rc == 0 && r < runs; ++r) {
        bench_shuffle(order, LAT_LAYOUTS * n, &x);
        for (int k = 0; rc == 0 && k < LAT_LAYOUTS * n; ++k, ++step) {
            int j = order[k], l = j / n, c = j % n;
            if (rv[c].kind == LAT_POOL_RESERVED && l != 0)
                continue;   /* a reserve is for one size class */
            bench_progress("pool_latency", step, runs * LAT_LAYOUTS * n);
            w.count = count;
            rc = lat_run(&rv[c], l, &w, &m[((l * n + c) * runs + r) * LAT_METRICS]);
        }
    }
    for (int l = 0; rc == 0 && l < LAT_LAYOUTS; ++l)
        for (int c = 0; c < n; ++c)
            for (int k = 0; k < LAT_METRICS; ++k) {
                if ((rv[c].kind == LAT_POOL_RESERVED && l != 0) ||
                    ((k == LAT_CHUNK || k == LAT_SYSTEM || k == LAT_AHEAD) && rv[c].kind == LAT_MALLOC))
                    continue;
                int got = 0;
                for (int r = 0; r < runs; ++r)
                    if (!isnan(v[got] = m[((l * n + c) * runs + r) * LAT_METRICS + k]))
                        got++;
                if (got)
                    bench_row(o, "pool_latency", "pool", lat_layout[l], rv[c].name, count, lat_metric[k],
                              bench_summarise(v, got));
            }
    /* Issue 21's target: the pool's tail against glibc's, run by run (the
     * two ran interleaved in the same process), so that the machine's load
     * at one moment weighs on both sides of each ratio. */
    for (int g = 0; rc == 0 && g < n; ++g) {
        if (strcmp(rv[g].name, "glibc"))
            continue;
        for (int l = 0; l < LAT_LAYOUTS; ++l)
            for (int c = 0; c < n; ++c) {
                static const int ratio_of[2] = {LAT_P999, LAT_MAXNS};
                static const char *const ratio_name[2] = {"p999_over_glibc", "max_over_glibc"};
                if (rv[c].kind == LAT_MALLOC || (rv[c].kind == LAT_POOL_RESERVED && l != 0))
                    continue;
                for (int k = 0; k < 2; ++k) {
                    int got = 0;
                    for (int r = 0; r < runs; ++r) {
                        double mine = m[((l * n + c) * runs + r) * LAT_METRICS + ratio_of[k]];
                        double theirs = m[((l * n + g) * runs + r) * LAT_METRICS + ratio_of[k]];
                        if (theirs > 0 && !isnan(mine))
                            v[got++] = mine / theirs;
                    }
                    if (got)
                        bench_row(o, "pool_latency", "pool", lat_layout[l], rv[c].name, count, ratio_name[k],
                                  bench_summarise(v, got));
                }
            }
    }
    free(m), free(w.size[0]), free(w.size[1]), free(w.ns), free(w.chunk_ns), free(w.ptr);
    return rc;
}

/* --- pool_threads: threads sharing one allocator ---------------------------------
 * Issue 14's third question: T threads (1, 2, 4) each run the loop at once
 * on one allocator.  Layouts: "10000x100B+write", each thread allocating
 * and freeing its own blocks (post 003's multithread case); "handoff", each
 * thread allocating 10,000 blocks, then, after a barrier, freeing the
 * 10,000 its neighbour allocated (every free a remote one), then a barrier
 * again.  Contenders: the four mallocs; khl_pool_ts, one thread-safe pool
 * shared by every thread, called through pointers like the khl_pool row of
 * seed_fastmm; khl_pool_ts_header, the same through khl_pool_inline.h (the
 * loop only: its calls are inline in fastmm_direct.c's loop);
 * khl_pool_per_thread, a plain pool per thread (the loop only: a plain pool
 * is never freed into by another thread).  Runs last: once a
 * thread has started, glibc no longer elides its atomics.  Rows (workload
 * pool_threads, n = threads): seconds (wall time of the whole run),
 * ratio_to_khl_pool_ts and ratio_to_khl_pool_ts_header (paired by
 * repetition) and ratio_to_one_thread: the
 * wall time over the same contender's one-thread run of that repetition
 * scaled by T / min(T, cores), 1.00 when threads cost each other nothing. */

enum { THR_MAX = 4, THR_COUNTS = 3, THR_LAYOUTS = 2, THR_RIVALS = 7 };
static const int thr_count[THR_COUNTS] = {1, 2, 4};
static const char *const thr_layout[THR_LAYOUTS] = {"10000x100B+write", "handoff"};

typedef struct thr_rival {
    const char *name;
    fastmm_fn loop;                       /* the write loop, as seed_fastmm runs it */
    void *(*alloc)(void *ctx, size_t n);  /* the same calls, for handoff */
    void (*free)(void *ctx, void *ptr, size_t n);
    void *ctx[THR_MAX];                   /* thread t's context */
    pool_called_t own[THR_MAX];           /* khl_pool_per_thread's pools */
    khl_pool_t *pool;                     /* khl_pool_ts's */
    int remote_frees;                     /* may run handoff */
} thr_rival_t;

typedef struct thr_run {
    const thr_rival_t *rv;
    int layout, threads, rounds;
    void **ptr[THR_MAX];
    pthread_barrier_t bar;
} thr_run_t;

typedef struct thr_job {
    thr_run_t *run;
    int t, rc;
} thr_job_t;

/* Handoff: a failed allocation leaves a NULL behind and the thread goes on
 * to the barriers, so that no thread waits for it forever. */
static int thr_handoff(thr_run_t *x, int t)
{
    const thr_rival_t *rv = x->rv;
    void **mine = x->ptr[t], **theirs = x->ptr[(t + 1) % x->threads];
    int rc = 0;
    for (int r = 0; r < x->rounds; ++r) {
        for (int i = 0; i < FASTMM_N; ++i) {
            void *q = rv->alloc(rv->ctx[t], FASTMM_SIZE);
            if (q)
                *(volatile char *)q = (char)i;
            else
                rc = -1;
            mine[i] = q;
        }
        pthread_barrier_wait(&x->bar);
        for (int i = 0; i < FASTMM_N; ++i)
            if (theirs[i])
                rv->free(rv->ctx[(t + 1) % x->threads], theirs[i], FASTMM_SIZE);
        pthread_barrier_wait(&x->bar);
    }
    return rc;
}

static void *thr_main(void *arg)
{
    thr_job_t *j = arg;
    thr_run_t *x = j->run;
    j->rc = x->layout == 0 ? x->rv->loop(x->rv->ctx[j->t], x->ptr[j->t], x->rounds) : thr_handoff(x, j->t);
    return NULL;
}

/* Wall seconds of one run, < 0 on failure.  The threads are started for
 * the run and joined in it, so their exits (a pool's caches handed back,
 * the mallocs' thread heaps) are part of what is timed. */
static double thr_once(thr_run_t *x)
{
    pthread_t tid[THR_MAX];
    thr_job_t job[THR_MAX];
    int started = 0, rc = 0;
    if (pthread_barrier_init(&x->bar, NULL, (unsigned)x->threads) != 0)
        return -1;
    uint64_t t0 = bench_now_ns();
    for (; started < x->threads; ++started) {
        job[started] = (thr_job_t){x, started, 0};
        if (pthread_create(&tid[started], NULL, thr_main, &job[started]) != 0)
            break;
    }
    if (started < x->threads) {
        /* Threads already waiting at the barrier would never leave it. */
        fprintf(stderr, "fastmm: pool_threads: cannot start %d threads\n", x->threads);
        exit(1);
    }
    for (int i = 0; i < started; ++i) {
        pthread_join(tid[i], NULL);
        rc |= job[i].rc;
    }
    double s = (double)(bench_now_ns() - t0) / 1e9;
    pthread_barrier_destroy(&x->bar);
    return rc ? -1.0 : s;
}

static int thr_rivals(const contenders_t *cs, thr_rival_t *rv)
{
    int n = 0;
    for (int i = 0; i < cs->n; ++i)
        if (cs->c[i].run[0] == fm_libc_like_published) {
            rv[n] = (thr_rival_t){cs->c[i].name, fm_libc_like_write, libc_like_alloc, libc_like_free,
                                  {0}, {{0}}, NULL, 1};
            for (int t = 0; t < THR_MAX; ++t)
                rv[n].ctx[t] = cs->c[i].ctx;
            n++;
        }
    thr_rival_t *ts = &rv[n++], *tsh = &rv[n++], *own = &rv[n++];
    *ts = (thr_rival_t){"khl_pool_ts", fm_pool_called_write, pool_called_alloc, pool_called_free,
                        {0}, {{0}}, bench_pool_new(1), 1};
    *tsh = (thr_rival_t){"khl_pool_ts_header", fastmm_header_write, NULL, NULL, {0}, {{0}}, bench_pool_new(1), 0};
    *own = (thr_rival_t){"khl_pool_per_thread", fm_pool_called_write, pool_called_alloc, pool_called_free,
                         {0}, {{0}}, NULL, 0};
    if (!ts->pool || !tsh->pool)
        return -1;
    ts->own[0] = (pool_called_t){ts->pool, opaque_alloc, opaque_free, opaque_free_unsized};
    for (int t = 0; t < THR_MAX; ++t) {
        ts->ctx[t] = &ts->own[0];
        tsh->ctx[t] = tsh->pool;
        own->own[t] = (pool_called_t){bench_pool_new(0), opaque_alloc, opaque_free, opaque_free_unsized};
        own->ctx[t] = &own->own[t];
        if (!own->own[t].pool)
            return -1;
    }
    return n;
}

static void thr_close(thr_rival_t *rv, int n)
{
    for (int i = 0; i < n; ++i) {
        khl_pool_t *pools[THR_MAX + 1] = {rv[i].pool};
        for (int t = 0; t < THR_MAX; ++t)
            pools[t + 1] = rv[i].pool ? NULL : rv[i].own[t].pool;
        for (int k = 0; k <= THR_MAX; ++k) {
            khl_pool_stats_t st;
            if (!pools[k])
                continue;
            khl_pool_stats(pools[k], &st);
            if (st.in_use_bytes != 0 || st.allocs != st.frees || khl_pool_check(pools[k]) != 0)
                fprintf(stderr, "fastmm: pool_threads: %s: pool reports %zu bytes in use\n", rv[i].name,
                        st.in_use_bytes);
            khl_pool_destroy(pools[k]);
        }
    }
}

/* t[((layout * THR_COUNTS + count) * rivals + rival) * reps + rep]; NAN
 * where a contender does not run. */
static double *thr_cell(double *t, int n, int reps, int l, int k, int c)
{
    return &t[((l * THR_COUNTS + k) * n + c) * reps];
}

static void thr_emit(const bench_opts_t *o, const thr_rival_t *rv, int n, int reps, double *t)
{
    static const char *const against[] = {"khl_pool_ts", "khl_pool_ts_header"};
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    double v[64];
    int pools[2] = {-1, -1};
    for (int c = 0; c < n; ++c)
        for (int a = 0; a < 2; ++a)
            if (!strcmp(rv[c].name, against[a]))
                pools[a] = c;
    for (int l = 0; l < THR_LAYOUTS; ++l)
        for (int k = 0; k < THR_COUNTS; ++k)
            for (int c = 0; c < n; ++c) {
                const double *mine = thr_cell(t, n, reps, l, k, c), *one = thr_cell(t, n, reps, l, 0, c);
                int T = thr_count[k];
                double scale = (double)T / (double)(T < cores ? T : cores);
                if (isnan(mine[0]))
                    continue;
                memcpy(v, mine, (size_t)reps * sizeof *v);
                bench_row(o, "pool_threads", "seed", thr_layout[l], rv[c].name, T, "seconds",
                          bench_summarise(v, reps));
                for (int a = 0; a < 2; ++a) {
                    const double *pool = thr_cell(t, n, reps, l, k, pools[a]);
                    char metric[48];
                    if (pools[a] < 0 || c == pools[a] || isnan(pool[0]))
                        continue;
                    for (int r = 0; r < reps; ++r)
                        v[r] = mine[r] / pool[r];
                    snprintf(metric, sizeof metric, "ratio_to_%s", against[a]);
                    bench_row(o, "pool_threads", "seed", thr_layout[l], rv[c].name, T, metric,
                              bench_summarise(v, reps));
                }
                if (T > 1) {
                    for (int r = 0; r < reps; ++r)
                        v[r] = mine[r] / (one[r] * scale);
                    bench_row(o, "pool_threads", "seed", thr_layout[l], rv[c].name, T,
                              "ratio_to_one_thread", bench_summarise(v, reps));
                }
            }
}

/* Every (layout, threads, contender) once per repetition, starting one
 * further along each time, as seed_fastmm does. */
static int run_threads(const bench_opts_t *o, const contenders_t *cs)
{
    thr_rival_t rv[THR_RIVALS];
    /* Fewer repetitions than seed_fastmm: a run here is up to 4 threads of
     * 200 rounds, and make bench stays near eight minutes. */
    int n = thr_rivals(cs, rv), reps = o->reps + 2, rc = 0;
    int rounds = o->quick ? 10 : 200, combos = THR_LAYOUTS * THR_COUNTS * (n > 0 ? n : 0);
    thr_run_t x;
    double *t = n > 0 && reps <= 64 ? malloc((size_t)(combos * reps) * sizeof *t) : NULL;
    memset(&x, 0, sizeof x);
    for (int i = 0; i < THR_MAX; ++i)
        if (!(x.ptr[i] = malloc(FASTMM_N * sizeof(void *))))
            rc = -1;
    if (!t || rc)
        rc = -1;
    for (int r = -o->warmup, step = 0; rc == 0 && r < reps; ++r)
        for (int s = 0; rc == 0 && s < combos; ++s, ++step) {
            int j = (s + r + o->warmup) % combos, c = j % n, k = (j / n) % THR_COUNTS,
                l = j / (n * THR_COUNTS);
            double sec = NAN;
            if (l == 0 || rv[c].remote_frees) {
                x.rv = &rv[c], x.layout = l, x.threads = thr_count[k], x.rounds = rounds;
                if (step % combos == 0)
                    bench_progress("pool_threads", step, (o->warmup + reps) * combos);
                if ((sec = thr_once(&x)) < 0)
                    rc = -1;
            }
            if (r >= 0)
                thr_cell(t, n, reps, l, k, c)[r] = sec;
        }
    if (rc == 0)
        thr_emit(o, rv, n, reps, t);
    if (n > 0)
        thr_close(rv, n);
    for (int i = 0; i < THR_MAX; ++i)
        free(x.ptr[i]);
    free(t);
    return rc;
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    contenders_t cs;
    bench_dl_make_room_for_jemalloc(argv);
    bench_parse(argc, argv, &o,
                "seed_fastmm: the loop of post 003 (docs/posts.md) with glibc, tcmalloc, jemalloc, "
                "mimalloc, khl_pool (called and inlined) and a no-allocator floor in one "
                "process, interleaved.",
                NULL, 0);
    /* More repetitions than the other programs: the point is the paired
     * ratios, and each repetition is short. */
    int rounds = o.quick ? 20 : 1000, reps = 2 * o.reps + 1, rc = -1;
    double *t = NULL;
    if (open_all(&cs) == 0 && (t = malloc((size_t)(N_LAYOUTS * cs.n * reps) * sizeof *t)) != NULL &&
        (!bench_wanted(&o, "seed_fastmm") || measure_all(&o, &cs, rounds, reps, t) == 0)) {
        if (bench_wanted(&o, "seed_fastmm"))
            emit(&o, &cs, rounds, reps, t);
        rc = bench_wanted(&o, "pool_latency") ? run_latency(&o, &cs) : 0;
        if (rc == 0 && bench_wanted(&o, "pool_threads"))
            rc = run_threads(&o, &cs);   /* last: it starts threads */
    }
    if (rc != 0)
        fprintf(stderr, "%s: seed_fastmm, pool_latency or pool_threads failed (out of memory?)\n", argv[0]);
    close_all(&cs);
    free(t);
    if (o.out != stdout)
        fclose(o.out);
    return rc ? 1 : 0;
}
