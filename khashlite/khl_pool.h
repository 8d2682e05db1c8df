/* khl_pool.h: a size-class pool allocator for khashlite tables (and for any
 * code with a Lua-style allocator hook: khl_pool_allocf is a valid lua_Alloc).
 *
 * ---------------------------------------------------------------------------
 * Quick example
 *
 *     khl_pool_t *pool = khl_pool_new(NULL);          // defaults
 *     khl_allocator_t a = khl_pool_allocator(pool);   // must outlive the tables
 *     khl_t(m32) h;
 *     khl_init(m32, &h, &a);
 *     ... puts, gets, dels ...
 *     khl_destroy(m32, &h);
 *     khl_pool_destroy(pool);                         // returns every byte
 *
 * ---------------------------------------------------------------------------
 * Design
 *
 * Requests up to max_small bytes are rounded up to a size class: 16-byte
 * steps up to 128 B, then four classes per doubling (160, 192, 224, 256,
 * 320, ...), so rounding wastes at most 15 bytes up to 128 B and at most 20%
 * of the block above (8% on average over all sizes up to 16 KiB).  Each
 * class serves blocks from chunks of chunk_bytes bytes that hold only that
 * class; a chunk is aligned to its own size, so masking a block's address
 * finds the chunk header and with it the class: every free is O(1), sized
 * or not, and blocks carry no header.  Each class starts its blocks at its
 * own offset ("colour", up to 4 KiB) after the header, so the first blocks of
 * different classes do not compete for the same cache sets.  A class keeps
 * its free blocks in bundles, arrays of pointers to them: the first holds 8
 * in the class's own record, the others are free blocks of the class (the
 * first word links the bundle below).  Free and allocate move a pointer in
 * the current bundle and touch neither the block they take back nor the one
 * they hand out; allocation prefetches the block it will hand out next.
 * With no free block a class bumps a pointer through the never-used part of
 * its current chunk, so taking a new chunk never costs a pass over its
 * blocks: one mmap.  Where the system maps pages ahead for less than a
 * trapped fault costs, they come in a step at a time ahead of the bump
 * pointer, so that no allocation waits for a page fault (lazy_pages).
 * Larger requests up to large_max (default 4 MiB) are spans: runs of
 * chunk_bytes windows cut, best fit, from 8 MiB arenas the pool keeps, each
 * with a header at its first window that records the size, so unsized
 * free, realloc, block_size and owns work on them too; a span block starts
 * a cache colour (a multiple of 64 bytes below 4 KiB, a different one each
 * time) past the header, where its last window has the room, so that the
 * same bytes of different blocks do not compete for the same cache sets.
 * A freed span joins
 * its free neighbours and serves the next large blocks, a span grows in
 * place over free windows after it, and shrinking never moves it.  Blocks
 * above large_max get a frame (mapping) of their own, aligned the same
 * way; a few freed ones are kept for the next, and one grows by mremap,
 * which moves pages instead of copying bytes.  Large memory goes back to
 * the system on khl_pool_trim, when a second arena falls empty, when a kept
 * mapping is pushed out by newer ones, or when limit_bytes needs the room:
 * not once per call.
 *
 *     chunk (chunk_bytes, aligned to chunk_bytes)        large block frame
 *     +--------+------+------+------+-----------+        +--------+-------------+
 *     | header | blk  | blk  | blk  | never used|        | header | user bytes  |
 *     +--------+------+------+------+-----------+        +--------+-------------+
 *      ^ ptr & ~(chunk_bytes-1)     ^ bump                ^ ptr & ~(chunk_bytes-1)
 *      class c: top -> [link|blk*|blk*|  ] -> [link|blk*|..|blk*] -> root[8]
 *                   current bundle (a free block)  full bundles      (in c)
 *
 * With thread_safe = 1 every thread keeps, per pool it uses and per class, a
 * cache: a list to allocate from, a list of blocks it freed, the full
 * batches of freed blocks it keeps, and a run of never-used slots.  Both
 * fast paths touch only the calling thread's cache: no lock, no atomic
 * read-modify-write.  Every `batch` frees (up to 128 blocks or 32 KiB) the
 * freed list becomes one batch: the thread keeps it while its kept batches
 * hold at most thread_keep_bytes (default 2 MiB), else publishes it on the
 * class's lock-free stack with one compare-and-swap.  An empty cache takes
 * a batch it kept (no atomic), else every published batch at once (one
 * atomic exchange), and only then takes the pool's lock for loose blocks,
 * the blocks of exited threads' caches (batches 8 at most a time, so that
 * the lock is held for microseconds) or never-used slots.  Blocks may be
 * freed by any thread: a block freed by another thread than the one that
 * allocated it simply joins the freeing thread's cache.  When a thread
 * exits its cache, blocks and all, becomes the pool's, and the next thread
 * to start on the pool adopts it whole, so that an exited thread's blocks
 * go on together in one thread instead of spread over several; a refill
 * that would otherwise take a new chunk takes its blocks first, and
 * khl_pool_trim gives them back and frees the records.  A pool keeps up to
 * 64 such caches; the caches of threads exiting past that go back to the
 * pool at once.  A destroyed pool's caches are simply forgotten.
 *
 * Every failure is reported (NULL or -1, the pool unchanged: every stats
 * field but system_calls, which counts the refused request too); misuse is
 * undefined as with free() unless the pool was created with checked = 1,
 * which turns it into an abort() with a message on stderr.
 */
