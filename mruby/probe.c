/* probe.c: runs a Ruby script on an mruby (stock or khl, whichever it is
 * linked with) whose allocf counts every call and can be told to fail, so the
 * tests can see what an object costs the allocator and what happens when
 * memory runs out.  Memory comes from a khl_pool through sized calls: each
 * block carries a 16-byte prefix holding its requested size, which is what
 * the counts and the limit use (the pool's own classes round up).
 *
 *   khl-mrb-probe [--limit=BYTES] SCRIPT.rb
 *
 *   --limit=BYTES  allocations fail once the live bytes would exceed BYTES
 *                  more than when the script starts (after mrb_open and the
 *                  script's compilation: running out of memory inside
 *                  mruby's parser is mruby's business, not the tables')
 *
 * The script gets two Kernel methods:
 *   khl_alloc_stats  -> [allocating calls, freeing calls, live bytes,
 *                        the same three for blocks of at most SMALL bytes]
 *                       (a realloc counts as allocating; in the last three
 *                       as a free and an allocation, so that calls minus
 *                       frees is the number of blocks alive)
 *   khl_limit(n)     live bytes may grow by n more from now; nil: no limit
 *
 * Prints "probe: raised CLASS" on stdout when the script ends in an exception,
 * and "probe: allocs=N frees=M" (the allocf's calls over the whole run,
 * mrb_open to mrb_close) on stderr at exit.
 * KHL_SCALE in the environment becomes $KHL_SCALE, as in khl-mruby.
 * Exit status: 0 finished; 4 ended in NoMemoryError; 1 other exception; 2
 * setup error; 3 pool bytes still in use after mrb_close (wins over 0/1/4). */
#include <mruby.h>
#include <mruby/array.h>
#include <mruby/compile.h>
#include <mruby/variable.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "khashlite/khl_pool.h"

#define PREFIX 16u   /* keeps blocks aligned for max_align_t */
/* Tables of a few dozen keys are below it, a GC heap page (1024 object
 * slots) far above: the small counts see tables without the pages that the
 * objects owning them come from. */
#define SMALL 4096u

typedef struct probe {
    khl_pool_t *pool;
    size_t live, limit;     /* limit 0: none */
    unsigned long long allocs, frees;
    unsigned long long small_allocs, small_frees;
    size_t small_live;
} probe_t;

static void count_small(probe_t *pr, size_t freed, size_t allocated)
{
    if (freed && freed <= SMALL) {
        pr->small_live -= freed;
        pr->small_frees++;
    }
    if (allocated && allocated <= SMALL) {
        pr->small_live += allocated;
        pr->small_allocs++;
    }
}

static void *probe_allocf(mrb_state *mrb, void *ptr, size_t size, void *ud)
{
    probe_t *pr = ud;
    size_t old = 0;
    char *base = NULL, *nb;
    (void)mrb;
    if (ptr) {
        base = (char *)ptr - PREFIX;
        memcpy(&old, base, sizeof old);
    }
    if (size == 0) {
        if (ptr) {
            khl_pool_free(pr->pool, base, old + PREFIX);
            pr->live -= old;
            pr->frees++;
            count_small(pr, old, 0);
        }
        return NULL;
    }
    if (size > SIZE_MAX - PREFIX || (pr->limit && pr->live - old + size > pr->limit))
        return NULL;
    nb = ptr ? khl_pool_realloc(pr->pool, base, old + PREFIX, size + PREFIX)
             : khl_pool_alloc(pr->pool, size + PREFIX);
    if (nb == NULL)
        return NULL;
    memcpy(nb, &size, sizeof size);
    pr->live = pr->live - old + size;
    pr->allocs++;
    count_small(pr, old, size);
    return nb + PREFIX;
}

static probe_t *probe_of(mrb_state *mrb)
{
    return (probe_t *)mrb->allocf_ud;
}

