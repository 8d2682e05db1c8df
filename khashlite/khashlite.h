/* khashlite.h: type-generic open-addressing hash tables whose whole state
 * (header, control bytes, keys and values) lives in ONE allocation, obtained
 * through a Lua-style allocator hook.
 *
 * ---------------------------------------------------------------------------
 * Example
 *
 *     #include <khashlite/khashlite.h>
 *     KHL_MAP_INIT_INT(m32, double)          // uint32_t -> double; no semicolon
 *
 *     khl_t(m32) h;
 *     khl_init(m32, &h, NULL);               // libc allocator; allocates nothing
 *     int ret;
 *     khl_iter_t k = khl_put(m32, &h, 42, &ret);
 *     if (ret < 0) { ... out of memory: h is exactly as before ... }
 *     khl_val(m32, &h, k) = 3.5;             // ret: 1 inserted, 0 already there
 *     k = khl_get(m32, &h, 42);              // khl_end(m32, &h) when absent
 *     khl_del_key(m32, &h, 42);              // 1 erased, 0 absent
 *     khl_destroy(m32, &h);
 *
 * Every operation takes the table's type name first; h is a khl_t(name) *.
 *
 * ---------------------------------------------------------------------------
 * Contract
 *
 * - One block.  An empty table (never filled, destroyed, or shrunk while
 *   empty) holds no allocation; any other holds exactly one:
 *       up to 16 buckets:  [8 B header][1 control byte per bucket][pad][slots]
 *       more:   [pad][slots][counters][8 B header][1 control byte
 *               per bucket][1 overflow byte per 16 buckets]
 *   (a larger table's slots come first, so a growth through the allocator's
 *   resize leaves them where they are).
 *   The slots are key,value pairs, or, for a map whose pair would carry
 *   padding (a 4-byte key beside an 8-byte value), all the values then all
 *   the keys; either way aligned for their types in memory.  The handle
 *   (block pointer and allocator) is the caller's; the block moves when the
 *   table grows.
 * - Out of memory: the call reports it (-1, or *ret = -1 from khl_put) and
 *   the table is exactly as it was.  Nothing leaks.
 * - A khl_put of a key already present never allocates and never fails.
 *   After khl_reserve(h, n), puts never allocate until the table holds more
 *   than n keys, whatever deletions come between.
 * - Bucket indices (khl_iter_t) stay valid until the next call that can
 *   allocate (khl_put, khl_reserve, khl_shrink, khl_copy into the table).
 *   khl_del and khl_del_key move nothing, so deleting the current key during
 *   a forward walk (a cursor, khl_foreach, or khl_begin/khl_next) visits
 *   every other key exactly once.
 * - Bounded: every walk over groups stops after the last group, and a
 *   bucket freed in a group a key was pushed past counts against the load
 *   limit while it stays empty, until the next rebuild (which clears those
 *   marks), so put/del churn on a table that never holds more than n keys
 *   settles on a block and keeps its probes bounded.
 * - Sizes that cannot be represented (over 2^31 buckets, or a block larger
 *   than SIZE_MAX) fail with -1; nothing wraps.
 * - hash_fn and eq_fn must not touch the table they are called for.
 * - Not thread-safe: concurrent readers are fine, a writer needs exclusion.
 *
 * ---------------------------------------------------------------------------
 * Allocator hook (the shape of Lua's lua_Alloc)
 *
 *     fn(ud, NULL, 0, n)         allocate n bytes, NULL on failure
 *     fn(ud, p, osize, 0)        free p; osize is exactly what p was given
 *     fn(ud, p, osize, nsize)    resize: realloc's contract (NULL on failure,
 *                                p untouched), asked for only where the
 *                                allocator declares it resizes
 *
 * Blocks must be aligned for max_align_t.  A table grows by allocating the
 * new block, moving its keys and freeing the old one; a table of more than
 * one group whose block is at least KHL_RESIZE_BYTES, on an allocator that
 * resizes, grows through fn's resize instead and spreads its keys in place,
 * so realloc (mremap, a pool's free neighbour) keeps the pages it had.  An
 * allocator declares it: khl_allocator_t's resizes non-zero (the libc
 * allocator does), or, for KHL_INIT_ALLOC, #define KHL_ALLOC_RESIZES_<allocf>
 * (empty, or 1) before the KHL_INIT_ALLOC that names it.
 *
 * ---------------------------------------------------------------------------
 * Hashing
 *
 * hash_fn(key) returns a uint64_t; the table uses its TOP bits: the top 8
 * are a tag compared 16 buckets at a time (the top 7 in a table of at most
 * 16 buckets), the next ones choose the home group.  A hash whose top bits
 * are not well mixed (an identity, a 32-bit hash, khash's X31 string hash)
 * is safe: the table multiplies every hash by 2^64/phi (one multiply), and
 * a table of more than one group then remixes the product (an xor-shift
 * and a second multiply, khl_remix: a product alone leaves keys of some
 * strides, such as pointers to objects of one size, in a fraction of the
 * groups), unless hash_fn is declared mixed, as boost's hash_is_avalanching
 * declares a hash, by
 *     #define KHL_HASH_MIXED_<hash_fn>        (empty, or 1)
 * before the KHL_INIT, KHL_INIT_ALLOC or KHL_DEFINE that names it.
 * khl_hash_u32/u64/str are declared so.  Declare a hash only if its top
 * bits depend on every bit of the key (XXH3, wyhash, khl_hash_bytes of the
 * key): else, say, an identity's sequential keys all share one tag and
 * group, every operation walks the table, and khl_check reports it.  So
 * hash_fn is a name (of a function or a macro), not an expression.  A hash
 * that is itself one multiply (Fibonacci hashing, as khl_hash_u32/u64 are)
 * is declared mixed and also
 *     #define KHL_HASH_PRODUCT_<hash_fn>      (empty, or 1)
 * so that larger tables remix it as they remix their own product.
 *
 * A table of at most 4 buckets, or of 8 where its first block holds 8 or
 * more (a key and its value of about 8 bytes or fewer) and hash_fn is not
 * declared indirect (below), calls only eq_fn, a key at a time: its puts
 * and lookups never hash, and a lookup of an absent key compares every key
 * it holds.  Its keys are hashed once, when it grows past that.
 *
 * A hash that reads memory through the key (a string's characters) is
 * best declared indirect, by
 *     #define KHL_HASH_INDIRECT_<hash_fn>     (empty, or 1)
 * before the KHL_INIT* that names it; khl_hash_str is declared so.  A
 * growth then hashes each group's keys a few ahead of placing them, so that
 * their reads of scattered memory overlap (2M string keys filled from
 * empty: a fifth to a quarter less time an insert), and a table of 8
 * buckets matches the key's hash rather than comparing up to 8 keys; for a
 * hash of the key's own bits that would cost instructions and gain nothing.
 *
 * khl_hash_u32/u64/str/bytes are seeded from one
 * process-wide random seed (khl_seed fixes it), so keys crafted to collide
 * in one process are ordinary keys in another.  The seed is no
 * cryptographic guarantee: code that leaks hash values or bucket order to
 * an attacker lets them probe it.
 *
 * Design notes and invariants: khl_table_impl.h.
 */
