/* check_alloc.c: the counting, checking, failing allocator (check_alloc.h). */
#include "check_alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The size a caller of the unsized calls does not see: the header keeping
 * the block's size, as large as the strictest alignment. */
typedef union check_hdr { size_t n; max_align_t align; } check_hdr_t;

static void report(const check_alloc_t *c, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->report) {
        c->report(msg);
        return;
    }
    fprintf(stderr, "check_alloc: %s\n", msg);
    abort();
}

/* The memory itself. */
static void *raw(const check_alloc_t *c, void *ptr, size_t osize, size_t nsize)
{
    return c->inner->fn(c->inner->ud, ptr, osize, nsize);
}

/* Where p is in the registry (CHECK_SIZES), having checked it is live with
 * size osize; 0 without the registry. */
static size_t find(check_alloc_t *c, const void *p, size_t osize)
{
    size_t i;
    if (!(c->flags & CHECK_SIZES))
        return 0;
    for (i = c->live_blocks; i-- > 0;)     /* recent blocks die first */
        if (c->live[i].p == p)
            break;
    if (i == SIZE_MAX) {
        report(c, "free of %p, which this allocator does not hold", (void *)p);
        return 0;
    }
    if (c->live[i].n != osize)
        report(c, "free of %p with osize %zu, allocated as %zu", (void *)p, osize, c->live[i].n);
    return i;
}

static void drop(check_alloc_t *c, size_t i, size_t osize)
{
    if (c->flags & CHECK_SIZES)
        c->live[i] = c->live[c->live_blocks - 1];
    c->live_blocks--;
    c->live_bytes -= osize;
    c->frees++;
}

/* Records a new block; 0, or -1 when the registry cannot grow. */
static int add(check_alloc_t *c, void *p, size_t n)
{
    if (c->flags & CHECK_SIZES) {
        if (c->live_blocks == c->cap_live) {
            size_t cap = c->cap_live ? c->cap_live * 2 : 64;
            check_block_t *l = realloc(c->live, cap * sizeof *l);
            if (!l)
                return -1;
            c->live = l;
            c->cap_live = cap;
        }
        c->live[c->live_blocks].p = p;
        c->live[c->live_blocks].n = n;
    }
    c->live_blocks++;
    if (c->live_blocks > c->max_live_blocks)
        c->max_live_blocks = c->live_blocks;
    c->live_bytes += n;
    if (c->live_bytes > c->peak_bytes)
        c->peak_bytes = c->live_bytes;
    c->allocs++;
    c->asked += (double)n;
    return 0;
}

static int must_fail(check_alloc_t *c, size_t osize, size_t nsize)
{
    c->attempts++;
    if (c->fail_at && (c->attempts == c->fail_at || (c->fail_after && c->attempts > c->fail_at)))
        return 1;
    if (c->limit_bytes && c->live_bytes - osize + nsize > c->limit_bytes)
        return 1;
    return c->fail_if && c->fail_if(c->fail_ctx, nsize);
}

/* One call of the hook; hdr bytes more than the caller's sizes are really
 * held (the unsized calls' header), uncounted. */
static void *step(check_alloc_t *c, void *ptr, size_t osize, size_t nsize, size_t hdr)
{
    size_t i = ptr ? find(c, ptr, osize) : 0;
    void *q;
    if (nsize == 0) {
        if (ptr) {
            drop(c, i, osize);
            if (c->flags & CHECK_POISON)
                memset(ptr, 0xDD, osize + hdr);   /* use after free reads garbage */
            raw(c, ptr, osize + hdr, 0);
        }
        return NULL;
    }
    if (ptr && (c->flags & CHECK_NO_RESIZE))
        report(c, "resize of %p (%zu to %zu bytes), which this caller never does", ptr, osize, nsize);
    if (must_fail(c, ptr ? osize : 0, nsize) || nsize > SIZE_MAX - hdr)
        return NULL;
    if (!(c->flags & CHECK_POISON)) {
        q = raw(c, ptr, ptr ? osize + hdr : 0, nsize + hdr);
    } else if ((q = raw(c, NULL, 0, nsize + hdr)) != NULL) {
        memset(q, 0xA5, nsize + hdr);             /* nothing may rely on zeroed memory */
        if (ptr)
            memcpy(q, ptr, (osize < nsize ? osize : nsize) + hdr);
    }
    if (!q)
        return NULL;
    if (ptr) {
        drop(c, i, osize);
        if (c->flags & CHECK_POISON) {
            memset(ptr, 0xDD, osize + hdr);
            raw(c, ptr, osize + hdr, 0);
        }
    }
    if (add(c, q, nsize) < 0)
        report(c, "no memory for the registry of live blocks");
    return q;
}

void *check_allocf(void *ud, void *ptr, size_t osize, size_t nsize)
{
    return step(ud, ptr, osize, nsize, 0);
}

void check_alloc_init(check_alloc_t *c, const khl_allocator_t *inner, unsigned flags)
{
    memset(c, 0, sizeof *c);
    c->a.fn = check_allocf;
    c->a.ud = c;
    c->inner = inner ? inner : &khl_libc_allocator;
    c->flags = flags;
    /* A poisoning resize is an allocation and a copy; otherwise inner resizes. */
    c->a.resizes = !(flags & CHECK_NO_RESIZE) && ((flags & CHECK_POISON) || c->inner->resizes);
}

void check_alloc_fini(check_alloc_t *c)
{
    if (c->live_blocks || c->live_bytes)
        report(c, "%zu blocks (%zu bytes) leaked", c->live_blocks, c->live_bytes);
    free(c->live);
    c->live = NULL;
    c->cap_live = 0;
}

void *check_alloc_unsized(check_alloc_t *c, size_t n)
{
    check_hdr_t *h = step(c, NULL, 0, n, sizeof *h);
    if (!h)
        return NULL;
    h->n = n;
    return h + 1;
}

void *check_realloc_unsized(check_alloc_t *c, void *p, size_t n)
{
    check_hdr_t *h, *q;
    if (!p)
        return check_alloc_unsized(c, n);
    h = (check_hdr_t *)p - 1;
    if (!(q = step(c, h, h->n, n, sizeof *h)))
        return NULL;
    q->n = n;
    return q + 1;
}

void check_free_unsized(check_alloc_t *c, void *p)
{
    if (p) {
        check_hdr_t *h = (check_hdr_t *)p - 1;
        step(c, h, h->n, 0, sizeof *h);
    }
}
