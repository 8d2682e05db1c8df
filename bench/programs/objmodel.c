/* objmodel.c: program `objmodel`, an interpreter's object churn on three
 * kinds of tiny tables.  examples/objmodel is a small object model (classes with method
 * tables, objects with instance-variable tables) whose tables are khashlite
 * single-block tables, khashlite split3 tables (khash's four allocations,
 * khashlite's probing) or htslib's khash.  The workload is
 * examples/objmodel/workload.h, the same code the demo and the tests run.
 *
 * objmodel:      n = ivars per object (0, 1, 3, 8).  Objects one at a time:
 *                create, set n ivars, read them, call two methods through
 *                the class hierarchy, free.
 * objmodel_live: n = objects alive at once, 0..8 ivars each (mixed, 4 on
 *                average): create all, visit all, free all.
 *
 * Metrics per (variant, n): ns_per_object (median/min/max of the
 * repetitions, variants interleaved in each repetition), then from one
 * untimed pass through a counting allocator: allocs_per_object (allocator
 * calls that return memory, a realloc counts as one) and bytes_per_object
 * (the bytes those calls asked for, summed over the object's life: the
 * object, its ivar table and every table it outgrew).  objmodel_live adds
 * footprint_bytes_per_object: the peak of bytes held / n, what a live
 * object costs once its table has stopped growing (before allocator
 * rounding). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/alloc.h"
#include "harness/bench.h"
#include "examples/objmodel/workload.h"
#include "support/om_check.h"

/* --- the runs ---------------------------------------------------------------- */

#define MAX_REPS 64

typedef struct counts {
    double allocs, bytes, footprint;    /* per object */
} counts_t;

static void die(const char *what)
{
    fprintf(stderr, "objmodel: %s failed (out of memory)\n", what);
    exit(1);
}

/* One phase on variant v: churn of `count` objects with n ivars, or (n < 0)
 * the live phase of `count` objects. */
static int run_phase(const om_variant_t *v, void *w, int n, long count, uint64_t *sum)
{
    return n >= 0 ? v->churn(w, n, count, sum) : v->live(w, count, sum);
}

/* The counting pass: a fresh world, counted only around the phase. */
static counts_t count_phase(const om_variant_t *v, const om_alloc_t *inner, int n, long count)
{
    check_alloc_t c;
    om_alloc_t a;
    counts_t r;
    uint64_t sum = 0, allocs0;
    double asked0;
    size_t live0;
    void *w;
    check_alloc_init(&c, &inner->sized, 0);
    a = om_alloc_check(&c);
    if (!(w = v->world_new(&a)))
        die("world_new");
    allocs0 = c.allocs;
    asked0 = c.asked;
    live0 = c.peak_bytes = c.live_bytes;
    if (run_phase(v, w, n, count, &sum) < 0)
        die("counting pass");
    BENCH_KEEP(sum);
    r.allocs = (double)(c.allocs - allocs0) / (double)count;
    r.bytes = (c.asked - asked0) / (double)count;
    r.footprint = (double)(c.peak_bytes - live0) / (double)count;
    v->world_free(w);
    if (c.live_bytes != 0)
        die("teardown (bytes left)");
    return r;
}

static void measure(const bench_opts_t *o, const om_alloc_t *a, const char *workload, int n,
                    long count, long rows_n)
{
    static double t[OM_N_VARIANTS][MAX_REPS];
    int reps = o->reps < MAX_REPS ? o->reps : MAX_REPS;
    uint64_t sums[OM_N_VARIANTS] = {0};
    void *w[OM_N_VARIANTS];
    /* All three worlds live at once; only one of them is khash, so klib's
     * global heap pointer stays right. */
    for (int v = 0; v < OM_N_VARIANTS; ++v)
        if (!(w[v] = om_variants[v].world_new(a)))
            die("world_new");
    for (int r = -o->warmup; r < reps; ++r) {
        for (int v = 0; v < OM_N_VARIANTS; ++v) {
            uint64_t t0 = bench_now_ns();
            if (run_phase(&om_variants[v], w[v], n, count, &sums[v]) < 0)
                die(workload);
            uint64_t t1 = bench_now_ns();
            if (r >= 0)
                t[v][r] = (double)(t1 - t0) / (double)count;
        }
    }
    for (int v = 0; v < OM_N_VARIANTS; ++v) {
        om_variants[v].world_free(w[v]);
        if (sums[v] != sums[0]) {
            fprintf(stderr, "objmodel: %s checksum differs between variants\n", workload);
            exit(1);
        }
    }
    for (int v = 0; v < OM_N_VARIANTS; ++v) {
        const om_variant_t *var = &om_variants[v];
        counts_t c = count_phase(var, a, n, n >= 0 ? 1000 : count);
        const char *al = bench_allocator(o);
        bench_row(o, workload, var->table, var->layout, al, rows_n, "ns_per_object",
                  bench_summarise(t[v], reps));
        bench_value(o, workload, var->table, var->layout, al, rows_n, "allocs_per_object", c.allocs);
        bench_value(o, workload, var->table, var->layout, al, rows_n, "bytes_per_object", c.bytes);
        if (n < 0)
            bench_value(o, workload, var->table, var->layout, al, rows_n,
                        "footprint_bytes_per_object", c.footprint);
    }
}

int main(int argc, char **argv)
{
    static const int ivars[] = {0, 1, 3, 8};
    bench_opts_t o;
    bench_alloc_t ba;
    om_alloc_t a;
    bench_parse(argc, argv, &o,
                "Interpreter object churn: ivar and method tables in khashlite single, "
                "khashlite split3 and khash.", NULL, 0);
    if (bench_alloc_open(&ba, &o) < 0)
        die("pool");
    a = ba.pool ? om_alloc_pool(ba.pool) : om_alloc_libc();
    long churn_n = o.quick ? 20000 : o.full ? 1000000 : 200000;
    long live_n = o.quick ? 20000 : o.full ? 1000000 : 200000;
    if (bench_wanted(&o, "objmodel")) {
        for (int i = 0; i < 4; ++i) {
            bench_progress("objmodel", i + 1, 5);
            measure(&o, &a, "objmodel", ivars[i], churn_n, ivars[i]);
        }
    }
    if (bench_wanted(&o, "objmodel_live")) {
        bench_progress("objmodel_live", 5, 5);
        measure(&o, &a, "objmodel_live", -1, live_n, live_n);
    }
    bench_alloc_close(&ba);
    return 0;
}