#ifndef KHASHLITE_H
#define KHASHLITE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KHL_VERSION "0.2.0"

/* Maximum fraction of a table's buckets that may be used (live keys, and
 * deletions not yet given back) before a put rebuilds it, for tables of more than one
 * group of 16 (one-group tables may fill).  A constant from 0.25 to 0.9375
 * in any spelling (0.5, .5, 5e-1, 0.5f, (0.5)), defined before the first
 * KHL_INIT of a type; anything else is a compile-time error.  0.875 halves
 * the memory of a table just below a power of two; lower it where absent-key
 * lookups dominate. */
#ifndef KHL_MAX_LOAD
#define KHL_MAX_LOAD 0.875
#endif

/* ------------------------------------------------------------------------ */
/* Allocator                                                                 */

typedef uint32_t khl_iter_t;    /* a bucket index */
typedef void *(*khl_allocf)(void *ud, void *ptr, size_t osize, size_t nsize);
/* resizes: non-zero when fn implements resize (see the hook above); {fn, ud}
 * leaves it 0, and tables only allocate and free. */
typedef struct khl_allocator { khl_allocf fn; void *ud; int resizes; } khl_allocator_t;

extern const khl_allocator_t khl_libc_allocator;   /* malloc / realloc / free */

/* ------------------------------------------------------------------------ */
/* Hashes                                                                    */

