/* test_objmodel.c: the example object model (examples/objmodel): its three
 * table variants compute the same results, give back every byte, spend no
 * allocation on an empty ivar table, and report allocation failure. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "examples/objmodel/workload.h"
#include "support.h"
#include "support/om_check.h"

/* --- the allocator: support's check_alloc behind both halves of om_alloc_t,
 * counting, and failing every allocation after the first fail_after. */

typedef struct counter {
    check_alloc_t c;
    om_alloc_t a;
} counter_t;

/* fail_after: allocations that succeed before all fail; -1: never. */
static void counter_init(counter_t *c, long fail_after)
{
    test_check_init(&c->c, 0);
    if (fail_after >= 0) {
        c->c.fail_at = (uint64_t)fail_after + 1;
        c->c.fail_after = 1;
    }
    c->a = om_alloc_check(&c->c);
}

/* The deterministic workload: churn at every ivar count, then a live phase.
 * 0 and *sum, or -1 (out of memory). */
static int run_workload(const om_variant_t *v, const om_alloc_t *a, uint64_t *sum)
{
    void *w = v->world_new(a);
    int err = !w;
    *sum = 0;
    for (int n = 0; n <= OM_MAX_IVARS && !err; ++n)
        err = v->churn(w, n, 200, sum) < 0;
    if (!err)
        err = v->live(w, 1000, sum) < 0;
    v->world_free(w);
    return err ? -1 : 0;
}

Test(objmodel, variants_give_identical_checksums)
{
    uint64_t ref = 0;
    khl_pool_t *pool = khl_pool_new(NULL);
    cr_assert_not_null(pool);
    for (int v = 0; v < OM_N_VARIANTS; ++v) {
        for (int p = 0; p < 2; ++p) {
            om_alloc_t a = p ? om_alloc_pool(pool) : om_alloc_libc();
            uint64_t sum;
            cr_assert_eq(run_workload(&om_variants[v], &a, &sum), 0, "%s", om_variants[v].name);
            if (v == 0 && p == 0)
                ref = sum;
            cr_expect_eq(sum, ref, "%s on %s: %016llx, single on libc: %016llx", om_variants[v].name,
                         p ? "pool" : "libc", (unsigned long long)sum, (unsigned long long)ref);
        }
    }
    cr_expect_neq(ref, 0);
    khl_pool_destroy(pool);
}

Test(objmodel, teardown_leaves_no_allocation)
{
    for (int v = 0; v < OM_N_VARIANTS; ++v) {
        counter_t c;
        uint64_t sum;
        counter_init(&c, -1);
        cr_assert_eq(run_workload(&om_variants[v], &c.a, &sum), 0);
        cr_expect_gt((long)c.c.allocs, 1000, "%s allocated through the counter",
                     om_variants[v].name);
        cr_expect_eq((long)c.c.allocs, (long)c.c.frees, "%s: %ld allocs, %ld frees",
                     om_variants[v].name, (long)c.c.allocs, (long)c.c.frees);
        cr_expect_eq(c.c.live_bytes, 0, "%s: %zu bytes left", om_variants[v].name, c.c.live_bytes);
    }
}

/* Object creation, a miss on the empty ivar table and a method call: the
 * object's own block is the only allocation. */
