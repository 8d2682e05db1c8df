/* prog_large.c: workload `large`, one large table.  Inserts n random
 * distinct keys into an empty table (no reserve), then looks all of them up
 * in shuffled order (get_hit), looks up n absent random keys (get_miss),
 * walks every entry summing the values (iterate) and deletes every key
 * (erase); each in ns per operation, median of o->reps repetitions, a fresh
 * table per repetition.  The tables take turns within each repetition (see
 * run_keytype); uthash, 5-10x slower than the rest, runs at most 3
 * repetitions and no warmup so a standard run stays short.  Also reports the bytes each table holds per key at
 * the end of the inserts, its maximum load factor and the load it ended at.
 *
 * Tables (the `table` column): khashlite (default KHL_MAX_LOAD, 0.875),
 * khashlite_lf77 (KHL_MAX_LOAD 0.77, khash's limit; built from this file
 * again by bench/large_lf77.c), khashlite_split3 (klib's four-allocation
 * layout), and the Debian-packaged peers: htslib's klib khash (`khash`),
 * mruby 3.1's khash with a real mrb_state (`mruby_khash`, peer_mruby.c),
 * absl::flat_hash_map (`absl`, peer_absl.cpp) and uthash (`uthash`).
 * Key types are the metric prefix: u32 (uint32_t keys), u64 (uint64_t keys),
 * str16 (16-byte strings); values are uint32_t throughout.
 *
 * Fairness choices:
 * - every table uses its own default hash for the key type (khash: identity
 *   for u32, its shift-xor for u64, X31 for strings; mruby likewise; absl:
 *   absl::Hash; uthash: Jenkins; khashlite: khl_hash_u32/u64/str), since
 *   that is what a user of each gets.  Keys are xorshift outputs, so even
 *   the identity hash sees well-spread keys.
 * - str16 keys are 16 characters plus a NUL in one preallocated array of
 *   17-byte slots (the array is not counted as table memory).  The C tables
 *   store `const char *` and compare content: khashlite, khash and mruby with
 *   strcmp on NUL-terminated strings (their string maps), uthash with
 *   HASH_ADD_KEYPTR over the 16 bytes (memcmp), absl with std::string_view
 *   of length 16 (its idiomatic non-owning string key).
 * - uthash mallocs one item per key (its normal use) and frees it on erase.
 * - the peers in other files run whole loops per call, so a call through a
 *   function pointer costs once per n operations, never per operation.
 *
 * Memory (peak_bytes_per_entry): bytes requested from the allocator and held
 * at the end of the inserts, divided by n; allocator headers and rounding
 * are not counted, for any table.  khashlite: khl_block_size.  khash and
 * mruby: computed from their documented layout (header struct + flag words
 * + n_buckets keys + n_buckets values).  absl: counted exactly through a
 * counting std::allocator.  uthash: counted exactly through uthash_malloc/
 * uthash_free plus the item mallocs.
 *
 * --alloc=pool runs only the khashlite tables, on bench_alloc_open's pool.
 */
#include <stdlib.h>
#include <string.h>

#include "harness/alloc.h"
#include "harness/bench.h"
#include "khashlite/khashlite.h"

/* One table implementation for one key type.  `keys` is a uint32_t[],
 * uint64_t[] or const char *[] array; a value inserted for keys[i] is i. */
typedef struct large_ops {
    void *(*create)(const void *alloc);        /* khl_allocator_t * or NULL */
    int (*insert)(void *t, const void *keys, size_t n);            /* 0 or -1 */
    size_t (*get)(void *t, const void *keys, size_t n, uint64_t *sum); /* found */
    uint64_t (*iterate)(void *t);                                  /* sum of values */
    size_t (*erase)(void *t, const void *keys, size_t n);          /* erased */
    void (*stats)(void *t, size_t *bytes, size_t *size, size_t *buckets);
    void (*destroy)(void *t);
} large_ops_t;

/* A khashlite implementation of large_ops_t: TAG names the functions, NAME
 * the table type, KT the key type. */