/* Fixes the process-wide seed of every khl_hash_* (random per process
 * otherwise).  Call it before any table is filled (a table filled under
 * another seed no longer finds its keys) and while no other thread hashes. */
void     khl_seed(uint64_t seed);
uint64_t khl_hash_str(const char *s);                  /* XXH3-64 */
uint64_t khl_hash_bytes(const void *p, size_t n);      /* XXH3-64 */
static inline uint64_t khl_hash_u64(uint64_t x);       /* one multiply: see below */
static inline uint64_t khl_hash_u32(uint32_t x);

/* Their top bits are mixed: the table takes them as they are (see Hashing);
 * the integer ones are one multiply, which a larger table remixes. */
#define KHL_HASH_MIXED_khl_hash_u32
#define KHL_HASH_MIXED_khl_hash_u64
#define KHL_HASH_MIXED_khl_hash_str
#define KHL_HASH_PRODUCT_khl_hash_u32
#define KHL_HASH_PRODUCT_khl_hash_u64
/* It reads the string: a growth hashes keys ahead of placing them (see Hashing). */
#define KHL_HASH_INDIRECT_khl_hash_str

#define khl_eq_int(a, b) ((a) == (b))
#define khl_eq_str(a, b) (strcmp((a), (b)) == 0)

/* ------------------------------------------------------------------------ */
/* Declaring a table type                                                    */

/* KHL_INIT(name, key_t, val_t, is_map, hash_fn, eq_fn): a table type whose
 * functions are static inline in this file.  is_map is the literal 0 (a
 * set: val_t, any complete type, is unused - the ready-made sets give char
 * - and khl_val is a compile-time error) or 1.  A key with its value must
 * take less than 1 GiB (128 MiB where size_t has 32 bits), aligned to at
 * most 4096 bytes (compile-time errors).  hash_fn(key)
 * returns uint64_t (see Hashing: multiplied unless declared mixed), eq_fn(a,
 * b) non-zero when equal; either may be a macro, hash_fn is a name.  No
 * semicolon after it, as in khash.  name is any identifier: the names it
 * generates, khl_<op>_<name>, are none of the library's own for any name
 * (tests/test_names.c checks every prefix against the sources). */
#define KHL_INIT(name, khkey_t, khval_t, is_map, hash_fn, eq_fn)                    \
    KHL_I_INIT_STORAGE(name, khkey_t, khval_t, is_map, hash_fn, eq_fn, khl_single)

/* KHL_INIT_ALLOC(name, key_t, val_t, is_map, hash_fn, eq_fn, allocf): as
 * KHL_INIT, with the allocator fixed at compile time, as khash's kmalloc and
 * kfree are.  allocf is a function, or a function-like macro, of
 * khl_allocf's shape and contract (see Allocator hook) that the table calls
 * by name, so an inline allocator inlines into the table's code (khl_pool.h
 * has one for the pool).
 * The table only allocates (ptr NULL) and frees (nsize 0), and resizes
 * too where allocf is declared to (KHL_ALLOC_RESIZES_<allocf>, see the
 * Allocator hook).  The handle is
 * { khl_block_t *b; void *ud; }: one word for the block and one for the ud
 * passed to allocf, which khl_init(name, h, ud) sets.
 *     static void *arena_allocf(void *ud, void *p, size_t osize, size_t nsize);
 *     KHL_INIT_ALLOC(ids, uint64_t, int, 1, khl_hash_u64, khl_eq_int, arena_allocf)
 *     khl_t(ids) h;  khl_init(ids, &h, my_arena); */