#ifndef KHL_POOL_H
#define KHL_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "khashlite.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct khl_pool khl_pool_t;

typedef struct khl_pool_stats_s {
    size_t   in_use_bytes;   /* bytes held by live blocks as the pool counts them: a small block's size class, a large block's size */
    size_t   peak_bytes;     /* highest in_use_bytes seen (thread-safe pools: sampled, see khl_pool_stats) */
    size_t   system_bytes;   /* bytes currently taken from `backing`/the system, chunks and large blocks (address space mapped ahead for the next chunks counts once a chunk is cut from it) */
    uint64_t allocs, frees;  /* calls that succeeded */
    size_t   meta_bytes;     /* bookkeeping taken from backing/libc: the pool itself and its chunk index */
    size_t   chunks;         /* small-block chunks held */
    size_t   large_blocks;   /* live large blocks */
    uint64_t system_calls;   /* requests the pool made of the system: mmap, munmap, mremap, madvise, or calls of `backing` */
    size_t   retained_bytes; /* part of system_bytes that holds no block and goes first under limit_bytes: empty arenas, kept mappings */
    int      pages_ahead;    /* 1: the pool faults its chunks' pages ahead of their blocks (lazy_pages) */
} khl_pool_stats_t;

typedef struct khl_pool_options {      /* a zero field means its default */
    size_t max_small;        /* largest size served from size classes; larger goes to `backing` */
    size_t chunk_bytes;      /* how much the pool takes from the system at a time */
    int    thread_safe;      /* 0: single-threaded (default), 1: safe to share between threads */
    int    checked;          /* 1: detect double free, foreign and misaligned pointers, wrong sizes */
    const khl_allocator_t *backing;  /* where large blocks and chunks come from (NULL: mmap); must return malloc-aligned memory and outlive the pool */
    /* backing gets requests of chunk_bytes - 16 more than it hands out, as
     * the pool aligns inside them (mmap needs no slack); a thread-safe pool
     * calls it with its lock held, so it must not call back into that pool. */
    size_t limit_bytes;      /* most system memory the pool may hold; 0: no limit */
    /* limit_bytes bounds system_bytes (khl_pool_stats): chunks and large
     * blocks as taken from backing or mmap, alignment slack included (with
     * a backing allocator a chunk costs about twice chunk_bytes).  The
     * bookkeeping in meta_bytes (the pool, its class table and its chunk
     * index: a few KiB, more when max_small is raised - a byte per 16 of
     * it - then 16-32 B per chunk or large block) is not counted, nor is the
     * address space mapped for the next chunks before one is cut from it
     * (unwritten, it holds no memory but the first pages of a chunk a failed
     * allocation gave back; it stays within the limit too).  An
     * allocation, reserve or realloc that would take the pool past the limit
     * fails (NULL or -1) with the pool unchanged, as out of memory does: an
     * interpreter given khl_pool_allocf then raises its memory error instead
     * of the kernel killing the process.  A realloc that moves a block holds
     * both blocks at once; freed blocks keep their chunks until
     * khl_pool_trim, so a caller that wants them counted off trims and
     * retries. */
    int    lazy_pages;       /* 0: the pool chooses (below); 1: never fault pages ahead; KHL_POOL_PAGES_AHEAD: always */
    /* Faulting ahead: a chunk the pool maps itself (no backing allocator)
     * has its pages faulted in a step at a time ahead of the bump pointer
     * (a page, or 4 of its class's blocks up to 16 KiB, whichever is more:
     * a page for blocks up to 1 KiB), each step in one system call
     * (MADV_POPULATE_WRITE; a touch per page on kernels before 5.14) by the
     * allocation that reaches it, so no allocation waits for a trapped
     * page fault; the call that takes a chunk faults the first step.
     * Thread-safe pools do the same: a thread takes a chunk's whole
     * never-used run and faults its pages a step at a time as it reaches
     * them.  Lazily, each page faults in at the first write of a block in
     * it, as glibc's do.  By default (0) a pool faults ahead where that
     * costs less: when a page mapped by MADV_POPULATE_WRITE, with its
     * first write, took less time than a trapped fault, measured once per
     * process at the first such pool's khl_pool_new (a few pages, about
     * 0.1-0.2 ms on a VM whose fault costs 10 us, in system calls no
     * pool's system_calls counts); khl_pool_stats says which
     * (pages_ahead).  On one VM a trap cost 10 us and a mapped page 1-1.5
     * us; on another 1.4 and 2.1 (docs/pool.md has the tails either way
     * gives).  khl_pool_reserve keeps every fault and system call out of
     * the allocations it covers. */
    size_t thread_keep_bytes; /* thread-safe pools: freed bytes a thread keeps for itself; 0: KHL_POOL_DEFAULT_THREAD_KEEP_BYTES */
    /* A thread's frees go to its own cache; each full batch stays there,
     * for that thread's next allocations, while the batches it keeps hold
     * at most thread_keep_bytes (over every class of this pool), and is
     * published for any thread otherwise.  So a thread that frees what it
     * allocated, up to thread_keep_bytes, never touches what other threads
     * use; a thread that frees more than it allocates (a consumer) hands
     * the surplus on.  Memory kept this way counts as in use to other
     * threads and to khl_pool_trim until the thread exits; then the
     * thread that adopts its cache keeps it. */
    size_t large_max;        /* largest block served from the pool's arenas; 0: KHL_POOL_DEFAULT_LARGE_MAX */
    /* Blocks above max_small up to large_max are spans of the pool's
     * arenas (see Design), capped at 64 * chunk_bytes less a header; a
     * value up to max_small turns spans off (every large block a mapping
     * of its own).  limit_bytes counts arenas whole, the free windows in
     * them and kept mappings included; a call that would pass the limit
     * gives back empty arenas and kept mappings first, so memory that only
     * the pool holds never makes it fail.  An arena is 8 MiB unless the
     * limit leaves less, then just what the block needs. */
    int    huge_pages;       /* 1: mappings of a huge page or more start on a huge-page boundary, advised as huge pages; 0: off (default) */
    /* The pool's arenas and huge blocks that span at least one transparent
     * huge page (the kernel's hpage_pmd_size: 2 MiB on x86-64) are mapped
     * at such a boundary and advised MADV_HUGEPAGE, so that a kernel whose
     * transparent huge pages are on ("madvise" or "always") backs them with
     * huge pages: a TLB entry and a first-touch fault per huge page instead
     * of per 4 KiB page.  A table of 2M u64 keys with 56-byte values
     * filled on such a pool in about 0.75 of the time (its growths' page
     * faults), its lookups as fast as before (docs/pool.md, "Huge pages").
     * The costs: resident memory grows a huge page at a time, and a huge
     * page's first fault zeroes it whole and may wait while the kernel
     * compacts memory (a run's first such fill took twice as long).
     * Smaller mappings (chunks of small blocks) are as without.  No effect
     * with a backing allocator; where the kernel has huge pages off, only
     * the alignment remains. */
} khl_pool_options_t;

