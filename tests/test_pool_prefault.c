/* test_pool_prefault.c: when a chunk's pages come in.  A pool that faults
 * ahead (lazy_pages = KHL_POOL_PAGES_AHEAD) faults them a page (or a block
 * larger than a page) at a time ahead of its bump pointer: the call that
 * takes a chunk faults only the first step, no call faults more than the
 * page after its block, and every block is resident before its first
 * write, whatever its class (so no allocation waits for a trapped page
 * fault).  A thread-safe pool's threads step through their runs the same
 * way; with lazy_pages = 1 pages come in only as blocks are written; by
 * default the pool does one or the other, as the rule chooses from this
 * machine's costs, and says which; a reserve's allocations make no system
 * call.  Residency is read with mincore(2). */
#define _DEFAULT_SOURCE 1
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "khashlite/khashlite.h"
#include "khashlite/khl_pool_internal.h"

#define CHUNK KHL_POOL_DEFAULT_CHUNK_BYTES

static size_t page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

/* Resident pages of the default-sized chunk holding b. */
static size_t resident_pages(const void *b)
{
    size_t n = CHUNK / page_size(), r = 0;
    unsigned char vec[CHUNK / 4096];
    cr_assert_leq(n, sizeof vec);
    void *chunk = (void *)((uintptr_t)b & ~(uintptr_t)(CHUNK - 1));
    cr_assert_eq(mincore(chunk, CHUNK, vec), 0);
    for (size_t i = 0; i < n; i++)
        r += vec[i] & 1;
    return r;
}

/* Whether every page of b..b+n is resident. */
static int resident(const void *b, size_t n)
{
    size_t page = page_size();
    uintptr_t from = (uintptr_t)b & ~(uintptr_t)(page - 1);
    unsigned char vec[8];
    size_t pages = ((uintptr_t)b + n - from + page - 1) / page;
    cr_assert_leq(pages, sizeof vec);
    cr_assert_eq(mincore((void *)from, pages * page, vec), 0);
    for (size_t i = 0; i < pages; i++)
        if (!(vec[i] & 1))
            return 0;
    return 1;
}

/* lazy: 1 lazily, 0 ahead. */
static khl_pool_t *new_pool(int lazy, int thread_safe)
{
    khl_pool_options_t o;
    memset(&o, 0, sizeof o);
    o.lazy_pages = lazy ? 1 : KHL_POOL_PAGES_AHEAD;
    o.thread_safe = thread_safe;
    khl_pool_t *p = khl_pool_new(&o);
    cr_assert_not_null(p);
    return p;
}

/* Allocates one block of n bytes from a new pool and returns how many pages
 * of its chunk are resident. */
static size_t first_block_resident(int lazy, int thread_safe, size_t n)
{
    khl_pool_t *p = new_pool(lazy, thread_safe);
    void *b = khl_pool_alloc(p, n);
    cr_assert_not_null(b);
    size_t r = resident_pages(b);
    khl_pool_free(p, b, n);
    khl_pool_destroy(p);
    return r;
}

/* Before, the call that took a chunk of 100 B blocks faulted all 32 of its
 * pages (40-50 us in one call); now only the first step. */
Test(pool_prefault, taking_a_chunk_faults_only_its_first_step)
{
    size_t r = first_block_resident(0, 0, 100);
    cr_assert_geq(r, 1);
    cr_assert_leq(r, 2, "%zu pages resident", r);
}

/* Steps of 4 pages were the pool's slowest calls where a populated page
 * costs as much as a trapped fault: no call faults more than one page
 * beyond the block it hands out. */
static void steps_a_page_ahead(int thread_safe)
{
    khl_pool_t *p = new_pool(0, thread_safe);
    size_t page = page_size(), n = 100;
    void *first = khl_pool_alloc(p, n);
    cr_assert_not_null(first);
    uintptr_t chunk = (uintptr_t)first & ~(uintptr_t)(CHUNK - 1);
    for (void *b = first; (uintptr_t)b - chunk < CHUNK - 2 * page; b = khl_pool_alloc(p, n)) {
        cr_assert_not_null(b);
        if (((uintptr_t)b & ~(uintptr_t)(CHUNK - 1)) != chunk)
            break;   /* the next chunk: this one is done */
        size_t through = ((uintptr_t)b + n - chunk + page - 1) / page;
        cr_assert(resident(b, n), "block at %zu: not resident when handed out", (size_t)((uintptr_t)b - chunk));
        cr_assert_leq(resident_pages(b), through + 1, "block at %zu: %zu pages resident, %zu reached",
                      (size_t)((uintptr_t)b - chunk), resident_pages(b), through);
    }
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_destroy(p);
}

Test(pool_prefault, no_call_faults_more_than_a_page_ahead)
{
    steps_a_page_ahead(0);
}

/* Every block a plain pool hands out by bumping is resident before it is
 * written, in small classes and large ones (whose chunks used to fault
 * page by page).  A step is one system call for a page or 4 blocks,
 * whichever is more, up to 16 KiB (at least a block), besides the few a
 * chunk take makes. */
