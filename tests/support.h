/* support.h: what the Criterion suites share: the checking allocator
 * (support/check_alloc.h) reporting through Criterion, the project's PRNG
 * (support/prng.h), the build directory, and the probe walk the tests use to
 * measure the table from outside its code. */
#ifndef KHL_TEST_SUPPORT_H
#define KHL_TEST_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#include "khashlite/khashlite.h"
#include "khashlite/khl_pool.h"
#include "support/check_alloc.h"
#include "support/prng.h"

/* Where a struct puts a uint64_t member: 8 bytes in on x86-64 and s390x, 4
 * on i386, whose pair of a 4-byte key and an 8-byte value has no padding
 * and a 64-bit value no 8-byte alignment.  For the layouts tests work out
 * by hand. */
typedef struct test_u64_member {
    char c;
    uint64_t v;
} test_u64_member_t;
#define TEST_U64_MEMBER_ALIGN offsetof(test_u64_member_t, v)

/* check_alloc with every check (exact sizes, poison, resizes that move);
 * a broken invariant fails the test. */
typedef check_alloc_t test_alloc_t;
void test_alloc_init(test_alloc_t *t);
/* Declares table h of type `name` on a fresh test allocator t, both empty. */
#define TEST_TABLE(name, h, t)                                                        \
    test_alloc_t t;                                                                   \
    khl_t(name) h;                                                                    \
    test_alloc_init(&t);                                                              \
    khl_init(name, &h, &t.a)

/* check_alloc on malloc with the given CHECK_* flags, failing the test on a
 * broken invariant. */
void test_check_init(check_alloc_t *c, unsigned flags);
/* Asserts nothing is live, then releases the registry. */
void test_alloc_fini(test_alloc_t *t);

/* The path of `rel` inside the build directory the suite runs from: the
 * suite is BUILD/tests/khl-tests, so "examples" is BUILD/examples.  Helper
 * programs and the library are found this way whatever BUILD is. */
void test_build_path(char *buf, size_t size, const char *rel);

/* Reads the file at path into buf (size bytes, NUL-terminated), asserting
 * that it opens and fits. */
void test_slurp(const char *path, char *buf, size_t size);

/* Marks a block of n bytes as id's: a byte a page, and its last byte.
 * test_marked: the block still holds id's marks; test_prefix_marked: its
 * first `upto` bytes do (a block that moved and shrank, or grew). */
void test_mark(void *b, size_t n, unsigned id);
int test_marked(const void *b, size_t n, unsigned id);
int test_prefix_marked(const void *b, size_t upto, unsigned id);

/* Runs fn(arg) with stderr sent to `said` (size bytes, NUL-terminated,
 * cut short if longer): fn's result.  What a validator prints goes there. */
int test_capture_stderr(int (*fn)(const void *), const void *arg, char *said, size_t size);

/* --- the probe sequence, walked independently of the table's code ---------
 * Group g of a table holds buckets g*W .. g*W+W-1 (W = KHL_GROUP_WIDTH); a
 * hash's home group is the bits just below its tag; the walk visits home,
 * home+1, home+3, home+6, ... (triangular steps) modulo the groups. */

/* The hash a table of h's size takes key by (a larger table remixes a
 * product: khl_remix), to give the probe helpers below. */
#define TEST_HASH(name, h, key) (khl_typedesc_##name.hash(&(khl_keyt_##name){(key)}, (h)->b->n_buckets))

/* The home group of `hash` in block b. */
uint32_t test_home_group(const khl_block_t *b, uint64_t hash);
/* Groups a lookup of `hash` visits, its home included: to reach bucket
 * `target`'s group, or, with target UINT32_MAX (a miss), to the first group
 * without the overflow bit of the hash's class.  groups + 1 when it never
 * gets there. */
uint32_t test_probe_groups(const khl_block_t *b, uint64_t hash, uint32_t target);

/* --- pools ---------------------------------------------------------------- */

/* p's counters now. */
khl_pool_stats_t test_pool_stats(const khl_pool_t *p);
/* Asserts p's counters are those of `was`, every one but system_calls (a
 * failed request to the system is still one): a call that reports failure
 * leaves the pool exactly as it was.  `what` names the call. */
void test_assert_pool_unchanged(const khl_pool_stats_t *was, const khl_pool_t *p, const char *what);

#endif
