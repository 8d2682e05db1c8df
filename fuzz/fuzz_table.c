/* fuzz_table.c: libFuzzer target for the tables.  The input is a program:
 * each byte picks an operation (put, get, del, reserve, shrink, clear, copy)
 * and its key; a second stream of bytes, read from the end of the input,
 * decides which allocations fail.  After every step the table is checked
 * against a reference model (arrays indexed by key id); a failed call must
 * leave the table exactly as the model says.  First byte: which table
 * (int map, string set, int map in the split3 layout the benchmarks use,
 * two maps whose first block is scanned, 4 buckets without tags: u64
 * keys to u32 values, keys and values apart, and strings to u64, pairs;
 * and u64 keys to 24-byte values, whose keys, 32 bytes apart, start from a
 * bucket of their own in a larger table), and whether the allocator
 * resizes.  Built with a KHL_RESIZE_BYTES of 256
 * (Makefile), so that a table of its keys grows in place (the resize, then
 * the spread of khl_table_spread) where the allocator resizes: at the
 * library's 64 KiB no table of NKEYS keys would. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/peers/khl_split.h"
#include "khashlite/khashlite.h"
#include "input.h"
#include "support/check_alloc.h"

#define NKEYS 1024
#define MODEL_KEYS NKEYS
#include "support/table_model.h"

KHL_MAP_INIT_INT(fm, uint32_t)
KHL_SET_INIT_STR(fs)
KHL_INIT_LAYOUT(f3, uint32_t, uint32_t, 1, khl_hash_u32, khl_eq_int, KHL_LAYOUT_SPLIT3)
KHL_INIT(fw, uint64_t, uint32_t, 1, khl_hash_u64, khl_eq_int)
KHL_MAP_INIT_STR(fsm, uint64_t)
typedef struct { uint64_t w[3]; } fuzz_wide_t;
KHL_MAP_INIT_INT64(fl, fuzz_wide_t)

static char strkeys[NKEYS][16];   /* "k%d": room for any int, as gcc checks it under UBSan */

/* The tables' allocator, over check_alloc: each block starts 16, 32, 48 or
 * 64 bytes into check_alloc's, in turn (its turn in the byte before it), and
 * a resize is a new block, a copy and a free.  So a growth in place meets
 * the address changes a heap's realloc makes, after which a larger table's
 * slots move to keep their alignment (khl_table_spread): ASan's allocator
 * alone starts blocks of one size alike. */
#define SHIFT_ROOM 64u
typedef struct shift_alloc {
    khl_allocator_t a;
    check_alloc_t *under;
    unsigned turn;
} shift_alloc_t;

static void *shift_allocf(void *ud, void *ptr, size_t osize, size_t nsize)
{
    shift_alloc_t *s = ud;
    unsigned char *old = ptr, *q = NULL;
    if (nsize) {
        const unsigned k = s->turn++ % 4u;
        unsigned char *base = nsize <= SIZE_MAX - SHIFT_ROOM
                                  ? check_allocf(s->under, NULL, 0, nsize + SHIFT_ROOM)
                                  : NULL;
        if (!base)
            return NULL;
        q = base + 16u * (k + 1u);
        q[-1] = (unsigned char)k;
        if (old)
            memcpy(q, old, osize < nsize ? osize : nsize);
    }
    if (old)
        check_allocf(s->under, old - 16u * (old[-1] + 1u), osize + SHIFT_ROOM, 0);
    return q;
}

/* One fuzz run for a table type whose keys come from KEYOF(id); the table's
 * invariants are checked after every step. */