#define KHL_INIT_ALLOC(name, khkey_t, khval_t, is_map, hash_fn, eq_fn, allocf)      \
    KHL_I_INIT_ALLOC(name, khkey_t, khval_t, is_map, hash_fn, eq_fn, allocf)

/* For a static library: KHL_DECLARE in a header, KHL_DEFINE in one .c
 * (after the KHL_DECLARE).  The functions have the linkage of the code
 * around them: C++ that calls a table defined in C puts its KHL_DECLARE
 * inside extern "C" { }, as for any C header's declarations. */
#define KHL_DECLARE(name, khkey_t, khval_t, is_map)                                 \
    KHL_I_TYPE(name, khkey_t, khval_t, is_map, khl_single, const khl_allocator_t *, a) \
    KHL_I_PROTOTYPES(name)
#define KHL_DEFINE(name, khkey_t, khval_t, is_map, hash_fn, eq_fn)                  \
    KHL_I_IMPL(, , name, hash_fn, eq_fn, const khl_allocator_t *, a, KHL_I_HOOK_FN, KHL_I_HOOK_UD, \
               KHL_I_HOOK_RESIZES)

/* Ready-made types: uint32_t, uint64_t and C-string keys (a string key is
 * the pointer: the table neither copies nor frees the characters). */
#define KHL_MAP_INIT_INT(name, khval_t)                                             \
    KHL_INIT(name, uint32_t, khval_t, 1, khl_hash_u32, khl_eq_int)
#define KHL_MAP_INIT_INT64(name, khval_t)                                           \
    KHL_INIT(name, uint64_t, khval_t, 1, khl_hash_u64, khl_eq_int)
#define KHL_MAP_INIT_STR(name, khval_t)                                             \
    KHL_INIT(name, const char *, khval_t, 1, khl_hash_str, khl_eq_str)
#define KHL_SET_INIT_INT(name)                                                      \
    KHL_INIT(name, uint32_t, char, 0, khl_hash_u32, khl_eq_int)
#define KHL_SET_INIT_INT64(name)                                                    \
    KHL_INIT(name, uint64_t, char, 0, khl_hash_u64, khl_eq_int)
#define KHL_SET_INIT_STR(name)                                                      \
    KHL_INIT(name, const char *, char, 0, khl_hash_str, khl_eq_str)

/* The handle: { khl_block_t *b; const khl_allocator_t *a; }.  b is the block
 * (NULL while empty), a the allocator (NULL: libc).  A zero-initialised
 * handle is an empty libc table.  A table kept as one pointer (an
 * interpreter object's slot) with its allocator passed per call wraps them
 * in a handle for each call and stores b back after any call that can
 * allocate:
 *     khl_t(iv) h = { obj->iv, &alloc };  khl_put(iv, &h, sym, &ret);  obj->iv = h.b; */
#define khl_t(name) khl_t_##name

/* ------------------------------------------------------------------------ */
/* Lifetime                                                                  */

/* Empty table on allocator a (NULL: libc), which must outlive it; for a
 * KHL_INIT_ALLOC type, a is the ud its allocf gets.  Never allocates. */
#define khl_init(name, h, a)        khl_init_##name(h, a)
/* Frees the block; h is again an empty table on the same allocator. */
#define khl_destroy(name, h)        khl_destroy_##name(h)
/* Removes every key and keeps the block. */
#define khl_clear(name, h)          khl_clear_##name(h)
/* int: room for n keys; see the contract.  0, or -1 (out of memory, or n
 * beyond 2^31 buckets) with the table unchanged.  Never shrinks. */
#define khl_reserve(name, h, n)     khl_reserve_##name(h, n)
/* int: the smallest block that holds the keys; an empty table frees its
 * block.  0, or -1 with the table unchanged. */
#define khl_shrink(name, h)         khl_shrink_##name(h)
/* int: copies src into dst, which must be empty (-1 otherwise), on dst's
 * allocator: one allocation and two memcpy.  0, or -1 with dst unchanged. */
#define khl_copy(name, dst, src)    khl_copy_##name(dst, src)

