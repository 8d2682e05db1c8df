/* khl_pool_internal.h: the pool's layers, their names and the invariants
 * they keep.  Not part of the API and not installed: the public functions
 * (khl_pool.c) and white-box tests include it; programs include
 * khl_pool.h.
 *
 * ===========================================================================
 * Layers
 *
 * Each file calls only the layers below it, and each layer's header
 * (types, inline helpers, functions) includes only the headers below it:
 *
 *   khl_pool.c           the public functions, the pool's lifetime and the
 *                        locked paths (core_*, locked_*): above everything
 *   khl_pool_check.[ch]  checked mode's per-call checks, khl_pool_check
 *   khl_pool_thread.[ch] per-thread caches of thread-safe pools; their slow
 *                        paths take the caller's record and never fall back
 *                        into the locked paths (khl_pool.c does)
 *   khl_pool_class.[ch]  chunks, size classes, bundles, flushed batches,
 *                        bump, reserve, trim; what only the thread caches
 *                        know (callers' allocations) comes as an argument
 *   khl_pool_large.[ch]  blocks above max_small: spans of arenas, huge
 *                        frames and the mappings kept for them
 *   khl_pool_os.[ch]     the pool's record, frames and arenas; system
 *                        memory (mmap or `backing`) and the chunk index
 *   khl_pool_inline.h    (public) the first cache line of a pool, the class
 *                        record and the inline fast paths
 *   khl_port.h           (public) the compiler-portability macros
 *
 * ===========================================================================
 * Names
 *
 *   core_*    works on a pool with its lock held (the lock exists only in
 *             thread-safe pools): every mode, every size, no fast path.
 *   locked_*  takes the lock (thread-safe pools), calls core_*, drops it:
 *             what a call runs when no fast path serves it.
 *   ts_*      the thread-cache paths of a thread-safe, unchecked pool.
 *   cls_*     one size class's structures (lock held).
 *   frame_*, index_*  system memory and the chunk index (lock held).
 *   khl_i_    prefix of every function or variable one of these files
 *             defines for another: the archive exports only khl_ names
 *             (tests/test_symbols.c), and KHL_HIDDEN keeps them out of a
 *             shared library built from it.
 *
 * A pool runs in one of three modes, fixed at khl_pool_new:
 *   plain         neither thread_safe nor checked: small calls run the
 *                 inline paths of khl_pool_inline.h on the class records.
 *   thread-cached thread_safe, not checked: small calls run ts_* on the
 *                 calling thread's cache; misses take the lock.
 *   checked       checked (thread-safe or not): every call is a locked_*
 *                 call that checks its pointer first.
 * plain_path_max and cache_path_max turn the mode into one unsigned compare
 * per call (`n - 1 < max`, false for n == 0 and for a disabled path).
 *
 * Lock order: khl_i_registry_lock (the threads' cache records, in
 * khl_pool_thread.c), then a pool's lock, then whatever `backing` takes.
 * No path takes the registry lock while holding a pool's lock.
 *
 * ===========================================================================
 * Invariants (khl_pool_check verifies them; "|x|" is a count)
 *
 * Frames.  Every chunk and every live large block is a frame: chunk_bytes-
 * aligned, a chunk_t header at its start, and its address in the chunk index:
 *   index_n = nchunks + nlarge,  2 * index_n <= index_cap (a power of two)
 *   system  = sum over chunks and huge blocks of raw_size
 *           + sum over arenas of raw_size + cached_bytes
 *   nchunks = sum over classes c of |c.chunks|,   nlarge = |large|
 * A large block is a span (cls = its windows, 1..64; raw = its arena_t) or
 * huge (cls = 0; a frame of its own).  A span covers windows start..start+
 * cls of its arena, whose `used` bits are exactly the union of its spans'
 * windows, no two overlapping.  Freed huge frames in huge_cache (ncached,
 * cached_bytes) are out of the index, their header as it was.
 *   retained = cached_bytes + sum over arenas with used == 0 of raw_size
 *   nempty   = |arenas with used == 0| <= KEEP_EMPTY_ARENAS after any call
 * A chunk of class c holds cap slots of c.size bytes from `slots`; slots
 * below its bump pointer were handed out at least once, the rest never were.
 * For the class's current chunk (c.cur) the bump pointer is c.bump, and
 *   c.bump <= c.end <= its slots' end,  (c.end - slots) % c.size = 0
 * where c.end stops before the slots' end at the pages faulted so far (the
 * pool faults them a step at a time where it faults ahead: pages_ahead
 * in khl_pool_stats); other chunks keep their bump pointer in chunk.bump.  A
 * thread's run (thread-safe pools) is the rest of a chunk from its bump,
 * faulted up to its end: bump == end != NULL says the slots past end are
 * still the thread's, their pages not in yet.
 *
 * Free blocks.  Class c's free blocks are the entries of its bundles (the
 * root array in the class record, then block bundles linked through their
 * first word, each a free block itself) plus, in thread-safe pools, the
 * chains in c.batches (one batch = c.batch blocks each; chains of exited
 * threads' caches and chains taken off the published stack under the
 * lock).  The blocks of thread caches (exited threads' too), their stashes
 * and the published stack count as handed out: the class sees them again
 * when a refill or trim takes an exited thread's cache's blocks back, or
 * when trim takes the published stack.
 *
 * Records.  p.threads lists every thread-safe cache record of the pool; an
 * exited thread's is marked abandoned and is also on p.abandoned, and no
 * other is marked.
 *   carved + (c.bump - c.cur.slots) / c.size - (c.allocs - c.frees)
 *       = |bundle entries| + |block bundles| + c.batch * |flushed chains|
 * where carved = sum over chunks k != c.cur of (k.bump - k.slots) / c.size.
 * Only the current bundle (base..lim, filled to top) may be partly full.
 * Fresh chunks (reserved, never bumped into) have bump = slots, are not
 * c.cur, and c.fresh_slots = sum of their cap.
 *
 * Counts.  In a single-threaded pool
 *   in_use = sum over classes of (c.allocs - c.frees) * c.size
 *          + sum over large blocks of size,            peak >= in_use
 *   large_allocs - large_frees = nlarge
 * A thread-safe pool's c.allocs/c.frees count blocks leaving and entering
 * the class (into thread caches too); callers' allocations are counted in
 * the caches and summed lazily (khl_pool_stats).  In a checked pool the
 * live bits of class c's chunks number c.allocs - c.frees, and no free
 * block's bit is set.
 *
 * Reserve.  While c.reserve_until > user allocations of c, the blocks ready
 * (free + bump room + fresh slots) are at least the blocks still promised.
 */
#ifndef KHL_POOL_INTERNAL_H
#define KHL_POOL_INTERNAL_H

/* Every layer, for the public functions (khl_pool.c) and white-box tests. */
#include "khl_pool_check.h"
#include "khl_pool_large.h"
#include "khl_pool_thread.h"

#endif /* KHL_POOL_INTERNAL_H */
