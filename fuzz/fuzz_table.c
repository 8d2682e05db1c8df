/* fuzz_table.c: libFuzzer target for the tables.  The input is a program:
 * each byte picks an operation (put, get, del, reserve, shrink, clear, copy)
 * and its key; a second stream of bytes, read from the end of the input,
 * decides which allocations fail.  After every step the table is checked
 * against a reference model (arrays indexed by key id); a failed call must
 * leave the table exactly as the model says.  First byte: which table
 * (int map, string set, int map in the split3 layout the benchmarks use). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "khashlite/khashlite.h"

#define NKEYS 1024
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_table: %s failed at line %d\n", #c, __LINE__); abort(); } } while (0)

KHL_MAP_INIT_INT(fm, uint32_t)
KHL_SET_INIT_STR(fs)
KHL_INIT_LAYOUT(f3, uint32_t, uint32_t, 1, khl_hash_u32, khl_eq_int, KHL_LAYOUT_SPLIT3)

typedef struct input {
    const uint8_t *p;
    size_t front, back;      /* ops are read from the front, failure bytes from the back */
} input_t;

static int next_op(input_t *in)
{
    return in->front < in->back ? in->p[in->front++] : -1;
}

/* Allocator that fails when the input says so and counts live blocks. */
typedef struct fuzz_alloc {
    khl_allocator_t a;
    input_t *in;
    long live;
} fuzz_alloc_t;

static void *fuzz_allocf(void *ud, void *ptr, size_t osize, size_t nsize)
{
    fuzz_alloc_t *f = ud;
    (void)osize;
    if (nsize == 0) {
        if (ptr)
            f->live--;
        free(ptr);
        return NULL;
    }
    if (f->in->back > f->in->front && f->in->p[--f->in->back] < 24)
        return NULL;                       /* about one allocation in ten fails */
    void *q = realloc(ptr, nsize);
    if (q && !ptr)
        f->live++;
    return q;
}

static char strkeys[NKEYS][12];

typedef struct model {
    unsigned char present[NKEYS];
    uint32_t val[NKEYS];
    uint32_t size;
} model_t;

/* The value of bucket k as a uint32_t lvalue; sets have none. */
#define MAP_VAL(name, h, k) (*(uint32_t *)(void *)&khl_val(name, h, k))
#define SET_VAL(name, h, k) (*(uint32_t *)NULL)

/* One fuzz run for a table type whose keys come from KEYOF(id); the table's
 * invariants are checked after every step. */
#define FUZZ_RUN(fn, name, KEYOF, IS_MAP, VAL)                                               \
    static void fn(input_t *in)                                                         \
    {                                                                                   \
        static model_t m;                                                               \
        fuzz_alloc_t fa = {{fuzz_allocf, NULL}, in, 0};                                 \
        khl_t(name) h, c;                                                               \
        int op;                                                                         \
        fa.a.ud = &fa;                                                                  \
        memset(&m, 0, sizeof m);                                                        \
        khl_init(name, &h, &fa.a);                                                      \
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
                khl_init(name, &c, &fa.a);                                              \
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
        CHECK(fa.live == 0);                                                            \
    }

#define INT_KEY(id) ((uint32_t)(id) * 2654435761u)
#define STR_KEY(id) ((const char *)strkeys[id])

FUZZ_RUN(run_fm, fm, INT_KEY, 1, MAP_VAL)
FUZZ_RUN(run_fs, fs, STR_KEY, 0, SET_VAL)
FUZZ_RUN(run_f3, f3, INT_KEY, 1, MAP_VAL)

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
    input_t in = {data + 1, 0, size - 1};
    /* Half the input drives operations, the other half allocation failures. */
    in.back = size - 1;
    switch (data[0] % 3) {
    case 0: run_fm(&in); break;
    case 1: run_fs(&in); break;
    default: run_f3(&in); break;
    }
    return 0;
}
