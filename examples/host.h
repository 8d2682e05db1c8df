/* host.h: what the interpreter hosts (examples/mruby, examples/lua) share:
 * their flags, the pool each --alloc mode opens (with its reserve plan), and
 * the report at exit (--stats line, --csv rows, the pool's bytes left in
 * use).  Header-only: each host is one .c file with its interpreter's parts.
 *
 *   HOST [--alloc=libc|pool|pool-reserved] [--limit=BYTES] [--stats] [--csv=NAME] SCRIPT
 *
 * --limit=BYTES (pool modes only) caps the system memory the pool may hold
 * (khl_pool_options_t.limit_bytes): past it allocations fail, and the
 * interpreter raises its out-of-memory error, as in a sandbox.
 *
 * KHL_SEED in the environment (a decimal number) fixes khashlite's hash
 * seed (khl_seed): instruction counts then repeat from run to run, where a
 * random seed moves a script's by up to half a percent (a hot constant's
 * key placed in another group of its table).
 *
 * Exit status: 0; 1 when the script raised (out of memory included); 2 on a
 * usage or setup error; 3 when the pool still counted bytes in use after the
 * interpreter closed. */
#ifndef KHL_EXAMPLES_HOST_H
#define KHL_EXAMPLES_HOST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "khashlite/khashlite.h"
#include "khashlite/khl_pool.h"

typedef enum host_alloc { HOST_LIBC, HOST_POOL, HOST_POOL_RESERVED } host_alloc_t;

typedef struct host_reserve { size_t size, count; } host_reserve_t;

typedef struct host {
    const char *prog;        /* "khl-lua", for messages */
    const char *interp;      /* the CSV layout column: "lua", "mruby" */
    host_alloc_t mode;
    int stats;
    const char *csv;         /* --csv=NAME: the table column */
    const char *path;        /* the script */
    const char *scale_env;   /* KHL_SCALE, or NULL */
    long scale;              /* its value; 0 in the CSV means the script's default */
    khl_pool_t *pool;        /* NULL for libc */
    double t0;
    size_t limit;            /* --limit: the pool's limit_bytes, 0 for none */
} host_t;

/* A byte count: decimal digits only, more than 0; 0 when it is not one. */
static inline size_t host_bytes(const char *s)
{
    char *end;
    unsigned long long v;
    if (*s < '0' || *s > '9')
        return 0;
    v = strtoull(s, &end, 10);
    return *end || v > SIZE_MAX ? 0 : (size_t)v;
}

/* Parses argv.  Returns 0 to run, or an exit status (0 after --help). */
static inline int host_parse(host_t *h, int argc, char **argv, const char *usage)
{
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (strcmp(a, "--alloc=libc") == 0)
            h->mode = HOST_LIBC;
        else if (strcmp(a, "--alloc=pool") == 0)
            h->mode = HOST_POOL;
        else if (strcmp(a, "--alloc=pool-reserved") == 0)
            h->mode = HOST_POOL_RESERVED;
        else if (strcmp(a, "--stats") == 0)
            h->stats = 1;
        else if (strncmp(a, "--csv=", 6) == 0 && a[6])
            h->csv = a + 6;
        else if (strncmp(a, "--limit=", 8) == 0 && host_bytes(a + 8))
            h->limit = host_bytes(a + 8);
        else if (strcmp(a, "--help") == 0) {
            fputs(usage, stdout);
            return -1;
        } else if (a[0] == '-' || h->path) {
            fputs(usage, stderr);
            return 2;
        } else
            h->path = a;
    }
    if (h->path == NULL) {
        fputs(usage, stderr);
        return 2;
    }
    if (h->limit && h->mode == HOST_LIBC) {
        fprintf(stderr, "%s: --limit needs --alloc=pool or --alloc=pool-reserved\n", h->prog);
        return 2;
    }
    h->scale_env = getenv("KHL_SCALE");
    h->scale = h->scale_env ? strtol(h->scale_env, NULL, 10) : 0;
    if (getenv("KHL_SEED"))
        khl_seed(strtoull(getenv("KHL_SEED"), NULL, 10));
    return 0;
}

