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

/* A table naming khl_pool_allocf_inline (KHL_INIT_ALLOC) takes the same
 * blocks from its pool as a table on the library's hook takes from another:
 * counts and bytes equal at every step, nothing left after destroy. */
KHL_INIT(hooked, uint64_t, uint64_t, 1, khl_hash_u64, khl_eq_int)
KHL_INIT_ALLOC(inlined, uint64_t, uint64_t, 1, khl_hash_u64, khl_eq_int, khl_pool_allocf_inline)

static void assert_same_pool_use(khl_pool_t *a, khl_pool_t *b, int step)
{
    khl_pool_stats_t sa, sb;
    khl_pool_stats(a, &sa);
    khl_pool_stats(b, &sb);
    cr_assert_eq(sa.allocs, sb.allocs, "step %d", step);
    cr_assert_eq(sa.frees, sb.frees, "step %d", step);
    cr_assert_eq(sa.in_use_bytes, sb.in_use_bytes, "step %d", step);
    cr_assert_eq(khl_pool_check(b), 0, "step %d", step);
}

Test(pool_inline, a_table_on_the_inline_allocf_uses_the_pool_as_the_hook_does)
{
    khl_pool_t *pa = pool_of(0, 0), *pb = pool_of(0, 0);
    khl_allocator_t al = khl_pool_allocator(pa);
    uint64_t s = 3;
    for (int life = 0; life < 200; ++life) {
        khl_t(hooked) a;
        khl_t(inlined) b;
        khl_init(hooked, &a, &al);
        khl_init(inlined, &b, pb);
        int n = life % 50 == 49 ? 20000 : 1 + life % 24;
        for (int i = 0; i < n; ++i) {
            uint64_t k = prng_next(&s);
            khl_val(hooked, &a, khl_put(hooked, &a, k, NULL)) = k;
            khl_val(inlined, &b, khl_put(inlined, &b, k, NULL)) = k;
        }
        assert_same_pool_use(pa, pb, life);
        cr_assert_eq(khl_size(inlined, &b), khl_size(hooked, &a));
        cr_assert_eq(khl_check(inlined, &b), 0);
        khl_destroy(hooked, &a);
        khl_destroy(inlined, &b);
        assert_same_pool_use(pa, pb, life);
    }
    khl_pool_stats_t st;
    khl_pool_stats(pb, &st);
    cr_assert_eq(st.in_use_bytes, 0);
    khl_pool_destroy(pa);
    khl_pool_destroy(pb);
}
