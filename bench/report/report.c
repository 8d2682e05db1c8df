/* report.c: turns one run's results.csv into REPORT.md, summary.csv and
 * gnuplot SVGs.
 * Usage: khl-bench-report DIR   (reads DIR/results.csv, or DIR/summary.csv
 *                               where there is no results.csv, and
 *                               DIR/machine.txt; writes into DIR)
 * Every ratio it prints compares rows of the same run.  Workloads it has no
 * dedicated section for are still listed in full, so nothing measured is
 * left out of the report.
 *
 * summary.csv is what `make bench` commits beside REPORT.md: every row of
 * results.csv, its numbers to 4 significant digits (shorten), in one block per
 * workload (a header line, a line per table, layout, allocator and n, a
 * blank line after the block).  Its columns: workload, table, layout,
 * allocator, n, reps (the most repetitions of the line's metrics), then per
 * metric its median, and METRIC_min and METRIC_max where the workload's
 * repetitions of it differ anywhere (empty where they agree on that line).
 * REPORT.md's figures are the medians; this program reads summary.csv back
 * as it reads results.csv, and writes the same REPORT.md from either. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct row {
    char workload[48], table[40], layout[24], allocator[32], metric[48];
    long n;
    double value, min, median, max;
    int reps;
    int order; /* sorts a workload's metrics: the line in results.csv, the column in summary.csv */
    /* The numbers as the CSV spelled them, written back unchanged. */
    char s_min[24], s_median[24], s_max[24];
} row_t;

static row_t *rows;
static size_t n_rows;

static row_t *new_row(void)
{
    static size_t cap;
    if (n_rows == cap) {
        cap = cap ? cap * 2 : 1024;
        rows = realloc(rows, cap * sizeof *rows);
        if (!rows)
            exit(1);
    }
    return memset(&rows[n_rows++], 0, sizeof *rows);
}

/* Splits line at commas in place (the newline dropped): at most max fields. */
static int split(char *line, char **f, int max)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = 0;
    for (char *p = line; n < max;) {
        f[n++] = p;
        p = strchr(p, ',');
        if (!p)
            break;
        *p++ = 0;
    }
    return n;
}

static void copy(char *to, size_t size, const char *from, const char *path)
{
    if (strlen(from) >= size) {
        fprintf(stderr, "%s: field too long: %s\n", path, from);
        exit(1);
    }
    strcpy(to, from);
}

/* A measurement as summary.csv keeps it: to 4 significant digits unless
 * written as an integer (instruction and byte counts stay exact).  The
 * timings move by more than that from run to run, and the 6 that results.csv
 * holds made summary.csv a third larger.  Rounded as it is read, so that
 * REPORT.md is the same from either file. */
static void shorten(char *s, size_t size)
{
    char *end;
    double v;
    if (!strpbrk(s, ".eE"))
        return;
    v = strtod(s, &end);
    if (end != s && !*end)
        snprintf(s, size, "%.4g", v);
}

/* One block of summary.csv, its header line in head. */
enum { MAX_COLS = 128 };
static void load_block(FILE *f, char *head, const char *path)
{
    static int block;
    char *h[MAX_COLS], line[16384];
    int nh = split(head, h, MAX_COLS);
    if (nh < 7 || strcmp(h[5], "reps")) {
        fprintf(stderr, "%s: bad block header\n", path);
        exit(1);
    }
    while (fgets(line, sizeof line, f) && line[0] != '\n' && line[0] != '\r') {
        char *c[MAX_COLS];
        if (split(line, c, MAX_COLS) != nh) {
            fprintf(stderr, "%s: a line of block %s has not %d fields\n", path, c[0], nh);
            exit(1);
        }
        for (int i = 6, ranged; i < nh; i += 1 + 2 * ranged) {
            /* METRIC_min and METRIC_max follow METRIC where the block has them. */
            size_t len = strlen(h[i]);
            ranged = i + 2 < nh && !strncmp(h[i + 1], h[i], len) && !strcmp(h[i + 1] + len, "_min") &&
                     !strncmp(h[i + 2], h[i], len) && !strcmp(h[i + 2] + len, "_max");
            if (!*c[i])
                continue;
            row_t *r = new_row();
            copy(r->workload, sizeof r->workload, c[0], path);
            copy(r->table, sizeof r->table, c[1], path);
            copy(r->layout, sizeof r->layout, c[2], path);
            copy(r->allocator, sizeof r->allocator, c[3], path);
            r->n = atol(c[4]);
            r->reps = atoi(c[5]);
            r->order = block * MAX_COLS + i;
            copy(r->metric, sizeof r->metric, h[i], path);
            copy(r->s_median, sizeof r->s_median, c[i], path);
            copy(r->s_min, sizeof r->s_min, ranged && *c[i + 1] ? c[i + 1] : c[i], path);
            copy(r->s_max, sizeof r->s_max, ranged && *c[i + 2] ? c[i + 2] : c[i], path);
            r->median = r->value = atof(r->s_median);
            r->min = atof(r->s_min);
            r->max = atof(r->s_max);
        }
    }
    ++block;
}

/* results.csv (one measurement per line), or summary.csv (blocks). */
static int load(const char *path)
{
    FILE *f = fopen(path, "r");
    static char line[16384];
    if (!f)
        return -1;
    if (!fgets(line, sizeof line, f)) {
        fprintf(stderr, "%s: empty\n", path);
        exit(1);
    }
    if (strncmp(line, "workload,table,layout,allocator,n,metric,", 41)) {
        do
            if (line[0] != '\n')
                load_block(f, line, path);
        while (fgets(line, sizeof line, f));
        fclose(f);
        return 0;
    }
    while (fgets(line, sizeof line, f)) {
        char *c[12], s_value[24];
        row_t *r;
        if (split(line, c, 12) != 11) {
            fprintf(stderr, "%s: bad row: %s\n", path, line);
            exit(1);
        }
        r = new_row();
        r->order = (int)n_rows;
        copy(r->workload, sizeof r->workload, c[0], path);
        copy(r->table, sizeof r->table, c[1], path);
        copy(r->layout, sizeof r->layout, c[2], path);
        copy(r->allocator, sizeof r->allocator, c[3], path);
        r->n = atol(c[4]);
        copy(r->metric, sizeof r->metric, c[5], path);
        copy(s_value, sizeof s_value, c[6], path);
        r->reps = atoi(c[7]);
        copy(r->s_min, sizeof r->s_min, c[8], path);
        copy(r->s_median, sizeof r->s_median, c[9], path);
        copy(r->s_max, sizeof r->s_max, c[10], path);
        shorten(s_value, sizeof s_value);
        shorten(r->s_min, sizeof r->s_min);
        shorten(r->s_median, sizeof r->s_median);
        shorten(r->s_max, sizeof r->s_max);
        r->value = atof(s_value);
        r->min = atof(r->s_min);
        r->median = atof(r->s_median);
        r->max = atof(r->s_max);
    }
    fclose(f);
    return 0;
}

/* The row matching every non-NULL field, or NULL. */
static const row_t *find(const char *w, const char *t, const char *l, const char *a, long n,
                         const char *m)
{
    for (size_t i = 0; i < n_rows; ++i) {
        const row_t *r = &rows[i];
        if ((!w || !strcmp(r->workload, w)) && (!t || !strcmp(r->table, t)) &&
            (!l || !strcmp(r->layout, l)) && (!a || !strcmp(r->allocator, a)) &&
            (n < 0 || r->n == n) && (!m || !strcmp(r->metric, m)))
            return r;
    }
    return NULL;
}

static double val(const char *w, const char *t, const char *l, const char *a, long n, const char *m)
{
    const row_t *r = find(w, t, l, a, n, m);
    return r ? r->median : NAN;
}

static void cell(FILE *o, double v, const char *fmt);

/* The extremes of a series that may have holes (NAN: not measured).  *most
 * (or *least) starts at NAN and takes v when v is a number beyond it: 1
 * then, so that the caller can note which row it came from. */
static int keep_most(double *most, double v)
{
    if (isnan(v) || !(isnan(*most) || v > *most))
        return 0;
    *most = v;
    return 1;
}

static int keep_least(double *least, double v)
{
    if (isnan(v) || !(isnan(*least) || v < *least))
        return 0;
    *least = v;
    return 1;
}

static const char *allocators[] = {"glibc", "tcmalloc", "jemalloc", "mimalloc", "khl_pool"};
#define N_ALLOC 5
static const long churn_n[] = {0, 1, 2, 4, 8, 16, 32, 64};
#define N_CHURN 8
/* seed_fastmm's layouts (bench/programs/fastmm.c). */
#define FASTMM_PUBLISHED "10000x100B"
#define FASTMM_WRITE "10000x100B+write"

static void ratio_cell(FILE *o, double num, double den)
{
    if (isnan(num) || isnan(den) || den <= 0)
        fprintf(o, " – |");
    else
        fprintf(o, " %.2f |", num / den);
}

static void target(FILE *o, const char *what, double got, double want, int at_least, const char *unit)
{
    if (isnan(got)) {
        fprintf(o, "| %s | not measured in this run | %s%.2f%s | – |\n", what, at_least ? "≥ " : "≤ ",
                want, unit);
        return;
    }
    int ok = at_least ? got >= want : got <= want, digits = 2;
    /* Enough digits that a miss by less than a hundredth does not read as
     * the target itself (1.004x against 1.00x). */
    while (digits < 4 && got != want &&
           floor(got * pow(10, digits) + 0.5) == floor(want * pow(10, digits) + 0.5))
        ++digits;
    fprintf(o, "| %s | %.*f%s | %s%.2f%s | %s |\n", what, digits, got, unit, at_least ? "≥ " : "≤ ", want, unit,
            ok ? "met" : "**missed**");
}

static void headline(FILE *o, const char *workload)
{
    fprintf(o, "\n### %s: ns per table lifecycle (create, put n, get n, destroy)\n\n", workload);
    fprintf(o, "Speed ratios are split/single: above 1 means the single block is faster. "
               "Allocator calls per lifecycle and bytes asked for (largest live total) are per layout "
               "single / split2 / split3.\n\n");
    fprintf(o, "| allocator | n | single ns | split2 ns | split3 ns | split2/single | split3/single | "
               "allocs | bytes asked |\n|---|---|---|---|---|---|---|---|---|\n");
    for (int a = 0; a < N_ALLOC; ++a) {
        for (int i = 0; i < N_CHURN; ++i) {
            long n = churn_n[i];
            double s1 = val(workload, "khashlite", "single", allocators[a], n, "ns_per_lifecycle");
            double s2 = val(workload, "khashlite", "split2", allocators[a], n, "ns_per_lifecycle");
            double s3 = val(workload, "khashlite", "split3", allocators[a], n, "ns_per_lifecycle");
            if (isnan(s1))
                continue;
            fprintf(o, "| %s | %ld | %.1f | %.1f | %.1f |", allocators[a], n, s1, s2, s3);
            ratio_cell(o, s2, s1);
            ratio_cell(o, s3, s1);
            fprintf(o, " %.0f / %.0f / %.0f | %.0f / %.0f / %.0f |\n",
                    val(workload, "khashlite", "single", allocators[a], n, "allocs_per_lifecycle"),
                    val(workload, "khashlite", "split2", allocators[a], n, "allocs_per_lifecycle"),
                    val(workload, "khashlite", "split3", allocators[a], n, "allocs_per_lifecycle"),
                    val(workload, "khashlite", "single", allocators[a], n, "bytes_asked_per_table"),
                    val(workload, "khashlite", "split2", allocators[a], n, "bytes_asked_per_table"),
                    val(workload, "khashlite", "split3", allocators[a], n, "bytes_asked_per_table"));
        }
    }
}

/* The other churn workloads in one table: split3 over single for every
 * allocator and n (their ns, allocations and bytes are in summary.csv, and
 * churn_int's table above shows what they are made of). */
static void churn_ratios(FILE *o)
{
    static const char *const workloads[] = {"churn_int_reserve", "churn_str", "churn_str_reserve"};
    const int n_workloads = (int)(sizeof workloads / sizeof workloads[0]);
    fprintf(o, "\nsplit3 ns / single ns (above 1: the single block is faster); each row's ns, "
               "allocations and bytes per layout are in summary.csv.\n\n| workload | allocator |");
    for (int i = 1; i < N_CHURN; ++i)
        fprintf(o, " n = %ld |", churn_n[i]);
    fprintf(o, "\n|---|---|");
    for (int i = 1; i < N_CHURN; ++i)
        fprintf(o, "---|");
    fputc('\n', o);
    for (int w = 0; w < n_workloads; ++w)
        for (int a = 0; a < N_ALLOC; ++a) {
            if (isnan(val(workloads[w], "khashlite", "single", allocators[a], churn_n[1], "ns_per_lifecycle")))
                continue;
            fprintf(o, "| %s | %s |", workloads[w], allocators[a]);
            for (int i = 1; i < N_CHURN; ++i)
                ratio_cell(o, val(workloads[w], "khashlite", "split3", allocators[a], churn_n[i], "ns_per_lifecycle"),
                           val(workloads[w], "khashlite", "single", allocators[a], churn_n[i], "ns_per_lifecycle"));
            fputc('\n', o);
        }
}

/* The object model (bench/programs/objmodel.c): its three tables side by
 * side, a row per allocator and ivar count. */