static void blocks_resident_before_written(size_t n)
{
    khl_pool_t *p = new_pool(0, 0);
    size_t count = 4 * (CHUNK / n), calls_before;
    void **v = malloc(count * sizeof *v);
    khl_pool_stats_t st;
    cr_assert_not_null(v);
    khl_pool_stats(p, &st);
    calls_before = (size_t)st.system_calls;
    for (size_t i = 0; i < count; i++) {
        v[i] = khl_pool_alloc(p, n);
        cr_assert_not_null(v[i]);
        cr_assert(resident(v[i], n), "%zu B, block %zu: not resident when handed out", n, i);
        memset(v[i], 1, n);
    }
    khl_pool_stats(p, &st);
    /* Blocks are their class's size (112 B for 100); a chunk take makes up
     * to 6 calls where the room beside the last chunk is taken (as under
     * ASan): a failed mmap at the hint and its munmap, then mmap, the two
     * slack munmaps and the first step. */
    size_t size = khl_pool_block_size(p, v[0]), step = 4 * size;
    step = step < page_size() ? page_size() : step > 16384 ? 16384 : step;
    step = step < size ? size : step;
    size_t chunks = count / (CHUNK / size) + 1, steps = (count * size + step - 1) / step + chunks;
    cr_assert_leq((size_t)st.system_calls - calls_before, steps + 6 * chunks + 4,
                  "%zu B: %zu system calls for %zu blocks", n, (size_t)st.system_calls - calls_before, count);
    cr_assert_eq(khl_pool_check(p), 0);
    for (size_t i = 0; i < count; i++)
        khl_pool_free(p, v[i], n);
    free(v);
    khl_pool_destroy(p);
}

Test(pool_prefault, small_blocks_are_resident_before_written)
{
    blocks_resident_before_written(100);
}

/* A page a step made every other 2 KiB block a system call (the median
 * call of mixed 16 B - 4 KiB sizes took one, 2.2 us); 4 blocks a step make
 * one in 4. */
Test(pool_prefault, blocks_of_half_a_page_are_resident_before_written)
{
    blocks_resident_before_written(2048);
}

Test(pool_prefault, blocks_of_a_page_are_resident_before_written)
{
    blocks_resident_before_written(4096);
}

Test(pool_prefault, blocks_larger_than_a_step_are_resident_before_written)
{
    blocks_resident_before_written(16384);
}

Test(pool_prefault, lazy_pages_leave_the_pages_to_the_writes)
{
    cr_assert_lt(first_block_resident(1, 0, 100), CHUNK / page_size() / 2);
}

/* A thread takes a chunk's whole never-used run but only its first step of
 * pages, as a plain pool does: the call that took a chunk of 100 B blocks
 * used to fault all 32 of its pages. */
Test(pool_prefault, a_thread_safe_pool_faults_only_a_chunks_first_step)
{
    size_t r = first_block_resident(0, 1, 100);
    cr_assert_geq(r, 1);
    cr_assert_leq(r, 2, "%zu pages resident", r);
    cr_assert_leq(first_block_resident(0, 1, 4096), 5);
}

/* A thread bumping through its run faults each step before it hands out
 * the step's blocks, never more than a page past the block. */
Test(pool_prefault, a_thread_steps_through_its_run_a_page_ahead)
{
    steps_a_page_ahead(1);
}

/* The reserve touched the pages, so bumping through them must not stop for
 * a fault step: its allocations make no system call. */
static void reserve_makes_no_system_call(int prime)
{
    khl_pool_t *p = new_pool(0, 0);
    enum { COUNT = 3000 };
    static void *v[COUNT];
    khl_pool_stats_t st;
    uint64_t calls;
    void *first = NULL;
    if (prime)   /* a current chunk with some never-used slots faulted, most not */
        cr_assert_not_null(first = khl_pool_alloc(p, 100));
    cr_assert_eq(khl_pool_reserve(p, 100, COUNT), 0);
    khl_pool_stats(p, &st);
    calls = st.system_calls;
    for (size_t i = 0; i < COUNT; i++)
        cr_assert_not_null(v[i] = khl_pool_alloc(p, 100));
    khl_pool_stats(p, &st);
    cr_assert_eq(st.system_calls, calls, "%llu system calls within the reserve",
                 (unsigned long long)(st.system_calls - calls));
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_destroy(p);
}

Test(pool_prefault, a_reserve_on_a_fresh_pool_makes_no_system_call)
{
    reserve_makes_no_system_call(0);
}

Test(pool_prefault, a_reserve_in_a_partly_faulted_chunk_makes_no_system_call)
{
    reserve_makes_no_system_call(1);
}

/* A chunk's frame is cut from address space mapped for several at once, and
 * its first step faulted in one call: most takes make that one call, and
 * the one that maps the next reservation one more where the room below the
 * last mapping is free (three where the slack of an aligned mapping has to
 * go; the kernel may have other mappings there now and then, so the best
 * of eight takes is asserted). */
