/* check_alloc.h: the one allocator hook the tests, the fuzzers and the
 * benchmarks run tables and pools on.  It counts (attempts, allocations,
 * frees, live and peak bytes and blocks, bytes asked), can check every free
 * against the size it was allocated with, poison memory so nothing relies on
 * zeroed or freed contents, and fail on demand (at the N-th attempt and
 * optionally every one after it, above a byte limit, or when a callback
 * says so).  Not part of the library: built into the programs that use it.
 *
 * Cost: counting alone is a few additions per call (the benchmarks' untimed
 * passes); CHECK_SIZES keeps a registry of live blocks searched linearly, for
 * tests and fuzzing only. */
#ifndef KHL_SUPPORT_CHECK_ALLOC_H
#define KHL_SUPPORT_CHECK_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "khashlite/khashlite.h"

enum {
    CHECK_SIZES = 1,      /* every free/resize must name a live block and its exact size */
    CHECK_POISON = 2,     /* fill new memory with 0xA5, freed with 0xDD; a resize always moves */
    CHECK_NO_RESIZE = 4,  /* a resize (ptr and nsize both non-zero) is an error */
};

typedef struct check_block { void *p; size_t n; } check_block_t;

typedef struct check_alloc {
    khl_allocator_t a;            /* hand &c->a to khl_init or khl_pool_new */
    const khl_allocator_t *inner; /* where memory comes from */
    unsigned flags;               /* CHECK_* */

    /* Counts. */
    uint64_t attempts;            /* allocation requests seen, failed ones included */
    uint64_t allocs, frees;       /* successful allocations and frees (a resize is one of each) */
    size_t live_bytes, peak_bytes;
    size_t live_blocks, max_live_blocks;
    double asked;                 /* bytes of every successful allocation, summed */

    /* Failure on demand. */
    uint64_t fail_at;             /* fail the fail_at-th attempt (1-based); 0 never */
    int fail_after;               /* with fail_at: also fail every attempt after it */
    size_t limit_bytes;           /* fail what would take live_bytes above this; 0 no limit */
    int (*fail_if)(void *ctx, size_t nsize);   /* non-zero: fail this attempt */
    void *fail_ctx;

    /* A broken invariant (wrong size, unknown pointer, leak): the message goes
     * here; NULL prints it and aborts.  Need not return. */
    void (*report)(const char *msg);

    check_block_t *live;          /* CHECK_SIZES: the live blocks */
    size_t cap_live;
} check_alloc_t;

/* Memory from `inner` (NULL: khl_libc_allocator), with the given CHECK_*
 * flags. */
void check_alloc_init(check_alloc_t *c, const khl_allocator_t *inner, unsigned flags);
/* Reports a leak if anything is live, then releases the registry. */
void check_alloc_fini(check_alloc_t *c);

/* The allocator hook itself (c->a.fn), for callers that wrap it. */
void *check_allocf(void *ud, void *ptr, size_t osize, size_t nsize);

/* malloc/realloc/free shaped calls through the same counts and failures, for
 * callers that free without a size: a header before each block keeps its
 * size (the header is not counted). */
void *check_alloc_unsized(check_alloc_t *c, size_t n);
void *check_realloc_unsized(check_alloc_t *c, void *p, size_t n);
void check_free_unsized(check_alloc_t *c, void *p);

#endif