static void objmodel_table(FILE *o)
{
    static const char *const tables[3][2] = {{"khashlite", "single"}, {"khashlite", "split3"}, {"khash", "khash"}};
    static const char *const metrics[3] = {"ns_per_object", "allocs_per_object", "bytes_per_object"};
    static const long ivars[] = {0, 1, 3, 8};
    fprintf(o, "\n`objmodel`: ns, allocations and bytes asked per object (median [min, max] of ns in "
               "summary.csv), khashlite single / split3 / khash.\n\n| allocator | ivars | ns | allocs | bytes |\n"
               "|---|---|---|---|---|\n");
    for (int a = 0; a < N_ALLOC; ++a)
        for (size_t i = 0; i < sizeof ivars / sizeof ivars[0]; ++i) {
            if (isnan(val("objmodel", "khashlite", "single", allocators[a], ivars[i], metrics[0])))
                continue;
            fprintf(o, "| %s | %ld |", allocators[a], ivars[i]);
            for (int m = 0; m < 3; ++m)
                for (int t = 0; t < 3; ++t)
                    fprintf(o, "%s%.4g%s", t ? " / " : " ",
                            val("objmodel", tables[t][0], tables[t][1], allocators[a], ivars[i], metrics[m]),
                            t == 2 ? " |" : "");
            fputc('\n', o);
        }
}

static void no_gain(FILE *o)
{
    int any = 0;
    fprintf(o, "\n### Where merging does not help\n\n");
    for (int a = 0; a < N_ALLOC; ++a)
        for (int i = 0; i < N_CHURN; ++i) {
            double s1 = val("churn_int", "khashlite", "single", allocators[a], churn_n[i], "ns_per_lifecycle");
            double s2 = val("churn_int", "khashlite", "split2", allocators[a], churn_n[i], "ns_per_lifecycle");
            double s3 = val("churn_int", "khashlite", "split3", allocators[a], churn_n[i], "ns_per_lifecycle");
            if (isnan(s1))
                continue;
            if (s3 / s1 < 1.05 || s2 / s1 < 1.0) {
                fprintf(o, "- %s, n = %ld: split3/single %.2f, split2/single %.2f%s\n", allocators[a],
                        churn_n[i], s3 / s1, s2 / s1,
                        churn_n[i] == 0 ? " (an empty table allocates nothing in any layout)" : "");
                any = 1;
            }
        }
    if (!any)
        fprintf(o, "Every measured (allocator, n) with keys showed the single block at least 5%% faster "
                   "than split3 and no slower than split2.\n");
}

/* Index of the first row of rows[from..to) with workload w, table t, layout
 * l, allocator a, n and (m non-NULL) metric m; to when there is none. */
static size_t first_like(size_t from, size_t to, const row_t *k, const char *m)
{
    for (size_t i = from; i < to; ++i) {
        const row_t *r = &rows[i];
        if (!strcmp(r->workload, k->workload) && !strcmp(r->table, k->table) &&
            !strcmp(r->layout, k->layout) && !strcmp(r->allocator, k->allocator) && r->n == k->n &&
            (!m || !strcmp(r->metric, m)))
            return i;
    }
    return to;
}

/* Whether the repetitions of r differ (as the CSV spelled its numbers). */
static int spread(const row_t *r)
{
    return strcmp(r->s_min, r->s_median) || strcmp(r->s_max, r->s_median);
}

/* The metrics of workload wl (whose first row is rows[w]) in their order,
 * into metrics[0..max); ranged[m] set where some row of metric m has a
 * spread.  Returns their number. */
static int workload_metrics(size_t w, const char **metrics, int *ranged, int max)
{
    const char *wl = rows[w].workload;
    int nm = 0, order[max];
    for (size_t i = w; i < n_rows; ++i) {
        int m = 0;
        if (strcmp(rows[i].workload, wl))
            continue;
        while (m < nm && strcmp(metrics[m], rows[i].metric))
            ++m;
        if (m == nm) {
            if (nm == max) {
                fprintf(stderr, "workload %s has over %d metrics\n", wl, max);
                exit(1);
            }
            metrics[nm] = rows[i].metric;
            order[nm] = rows[i].order;
            ranged[nm++] = 0;
        }
        if (rows[i].order < order[m])
            order[m] = rows[i].order;
        ranged[m] |= spread(&rows[i]);
    }
    for (int m = 1; m < nm; ++m)
        for (int j = m; j > 0 && order[j] < order[j - 1]; --j) {
            const char *t = metrics[j];
            int to = order[j], tr = ranged[j];
            metrics[j] = metrics[j - 1], order[j] = order[j - 1], ranged[j] = ranged[j - 1];
            metrics[j - 1] = t, order[j - 1] = to, ranged[j - 1] = tr;
        }
    return nm;
}

/* The first row of its workload. */
static int first_of_workload(size_t w)
{
    for (size_t i = 0; i < w; ++i)
        if (!strcmp(rows[i].workload, rows[w].workload))
            return 0;
    return 1;
}

/* Everything of the workloads whose names start with workload_prefix, as
 * measured: a table per workload, a line per (table, layout, allocator, n)
 * and a column per metric.  A cell is the median, followed by [min, max]
 * where the repetitions differ (their number is in results.csv). */
static void dump(FILE *o, const char *workload_prefix)
{
    enum { MAX_METRICS = 32 };
    size_t plen = strlen(workload_prefix);
    for (size_t w = 0; w < n_rows; ++w) {
        const char *wl = rows[w].workload, *metrics[MAX_METRICS];
        int ranged[MAX_METRICS], nm;
        if (strncmp(wl, workload_prefix, plen) || !first_of_workload(w))
            continue;
        nm = workload_metrics(w, metrics, ranged, MAX_METRICS);
        fprintf(o, "\n`%s`:\n\n| table | layout | allocator | n |", wl);
        for (int m = 0; m < nm; ++m)
            fprintf(o, " %s |", metrics[m]);
        fprintf(o, "\n|---|---|---|---|");
        for (int m = 0; m < nm; ++m)
            fprintf(o, "---|");
        fputc('\n', o);
        for (size_t k = w; k < n_rows; ++k) {
            const row_t *key = &rows[k];
            if (strcmp(key->workload, wl) || first_like(w, k, key, NULL) != k)
                continue;
            fprintf(o, "| %s | %s | %s | %ld |", key->table, key->layout, key->allocator, key->n);
            for (int m = 0; m < nm; ++m) {
                size_t i = first_like(k, n_rows, key, metrics[m]);
                const row_t *r = i < n_rows ? &rows[i] : NULL;
                if (!r)
                    fprintf(o, " |");
                else if (r->min == r->max)
                    fprintf(o, " %.4g |", r->median);
                else
                    fprintf(o, " %.4g [%.4g, %.4g] |", r->median, r->min, r->max);
            }
            fputc('\n', o);
        }
    }
}

/* mruby 3.1 stock against mruby on khashlite (mruby/bench.sh): issue 20's
 * targets first (instructions, allocations and bytes), then every row. */
static const char *const mruby_scripts[] = {"bm_ao_render", "bm_fib",     "bm_so_lists",
                                            "bm_app_lc_fizzbuzz", "ao_render", "hash_churn",
                                            "strings", "object_churn"};
#define N_MRUBY_SCRIPTS (sizeof mruby_scripts / sizeof mruby_scripts[0])

static void mruby_section(FILE *o)
{
    static const long ks[] = {1, 3, 4, 8};
    char what[160], table[32];
    double worst = NAN;
    const char *worst_name = "";
    if (!find("mruby_run", NULL, NULL, NULL, -1, NULL)) {
        fprintf(o, "\n## mruby on khashlite\n\nNot measured in this run (`make mruby` first).\n");
        return;
    }
    fprintf(o, "\n## mruby on khashlite\n\nDebian's mruby 3.1 built from source: `stock`, and `khl` "
               "with its instance-variable tables and its method tables each in one khashlite "
               "block (mruby/README.md), on glibc "
               "and on khl_pool. Instructions are cachegrind's count of one run (deterministic; "
               "ratios: this build's count over stock's on glibc, below 1 is fewer). Allocator calls "
               "and bytes are counted through mruby's allocf (khl-mrb-probe); seconds are medians "
               "of interleaved runs; ratio_vs_stock is stock on glibc's CPU seconds over the build's "
               "in the same round, median (min-max) over the rounds.\n\n"
               "| target | measured | wanted | |\n|---|---|---|---|\n");
    /* Ratios of the counts themselves: the CSV's ratio_vs_stock has four
     * digits, and 1.0003 printed as 1 would read as a target met. */
    for (size_t i = 0; i < n_rows; ++i) {
        const row_t *r = &rows[i];
        double ratio;
        if (strcmp(r->workload, "mruby_instr") || strcmp(r->layout, "khl") ||
            strcmp(r->metric, "instructions"))
            continue;
        ratio = r->median / val("mruby_instr", r->table, "stock", "glibc", r->n, "instructions");
        if (!strcmp(r->table, "bm_ao_render")) {
            int pool = !strcmp(r->allocator, "khl_pool");
            snprintf(what, sizeof what, "bm_ao_render at %ld, instructions: khl on %s / stock on glibc",
                     r->n, r->allocator);
            target(o, what, ratio, pool ? 0.95 : 0.97, 0, "x");
        }
        if (!strcmp(r->allocator, "glibc") && keep_most(&worst, ratio)) {
            worst_name = r->table;
        }
    }
    snprintf(what, sizeof what, "every script, instructions: khl / stock on glibc (most: %s)", worst_name);
    target(o, what, worst, 1.0, 0, "x");
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; ++i) {
        snprintf(table, sizeof table, "ivars_%ld", ks[i]);
        double st = val("mruby_obj", table, "stock", NULL, ks[i], "allocs_per_object");
        snprintf(what, sizeof what, "allocations per object, %ld ivars: khl (stock %.0f)", ks[i], st);
        target(o, what, val("mruby_obj", table, "khl", NULL, ks[i], "allocs_per_object"),
               ks[i] < 8 ? 1 : st - 1, 0, "");
    }
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; ++i) {
        snprintf(table, sizeof table, "ivars_%ld", ks[i]);
        double st = val("mruby_obj", table, "stock", NULL, ks[i], "bytes_per_object");
        snprintf(what, sizeof what, "bytes asked per object, %ld ivars: khl (stock %.0f B)", ks[i], st);
        target(o, what, val("mruby_obj", table, "khl", NULL, ks[i], "bytes_per_object"),
               ks[i] < 8 ? 64 : st, 0, " B");
    }
    static const long ms[] = {1, 20};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; ++i) {
        snprintf(table, sizeof table, "methods_%ld", ms[i]);
        double st = val("mruby_cls", table, "stock", NULL, ms[i], "blocks_per_module");
        snprintf(what, sizeof what, "method-table blocks per module, %ld method%s: khl (stock %.0f)", ms[i],
                 ms[i] == 1 ? "" : "s", st);
        target(o, what, val("mruby_cls", table, "khl", NULL, ms[i], "blocks_per_module"), 1, 0, "");
    }
    worst = NAN;
    for (size_t i = 0; i < N_MRUBY_SCRIPTS; ++i) {
        double r = val("mruby_run", mruby_scripts[i], "khl", "glibc", -1, "ratio_vs_stock");
        if (keep_least(&worst, r)) {
            worst_name = mruby_scripts[i];
        }
    }
    snprintf(what, sizeof what, "slowest script on glibc (%s): stock / khl CPU seconds (paired), 3%% taken as noise",
             worst_name);
    target(o, what, worst, 0.97, 1, "x");
    fprintf(o, "\nThe plot of stock CPU seconds / khl CPU seconds (paired): `mruby.svg` (section Plots).\n");
    dump(o, "mruby");
}

/* Issue 21's targets: mruby with its whole allocator on khl_pool against
 * the same build on glibc, stock and khl alike, every script at least
 * 1.0x.  mruby/bench.sh pairs the two runs of each repetition (ratio_vs_glibc);
 * results from before it did are read as the ratio of the medians. */
static double mruby_pool_ratio(const char *script, const char *layout, const row_t **paired)
{
    *paired = find("mruby_run", script, layout, "khl_pool", -1, "ratio_vs_glibc");
    if (*paired)
        return (*paired)->median;
    return val("mruby_run", script, layout, "glibc", -1, "seconds") /
           val("mruby_run", script, layout, "khl_pool", -1, "seconds");
}

static void mruby_pool_section(FILE *o)
{
    static const char *const layouts[] = {"stock", "khl"};
    char what[160];
    if (!find("mruby_run", NULL, NULL, "khl_pool", -1, "seconds"))
        return;
    fprintf(o, "\n### mruby on khl_pool\n\nThe whole interpreter's allocator (`mrb_open_allocf`) on "
               "khl_pool against the same build on glibc: CPU seconds (user and system) on glibc / on khl_pool in the "
               "same repetition (above 1: the pool is faster), median (min-max) over the repetitions "
               "of the interleaved runs above, whose order rotates; then the instructions cachegrind "
               "counts, on glibc / on khl_pool (above 1: fewer on the pool; the smaller sizes of the "
               "instruction rows above).\n\n"
               "| script | stock | khl | stock, instructions | khl, instructions |\n|---|---|---|---|---|\n");
    for (size_t i = 0; i < N_MRUBY_SCRIPTS; ++i) {
        fprintf(o, "| %s |", mruby_scripts[i]);
        for (size_t l = 0; l < 2; ++l) {
            const row_t *r;
            double ratio = mruby_pool_ratio(mruby_scripts[i], layouts[l], &r);
            if (r)
                fprintf(o, " %.2f (%.2f-%.2f) |", ratio, r->min, r->max);
            else if (isnan(ratio))
                fprintf(o, " – |");
            else
                fprintf(o, " %.2f |", ratio);
        }
        for (size_t l = 0; l < 2; ++l)
            ratio_cell(o, val("mruby_instr", mruby_scripts[i], layouts[l], "glibc", -1, "instructions"),
                       val("mruby_instr", mruby_scripts[i], layouts[l], "khl_pool", -1, "instructions"));
        fputc('\n', o);
    }
    fprintf(o, "\n| target | measured | wanted | |\n|---|---|---|---|\n");
    for (size_t l = 0; l < 2; ++l) {
        double worst = NAN;
        const char *worst_name = "";
        for (size_t i = 0; i < N_MRUBY_SCRIPTS; ++i) {
            const row_t *r;
            double ratio = mruby_pool_ratio(mruby_scripts[i], layouts[l], &r);
            if (keep_least(&worst, ratio)) {
                worst_name = mruby_scripts[i];
            }
        }
        snprintf(what, sizeof what, "mruby %s on khl_pool / mruby %s on glibc, every script (slowest: %s)",
                 layouts[l], layouts[l], worst_name);
        target(o, what, worst, 1.0, 1, "x");
    }
}

