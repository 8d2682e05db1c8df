/* support.c: the counting, checking, failing test allocator, and where the
 * build directory is. */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void forget(test_alloc_t *t, void *p, size_t osize)
{
    size_t i;
    for (i = 0; i < t->n_live; ++i)
        if (t->live[i].p == p)
            break;
    cr_assert(i < t->n_live, "free of %p, which this allocator does not hold", p);
    cr_assert_eq(t->live[i].n, osize, "free of %p with osize %zu, allocated as %zu",
                 p, osize, t->live[i].n);
    t->live[i] = t->live[--t->n_live];
    t->live_bytes -= osize;
}

static void remember(test_alloc_t *t, void *p, size_t n)
{
    if (t->n_live == t->cap_live) {
        t->cap_live = t->cap_live ? t->cap_live * 2 : 16;
        t->live = realloc(t->live, t->cap_live * sizeof *t->live);
        cr_assert(t->live != NULL);
    }
    t->live[t->n_live].p = p;
    t->live[t->n_live].n = n;
    t->n_live++;
    t->live_bytes += n;
    if (t->n_live > t->max_live_blocks)
        t->max_live_blocks = t->n_live;
}

static void *test_allocf(void *ud, void *ptr, size_t osize, size_t nsize)
{
    test_alloc_t *t = ud;
    void *q;
    if (nsize == 0) {
        if (ptr) {
            forget(t, ptr, osize);
            memset(ptr, 0xDD, osize);   /* use after free reads garbage */
            free(ptr);
            t->frees++;
        }
        return NULL;
    }
    t->attempts++;
    if (t->fail_at && (t->attempts == t->fail_at || (t->fail_after && t->attempts > t->fail_at)))
        return NULL;
    q = malloc(nsize);
    if (!q)
        return NULL;
    memset(q, 0xA5, nsize);             /* nothing may rely on zeroed memory */
    if (ptr) {
        memcpy(q, ptr, osize < nsize ? osize : nsize);
        forget(t, ptr, osize);
        memset(ptr, 0xDD, osize);
        free(ptr);
        t->frees++;
    }
    remember(t, q, nsize);
    t->allocs++;
    return q;
}

void test_alloc_init(test_alloc_t *t)
{
    memset(t, 0, sizeof *t);
    t->a.fn = test_allocf;
    t->a.ud = t;
}

void test_alloc_fini(test_alloc_t *t)
{
    cr_assert_eq(t->n_live, 0, "%zu blocks leaked", t->n_live);
    cr_assert_eq(t->live_bytes, 0);
    free(t->live);
    t->live = NULL;
}

void test_build_path(char *buf, size_t size, const char *rel)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    cr_assert_gt(n, 0, "cannot read /proc/self/exe");
    self[n] = 0;
    for (int up = 0; up < 2; ++up) {        /* drop "/khl-tests", then "/tests" */
        char *slash = strrchr(self, '/');
        cr_assert_not_null(slash);
        *slash = 0;
    }
    int len = snprintf(buf, size, "%s/%s", self, rel);
    cr_assert(len > 0 && (size_t)len < size, "build path too long");
}
