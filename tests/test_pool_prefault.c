/* test_pool_prefault.c: a chunk of small blocks has every page resident
 * once the call that took it returns (so no later allocation of it waits
 * for a page fault); with lazy_pages, or for classes of few blocks per
 * chunk, pages come in only as blocks are written.  Residency is read with
 * mincore(2). */
#define _DEFAULT_SOURCE 1
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "khashlite/khl_pool.h"

#define CHUNK KHL_POOL_DEFAULT_CHUNK_BYTES

/* Resident pages of the default-sized chunk holding b. */
static size_t resident_pages(const void *b)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = CHUNK / page, r = 0;
    unsigned char vec[CHUNK / 4096];
    cr_assert_leq(n, sizeof vec);
    void *chunk = (void *)((uintptr_t)b & ~(uintptr_t)(CHUNK - 1));
    cr_assert_eq(mincore(chunk, CHUNK, vec), 0);
    for (size_t i = 0; i < n; i++)
        r += vec[i] & 1;
    return r;
}

/* Allocates one block of n bytes from a new pool and checks its chunk's
 * residency: every page (whole = 1) or fewer than half. */
static void first_block_resident(int lazy, size_t n, int whole)
{
    size_t all = CHUNK / (size_t)sysconf(_SC_PAGESIZE);
    khl_pool_options_t o;
    memset(&o, 0, sizeof o);
    o.lazy_pages = lazy;
    khl_pool_t *p = khl_pool_new(&o);
    cr_assert_not_null(p);
    void *b = khl_pool_alloc(p, n);
    cr_assert_not_null(b);
    size_t r = resident_pages(b);
    if (whole)
        cr_assert_eq(r, all, "%zu B, lazy %d: %zu of %zu pages resident", n, lazy, r, all);
    else
        cr_assert_lt(r, all / 2, "%zu B, lazy %d: %zu of %zu pages resident", n, lazy, r, all);
    khl_pool_free(p, b, n);
    khl_pool_destroy(p);
}

Test(pool_prefault, a_small_class_chunk_is_resident_when_taken)
{
    first_block_resident(0, 100, 1);
}

Test(pool_prefault, lazy_pages_leave_the_pages_to_the_writes)
{
    first_block_resident(1, 100, 0);
}

/* 4 KiB blocks: 31 per chunk, so the chunk is taken every 31 calls; its
 * pages fault one by one instead. */
Test(pool_prefault, a_class_of_few_blocks_per_chunk_is_not_prefaulted)
{
    first_block_resident(0, 4096, 0);
}
