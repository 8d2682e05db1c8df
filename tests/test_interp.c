/* test_interp.c: the interpreter embedding examples.  Runs khl-mruby and
 * khl-lua (built beside the suite by examples/mruby/mruby.mk and examples/lua/lua.mk) on every
 * script of bench/ruby and bench/lua at a tiny KHL_SCALE, under libc, the
 * pool and the reserved pool, and checks that each run exits 0, prints a
 * checksum line, prints exactly the same thing on every allocator (the
 * scripts' output must not depend on where memory comes from), and that the
 * pool counts 0 bytes in use once the interpreter is closed (a block the
 * interpreter freed with a wrong size or never freed would show here); and
 * that under --limit a script that exhausts it gets the interpreter's
 * out-of-memory error, not a crash. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support.h"

/* Tiny sizes: each run is well under a second, even under a sanitizer. */
#define TINY_SCALE "6"

typedef struct run_result {
    char out[8192];          /* the script's stdout */
    char err[4096];          /* stderr: the --stats line */
    int status;              /* exit status, -1 when it did not exit */
} run_result_t;

/* Runs `bin --alloc=ALLOC EXTRA --stats SCRIPT` with KHL_SCALE set, from the
 * source tree (the suite runs from the top directory, as `make test` does). */
static void run(const char *bin, const char *alloc, const char *extra, const char *script,
                run_result_t *r)
{
    char dir[4096 + 64], cmd[12288], outp[64], errp[64];
    test_build_path(dir, sizeof dir, "examples");
    snprintf(outp, sizeof outp, "/tmp/khl-interp-%ld.out", (long)getpid());
    snprintf(errp, sizeof errp, "/tmp/khl-interp-%ld.err", (long)getpid());
    cr_assert_eq(access(script, R_OK), 0, "%s not found: run the suite from the source tree", script);
    snprintf(cmd, sizeof cmd, "%s/%s", dir, bin);
    cr_assert_eq(access(cmd, X_OK), 0, "%s not built (make test builds EXAMPLE_BINS)", cmd);
    snprintf(cmd, sizeof cmd, "KHL_SCALE=" TINY_SCALE " '%s/%s' --alloc=%s %s --stats '%s' >%s 2>%s",
             dir, bin, alloc, extra, script, outp, errp);
    int st = system(cmd);
    cr_assert_neq(st, -1);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    test_slurp(outp, r->out, sizeof r->out);
    test_slurp(errp, r->err, sizeof r->err);
    remove(outp);
    remove(errp);
}

/* A counter from the --stats line ("name=value"), -1 when absent. */
static long long stat_field(const char *err, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, " %s=", name);
    const char *p = strstr(err, key);
    if (p == NULL)
        return -1;
    return strtoll(p + strlen(key), NULL, 10);
}

static void check_script(const char *bin, const char *script)
{
    static const char *const allocs[] = {"libc", "pool", "pool-reserved"};
    static run_result_t ref, r;
    for (size_t i = 0; i < sizeof allocs / sizeof allocs[0]; ++i) {
        run_result_t *cur = i == 0 ? &ref : &r;
        run(bin, allocs[i], "", script, cur);
        cr_assert_eq(cur->status, 0, "%s --alloc=%s %s exited with %d; stderr:\n%s", bin, allocs[i],
                     script, cur->status, cur->err);
        cr_assert_not_null(strstr(cur->out, "\nchecksum "), "%s --alloc=%s %s printed no checksum line:\n%s",
                           bin, allocs[i], script, cur->out);
        if (i > 0) {
            cr_assert_str_eq(cur->out, ref.out, "%s %s prints something else on --alloc=%s", bin, script,
                             allocs[i]);
            cr_assert_eq(stat_field(cur->err, "pool_in_use_bytes"), 0,
                         "%s --alloc=%s %s left bytes in the pool after closing:\n%s", bin, allocs[i],
                         script, cur->err);
            /* The pool really served the interpreter, and every block came back. */
            long long allocs_n = stat_field(cur->err, "pool_allocs");
            cr_assert_gt(allocs_n, 100, "%s --alloc=%s: the pool served %lld allocations", bin, allocs[i],
                         allocs_n);
            cr_assert_eq(stat_field(cur->err, "pool_frees"), allocs_n);
            cr_assert_gt(stat_field(cur->err, "pool_peak_bytes"), 0);
        }
    }
}

