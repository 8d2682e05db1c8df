/* support.h: test helpers shared by the suites: a counting allocator that
 * checks every free's osize, fills blocks with garbage, and fails on demand;
 * and a small deterministic PRNG. */
#ifndef KHL_TEST_SUPPORT_H
#define KHL_TEST_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#include "khashlite/khashlite.h"

typedef struct test_block { void *p; size_t n; } test_block_t;

typedef struct test_alloc {
    khl_allocator_t a;          /* hand &t->a to khl_init */
    uint64_t attempts;          /* allocation requests seen, failed ones included */
    uint64_t allocs, frees;     /* successful allocations and frees */
    uint64_t fail_at;           /* fail the fail_at-th attempt (1-based); 0 never */
    int fail_after;             /* with fail_at: also fail every attempt after it */
    size_t live_bytes, max_live_blocks;
    test_block_t *live;         /* registry of live blocks, to check osize */
    size_t n_live, cap_live;
} test_alloc_t;

void test_alloc_init(test_alloc_t *t);
/* Asserts nothing is live, then releases the registry. */
void test_alloc_fini(test_alloc_t *t);

/* The path of `rel` inside the build directory the suite runs from: the
 * suite is BUILD/tests/khl-tests, so "examples" is BUILD/examples.  Helper
 * programs and the library are found this way whatever BUILD is. */
void test_build_path(char *buf, size_t size, const char *rel);

/* xorshift64*: reproducible sequences for randomised tests. */
static inline uint64_t test_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

#endif