/* ------------------------------------------------------------------------ */
/* Keys                                                                      */

/* khl_iter_t: inserts key, or finds it.  *ret (ret may be NULL): 1 inserted,
 * 0 present (nothing changed), -1 out of memory (returns khl_end, table
 * unchanged).  The value of an inserted key is uninitialised. */
#define khl_put(name, h, key, ret)  khl_put_##name(h, key, ret)
/* khl_iter_t: the bucket holding key, or khl_end(name, h). */
#define khl_get(name, h, key)       khl_get_##name(h, key)
/* val_t *: the value of key, or NULL when key is absent (maps only: on a
 * set it does not compile).  One lookup and no bucket index: an
 * interpreter's variable read.  The pointer lives as key's bucket index
 * does (see the contract): until key is deleted or a call can allocate. */
#define khl_getp(name, h, key)      ((void)KHL_I_REQUIRE_MAP(name), khl_getp_##name(h, key))
/* Deletes the key in bucket k; khl_end or a free bucket is a no-op. */
#define khl_del(name, h, k)         khl_delat_##name(h, k)
/* int: deletes key: 1 if it was there, 0 if not.  One walk, no index. */
#define khl_del_key(name, h, key)   khl_delkey_##name(h, key)

/* The key and value in occupied bucket k, as lvalues.  k is evaluated before
 * the block is looked up, so khl_val(name, h, khl_put(name, h, key, &ret)) = v
 * is safe once ret is known not to be -1.  khl_val on a set does not compile. */
#define khl_key(name, h, k)         (*khl_keyat_##name(h, k))
#define khl_val(name, h, k)         (*((void)KHL_I_REQUIRE_MAP(name), khl_valat_##name(h, k)))

#define khl_size(name, h)           khl_size_##name(h)        /* live keys */
#define khl_n_buckets(name, h)      khl_nbuckets_##name(h)
#define khl_block_size(name, h)     khl_blocksize_##name(h)   /* bytes allocated */

/* ------------------------------------------------------------------------ */
/* Iteration: buckets khl_begin .. khl_end; khl_next skips free buckets 16   */
/* at a time.  Any call that can allocate ends a walk.                       */

#define khl_begin(name, h)          ((khl_iter_t)0)
#define khl_end(name, h)            khl_nbuckets_##name(h)
/* Is bucket k (in [khl_begin, khl_end)) occupied? */
#define khl_exist(name, h, k)       khl_exist_##name(h, k)
/* The first occupied bucket at or after k, or khl_end. */
#define khl_next(name, h, k)        khl_next_##name(h, k)

/* A cursor: a walk over the keys, one step per call, that keeps the mask of
 * the occupied buckets of the group it is in.  A step costs O(1) amortised
 * (one 16-byte group load per 16 buckets), where khl_next reloads the group
 * of bucket k on every call:
 *     khl_cursor_t c = khl_cursor(name, h);
 *     while (khl_cursor_next(name, h, &c))
 *         use(khl_key(name, h, c.k), khl_val(name, h, c.k));
 * c.k is the current key's bucket, valid after khl_cursor_next returned 1.
 * Between steps the walk may delete the current key or any other
 * (khl_del, khl_del_key move nothing): every key present throughout is
 * visited exactly once, a deleted one not reached yet is not visited.  Any
 * call that can allocate or free the block (khl_put, khl_reserve,
 * khl_shrink, khl_copy into the table, khl_destroy) invalidates the cursor,
 * as it does bucket indices.  A cursor is a plain struct: copy it to resume a walk there. */
typedef struct khl_cursor {
    khl_iter_t k;                   /* the current key's bucket */
    uint32_t base, mask, nb;        /* internal: the group, its unvisited keys */
    const unsigned char *ctrl;      /* internal */
} khl_cursor_t;
/* khl_cursor_t: a cursor before the first key of h (of no key when empty). */
#define khl_cursor(name, h)         khl_cursorof_##name(h)
/* int: moves c (a khl_cursor_t *) to the next key, 1; 0 once the keys are
 * exhausted (and on every later call). */
