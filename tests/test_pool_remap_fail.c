/* test_pool_remap_fail.c: a huge block's move the kernel refuses.  A huge
 * block (above large_max) of a mapped pool grows by mremap, in place or
 * into a fresh reservation aligned for it; when the kernel refuses, the
 * reservation goes back and realloc copies the block instead, or, when the
 * copy's block is not to be had either, fails with the block and the pool
 * as they were.  The refusal is this binary's own mremap, which every other
 * call passes to the kernel: the suite is linked statically with the
 * library, so the pool's calls come here. */
#define _GNU_SOURCE 1
#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "support.h"

#ifdef MREMAP_FIXED

static volatile int refuse_mremap;
static volatile unsigned long refused, refused_fixed;

/* The kernel's mremap, but refused (ENOMEM) while a test says so. */
void *mremap(void *old, size_t old_size, size_t new_size, int flags, ...)
{
    void *to = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        to = va_arg(ap, void *);
        va_end(ap);
    }
    if (refuse_mremap) {
        refused++;
        refused_fixed += (flags & MREMAP_FIXED) != 0;
        errno = ENOMEM;
        return MAP_FAILED;
    }
    return (void *)syscall(SYS_mremap, old, old_size, new_size, flags, to);
}

#define MiB ((size_t)1 << 20)

/* Address space this process holds reserved and inaccessible (mappings
 * "---p" in /proc/self/maps): where an aligned reservation would stay if a
 * refused move did not give it back. */
static size_t reserved_bytes(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    size_t total = 0;
    cr_assert_not_null(f);
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[5];
        if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && !strcmp(perms, "---p"))
            total += hi - lo;
    }
    fclose(f);
    return total;
}

static khl_pool_t *pool_limited(size_t limit)
{
    khl_pool_options_t o;
    memset(&o, 0, sizeof o);
    o.limit_bytes = limit;
    khl_pool_t *p = khl_pool_new(&o);
    cr_assert_not_null(p);
    return p;
}

/* Both moves refused (in place, then into the aligned reservation, which
 * goes back): the block is copied, whole, and the pool counts it exactly. */
Test(pool_remap_fail, a_refused_move_falls_back_to_a_copy)
{
    khl_pool_t *p = pool_limited(0);
    const size_t n = 6 * MiB, grown = 24 * MiB;
    char *b = khl_pool_alloc(p, n);
    cr_assert_not_null(b);
    test_mark(b, n, 3);
    refused = refused_fixed = 0;
    refuse_mremap = 1;
    char *c = khl_pool_realloc(p, b, n, grown);
    refuse_mremap = 0;
    cr_assert_not_null(c, "the copy failed");
    cr_assert_eq(refused_fixed, 1, "the move into a reservation was not tried (%lu refused)", refused);
    cr_assert(test_marked(c, n, 3), "the copy lost bytes");
    cr_assert_eq(test_pool_stats(p).in_use_bytes, grown);
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_free(p, c, grown);
    khl_pool_destroy(p);
}

/* The move refused and no room under limit_bytes for the copy (the growth
 * alone fits, the old block and the new together do not): NULL, with the
 * block and the pool as they were. */
Test(pool_remap_fail, a_refused_move_without_room_for_a_copy_fails_cleanly)
{
    khl_pool_t *p = pool_limited(26 * MiB);
    const size_t n = 6 * MiB, grown = 24 * MiB;
    char *b = khl_pool_alloc(p, n);
    cr_assert_not_null(b);
    test_mark(b, n, 3);
    khl_pool_stats_t before = test_pool_stats(p);
    size_t reserved = reserved_bytes();
    refused = refused_fixed = 0;
    refuse_mremap = 1;
    void *c = khl_pool_realloc(p, b, n, grown);
    refuse_mremap = 0;
    cr_assert_null(c);
    cr_assert_eq(refused_fixed, 1, "the move into a reservation was not tried (%lu refused)", refused);
    cr_assert_eq(reserved_bytes(), reserved, "the reservation for the move stayed");
    test_assert_pool_unchanged(&before, p, "the refused move's realloc");
    cr_assert(test_marked(b, n, 3), "the block lost bytes");
    cr_assert_eq(khl_pool_check(p), 0);
    /* The kernel willing again, the same call moves the pages. */
    c = khl_pool_realloc(p, b, n, grown);
    cr_assert_not_null(c);
    cr_assert(test_marked(c, n, 3));
    cr_assert_eq(khl_pool_check(p), 0);
    khl_pool_free(p, c, grown);
    khl_pool_destroy(p);
}

#endif /* MREMAP_FIXED */
