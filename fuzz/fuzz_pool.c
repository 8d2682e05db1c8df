/* fuzz_pool.c: libFuzzer target for khl_pool.  The input is a program of
 * alloc / calloc / free (sized and unsized) / realloc (sized and unsized) /
 * reserve / trim over up to 64 live blocks, on a pool whose backing
 * allocator fails when the input's trailing bytes say so.  Every block is
 * filled with a pattern derived from its slot and checked before it is freed
 * or resized, so any overlap or corruption aborts, and the pool's
 * invariants are checked (khl_pool_check) after every step.  First byte: options
 * (checked mode, thread-safe mode, small max_small and chunk_bytes, a
 * thread_keep_bytes of 1, a large_max of 64 KiB so that most large blocks
 * are huge and go through the kept mappings, a limit_bytes of 4 MiB so
 * that arenas are cut to size and kept memory is given back under it, and
 * no backing allocator: mmap, whose chunks' pages a plain or checked pool
 * faults a step at a time ahead of its bump pointer where that pays; no
 * call fails then; and huge_pages, whose arenas and huge blocks then start
 * on huge pages).  Second byte: lazy_pages = KHL_POOL_PAGES_AHEAD, so that
 * a pool without a backing allocator faults ahead on any machine. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "khashlite/khl_pool.h"
#include "input.h"
#include "support/check_alloc.h"

#define SLOTS 64

typedef struct block { unsigned char *p; size_t n; } block_t;

static unsigned char pattern(size_t slot, size_t i)
{
    return (unsigned char)(slot * 31 + i * 7 + 1);
}

static void fill(block_t *b, size_t slot)
{
    for (size_t i = 0; i < b->n; ++i)
        b->p[i] = pattern(slot, i);
}

static void verify(const block_t *b, size_t slot, size_t upto)
{
    for (size_t i = 0; i < upto && i < b->n; ++i)
        CHECK(b->p[i] == pattern(slot, i));
}

/* Sizes spread over tiny, class-boundary and large requests: large ones
 * across one window, several, and (rarely) an arena's worth. */
static size_t size_of(int a, int b)
{
    size_t s = (size_t)(a < 0 ? 1 : a) | ((size_t)(b < 0 ? 0 : b) << 8);
    switch (s % 8) {
    case 0: case 4: return s % 64 + 1;
    case 1: case 5: return s % 1024 + 1;
    case 2: return s % 16384 + 1;
    case 6: return s % 400000 + 16385;
    case 7: return s % 64 == 7 ? s * 29 % 2000000 + 16385 : s % 200000 + 1;
    default: return s % 200000 + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    input_t in = {data + 2, 0, size - 2, 32};
    check_alloc_t bk;
    check_alloc_init(&bk, NULL, CHECK_SIZES | CHECK_POISON | CHECK_NO_RESIZE);
    bk.fail_if = input_fails;
    bk.fail_ctx = &in;
    khl_pool_options_t opt;
    memset(&opt, 0, sizeof opt);
    opt.backing = &bk.a;
    opt.checked = data[0] & 1;
    opt.thread_safe = (data[0] >> 1) & 1;
    if (data[0] & 4) {
        opt.max_small = 512;
        opt.chunk_bytes = 16384;
    }
    /* Keep nothing: every full batch goes through the published stack. */
    opt.thread_keep_bytes = (data[0] & 8) ? 1 : 0;
    if (data[0] & 16)
        opt.large_max = 65536;
    if (data[0] & 32)
        opt.limit_bytes = (size_t)4 << 20;
    if (data[0] & 64)
        opt.backing = NULL;
    opt.huge_pages = data[0] >> 7;
    /* Without a backing allocator, a pool left to choose faults pages
     * ahead or not by what they cost on the machine: this one always does. */
    if (data[1] & 1)
        opt.lazy_pages = KHL_POOL_PAGES_AHEAD;
    khl_pool_t *p = khl_pool_new(&opt);
    if (!p) {
        check_alloc_fini(&bk);
        return 0;
    }
    block_t blocks[SLOTS];
    memset(blocks, 0, sizeof blocks);
    int op;
    while ((op = next_op(&in)) >= 0) {
        size_t slot = (size_t)(op >> 3) % SLOTS;
        block_t *b = &blocks[slot];
        switch (op & 7) {
        case 0: case 1:
            if (!b->p) {
                size_t n = size_of(next_op(&in), next_op(&in));
                b->p = (op & 7) ? khl_pool_calloc(p, 1, n) : khl_pool_alloc(p, n);
                if (b->p) {
                    b->n = n;
                    CHECK(khl_pool_owns(p, b->p));
                    CHECK(khl_pool_block_size(p, b->p) >= n);
                    if (op & 7)
                        for (size_t i = 0; i < n; ++i)
                            CHECK(b->p[i] == 0);
                    fill(b, slot);
                }
            }
            break;
        case 2: case 3:
            if (b->p) {
                verify(b, slot, b->n);
                if (op & 1)
                    khl_pool_free_unsized(p, b->p);
                else
                    khl_pool_free(p, b->p, b->n);
                b->p = NULL;
            }
            break;
        case 4: case 5: {
            size_t n = size_of(next_op(&in), next_op(&in));
            khl_pool_stats_t before, after;
            khl_pool_stats(p, &before);
            unsigned char *q = (op & 1) ? khl_pool_realloc_unsized(p, b->p, n)
                                        : khl_pool_realloc(p, b->p, b->p ? b->n : 0, n);
            if (q) {
                size_t keep = b->p ? (b->n < n ? b->n : n) : 0;
                b->p = q;
                verify(b, slot, keep);
                b->n = n;
                fill(b, slot);
            } else if (b->p) {
                verify(b, slot, b->n);         /* failure leaves the block untouched */
                khl_pool_stats(p, &after);     /* and the pool as it was */
                CHECK(after.system_bytes == before.system_bytes && after.in_use_bytes == before.in_use_bytes &&
                      after.large_blocks == before.large_blocks && after.meta_bytes == before.meta_bytes &&
                      after.retained_bytes == before.retained_bytes);
            }
            break;
        }
        case 6: {
            khl_pool_stats_t before, after;
            khl_pool_stats(p, &before);
            if (khl_pool_reserve(p, size_of(next_op(&in), 0), (size_t)(op >> 3)) < 0) {
                khl_pool_stats(p, &after);
                CHECK(after.system_bytes == before.system_bytes);
            }
            break;
        }
        default:
            khl_pool_trim(p);
        }
        CHECK(khl_pool_check(p) == 0);
    }
    khl_pool_stats_t s;
    khl_pool_stats(p, &s);
    size_t live = 0;
    for (size_t i = 0; i < SLOTS; ++i)
        if (blocks[i].p) {
            verify(&blocks[i], i, blocks[i].n);
            live++;
        }
    CHECK(s.allocs - s.frees == live);
    for (size_t i = 0; i < SLOTS; ++i)
        if (blocks[i].p)
            khl_pool_free(p, blocks[i].p, blocks[i].n);
    khl_pool_stats(p, &s);
    CHECK(s.in_use_bytes == 0);
    khl_pool_destroy(p);
    check_alloc_fini(&bk);
    return 0;
}
