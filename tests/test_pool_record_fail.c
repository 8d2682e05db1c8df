/* test_pool_record_fail.c: a thread's cache record the system has no memory
 * for.  A thread-safe pool gives each thread a record of its caches, made
 * with aligned_alloc at the thread's first call on the pool; when that
 * fails, the call takes the pool's locked path instead, succeeds, and
 * counts exactly, and a later call makes the record.  The refusal is this
 * binary's own aligned_alloc, which every other caller passes on to the C
 * library: the suite is linked statically with the library, so the pool's
 * calls come here (but for valgrind, whose own replaces it: the test is
 * then skipped). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

static volatile int refuse_aligned;
static volatile unsigned long aligned_refused;

void *aligned_alloc(size_t align, size_t size)
{
    void *p = NULL;
    if (refuse_aligned) {
        aligned_refused++;
        errno = ENOMEM;
        return NULL;
    }
    if (align < sizeof(void *))
        align = sizeof(void *);
    return posix_memalign(&p, align, size) == 0 ? p : NULL;
}

Test(pool_record_fail, a_thread_without_a_record_takes_the_locked_path)
{
    khl_pool_options_t o;
    memset(&o, 0, sizeof o);
    o.thread_safe = 1;
    /* Under valgrind the tool's aligned_alloc replaces this one (at its
     * address, which the pool's call goes to, so the probe calls through a
     * pointer, not inline): nothing to refuse with, and the test says it did
     * not run. */
    void *(*volatile call)(size_t, size_t) = aligned_alloc;
    refuse_aligned = 1;
    void *probe = call(64, 64);
    refuse_aligned = 0;
    if (probe) {
        free(probe);
        cr_skip_test("aligned_alloc is not this binary's here (valgrind replaces it)");
    }
    khl_pool_t *p = khl_pool_new(&o);
    cr_assert_not_null(p);
    aligned_refused = 0;
    refuse_aligned = 1;
    void *a = khl_pool_alloc(p, 100);
    refuse_aligned = 0;
    cr_assert_not_null(a, "the locked path did not serve the call");
    cr_assert_geq(aligned_refused, 1, "the thread's first call asked for no record");
    khl_pool_stats_t s = test_pool_stats(p);
    cr_assert_eq(s.in_use_bytes, 112, "in use: %zu", s.in_use_bytes);   /* 100 B's class */
    cr_assert_eq(s.allocs, 1);
    cr_assert_eq(khl_pool_check(p), 0);
    /* Memory back: the next calls make the record and use it. */
    void *b = khl_pool_alloc(p, 100);
    cr_assert_not_null(b);
    khl_pool_free(p, a, 100);
    khl_pool_free(p, b, 100);
    s = test_pool_stats(p);
    cr_assert_eq(s.in_use_bytes, 0);
    cr_assert_eq(s.allocs, 2);
    cr_assert_eq(s.frees, 2);
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_destroy(p);
}