/* large_churn (bench/programs/largechurn.c): issue 21's large blocks. */
#define LARGE_CHURN_LAYOUT "16K-1M/64MiB"

static double lc_val(const char *a, const char *m)
{
    return val("large_churn", "alloc", LARGE_CHURN_LAYOUT, a, -1, m);
}

static void large_churn_section(FILE *o)
{
    fprintf(o, "\n## Large-block churn\n\nIssue 21: buffers of 16 KiB-1 MiB (log-uniform) growing "
               "by realloc to 1.5x and replaced, a 64 MiB live set, every page of new bytes written "
               "once; every allocator in one process, interleaved run by run with the order rotated "
               "(bench/programs/largechurn.c). Seconds for the operations after the fill; resident "
               "memory left after everything is freed and given back (malloc_trim, mi_collect, "
               "jemalloc's purge, tcmalloc's ReleaseFreeMemory, khl_pool_trim); system calls "
               "counted by the pool itself.\n\n"
               "| allocator | seconds | time / khl_pool's | RSS at the end of the operations (MiB) | "
               "RSS after trim (KiB) | syscalls / 1000 ops |\n"
               "|---|---|---|---|---|---|\n");
    for (int a = 0; a < N_ALLOC; ++a) {
        double sec = lc_val(allocators[a], "seconds");
        if (isnan(sec))
            continue;
        fprintf(o, "| %s |", allocators[a]);
        cell(o, sec, "%.3f");
        cell(o, lc_val(allocators[a], "ratio_to_khl_pool"), "%.2f");
        cell(o, lc_val(allocators[a], "rss_after_ops_bytes") / 1048576, "%.1f");
        cell(o, lc_val(allocators[a], "rss_after_trim_bytes") / 1024, "%.0f");
        cell(o, lc_val(allocators[a], "syscalls_per_1000_ops"), "%.2f");
        fputc('\n', o);
    }
    fprintf(o, "\n| target | measured | wanted | |\n|---|---|---|---|\n");
    target(o, "large churn: glibc time / khl_pool time", lc_val("glibc", "ratio_to_khl_pool"), 1.2, 1, "x");
    target(o, "large churn: mimalloc time / khl_pool time", lc_val("mimalloc", "ratio_to_khl_pool"), 1.0, 1,
           "x");
    target(o, "large churn: khl_pool system calls per 1000 operations", lc_val("khl_pool",
           "syscalls_per_1000_ops"), 1.0, 0, "");
    /* The run's blocks are all large: no size class, so one chunk in all. */
    target(o, "large churn: khl_pool RSS after free-all + trim (KiB, one chunk per class)",
           lc_val("khl_pool", "rss_after_trim_bytes") / 1024, 128, 0, "");
    target(o, "large churn: khl_pool system bytes after trim", lc_val("khl_pool", "system_bytes_after_trim"),
           0, 0, "");
}

/* huge_pages (bench/programs/hugepages.c): a large table on khl_pool with
 * and without huge_pages.  No target: what the option buys here. */
static double hp_val(const char *a, const char *m)
{
    return val("huge_pages", "khashlite", "single", a, -1, m);
}

static void huge_pages_section(FILE *o)
{
    static const char *const ops[] = {"insert", "get", "erase"};
    if (isnan(hp_val("khl_pool", "insert_ns")))
        return;
    fprintf(o, "\n## Huge pages\n\nA table of u64 keys to 448-bit values (a 256 MiB block at 2M keys) "
               "filled from empty on khl_pool with default options and with huge_pages, each "
               "repetition on a new pool, the two taking turns (bench/programs/hugepages.c); then "
               "200,000 gets and 200,000 erases of distinct present keys. ns per operation (the "
               "inserts with their page faults), median [min, max]; huge / default: paired by "
               "repetition. The kernel gave %.0f MiB of huge pages to the table's block.\n\n"
               "| op | khl_pool | khl_pool, huge_pages | huge / default |\n|---|---|---|---|\n",
            hp_val("khl_pool_huge", "huge_page_bytes") / 1048576);
    for (int i = 0; i < 3; ++i) {
        char m[32], r[32];
        const row_t *x;
        snprintf(m, sizeof m, "%s_ns", ops[i]);
        snprintf(r, sizeof r, "%s_ratio", ops[i]);
        fprintf(o, "| %s |", ops[i]);
        cell(o, hp_val("khl_pool", m), "%.1f");
        cell(o, hp_val("khl_pool_huge", m), "%.1f");
        x = find("huge_pages", "khashlite", "single", "khl_pool_huge", -1, r);
        if (x)
            fprintf(o, " %.2f [%.2f, %.2f] |\n", x->median, x->min, x->max);
        else
            fprintf(o, " – |\n");
    }
}

static void targets(FILE *o)
{
    fprintf(o, "\n## Targets\n\nMeasured in this run, never asserted by `make test`.\n\n"
               "| target | measured | wanted | |\n|---|---|---|---|\n");
    double s1 = val("churn_int", "khashlite", "single", "glibc", 8, "ns_per_lifecycle");
    target(o, "churn n=8 int glibc: split3/single", val("churn_int", "khashlite", "split3", "glibc", 8,
           "ns_per_lifecycle") / s1, 2.0, 1, "x");
    target(o, "churn n=8 int glibc: split2/single", val("churn_int", "khashlite", "split2", "glibc", 8,
           "ns_per_lifecycle") / s1, 1.3, 1, "x");
    double worst_allocs = NAN;
    for (int i = 1; i < N_CHURN; ++i) {
        double v = val("churn_int_reserve", "khashlite", "single", "glibc", churn_n[i], "allocs_per_lifecycle");
        keep_most(&worst_allocs, v);
    }
    target(o, "churn with reserve: allocations per lifecycle (n ≥ 1, worst)", worst_allocs, 1, 0, "");
    target(o, "many n=8 glibc: single bytes / split3 bytes (RSS)",
           val("many", "khashlite", "single", "glibc", 8, "rss_bytes_per_table") /
               val("many", "khashlite", "split3", "glibc", 8, "rss_bytes_per_table"), 0.6, 0, "");
    double worst_pool = NAN;
    for (int i = 1; i < N_CHURN && churn_n[i] <= 16; ++i) {
        double r = val("churn_int", "khashlite", "single", "khl_pool", churn_n[i],
                       "malloc_over_pool_same_process");
        keep_least(&worst_pool, r);
    }
    target(o, "churn n ≤ 16: single on glibc / on khl_pool, same process (worst n)", worst_pool, 1.3, 1, "x");
    static const char *ops[] = {"insert", "get_hit", "get_miss", "erase", "iterate"};
    for (int i = 0; i < 5; ++i) {
        char m[48], what[96];
        snprintf(m, sizeof m, "u32_%s_ns", ops[i]);
        double lite = val("large", "khashlite", NULL, "glibc", -1, m);
        snprintf(what, sizeof what, "large u32 %s: khash / khashlite", ops[i]);
        target(o, what, val("large", "khash", NULL, "glibc", -1, m) / lite, i == 2 ? 2.0 : 1.3, 1, "x");
        snprintf(what, sizeof what, "large u32 %s: khashlite / absl", ops[i]);
        target(o, what, lite / val("large", "absl", NULL, "glibc", -1, m), 1.25, 0, "x");
    }
    /* The FastMM loop as published, ratios paired repetition by repetition
     * in one process (bench/programs/fastmm.c): the pool called from a file
     * built without LTO (a library call, then the inline header), inlined
     * with LTO, and reached through a table's hook. */
    static const char *const fm_pools[] = {"khl_pool_direct", "khl_pool_header", "khl_pool_inline"};
    static const char *const fm_rivals[] = {"glibc", "tcmalloc", "mimalloc"};
    static const double fm_want[] = {2.5, 1.5, 1.5};
    for (int p = 0; p < 3; ++p)
        for (int m = 0; m < 3; ++m) {
            char what[96], metric[48];
            snprintf(what, sizeof what, "FastMM loop: %s / %s (paired)", fm_rivals[m], fm_pools[p]);
            snprintf(metric, sizeof metric, "ratio_to_%s", fm_pools[p]);
            target(o, what, val("seed_fastmm", "seed", FASTMM_PUBLISHED, fm_rivals[m], -1, metric),
                   fm_want[m], 1, "x");
        }
    target(o, "FastMM loop: mimalloc / khl_pool_hook, a table's hook (paired)",
           val("seed_fastmm", "seed", FASTMM_PUBLISHED, "mimalloc", -1, "ratio_to_khl_pool_hook"), 1.2, 1,
           "x");
    /* Threads on one allocator (fastmm.c, pool_threads). */
    for (long t = 2; t <= 4; t += 2) {
        char what[112];
        snprintf(what, sizeof what, "FastMM loop, %ld threads sharing one pool: mimalloc / khl_pool_ts (paired)", t);
        target(o, what, val("pool_threads", "seed", FASTMM_WRITE, "mimalloc", t, "ratio_to_khl_pool_ts"), 1.0, 1,
               "x");
        snprintf(what, sizeof what, "FastMM loop, %ld threads sharing one pool: mimalloc / khl_pool_ts_header (paired)",
                 t);
        target(o, what, val("pool_threads", "seed", FASTMM_WRITE, "mimalloc", t, "ratio_to_khl_pool_ts_header"), 1.0,
               1, "x");
    }
    for (long t = 2; t <= 4; t += 2) {
        char what[112];
        snprintf(what, sizeof what, "FastMM loop, %ld threads, a pool each: time per core / one thread's", t);
        target(o, what, val("pool_threads", "seed", FASTMM_WRITE, "khl_pool_per_thread", t, "ratio_to_one_thread"),
               1.1, 0, "x");
    }
    double worst_p999 = NAN, spikes = NAN;
    for (size_t i = 0; i < n_rows; ++i) {
        const row_t *r = &rows[i];
        if (strcmp(r->workload, "seed_latency") || strcmp(r->allocator, "khl_pool_reserved"))
            continue;
        if (!strcmp(r->metric, "p999_ns"))
            keep_most(&worst_p999, r->median);
        if (!strcmp(r->metric, "spike_indices_repeat"))
            spikes = (isnan(spikes) ? 0 : spikes) + r->median;
    }
    /* Fresh pools without a reserve against glibc in the same process
     * (bench/programs/fastmm.c, pool_latency; issue 21: sub-microsecond
     * unreserved tails, the target before, are not possible where a page
     * fault costs microseconds). */
    static const char *const pl_layout[] = {"100B", "16B-4KiB"};
    for (int l = 0; l < 2; ++l) {
        char what[112];
        snprintf(what, sizeof what, "latency, khl_pool unreserved, 200,000 x %s: p99.9 / glibc's (paired)",
                 pl_layout[l]);
        target(o, what, val("pool_latency", "pool", pl_layout[l], "khl_pool", -1, "p999_over_glibc"), 1.0, 0, "x");
        snprintf(what, sizeof what, "latency, khl_pool unreserved, 200,000 x %s: max / glibc's (paired)",
                 pl_layout[l]);
        target(o, what, val("pool_latency", "pool", pl_layout[l], "khl_pool", -1, "max_over_glibc"), 1.0, 0, "x");
    }
    target(o, "latency, khl_pool reserved: worst p99.9", worst_p999 / 1000.0, 1.0, 0, " µs");
    target(o, "latency, khl_pool reserved: calls > 100 µs at the same index in two runs", spikes, 0, 0, "");
}

/* Single allocations on fresh allocators without a reserve (issue 14):
 * khl_pool as a default pool chooses (pages_ahead), khl_pool_ahead faults
 * its chunks' pages a step ahead of the bump pointer, khl_pool_lazy leaves
 * them to the first writes, khl_pool_reserved reserved first; each pool's
 * tail against glibc's in the same repetition (issue 21). */