#define EMPTY_OBJECT_TEST(P, sizeof_obj)                                            \
    do {                                                                            \
        counter_t c;                                                                \
        om_value out = OM_NIL;                                                      \
        counter_init(&c, -1);                                                       \
        P##_world *w = P##_world_new(&c.a);                                         \
        cr_assert_not_null(w);                                                      \
        long allocs0 = (long)c.c.allocs;                                            \
        size_t live0 = c.c.live_bytes;                                              \
        P##_object *o = P##_object_new(w->vm, w->classes[0]);                       \
        cr_assert_not_null(o);                                                      \
        cr_expect_eq((long)c.c.allocs - allocs0, 1, #P ": object_new made %ld allocs", \
                     (long)c.c.allocs - allocs0);                                   \
        cr_expect_eq(c.c.live_bytes - live0, sizeof_obj);                           \
        cr_expect_eq(P##_ivar_get(o, w->ivar[0]), OM_NIL);                          \
        cr_expect_eq(P##_ivar_count(o), 0);                                         \
        cr_expect_eq(P##_send(w->vm, o, w->m_value, om_int(5), &out), 0);           \
        cr_expect_eq(om_int_of(out), 5);                                            \
        cr_expect_eq((long)c.c.allocs - allocs0, 1, #P ": reads allocated");        \
        P##_object_free(w->vm, o);                                                  \
        cr_expect_eq(c.c.live_bytes, live0);                                        \
        P##_world_free(w);                                                          \
        cr_expect_eq(c.c.live_bytes, 0);                                            \
    } while (0)

Test(objmodel, empty_object_allocates_only_itself)
{
    EMPTY_OBJECT_TEST(om_single, sizeof(om_single_object));
    EMPTY_OBJECT_TEST(om_split3, sizeof(om_split3_object));
    /* khash gets the same by creating its table on the first store. */
    EMPTY_OBJECT_TEST(om_khash, sizeof(om_khash_object));
}

Test(objmodel, ivars_and_inherited_methods)
{
    om_alloc_t a = om_alloc_libc();
    om_split3_world *w = om_split3_world_new(&a);
    om_value out = OM_NIL;
    cr_assert_not_null(w);
    om_split3_object *p = om_split3_object_new(w->vm, w->classes[om_class_for(8)]);
    cr_assert_not_null(p);
    for (int i = 0; i < OM_MAX_IVARS; ++i)
        cr_assert_eq(om_split3_ivar_set(p, w->ivar[i], om_int(-i)), 0);
    cr_assert_eq(om_split3_ivar_set(p, w->ivar[0], om_int(100)), 0);   /* overwrite */
    cr_expect_eq(om_split3_ivar_count(p), OM_MAX_IVARS);
    cr_expect_eq(om_int_of(om_split3_ivar_get(p, w->ivar[7])), -7);
    /* Shape#value, two classes up: 1 + 100 - (1 + ... + 7) */
    cr_assert_eq(om_split3_send(w->vm, p, w->m_value, om_int(1), &out), 0);
    cr_expect_eq(om_int_of(out), 1 + 100 - 28);
    /* Object#kind, three up, then again from the cache. */
    for (int i = 0; i < 2; ++i) {
        cr_assert_eq(om_split3_send(w->vm, p, w->m_kind, OM_NIL, &out), 0);
        cr_expect_str_eq(om_sym_name(&w->vm->syms, (om_sym)om_int_of(out)), "Particle");
    }
    cr_expect_eq(om_split3_send(w->vm, p, om_split3_intern(w->vm, "missing"), OM_NIL, &out), -1);
    om_split3_object_free(w->vm, p);
    cr_expect_eq(w->vm->live_objects, 0);
    om_split3_world_free(w);
}

/* Every allocation in turn fails: the workload reports it, and whatever it
 * built is still freed completely. */
Test(objmodel, allocation_failure_is_reported_and_leaks_nothing)
{
    for (int v = 0; v < OM_N_VARIANTS; ++v) {
        counter_t c;
        uint64_t sum;
        long total;
        counter_init(&c, -1);
        cr_assert_eq(run_workload(&om_variants[v], &c.a, &sum), 0);
        total = (long)c.c.allocs;
        for (long k = 0; k < total; k += 1 + k / 8) {
            counter_init(&c, k);
            cr_expect_eq(run_workload(&om_variants[v], &c.a, &sum), -1, "%s, fail after %ld",
                         om_variants[v].name, k);
            cr_expect_eq(c.c.live_bytes, 0, "%s, fail after %ld: %zu bytes left", om_variants[v].name, k,
                         c.c.live_bytes);
            cr_expect_eq((long)c.c.allocs, (long)c.c.frees);
        }
    }
}