static inline double host_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Starts the clock and, for the pool modes, opens the pool (reserving
 * `plan` for pool-reserved).  -1 with a message on failure. */
static inline int host_open(host_t *h, const host_reserve_t *plan, size_t n_plan)
{
    h->t0 = host_now();
    if (h->mode == HOST_LIBC)
        return 0;
    khl_pool_options_t opt;
    memset(&opt, 0, sizeof opt);
    opt.limit_bytes = h->limit;
    h->pool = khl_pool_new(&opt);
    if (h->pool == NULL) {
        fprintf(stderr, "%s: cannot create the pool\n", h->prog);
        return -1;
    }
    for (size_t i = 0; h->mode == HOST_POOL_RESERVED && i < n_plan; ++i)
        if (khl_pool_reserve(h->pool, plan[i].size, plan[i].count) != 0) {
            fprintf(stderr, "%s: cannot reserve pool blocks\n", h->prog);
            khl_pool_destroy(h->pool);
            h->pool = NULL;
            return -1;
        }
    return 0;
}

/* The malloc behind "libc": bench/scripts/interp.sh preloads the others. */
static inline const char *host_libc_name(void)
{
    const char *pre = getenv("LD_PRELOAD");
    static const char *const names[] = {"tcmalloc", "jemalloc", "mimalloc"};
    for (size_t i = 0; pre && i < sizeof names / sizeof names[0]; ++i)
        if (strstr(pre, names[i]))
            return names[i];
    return "glibc";
}

static inline void host_csv_row(const host_t *h, const char *alloc, const char *metric, double v)
{
    printf("interp,%s,%s,%s,%ld,%s,%.10g,1,%.10g,%.10g,%.10g\n", h->csv, h->interp, alloc, h->scale,
           metric, v, v, v, v);
}

/* After the interpreter closed: releases the pool, reports, and returns the
 * exit status (3 when the pool still held bytes, else `status`). */
static inline int host_finish(host_t *h, int status)
{
    double secs = host_now() - h->t0;
    khl_pool_stats_t ps;
    struct rusage ru;
    int have_ru = getrusage(RUSAGE_SELF, &ru) == 0;
    long rss = have_ru ? ru.ru_maxrss : -1;   /* Linux: KiB */
    /* The process's CPU time, user and system: unlike `secs`, it leaves out
     * the time the process waited for a CPU on a loaded machine. */
    double cpu = have_ru ? (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                               (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6
                         : -1.0;
    memset(&ps, 0, sizeof ps);
    fflush(stdout);
    if (h->pool) {
        khl_pool_stats(h->pool, &ps);
        khl_pool_destroy(h->pool);
        h->pool = NULL;
        if (ps.in_use_bytes != 0) {
            fprintf(stderr, "%s: %zu bytes still in use in the pool after the interpreter closed\n",
                    h->prog, ps.in_use_bytes);
            if (status == 0)
                status = 3;
        }
    }
    const char *alloc = h->mode == HOST_LIBC ? host_libc_name()
                        : h->mode == HOST_POOL ? "khl_pool" : "khl_pool_reserved";
    if (h->stats)
        fprintf(stderr,
                "[%s] alloc=%s seconds=%.3f cpu_seconds=%.4f peak_rss_kb=%ld pool_in_use_bytes=%zu "
                "pool_peak_bytes=%zu pool_system_bytes=%zu pool_allocs=%llu pool_frees=%llu\n",
                h->prog, alloc, secs, cpu, rss, ps.in_use_bytes, ps.peak_bytes, ps.system_bytes,
                (unsigned long long)ps.allocs, (unsigned long long)ps.frees);
    if (h->csv && status == 0) {
        host_csv_row(h, alloc, "seconds", secs);
        host_csv_row(h, alloc, "peak_rss_kb", (double)rss);
        if (h->mode != HOST_LIBC) {
            host_csv_row(h, alloc, "pool_peak_bytes", (double)ps.peak_bytes);
            host_csv_row(h, alloc, "pool_allocs", (double)ps.allocs);
        }
    }
    return status;
}

#endif