static void pool_latency_section(FILE *o)
{
    static const char *const layouts[] = {"100B", "16B-4KiB"};
    static const char *const who[] = {"glibc", "tcmalloc", "jemalloc", "mimalloc", "khl_pool",
                                      "khl_pool_ahead", "khl_pool_lazy", "khl_pool_reserved"};
    double ahead = val("pool_latency", "pool", "100B", "khl_pool", -1, "pages_ahead");
    static const char *const metrics[] = {"p50_ns", "p99_ns", "p999_ns", "max_ns", "calls_over_100us",
                                          "chunk_take_ns"};
    if (!find("pool_latency", NULL, NULL, NULL, -1, NULL))
        return;
    fprintf(o, "\n### Latency without a reserve\n\nOne timed allocation (and its first write) at a "
               "time, 200,000 calls (20,000 in the smoke run) on a fresh pool (bench/programs/fastmm.c, pool_latency), or on a malloc "
               "that gave its free memory back first (malloc_trim, tcmalloc's ReleaseFreeMemory, jemalloc's purge, "
               "mi_collect), so that no contender reuses pages an earlier run faulted. Every allocator runs in one process, interleaved run by "
               "run. khl_pool_ahead (lazy_pages = KHL_POOL_PAGES_AHEAD) faults its chunks' pages a step at a time (a page, or 4 blocks "
               "up to 16 KiB for blocks over 1 KiB), ahead of its bump pointer, in one system call per step; khl_pool_lazy (lazy_pages = 1) leaves each page to "
               "fault at its first write, as glibc's pages do; khl_pool, a default pool, does one or the other as a page "
               "mapped ahead or trapped costs less on the machine (measured once per process): here it %s. chunk_take: median ns of the calls "
               "that took a chunk. p99.9 / glibc and max / glibc: the pool's over glibc's in the same "
               "repetition, median (min-max) over repetitions.\n\n"
               "| sizes | allocator | p50 | p99 | p99.9 | max | calls > 100 µs | chunk_take | "
               "p99.9 / glibc | max / glibc |\n"
               "|---|---|---|---|---|---|---|---|---|---|\n",
            isnan(ahead) ? "was not run" : ahead > 0.5 ? "faulted ahead" : "left the pages to first writes");
    for (int l = 0; l < 2; ++l)
        for (int a = 0; a < 8; ++a) {
            if (isnan(val("pool_latency", "pool", layouts[l], who[a], -1, "p50_ns")))
                continue;
            fprintf(o, "| %s | %s |", layouts[l], who[a]);
            for (int m = 0; m < 6; ++m)
                cell(o, val("pool_latency", "pool", layouts[l], who[a], -1, metrics[m]), "%.0f");
            for (int m = 0; m < 2; ++m) {
                const row_t *r = find("pool_latency", "pool", layouts[l], who[a], -1,
                                      m ? "max_over_glibc" : "p999_over_glibc");
                if (r)
                    fprintf(o, " %.2fx (%.2f-%.2f) |", r->median, r->min, r->max);
                else
                    fprintf(o, " – |");
            }
            fputc('\n', o);
        }
}

/* Threads running the FastMM loop at once on one allocator (issue 14):
 * fastmm.c's pool_threads. */
static void pool_threads_section(FILE *o)
{
    static const char *const layouts[] = {FASTMM_WRITE, "handoff"};
    static const char *const who[] = {"glibc", "tcmalloc", "jemalloc", "mimalloc", "khl_pool_ts",
                                      "khl_pool_ts_header", "khl_pool_per_thread"};
    enum { WHO = sizeof who / sizeof who[0] };
    if (!find("pool_threads", NULL, NULL, NULL, -1, NULL))
        return;
    fprintf(o, "\n### Threads sharing one allocator\n\nT threads run at once on one allocator, every "
               "contender in one process, interleaved (bench/programs/fastmm.c, pool_threads). "
               "%s: each thread runs the FastMM loop on its own blocks, one byte written in each; "
               "handoff: each thread allocates 10,000 x 100 B, then after a barrier frees the 10,000 "
               "its neighbour allocated (every free a remote one), then a barrier again. "
               "khl_pool_ts: one thread-safe pool for every thread, called through pointers as the "
               "mallocs are; khl_pool_ts_header: the same with khl_pool_inline.h's inline paths, "
               "from a file built without LTO (the loop only); khl_pool_per_thread: a plain "
               "pool each, called through pointers (the loop only). Wall seconds of the whole run (median, threads started "
               "and joined inside it), then each contender's time over khl_pool_ts's in the same "
               "repetition (median; above 1: the pool is faster), then scaling: wall time over the "
               "contender's one-thread time x T / min(T, cores) (1.00: threads cost each other "
               "nothing).\n\n| layout | T |", FASTMM_WRITE);
    for (int a = 0; a < WHO; ++a)
        fprintf(o, " %s s |", who[a]);
    for (int a = 0; a < WHO; ++a)
        if (strcmp(who[a], "khl_pool_ts"))
            fprintf(o, " %s / ts |", who[a]);
    fputs(" scaling mimalloc / ts / per thread |\n|---|---|", o);
    for (int a = 0; a < 2 * WHO; ++a)
        fputs("---|", o);
    fputc('\n', o);
    for (int l = 0; l < 2; ++l)
        for (long t = 1; t <= 4; t *= 2) {
            fprintf(o, "| %s | %ld |", layouts[l], t);
            for (int a = 0; a < WHO; ++a)
                cell(o, val("pool_threads", "seed", layouts[l], who[a], t, "seconds"), "%.4f");
            for (int a = 0; a < WHO; ++a)
                if (strcmp(who[a], "khl_pool_ts"))
                    cell(o, val("pool_threads", "seed", layouts[l], who[a], t, "ratio_to_khl_pool_ts"), "%.2f");
            fputc(' ', o);
            for (int a = 0; a < 3; ++a) {
                static const char *const sc[] = {"mimalloc", "khl_pool_ts", "khl_pool_per_thread"};
                double v = val("pool_threads", "seed", layouts[l], sc[a], t, "ratio_to_one_thread");
                fprintf(o, "%s", a ? " / " : "");
                if (isnan(v))
                    fputs("–", o);
                else
                    fprintf(o, "%.2f", v);
            }
            fputs(" |\n", o);
        }
}

/* Where the FastMM loop's time goes: what each contender adds, per
 * allocate/free pair, to the loop with no allocator at all. */
static void fastmm_explained(FILE *o)
{
    static const char *const who[] = {"khl_pool_inline", "khl_pool_header", "khl_pool_direct", "khl_pool",
                                      "khl_pool_hook", "mimalloc", "tcmalloc", "glibc"};
    const row_t *fp = find("seed_fastmm", "seed", FASTMM_PUBLISHED, "floor", -1, "seconds");
    if (!fp || fp->n <= 0)
        return;
    double pairs = (double)fp->n * 10000.0;   /* n is the number of rounds */
    double floor_pub = fp->median, floor_write = val("seed_fastmm", "seed", FASTMM_WRITE, "floor", -1,
                                                     "seconds");
    fprintf(o, "- **The FastMM loop.** Per allocate/free pair above the no-allocator floor "
               "(as published / one byte written):");
    for (int i = 0; i < (int)(sizeof who / sizeof who[0]); ++i) {
        double a = val("seed_fastmm", "seed", FASTMM_PUBLISHED, who[i], -1, "seconds");
        double b = val("seed_fastmm", "seed", FASTMM_WRITE, who[i], -1, "seconds");
        fprintf(o, "%s %s %.1f / %.1f ns", i ? "," : "", who[i], (a - floor_pub) / pairs * 1e9,
                (b - floor_write) / pairs * 1e9);
    }
    fprintf(o, "; the floor itself is %.1f / %.1f ns (the loop, and with the write its memory "
               "traffic). Inlined, the pool's pair is a pointer moved down then up in a bundle, "
               "plus its exact statistics (allocs, frees, bytes in use, peak); called, two calls "
               "come on top.\n",
            floor_pub / pairs * 1e9, floor_write / pairs * 1e9);
}

/* Why the scaling row of pools of their own comes out as it does: the time
 * a 4-thread run takes past perfect scaling (its wall time less that time
 * over its ratio_to_one_thread, medians), which the row divides by each
 * contender's own one-thread time, the pool's the shortest. */
static void threads_explained(FILE *o)
{
    static const char *const who[] = {"khl_pool_per_thread", "mimalloc", "jemalloc", "glibc"};
    enum { WHO = sizeof who / sizeof who[0] };
    /* perfect: wall / ratio, the one-thread time times T / min(T, cores). */
    double perfect[WHO], extra[WHO], alone[WHO];
    for (int i = 0; i < WHO; ++i) {
        double wall = val("pool_threads", "seed", FASTMM_WRITE, who[i], 4, "seconds");
        perfect[i] = wall / val("pool_threads", "seed", FASTMM_WRITE, who[i], 4, "ratio_to_one_thread");
        extra[i] = wall - perfect[i];
        alone[i] = val("pool_threads", "seed", FASTMM_WRITE, who[i], 1, "seconds");
        if (isnan(extra[i]) || isnan(alone[i]))
            return;
    }
    fprintf(o, "- **Four threads, a pool each.** Past perfect scaling, a 4-thread run took about");
    for (int i = 0; i < WHO; ++i)
        fprintf(o, "%s %.1f ms (%s)", i ? (i == WHO - 1 ? " and" : ",") : "", extra[i] * 1e3, who[i]);
    fprintf(o, ". The row divides that time by the contender's own one-thread time (");
    for (int i = 0; i < WHO; ++i)
        fprintf(o, "%s%.1f ms", i ? ", " : "", alone[i] * 1e3);
    fprintf(o, " in the same order): the same milliseconds weigh most on the fastest loop. At the "
               "pool's, 1.10x would take a one-thread loop of %.0f ms.\n",
            extra[0] / 0.10 / (perfect[0] / alone[0]) * 1e3);
}

/* Why the unreserved latency targets come out as they do: where a fresh
 * allocator's page faults go, with this run's figures. */
static void latency_explained(FILE *o)
{
    double take = val("pool_latency", "pool", "100B", "khl_pool_ahead", -1, "chunk_take_ns");
    double sys = val("pool_latency", "pool", "100B", "khl_pool_ahead", -1, "system_bytes");
    double glibc_p99 = val("pool_latency", "pool", "100B", "glibc", -1, "p99_ns");
    double ahead_p99 = val("pool_latency", "pool", "100B", "khl_pool_ahead", -1, "p99_ns");
    double chose = val("pool_latency", "pool", "100B", "khl_pool", -1, "pages_ahead");
    const row_t *a999[2], *p999[2];
    static const char *const layouts[2] = {"100B", "16B-4KiB"};
    for (int l = 0; l < 2; ++l) {
        a999[l] = find("pool_latency", "pool", layouts[l], "khl_pool_ahead", -1, "p999_over_glibc");
        p999[l] = find("pool_latency", "pool", layouts[l], "khl_pool", -1, "p999_over_glibc");
    }
    if (isnan(take) || isnan(sys) || isnan(glibc_p99) || isnan(chose) || !a999[0] || !a999[1] || !p999[0] ||
        !p999[1])
        return;
    fprintf(o, "- **Latency without a reserve.** A fresh allocator's memory has to be faulted in by "
               "some call: 200,000 x 100 B take %.0f MiB of a pool, %.0f pages. glibc leaves each "
               "page to trap at its first write; one in 36 of its calls does, so its p99 (%.1f µs "
               "here) is the cost of one trapped fault. Faulting ahead (khl_pool_ahead) maps a page "
               "at a time for 100 B blocks, and up to 4 for larger ones, in one system call "
               "(MADV_POPULATE_WRITE) ahead of the bump pointer; its slowest calls are those steps "
               "(p99 %.1f µs) and the chunk takes (%.1f µs, a mapping and the first step). That pays "
               "where a mapped page costs less than a trap (on one VM 1-1.5 µs against 10), and not "
               "where it costs more: its p99.9 over glibc's was %.2fx (%.2f-%.2f) with 100 B and "
               "%.2fx (%.2f-%.2f) with 16 B-4 KiB here. A default pool measures both costs once per "
               "process and %s: its p99.9 over glibc's %.2fx (%.2f-%.2f) and %.2fx (%.2f-%.2f). The "
               "maximum of 200,000 calls on a shared machine is a preemption more often than a fault, "
               "on either side, so its ratio moves from repetition to repetition. Sub-microsecond "
               "unreserved tails are not possible where a fault costs microseconds: what gives them "
               "is memory faulted before the calls, khl_pool_reserve for each class used (the "
               "reserved rows), or an allocator reusing memory it faulted earlier.\n",
            sys / 1048576.0, sys / 4096.0, glibc_p99 / 1000.0, ahead_p99 / 1000.0, take / 1000.0,
            a999[0]->median, a999[0]->min, a999[0]->max, a999[1]->median, a999[1]->min, a999[1]->max,
            chose > 0.5 ? "faulted ahead" : "left pages to first writes", p999[0]->median, p999[0]->min,
            p999[0]->max, p999[1]->median, p999[1]->min, p999[1]->max);
}