static mrb_value m_alloc_stats(mrb_state *mrb, mrb_value self)
{
    probe_t *pr = probe_of(mrb);
    /* Read before the array exists, so its own allocation is not counted. */
    mrb_value v[6] = {mrb_int_value(mrb, (mrb_int)pr->allocs), mrb_int_value(mrb, (mrb_int)pr->frees),
                      mrb_int_value(mrb, (mrb_int)pr->live), mrb_int_value(mrb, (mrb_int)pr->small_allocs),
                      mrb_int_value(mrb, (mrb_int)pr->small_frees), mrb_int_value(mrb, (mrb_int)pr->small_live)};
    (void)self;
    return mrb_ary_new_from_values(mrb, 6, v);
}

static mrb_value m_limit(mrb_state *mrb, mrb_value self)
{
    probe_t *pr = probe_of(mrb);
    mrb_value n;
    (void)self;
    mrb_get_args(mrb, "o", &n);
    pr->limit = mrb_nil_p(n) ? 0 : pr->live + (size_t)mrb_integer(n);
    return mrb_nil_value();
}

int main(int argc, char **argv)
{
    probe_t pr = {NULL, 0, 0, 0, 0, 0, 0, 0};
    const char *path = NULL;
    long extra = -1;
    int status = 0;
    for (int i = 1; i < argc; ++i) {
        if (strncmp(argv[i], "--limit=", 8) == 0)
            extra = strtol(argv[i] + 8, NULL, 10);
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else
            path = NULL, i = argc;
    }
    if (!path) {
        fputs("usage: khl-mrb-probe [--limit=BYTES] SCRIPT.rb\n", stderr);
        return 2;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return 2;
    }
    pr.pool = khl_pool_new(NULL);
    mrb_state *mrb = pr.pool ? mrb_open_allocf(probe_allocf, &pr) : NULL;
    if (!mrb) {
        fputs("khl-mrb-probe: cannot open mruby\n", stderr);
        fclose(f);
        return 2;
    }
    mrb_define_method(mrb, mrb->kernel_module, "khl_alloc_stats", m_alloc_stats, MRB_ARGS_NONE());
    mrb_define_method(mrb, mrb->kernel_module, "khl_limit", m_limit, MRB_ARGS_REQ(1));
    const char *scale = getenv("KHL_SCALE");
    mrb_gv_set(mrb, mrb_intern_lit(mrb, "$KHL_SCALE"),
               scale ? mrb_int_value(mrb, (mrb_int)strtol(scale, NULL, 10)) : mrb_nil_value());
    struct mrb_parser_state *parser = mrb_parse_file(mrb, f, NULL);
    fclose(f);
    struct RProc *proc = parser && parser->tree && !parser->nerr ? mrb_generate_code(mrb, parser) : NULL;
    if (parser)
        mrb_parser_free(parser);
    if (!proc) {
        fprintf(stderr, "khl-mrb-probe: %s does not compile\n", path);
        mrb_close(mrb);
        khl_pool_destroy(pr.pool);
        return 2;
    }
    if (extra >= 0)
        pr.limit = pr.live + (size_t)extra;
    mrb_top_run(mrb, proc, mrb_top_self(mrb), 0);
    if (mrb->exc) {
        const char *cls = mrb_obj_classname(mrb, mrb_obj_value(mrb->exc));
        printf("probe: raised %s\n", cls);
        status = strcmp(cls, "NoMemoryError") == 0 ? 4 : 1;
        if (status == 1)
            mrb_print_error(mrb);
    }
    fflush(stdout);
    pr.limit = 0;   /* closing may allocate nothing, but must not be refused */
    mrb_close(mrb);
    fprintf(stderr, "probe: allocs=%llu frees=%llu\n", pr.allocs, pr.frees);
    khl_pool_stats_t ps;
    khl_pool_stats(pr.pool, &ps);
    khl_pool_destroy(pr.pool);
    if (ps.in_use_bytes != 0 || pr.live != 0) {
        fprintf(stderr, "khl-mrb-probe: %zu bytes (%zu requested) still in use after mrb_close\n",
                ps.in_use_bytes, pr.live);
        status = 3;
    }
    return status;
}
