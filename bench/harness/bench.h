/* bench.h: the harness every benchmark binary shares: a monotonic clock,
 * repetitions summarised as median/min/max, one CSV row per measurement,
 * progress on stderr, the common flags, and the allocator the binary was
 * linked with.  Each binary is built once per malloc (glibc, tcmalloc,
 * jemalloc, mimalloc: BENCH_MALLOC names it) and can also run its tables on
 * khl_pool, so a run compares allocators side by side.
 *
 * CSV columns (bench/results/latest/results.csv):
 *   workload,table,layout,allocator,n,metric,value,repetitions,min,median,max
 * value is the median; timings are only ever compared as ratios of rows
 * measured in the same `make bench` run. */
#ifndef KHL_BENCH_H
#define KHL_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The malloc this binary is linked with ("glibc", "tcmalloc", ...), defined
 * by the one object that differs between a program's binaries. */
extern const char *const bench_malloc_name;
#define BENCH_MALLOC bench_malloc_name

typedef struct bench_opts {
    int reps;                /* measured repetitions (median of these) */
    int warmup;              /* unmeasured repetitions first */
    int quick;               /* smallest sizes: CI's smoke run */
    int full;                /* the big sizes of `make bench-full` */
    const char *alloc;       /* "libc" (the linked malloc) or "pool" */
    const char *only;        /* run only the workloads whose name contains this */
    const char *trace_dir;   /* where per-call traces go (programs that record them) */
    long sizes[16];          /* --sizes=a,b,c: replaces a program's default sizes */
    int n_sizes;             /* 0: the program's defaults */
    FILE *out;               /* CSV rows go here (stdout by default) */
} bench_opts_t;

typedef struct bench_stat {
    double min, median, max;
    int n;
} bench_stat_t;

/* Parses the flags every program shares; prints usage and exits on --help,
 * and exits with status 2 on a flag it does not know, or on --sizes when
 * the program has no sizes to set (takes_sizes 0).  `extra` (may be NULL)
 * describes the program's own sizes and tables for --help. */
void bench_parse(int argc, char **argv, bench_opts_t *o, const char *what, const char *extra,
                 int takes_sizes);

uint64_t bench_now_ns(void);
bench_stat_t bench_summarise(double *v, int n);   /* sorts v */
/* The allocator column: BENCH_MALLOC, or "khl_pool" when running on the pool. */
const char *bench_allocator(const bench_opts_t *o);
void bench_row(const bench_opts_t *o, const char *workload, const char *table, const char *layout,
               const char *allocator, long n, const char *metric, bench_stat_t s);
/* A single value (a count, not a timing): min = median = max. */
void bench_value(const bench_opts_t *o, const char *workload, const char *table, const char *layout,
                 const char *allocator, long n, const char *metric, double v);
/* "[name] step i/total, 12.3 s" on stderr. */
void bench_progress(const char *name, int i, int total);
int bench_wanted(const bench_opts_t *o, const char *workload);

/* Process resources: resident set (current and peak, bytes) and minor faults. */
size_t bench_rss_bytes(void);
size_t bench_peak_rss_bytes(void);
long bench_minor_faults(void);

/* Keeps the compiler from deleting a computed result. */
#define BENCH_KEEP(x) __asm__ volatile("" : : "r"(x) : "memory")

#endif