#define LARGE_KHL_IMPL(TAG, NAME, KT)                                                 \
    static void *TAG##_create(const void *a)                                          \
    {                                                                                 \
        khl_t(NAME) *h = malloc(sizeof *h);                                           \
        if (h)                                                                        \
            khl_init(NAME, h, (const khl_allocator_t *)a);                            \
        return h;                                                                     \
    }                                                                                 \
    static int TAG##_insert(void *t, const void *keys, size_t n)                      \
    {                                                                                 \
        khl_t(NAME) *h = t;                                                           \
        const KT *k = keys;                                                           \
        for (size_t i = 0; i < n; ++i) {                                              \
            int ret;                                                                  \
            khl_iter_t it = khl_put(NAME, h, k[i], &ret);                             \
            if (ret < 0)                                                              \
                return -1;                                                            \
            khl_val(NAME, h, it) = (uint32_t)i;                                       \
        }                                                                             \
        return 0;                                                                     \
    }                                                                                 \
    static size_t TAG##_get(void *t, const void *keys, size_t n, uint64_t *sum)       \
    {                                                                                 \
        khl_t(NAME) *h = t;                                                           \
        const KT *k = keys;                                                           \
        size_t found = 0;                                                             \
        uint64_t s = 0;                                                               \
        for (size_t i = 0; i < n; ++i) {                                              \
            khl_iter_t it = khl_get(NAME, h, k[i]);                                   \
            if (it != khl_end(NAME, h)) {                                             \
                found++;                                                              \
                s += khl_val(NAME, h, it);                                            \
            }                                                                         \
        }                                                                             \
        *sum = s;                                                                     \
        return found;                                                                 \
    }                                                                                 \
    static uint64_t TAG##_iterate(void *t)                                            \
    {                                                                                 \
        khl_t(NAME) *h = t;                                                           \
        uint64_t s = 0;                                                               \
        uint32_t v;                                                                   \
        khl_foreach_value(NAME, h, v, s += v);                                        \
        return s;                                                                     \
    }                                                                                 \
    static size_t TAG##_erase(void *t, const void *keys, size_t n)                    \
    {                                                                                 \
        khl_t(NAME) *h = t;                                                           \
        const KT *k = keys;                                                           \
        size_t erased = 0;                                                            \
        for (size_t i = 0; i < n; ++i) {                                              \
            khl_iter_t it = khl_get(NAME, h, k[i]);                                   \
            if (it != khl_end(NAME, h)) {                                             \
                khl_del(NAME, h, it);                                                 \
                erased++;                                                             \
            }                                                                         \
        }                                                                             \
        return erased;                                                                \
    }                                                                                 \
    static void TAG##_stats(void *t, size_t *bytes, size_t *size, size_t *buckets)   \
    {                                                                                 \
        khl_t(NAME) *h = t;                                                           \
        *bytes = khl_block_size(NAME, h);                                             \
        *size = khl_size(NAME, h);                                                    \
        *buckets = khl_n_buckets(NAME, h);                                            \
    }                                                                                 \
    static void TAG##_destroy(void *t)                                                \
    {                                                                                 \
        khl_t(NAME) *h = t;                                                           \
        khl_destroy(NAME, h);                                                         \
        free(h);                                                                      \
    }

