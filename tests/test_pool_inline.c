/* test_pool_inline.c: the inline fast paths of khl_pool_inline.h, switched
 * on as a program would (KHL_POOL_INLINE before khl_pool.h).  They must give
 * the same blocks and counts as the library's calls, mixed with them on one
 * pool, and fall back to the library for thread-safe, checked and large
 * requests. */
#define KHL_POOL_INLINE
#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>

#include "khashlite/khl_pool.h"
#include "support.h"

/* Through pointers: the library's out-of-line functions. */
static void *(*volatile lib_alloc)(khl_pool_t *, size_t) = khl_pool_alloc;
static void (*volatile lib_free)(khl_pool_t *, void *, size_t) = khl_pool_free;

static khl_pool_t *pool_of(int ts, int checked)
{
    khl_pool_options_t o;
    memset(&o, 0, sizeof o);
    o.thread_safe = ts;
    o.checked = checked;
    khl_pool_t *p = khl_pool_new(&o);
    cr_assert_not_null(p);
    return p;
}

/* Random sizes (small and large), inline and library calls interleaved,
 * sized and unsized frees; contents, stats and invariants checked. */
static void mixed_run(khl_pool_t *p)
{
    enum { N = 256 };
    unsigned char *b[N] = {0};
    size_t n[N] = {0};
    uint64_t s = 7, live = 0;
    for (int op = 0; op < 20000; op++) {
        uint64_t r = prng_next(&s);
        size_t i = (size_t)(r % N);
        if (!b[i]) {
            n[i] = r % 16 == 0 ? 20000 + (size_t)(r >> 40) % 5000 : 1 + (size_t)(r >> 32) % 600;
            b[i] = (r >> 8) & 1 ? khl_pool_alloc(p, n[i]) : lib_alloc(p, n[i]);
            cr_assert_not_null(b[i]);
            cr_assert(khl_pool_owns(p, b[i]));
            memset(b[i], (int)(i & 0xff), n[i]);
            live++;
        } else {
            for (size_t k = 0; k < n[i]; k++)
                cr_assert_eq(b[i][k], (unsigned char)(i & 0xff), "op %d: block %zu corrupted", op, i);
            switch ((r >> 9) % 3) {
            case 0: khl_pool_free(p, b[i], n[i]); break;
            case 1: khl_pool_free_unsized(p, b[i]); break;
            default: lib_free(p, b[i], n[i]);
            }
            b[i] = NULL;
            live--;
        }
        if (op % 512 == 0) {
            khl_pool_stats_t st;
            khl_pool_stats(p, &st);
            cr_assert_eq(st.allocs - st.frees, live, "op %d", op);
            cr_assert_eq(khl_pool_check(p), 0, "op %d", op);
        }
    }
    for (size_t i = 0; i < N; i++)
        if (b[i])
            khl_pool_free(p, b[i], n[i]);
    khl_pool_stats_t st;
    khl_pool_stats(p, &st);
    cr_assert_eq(st.in_use_bytes, 0);
    cr_assert_eq(st.allocs, st.frees);
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_destroy(p);
}

Test(pool_inline, plain_pool_mixed_with_library_calls)
{
    mixed_run(pool_of(0, 0));
}

Test(pool_inline, thread_safe_and_checked_pools_fall_back)
{
    mixed_run(pool_of(1, 0));
    mixed_run(pool_of(0, 1));
    mixed_run(pool_of(1, 1));
}

/* The inline path hands out what the library would: a block freed inline
 * comes back first from the library's allocation of its class, and the
 * reverse. */
Test(pool_inline, same_free_blocks_as_the_library)
{
    khl_pool_t *p = pool_of(0, 0);
    void *x = khl_pool_alloc(p, 100);
    khl_pool_free(p, x, 100);
    cr_assert_eq(lib_alloc(p, 100), x);
    lib_free(p, x, 100);
    cr_assert_eq(khl_pool_alloc(p, 100), x);
    khl_pool_free_unsized(p, x);
    cr_assert_eq(khl_pool_alloc_inline(p, 97), x);
    khl_pool_free_inline(p, x, 97);
    khl_pool_free_inline(p, NULL, 97);
    khl_pool_free_unsized_inline(p, NULL);
    cr_assert_null(khl_pool_alloc_inline(p, 0));
    khl_pool_destroy(p);
}

/* A checked pool behind the inline names still catches misuse. */
Test(pool_inline, checked_pool_double_free_aborts, .signal = SIGABRT)
{
    khl_pool_t *p = pool_of(0, 1);
    void *x = khl_pool_alloc(p, 64);
    khl_pool_free(p, x, 64);
    khl_pool_free(p, x, 64);
}