/* Why the layout targets come out as they do, computed from this run. */
static void target_notes(FILE *o)
{
    double t1 = val("churn_int", "khashlite", "single", "glibc", 8, "ns_per_lifecycle");
    double t3 = val("churn_int", "khashlite", "split3", "glibc", 8, "ns_per_lifecycle");
    double a1 = val("churn_int", "khashlite", "single", "glibc", 8, "allocs_per_lifecycle");
    double a3 = val("churn_int", "khashlite", "split3", "glibc", 8, "allocs_per_lifecycle");
    fprintf(o, "\n### Reading the targets\n\n");
    if (!isnan(t1) && !isnan(t3) && a3 > a1) {
        double pair = (t3 - t1) / (a3 - a1);
        fprintf(o, "- **Churn at n = 8.** split3 makes %.0f allocations per lifecycle and single %.0f; "
                   "the %.0f extra allocate/free pairs cost %.1f ns each here (glibc's thread cache "
                   "serves them from a per-size list), so the split layouts pay %.0f ns more on a "
                   "lifecycle of which single spends about %.0f ns in table work (8 puts into its "
                   "first block, which holds them all, and 8 gets). A 2x ratio would need allocations "
                   "to dominate the lifecycle, as they do for n = 1 and 2, or on a slower allocator.\n",
                a3, a1, a3 - a1, pair, t3 - t1, t1 - a1 * pair);
    }
    double b1 = val("many", "khashlite", "single", "glibc", 8, "bytes_asked_per_table");
    double b3 = val("many", "khashlite", "split3", "glibc", 8, "bytes_asked_per_table");
    if (!isnan(b1) && !isnan(b3))
        fprintf(o, "- **Bytes at n = 8.** Eight keys fill a one-group table of 8 buckets: 64 B of "
                   "key+value pairs of every layout's %.0f-%.0f bytes asked (handle included). "
                   "Merging saves the split header's region pointers and the allocator's per-chunk "
                   "overhead of two more chunks, not the payload, so single cannot fall to 60%% of "
                   "split3 at this size; the saving is larger in relative terms for n = 1 to 4.\n", b1, b3);
    double pg = val("hook_pair", NULL, NULL, "glibc", 160, "ns_per_pair");
    double pp = val("hook_pair", NULL, NULL, "khl_pool", 160, "ns_per_pair");
    double cg = val("churn_int", "khashlite", "single", "glibc", 8, "ns_per_lifecycle");
    if (!isnan(pg) && !isnan(pp) && !isnan(cg))
        fprintf(o, "- **The pool against glibc in churn.** An allocate/free pair costs %.1f ns on the "
                   "pool and %.1f ns on glibc, but a single-block lifecycle at n = 8 makes only %.0f of "
                   "them: at most %.0f ns of its %.0f ns, so the pool cannot make it 1.3x faster "
                   "(measured in one process: glibc / pool = %.2f). The pool pays off where "
                   "allocations dominate: the seeds' loops below, and the split layouts.\n",
                pp, pg, a1, a1 * (pg - pp), cg,
                val("churn_int", "khashlite", "single", "khl_pool", 8, "malloc_over_pool_same_process"));
    fastmm_explained(o);
    threads_explained(o);
    latency_explained(o);
    fprintf(o, "- **One large table against khash.** khashlite keeps one control byte per bucket "
               "(2 MiB at 2^21 buckets), khash two bits (512 KiB): at a million keys khash's flags stay "
               "in the L2 cache and khashlite's control bytes do not, so a hit costs khashlite one more "
               "cache miss before it reaches the key. The control byte is what makes misses and "
               "iteration fast (an 8-bit tag and an empty-bucket test for 16 buckets at once).\n");
    fprintf(o, "- All timings come from a shared 2-core machine; compare ratios within this run only.\n");
}

/* --- the seeds beside the figures their posts published ------------------- */

static void cell(FILE *o, double v, const char *fmt)
{
    if (isnan(v))
        fprintf(o, " – |");
    else {
        fputc(' ', o);
        fprintf(o, fmt, v);
        fprintf(o, " |");
    }
}

static const char *holds(int ok, int measured)
{
    return !measured ? "not measured in this run" : ok ? "**holds here**" : "**does not hold here**";
}

static double seed_val(const char *w, const char *layout, const char *a, long n, const char *m)
{
    return val(w, "seed", layout, a, n, m);
}

static void seeds_side_by_side(FILE *o)
{
    static const char *mallocs[] = {"glibc", "tcmalloc", "jemalloc", "mimalloc"};
    fprintf(o, "\n### Side by side with the published figures\n\n"
               "The posts (docs/posts.md) ran on 2008-2018 hardware and other systems: compare the orderings and "
               "ratios, not the absolute seconds.\n");

    /* FastMM (003): 1000 rounds of 10,000 x 100 B. */
    double pool = seed_val("seed_fastmm", FASTMM_PUBLISHED, "khl_pool", -1, "seconds");
    double best = NAN;
    fprintf(o, "\n**FastMM loop** (post 003, 10,000 x 100 B allocated then freed, x rounds; "
               "seconds; every allocator here in one process, interleaved; the post's loop never "
               "touches the blocks, the last column writes one byte in each):\n\n"
               "| published | s | here | s, as published | s, one byte written |\n"
               "|---|---|---|---|---|\n");
    static const char *pub_fm[][2] = {{"FixedAlloc pool", "0.0806"}, {"FastMM", "0.14"},
                                      {"FastMM, multithread mode", "0.41"},
                                      {"FastMM + critical section", "0.71"}, {"VC2008 malloc", "3.854"}};
    static const char *ours_fm[] = {"khl_pool_inline", "khl_pool_header", "khl_pool_direct", "khl_pool",
                                    "khl_pool_hook", "khl_pool_unsized", "khl_pool_ts", "khl_pool_ts_header",
                                    "khl_pool_mutex", "glibc", "tcmalloc",
                                    "jemalloc", "mimalloc", "floor"};
    for (int i = 0; i < (int)(sizeof ours_fm / sizeof ours_fm[0]); ++i) {
        fprintf(o, "| %s | %s | %s |", i < 5 ? pub_fm[i][0] : "", i < 5 ? pub_fm[i][1] : "", ours_fm[i]);
        cell(o, seed_val("seed_fastmm", FASTMM_PUBLISHED, ours_fm[i], -1, "seconds"), "%.3f");
        cell(o, seed_val("seed_fastmm", FASTMM_WRITE, ours_fm[i], -1, "seconds"), "%.3f");
        fputc('\n', o);
    }
    for (int i = 0; i < 4; ++i) {
        double v = seed_val("seed_fastmm", FASTMM_PUBLISHED, mallocs[i], -1, "seconds");
        keep_least(&best, v);
    }
    double inl = seed_val("seed_fastmm", FASTMM_PUBLISHED, "khl_pool_inline", -1, "seconds");
    double mutex = seed_val("seed_fastmm", FASTMM_PUBLISHED, "khl_pool_mutex", -1, "seconds");
    fprintf(o, "\n`floor` hands out blocks from one array and frees nothing: the loop with no "
               "allocator. `khl_pool_inline` has the pool's fast paths inlined into the loop, as the "
               "post's FixedAlloc was; `khl_pool_header` has them inlined from khl_pool_inline.h, "
               "without LTO; `khl_pool_direct` calls the pool directly, as a program "
               "linking the library without LTO does; `khl_pool_hook` is the pool as a table "
               "reaches it, khl_pool_allocf called through the table's {fn, ud}; `khl_pool_ts_header` "
               "is a thread-safe pool through the inline header (its thread cache read in the loop); "
               "every other "
               "contender is called through a pointer, as a shared library's malloc is.\n");
    fprintf(o, "\n- \"A fixed-size pool beats the general-purpose allocators\": %s with the pool "
               "inlined as the post's was (khl_pool_inline %.3f s, best malloc %.3f s); called "
               "through a pointer like a malloc, khl_pool takes %.3f s.\n",
            holds(inl < best, !isnan(inl) && !isnan(best)), inl, best, pool);
    fprintf(o, "- \"A lock per call costs more than the pool gains\": %s (khl_pool behind a mutex "
               "%.3f s vs best malloc %.3f s).\n",
            holds(mutex > best, !isnan(mutex) && !isnan(best)), mutex, best);

    /* hhs_calloc (000): totals of 10 passes. */
    static const long hn[] = {50, 100, 500, 1024, 10000};
    static const double pub_in[5][3] = {{0.15806e-3, 0.135938e-3, 0.186022e-3},
                                        {0.283713e-3, 0.272328e-3, 0.293742e-3},
                                        {0.1453858e-2, 0.1291004e-2, 0.13424e-2},
                                        {0.2824874e-2, 0.2560653e-2, 0.2751811e-2},
                                        {0.30325826e-1, 0.30124209e-1, 0.26917778e-1}};
    static const double pub_over[5][3] = {{0.711725e-3, 0.443236e-3, 0.702283e-3},
                                          {0.1394836e-2, 0.1244906e-2, 0.1337618e-2},
                                          {0.7863012e-2, 0.6339118e-2, 0.6493924e-2},
                                          {0.16774762e-1, 0.13983322e-1, 0.14046191e-1},
                                          {0.176232715, 0.176962985, 0.146961605}};
    int in_range_ok = 1, falls_back = 1, measured = 0;
    fprintf(o, "\n**hhs_calloc runs** (post 000, pool of 1024 x 1024 B, 10 passes; seconds; "
               "published: calloc / hhs_calloc / tc_calloc):\n\n"
               "| N | case | published | glibc | hhs-style slot pool | khl_pool | tcmalloc |\n"
               "|---|---|---|---|---|---|---|\n");
    for (int over = 0; over < 2; ++over)
        for (int i = 0; i < 5; ++i) {
            const char *lay = over ? "over_size" : "in_range";
            const double *pub = over ? pub_over[i] : pub_in[i];
            double g = seed_val("seed_hhs", lay, "glibc", hn[i], "seconds");
            double sp = seed_val("seed_hhs", lay, "hhs_slot_pool", hn[i], "seconds");
            fprintf(o, "| %ld | %s | %.3g / %.3g / %.3g |", hn[i], over ? "with over-size" : "in range",
                    pub[0], pub[1], pub[2]);
            cell(o, g, "%.3g");
            cell(o, sp, "%.3g");
            cell(o, seed_val("seed_hhs", lay, "khl_pool", hn[i], "seconds"), "%.3g");
            cell(o, seed_val("seed_hhs", lay, "tcmalloc", hn[i], "seconds"), "%.3g");
            fputc('\n', o);
            if (!isnan(g) && !isnan(sp)) {
                measured = 1;
                if (!over && hn[i] <= 1024 && sp >= g)
                    in_range_ok = 0;
                if (!over && hn[i] == 10000 && sp < 0.7 * g)
                    falls_back = 0;
            }
        }
    fprintf(o, "\n- \"Within its range the slot pool beats plain calloc\": %s.\n",
            holds(in_range_ok, measured));
    fprintf(o, "- \"Past its 1024 slots it is no better than calloc\": %s.\n", holds(falls_back, measured));

    /* lighttpd scenario (000): 5-run totals. */
    double lg = seed_val("seed_lighttpd", NULL, "glibc", -1, "seconds_total");
    double lp = seed_val("seed_lighttpd", NULL, "khl_pool", -1, "seconds_total");
    double ls = seed_val("seed_lighttpd", NULL, "hhs_slot_pool", -1, "seconds_total");
    double lt = seed_val("seed_lighttpd", NULL, "tcmalloc", -1, "seconds_total");
    fprintf(o, "\n**lighttpd scenario** (post 000, 10 live clients x 256 x 4096 B, 2000 clients, 5 runs; "
               "total seconds): published calloc 2.694, hhs_calloc 0.673, tc_calloc 0.618; here glibc "
               "%.3f, hhs-style slot pool %.3f, khl_pool %.3f, tcmalloc %.3f.\n", lg, ls, lp, lt);
    fprintf(o, "- \"Pools and tcmalloc are several times faster than plain calloc here\": %s.\n",
            holds(ls < lg / 2 && lp < lg / 2, !isnan(lg) && !isnan(ls) && !isnan(lp)));

    /* Boost.Pool latency (001). */
    fprintf(o, "\n**Per-call latency** (post 001, 100,000 single allocations of 100 B; ns; the post "
               "found Boost.Pool usually faster than new but taking milliseconds whenever it grows):\n\n"
               "| allocator | p50 | p99 | p99.9 | max | calls > 100 µs at the same index in two runs |\n"
               "|---|---|---|---|---|---|\n");
    static const char *lat[] = {"glibc", "tcmalloc", "jemalloc", "mimalloc", "boost_pool",
                                "boost_object_pool", "khl_pool", "khl_pool_reserved"};
    for (int i = 0; i < 8; ++i) {
        fprintf(o, "| %s |", lat[i]);
        cell(o, seed_val("seed_latency", NULL, lat[i], 100, "p50_ns"), "%.0f");
        cell(o, seed_val("seed_latency", NULL, lat[i], 100, "p99_ns"), "%.0f");
        cell(o, seed_val("seed_latency", NULL, lat[i], 100, "p999_ns"), "%.0f");
        cell(o, seed_val("seed_latency", NULL, lat[i], 100, "max_ns"), "%.0f");
        cell(o, seed_val("seed_latency", NULL, lat[i], 100, "spike_indices_repeat"), "%.0f");
        fputc('\n', o);
    }
    double bspikes = seed_val("seed_latency", NULL, "boost_pool", 100, "spike_indices_repeat");
    double kspikes = seed_val("seed_latency", NULL, "khl_pool_reserved", 100, "spike_indices_repeat");
    fprintf(o, "\n- \"Boost.Pool's growth calls take far longer, at predictable indices\": %s.\n",
            holds(bspikes > 0, !isnan(bspikes)));
    fprintf(o, "- khl_pool with a reserve has no such growth calls: %s.\n",
            holds(kspikes == 0, !isnan(kspikes)));

    /* Locks (003). */
    double l1 = seed_val("seed_locks", NULL, "khl_pool", 1, "seconds");
    double lts = seed_val("seed_locks", NULL, "khl_pool_ts", 1, "seconds");
    double lmx = seed_val("seed_locks", NULL, "khl_pool_mutex", 1, "seconds");
    fprintf(o, "\n**Locks** (post 003: FastMM 0.14 s, its multithread mode 0.41 s (2.9x), behind a "
               "critical section 0.71 s (5.1x)). Here, one thread: khl_pool %.3f s, thread-safe mode "
               "%.3f s (%.2fx), behind a mutex %.3f s (%.2fx).\n", l1, lts, lts / l1, lmx, lmx / l1);
    fprintf(o, "- \"A mutex around the pool costs more than its thread-safe mode\": %s.\n",
            holds(lmx > lts, !isnan(lmx) && !isnan(lts)));
}

/* --- table core v2: program peers (bench/programs/peers.c) ------------------- */

static const char *const v2_tables[] = {"khashlite", "boost", "absl", "khash"};
#define N_V2 4

/* The distinct n of a workload's rows with a metric ending in suffix,
 * ascending; how many (at most max). */
