/* test_max_load.c: every KHL_MAX_LOAD of the documented range (0.25 to
 * 0.9375) holds keys through many growths.  Below 17/64 the first growth of
 * a full 16-bucket table (4x, to 64 buckets) planned a table whose capacity
 * was the keys it already held: growth_left wrapped below 0, no put grew the
 * table again, and the 65th key walked a full table forever.
 *
 * KHL_MAX_LOAD is read where a type is declared, so each type below is
 * declared after its own definition.  The spellings here are plain
 * decimals, which the code before the fix accepted too (it hung there);
 * test_compile_errors.c checks the other spellings. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <unistd.h>

#include "khashlite/khashlite.h"
#include "support.h"

#undef KHL_MAX_LOAD
#define KHL_MAX_LOAD 0.25
KHL_MAP_INIT_INT(ml2500, uint32_t)
#undef KHL_MAX_LOAD
#define KHL_MAX_LOAD 0.26
KHL_MAP_INIT_INT(ml2600, uint32_t)
#undef KHL_MAX_LOAD
#define KHL_MAX_LOAD 0.2656
KHL_MAP_INIT_INT(ml2656, uint32_t)
#undef KHL_MAX_LOAD
#define KHL_MAX_LOAD 0.265625
KHL_MAP_INIT_INT(ml265625, uint32_t)
#undef KHL_MAX_LOAD
#define KHL_MAX_LOAD 0.3
KHL_MAP_INIT_INT(ml3000, uint32_t)
#undef KHL_MAX_LOAD
#define KHL_MAX_LOAD 0.5
KHL_MAP_INIT_INT(ml5000, uint32_t)
#undef KHL_MAX_LOAD
#define KHL_MAX_LOAD 0.875
KHL_MAP_INIT_INT(ml8750, uint32_t)
#undef KHL_MAX_LOAD
#define KHL_MAX_LOAD 0.9375
KHL_MAP_INIT_INT(ml9375, uint32_t)
#undef KHL_MAX_LOAD
#define KHL_MAX_LOAD 0.875

/* Enough keys for 8 to 11 growths at every load. */
#define N_KEYS 20000u

/* The hang this guards against spins in khl_put, where no assertion runs:
 * the alarm turns it into a failed test (SIGALRM ends the test's process).
 * It stands in for .timeout, which a fifth timed test cannot have (see
 * test_compile_errors.c: Criterion's runner then leaks under ASan). */
#define BOUNDED() alarm(60)

/* Fills a table to N_KEYS, checking the invariants (growth_left among
 * them) after every put that changed the bucket count and the put after it,
 * then that every key is found with its value. */
#define FILL_AND_FIND(name)                                                                  \
    do {                                                                                     \
        TEST_TABLE(name, h, t);                                                              \
        uint32_t nb = 0, checks = 0;                                                         \
        BOUNDED();                                                                           \
        for (uint32_t i = 0; i < N_KEYS; ++i) {                                              \
            int ret;                                                                         \
            khl_iter_t k = khl_put(name, &h, i * 2654435761u, &ret);                        \
            cr_assert_eq(ret, 1, #name ": key %u not new", i);                               \
            khl_val(name, &h, k) = i;                                                        \
            if (checks || khl_n_buckets(name, &h) != nb) {                                    \
                cr_assert_eq(khl_check(name, &h), 0, #name ": invariants after key %u", i);  \
                checks = !checks;                                                            \
                nb = khl_n_buckets(name, &h);                                                 \
            }                                                                                \
        }                                                                                    \
        cr_assert_eq(khl_size(name, &h), N_KEYS);                                            \
        for (uint32_t i = 0; i < N_KEYS; ++i) {                                              \
            khl_iter_t k = khl_get(name, &h, i * 2654435761u);                               \
            cr_assert_neq(k, khl_end(name, &h), #name ": key %u lost", i);                   \
            cr_assert_eq(khl_val(name, &h, k), i);                                           \
        }                                                                                    \
        khl_destroy(name, &h);                                                               \
        test_alloc_fini(&t);                                                                 \
        alarm(0);                                                                            \
    } while (0)

Test(max_load, the_lower_bound_grows) { FILL_AND_FIND(ml2500); }
Test(max_load, below_17_64_grows) { FILL_AND_FIND(ml2600); FILL_AND_FIND(ml2656); }
Test(max_load, at_17_64_grows) { FILL_AND_FIND(ml265625); }
Test(max_load, inside_the_range_grows)
{
    FILL_AND_FIND(ml3000);
    FILL_AND_FIND(ml5000);
    FILL_AND_FIND(ml8750);
}
Test(max_load, the_upper_bound_grows) { FILL_AND_FIND(ml9375); }
