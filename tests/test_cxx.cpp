/* test_cxx.cpp: the public headers compile as C++ (g++ -std=c++20 -Wall
 * -Wextra -Wpedantic) and the tables work from C++ code. */
#include <criterion/criterion.h>
#include <string>
#include <utility>

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
    uint64_t sum = 0;
    khl_cursor_t c = khl_cursor(cxx_set, &s);
    while (khl_cursor_next(cxx_set, &s, &c))
        sum += khl_key(cxx_set, &s, c.k);
    cr_assert_eq(sum, 4950u);
    uint64_t key, sum2 = 0;
    khl_foreach_key(cxx_set, &s, key, sum2 += key);
    cr_assert_eq(sum2, 4950u);
    khl_destroy(cxx_set, &s);
}

/* What a C++ user writes to range-for over a table: an input iterator whose
 * ++ is one cursor step. */
struct cxx_s2i_range {
    const khl_t(cxx_s2i) *h;
    struct iterator {
        const khl_t(cxx_s2i) *h;
        khl_cursor_t c;
        bool done;
        std::pair<const char *, int> operator*() const
        {
            return {khl_key(cxx_s2i, h, c.k), khl_val(cxx_s2i, h, c.k)};
        }
        iterator &operator++()
        {
            done = !khl_cursor_next(cxx_s2i, h, &c);
            return *this;
        }
        bool operator!=(const iterator &o) const { return done != o.done; }
    };
    iterator begin() const
    {
        iterator it{h, khl_cursor(cxx_s2i, h), false};
        return ++it;
    }
    iterator end() const { return iterator{h, khl_cursor_t{}, true}; }
};

Test(cxx, cursor_as_a_range_for_iterator)
{
    khl_t(cxx_s2i) h{};
    int n = 0;
    for (auto kv : cxx_s2i_range{&h})
        n += kv.second + 1;
    cr_assert_eq(n, 0, "an empty table yields nothing");
    static const char *words[] = {"one", "two", "three", "four", "five", "six", "seven",
                                  "eight", "nine", "ten", "eleven", "twelve", "thirteen",
                                  "fourteen", "fifteen", "sixteen", "seventeen", "eighteen"};
    for (int i = 0; i < 18; ++i)
        khl_val(cxx_s2i, &h, khl_put(cxx_s2i, &h, words[i], nullptr)) = i;
    int sum = 0, count = 0;
    for (auto kv : cxx_s2i_range{&h}) {
        cr_assert_str_eq(kv.first, words[kv.second]);
        sum += kv.second;
        ++count;
    }
    cr_assert_eq(count, 18);
    cr_assert_eq(sum, 17 * 18 / 2);
    khl_destroy(cxx_s2i, &h);
}
