/* test_resize.c: growth through the allocator's resize (issue 22 item 3):
 * a table of more than one group whose block reaches KHL_RESIZE_BYTES grows
 * by resizing it and spreading its keys in place, on an allocator that
 * declares it resizes, and only there; a failed resize leaves the table as
 * it was. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "khashlite/khashlite.h"
#include "support.h"

/* libc underneath; counts resizes, fails the fail_at-th (1-based) and, with
 * fail_after, every later one; with `move`, fills new blocks with 0xA5 and
 * moves every resize (a copy into such a block, so nothing relies on
 * realloc keeping the address, and every byte of a block is defined). */
typedef struct {
    khl_allocator_t a;
    unsigned resizes, fail_at, fail_after, move;
} resize_alloc_t;

static void *resize_allocf(void *ud, void *ptr, size_t osize, size_t nsize)
{
    resize_alloc_t *r = ud;
    if (!ptr && nsize && r->move) {
        void *q = malloc(nsize);
        if (q)
            memset(q, 0xA5, nsize);
        return q;
    }
    if (ptr && nsize) {
        ++r->resizes;
        if (r->fail_at && (r->resizes == r->fail_at || (r->fail_after && r->resizes > r->fail_at)))
            return NULL;
        if (r->move) {
            void *q = malloc(nsize);
            if (!q)
                return NULL;
            memset(q, 0xA5, nsize);
            memcpy(q, ptr, osize < nsize ? osize : nsize);
            memset(ptr, 0xDD, osize);
            free(ptr);
            return q;
        }
    }
    return khl_libc_allocator.fn(NULL, ptr, osize, nsize);
}

static void resize_alloc_init(resize_alloc_t *r, int resizes)
{
    memset(r, 0, sizeof *r);
    r->a.fn = resize_allocf;
    r->a.ud = r;
    r->a.resizes = resizes;
}

KHL_MAP_INIT_INT64(r64, uint64_t)                  /* pairs */
KHL_MAP_INIT_INT(r32, uint64_t)                    /* values then keys (soa) */
KHL_SET_INIT_INT(rs32)                             /* keys only */

#define N 60000u

/* Fills a table of type `name` on allocator `al` with N keys (value: the
 * key + 1), checking it at every growth, then every key and value. */
#define FILL_AND_CHECK(name, al, is_map)                                              \
    do {                                                                              \
        khl_t(name) h;                                                                \
        khl_init(name, &h, al);                                                       \
        uint32_t nb = 0;                                                              \
        for (uint32_t i = 0; i < N; ++i) {                                            \
            int ret;                                                                  \
            khl_iter_t k = khl_put(name, &h, i * 2654435761u, &ret);                  \
            cr_assert_eq(ret, 1);                                                     \
            if (is_map)                                                               \
                *khl_getp(name, &h, i * 2654435761u) = (uint32_t)(i * 2654435761u) + 1u; \
            (void)k;                                                                  \
            if (khl_n_buckets(name, &h) != nb) {                                      \
                nb = khl_n_buckets(name, &h);                                         \
                cr_assert_eq(khl_check(name, &h), 0, "after growing to %u", nb);      \
            }                                                                         \
        }                                                                             \
        for (uint32_t i = 0; i < N; ++i) {                                            \
            khl_iter_t k = khl_get(name, &h, i * 2654435761u);                        \
            cr_assert_neq(k, khl_end(name, &h), "key %u lost", i);                    \
            if (is_map)                                                               \
                cr_assert_eq(*khl_getp(name, &h, i * 2654435761u),                    \
                             (uint32_t)(i * 2654435761u) + 1u);                        \
        }                                                                             \
        khl_destroy(name, &h);                                                        \
    } while (0)


Test(resize, a_table_grows_through_the_resize_and_keeps_every_key)
{
    for (unsigned move = 0; move <= 1; ++move) {
        resize_alloc_t r;
        resize_alloc_init(&r, 1);
        r.move = move;
        FILL_AND_CHECK(r64, &r.a, 1);
        unsigned pairs = r.resizes;
        FILL_AND_CHECK(r32, &r.a, 1);
        unsigned soa = r.resizes - pairs;
        cr_assert_geq(pairs, 3, "a growth from 64 KiB on resizes (%u)", pairs);
        cr_assert_geq(soa, 3, "soa slots too (%u)", soa);
    }
}

Test(resize, a_set_grows_through_the_resize)
{
    resize_alloc_t r;
    resize_alloc_init(&r, 1);
    khl_t(rs32) h;
    khl_init(rs32, &h, &r.a);
    for (uint32_t i = 0; i < 4 * N; ++i)
        khl_put(rs32, &h, i * 2654435761u, NULL);
    cr_assert_geq(r.resizes, 3);
    cr_assert_eq(khl_check(rs32, &h), 0);
    for (uint32_t i = 0; i < 4 * N; ++i)
        cr_assert_neq(khl_get(rs32, &h, i * 2654435761u), khl_end(rs32, &h));
    khl_destroy(rs32, &h);
}

