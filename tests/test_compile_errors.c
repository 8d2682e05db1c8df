/* test_compile_errors.c: mistakes the type system can catch must not compile,
 * with a message that says why: khl_val, khl_getp and the key+value walk on a set,
 * key and value types too large or too aligned for a table, and a
 * KHL_MAX_LOAD outside 0.25..0.9375 (0 or NaN made a table that held
 * one key, 1.0 made misses walk every group).  Each case runs the compiler
 * (C11 and C++20) on a file of tests/compile_fail/; a control file that must
 * compile shows the harness itself works.  Run from the repository root, as
 * `make test` does. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

/* Compiles tests/compile_fail/file; returns the exit status, the compiler's
 * output in log. */
static int compile(int cxx, const char *file, const char *defs, char *log, size_t size)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "%s -Wall -Wextra -Wpedantic -Werror -I. %s -c tests/compile_fail/%s -o /dev/null 2>&1",
             cxx ? "c++ -std=c++20 -x c++" : "cc -std=c11", defs, file);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "cannot run: %s", cmd);
    size_t n = fread(log, 1, size - 1, p);
    log[n] = 0;
    int status = pclose(p);
    cr_assert(WIFEXITED(status), "compiler did not exit: %s", cmd);
    return WEXITSTATUS(status);
}

static void must_compile(const char *file, const char *defs)
{
    static char log[16384];
    for (int cxx = 0; cxx < 2; ++cxx)
        cr_assert_eq(compile(cxx, file, defs, log, sizeof log), 0, "%s %s (%s) failed:\n%s", file,
                     defs, cxx ? "C++" : "C", log);
}

/* why: a phrase the error must contain, or NULL when any error will do. */
static void must_fail(const char *file, const char *defs, const char *why)
{
    static char log[16384];
    for (int cxx = 0; cxx < 2; ++cxx) {
        cr_assert_neq(compile(cxx, file, defs, log, sizeof log), 0, "%s %s (%s) compiled", file, defs,
                      cxx ? "C++" : "C");
        if (why)
            cr_assert_not_null(strstr(log, why), "%s (%s): the error does not say \"%s\":\n%s", file,
                               cxx ? "C++" : "C", why, log);
    }
}

Test(compile_errors, a_set_has_keys_only, .timeout = 120)
{
    must_compile("set_keys.c", "");
    must_fail("set_val.c", "", "this table is a set");
    must_fail("set_getp.c", "", "this table is a set");
    must_fail("set_foreach.c", "", "this table is a set");
}

Test(compile_errors, max_load_outside_its_range, .timeout = 120)
{
    /* Every spelling of a constant in range: pasting an exponent onto the
     * constant, as the check did before, refused 5e-1, 0.5f and (0.5). */
    static const char *const good[] = {"0.25",  "0.5",  ".5",      "5e-1",  "0.5f",
                                       "(0.5)", "0.77", "0.875",   "7e-1L", "0.9375"};
    static const char *const bad[] = {"0", "-1", "0.1", "0.2499", "0.95", "1.0", "2", "25e-3", "1e1f"};
    char defs[64];
    for (unsigned i = 0; i < sizeof good / sizeof good[0]; ++i) {
        snprintf(defs, sizeof defs, "'-DKHL_MAX_LOAD=%s'", good[i]);
        must_compile("max_load.c", defs);
    }
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        snprintf(defs, sizeof defs, "'-DKHL_MAX_LOAD=%s'", bad[i]);
        must_fail("max_load.c", defs, "KHL_MAX_LOAD must be");
    }
    /* Not a number in range, or not a constant: rejected too, by the
     * compiler's own words. */
    must_fail("max_load.c", "-DKHL_MAX_LOAD=NAN", NULL);
    must_fail("max_load.c", "-DKHL_MAX_LOAD=load", NULL);
}

/* Types no table can hold: a key with its value of 1 GiB or more, or
 * aligned beyond 4096 bytes; types just within both compile.  No .timeout
 * (see below). */
Test(compile_errors, types_too_large_or_too_aligned)
{
    must_compile("huge_types.c", "");
    must_fail("huge_types.c", "-DHUGE_VALUE", "a key and its value take 1 GiB or more");
    must_fail("huge_types.c", "-DHUGE_ALIGN", "aligned beyond 4096 bytes");
}

/* mruby compiles as gnu99, whose <stddef.h> has no max_align_t: the header
 * must still compile there (C11's _Alignof and _Static_assert are extensions
 * in that mode, so -Wpedantic is off for this one).  No .timeout: with a
 * fifth timed test in the run, Criterion 2.4.1's runner leaks 48 bytes and
 * LeakSanitizer fails `make check-asan`. */
Test(compile_errors, the_header_compiles_as_gnu99)
{
    static char log[16384];
    cr_assert_eq(compile(0, "set_keys.c", "-std=gnu99 -Wno-pedantic", log, sizeof log), 0,
                 "gnu99:\n%s", log);
}
