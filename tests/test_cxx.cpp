/* test_cxx.cpp: the public headers compile as C++ (g++ -std=c++20 -Wall
 * -Wextra -Wpedantic) and the tables work from C++ code. */
#include <criterion/criterion.h>
#include <string>

#include "khashlite/khashlite.h"

KHL_MAP_INIT_STR(cxx_s2i, int)
KHL_SET_INIT_INT64(cxx_set)
KHL_MAP_INIT_INT(cxx_unused, double)

Test(cxx, tables_work_from_cpp)
{
    khl_t(cxx_s2i) h;
    khl_init(cxx_s2i, &h, &khl_libc_allocator);
    std::string words[] = {"alpha", "beta", "gamma", "delta"};
    for (int i = 0; i < 4; ++i) {
        int ret = 0;
        khl_iter_t k = khl_put(cxx_s2i, &h, words[i].c_str(), &ret);
        cr_assert_eq(ret, 1);
        khl_val(cxx_s2i, &h, k) = i;
    }
    for (int i = 0; i < 4; ++i)
        cr_assert_eq(khl_val(cxx_s2i, &h, khl_get(cxx_s2i, &h, words[i].c_str())), i);
    khl_destroy(cxx_s2i, &h);

    khl_t(cxx_set) s{};
    for (uint64_t i = 0; i < 100; ++i)
        khl_put(cxx_set, &s, i, nullptr);
    uint64_t sum = 0, key;
    khl_foreach_key(cxx_set, &s, key, sum += key);
    cr_assert_eq(sum, 4950u);
    khl_destroy(cxx_set, &s);
}
