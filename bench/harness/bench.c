/* bench.c: the shared harness (see bench.h). */
#define _GNU_SOURCE
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static uint64_t start_ns;

uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void usage(const char *prog, const char *what, const char *extra, int takes_sizes)
{
    printf("usage: %s [flags]\n%s\n\n"
           "  --reps=N        measured repetitions, median reported (default 5)\n"
           "  --warmup=N      unmeasured repetitions first (default 1)\n"
           "  --quick         smallest sizes, for smoke tests\n"
           "  --full          the big sizes (make bench-full)\n"
           "  --alloc=A       libc (the malloc this binary links: %s) or pool (khl_pool)\n"
           "  --only=NAME     only workloads whose name contains NAME\n"
           "  --out=FILE      append CSV rows to FILE instead of stdout\n"
           "  --trace-dir=DIR per-call traces, for programs that record them\n"
           "%s%s%s",
           prog, what, BENCH_MALLOC,
           takes_sizes ? "  --sizes=A,B,..  the sizes to run instead of the program's defaults\n" : "",
           extra ? extra : "", extra ? "\n" : "");
}

void bench_parse(int argc, char **argv, bench_opts_t *o, const char *what, const char *extra,
                 int takes_sizes)
{
    memset(o, 0, sizeof *o);
    o->reps = 5;
    o->warmup = 1;
    o->alloc = "libc";
    o->out = stdout;
    start_ns = bench_now_ns();
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(argv[0], what, extra, takes_sizes);
            exit(0);
        } else if (!strncmp(a, "--reps=", 7)) {
            o->reps = atoi(a + 7);
        } else if (!strncmp(a, "--warmup=", 9)) {
            o->warmup = atoi(a + 9);
        } else if (!strcmp(a, "--quick")) {
            o->quick = 1;
        } else if (!strcmp(a, "--full")) {
            o->full = 1;
        } else if (!strncmp(a, "--alloc=", 8)) {
            o->alloc = a + 8;
            if (strcmp(o->alloc, "libc") && strcmp(o->alloc, "pool")) {
                fprintf(stderr, "%s: --alloc takes libc or pool\n", argv[0]);
                exit(2);
            }
        } else if (!strncmp(a, "--only=", 7)) {
            o->only = a + 7;
        } else if (!strncmp(a, "--sizes=", 8) && takes_sizes) {
            char *end;
            const char *p = a + 8;
            o->n_sizes = 0;
            do {
                long v = strtol(p, &end, 10);
                if (end == p || v < 0 || o->n_sizes == 16 || (*end && *end != ',')) {
                    fprintf(stderr, "%s: --sizes takes up to 16 comma-separated counts >= 0\n", argv[0]);
                    exit(2);
                }
                o->sizes[o->n_sizes++] = v;
                p = end + (*end == ',');
            } while (*end);
        } else if (!strncmp(a, "--trace-dir=", 12) && a[12]) {
            o->trace_dir = a + 12;
        } else if (!strncmp(a, "--out=", 6)) {
            o->out = fopen(a + 6, "a");
            if (!o->out) {
                perror(a + 6);
                exit(2);
            }
        } else {
            fprintf(stderr, "%s: unknown flag %s (see --help)\n", argv[0], a);
            exit(2);
        }
    }
    if (o->reps < 1 || o->warmup < 0) {
        fprintf(stderr, "%s: --reps must be >= 1 and --warmup >= 0\n", argv[0]);
        exit(2);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

bench_stat_t bench_summarise(double *v, int n)
{
    bench_stat_t s = {0, 0, 0, n};
    if (n <= 0)
        return s;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    s.min = v[0];
    s.max = v[n - 1];
    s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return s;
}

const char *bench_allocator(const bench_opts_t *o)
{
    return strcmp(o->alloc, "pool") ? BENCH_MALLOC : "khl_pool";
}

void bench_row(const bench_opts_t *o, const char *workload, const char *table, const char *layout,
               const char *allocator, long n, const char *metric, bench_stat_t s)
{
    fprintf(o->out, "%s,%s,%s,%s,%ld,%s,%.6g,%d,%.6g,%.6g,%.6g\n", workload, table, layout,
            allocator, n, metric, s.median, s.n, s.min, s.median, s.max);
    fflush(o->out);
}

void bench_value(const bench_opts_t *o, const char *workload, const char *table, const char *layout,
                 const char *allocator, long n, const char *metric, double v)
{
    bench_stat_t s = {v, v, v, 1};
    bench_row(o, workload, table, layout, allocator, n, metric, s);
}

void bench_progress(const char *name, int i, int total)
{
    fprintf(stderr, "[%s] %d/%d, %.1f s\n", name, i, total,
            (double)(bench_now_ns() - start_ns) / 1e9);
}

int bench_wanted(const bench_opts_t *o, const char *workload)
{
    return !o->only || strstr(workload, o->only) != NULL;
}

static size_t statm_field(int field)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long v[2] = {0, 0};
    if (!f)
        return 0;
    if (fscanf(f, "%lu %lu", &v[0], &v[1]) != 2)
        v[1] = 0;
    fclose(f);
    return (size_t)v[field] * 4096u;
}

size_t bench_rss_bytes(void)
{
    return statm_field(1);
}

size_t bench_peak_rss_bytes(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (size_t)ru.ru_maxrss * 1024u;
}

long bench_minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}
