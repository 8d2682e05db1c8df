/* khl_pool_os.c: the pool's system memory - frames (chunks, huge blocks and
 * arenas) aligned to chunk_bytes, from mmap (chunks cut from a reservation
 * of several) or the caller's backing allocator - and the chunk index, the
 * set of frame addresses that tells the pool's memory from any other.
 * Every function runs with the pool's lock held (thread-safe pools), and
 * counts the system calls it makes in sys_calls (khl_pool_stats:
 * system_calls). */
#define _GNU_SOURCE 1   /* MAP_ANONYMOUS under -std=c11 */

#include "khl_pool_os.h"

#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>

/* What a frame of `bytes` keeps of the system's memory (its raw_size, what
 * system_bytes and limit_bytes count); 0 when that does not fit a size_t. */
size_t khl_i_frame_cost(const khl_pool_t *p, size_t bytes)
{
    size_t align = p->chunk_bytes;
    if (p->backing.fn)
        return bytes > SIZE_MAX - align ? 0 : bytes + align - GRAIN;
    return bytes > SIZE_MAX - align - p->page ? 0 : (size_t)align_up(bytes, p->page);
}

/* Faults the mapped pages from..to in now, in one call, so that the
 * allocations that use them never stop on a page fault: on one VM
 * MADV_POPULATE_WRITE mapped a page for 1-1.5 us, where a first write
 * trapped for 2-19 us (a pool faults ahead only where that holds:
 * khl_i_faults_ahead_pay).  Kernels before 5.14 do not know it: the pages are then
 * touched one by one.  A backing allocator's memory is left as it gives it.
 * -1 when the memory cannot be had: the caller fails, as when mmap fails,
 * instead of a later write faulting. */
int khl_i_pages_prefault(khl_pool_t *p, char *from, char *to)
{
    volatile char *q;
    if (p->backing.fn || from >= to)
        return 0;
#ifdef MADV_POPULATE_WRITE
    p->sys_calls++;
    if (madvise(from, (size_t)(to - from), MADV_POPULATE_WRITE) == 0)
        return 0;
    if (errno == ENOMEM)
        return -1;
#endif
    for (q = from; q < (volatile char *)to; q += p->page)
        *q = 0;
    return 0;
}

/* Whether faulting a chunk's pages ahead costs less than leaving them to
 * trap on first write: when one page mapped by MADV_POPULATE_WRITE, with
 * its first write, costs less than one trapped fault.  On one VM a trap
 * cost 2-19 us (10 us on the last) and a populated page 1-1.5 us: steps
 * ahead made the pool's p99.9 half glibc's.  On another a trap cost 1.4 us
 * and a populated page 2.1 us (4 pages 6 us): steps of up to 4 pages put
 * the pool's p99.9 at 1.1 to 5 times glibc's with sizes of 16 B - 4 KiB,
 * where first writes trapping as glibc's do gave 0.75 times. */