#define LARGE_OPS(TAG)                                                                \
    { TAG##_create, TAG##_insert, TAG##_get, TAG##_iterate, TAG##_erase,              \
      TAG##_stats, TAG##_destroy }

/* The single-block khashlite tables, compiled in this translation unit at
 * the default KHL_MAX_LOAD and in bench/large_lf77.c (which defines
 * LARGE_LF77_TU and KHL_MAX_LOAD 0.77, then includes this file). */
typedef const char *large_cstr_t;   /* a str16 key */
KHL_MAP_INIT_INT(k32, uint32_t)
KHL_MAP_INIT_INT64(k64, uint32_t)
KHL_MAP_INIT_STR(kstr, uint32_t)
LARGE_KHL_IMPL(khl_u32, k32, uint32_t)
LARGE_KHL_IMPL(khl_u64, k64, uint64_t)
LARGE_KHL_IMPL(khl_str, kstr, large_cstr_t)

#ifdef LARGE_LF77_TU

extern const large_ops_t large_khl_lf77_ops[3];
extern const double large_khl_lf77_max_load;
const large_ops_t large_khl_lf77_ops[3] = {LARGE_OPS(khl_u32), LARGE_OPS(khl_u64),
                                           LARGE_OPS(khl_str)};
const double large_khl_lf77_max_load = KHL_MAX_LOAD;

#else /* the program */

#include <htslib/khash.h>

/* uthash's own allocations (table and buckets) are counted; OOM is fatal. */
static size_t ut_live_bytes;
static void *ut_malloc(size_t sz)
{
    void *p = malloc(sz);
    if (p)
        ut_live_bytes += sz;
    return p;
}
static void ut_free(void *p, size_t sz)
{
    if (p)
        ut_live_bytes -= sz;
    free(p);
}
static void ut_fatal(const char *msg)
{
    fprintf(stderr, "large: uthash: %s\n", msg);
    exit(1);
}
#define uthash_malloc(sz) ut_malloc(sz)
#define uthash_free(ptr, sz) ut_free(ptr, sz)
#define uthash_fatal(msg) ut_fatal(msg)
#include <uthash.h>

/* --- khashlite in klib's layout: header + flags + keys + vals ---------------- */
KHL_INIT_LAYOUT(s32, uint32_t, uint32_t, 1, khl_hash_u32, khl_eq_int, KHL_LAYOUT_SPLIT3)
KHL_INIT_LAYOUT(s64, uint64_t, uint32_t, 1, khl_hash_u64, khl_eq_int, KHL_LAYOUT_SPLIT3)
KHL_INIT_LAYOUT(sstr, const char *, uint32_t, 1, khl_hash_str, khl_eq_str, KHL_LAYOUT_SPLIT3)
LARGE_KHL_IMPL(spl_u32, s32, uint32_t)
LARGE_KHL_IMPL(spl_u64, s64, uint64_t)
LARGE_KHL_IMPL(spl_str, sstr, large_cstr_t)

/* --- htslib's klib khash --------------------------------------------------------- */
KHASH_MAP_INIT_INT(hk32, uint32_t)
KHASH_MAP_INIT_INT64(hk64, uint32_t)
KHASH_MAP_INIT_STR(hkstr, uint32_t)

#define LARGE_KHASH_IMPL(TAG, NAME, KT)                                               \
    static void *TAG##_create(const void *a)                                          \
    {                                                                                 \
        (void)a;                                                                      \
        return kh_init(NAME);                                                         \
    }                                                                                 \
    static int TAG##_insert(void *t, const void *keys, size_t n)                      \
    {                                                                                 \
        khash_t(NAME) *h = t;                                                         \
        const KT *k = keys;                                                           \
        for (size_t i = 0; i < n; ++i) {                                              \
            int ret;                                                                  \
            khint_t it = kh_put(NAME, h, k[i], &ret);                                 \
            if (ret < 0)                                                              \
                return -1;                                                            \
            kh_val(h, it) = (uint32_t)i;                                              \
        }                                                                             \
        return 0;                                                                     \
    }                                                                                 \
    static size_t TAG##_get(void *t, const void *keys, size_t n, uint64_t *sum)       \
    {                                                                                 \
        khash_t(NAME) *h = t;                                                         \
        const KT *k = keys;                                                           \
        size_t found = 0;                                                             \
        uint64_t s = 0;                                                               \
        for (size_t i = 0; i < n; ++i) {                                              \
            khint_t it = kh_get(NAME, h, k[i]);                                       \
            if (it != kh_end(h)) {                                                    \
                found++;                                                              \
                s += kh_val(h, it);                                                   \
            }                                                                         \
        }                                                                             \
        *sum = s;                                                                     \
        return found;                                                                 \
    }                                                                                 \
    static uint64_t TAG##_iterate(void *t)                                            \
    {                                                                                 \
        khash_t(NAME) *h = t;                                                         \
        uint64_t s = 0;                                                               \
        for (khint_t it = kh_begin(h); it != kh_end(h); ++it)                         \
            if (kh_exist(h, it))                                                      \
                s += kh_val(h, it);                                                   \
        return s;                                                                     \
    }                                                                                 \
    static size_t TAG##_erase(void *t, const void *keys, size_t n)                    \
    {                                                                                 \
        khash_t(NAME) *h = t;                                                         \
        const KT *k = keys;                                                           \
        size_t erased = 0;                                                            \
        for (size_t i = 0; i < n; ++i) {                                              \
            khint_t it = kh_get(NAME, h, k[i]);                                       \
            if (it != kh_end(h)) {                                                    \
                kh_del(NAME, h, it);                                                  \
                erased++;                                                             \
            }                                                                         \
        }                                                                             \
        return erased;                                                                \
    }                                                                                 \
    /* khash.h: kcalloc'd header, flags of __ac_fsize(nb) khint32_t words, */         \
    /* then nb keys and nb values, each its own block. */                             \
    static void TAG##_stats(void *t, size_t *bytes, size_t *size, size_t *buckets)   \
    {                                                                                 \
        khash_t(NAME) *h = t;                                                         \
        size_t nb = kh_n_buckets(h);                                                  \
        *bytes = sizeof *h + (nb ? __ac_fsize(nb) * sizeof(khint32_t)                 \
                                       + nb * (sizeof(KT) + sizeof(uint32_t)) : 0);   \
        *size = kh_size(h);                                                           \
        *buckets = nb;                                                                \
    }                                                                                 \
    static void TAG##_destroy(void *t)                                                \
    {                                                                                 \
        kh_destroy(NAME, (khash_t(NAME) *)t);                                         \
    }

LARGE_KHASH_IMPL(kh_u32, hk32, uint32_t)
LARGE_KHASH_IMPL(kh_u64, hk64, uint64_t)
LARGE_KHASH_IMPL(kh_str, hkstr, kh_cstr_t)

/* --- uthash: one malloc'd item per key --------------------------------------------- */
typedef struct ut32 { uint32_t key, val; UT_hash_handle hh; } ut32_t;
typedef struct ut64 { uint64_t key; uint32_t val; UT_hash_handle hh; } ut64_t;
typedef struct utstr { const char *key; uint32_t val; UT_hash_handle hh; } utstr_t;

/* The handle: the head pointer and the bytes of the items it holds. */
typedef struct ut_table { void *head; size_t item_bytes; } ut_table_t;

/* KP: the key's address for HASH_FIND/HASH_ADD (u32/u64: &key; str: the
 * string itself, compared over 16 bytes). */
#define LARGE_UT_IMPL(TAG, IT, KT, KLEN, KP)                                          \
    static void *TAG##_create(const void *a)                                          \
    {                                                                                 \
        (void)a;                                                                      \
        return calloc(1, sizeof(ut_table_t));                                         \
    }                                                                                 \
    static int TAG##_insert(void *t, const void *keys, size_t n)                      \
    {                                                                                 \
        ut_table_t *ut = t;                                                           \
        IT *head = ut->head;                                                          \
        const KT *k = keys;                                                           \
        for (size_t i = 0; i < n; ++i) {                                              \
            IT *e;                                                                    \
            HASH_FIND(hh, head, KP(k[i]), KLEN, e);                                   \
            if (!e) {                                                                 \
                e = malloc(sizeof *e);                                                \
                if (!e) {                                                             \
                    ut->head = head;                                                  \
                    return -1;                                                        \
                }                                                                     \
                ut->item_bytes += sizeof *e;                                          \
                e->key = k[i];                                                        \
                HASH_ADD_KEYPTR(hh, head, KP(e->key), KLEN, e);                       \
            }                                                                         \
            e->val = (uint32_t)i;                                                     \
        }                                                                             \
        ut->head = head;                                                              \
        return 0;                                                                     \
    }                                                                                 \
    static size_t TAG##_get(void *t, const void *keys, size_t n, uint64_t *sum)       \
    {                                                                                 \
        ut_table_t *ut = t;                                                           \
        IT *head = ut->head;                                                          \
        const KT *k = keys;                                                           \
        size_t found = 0;                                                             \
        uint64_t s = 0;                                                               \
        for (size_t i = 0; i < n; ++i) {                                              \
            IT *e;                                                                    \
            HASH_FIND(hh, head, KP(k[i]), KLEN, e);                                   \
            if (e) {                                                                  \
                found++;                                                              \
                s += e->val;                                                          \
            }                                                                         \
        }                                                                             \
        *sum = s;                                                                     \
        return found;                                                                 \
    }                                                                                 \
    static uint64_t TAG##_iterate(void *t)                                            \
    {                                                                                 \
        ut_table_t *ut = t;                                                           \
        uint64_t s = 0;                                                               \
        for (IT *e = ut->head; e; e = e->hh.next)                                     \
            s += e->val;                                                              \
        return s;                                                                     \
    }                                                                                 \
    static size_t TAG##_erase(void *t, const void *keys, size_t n)                    \
    {                                                                                 \
        ut_table_t *ut = t;                                                           \
        IT *head = ut->head;                                                          \
        const KT *k = keys;                                                           \
        size_t erased = 0;                                                            \
        for (size_t i = 0; i < n; ++i) {                                              \
            IT *e;                                                                    \
            HASH_FIND(hh, head, KP(k[i]), KLEN, e);                                   \
            if (e) {                                                                  \
                HASH_DEL(head, e);                                                    \
                free(e);                                                              \
                ut->item_bytes -= sizeof *e;                                          \
                erased++;                                                             \
            }                                                                         \
        }                                                                             \
        ut->head = head;                                                              \
        return erased;                                                                \
    }                                                                                 \
    static void TAG##_stats(void *t, size_t *bytes, size_t *size, size_t *buckets)   \
    {                                                                                 \
        ut_table_t *ut = t;                                                           \
        IT *head = ut->head;                                                          \
        *bytes = ut->item_bytes + ut_live_bytes;                                      \
        *size = HASH_COUNT(head);                                                     \
        *buckets = head ? head->hh.tbl->num_buckets : 0;                              \
    }                                                                                 \
    static void TAG##_destroy(void *t)                                                \
    {                                                                                 \
        ut_table_t *ut = t;                                                           \
        IT *head = ut->head, *e, *tmp;                                                \
        HASH_ITER(hh, head, e, tmp) {                                                 \
            HASH_DEL(head, e);                                                        \
            free(e);                                                                  \
        }                                                                             \
        free(ut);                                                                     \
    }

#define LARGE_UT_ADDR(x) (&(x))
#define LARGE_UT_STR(x) (x)
LARGE_UT_IMPL(ut_u32, ut32_t, uint32_t, sizeof(uint32_t), LARGE_UT_ADDR)
LARGE_UT_IMPL(ut_u64, ut64_t, uint64_t, sizeof(uint64_t), LARGE_UT_ADDR)
LARGE_UT_IMPL(ut_str, utstr_t, large_cstr_t, 16, LARGE_UT_STR)

/* --- peers in other translation units ---------------------------------------------- */
/* The signatures must match large_ops_t; see those files. */
#define LARGE_DECLARE_PEER(P)                                                         \
    void *P##_create(const void *a);                                                  \
    int P##_insert(void *t, const void *keys, size_t n);                              \
    size_t P##_get(void *t, const void *keys, size_t n, uint64_t *sum);               \
    uint64_t P##_iterate(void *t);                                                    \
    size_t P##_erase(void *t, const void *keys, size_t n);                            \
    void P##_stats(void *t, size_t *bytes, size_t *size, size_t *buckets);            \
    void P##_destroy(void *t);
LARGE_DECLARE_PEER(large_absl_u32)
LARGE_DECLARE_PEER(large_absl_u64)
LARGE_DECLARE_PEER(large_absl_str)
LARGE_DECLARE_PEER(large_mruby_u32)
LARGE_DECLARE_PEER(large_mruby_u64)
LARGE_DECLARE_PEER(large_mruby_str)
int large_mruby_open(void);
void large_mruby_close(void);
extern const large_ops_t large_khl_lf77_ops[3];
extern const double large_khl_lf77_max_load;

/* ---------------------------------------------------------------------------------- */

enum { KEY_U32, KEY_U64, KEY_STR, N_KEYTYPES };
static const char *const key_names[N_KEYTYPES] = {"u32", "u64", "str16"};

typedef struct large_table {
    const char *name, *layout;
    int khashlite;           /* runs on the pool with --alloc=pool */
    int slow;                /* at most 3 repetitions, no warmup */
    double max_load;         /* < 0: not an open-addressing limit */
    large_ops_t ops[N_KEYTYPES];
} large_table_t;

#define N_TABLES 7
static large_table_t tables[N_TABLES] = {
    {"khashlite", "single", 1, 0, KHL_MAX_LOAD,
     {LARGE_OPS(khl_u32), LARGE_OPS(khl_u64), LARGE_OPS(khl_str)}},
    {"khashlite_lf77", "single", 1, 0, 0, {{0}}},   /* filled from large_lf77.c */
    {"khashlite_split3", "split3", 1, 0, KHL_MAX_LOAD,
     {LARGE_OPS(spl_u32), LARGE_OPS(spl_u64), LARGE_OPS(spl_str)}},
    {"khash", "split3", 0, 0, 0.77,
     {LARGE_OPS(kh_u32), LARGE_OPS(kh_u64), LARGE_OPS(kh_str)}},
    {"mruby_khash", "split2", 0, 0, 0.75,     /* UPPER_BOUND(x) = x/4 + x/2 */
     {LARGE_OPS(large_mruby_u32), LARGE_OPS(large_mruby_u64), LARGE_OPS(large_mruby_str)}},
    {"absl", "single", 0, 0, 0.875,           /* 7/8 */
     {LARGE_OPS(large_absl_u32), LARGE_OPS(large_absl_u64), LARGE_OPS(large_absl_str)}},
    /* 5-10x slower than the rest: capped so a standard run stays short. */
    {"uthash", "chained", 0, 1, -1,
     {LARGE_OPS(ut_u32), LARGE_OPS(ut_u64), LARGE_OPS(ut_str)}},
};

/* The keys of one key type and size: n hits (insert and erase order), the
 * same in shuffled order (get_hit), n misses. */
typedef struct keyset {
    void *hit, *shuffled, *miss;
    char *strings;           /* str16: 2n slots of 17 bytes */
} keyset_t;

static uint64_t xs64(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static uint32_t xs32(uint32_t *s)
{
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

static void keyset_free(keyset_t *ks)
{
    free(ks->hit);
    free(ks->shuffled);
    free(ks->miss);
    free(ks->strings);
    memset(ks, 0, sizeof *ks);
}

/* Successive states of a xorshift generator are distinct within its period
 * (2^32 - 1, 2^64 - 1), so the 2n keys are distinct without a check: the
 * first n are the hits, the next n the misses.  str16 keys are the 16 hex
 * digits of distinct 64-bit states. */
static int keyset_make(keyset_t *ks, int kt, size_t n)
{
    size_t ksz = kt == KEY_U32 ? sizeof(uint32_t) : kt == KEY_U64 ? sizeof(uint64_t)
                                                                 : sizeof(char *);
    uint64_t s64 = 0x9E3779B97F4A7C15ULL ^ (uint64_t)kt;
    uint32_t s32 = 2463534242u;
    uint64_t shuf = 88172645463325252ULL;
    memset(ks, 0, sizeof *ks);
    ks->hit = malloc(n * ksz);
    ks->shuffled = malloc(n * ksz);
    ks->miss = malloc(n * ksz);
    if (kt == KEY_STR)
        ks->strings = malloc(2 * n * 17);
    if (!ks->hit || !ks->shuffled || !ks->miss || (kt == KEY_STR && !ks->strings)) {
        keyset_free(ks);
        return -1;
    }
    for (size_t i = 0; i < 2 * n; ++i) {
        void *dst = i < n ? ks->hit : ks->miss;
        size_t j = i < n ? i : i - n;
        if (kt == KEY_U32) {
            ((uint32_t *)dst)[j] = xs32(&s32);
        } else if (kt == KEY_U64) {
            ((uint64_t *)dst)[j] = xs64(&s64);
        } else {
            static const char hex[] = "0123456789abcdef";
            char *p = ks->strings + i * 17;
            uint64_t x = xs64(&s64);
            for (int c = 0; c < 16; ++c)
                p[c] = hex[(x >> (4 * c)) & 15];
            p[16] = '\0';
            ((const char **)dst)[j] = p;
        }
    }
    memcpy(ks->shuffled, ks->hit, n * ksz);
    for (size_t i = n; i > 1; --i) {   /* Fisher-Yates */
        size_t j = (size_t)(xs64(&shuf) % i);
        char tmp[8];
        char *a = (char *)ks->shuffled + (i - 1) * ksz, *b = (char *)ks->shuffled + j * ksz;
        memcpy(tmp, a, ksz);
        memcpy(a, b, ksz);
        memcpy(b, tmp, ksz);
    }
    return 0;
}

enum { OP_INSERT, OP_GET_HIT, OP_GET_MISS, OP_ITERATE, OP_ERASE, N_OPS };
static const char *const op_names[N_OPS] = {"insert", "get_hit", "get_miss", "iterate", "erase"};

static void fail(const char *table, const char *kt, size_t n, const char *what)
{
    fprintf(stderr, "large: %s %s n=%zu: %s\n", table, kt, n, what);
    exit(1);
}

/* One repetition of the five operations on a fresh table: ns per operation
 * into ns[0..N_OPS); with stats != NULL also the bytes, size and buckets
 * the table has at the end of the inserts. */
static void run_rep(const large_table_t *tb, int kt, const keyset_t *ks, size_t n,
                    const khl_allocator_t *a, double ns[N_OPS], size_t stats[3])
{
    const large_ops_t *op = &tb->ops[kt];
    const char *ktn = key_names[kt];
    uint64_t expect = (uint64_t)n * (n - 1) / 2;
    uint64_t t0, sum = 0, it;
    size_t got, b2, s2, n2;
    void *h = op->create(tb->khashlite ? (const void *)a : NULL);
    if (!h)
        fail(tb->name, ktn, n, "cannot create the table");

    t0 = bench_now_ns();
    if (op->insert(h, ks->hit, n) < 0)
        fail(tb->name, ktn, n, "insert ran out of memory");
    ns[OP_INSERT] = (double)(bench_now_ns() - t0);
    op->stats(h, &b2, &s2, &n2);    /* untimed */
    if (s2 != n)
        fail(tb->name, ktn, n, "size after insert is wrong");
    if (stats) {
        stats[0] = b2;
        stats[1] = s2;
        stats[2] = n2;
    }
    t0 = bench_now_ns();
    got = op->get(h, ks->shuffled, n, &sum);
    ns[OP_GET_HIT] = (double)(bench_now_ns() - t0);
    BENCH_KEEP(sum);
    if (got != n || sum != expect)
        fail(tb->name, ktn, n, "get_hit did not find every key");
    t0 = bench_now_ns();
    got = op->get(h, ks->miss, n, &sum);
    ns[OP_GET_MISS] = (double)(bench_now_ns() - t0);
    BENCH_KEEP(sum);
    if (got != 0)
        fail(tb->name, ktn, n, "get_miss found a key");
    t0 = bench_now_ns();
    it = op->iterate(h);
    ns[OP_ITERATE] = (double)(bench_now_ns() - t0);
    BENCH_KEEP(it);
    if (it != expect)
        fail(tb->name, ktn, n, "iterate sum is wrong");
    t0 = bench_now_ns();
    got = op->erase(h, ks->hit, n);
    ns[OP_ERASE] = (double)(bench_now_ns() - t0);
    BENCH_KEEP(got);
    if (got != n)
        fail(tb->name, ktn, n, "erase did not delete every key");
    op->stats(h, &b2, &s2, &n2);
    if (s2 != 0)
        fail(tb->name, ktn, n, "table not empty after erase");
    op->destroy(h);
    for (int k = 0; k < N_OPS; ++k)
        ns[k] /= (double)n;
}

/* One key type at one size: warmup + reps rounds, each running every table
 * once (starting at a different table each round), so load from other
 * processes on a shared machine falls on all tables alike; then the rows. */
static void run_keytype(const bench_opts_t *o, int kt, const keyset_t *ks, size_t n, int pool,
                        int *step, int total)
{
    const char *ktn = key_names[kt];
    double *ns[N_TABLES] = {0};
    size_t stats[N_TABLES][3] = {{0}};
    int reps[N_TABLES];
    bench_alloc_t ba[N_TABLES];
    char metric[64];
    int rounds = o->warmup + o->reps;

    for (int t = 0; t < N_TABLES; ++t) {
        const large_table_t *tb = &tables[t];
        reps[t] = (pool && !tb->khashlite) ? 0 : tb->slow && o->reps > 3 ? 3 : o->reps;
        if (!reps[t])
            continue;
        ns[t] = malloc(sizeof(double) * (size_t)reps[t] * N_OPS);
        if (!ns[t])
            fail(tb->name, ktn, n, "out of memory");
        if (bench_alloc_open(&ba[t], o) < 0)
            fail(tb->name, ktn, n, "cannot open the allocator");
    }
    for (int r = 0; r < rounds; ++r) {
        int m = r - o->warmup;   /* measured index, < 0 while warming up */
        bench_progress("large", (*step)++, total);
        for (int i = 0; i < N_TABLES; ++i) {
            int t = (r + i) % N_TABLES;
            double one[N_OPS];
            /* The slow table: no warmup, only its first reps[t] rounds. */
            int mt = tables[t].slow ? r : m;
            if (!reps[t] || mt < 0 || mt >= reps[t])
                continue;
            run_rep(&tables[t], kt, ks, n, &ba[t].a, one, mt == 0 ? stats[t] : NULL);
            for (int k = 0; k < N_OPS; ++k)
                ns[t][k * reps[t] + mt] = one[k];
        }
    }
    for (int t = 0; t < N_TABLES; ++t) {
        const large_table_t *tb = &tables[t];
        const char *al = bench_allocator(o);
        if (!reps[t])
            continue;
        bench_alloc_close(&ba[t]);
        for (int k = 0; k < N_OPS; ++k) {
            snprintf(metric, sizeof metric, "%s_%s_ns", ktn, op_names[k]);
            bench_row(o, "large", tb->name, tb->layout, al, (long)n, metric,
                      bench_summarise(ns[t] + k * reps[t], reps[t]));
        }
        snprintf(metric, sizeof metric, "%s_peak_bytes_per_entry", ktn);
        bench_value(o, "large", tb->name, tb->layout, al, (long)n, metric,
                    (double)stats[t][0] / (double)n);
        snprintf(metric, sizeof metric, "%s_load_at_end", ktn);
        bench_value(o, "large", tb->name, tb->layout, al, (long)n, metric,
                    stats[t][2] ? (double)stats[t][1] / (double)stats[t][2] : 0.0);
        if (tb->max_load > 0) {
            snprintf(metric, sizeof metric, "%s_max_load", ktn);
            bench_value(o, "large", tb->name, tb->layout, al, (long)n, metric, tb->max_load);
        }
        free(ns[t]);
    }
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    size_t sizes[16];
    int n_sizes, pool, step = 0, total, peers = 0;

    bench_parse(argc, argv, &o, "workload large: one large table, u32/u64/str16 keys; "
                                "insert, get_hit, get_miss, iterate, erase in ns/op",
                "  sizes: --quick 50,000 keys; standard 1,000,000; --full 1M and 10M\n"
                "  tables: khashlite khashlite_lf77 khashlite_split3 khash mruby_khash "
                "absl uthash\n"
                "  (--alloc=pool runs only the khashlite tables)", 1);
    if (!bench_wanted(&o, "large"))
        return 0;

    memcpy(tables[1].ops, large_khl_lf77_ops, sizeof tables[1].ops);
    tables[1].max_load = large_khl_lf77_max_load;
    khl_seed(0x6b686c6974650001ULL);   /* reproducible khl_hash_str */

    if (o.quick) {
        sizes[0] = 50000;
        n_sizes = 1;
    } else if (o.full) {
        sizes[0] = 1000000;
        sizes[1] = 10000000;
        n_sizes = 2;
    } else {
        sizes[0] = 1000000;
        n_sizes = 1;
    }
    pool = strcmp(o.alloc, "pool") == 0;
    if (!pool) {
        if (large_mruby_open() < 0) {
            fprintf(stderr, "large: mrb_open failed\n");
            return 1;
        }
        peers = 1;
    }
    if (o.n_sizes) {                       /* --sizes overrides the defaults */
        n_sizes = o.n_sizes;
        for (int i = 0; i < n_sizes; ++i)
            sizes[i] = (size_t)(o.sizes[i] > 0 ? o.sizes[i] : 1);
    }
    total = n_sizes * N_KEYTYPES * (o.warmup + o.reps);

    for (int s = 0; s < n_sizes; ++s) {
        for (int kt = 0; kt < N_KEYTYPES; ++kt) {
            keyset_t ks;
            if (keyset_make(&ks, kt, sizes[s]) < 0) {
                fprintf(stderr, "large: out of memory for %zu keys\n", sizes[s]);
                return 1;
            }
            run_keytype(&o, kt, &ks, sizes[s], pool, &step, total);
            keyset_free(&ks);
        }
    }
    bench_progress("large", step, total);
    if (peers)
        large_mruby_close();
    if (o.out != stdout)
        fclose(o.out);
    return 0;
}

#endif /* LARGE_LF77_TU */
