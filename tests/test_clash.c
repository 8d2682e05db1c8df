/* test_clash.c: khashlite and klib's khash (as shipped by htslib) in one
 * translation unit: no name of one may collide with the other's. */
#include <criterion/criterion.h>
#include <htslib/khash.h>

#include "khashlite/khashlite.h"

KHASH_MAP_INIT_INT(klib32, int)
KHL_MAP_INIT_INT(lite32, int)

Test(clash, klib_khash_and_khashlite_together)
{
    khash_t(klib32) *k = kh_init(klib32);
    khl_t(lite32) l;
    khl_init(lite32, &l, NULL);
    for (int i = 0; i < 100; ++i) {
        int ret;
        khint_t it = kh_put(klib32, k, (khint32_t)i, &ret);
        kh_val(k, it) = i;
        khl_val(lite32, &l, khl_put(lite32, &l, (uint32_t)i, &ret)) = i;
    }
    cr_assert_eq(kh_size(k), khl_size(lite32, &l));
    for (int i = 0; i < 100; ++i)
        cr_assert_eq(kh_val(k, kh_get(klib32, k, (khint32_t)i)),
                     khl_val(lite32, &l, khl_get(lite32, &l, (uint32_t)i)));
    kh_destroy(klib32, k);
    khl_destroy(lite32, &l);
}