#define khl_cursor_next(name, h, c) khl_cursornext_##name(h, c)

/* khl_foreach(name, h, kvar, vvar, code): code (which may contain commas and
 * may delete the current key) runs once per key with kvar and vvar set.  A
 * cursor's walk (above), with its cost and rules. */
#define khl_foreach(name, h, kvar, vvar, ...)                                       \
    KHL_I_FOREACH(name, h, (kvar) = KHL_I_FOREACH_KEY(name);                        \
                  (vvar) = KHL_I_FOREACH_VAL(name); __VA_ARGS__;)
#define khl_foreach_key(name, h, kvar, ...)                                         \
    KHL_I_FOREACH(name, h, (kvar) = KHL_I_FOREACH_KEY(name); __VA_ARGS__;)
#define khl_foreach_value(name, h, vvar, ...)                                       \
    KHL_I_FOREACH(name, h, (vvar) = KHL_I_FOREACH_VAL(name); __VA_ARGS__;)

/* Checks the table's invariants (khl_table_impl.h): 0, or -1 after printing
 * the first broken one on stderr.  O(n); for tests and debugging.  A library
 * built with -DKHL_DEBUG runs it after every rebuild, copy and clear and
 * aborts on failure; code including this header with -DKHL_DEBUG does the
 * same after a small table's growth, which is inline. */
#define khl_check(name, h)          khl_check_##name(h)

#ifdef __cplusplus
}
#endif

/* ------------------------------------------------------------------------ */
/* Implementation                                                            */

#include "khl_table_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The seed of every khl_hash_*.  A plain read: an atomic one would stop the
 * compiler from keeping it in a register across a loop of lookups (it cost
 * 25 instructions per operation in a tiny table's life).  So khl_seed must
 * not run while another thread hashes, which its contract already asks. */
extern uint64_t khl_seed_value;

static inline uint64_t khl_seed_get(void)
{
    return khl_seed_value;
}

/* Fibonacci hashing of the key xor the seed: one multiply.  The product's
 * top bits, which the table uses, depend on every key bit below them and
 * spread sequential keys over distinct groups; its low bits are weak, and
 * no table looks at them.  Declared a product (KHL_HASH_PRODUCT_): a table
 * of more than one group remixes it, so that keys of one stride
 * spread too (khl_remix).  (A 64x64->128-bit multiply with the halves
 * folded leaves a small key's top bits one product's, and gcc 12 spills the
 * product to the stack: 2 to 5 ns more per lookup.) */
static inline uint64_t khl_hash_u64(uint64_t x)
{
    return (x ^ khl_seed_get()) * 0x9e3779b97f4a7c15ULL;
}

static inline uint64_t khl_hash_u32(uint32_t x)
{
    return khl_hash_u64(x);
}

/* The walk the foreach macros share: a cursor; body runs for each occupied
 * bucket khl_it_, whose key and value KHL_I_FOREACH_KEY and _VAL read.  The
 * block cannot move or change size during the walk (the cursor's rules), so
 * where its slots start is read once, not once per key: the body may call
 * functions, after which the compiler would load it again. */
#define KHL_I_FOREACH(name, h, ...)                                                 \
    {                                                                               \
        khl_cursor_t khl_c_ = khl_cursor(name, h);                                  \
        char *khl_s_ = khl_c_.nb ? khl_slots_##name((h)->b) : NULL;                 \
        while (khl_cursor_next(name, h, &khl_c_)) {                                 \
            khl_iter_t khl_it_ = khl_c_.k;                                          \
            __VA_ARGS__                                                             \
        }                                                                           \
    }
#define KHL_I_FOREACH_KEY(name) (*khl_keyp_##name(khl_s_, khl_c_.nb, khl_it_))
#define KHL_I_FOREACH_VAL(name)                                                     \
    (*((void)KHL_I_REQUIRE_MAP(name), khl_valp_##name(khl_s_, khl_c_.nb, khl_it_)))

#ifdef __cplusplus
}
#endif

#endif /* KHASHLITE_H */
