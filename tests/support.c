/* support.c: the suites' allocator setup, where the build directory is, a
 * file's contents, marks in a block's pages, what a validator says on
 * stderr, and the probe walk (support.h). */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void fail_test(const char *msg)
{
    cr_assert_fail("%s", msg);
}

void test_check_init(check_alloc_t *c, unsigned flags)
{
    check_alloc_init(c, NULL, flags);
    c->report = fail_test;
}

void test_alloc_init(test_alloc_t *t)
{
    test_check_init(t, CHECK_SIZES | CHECK_POISON);
}

void test_alloc_fini(test_alloc_t *t)
{
    check_alloc_fini(t);
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

void test_slurp(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot read %s", path);
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = 0;
    cr_assert(feof(f), "%s is larger than %zu bytes", path, size - 1);
    fclose(f);
}

void test_mark(void *b, size_t n, unsigned id)
{
    size_t i;
    for (i = 0; i < n - 1; i += 4096)
        ((unsigned char *)b)[i] = (unsigned char)(id + i / 4096);
    ((unsigned char *)b)[n - 1] = (unsigned char)~id;
}

int test_prefix_marked(const void *b, size_t upto, unsigned id)
{
    size_t i;
    for (i = 0; i < upto; i += 4096)
        if (((const unsigned char *)b)[i] != (unsigned char)(id + i / 4096))
            return 0;
    return 1;
}

int test_marked(const void *b, size_t n, unsigned id)
{
    return test_prefix_marked(b, n - 1, id) && ((const unsigned char *)b)[n - 1] == (unsigned char)~id;
}

int test_capture_stderr(int (*fn)(const void *), const void *arg, char *said, size_t size)
{
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    int saved = dup(2);
    cr_assert_geq(saved, 0);
    fflush(stderr);
    cr_assert_geq(dup2(fileno(f), 2), 0);
    int r = fn(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(f);
    size_t n = fread(said, 1, size - 1, f);
    said[n] = 0;
    fclose(f);
    return r;
}

uint32_t test_home_group(const khl_block_t *b, uint64_t hash)
{
    uint32_t groups = b->n_buckets > KHL_GROUP_WIDTH ? b->n_buckets / KHL_GROUP_WIDTH : 1, bits = 0;
    while ((1u << bits) < groups)
        ++bits;
    /* The group bits: the log2(groups) bits just below the tag. */
    return (uint32_t)(hash >> (KHL_I_TAG_SHIFT - bits)) & (groups - 1);
}

uint32_t test_probe_groups(const khl_block_t *b, uint64_t hash, uint32_t target)
{
    const unsigned W = KHL_GROUP_WIDTH;
    const unsigned char *ctrl = (const unsigned char *)(b + 1);
    uint32_t nb = b->n_buckets, groups = nb > W ? nb / W : 1;
    uint32_t g = test_home_group(b, hash), step = 0, n = 1;
    for (;;) {
        if (target != UINT32_MAX) {
            if (target / W == g)
                return n;
        } else {
            /* A miss ends at a group without its class's overflow bit (the
             * low 3 bits of the tag, the hash's top byte folded), or in a
             * one-group table's only group. */
            if (nb <= W || !(ctrl[nb + g] & khl_ovf_bit(khl_tag_large(hash))))
                return n;
        }
        g = (g + ++step) & (groups - 1);
        if (++n > groups + 1)
            return n;
    }
}

khl_pool_stats_t test_pool_stats(const khl_pool_t *p)
{
    khl_pool_stats_t s;
    khl_pool_stats(p, &s);
    return s;
}

void test_assert_pool_unchanged(const khl_pool_stats_t *was, const khl_pool_t *p, const char *what)
{
    khl_pool_stats_t s = test_pool_stats(p);
    cr_assert_eq(s.in_use_bytes, was->in_use_bytes, "%s: in_use_bytes %zu -> %zu", what, was->in_use_bytes, s.in_use_bytes);
    cr_assert_eq(s.peak_bytes, was->peak_bytes, "%s: peak_bytes %zu -> %zu", what, was->peak_bytes, s.peak_bytes);
    cr_assert_eq(s.system_bytes, was->system_bytes, "%s: system_bytes %zu -> %zu", what, was->system_bytes, s.system_bytes);
    cr_assert_eq(s.allocs, was->allocs, "%s: allocs moved", what);
    cr_assert_eq(s.frees, was->frees, "%s: frees moved", what);
    cr_assert_eq(s.meta_bytes, was->meta_bytes, "%s: meta_bytes %zu -> %zu", what, was->meta_bytes, s.meta_bytes);
    cr_assert_eq(s.chunks, was->chunks, "%s: chunks %zu -> %zu", what, was->chunks, s.chunks);
    cr_assert_eq(s.large_blocks, was->large_blocks, "%s: large_blocks %zu -> %zu", what, was->large_blocks, s.large_blocks);
    cr_assert_eq(s.retained_bytes, was->retained_bytes, "%s: retained_bytes %zu -> %zu", what, was->retained_bytes, s.retained_bytes);
}
