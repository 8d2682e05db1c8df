/* keys.h: the key sets the table benchmarks (programs large and peers) run
 * on: n keys to insert (hit), the same in shuffled order, and n keys that are
 * never inserted (miss), all distinct by construction (bijections of the
 * key's index, support/prng.h), so no set needs checking.  String keys are 16
 * hex digits and a NUL in one array of 17-byte slots that the key set owns
 * (not counted as any table's memory). */
#ifndef KHL_BENCH_KEYS_H
#define KHL_BENCH_KEYS_H

#include <stddef.h>
#include <stdint.h>

enum { KEY_U32, KEY_U64, KEY_STR, N_KEYTYPES };   /* uint32_t, uint64_t, const char * */
enum { KS_SEQ, KS_MULT, KS_RAND, KS_STRIDE, KS_PTR, N_KINDS };   /* how integer keys are made */
extern const char *const key_type_names[N_KEYTYPES];   /* "u32", "u64", "str16" */
extern const char *const key_kind_names[N_KINDS];   /* "seq", "mult", "rand", "stride", "ptr" */

#define KEYS_STRIDE 64u
#define KEYS_PTR_SIZE 48u
#define KEYS_PTR_BASE64 0x00007f3a40000000ULL
#define KEYS_PTR_BASE32 0x10000000u

typedef struct keys {
    void *hit, *shuf, *miss;   /* arrays of n keys of the key type; shuf may be NULL */
    char *strings;
    size_t n, ksz;
} keys_t;

/* kind applies to integer keys: sequential (0..2n-1), multiplicative
 * (i * 2654435761, in the key's width), random (a bijection of i), strided
 * (i * 64: offsets of 64-byte records, ids of aligned blocks) or pointers
 * (KEYS_PTR_BASE + i * 48: 48-byte objects side by side in a heap, as an
 * interpreter's object addresses are; from 2^28 for 32-bit keys, a 32-bit
 * heap's: distinct while 2n keys do not wrap, n < 2^25 for 32-bit keys);
 * string keys are always random.  0, or -1 when out of memory (k is then empty). */
int keys_make(keys_t *k, int type, int kind, size_t n, int shuffled);
void keys_free(keys_t *k);

/* The address of key i of a key array. */
static inline const void *key_at(const keys_t *k, const void *keys, size_t i)
{
    return (const char *)keys + i * k->ksz;
}

#endif