int khl_i_ahead_pays(uint64_t trap_ns, uint64_t ahead_ns)
{
    return ahead_ns < trap_ns;
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The least of SAMPLES trapped faults against the least of SAMPLES pages
 * populated and then written once, alternated, in a mapping of their own
 * whose first page is faulted untimed (it builds the page table either
 * would).  The write counts: on one VM a populated page's first write
 * still took 4-5 us (the host backs the page then), so a page faulted
 * ahead cost 7.2 us in all where its populate alone took 2.7, against a
 * 9.8 us trap.  Kernels without MADV_POPULATE_WRITE fault ahead by
 * touching, a trap itself, and a refused call (no memory) would refuse
 * steps too: lazy. */
static int measure_ahead(size_t page)
{
#ifdef MADV_POPULATE_WRITE
    enum { SAMPLES = 4 };
    size_t len = (2 * SAMPLES + 1) * page, i;
    uint64_t trap = UINT64_MAX, ahead = UINT64_MAX, t0, t1, t2;
    int ok = 1;
    char *m = (char *)mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 0;
    *(volatile char *)m = 0;
    for (i = 0; ok && i < SAMPLES; i++) {
        char *a = m + (2 * i + 1) * page;
        t0 = now_ns();
        *(volatile char *)a = 0;
        t1 = now_ns();
        ok = madvise(a + page, page, MADV_POPULATE_WRITE) == 0;
        *(volatile char *)(a + page) = 0;
        t2 = now_ns();
        if (t1 - t0 < trap)
            trap = t1 - t0;
        if (t2 - t1 < ahead)
            ahead = t2 - t1;
    }
    munmap(m, len);
    return ok && khl_i_ahead_pays(trap, ahead);
#else
    (void)page;
    return 0;
#endif
}

/* 0 not measured yet, else 1 + the answer: once per process, since it is
 * the machine's.  Two threads may both measure; they write the same kind
 * of answer. */
static _Atomic int ahead_answer;

int khl_i_faults_ahead_pay(size_t page)
{
    int a = atomic_load_explicit(&ahead_answer, memory_order_relaxed);
    if (!a) {
        a = 1 + measure_ahead(page);
        atomic_store_explicit(&ahead_answer, a, memory_order_relaxed);
    }
    return a - 1;
}

/* The kernel's transparent huge page (hpage_pmd_size), read once per
 * process; 2 MiB where it does not say (a kernel without transparent huge
 * pages: huge_pages then only aligns) or says more than 1 GiB. */
static _Atomic uint32_t huge_page_answer;

uint32_t khl_i_huge_page_size(void)
{
    uint32_t h = atomic_load_explicit(&huge_page_answer, memory_order_relaxed);
    if (!h) {
        unsigned long v = 0;
        FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r");
        if (f) {
            if (fscanf(f, "%lu", &v) != 1)
                v = 0;
            fclose(f);
        }
        h = v >= 4096 && v <= (1ul << 30) && !(v & (v - 1)) ? (uint32_t)v : (uint32_t)2 << 20;
        atomic_store_explicit(&huge_page_answer, h, memory_order_relaxed);
    }
    return h;
}

/* A frame's alignment: chunk_bytes, or the huge page where it spans one. */
static size_t frame_align(const khl_pool_t *p, size_t len)
{
    return khl_i_frame_is_huge(p, len) && p->huge_page > p->chunk_bytes ? p->huge_page : p->chunk_bytes;
}

/* Asks for huge pages on a frame that spans one.  The kernel may refuse
 * (huge pages off, or an old kernel): the frame serves as well without. */
static void advise_huge(khl_pool_t *p, char *a, size_t len)
{
#ifdef MADV_HUGEPAGE
    if (khl_i_frame_is_huge(p, len)) {
        p->sys_calls++;
        (void)madvise(a, len, MADV_HUGEPAGE);
    }
#else
    (void)p, (void)a, (void)len;
#endif
}

/* Unmaps what lies around a..a+len in the mapping m..m+map. */
static void trim_slack(khl_pool_t *p, char *m, size_t map, char *a, size_t len)
{
    if (a > m) {
        p->sys_calls++;
        munmap(m, (size_t)(a - m));
    }
    if (m + map > a + len) {
        p->sys_calls++;
        munmap(a + len, (size_t)(m + map - (a + len)));
    }
}

/* len bytes mapped right below the last frame (or right above it, where
 * mappings are placed upward), which is aligned; NULL when that room is
 * taken.  One system call where over-mapping and unmapping the slack takes
 * three, and unmapping is the costly one (on a VM, flushing the other
 * cores' TLBs): a small class's chunk take was 22 us, the p99.9 of an
 * unreserved pool.  MAP_FIXED_NOREPLACE fails rather than map elsewhere;
 * kernels before 4.17 and valgrind take it as a hint and may, so the
 * address is checked. */
static char *map_at_hint(khl_pool_t *p, size_t len)
{
    uintptr_t step = align_up(len, p->chunk_bytes), last = (uintptr_t)p->map_last;
    char *m, *hint;
    int flags = MAP_PRIVATE | MAP_ANONYMOUS;
    if (!last || (!p->map_up && last <= step))
        return NULL;
    hint = p->map_up ? p->map_above : (char *)(last - step);
#ifdef MAP_FIXED_NOREPLACE
    flags |= MAP_FIXED_NOREPLACE;
#endif
    p->sys_calls++;
    m = (char *)mmap(hint, len, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (m == hint)
        return m;
    if (m != MAP_FAILED) {
        p->sys_calls++;
        munmap(m, len);
    }
    return NULL;
}

/* len bytes mapped at an alignment of `align`: next to the last mapping
 * where that room is free (map_at_hint), else over-mapped with the slack
 * unmapped.  The next mapping goes next to this one. */
static char *map_aligned(khl_pool_t *p, size_t len, size_t align)
{
    size_t map = len + align - p->page;
    char *m, *a = align == p->chunk_bytes ? map_at_hint(p, len) : NULL;
    if (!a) {
        p->sys_calls++;
        m = (char *)mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        a = (char *)align_up((uintptr_t)m, align);
        trim_slack(p, m, map, a, len);
        /* Linux places mappings downward, valgrind upward: the room
         * next to the last frame on that side is likely free. */
        p->map_up = p->map_last && a > p->map_last;
    }
    p->map_last = a;
    p->map_above = (char *)((uintptr_t)a + align_up(len, p->chunk_bytes));
    return a;
}

/* A chunk's frame cut from the reservation, the next RESERVE_CHUNKS frames
 * mapped in one call when it is used up (fewer as limit_bytes allows): a
 * chunk take then makes no mapping of its own.  Chunk takes are an
 * unreserved pool's slowest calls, its p99.9 with 100-byte blocks, and a
 * mapping each was 2.0 us of a 9.9 us take (docs/pool.md, "Chunks cut
 * from a reservation").  The reservation is address space until
 * a frame is cut and written (or a failed take gives back a frame whose
 * first pages it wrote: khl_i_frame_drop), and counts in no statistic.  NULL where frames are not cut (not a chunk's size, or
 * chunks so large that a reservation would pass RESERVE_MAX) or the
 * mapping fails: the caller maps the frame alone.  Frames are cut whole,
 * so a used-up reservation has nothing left. */
static char *reservation_cut(khl_pool_t *p, size_t len)
{
    size_t n;
    char *a;
    if (len != p->chunk_bytes || len > RESERVE_MAX / RESERVE_CHUNKS)
        return NULL;
    if ((size_t)(p->resv_end - p->resv_next) < len) {
        for (n = RESERVE_CHUNKS; n > 1 && !within_limit(p, n * len); n /= 2)
            ;
        if (n < 2 || !(a = map_aligned(p, n * len, len)))
            return NULL;
        p->resv_next = a;
        p->resv_end = a + n * len;
    }
    a = p->resv_next;
    p->resv_next += len;
    return a;
}

/* A frame of `bytes` aligned to chunk_bytes.  mmap over-maps and unmaps the
 * slack; a backing allocator only promises malloc alignment, so we ask it for
 * the slack too and keep it (raw/raw_size say exactly what to give back). */
static char *frame_alloc(khl_pool_t *p, size_t bytes, void **raw, size_t *raw_size)
{
    size_t align = p->chunk_bytes;
    *raw_size = khl_i_frame_cost(p, bytes);
    if (!*raw_size)
        return NULL;
    if (p->backing.fn) {
        char *m;
        p->sys_calls++;
        m = (char *)p->backing.fn(p->backing.ud, NULL, 0, *raw_size);
        if (!m)
            return NULL;
        *raw = m;
        return (char *)align_up((uintptr_t)m, align);
    } else {
        size_t len = *raw_size;
        char *a;
        align = frame_align(p, len);
        if (len > SIZE_MAX - align)
            return NULL;
        if (!(a = reservation_cut(p, len))) {
            if (!(a = map_aligned(p, len, align)))
                return NULL;
            advise_huge(p, a, len);
        }
        *raw = a;
        return a;
    }
}

/* Memory aligned to chunk_bytes for an arena: counted by the caller. */
char *khl_i_region_take(khl_pool_t *p, size_t bytes, void **raw, size_t *raw_size)
{
    return frame_alloc(p, bytes, raw, raw_size);
}

void khl_i_frame_free(khl_pool_t *p, void *raw, size_t raw_size)
{
    p->sys_calls++;
    if (p->backing.fn)
        p->backing.fn(p->backing.ud, raw, raw_size, 0);
    else
        munmap(raw, raw_size);
}

void khl_i_frame_drop(khl_pool_t *p, void *raw, size_t raw_size)
{
    if (!p->backing.fn && (char *)raw + raw_size == p->resv_next)
        p->resv_next = (char *)raw;
    else
        khl_i_frame_free(p, raw, raw_size);
}

void khl_i_reservation_release(khl_pool_t *p, khl_pool_unmap_t *u)
{
    if (p->resv_next != p->resv_end)
        khl_i_unmap_add(p, u, p->resv_next, (size_t)(p->resv_end - p->resv_next));
    p->resv_next = p->resv_end = NULL;
}

void khl_i_unmap_flush(khl_pool_t *p, khl_pool_unmap_t *u)
{
    unsigned i;
    for (i = 0; i < u->n; i++)
        khl_i_frame_free(p, u->run[i].at, u->run[i].len);
    u->n = 0;
}

/* Run r grown by the memory at..at+len when the two touch: 1, else 0. */
static int unmap_extend(khl_pool_unmap_t *u, unsigned r, char *at, size_t len)
{
    if (at + len == u->run[r].at)
        u->run[r].at = at;
    else if (u->run[r].at + u->run[r].len != at)
        return 0;
    u->run[r].len += len;
    return 1;
}

/* Run r, grown by a frame: joins the run it now touches, if any (the
 * frames of a run never overlap another's, so at most one can). */
static void unmap_join(khl_pool_unmap_t *u, unsigned r)
{
    unsigned i;
    for (i = 0; i < u->n; i++)
        if (i != r && unmap_extend(u, r, u->run[i].at, u->run[i].len)) {
            u->run[i] = u->run[--u->n];
            return;
        }
}

void khl_i_unmap_add(khl_pool_t *p, khl_pool_unmap_t *u, void *raw, size_t raw_size)
{
    unsigned i;
    if (p->backing.fn) {
        khl_i_frame_free(p, raw, raw_size);
        return;
    }
    for (i = 0; i < u->n; i++)
        if (unmap_extend(u, i, (char *)raw, raw_size)) {
            unmap_join(u, i);
            return;
        }
    if (u->n == KHL_I_UNMAP_RUNS)
        khl_i_unmap_flush(p, u);
    u->run[u->n].at = (char *)raw;
    u->run[u->n].len = raw_size;
    u->n++;
}

/* ------------------------------------------------------------------------ */
/* The chunk index: which aligned frames are ours.  Only owns, checked mode   */
/* and frame setup use it; free finds its chunk by masking alone.           */

static inline size_t index_slot(uintptr_t key, size_t cap)
{
    return (size_t)(((uint64_t)key * 0x9e3779b97f4a7c15ULL) >> 20) & (cap - 1);
}

int khl_i_index_has(const khl_pool_t *p, uintptr_t key)
{
    size_t i;
    if (!p->index)
        return 0;
    for (i = index_slot(key, p->index_cap); p->index[i]; i = (i + 1) & (p->index_cap - 1))
        if (p->index[i] == key)
            return 1;
    return 0;
}

static void index_put(uintptr_t *t, size_t cap, uintptr_t key)
{
    size_t i = index_slot(key, cap);
    while (t[i])
        i = (i + 1) & (cap - 1);
    t[i] = key;
}

/* Room for n more keys, so that inserting them once their frames are set
 * up cannot fail.  Kept at most half full. */
int khl_i_index_make_room(khl_pool_t *p, size_t n)
{
    size_t cap = p->index_cap ? p->index_cap * 2 : 16, i;
    uintptr_t *t;
    if (n > SIZE_MAX / (4 * sizeof *t) - p->index_n)
        return -1;
    if (2 * (p->index_n + n) <= p->index_cap)
        return 0;
    while (cap < 2 * (p->index_n + n))
        cap *= 2;
    t = (uintptr_t *)meta_alloc(p->meta, cap * sizeof *t);
    if (!t)
        return -1;
    memset(t, 0, cap * sizeof *t);
    for (i = 0; i < p->index_cap; i++)
        if (p->index[i])
            index_put(t, cap, p->index[i]);
    meta_free(p->meta, p->index, p->index_cap * sizeof *t);
    p->meta_bytes += (cap - p->index_cap) * sizeof *t;
    p->index = t;
    p->index_cap = cap;
    return 0;
}

/* Adds a frame's address; the index must have room (khl_i_index_make_room). */
void khl_i_index_add(khl_pool_t *p, uintptr_t key)
{
    index_put(p->index, p->index_cap, key);
    p->index_n++;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void index_del(khl_pool_t *p, uintptr_t key)
{
    size_t mask = p->index_cap - 1, i = index_slot(key, p->index_cap), j;
    while (p->index[i] != key)
        i = (i + 1) & mask;
    for (j = (i + 1) & mask; p->index[j]; j = (j + 1) & mask) {
        size_t home = index_slot(p->index[j], p->index_cap);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            p->index[i] = p->index[j];
            i = j;
        }
    }
    p->index[i] = 0;
    p->index_n--;
}

/* ------------------------------------------------------------------------ */
/* Frames                                                                    */

/* A frame of the given kind with its header filled in, not yet indexed nor
 * counted: until khl_i_frame_adopt, khl_i_frame_free drops it without a
 * trace, so a call that fails later leaves the pool as it was.  Its first
 * `faulted` bytes are pre-faulted before the header is written, or the
 * header's write would trap for the page on its own (12 us of a 22 us
 * chunk take, measured). */
khl_pool_chunk_t *khl_i_frame_take(khl_pool_t *p, size_t bytes, uint32_t kind, size_t faulted)
{
    void *raw;
    size_t raw_size;
    khl_pool_chunk_t *k = (khl_pool_chunk_t *)(void *)frame_alloc(p, bytes, &raw, &raw_size);
    if (!k)
        return NULL;
    if (khl_i_pages_prefault(p, (char *)k, (char *)k + faulted) < 0) {
        khl_i_frame_drop(p, raw, raw_size);
        return NULL;
    }
    k->kind = kind;
    k->raw = raw;
    k->raw_size = raw_size;
    k->prev = k->next = k->fresh_next = NULL;
    return k;
}

/* Makes a taken frame the pool's; the index must have room
 * (khl_i_index_make_room). */
void khl_i_frame_adopt(khl_pool_t *p, khl_pool_chunk_t *k)
{
    khl_i_index_add(p, (uintptr_t)k);
    p->system += k->raw_size;
}

void khl_i_index_remove(khl_pool_t *p, uintptr_t key)
{
    index_del(p, key);
}

/* A frame of the given kind, indexed and counted (faulted: as for
 * khl_i_frame_take).  The frame comes before the index's room: a grown
 * index is no use to a call that fails. */
khl_pool_chunk_t *khl_i_frame_new(khl_pool_t *p, size_t bytes, uint32_t kind, size_t faulted)
{
    khl_pool_chunk_t *k;
    if (!within_limit(p, khl_i_frame_cost(p, bytes)) || !(k = khl_i_frame_take(p, bytes, kind, faulted)))
        return NULL;
    if (khl_i_index_make_room(p, 1) < 0) {
        khl_i_frame_drop(p, k->raw, k->raw_size);
        return NULL;
    }
    khl_i_frame_adopt(p, k);
    return k;
}

void khl_i_frame_release(khl_pool_t *p, khl_pool_chunk_t *k, khl_pool_unmap_t *u)
{
    index_del(p, (uintptr_t)k);
    p->system -= k->raw_size;
    khl_i_unmap_add(p, u, k->raw, k->raw_size);
}

/* A mapped frame (no backing) resized to raw_size bytes with its pages
 * moved, not copied: in place when the address space after it is free and
 * the frame starts as a frame of raw_size must (frame_align), else into a
 * fresh reservation so aligned.  A frame that grows to span a huge page is
 * advised then (huge_pages; a mapping keeps its advice when it moves).
 * Returns its header where it now is, or NULL with the frame untouched.
 * Counts nothing. */
khl_pool_chunk_t *khl_i_frame_remap(khl_pool_t *p, khl_pool_chunk_t *k, size_t raw_size)
{
#ifdef MREMAP_FIXED
    size_t align = frame_align(p, raw_size), map, old = k->raw_size;
    char *m, *a;
    void *r;
    if ((uintptr_t)k->raw % align == 0) {
        p->sys_calls++;
        if (mremap(k->raw, old, raw_size, 0) != MAP_FAILED) {
            k->raw_size = raw_size;
            if (!khl_i_frame_is_huge(p, old))
                advise_huge(p, (char *)k->raw, raw_size);
            return k;
        }
    }
    if (raw_size > SIZE_MAX - align)
        return NULL;
    map = raw_size + align - p->page;
    p->sys_calls++;
    m = (char *)mmap(NULL, map, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    a = (char *)align_up((uintptr_t)m, align);
    p->sys_calls++;
    r = mremap(k->raw, k->raw_size, raw_size, MREMAP_MAYMOVE | MREMAP_FIXED, a);
    if (r == MAP_FAILED) {
        p->sys_calls++;
        munmap(m, map);
        return NULL;
    }
    trim_slack(p, m, map, a, raw_size);
    if (!khl_i_frame_is_huge(p, old))
        advise_huge(p, a, raw_size);
    k = (khl_pool_chunk_t *)(void *)a;
    k->raw = a;
    k->raw_size = raw_size;
    return k;
#else
    (void)p, (void)k, (void)raw_size;
    return NULL;
#endif
}

/* Gives back a mapped frame's pages from raw_size (a multiple of the page)
 * on; counts nothing. */
void khl_i_frame_cut(khl_pool_t *p, khl_pool_chunk_t *k, size_t raw_size)
{
    p->sys_calls++;
    munmap((char *)k->raw + raw_size, k->raw_size - raw_size);
}