static int sizes_of(const char *workload, const char *suffix, long *out, int max)
{
    int k = 0;
    for (size_t i = 0; i < n_rows; ++i) {
        const row_t *r = &rows[i];
        size_t ml = strlen(r->metric), sl = strlen(suffix);
        int seen = 0;
        if (strcmp(r->workload, workload) || ml < sl || strcmp(r->metric + ml - sl, suffix))
            continue;
        for (int j = 0; j < k; ++j)
            seen |= out[j] == r->n;
        if (seen || k == max)
            continue;
        int j = k++;
        for (; j > 0 && out[j - 1] > r->n; --j)
            out[j] = out[j - 1];
        out[j] = r->n;
    }
    return k;
}

static double v2(const char *workload, const char *table, long n, const char *metric)
{
    return val(workload, table, NULL, NULL, n, metric);
}

/* T1 and T5: the peers workload, every blueprint x N x operation. */
static void v2_peers(FILE *o)
{
    static const char *const bps[] = {"u32", "u64", "str16"};
    static const char *const ops[] = {"insert", "erase", "replace", "erase_missing", "get",
                                      "get_missing", "iterate"};
    long ns[4];
    int nn = sizes_of("peers", "_ns", ns, 4), rows_n = 0, first = 0;
    double worst = NAN, worst_it = NAN;
    char worst_row[96] = "", worst_it_row[96] = "";
    fprintf(o, "\n### T1, T5: the peers workload\n\nJackson Allan's benchmark shape: N distinct random "
               "keys inserted into an empty table (no reserve); every N/20 inserts a batch of 1,000 "
               "each of erase (then re-inserted, untimed), replace, erase-missing, get, get-missing, "
               "and a walk of the whole table. ns per operation (per element for iterate): insert "
               "over the whole fill, the others the median over the 20 points of each batch's "
               "figure (robust to another process's turn inside a batch); best "
               "other = the fastest of boost, absl and khash on that row. As in that suite, every "
               "table gets the same hash (MurmurHash3's finalizer for integers, FNV-1a for "
               "strings) and is built -O3 -DNDEBUG; here its functions and loops are also "
               "aligned (bench/bench.mk). The workload runs in 3 processes one after another, each "
               "its share of the repetitions (2 at 200k after a warmup round, 1 at 2M) and "
               "opening with another table, and a row is the median over all of them: a "
               "table's figures move between processes as much as between repetitions. Each "
               "process's glibc serves every block from its heap, keeps what is freed, and "
               "starts from a heap touched as far as the largest fill needs: inserts reuse "
               "touched pages, for every table alike. The faults an insert took are in "
               "summary.csv (BLUEPRINT_insert_faults, per fill).\n\n"
               "| blueprint | N | op | khashlite | boost | absl | khash | khashlite / best other |\n"
               "|---|---|---|---|---|---|---|---|\n");
    for (int b = 0; b < 3; ++b)
        for (int s = 0; s < nn; ++s)
            for (int k = 0; k < 7; ++k) {
                char m[48];
                double v[N_V2], best = NAN;
                snprintf(m, sizeof m, "%s_%s_ns", bps[b], ops[k]);
                for (int t = 0; t < N_V2; ++t) {
                    v[t] = v2("peers", v2_tables[t], ns[s], m);
                    if (t)
                        keep_least(&best, v[t]);
                }
                if (isnan(v[0]))
                    continue;
                fprintf(o, "| %s | %ld | %s |", bps[b], ns[s], ops[k]);
                for (int t = 0; t < N_V2; ++t)
                    cell(o, v[t], "%.1f");
                ratio_cell(o, v[0], best);
                fputc('\n', o);
                if (isnan(best))
                    continue;
                rows_n++;
                first += v[0] <= best;
                /* Iteration is held to boost's (below): ankerl-style tables
                 * iterate a dense vector, no open-addressing table does. */
                if (k != 6 && keep_most(&worst, v[0] / best)) {
                    snprintf(worst_row, sizeof worst_row, "%s N=%ld %s", bps[b], ns[s], ops[k]);
                }
                double bo = v[1];
                if (k == 6 && keep_most(&worst_it, v[0] / bo)) {
                    snprintf(worst_it_row, sizeof worst_it_row, "%s N=%ld", bps[b], ns[s]);
                }
            }
    fprintf(o, "\n| target | measured | wanted | |\n|---|---|---|---|\n");
    char what[160];
    /* Issue 22's targets: every row within 1.10x of the best table, iteration
     * within 1.10x of boost, first on at least a third of the rows. */
    snprintf(what, sizeof what, "T1 every row but iterate: khashlite / best other, worst row (%s)", worst_row);
    target(o, what, worst, 1.10, 0, "x");
    snprintf(what, sizeof what, "T1 rows where khashlite is first: %d of %d, as a fraction", first, rows_n);
    target(o, what, rows_n ? (double)first / rows_n : NAN, 1.0 / 3.0, 1, "");
    snprintf(what, sizeof what, "T5 iterate: khashlite / boost, worst (%s)", worst_it_row);
    target(o, what, worst_it, 1.10, 0, "x");
}

/* The rest of a vs_khash row: khashlite, khash, boost, absl, khash / khashlite. */
static void v2_khash_cells(FILE *o, long n, const char *metric, const char *fmt)
{
    double l = v2("vs_khash", "khashlite", n, metric), kh = v2("vs_khash", "khash", n, metric);
    cell(o, l, fmt);
    cell(o, kh, fmt);
    cell(o, v2("vs_khash", "boost", n, metric), fmt);
    cell(o, v2("vs_khash", "absl", n, metric), fmt);
    ratio_cell(o, kh, l);
    fputc('\n', o);
}

/* The seed of the integer hashes, side by side with the same hash unseeded:
 * seeded / unseeded per row, and the range over every row measured. */
static void v2_seed_cost(FILE *o, const long *ns, int nn, const long *ls, int nl)
{
    static const char *const kinds[] = {"seq", "mult", "rand"};
    static const char *const ops[] = {"insert", "hit", "miss", "erase"};
    double lo = NAN, hi = NAN;
    fprintf(o, "\nWhat the seed costs: khashlite / khashlite_unseeded (the same multiply "
               "without the seed), same runs.\n\n| n | metric | seeded ns | unseeded ns | "
               "seeded / unseeded |\n|---|---|---|---|---|\n");
    for (int pass = 0; pass < 2; ++pass)
        for (int s = 0; s < (pass ? nl : nn); ++s)
            for (int k = 0; k < (pass ? 2 : 12); ++k) {
                char m[48];
                long n = pass ? ls[s] : ns[s];
                if (pass)
                    snprintf(m, sizeof m, "%s_life_ns", k ? "seq" : "rand");
                else
                    snprintf(m, sizeof m, "%s_%s_ns", kinds[k / 4], ops[k % 4]);
                double a = v2("vs_khash", "khashlite", n, m), b = v2("vs_khash", "khashlite_unseeded", n, m);
                if (isnan(a) || isnan(b))
                    continue;
                fprintf(o, "| %ld | %s | %.1f | %.1f | %.2f |\n", n, m, a, b, a / b);
                keep_least(&lo, a / b);
                keep_most(&hi, a / b);
            }
    if (!isnan(lo))
        fprintf(o, "\nSeeded / unseeded ranges from %.2f to %.2f over these rows: compare with the "
                   "min..max spread of the rows themselves in summary.csv.\n", lo, hi);
}

/* T2: against khash with its identity hash. */
static void v2_khash(FILE *o)
{
    static const char *const kinds[] = {"seq", "mult", "rand", "stride", "ptr"};
    static const char *const ops[] = {"insert", "hit", "miss", "erase"};
    long ns[4], ls[4];
    int nn = sizes_of("vs_khash", "_hit_ns", ns, 4), nl = sizes_of("vs_khash", "_life_ns", ls, 4);
    fprintf(o, "\n### T2: against khash (identity hash for u32)\n\nu32 -> u32, ns per operation; hit in "
               "shuffled order. Keys: sequential 0..n-1, multiplicative i * 2654435761, random "
               "distinct, strided i * 64 and pointers 2^28 + i * 48 (48-byte objects side by side "
               "in a 32-bit heap). Sets above 2M keys run khashlite and khash only, with no "
               "strided or pointer set, no warmup, 3 "
               "repetitions of the random set and one of the others (the reps column of "
               "summary.csv), and the 10M "
               "sequential set times no misses: khash's identity hash sends the absent ids from "
               "2^24 on into the 10M-long run of occupied buckets, thousands of probes each, over "
               "a minute per repetition.\n\n"
               "| n | keys | op | khashlite | khash | boost | absl | khash / khashlite |\n"
               "|---|---|---|---|---|---|---|---|\n");
    for (int s = 0; s < nn; ++s)
        for (int k = 0; k < 5; ++k)
            for (int p = 0; p < 4; ++p) {
                char m[48];
                snprintf(m, sizeof m, "%s_%s_ns", kinds[k], ops[p]);
                if (k > 2 && isnan(v2("vs_khash", "khashlite", ns[s], m)))
                    continue;   /* not run at this size */
                fprintf(o, "| %ld | %s | %s |", ns[s], kinds[k], ops[p]);
                v2_khash_cells(o, ns[s], m, "%.1f");
            }
    fprintf(o, "\nIn cache: ns per table life (init, put n, get n, destroy).\n\n"
               "| n | keys | khashlite | khash | boost | absl | khash / khashlite |\n"
               "|---|---|---|---|---|---|---|\n");
    static const char *const life_kinds[] = {"rand", "seq"};
    for (int s = 0; s < nl; ++s)
        for (int k = 0; k < 2; ++k) {
            char m[48];
            snprintf(m, sizeof m, "%s_life_ns", life_kinds[k]);
            fprintf(o, "| %ld | %s |", ls[s], life_kinds[k]);
            v2_khash_cells(o, ls[s], m, "%.0f");
        }
    fprintf(o, "\n| target | measured | wanted | |\n|---|---|---|---|\n");
    /* metric, wanted khash / khashlite (issue 22's: erase at least level) */
    static const struct { const char *metric; double want; } big[] = {
        {"rand_insert_ns", 1.3}, {"rand_hit_ns", 1.3}, {"rand_erase_ns", 1.0}, {"rand_miss_ns", 2.0},
        {"seq_hit_ns", 1.0}, {"mult_hit_ns", 1.0}};
    for (int s = 0; s < nn; ++s)
        for (int i = 0; i < 6; ++i) {
            char what[96];
            snprintf(what, sizeof what, "T2 n=%ld %s: khash / khashlite", ns[s], big[i].metric);
            target(o, what, v2("vs_khash", "khash", ns[s], big[i].metric) /
                                v2("vs_khash", "khashlite", ns[s], big[i].metric), big[i].want, 1, "x");
        }
    for (int s = 0; s < nl; ++s)
        for (int k = 0; k < 2; ++k) {
            char what[96], m[48];
            snprintf(m, sizeof m, "%s_life_ns", life_kinds[k]);
            snprintf(what, sizeof what, "T2 life of %ld %s keys: khash / khashlite", ls[s],
                     k ? "sequential" : "random");
            target(o, what, v2("vs_khash", "khash", ls[s], m) / v2("vs_khash", "khashlite", ls[s], m),
                   k ? 1.0 : 1.3, 1, "x");
        }
    v2_seed_cost(o, ns, nn, ls, nl);
}

/* T6: a weak hash (the identity) against khl_hash_u64, the table's own. */
static void v2_weak_hash(FILE *o)
{
    static const char *const kinds[] = {"seq", "mult", "stride", "ptr"};
    static const char *const ops[] = {"insert", "hit", "miss", "erase"};
    long ns[4];
    int nn = sizes_of("weak_hash", "_hit_ns", ns, 4);
    double worst = NAN, worst_any = NAN;
    char worst_row[64] = "", worst_any_row[64] = "";
    if (!nn)
        return;
    fprintf(o, "\n### T6: a weak hash\n\nu64 -> u32, ns per operation as in T2 (hit in shuffled "
               "order), sequential keys 0..n-1, multiplicative i * 2654435761, strided i * 64 "
               "and pointers 0x7f3a40000000 + i * 48 (48-byte objects side by side in a heap, "
               "an interpreter's object addresses): khashlite with "
               "the identity as its hash_fn, not declared mixed, so that the table multiplies it, "
               "against khl_hash_u64 (declared mixed), the two taking turns in each repetition "
               "(3 times the repetitions at 2^14 keys, whose passes last 40-60 us). The inserts "
               "fill from empty and include their page faults.\n\n"
               "| n | keys | op | khl_hash_u64 | identity | identity / khl_hash_u64 |\n"
               "|---|---|---|---|---|---|\n");
    for (int s = 0; s < nn; ++s)
        for (int k = 0; k < 4; ++k)
            for (int p = 0; p < 4; ++p) {
                char m[48];
                snprintf(m, sizeof m, "%s_%s_ns", kinds[k], ops[p]);
                double a = v2("weak_hash", "khashlite", ns[s], m),
                       b = v2("weak_hash", "khashlite_identity", ns[s], m), r = b / a;
                if (isnan(a))
                    continue;   /* a key set this run did not have */
                fprintf(o, "| %ld | %s | %s | %.1f | %.1f | %.2f |\n", ns[s], kinds[k], ops[p], a, b, r);
                if (k == 0 && keep_most(&worst, r))
                    snprintf(worst_row, sizeof worst_row, "n=%ld %s", ns[s], ops[p]);
                if (keep_most(&worst_any, r))
                    snprintf(worst_any_row, sizeof worst_any_row, "n=%ld %s %s", ns[s], kinds[k], ops[p]);
            }
    if (!isnan(worst_any))
        fprintf(o, "\nOver every key set, the identity's worst row is %.2fx khl_hash_u64's (%s).\n",
                worst_any, worst_any_row);
    fprintf(o, "\n| target | measured | wanted | |\n|---|---|---|---|\n");
    char what[128];
    snprintf(what, sizeof what, "T6 identity hash on sequential u64 keys / khl_hash_u64, worst (%s)",
             worst_row);
    target(o, what, worst, 1.2, 0, "x");
}