/* lazy_pages: fault a chunk's pages ahead of its blocks, whatever they cost. */
#define KHL_POOL_PAGES_AHEAD (-1)

/* Default max_small: 16 KiB.  Table blocks double on growth, so a table's
 * block walks through the classes; up to 16 KiB (about 1000 buckets of an
 * int->int map) the pool serves it, beyond that a block is big enough that
 * its memcpy on resize dwarfs a system call. */
#define KHL_POOL_DEFAULT_MAX_SMALL ((size_t)16 * 1024)
/* Default chunk_bytes: 128 KiB, at least 8 blocks of the largest class so
 * the chunk header's slack stays under 1/8, and small enough that a pool
 * with a handful of live classes stays around a megabyte. */
#define KHL_POOL_DEFAULT_CHUNK_BYTES ((size_t)128 * 1024)
/* Default thread_keep_bytes: 2 MiB, so that a thread working through a
 * megabyte or two of small blocks (the FastMM loop's 10,000 x 100 B is
 * 1.1 MB) frees and reuses them without a lock or an atomic operation,
 * while one thread holds at most that much freed memory from others. */
#define KHL_POOL_DEFAULT_THREAD_KEEP_BYTES ((size_t)2 * 1024 * 1024)
/* Default large_max: 4 MiB.  Interpreters regrow array and string buffers
 * and GC pages of 16 KiB to a few MiB all the time; a mapping per block
 * cost mruby 3 system calls per allocation and 6.5x its time on glibc.
 * Above a few MiB the block's first write faults cost more than its
 * mapping. */