/* The key is its own hash, declared mixed: a key's bits choose its tag and
 * home group, so a test can pile keys onto one group. */
static inline uint64_t own_bits(uint64_t k)
{
    return k;
}
#define KHL_HASH_MIXED_own_bits
KHL_INIT(pile, uint64_t, uint64_t, 1, own_bits, khl_eq_int)

/* A doubling sends the keys of old group g that sit in their home group to
 * groups 2g and 2g+1, placed there without a walk unless keys that took
 * the walk filled those groups first.  Two piles of 40 keys share one home
 * group each at every size (their top 40 bits): 16 fit there and the rest
 * sit in the groups the walk visits next.  The spread in place walks the
 * groups down, so keys of the middle pile pushed into later groups come to
 * the new home first; a move into a new block goes up, and keys of the
 * pile on the last group wrap around to the first groups.  Both ways out
 * of the placement without a walk run, and every key stays found. */
Test(resize, a_doubling_whose_new_home_group_fills_keeps_every_key)
{
    enum { PILED = 40, SPREAD = 30000 };
    const uint64_t piles[2] = {0x9E3779B97FULL << 24, 0x7FFFFFFFFFULL << 24};
    for (int resizes = 0; resizes <= 1; ++resizes) {
        uint64_t s = 12345;
        resize_alloc_t r;
        resize_alloc_init(&r, resizes);
        khl_t(pile) h;
        khl_init(pile, &h, &r.a);
        uint32_t nb = 0;
        for (uint32_t i = 0; i < SPREAD; ++i) {
            uint64_t k = prng_next(&s) | 1u;   /* odd: never a piled key */
            int ret;
            khl_val(pile, &h, khl_put(pile, &h, k, &ret)) = ~k;
            if (i % (SPREAD / PILED) == 0)
                for (int p = 0; p < 2; ++p)
                    khl_val(pile, &h, khl_put(pile, &h, piles[p] | (2u * i), &ret)) = i + (uint32_t)p;
            if (khl_n_buckets(pile, &h) != nb) {
                nb = khl_n_buckets(pile, &h);
                cr_assert_eq(khl_check(pile, &h), 0, "after growing to %u buckets", nb);
            }
        }
        cr_assert_eq(r.resizes >= 3, resizes, "grew through the resize: %u", r.resizes);
        s = 12345;
        for (uint32_t i = 0; i < SPREAD; ++i) {
            uint64_t k = prng_next(&s) | 1u, *v = khl_getp(pile, &h, k);
            cr_assert(v && *v == ~k, "key %u lost", i);
            for (int p = 0; i % (SPREAD / PILED) == 0 && p < 2; ++p) {
                v = khl_getp(pile, &h, piles[p] | (2u * i));
                cr_assert(v && *v == i + (uint32_t)p, "piled key %u of pile %d lost", i, p);
            }
        }
        cr_assert_eq(khl_size(pile, &h), SPREAD + 2 * PILED);
        khl_destroy(pile, &h);
    }
}

/* Growth past a reservation ends it, whichever way the block grows: the
 * larger block is not reserved (a rebuild into a new block says so), so it
 * grows again rather than rehash in place when its deletions use it up. */
Test(resize, growth_past_a_reservation_ends_it_on_either_path)
{
    for (int resizes = 0; resizes <= 1; ++resizes) {
        resize_alloc_t r;
        resize_alloc_init(&r, resizes);
        khl_t(rs32) h;
        khl_init(rs32, &h, &r.a);
        cr_assert_eq(khl_reserve(rs32, &h, N), 0);
        cr_assert_eq(khl_ext(h.b)->reserved, 1);
        for (uint32_t i = 0; i < 4 * N; ++i)
            khl_put(rs32, &h, i * 2654435761u, NULL);
        cr_assert_eq(r.resizes > 0, resizes, "grew through the resize: %u", r.resizes);
        cr_assert_eq(khl_ext(h.b)->reserved, 0, "resizes %d", resizes);
        cr_assert_eq(khl_check(rs32, &h), 0);
        khl_destroy(rs32, &h);
    }
}

/* An allocator whose blocks of 64 KiB and more come from one arena, which
 * a resize grows where it is (what mremap, or realloc into free space,
 * does). */
typedef struct {
    khl_allocator_t a;
    char *arena;
    size_t cap;
    unsigned in_place;
} arena_alloc_t;

static void *arena_allocf(void *ud, void *ptr, size_t osize, size_t nsize)
{
    arena_alloc_t *r = ud;
    if (ptr == r->arena) {
        if (!nsize)
            return NULL;
        cr_assert_leq(nsize, r->cap);
        ++r->in_place;
        return r->arena;
    }
    if (!ptr && nsize >= KHL_RESIZE_BYTES) {
        cr_assert_leq(nsize, r->cap);
        return r->arena;
    }
    return khl_libc_allocator.fn(NULL, ptr, osize, nsize);
}