/* T3: tables of 1..8 keys. */
static void v2_tiny(FILE *o)
{
    double worst_allocs = NAN, least_allocs = NAN, worst_bytes = NAN, iv = NAN, worst_flat = NAN;
    long worst_flat_n = 0;
    int paired = 0;   /* the paired ratios are in this run */
    fprintf(o, "\n### T3: tiny tables\n\nA life: init, put n random keys, get them, destroy (ns). "
               "Allocations per life, and the heap a table of n keys holds as glibc spends it "
               "(malloc_usable_size + 8 per live block; the handle, which the caller owns, is not "
               "included: its size is listed below). mruby 3.1's iv_tbl is its 16-byte header and "
               "48-byte array, computed the same way.\n\n"
               "| n | life ns: khashlite / boost / absl / khash | allocs per life | heap bytes "
               "(+ mruby iv_tbl) |\n|---|---|---|---|\n");
    for (long n = 1; n <= 8; ++n) {
        fprintf(o, "| %ld |", n);
        for (int pass = 0; pass < 3; ++pass) {
            static const char *const metrics[] = {"life_ns", "allocs_per_life", "heap_bytes"};
            if (pass == 2 && n > 4) {
                fprintf(o, " – |");
                continue;
            }
            for (int t = 0; t < N_V2; ++t) {
                double v = v2("tiny", v2_tables[t], n, metrics[pass]);
                fputs(t ? " /" : "", o);
                if (isnan(v))
                    fputs(" –", o);
                else
                    fprintf(o, " %.0f", v);
            }
            if (pass == 2)
                fprintf(o, " (%.0f)", v2("tiny", "mruby_iv_tbl", n, "heap_bytes"));
            fprintf(o, " |");
        }
        fputc('\n', o);
        double a = v2("tiny", "khashlite", n, "allocs_per_life");
        keep_most(&worst_allocs, a);
        keep_least(&least_allocs, a);
        double f = v2("tiny", "khashlite", n, "life_ns_over_flat");
        if (isnan(f)) {   /* a run from before the paired ratio: the medians' */
            f = v2("tiny", "khashlite", n, "life_ns") / v2("tiny", "flat_array", n, "life_ns");
        } else {
            paired = 1;
        }
        if (keep_most(&worst_flat, f))
            worst_flat_n = n;
        double b = n <= 4 ? v2("tiny", "khashlite", n, "heap_bytes") : NAN;
        double m = n <= 4 ? v2("tiny", "mruby_iv_tbl", n, "heap_bytes") : NAN;
        keep_most(&worst_bytes, b);
        keep_least(&iv, m);
    }
    fprintf(o, "\nHandle bytes (held by the caller, not on the heap): khashlite %.0f, boost %.0f, "
               "absl %.0f, khash %.0f (a pointer to its heap header), mruby iv_tbl %.0f.\n",
            v2("tiny", "khashlite", 0, "handle_bytes"), v2("tiny", "boost", 0, "handle_bytes"),
            v2("tiny", "absl", 0, "handle_bytes"), v2("tiny", "khash", 0, "handle_bytes"),
            v2("tiny", "mruby_iv_tbl", 0, "handle_bytes"));
    fprintf(o, "\nA flat array (CRuby's ar_table shape: pairs in one small array, scanned, room for 8 "
               "at the first put) lives in ns, n = 1..8:");
    for (long n = 1; n <= 8; ++n)
        fprintf(o, " %.0f", v2("tiny", "flat_array", n, "life_ns"));
    fprintf(o, "; its heap at 1..4 keys %.0f B.", v2("tiny", "flat_array", 1, "heap_bytes"));
    if (paired) {
        fprintf(o, " khashlite's life over the flat array's, paired by repetition (the median of "
                   "each repetition's ratio), n = 1..8:");
        for (long n = 1; n <= 8; ++n)
            fprintf(o, " %.2f", v2("tiny", "khashlite", n, "life_ns_over_flat"));
        fputc('.', o);
    }
    fputc('\n', o);
    /* Any key type: u64 -> u32 and string -> u64, against the flat array. */
    static const char *const others[] = {"u64", "str16"};
    double worst_other = NAN, worst_other_bytes = NAN;
    long worst_other_n = 0;
    const char *worst_other_key = "";
    if (!isnan(v2("tiny", "khashlite", 1, "u64_life_ns_over_flat"))) {
        fprintf(o, "\nOther key types, random: u64 -> u32 and 16-character strings -> u64 (whose "
                   "flat array compares with strcmp). khashlite's life over the flat array's (paired, "
                   "as above), its allocations per life, n = 1..8, and the heap of a table of 1..4 "
                   "keys, khashlite / flat array:\n\n| keys | life ratio | allocs per life | heap "
                   "bytes |\n|---|---|---|---|\n");
        for (int k = 0; k < 2; ++k) {
            char m[48];
            fprintf(o, "| %s |", others[k]);
            snprintf(m, sizeof m, "%s_life_ns_over_flat", others[k]);
            for (long n = 1; n <= 8; ++n) {
                double f = v2("tiny", "khashlite", n, m);
                fprintf(o, " %.2f", f);
                if (keep_most(&worst_other, f)) {
                    worst_other_n = n;
                    worst_other_key = others[k];
                }
            }
            fprintf(o, " |");
            snprintf(m, sizeof m, "%s_allocs_per_life", others[k]);
            for (long n = 1; n <= 8; ++n)
                fprintf(o, " %.0f", v2("tiny", "khashlite", n, m));
            snprintf(m, sizeof m, "%s_heap_bytes", others[k]);
            for (long n = 1; n <= 4; ++n) {
                double b = v2("tiny", "khashlite", n, m);
                keep_most(&worst_other_bytes, b);
            }
            fprintf(o, " | %.0f / %.0f |\n", v2("tiny", "khashlite", 4, m), v2("tiny", "flat_array", 4, m));
        }
    }
    char what[128];
    fprintf(o, "\n| target | measured | wanted | |\n|---|---|---|---|\n");
    snprintf(what, sizeof what, "T3 life on glibc: khashlite / flat array%s, n = 1..8, most (n = %ld)",
             paired ? " (paired)" : "", worst_flat_n);
    target(o, what, worst_flat, 1.5, 0, "x");
    target(o, "T3 heap bytes of a 1..4-key table on glibc, most", worst_bytes, 96, 0, " B");
    snprintf(what, sizeof what, "T3 life on glibc, u64 and string keys: khashlite / flat array "
             "(paired), n = 1..8, most (%s, n = %ld)", worst_other_key, worst_other_n);
    target(o, what, worst_other, 1.5, 0, "x");
    target(o, "T3 heap bytes of a 1..4-key table on glibc, u64 and string keys, most",
           worst_other_bytes, 96, 0, " B");
    target(o, "T3 allocations per life, n = 1..8, most", worst_allocs, 1, 0, "");
    target(o, "T3 allocations per life, n = 1..8, fewest", least_allocs, 1, 1, "");
    target(o, "T3 life of 8 keys: khashlite / boost",
           v2("tiny", "khashlite", 8, "life_ns") / v2("tiny", "boost", 8, "life_ns"), 1.0, 0, "x");
    target(o, "T3 heap bytes of a 1..4-key table, most (wanted: mruby iv_tbl's)", worst_bytes, iv, 0,
           " B");
}

/* T4: u64 -> 448-bit growth to 2M keys. */
static void v2_growth(FILE *o)
{
    long ns[2];
    if (!sizes_of("growth", "insert_ns", ns, 1))
        return;
    fprintf(o, "\n### T4: growth, u64 -> 448-bit, %ld keys without reserve\n\n"
               "At most 3 repetitions, no warmup. "
               "Peak: the most bytes the table held at any moment (the worst rebuild), counted "
               "through its allocator as glibc spends them; per key: divided by the keys the table "
               "held at that moment.\n\n"
               "| table | ns per insert | peak bytes | keys at peak | peak bytes per key | "
               "bytes per key at the end |\n|---|---|---|---|---|---|\n", ns[0]);
    for (int t = 0; t < N_V2; ++t) {
        fprintf(o, "| %s |", v2_tables[t]);
        cell(o, v2("growth", v2_tables[t], ns[0], "insert_ns"), "%.1f");
        cell(o, v2("growth", v2_tables[t], ns[0], "peak_bytes"), "%.0f");
        cell(o, v2("growth", v2_tables[t], ns[0], "keys_at_peak"), "%.0f");
        cell(o, v2("growth", v2_tables[t], ns[0], "peak_bytes_per_key"), "%.1f");
        cell(o, v2("growth", v2_tables[t], ns[0], "bytes_per_key_end"), "%.1f");
        fputc('\n', o);
    }
    fprintf(o, "\n| target | measured | wanted | |\n|---|---|---|---|\n");
    target(o, "T4 u64 -> 448-bit insert: khashlite / khash",
           v2("growth", "khashlite", ns[0], "insert_ns") / v2("growth", "khash", ns[0], "insert_ns"),
           1.2, 0, "x");
}

static void core_v2(FILE *o)
{
    if (!find("peers", NULL, NULL, NULL, -1, NULL) && !find("vs_khash", NULL, NULL, NULL, -1, NULL))
        return;
    fprintf(o, "\n## Table core v2 targets\n\nkhashlite against boost::unordered_flat_map, "
               "absl::flat_hash_map and htslib's khash in one process (bench/programs/peers.c, glibc): "
               "tables take turns in every repetition, the first rotating, medians; the peers "
               "workload gives every table the same hash, the others each table its own default. "
               "Measured here, never asserted by `make test`.\n");
    v2_peers(o);
    v2_khash(o);
    v2_tiny(o);
    v2_growth(o);
    v2_weak_hash(o);
}

/* --- plots ---------------------------------------------------------------- */

static int gnuplot(const char *dir, const char *script)
{
    char cmd[1024];
    FILE *p;
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot", dir);
    p = popen(cmd, "w");
    if (!p)
        return -1;
    fputs(script, p);
    return pclose(p);
}

/* ratio: plot split2/single and split3/single instead of the values. */
static void churn_plot(const char *dir, const char *metric, const char *file, const char *ylabel, int ratio)
{
    char path[512], script[8192];
    int panels = 0, used = 0;
    snprintf(path, sizeof path, "%s/%s.dat", dir, file);
    FILE *d = fopen(path, "w");
    if (!d)
        return;
    /* One gnuplot data block per allocator: n single split2 split3. */
    for (int a = 0; a < N_ALLOC; ++a) {
        if (isnan(val("churn_int", "khashlite", "single", allocators[a], 8, metric)))
            continue;
        fprintf(d, "# %s\n", allocators[a]);
        for (int i = 0; i < N_CHURN; ++i) {
            double s1 = val("churn_int", "khashlite", "single", allocators[a], churn_n[i], metric);
            double s2 = val("churn_int", "khashlite", "split2", allocators[a], churn_n[i], metric);
            double s3 = val("churn_int", "khashlite", "split3", allocators[a], churn_n[i], metric);
            if (ratio && churn_n[i] > 0)
                fprintf(d, "%ld 1 %g %g\n", churn_n[i], s2 / s1, s3 / s1);
            else if (!ratio)
                fprintf(d, "%ld %g %g %g\n", churn_n[i], s1, s2, s3);
        }
        fprintf(d, "\n\n");
        panels++;
    }
    fclose(d);
    if (!panels)
        return;
    used = snprintf(script, sizeof script,
                    "set terminal svg size %d,360 dynamic font 'sans,10' noenhanced\nset output '%s.svg'\n"
                    "set multiplot layout 1,%d title 'churn, int keys: %s vs n'\n"
                    "set key top left\nset xlabel 'n keys'\nset logscale x 2\nset xrange [0.8:80]\n",
                    300 * panels, file, panels, ylabel);
    for (int a = 0, idx = 0; a < N_ALLOC; ++a) {
        if (isnan(val("churn_int", "khashlite", "single", allocators[a], 8, metric)))
            continue;
        used += snprintf(script + used, sizeof script - (size_t)used,
                         "set title '%s'\nplot '%s.dat' index %d using 1:2 with linespoints title 'single', "
                         "'' index %d using 1:3 with linespoints title 'split2', "
                         "'' index %d using 1:4 with linespoints title 'split3'\n",
                         allocators[a], file, idx, idx, idx);
        idx++;
    }
    snprintf(script + used, sizeof script - (size_t)used, "unset multiplot\n");
    gnuplot(dir, script);
}

/* The per-call trace of the post's contenders at 100 B (100,000 calls in a
 * standard run), cut into LAT_WINDOWS windows of consecutive calls: for each,
 * the slowest call (the spikes the post is about, and when they come) and the
 * median (the body).  latency.dat keeps only those points, so the committed
 * plot stays small; the traces themselves are not committed. */
#define LAT_WINDOWS 100

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* One trace's windows into out as gnuplot rows "first_call max median";
 * 0, or -1 when the trace cannot be read. */