Test(pool_prefault, a_chunk_take_is_one_step)
{
    khl_pool_t *p = new_pool(0, 0);
    khl_pool_stats_t st;
    uint64_t best = UINT64_MAX;
    size_t chunks;
    khl_pool_stats(p, &st);
    chunks = st.chunks;
    for (int takes = 0; takes < 8;) {
        uint64_t calls = st.system_calls;
        cr_assert_not_null(khl_pool_alloc(p, 100));
        khl_pool_stats(p, &st);
        if (st.chunks != chunks) {
            if (takes++ && st.system_calls - calls < best)   /* the first has no neighbour yet */
                best = st.system_calls - calls;
            chunks = st.chunks;
        }
    }
    cr_assert_eq(best, 1, "the cheapest chunk take made %llu system calls", (unsigned long long)best);
    khl_pool_destroy(p);
}

/* With the pages left to the writes a chunk take makes no system call but
 * where it maps the next reservation of chunks: 32 takes, at most three
 * calls for each of four reservations (a mapping each, 32 of them, before
 * chunks were cut from reservations).  Every block is written, and the
 * pool checks. */
Test(pool_prefault, chunk_takes_map_a_reservation_of_chunks_at_once)
{
    khl_pool_t *p = new_pool(1, 0);
    khl_pool_stats_t st;
    uint64_t calls;
    size_t chunks, takes = 0;
    khl_pool_stats(p, &st);
    chunks = st.chunks;
    calls = st.system_calls;
    while (takes < 32) {
        char *b = khl_pool_alloc(p, 1000);
        cr_assert_not_null(b);
        memset(b, 1, 1000);
        khl_pool_stats(p, &st);
        takes += st.chunks - chunks;
        chunks = st.chunks;
    }
    cr_assert_leq(st.system_calls - calls, 12, "%llu system calls for 32 chunk takes",
                  (unsigned long long)(st.system_calls - calls));
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_destroy(p);
}

/* The rule: ahead only where a populated page costs less than a trap. */
Test(pool_prefault, faulting_ahead_pays_only_below_a_traps_cost)
{
    cr_assert(khl_i_ahead_pays(10000, 1500), "a 10 us trap against a 1.5 us populated page");
    cr_assert_not(khl_i_ahead_pays(1400, 2100), "a 1.4 us trap against a 2.1 us populated page");
    cr_assert_not(khl_i_ahead_pays(2000, 2000));
}

/* khl_pool_stats says what the pool does, and the pool does it: the forced
 * modes whatever the machine, the default as measured (once per process:
 * every default pool answers alike). */
static int pages_ahead(khl_pool_t *p)
{
    khl_pool_stats_t st;
    khl_pool_stats(p, &st);
    return st.pages_ahead;
}

Test(pool_prefault, the_stats_say_whether_pages_come_ahead)
{
    khl_pool_options_t o;
    khl_pool_t *p = new_pool(0, 0), *q = new_pool(1, 0), *d, *e;
    cr_assert_eq(pages_ahead(p), 1);
    cr_assert_eq(pages_ahead(q), 0);
    memset(&o, 0, sizeof o);
    cr_assert_not_null(d = khl_pool_new(&o));
    cr_assert_not_null(e = khl_pool_new(&o));
    cr_assert_eq(pages_ahead(d), pages_ahead(e), "one answer per process");
    khl_pool_destroy(p);
    khl_pool_destroy(q);
    khl_pool_destroy(d);
    khl_pool_destroy(e);
}

Test(pool_prefault, the_default_does_what_its_stats_say)
{
    khl_pool_options_t o;
    khl_pool_t *p;
    void *b;
    memset(&o, 0, sizeof o);
    cr_assert_not_null(p = khl_pool_new(&o));
    cr_assert_not_null(b = khl_pool_alloc(p, 2048));
    /* A 2 KiB block's chunk: ahead, its first step of 8 KiB is in before any
     * write; lazily, only the pages the pool itself wrote (at most the
     * header's and the block's first). */
    uintptr_t chunk = (uintptr_t)b & ~(uintptr_t)(CHUNK - 1);
    size_t through = ((uintptr_t)b + 2048 - chunk + page_size() - 1) / page_size();
    if (pages_ahead(p))
        cr_assert(resident(b, 2048), "ahead, but the block is not resident before its write");
    else
        cr_assert_lt(resident_pages(b), through + 1, "lazily, but %zu pages resident", resident_pages(b));
    khl_pool_free(p, b, 2048);
    khl_pool_destroy(p);
}

/* Memory a backing allocator gives is left as it comes: nothing ahead. */
Test(pool_prefault, a_backed_pool_never_faults_ahead)
{
    khl_pool_options_t o;
    khl_pool_t *p;
    memset(&o, 0, sizeof o);
    o.backing = &khl_libc_allocator;
    o.lazy_pages = KHL_POOL_PAGES_AHEAD;
    cr_assert_not_null(p = khl_pool_new(&o));
    cr_assert_eq(pages_ahead(p), 0);
    khl_pool_destroy(p);
}
