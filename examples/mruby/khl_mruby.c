/* khl_mruby.c: runs a Ruby script under a real mruby (Debian's libmruby 3.1)
 * whose every allocation goes through the allocator hook of
 * mrb_open_allocf(), so the same script can be timed on the libc malloc (or
 * whatever LD_PRELOAD puts there) and on khashlite's pool.
 *
 *   khl-mruby [--alloc=libc|pool|pool-reserved] [--limit=BYTES] [--stats] [--csv=NAME] SCRIPT.rb
 *
 *   --alloc=libc           mruby's own mrb_default_allocf (realloc/free)
 *   --alloc=pool           a khl_pool, through the unsized calls (mruby's
 *                          hook never passes the old size)
 *   --alloc=pool-reserved  the pool with blocks of mruby's commonest small
 *                          sizes reserved before mrb_open_allocf (see
 *                          reserve_common_sizes)
 *   --limit=BYTES          the pool may hold at most BYTES of system memory:
 *                          past it the script gets NoMemoryError
 *   --stats                one line on stderr at exit: wall time, peak RSS,
 *                          pool counters (in use after mrb_close, peak,
 *                          system bytes, allocs, frees)
 *   --csv=NAME             the same numbers as CSV rows (bench/harness/bench.h's
 *                          columns, workload `interp`, table NAME) on
 *                          stdout after the script's own output
 *
 * The environment variable KHL_SCALE is handed to the script as the global
 * $KHL_SCALE (an Integer, or nil when unset): Debian's mruby has no ENV.
 *
 * Flags, exit status and the report are examples/host.h's (exit status 3,
 * bytes left in the pool after mrb_close, is what the test suite checks). */
#define _XOPEN_SOURCE 700
#include <mruby.h>
#include <mruby/compile.h>
#include <mruby/variable.h>

#include "examples/host.h"
#include "khashlite/khl_pool_inline.h"

/* mruby 3.x allocf: realloc semantics without the old size.  ptr NULL
 * allocates; size 0 frees (mrb_free passes 0); anything else resizes, the
 * pool finding the old size from the block's chunk header (small) or frame
 * header (large, over 16 KiB: mruby's GC heap pages are such blocks).  A
 * NULL return makes mruby run its GC and retry once, then raise
 * NoMemoryError, so failure needs no special handling here.  Allocations
 * and frees take the pool's inline fast paths (khl_pool_inline.h): calling
 * the library's functions instead cost up to 0.3% more instructions
 * (bm_app_lc_fizzbuzz; 0.02-0.05% on the other scripts that allocate). */
static void *pool_allocf(mrb_state *mrb, void *ptr, size_t size, void *ud)
{
    khl_pool_t *pool = ud;
    (void)mrb;
    if (size == 0) {
        khl_pool_free_unsized_inline(pool, ptr);   /* NULL is a no-op */
        return NULL;
    }
    if (ptr == NULL)
        return khl_pool_alloc_inline(pool, size);
    return khl_pool_realloc_unsized(pool, ptr, size);
}

/* What pool-reserved reserves: the size classes mruby 3.1 requests most,
 * counted with an instrumented allocf while opening a state (core + the 31
 * Debian gems: ~760 blocks, mostly 16 and 48 B, then 96 and 192 B) and
 * running bench/ruby/{ao_render,hash_churn,strings}.rb.  Objects themselves live in mruby's GC heap pages
 * (large blocks, beyond any class), so the small blocks are what hangs off
 * them: instance-variable tables (a 16 B header plus 48 B for three ivars:
 * ao_render's Vec, ~160k of each per 20x20 image), Hash entry arrays (64,
 * 160, 256 B as a 1..16-entry Hash grows: hash_churn), string buffers (32 B
 * and up: strings), and 80 B blocks in ao_render.  The counts are about the
 * live peak of each class between two GC cycles at the standard sizes
 * (~0.8 MB in all), so the steady state never takes a chunk from the
 * system; past that the free lists recycle blocks anyway. */
static const host_reserve_t reserve_plan[] = {
    {16, 4096}, {32, 1024}, {48, 4096}, {64, 2048}, {80, 1024}, {160, 1024}, {256, 512},
};

static const char usage[] =
    "usage: khl-mruby [--alloc=libc|pool|pool-reserved] [--limit=BYTES] [--stats] [--csv=NAME]\n"
    "       SCRIPT.rb\n"
    "  --limit=BYTES: the most system memory the pool may hold (pool modes)\n"
    "  KHL_SCALE in the environment becomes the script's $KHL_SCALE\n";

/* Runs the script; 0, or 1 when it raised (NoMemoryError included), or 2
 * when mruby had no memory for a compiler context. */
static int run_script(mrb_state *mrb, FILE *f, const host_t *h)
{
    int status = 0;
    mrb_gv_set(mrb, mrb_intern_lit(mrb, "$KHL_SCALE"),
               h->scale_env ? mrb_fixnum_value((mrb_int)h->scale) : mrb_nil_value());
    mrbc_context *cxt = mrbc_context_new(mrb);
    if (cxt == NULL) {
        fputs("khl-mruby: out of memory\n", stderr);
        return 2;
    }
    mrbc_filename(mrb, cxt, h->path);
    mrb_load_file_cxt(mrb, f, cxt);
    if (mrb->exc && mrb->exc == mrb->nomem_err) {
        /* mrb_print_error allocates, and the script still holds what it
         * took: under --limit it would print nothing. */
        fflush(stdout);
        fputs("khl-mruby: NoMemoryError: Out of memory\n", stderr);
        status = 1;
    } else if (mrb->exc) {
        fflush(stdout);
        mrb_print_error(mrb);   /* message and backtrace on stderr */
        status = 1;
    }
    mrbc_context_free(mrb, cxt);
    return status;
}

int main(int argc, char **argv)
{
    host_t h = {"khl-mruby", "mruby", HOST_LIBC, 0, NULL, NULL, NULL, 0, NULL, 0, 0};
    int status = host_parse(&h, argc, argv, usage);
    if (status)
        return status < 0 ? 0 : status;
    FILE *f = fopen(h.path, "r");
    if (f == NULL) {
        perror(h.path);
        return 2;
    }
    if (host_open(&h, reserve_plan, sizeof reserve_plan / sizeof reserve_plan[0]) < 0) {
        fclose(f);
        return 2;
    }
    mrb_state *mrb = h.pool ? mrb_open_allocf(pool_allocf, h.pool)
                            : mrb_open_allocf(mrb_default_allocf, NULL);
    if (mrb == NULL) {
        fputs("khl-mruby: mrb_open_allocf failed (out of memory)\n", stderr);
        fclose(f);
        host_finish(&h, 2);
        return 2;
    }
    status = run_script(mrb, f, &h);
    fclose(f);
    mrb_close(mrb);
    return host_finish(&h, status);
}
