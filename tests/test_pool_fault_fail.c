/* test_pool_fault_fail.c: a page step the kernel refuses.  A pool faults its
 * chunks' pages in steps (MADV_POPULATE_WRITE) as its bump pointer reaches
 * them; when the kernel has no memory for a step, the allocation that needed
 * it fails with the pool as it was, and the next one, once memory is back,
 * goes on from where the pool stopped.  The refusal is this binary's own
 * madvise, which every other call passes to the kernel: the suite is linked
 * statically with the library, so the pool's calls come here. */
#define _GNU_SOURCE 1
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "support.h"

#ifdef MADV_POPULATE_WRITE

static volatile int refuse_populate;
static volatile unsigned long refused;

/* The kernel's madvise, but for MADV_POPULATE_WRITE while a test refuses it,
 * as a kernel out of memory does (ENOMEM). */
int madvise(void *addr, size_t len, int advice)
{
    if (refuse_populate && advice == MADV_POPULATE_WRITE) {
        refused++;
        errno = ENOMEM;
        return -1;
    }
    return (int)syscall(SYS_madvise, addr, len, advice);
}

static khl_pool_t *new_pool(int thread_safe)
{
    khl_pool_options_t o;
    memset(&o, 0, sizeof o);
    o.thread_safe = thread_safe;
    o.lazy_pages = KHL_POOL_PAGES_AHEAD;
    khl_pool_t *p = khl_pool_new(&o);
    cr_assert_not_null(p);
    return p;
}

enum { SIZE = 100, MAX_BLOCKS = 4000 };

/* Allocates blocks of SIZE bytes with page steps refused until one fails
 * (a step was needed): the pool is as it was before that call.  Then, with
 * steps allowed again, the same call succeeds, every block takes a write,
 * and all of them go back.  `first` says whether the first block is taken
 * before the refusal (the failing step is then a chunk's next one) or
 * under it (the chunk's first step, in the call that maps it). */
static void refused_step_fails_cleanly(int thread_safe, int first)
{
    static void *v[MAX_BLOCKS];
    khl_pool_t *p = new_pool(thread_safe);
    khl_pool_stats_t before;
    uint64_t calls;
    size_t n = 0, i;
    if (first)
        cr_assert_not_null(v[n++] = khl_pool_alloc(p, SIZE));
    refused = 0;
    refuse_populate = 1;
    for (;;) {
        cr_assert_lt(n, MAX_BLOCKS, "no allocation needed a page step");
        before = test_pool_stats(p);
        if (!(v[n] = khl_pool_alloc(p, SIZE)))
            break;
        n++;
    }
    refuse_populate = 0;
    cr_assert_eq(refused, 1, "%lu steps refused", refused);
    test_assert_pool_unchanged(&before, p, "the refused step's allocation");
    cr_assert_eq(khl_pool_check(p), 0);
    calls = test_pool_stats(p).system_calls;
    cr_assert_not_null(v[n] = khl_pool_alloc(p, SIZE), "the pool did not recover");
    /* The failed chunk take gave its frame back to the reservation it was
     * cut from: the next takes it again, with the step alone. */
    if (!first)
        cr_assert_eq(test_pool_stats(p).system_calls - calls, 1, "%llu system calls to take the chunk again",
                     (unsigned long long)(test_pool_stats(p).system_calls - calls));
    n++;
    for (i = 0; i < n; i++)
        memset(v[i], (int)i, SIZE);
    cr_assert_eq(khl_pool_check(p), 0);
    for (i = 0; i < n; i++)
        khl_pool_free(p, v[i], SIZE);
    cr_assert_eq(test_pool_stats(p).in_use_bytes, 0);
    khl_pool_destroy(p);
}

Test(pool_fault_fail, a_refused_step_fails_the_call_and_leaves_the_pool)
{
    refused_step_fails_cleanly(0, 1);
}

Test(pool_fault_fail, a_refused_first_step_fails_the_chunk_take)
{
    refused_step_fails_cleanly(0, 0);
}

Test(pool_fault_fail, a_threads_refused_step_fails_the_call_and_leaves_the_pool)
{
    refused_step_fails_cleanly(1, 1);
}

Test(pool_fault_fail, a_threads_refused_first_step_fails_the_chunk_take)
{
    refused_step_fails_cleanly(1, 0);
}

#endif /* MADV_POPULATE_WRITE */