static int latency_windows(const char *path, FILE *out)
{
    FILE *f = fopen(path, "r");
    uint32_t *ns = NULL, *w;
    size_t n = 0, cap = 0, per;
    long i;
    unsigned v;
    if (!f)
        return -1;
    while (fscanf(f, "%ld %u", &i, &v) == 2) {
        if (n == cap) {
            uint32_t *g = realloc(ns, (cap = cap ? 2 * cap : 4096) * sizeof *ns);
            if (!g)
                break;
            ns = g;
        }
        ns[n++] = v;
    }
    fclose(f);
    per = (n + LAT_WINDOWS - 1) / LAT_WINDOWS;
    if (n == 0 || !(w = malloc(per * sizeof *w))) {
        free(ns);
        return -1;
    }
    for (size_t at = 0; at < n; at += per) {
        size_t k = n - at < per ? n - at : per;
        memcpy(w, ns + at, k * sizeof *w);
        qsort(w, k, sizeof *w, cmp_u32);
        fprintf(out, "%zu %u %u\n", at, w[k - 1], w[k / 2]);
    }
    fprintf(out, "\n\n");
    free(w);
    free(ns);
    return 0;
}

/* Each script's speed-up over stock (median, min and max of the paired
 * repetitions' ratios): khl on glibc and on khl_pool. */
static void mruby_plot(const char *dir)
{
    static const char *const allocs[] = {"glibc", "khl_pool"};
    char path[512];
    int points = 0;
    snprintf(path, sizeof path, "%s/mruby.dat", dir);
    FILE *d = fopen(path, "w");
    if (!d)
        return;
    for (int a = 0; a < 2; ++a) {
        fprintf(d, "# khl on %s: index script median min max\n", allocs[a]);
        for (size_t i = 0; i < N_MRUBY_SCRIPTS; ++i) {
            const row_t *r = find("mruby_run", mruby_scripts[i], "khl", allocs[a], -1, "ratio_vs_stock");
            if (!r)
                continue;
            fprintf(d, "%g %s %g %g %g\n", (double)i + 0.15 * (2 * a - 1), mruby_scripts[i], r->median,
                    r->min, r->max);
            points++;
        }
        fprintf(d, "\n\n");
    }
    fclose(d);
    if (!points)
        return;
    gnuplot(dir, "set terminal svg size 800,360 dynamic font 'sans,10' noenhanced\n"
                 "set output 'mruby.svg'\n"
                 "set title 'mruby 3.1: stock CPU seconds / khl CPU seconds, same round (above 1: khl is faster)'\n"
                 "set key top right\nset yrange [0:*]\nset xrange [-0.5:5.5]\n"
                 "set arrow from -0.5,1 to 5.5,1 nohead dashtype 2\n"
                 "plot 'mruby.dat' index 0 using 1:3:4:5:xtic(2) with yerrorbars pointtype 7 "
                 "title 'khl on glibc', '' index 1 using 1:3:4:5 with yerrorbars pointtype 5 "
                 "title 'khl on khl_pool'\n");
}

/* Issue 14: small-table churn on one pool, its allocator reached through
 * the hook or named at compile time (KHL_INIT_ALLOC). */
static void churn_alloc_section(FILE *o)
{
    static const char *const ways[] = {"hook", "named", "named_inline"};
    if (!find("churn_alloc", NULL, NULL, NULL, -1, NULL))
        return;
    fprintf(o, "\n### The pool's allocator named at compile time\n\nchurn_int's single layout on one "
               "khl_pool (bench/programs/churn.c, churn_alloc), ns per lifecycle: through the hook "
               "(khl_pool_allocator), and as KHL_INIT_ALLOC types naming khl_pool_allocf (the "
               "library's function, called directly) or khl_pool_allocf_inline (the pool's fast "
               "paths inlined into the table's code). The three are interleaved, their order "
               "rotated each repetition; the last column pairs hook and inline repetition by "
               "repetition (above 1: inline is faster).\n\n"
               "| n | hook | named | named_inline | hook / inline [min, max] |\n|---|---|---|---|---|\n");
    for (int i = 0; i < N_CHURN; ++i) {
        const row_t *r = find("churn_alloc", "khashlite", "named_inline", "khl_pool", churn_n[i],
                              "hook_over_inline_same_process");
        if (!r)
            continue;
        fprintf(o, "| %ld |", churn_n[i]);
        for (int w = 0; w < 3; ++w)
            cell(o, val("churn_alloc", "khashlite", ways[w], "khl_pool", churn_n[i], "ns_per_lifecycle"), "%.1f");
        fprintf(o, " %.3f [%.3f, %.3f] |\n", r->median, r->min, r->max);
    }
}

static void latency_plot(const char *dir)
{
    static const char *const who[] = {"glibc", "boost_pool", "khl_pool", "khl_pool_reserved"};
    char script[4096], path[512];
    int idx = 0;
    snprintf(path, sizeof path, "%s/latency.dat", dir);
    FILE *dat = fopen(path, "w");
    if (!dat) {
        perror(path);
        return;
    }
    int used = snprintf(script, sizeof script,
                        "set terminal svg size 900,420 dynamic font 'sans,10' noenhanced\n"
                        "set output 'latency.svg'\n"
                        "set title 'allocation latency, 100 B: slowest and median call of each "
                        "%d%% of the calls'\n"
                        "set xlabel 'call index'\nset ylabel 'ns'\nset logscale y\nset key top left\n"
                        "plot 1/0 notitle", 100 / LAT_WINDOWS > 0 ? 100 / LAT_WINDOWS : 1);
    for (int i = 0; i < 4; ++i) {
        snprintf(path, sizeof path, "%s/traces/latency_%s_100.dat", dir, who[i]);
        if (latency_windows(path, dat) < 0)
            continue;
        used += snprintf(script + used, sizeof script - (size_t)used,
                         ", 'latency.dat' index %d using 1:2 with lines linecolor %d "
                         "title '%s slowest', "
                         "'' index %d using 1:3 with lines dashtype 2 linecolor %d title '%s median'",
                         idx, i + 1, who[i], idx, i + 1, who[i]);
        idx++;
    }
    fclose(dat);
    snprintf(script + used, sizeof script - (size_t)used, "\n");
    gnuplot(dir, script);
}

static int same_key(const row_t *a, const row_t *b)
{
    return !strcmp(a->workload, b->workload) && !strcmp(a->table, b->table) &&
           !strcmp(a->layout, b->layout) && !strcmp(a->allocator, b->allocator) && a->n == b->n;
}

/* DIR/summary.csv (the format is at the top of this file). */
static void write_summary(const char *dir)
{
    enum { MAX_METRICS = MAX_COLS / 3 };
    char path[512];
    snprintf(path, sizeof path, "%s/summary.csv", dir);
    FILE *o = fopen(path, "w");
    if (!o) {
        perror(path);
        exit(1);
    }
    for (size_t w = 0; w < n_rows; ++w) {
        const char *wl = rows[w].workload, *metrics[MAX_METRICS];
        int ranged[MAX_METRICS], nm;
        if (!first_of_workload(w))
            continue;
        nm = workload_metrics(w, metrics, ranged, MAX_METRICS);
        fprintf(o, "%sworkload,table,layout,allocator,n,reps", w ? "\n" : "");
        for (int m = 0; m < nm; ++m)
            fprintf(o, ranged[m] ? ",%s,%s_min,%s_max" : ",%s", metrics[m], metrics[m], metrics[m]);
        fputc('\n', o);
        for (size_t k = w; k < n_rows; ++k) {
            const row_t *key = &rows[k];
            int reps = 0, first = 1;
            if (strcmp(key->workload, wl))
                continue;
            for (size_t i = w; i < k && first; ++i)
                first = !same_key(&rows[i], key);
            if (!first)
                continue;
            for (size_t i = k; i < n_rows; ++i)
                if (same_key(&rows[i], key) && rows[i].reps > reps)
                    reps = rows[i].reps;
            fprintf(o, "%s,%s,%s,%s,%ld,%d", key->workload, key->table, key->layout, key->allocator, key->n,
                    reps);
            for (int m = 0; m < nm; ++m) {
                const row_t *r = NULL;
                for (size_t i = k; i < n_rows && !r; ++i)
                    if (same_key(&rows[i], key) && !strcmp(rows[i].metric, metrics[m]))
                        r = &rows[i];
                if (!r)
                    fprintf(o, ranged[m] ? ",,," : ",");
                else if (ranged[m] && spread(r))
                    fprintf(o, ",%s,%s,%s", r->s_median, r->s_min, r->s_max);
                else
                    fprintf(o, ranged[m] ? ",%s,," : ",%s", r->s_median);
            }
            fputc('\n', o);
        }
    }
    fclose(o);
}

int main(int argc, char **argv)
{
    char path[512], line[256];
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR (with DIR/results.csv or DIR/summary.csv)\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    snprintf(path, sizeof path, "%s/results.csv", dir);
    if (load(path)) {
        snprintf(path, sizeof path, "%s/summary.csv", dir);
        if (load(path)) {
            fprintf(stderr, "%s: no results.csv, no summary.csv\n", dir);
            return 1;
        }
    } else {
        write_summary(dir);
    }
    snprintf(path, sizeof path, "%s/REPORT.md", dir);
    FILE *o = fopen(path, "w");
    if (!o) {
        perror(path);
        return 1;
    }
    fprintf(o, "# khashlite benchmark report\n\n"
               "What does putting a hash table in one allocation buy, on which allocator, at which "
               "sizes? `single` is khashlite (header + control bytes + keys + values in one block), "
               "`split2` the same table with header and data apart (mruby since 2013), `split3` with "
               "header, control bytes, keys and values each allocated (klib's khash). Every figure is "
               "the median of several repetitions after warm-up (min and max in `summary.csv` beside "
               "this report); "
               "ratios compare rows of this one run.\n\n## Headline\n");
    headline(o, "churn_int");
    fprintf(o, "\nThe khl_pool rows come from a later process than the glibc rows; the same "
               "process also timed the single layout on glibc between the pool's repetitions: "
               "glibc / pool for single, n = 1, 2, 4, 8, 16, 32, 64:");
    for (int i = 1; i < N_CHURN; ++i) {
        double r = val("churn_int", "khashlite", "single", "khl_pool", churn_n[i],
                       "malloc_over_pool_same_process");
        fprintf(o, "%s %.2f", i == 1 ? "" : ",", r);
    }
    fprintf(o, " (above 1: the pool is faster).\n");
    fprintf(o, "\n### The price of one allocation\n\nns per allocate + first write + free through the "
               "allocator hook, at the block sizes of 8, 16 and 32 buckets: what each extra allocation "
               "of a split layout costs when nothing else runs.\n\n| allocator | 88 B | 160 B | 304 B |\n"
               "|---|---|---|---|\n");
    for (int a = 0; a < N_ALLOC; ++a) {
        if (isnan(val("hook_pair", NULL, NULL, allocators[a], 88, "ns_per_pair")))
            continue;
        fprintf(o, "| %s |", allocators[a]);
        cell(o, val("hook_pair", NULL, NULL, allocators[a], 88, "ns_per_pair"), "%.1f");
        cell(o, val("hook_pair", NULL, NULL, allocators[a], 160, "ns_per_pair"), "%.1f");
        cell(o, val("hook_pair", NULL, NULL, allocators[a], 304, "ns_per_pair"), "%.1f");
        fputc('\n', o);
    }
    churn_alloc_section(o);
    no_gain(o);
    targets(o);
    target_notes(o);
    core_v2(o);
    fprintf(o, "\n## Plots\n\nNot committed: `make bench` writes them to `build/bench/latest/` "
               "(`$(BUILD)/bench/latest/`), beside the run's every output (the full `results.csv`, "
               "the traces, each plot's `.dat`): `churn_ns.svg` (ns per lifecycle), `churn_ratio.svg` "
               "(relative to single), `churn_bytes.svg` (bytes per table), `latency.svg` (latency "
               "trace) and `mruby.svg` (mruby: stock CPU seconds / khl CPU seconds, paired).\n");
    fprintf(o, "\n## Churn, other key types and reserve\n");
    churn_ratios(o);
    fprintf(o, "\n## Many live tables\n\nBytes per table as the allocator spends them (RSS growth "
               "while the tables are built, handle included), and ns per random lookup across them.\n");
    dump(o, "many");
    fprintf(o, "\n## One large table, against real peers\n");
    dump(o, "large");
    fprintf(o, "\n## Interpreters\n\nReal mruby and Lua running our scripts with each allocator "
               "(time and peak RSS), and an interpreter-style object model whose instance-variable "
               "tables are khashlite single, split3 or htslib's khash.\n");
    dump(o, "interp");
    objmodel_table(o);
    dump(o, "objmodel_live");
    mruby_section(o);
    mruby_pool_section(o);
    fprintf(o, "\n## The seeds, reproduced\n");
    seeds_side_by_side(o);
    pool_latency_section(o);
    pool_threads_section(o);
    large_churn_section(o);
    huge_pages_section(o);
    /* The seeds' every row is in summary.csv; the sections above give the
     * figures the posts published, and the report stays within the results'
     * budget. */
    fprintf(o, "\nEvery seed measurement, each metric's median, min and max: the `seed_*` "
               "blocks of summary.csv.\n");
    fprintf(o, "\n## Machine and build\n\n```\n");
    snprintf(path, sizeof path, "%s/machine.txt", dir);
    FILE *m = fopen(path, "r");
    if (m) {
        while (fgets(line, sizeof line, m))
            fputs(line, o);
        fclose(m);
    }
    fprintf(o, "```\n");
    fclose(o);
    churn_plot(dir, "ns_per_lifecycle", "churn_ns", "ns per lifecycle", 0);
    churn_plot(dir, "ns_per_lifecycle", "churn_ratio", "time relative to single (above 1: single is faster)", 1);
    churn_plot(dir, "bytes_asked_per_table", "churn_bytes", "bytes asked per table", 0);
    latency_plot(dir);
    mruby_plot(dir);
    return 0;
}