/* A larger table's slots come first in its block, so a growth that the
 * allocator makes in place leaves them where they were: the control bytes
 * move, 1/9 of the bytes here, not the slots (which moved up by the control
 * bytes' growth when they followed them). */
Test(resize, a_growth_in_place_leaves_the_slots_where_they_were)
{
    arena_alloc_t r = {{arena_allocf, NULL, 1}, NULL, (size_t)64 << 20, 0};
    khl_t(r64) h;
    char *slots = NULL;
    uint32_t nb = 0, grown = 0;
    r.a.ud = &r;
    r.arena = malloc(r.cap);
    cr_assert_not_null(r.arena);
    khl_init(r64, &h, &r.a);
    for (uint64_t i = 0; i < 4 * N; ++i) {
        int ret;
        khl_iter_t k = khl_put(r64, &h, i * 977, &ret);
        cr_assert_eq(ret, 1);
        khl_val(r64, &h, k) = i;
        if (khl_n_buckets(r64, &h) == nb)
            continue;
        nb = khl_n_buckets(r64, &h);
        if (khl_single_base(h.b) != r.arena)
            continue;
        if (slots) {
            cr_assert_eq(khl_large_slots(h.b), slots, "the slots moved growing to %u buckets", nb);
            ++grown;
        }
        slots = khl_large_slots(h.b);
    }
    cr_assert_geq(grown, 2, "grew in place %u times", grown);
    cr_assert_eq(r.in_place, grown);
    cr_assert_eq(khl_check(r64, &h), 0);
    for (uint64_t i = 0; i < 4 * N; ++i)
        cr_assert_eq(*khl_getp(r64, &h, i * 977), i);
    khl_destroy(r64, &h);
    free(r.arena);
}

/* The hook's old contract still holds for an allocator that does not
 * declare it resizes: it is never asked to. */
Test(resize, an_allocator_that_does_not_resize_is_never_asked)
{
    resize_alloc_t r;
    resize_alloc_init(&r, 0);
    FILL_AND_CHECK(r64, &r.a, 1);
    cr_assert_eq(r.resizes, 0);
    check_alloc_t c;
    test_check_init(&c, CHECK_SIZES | CHECK_NO_RESIZE);   /* reports any resize */
    FILL_AND_CHECK(r32, &c.a, 1);
    check_alloc_fini(&c);
}

/* A resize that fails: -1, and the table (every byte of its block) as it
 * was; the next put that may resize succeeds. */
Test(resize, a_failed_resize_leaves_the_table_as_it_was)
{
    resize_alloc_t r;
    resize_alloc_init(&r, 1);
    r.fail_at = 2;
    r.move = 1;     /* every byte defined: the block is compared whole */
    khl_t(r64) h;
    khl_init(r64, &h, &r.a);
    uint64_t key = 0;
    int ret = 1;
    unsigned char *before = NULL;
    size_t bytes = 0;
    while (ret == 1) {
        if (h.b) {
            free(before);
            bytes = khl_block_size(r64, &h);
            before = malloc(bytes);
            memcpy(before, khl_single_base(h.b), bytes);
        }
        khl_iter_t k = khl_put(r64, &h, key * 977, &ret);
        if (ret == 1)
            khl_val(r64, &h, k) = key++;
    }
    cr_assert_eq(ret, -1);
    cr_assert_eq(r.resizes, 2, "the second resize failed");
    cr_assert_eq(khl_block_size(r64, &h), bytes);
    cr_assert_eq(memcmp(before, khl_single_base(h.b), bytes), 0, "the block changed");
    cr_assert_eq(khl_check(r64, &h), 0);
    for (uint64_t i = 0; i < key; ++i)
        cr_assert_eq(khl_val(r64, &h, khl_get(r64, &h, i * 977)), i);
    cr_assert_eq(khl_put(r64, &h, key * 977, &ret) < khl_n_buckets(r64, &h), 1);
    cr_assert_eq(ret, 1, "the third resize succeeds");
    free(before);
    khl_destroy(r64, &h);
}

/* KHL_INIT_ALLOC: an allocator declared with KHL_ALLOC_RESIZES_<allocf>
 * gets resizes, one not declared so does not. */
static resize_alloc_t named;
static void *named_resizing(void *ud, void *p, size_t o, size_t n) { return resize_allocf(ud, p, o, n); }
static void *named_plain(void *ud, void *p, size_t o, size_t n) { return resize_allocf(ud, p, o, n); }
#define KHL_ALLOC_RESIZES_named_resizing
KHL_INIT_ALLOC(nr, uint64_t, uint64_t, 1, khl_hash_u64, khl_eq_int, named_resizing)
KHL_INIT_ALLOC(np, uint64_t, uint64_t, 1, khl_hash_u64, khl_eq_int, named_plain)

Test(resize, a_named_allocator_resizes_when_declared_so)
{
    resize_alloc_init(&named, 0);
    FILL_AND_CHECK(np, &named, 1);
    cr_assert_eq(named.resizes, 0);
    FILL_AND_CHECK(nr, &named, 1);
    cr_assert_geq(named.resizes, 3);
}
