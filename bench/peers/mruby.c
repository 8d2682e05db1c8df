/* peer_mruby.c: the mruby_khash peer of workload `large` (prog_large.c):
 * mruby 3.1's own khash (the Debian libmruby-dev header <mruby/khash.h>,
 * used as mruby uses it) with a real mrb_state from mrb_open(), so every
 * allocation goes through mruby's allocator hook (mrb_default_allocf, that
 * is, the malloc this binary links).  Each function runs a whole loop; the
 * signatures match large_ops_t in prog_large.c.
 *
 * Hashes are mruby's defaults: kh_int_hash_func for u32, kh_int64_hash_func
 * for u64, X31 (kh_str_hash_func) with strcmp for the 16-byte strings.
 * Tables start at mruby's default 32 buckets (kh_init) and double when size
 * reaches UPPER_BOUND = 3/4 of the buckets.  Out of memory makes mruby raise
 * NoMemoryError; with no Ruby frame to catch it, mruby aborts. */
#include <stdint.h>
#include <stdio.h>

#include <mruby.h>
#include <mruby/khash.h>

static mrb_state *mrb;

int large_mruby_open(void);
void large_mruby_close(void);

int large_mruby_open(void)
{
    mrb = mrb_open();
    return mrb ? 0 : -1;
}

void large_mruby_close(void)
{
    if (mrb)
        mrb_close(mrb);
    mrb = NULL;
}

KHASH_DECLARE(lmr32, uint32_t, uint32_t, 1)
KHASH_DEFINE(lmr32, uint32_t, uint32_t, 1, kh_int_hash_func, kh_int_hash_equal)
KHASH_DECLARE(lmr64, uint64_t, uint32_t, 1)
KHASH_DEFINE(lmr64, uint64_t, uint32_t, 1, kh_int64_hash_func, kh_int64_hash_equal)
KHASH_DECLARE(lmrstr, kh_cstr_t, uint32_t, 1)
KHASH_DEFINE(lmrstr, kh_cstr_t, uint32_t, 1, kh_str_hash_func, kh_str_hash_equal)

#define LARGE_MRUBY_IMPL(P, NAME, KT)                                                 \
    void *P##_create(const void *a);                                                  \
    int P##_insert(void *t, const void *keys, size_t n);                              \
    size_t P##_get(void *t, const void *keys, size_t n, uint64_t *sum);               \
    uint64_t P##_iterate(void *t);                                                    \
    size_t P##_erase(void *t, const void *keys, size_t n);                            \
    void P##_stats(void *t, size_t *bytes, size_t *size, size_t *buckets);            \
    void P##_destroy(void *t);                                                        \
    void *P##_create(const void *a)                                                   \
    {                                                                                 \
        (void)a;                                                                      \
        return kh_init(NAME, mrb);                                                    \
    }                                                                                 \
    int P##_insert(void *t, const void *keys, size_t n)                               \
    {                                                                                 \
        khash_t(NAME) *h = t;                                                         \
        const KT *k = keys;                                                           \
        for (size_t i = 0; i < n; ++i) {                                              \
            int ret;                                                                  \
            khint_t it = kh_put2(NAME, mrb, h, k[i], &ret);                           \
            kh_val(h, it) = (uint32_t)i;                                              \
        }                                                                             \
        return 0;                                                                     \
    }                                                                                 \
    size_t P##_get(void *t, const void *keys, size_t n, uint64_t *sum)                \
    {                                                                                 \
        khash_t(NAME) *h = t;                                                         \
        const KT *k = keys;                                                           \
        size_t found = 0;                                                             \
        uint64_t s = 0;                                                               \
        for (size_t i = 0; i < n; ++i) {                                              \
            khint_t it = kh_get(NAME, mrb, h, k[i]);                                  \
            if (it != kh_end(h)) {                                                    \
                found++;                                                              \
                s += kh_val(h, it);                                                   \
            }                                                                         \
        }                                                                             \
        *sum = s;                                                                     \
        return found;                                                                 \
    }                                                                                 \
    uint64_t P##_iterate(void *t)                                                     \
    {                                                                                 \
        khash_t(NAME) *h = t;                                                         \
        uint64_t s = 0;                                                               \
        for (khint_t it = kh_begin(h); it != kh_end(h); ++it)                         \
            if (kh_exist(h, it))                                                      \
                s += kh_val(h, it);                                                   \
        return s;                                                                     \
    }                                                                                 \
    size_t P##_erase(void *t, const void *keys, size_t n)                             \
    {                                                                                 \
        khash_t(NAME) *h = t;                                                         \
        const KT *k = keys;                                                           \
        size_t erased = 0;                                                            \
        for (size_t i = 0; i < n; ++i) {                                              \
            khint_t it = kh_get(NAME, mrb, h, k[i]);                                  \
            if (it != kh_end(h)) {                                                    \
                kh_del(NAME, mrb, h, it);                                             \
                erased++;                                                             \
            }                                                                         \
        }                                                                             \
        return erased;                                                                \
    }                                                                                 \
    /* mruby/khash.h: mrb_calloc'd header, one block [keys][vals][flags: nb/4]. */    \
    void P##_stats(void *t, size_t *bytes, size_t *size, size_t *buckets)             \
    {                                                                                 \
        khash_t(NAME) *h = t;                                                         \
        size_t nb = kh_n_buckets(h);                                                  \
        *bytes = sizeof *h + nb / 4 + nb * (sizeof(KT) + sizeof(uint32_t));           \
        *size = kh_size(h);                                                           \
        *buckets = nb;                                                                \
    }                                                                                 \
    void P##_destroy(void *t)                                                         \
    {                                                                                 \
        kh_destroy(NAME, mrb, (khash_t(NAME) *)t);                                    \
    }

LARGE_MRUBY_IMPL(large_mruby_u32, lmr32, uint32_t)
LARGE_MRUBY_IMPL(large_mruby_u64, lmr64, uint64_t)
LARGE_MRUBY_IMPL(large_mruby_str, lmrstr, kh_cstr_t)