#define KHL_POOL_DEFAULT_LARGE_MAX ((size_t)4 * 1024 * 1024)

/* Creates a pool.  opt may be NULL (all defaults); a zero field means its
 * default.  max_small is rounded up to a multiple of 16 and capped at 1 MiB;
 * chunk_bytes is rounded up to a power of two, at least 16 KiB and at least
 * 8 * max_small (so it grows when max_small is raised alone), at most 1 GiB.
 * Returns NULL when the bookkeeping cannot be allocated or, in thread-safe
 * mode, the lock cannot be created.  Takes no chunk yet.  O(classes). */
khl_pool_t *khl_pool_new(const khl_pool_options_t *opt);

/* Returns every chunk and large block to the system, live or not, then the
 * pool itself.  NULL is a no-op.  Thread-safe pools: call it only after every
 * other thread's last call on this pool has returned; those threads may keep
 * running or exit later.  Their caches for this pool are discarded; each
 * thread frees its small record of them itself, when it next sets up a
 * cache for some thread-safe pool or at the latest when it exits (the
 * calling thread's, and those of exited threads, go at once).
 * O(chunks + large blocks + exited threads' caches). */
void khl_pool_destroy(khl_pool_t *p);

/* Allocates n bytes aligned to max_align_t.  NULL for n == 0 and on failure
 * (the pool is then unchanged).  O(1): a small request takes a free block
 * or bumps a pointer, at worst takes one chunk from the system; a large one
 * takes free windows of an arena (O(arenas)), at worst one new arena or,
 * above large_max, a kept mapping or one system request. */
void *khl_pool_alloc(khl_pool_t *p, size_t n);

/* count * n zeroed bytes; NULL when the product overflows, is 0, or on
 * failure.  O(count * n) for the zeroing. */
void *khl_pool_calloc(khl_pool_t *p, size_t count, size_t n);

/* Frees a block; n must be the size it was allocated with (or last
 * reallocated to) - any size of the same size class works.  NULL is a
 * no-op.  O(1) for small blocks: the class comes from n, no header is read;
 * a large block's windows go back to its arena, a huge block's mapping is
 * kept for the next or unmapped. */
void khl_pool_free(khl_pool_t *p, void *ptr, size_t n);

/* Frees a block without its size: the chunk header found by masking the
 * address names the class.  NULL is a no-op.  O(1). */
void khl_pool_free_unsized(khl_pool_t *p, void *ptr);

/* Resizes like realloc: NULL ptr allocates, nsize 0 frees and returns NULL.
 * osize is the block's current size as the caller knows it.  A block stays
 * where it is when nsize falls in the same size class, or when it is large
 * and stays above max_small and: shrinks; or is a span that stays within
 * large_max and whose arena has the windows after it free; or is huge and
 * fits its mapping.  A huge block of a pool without `backing` that outgrows
 * its mapping moves by mremap (its pages, no copy).  Otherwise it moves,
 * with min(osize, nsize) bytes copied.  On failure returns NULL and ptr is
 * untouched and still live.  O(1) plus the copy. */
void *khl_pool_realloc(khl_pool_t *p, void *ptr, size_t osize, size_t nsize);

/* khl_pool_realloc with osize found from the address (for allocator hooks
 * without the old size, such as mruby's allocf). */
void *khl_pool_realloc_unsized(khl_pool_t *p, void *ptr, size_t nsize);

/* Usable bytes of a live block: its size class for a small block, its
 * current size for a large one.  O(1). */
size_t khl_pool_block_size(const khl_pool_t *p, const void *ptr);

/* 1 when ptr is a block this pool handed out and that is live, 0 for memory
 * it never handed out (stack, malloc, another pool, interior or misaligned
 * pointers...).  Never reads memory the pool does not own.  O(1) expected: a
 * hash probe in the pool's chunk index.  Unless the pool is checked, it may
 * also answer 1 for a free small block (one that was handed out, or, in a
 * thread-safe pool, one sitting in a thread's cache). */
int khl_pool_owns(const khl_pool_t *p, const void *ptr);

