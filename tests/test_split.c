/* test_split.c: tables declared with KHL_DECLARE and defined in another
 * translation unit, linked from a static library, behave like KHL_INIT ones. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "split/split_table.h"
#include "support.h"

Test(split, declare_define_across_a_static_library)
{
    TEST_TABLE(split_s2i, h, t);
    static char names[200][16];
    for (int i = 0; i < 200; ++i) {
        snprintf(names[i], sizeof names[i], "n%d", i);
        int ret;
        khl_val(split_s2i, &h, khl_put(split_s2i, &h, names[i], &ret)) = i;
        cr_assert_eq(ret, 1);
    }
    for (int i = 0; i < 200; ++i) {
        char probe[16];
        snprintf(probe, sizeof probe, "n%d", i);
        khl_iter_t k = khl_get(split_s2i, &h, probe);
        cr_assert_neq(k, khl_end(split_s2i, &h));
        cr_assert_eq(khl_val(split_s2i, &h, k), i);
    }
    cr_assert_eq(t.live_blocks, 1);
    khl_destroy(split_s2i, &h);

    khl_t(split_u64set) s = {0};
    for (uint64_t i = 0; i < 1000; ++i)
        khl_put(split_u64set, &s, i << 40, NULL);
    cr_assert_eq(khl_size(split_u64set, &s), 1000);
    cr_assert_eq(khl_reserve(split_u64set, &s, 5000), 0);
    cr_assert_eq(khl_shrink(split_u64set, &s), 0);
    cr_assert_neq(khl_get(split_u64set, &s, (uint64_t)999 << 40), khl_end(split_u64set, &s));
    khl_destroy(split_u64set, &s);
    test_alloc_fini(&t);
}
