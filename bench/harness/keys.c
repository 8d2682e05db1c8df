/* keys.c: the benchmarks' key sets (keys.h). */
#include "keys.h"

#include <stdlib.h>
#include <string.h>

#include "support/prng.h"

const char *const key_type_names[N_KEYTYPES] = {"u32", "u64", "str16"};
const char *const key_kind_names[N_KINDS] = {"seq", "mult", "rand", "stride", "ptr"};

void keys_free(keys_t *k)
{
    free(k->hit);
    free(k->shuf);
    free(k->miss);
    free(k->strings);
    memset(k, 0, sizeof *k);
}

/* Integer key i of every kind but random, in 64 bits: a 32-bit key is the
 * low half, what its own arithmetic would wrap to. */
static uint64_t key_arith(int kind, uint64_t i, uint64_t ptr_base)
{
    return kind == KS_SEQ      ? i
           : kind == KS_MULT   ? i * 2654435761u
           : kind == KS_STRIDE ? i * KEYS_STRIDE
                               : ptr_base + i * KEYS_PTR_SIZE;
}

/* Key i (i < n: the hits, n..2n-1: the misses) into dst. */
static void key_make(keys_t *k, int type, int kind, size_t i, void *dst)
{
    if (type == KEY_U32) {
        uint32_t x = kind == KS_RAND ? prng_mix32((uint32_t)i)
                                     : (uint32_t)key_arith(kind, i, KEYS_PTR_BASE32);
        memcpy(dst, &x, sizeof x);
    } else if (type == KEY_U64) {
        uint64_t x = kind == KS_RAND ? prng_mix64(i) : key_arith(kind, i, KEYS_PTR_BASE64);
        memcpy(dst, &x, sizeof x);
    } else {
        static const char hex[] = "0123456789abcdef";
        char *s = k->strings + i * 17;
        uint64_t x = prng_mix64(i);
        for (int c = 0; c < 16; ++c)
            s[c] = hex[(x >> (4 * c)) & 15];
        s[16] = '\0';
        memcpy(dst, &s, sizeof s);
    }
}

int keys_make(keys_t *k, int type, int kind, size_t n, int shuffled)
{
    size_t ksz = type == KEY_U32 ? sizeof(uint32_t) : type == KEY_U64 ? sizeof(uint64_t)
                                                                     : sizeof(const char *);
    uint64_t s = 42;
    memset(k, 0, sizeof *k);
    k->n = n;
    k->ksz = ksz;
    k->hit = malloc(n * ksz);
    k->miss = malloc(n * ksz);
    k->shuf = shuffled ? malloc(n * ksz) : NULL;
    k->strings = type == KEY_STR ? malloc(2 * n * 17) : NULL;
    if (!k->hit || !k->miss || (shuffled && !k->shuf) || (type == KEY_STR && !k->strings)) {
        keys_free(k);
        return -1;
    }
    for (size_t i = 0; i < 2 * n; ++i)
        key_make(k, type, kind, i, (char *)(i < n ? k->hit : k->miss) + (i % n) * ksz);
    if (!shuffled)
        return 0;
    memcpy(k->shuf, k->hit, n * ksz);
    for (size_t i = n; i > 1; --i) {   /* Fisher-Yates */
        char tmp[8], *a = (char *)k->shuf + (i - 1) * ksz;
        char *b = (char *)k->shuf + prng_next(&s) % i * ksz;
        memcpy(tmp, a, ksz);
        memcpy(a, b, ksz);
        memcpy(b, tmp, ksz);
    }
    return 0;
}