/* Makes `count` more blocks of n's size class ready, their pages touched:
 * the next `count` allocations of that class never go to the system.
 * Reserves add up and trim keeps them; a reserve is used up by allocations
 * of its class (thread-safe pools: by any thread, counted when a caller gets
 * the block, not when a thread's cache takes it; the blocks of that class
 * that exited threads' caches hold count as ready).  Returns 0, or -1 with
 * nothing reserved and the pool unchanged when memory runs out, the chunks
 * it needs would pass limit_bytes or the machine's physical memory (every
 * page is touched: the kernel would kill the process rather than fail),
 * count * size overflows, or n is 0 or larger than max_small (large blocks
 * have no class to reserve).  count == 0 returns 0.  O(count) page touches,
 * none when it fails. */
int khl_pool_reserve(khl_pool_t *p, size_t n, size_t count);

/* Gives back to the system every chunk that holds no live block, except
 * those needed to keep outstanding reserves ready, every arena that holds
 * no large block and every kept huge mapping.  In a thread-safe pool
 * the calling thread's cache for this pool goes back first, all of it
 * (blocks to hand out, blocks it freed, batches it kept, never-used runs;
 * its next allocation refills under the lock), and so do the batches
 * threads published and the caches of exited threads (their records
 * freed), so once every
 * block is freed and the other threads that used the pool have exited, it
 * gives back what a single-threaded pool would.  Blocks in other live
 * threads' caches (batches they keep included) count as live: trim cannot
 * take them from their owners.  O(free blocks + chunks). */
void khl_pool_trim(khl_pool_t *p);

/* Fills *s.  Thread-safe pools: counts are exact when no call is running;
 * peak_bytes is sampled when threads refill their caches under the lock,
 * so it may miss a peak by what each thread allocated from its cache since
 * its last such refill: up to thread_keep_bytes plus a chunk's never-used
 * slots per class and thread.  O(1), O(threads) thread-safe. */
void khl_pool_stats(const khl_pool_t *p, khl_pool_stats_t *s);

/* Lua-style hook, ud = the pool: (NULL, any, n) allocates, (ptr, osize, 0)
 * frees and returns NULL, otherwise khl_pool_realloc.  (NULL, any, 0) returns
 * NULL and counts nothing.  A shrink that must move to a smaller class can
 * fail (NULL) if that class needs a new chunk and none can be had: Lua 5.4.2
 * and later raise a memory error then; Lua 5.1 to 5.4.1 assume a shrink never
 * fails, so reserve the smaller classes (khl_pool_reserve) or use another
 * allocator with those versions. */
void *khl_pool_allocf(void *ud, void *ptr, size_t osize, size_t nsize);

/* {khl_pool_allocf, p, resizes 1}, for khl_init: a table of 64 KiB or more
 * grows through khl_pool_realloc (in place where the room after its block is
 * free).  Tables keep a pointer to the allocator, so store the result where
 * it outlives them. */
khl_allocator_t khl_pool_allocator(khl_pool_t *p);

/* Debug validator: walks the pool's whole structure - the chunk index and
 * system_bytes, every chunk's header and bump bounds, each class's free
 * blocks (bundles and batches of exited threads: every one a handed-out slot of
 * its class, none counted twice in a cycle, none live in a checked pool),
 * the count equations (free blocks = slots handed out - (allocs - frees),
 * in_use and the large blocks, reserves), every arena's windows (exactly
 * its spans', none twice) and the kept mappings, and the calling thread's own
 * cache and those of exited threads - and returns 0, or prints the first broken invariant on stderr and
 * returns -1.  It reads only memory the pool owns, so a corrupted pool
 * gives a message, not a crash (invariants: khl_pool_internal.h).  The
 * table has the same contract in khl_check.  A thread-safe pool is checked
 * under its lock; other live threads' caches are theirs and are not walked, and
 * counts that threads keep lazily are not compared.  Built with
 * -DKHL_DEBUG, the pool runs this itself at the end of every call that
 * leaves the fast paths and aborts when it fails.  NULL returns 0.
 * O(chunks + free blocks + index). */
int khl_pool_check(const khl_pool_t *p);

#ifdef __cplusplus
}
#endif

/* Inline fast paths: define KHL_POOL_INLINE before including this header
 * and calls of khl_pool_alloc, khl_pool_free and khl_pool_free_unsized are
 * compiled inline (khl_pool_inline.h), without LTO. */
#ifdef KHL_POOL_INLINE
#include "khl_pool_inline.h"
#endif

#endif /* KHL_POOL_H */