Test(interp, mruby_ao_render) { check_script("khl-mruby", "bench/ruby/ao_render.rb"); }
Test(interp, mruby_hash_churn) { check_script("khl-mruby", "bench/ruby/hash_churn.rb"); }
Test(interp, mruby_strings) { check_script("khl-mruby", "bench/ruby/strings.rb"); }
Test(interp, lua_ao_render) { check_script("khl-lua", "bench/lua/ao_render.lua"); }
Test(interp, lua_tables) { check_script("khl-lua", "bench/lua/tables.lua"); }
Test(interp, lua_strings) { check_script("khl-lua", "bench/lua/strings.lua"); }

/* A script that raises must make the host exit non-zero (the benchmark
 * relies on it to fail loudly), with the pool still emptied by close. */
Test(interp, script_error_is_reported)
{
    char rb[64], lua[64];
    snprintf(rb, sizeof rb, "/tmp/khl-interp-raise-%ld.rb", (long)getpid());
    snprintf(lua, sizeof lua, "/tmp/khl-interp-raise-%ld.lua", (long)getpid());
    const char *scripts[][2] = {{"khl-mruby", rb}, {"khl-lua", lua}};
    FILE *f = fopen(scripts[0][1], "w");
    cr_assert_not_null(f);
    fputs("puts \"before\"\nraise \"boom\"\n", f);
    fclose(f);
    f = fopen(scripts[1][1], "w");
    cr_assert_not_null(f);
    fputs("print(\"before\")\nerror(\"boom\")\n", f);
    fclose(f);
    static run_result_t r;
    for (int i = 0; i < 2; ++i) {
        run(scripts[i][0], "pool", "", scripts[i][1], &r);
        cr_assert_eq(r.status, 1, "%s exited with %d on a script that raises", scripts[i][0], r.status);
        cr_assert_str_eq(r.out, "before\n");
        cr_assert_not_null(strstr(r.err, "boom"), "%s did not report the error:\n%s", scripts[i][0], r.err);
        cr_assert_eq(stat_field(r.err, "pool_in_use_bytes"), 0);
        remove(scripts[i][1]);
    }
}

/* Under --limit a script that keeps growing memory must get the
 * interpreter's out-of-memory error, not a crash: the host exits normally
 * (status 1, a script that raised), the pool never held more than the limit,
 * and it counts 0 bytes in use once the interpreter is closed.  The scripts
 * stop at a million strings (over 100 MB, far past the 8 MB limit) so that a
 * broken limit fails the test instead of exhausting the machine. */
Test(interp, limit_gives_out_of_memory_error)
{
    char rb[64], lua[64];
    snprintf(rb, sizeof rb, "/tmp/khl-interp-grow-%ld.rb", (long)getpid());
    snprintf(lua, sizeof lua, "/tmp/khl-interp-grow-%ld.lua", (long)getpid());
    const char *hosts[][3] = {{"khl-mruby", rb, "NoMemoryError"}, {"khl-lua", lua, "not enough memory"}};
    static const char *const allocs[] = {"pool", "pool-reserved"};
    FILE *f = fopen(rb, "w");
    cr_assert_not_null(f);
    fputs("puts \"start\"\na = []\ni = 0\nwhile i < 1000000\n  a << \"x\" * 100 + i.to_s\n  i += 1\nend\n"
          "puts \"no limit\"\n", f);
    fclose(f);
    f = fopen(lua, "w");
    cr_assert_not_null(f);
    fputs("print(\"start\")\nlocal t = {}\nfor i = 1, 1000000 do\n"
          "  t[i] = string.rep(\"x\", 100) .. i\nend\nprint(\"no limit\")\n", f);
    fclose(f);
    static run_result_t r;
    for (int i = 0; i < 2; ++i)
        for (size_t j = 0; j < sizeof allocs / sizeof allocs[0]; ++j) {
            run(hosts[i][0], allocs[j], "--limit=8000000", hosts[i][1], &r);
            cr_assert_eq(r.status, 1, "%s --alloc=%s --limit exited with %d (-1: killed by a signal):\n%s",
                         hosts[i][0], allocs[j], r.status, r.err);
            cr_assert_str_eq(r.out, "start\n");
            cr_assert_not_null(strstr(r.err, hosts[i][2]), "%s did not report running out of memory:\n%s",
                               hosts[i][0], r.err);
            cr_assert_eq(stat_field(r.err, "pool_in_use_bytes"), 0, "%s", r.err);
            cr_assert_gt(stat_field(r.err, "pool_system_bytes"), 0);
            cr_assert_leq(stat_field(r.err, "pool_system_bytes"), 8000000, "%s", r.err);
        }
    remove(rb);
    remove(lua);
}