#define FUZZ_RUN(fn, name, KEYOF, IS_MAP, VAL)                                               \
    static void fn(input_t *in, int resizes)                                            \
    {                                                                                   \
        static model_t m;                                                               \
        check_alloc_t fa;                                                               \
        shift_alloc_t sa = {{shift_allocf, &sa, resizes}, &fa, 0};                      \
        khl_t(name) h, c;                                                               \
        int op;                                                                         \
        check_alloc_init(&fa, NULL, CHECK_SIZES | CHECK_POISON);                        \
        fa.fail_if = input_fails;                                                       \
        fa.fail_ctx = in;                                                               \
        memset(&m, 0, sizeof m);                                                        \
        khl_init(name, &h, &sa.a);                                                      \
        for (unsigned step = 0; (op = next_op(in)) >= 0; ++step) {                      \
            int kb = next_op(in);                                                       \
            uint32_t id = (uint32_t)(((unsigned)op >> 3) | ((unsigned)(kb < 0 ? 0 : kb) << 5)) % NKEYS; \
            khl_block_t *before = h.b;                                                    \
            switch (op & 7) {                                                           \
            case 0: case 1: case 2: {                                                   \
                int ret;                                                                \
                khl_iter_t k = khl_put(name, &h, KEYOF(id), &ret);                      \
                if (ret < 0) {                                                          \
                    CHECK(h.b == before && k == khl_end(name, &h));                     \
                    break;                                                              \
                }                                                                       \
                CHECK(ret == (m.present[id] ? 0 : 1));                                  \
                m.size += !m.present[id];                                               \
                m.present[id] = 1;                                                      \
                if (IS_MAP) {                                                           \
                    m.val[id] = step;                                                   \
                    VAL(name, &h, k) = step;                  \
                }                                                                       \
                break;                                                                  \
            }                                                                           \
            case 3: {                                                                   \
                khl_iter_t k = khl_get(name, &h, KEYOF(id));                            \
                CHECK((k != khl_end(name, &h)) == m.present[id]);                       \
                if (IS_MAP && m.present[id])                                            \
                    CHECK(VAL(name, &h, k) == m.val[id]);     \
                break;                                                                  \
            }                                                                           \
            case 4:                                                                     \
                if (id % 2)                                                             \
                    CHECK(khl_del_key(name, &h, KEYOF(id)) == m.present[id]);           \
                else                                                                    \
                    khl_del(name, &h, khl_get(name, &h, KEYOF(id)));                    \
                m.size -= m.present[id];                                                \
                m.present[id] = 0;                                                      \
                break;                                                                  \
            case 5:                                                                     \
                if (khl_reserve(name, &h, id * 2) < 0)                                  \
                    CHECK(h.b == before);                                               \
                break;                                                                  \
            case 6:                                                                     \
                if (khl_shrink(name, &h) < 0)                                           \
                    CHECK(h.b == before);                                               \
                break;                                                                  \
            default:                                                                    \
                if (id % 2) {                                                           \
                    khl_clear(name, &h);                                                \
                    memset(&m, 0, sizeof m);                                            \
                    break;                                                              \
                }                                                                       \
                khl_init(name, &c, &sa.a);                                              \
                if (khl_copy(name, &c, &h) == 0) {                                      \
                    khl_destroy(name, &h);                                              \
                    h = c;                                                              \
                } else {                                                                \
                    CHECK(c.b == NULL);                                                 \
                }                                                                       \
            }                                                                           \
            CHECK(khl_size(name, &h) == m.size);                                        \
            CHECK(khl_check(name, &h) == 0);                                            \
            if (step % 64 == 0) {                                                       \
                uint32_t seen = 0;                                                      \
                for (khl_iter_t k = 0; k < khl_end(name, &h); ++k)                      \
                    seen += khl_exist(name, &h, k) ? 1u : 0u;                           \
                CHECK(seen == m.size);                                                  \
            }                                                                           \
        }                                                                               \
        for (uint32_t id = 0; id < NKEYS; ++id)                                         \
            CHECK((khl_get(name, &h, KEYOF(id)) != khl_end(name, &h)) == m.present[id]); \
        khl_destroy(name, &h);                                                          \
        check_alloc_fini(&fa);                                                          \
    }

#define INT_KEY(id) ((uint32_t)(id) * 2654435761u)
#define STR_KEY(id) ((const char *)strkeys[id])
#define WIDE_KEY(id) ((uint64_t)(id) * 0x9E3779B97F4A7C15ULL)

FUZZ_RUN(run_fm, fm, INT_KEY, 1, MAP_VAL)
FUZZ_RUN(run_fs, fs, STR_KEY, 0, SET_VAL)
FUZZ_RUN(run_f3, f3, INT_KEY, 1, MAP_VAL)
FUZZ_RUN(run_fw, fw, WIDE_KEY, 1, MAP_VAL)
FUZZ_RUN(run_fsm, fsm, STR_KEY, 1, MAP_VAL)
FUZZ_RUN(run_fl, fl, WIDE_KEY, 1, MAP_VAL)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        khl_seed(7);
        for (int i = 0; i < NKEYS; ++i)
            snprintf(strkeys[i], sizeof strkeys[i], "k%d", i);
        ready = 1;
    }
    if (size < 1)
        return 0;
    input_t in = {data + 1, 0, size - 1, 24};   /* about one allocation in ten fails */
    /* Whether the allocator resizes: a table's growth in place (the resize,
     * then the spread of its keys), or always a new block and a move. */
    const int resizes = data[0] / 6 % 2;
    switch (data[0] % 6) {
    case 0: run_fm(&in, resizes); break;
    case 1: run_fs(&in, resizes); break;
    case 2: run_f3(&in, resizes); break;
    case 3: run_fw(&in, resizes); break;
    case 4: run_fsm(&in, resizes); break;
    default: run_fl(&in, resizes); break;
    }
    return 0;
}
