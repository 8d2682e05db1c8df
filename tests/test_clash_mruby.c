/* test_clash_mruby.c: khashlite and mruby's khash.h in one translation
 * unit.  mruby's tables need an mrb_state to run, so this checks that the
 * declarations coexist and that khashlite works beside them. */
#include <criterion/criterion.h>
#include <mruby.h>
#include <mruby/khash.h>

#include "khashlite/khashlite.h"

KHASH_DECLARE(mrb_sym_set, mrb_sym, char, 0)
KHL_SET_INIT_INT(lite_sym_set)

Test(clash, mruby_khash_and_khashlite_together)
{
    khash_t(mrb_sym_set) *unused = NULL;
    khl_t(lite_sym_set) l;
    khl_init(lite_sym_set, &l, NULL);
    for (uint32_t i = 0; i < 50; ++i)
        khl_put(lite_sym_set, &l, i, NULL);
    cr_assert_eq(khl_size(lite_sym_set, &l), 50);
    cr_assert_null(unused);
    khl_destroy(lite_sym_set, &l);
}
