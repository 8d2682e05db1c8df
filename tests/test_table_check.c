/* test_table_check.c: khl_check, the table's validator.  Tables corrupted
 * on purpose through the block (white box: what a stray write into it would
 * leave) fail it with the message of the invariant that broke; the healthy
 * tables they start from pass it.  Also the probe helper's miss rule
 * (support.c), which the suites' probe-length tests rely on, against a
 * table whose overflow bits are known. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "khashlite/khashlite.h"
#include "support.h"

/* u64 keys to u32 values: a first block of 4 buckets, scanned. */
KHL_MAP_INIT_INT64(m64, uint32_t)

/* A hash that crowds every key into one home group with a tag of its own:
 * the key (below 256) is the top byte, the group bits under it are 0.
 * Declared mixed, so the table takes it as it is. */
static uint64_t crowd_hash(uint32_t k)
{
    return (uint64_t)k << 56;
}
#define KHL_HASH_MIXED_crowd_hash 1
KHL_INIT(crowd, uint32_t, uint32_t, 1, crowd_hash, khl_eq_int)

static int check_m64(const void *h)
{
    return khl_check(m64, (const khl_t(m64) *)h);
}

static int check_crowd(const void *h)
{
    return khl_check(crowd, (const khl_t(crowd) *)h);
}

/* Asserts the check fails and names `needle` on stderr. */
static void assert_says(int (*check)(const void *), const void *h, const char *needle)
{
    char said[1024];
    int r = test_capture_stderr(check, h, said, sizeof said);
    cr_assert_eq(r, -1, "khl_check passed a corrupted table (it said \"%s\")", said);
    cr_assert(strstr(said, "table invariant broken") && strstr(said, needle),
              "khl_check said \"%s\", expected \"%s\"", said, needle);
}

/* A table of n keys 1..n (values their doubles), checked healthy. */
static void fill(khl_t(m64) *h, uint32_t n)
{
    khl_init(m64, h, NULL);
    for (uint32_t k = 1; k <= n; ++k)
        khl_val(m64, h, khl_put(m64, h, k, NULL)) = 2 * k;
    cr_assert_eq(khl_size(m64, h), n);
    cr_assert_eq(khl_check(m64, h), 0, "the healthy table of %u keys", n);
}

/* The sizes the corruptions below run on: a scanned block (4 buckets), a
 * one-group table matched by tags (8), and a table of many groups. */
static const uint32_t sizes[] = {3, 7, 1000};
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* The premise of the tests below: each size is a layout of its own. */
Test(table_check, the_sizes_are_a_scanned_block_one_group_and_many)
{
    const uint32_t most[NSIZES] = {KHL_SCAN_BUCKETS, KHL_GROUP_WIDTH, UINT32_MAX};
    uint32_t least = 1;
    for (unsigned s = 0; s < NSIZES; ++s) {
        khl_t(m64) h;
        fill(&h, sizes[s]);
        cr_assert(h.b->n_buckets >= least && h.b->n_buckets <= most[s], "%u keys in %u buckets",
                  sizes[s], h.b->n_buckets);
        least = most[s] + 1;
        khl_destroy(m64, &h);
    }
}

static unsigned char *ctrl_of(khl_t(m64) *h)
{
    return khl_ctrlof_m64(h->b);
}

Test(table_check, size_not_the_number_of_keys)
{
    for (unsigned s = 0; s < NSIZES; ++s) {
        khl_t(m64) h;
        fill(&h, sizes[s]);
        h.b->size += 1;
        assert_says(check_m64, &h, "size is not the number of keys (I1)");
        h.b->size -= 1;
        khl_destroy(m64, &h);
    }
}

Test(table_check, a_tag_that_is_not_the_keys)
{
    for (unsigned s = 1; s < NSIZES; ++s) {   /* a scanned block has no tags */
        khl_t(m64) h;
        fill(&h, sizes[s]);
        khl_iter_t i = khl_get(m64, &h, 1);
        cr_assert_neq(i, khl_end(m64, &h));
        ctrl_of(&h)[i] ^= 1;   /* another tag, of a one-group table's 7 bits too */
        assert_says(check_m64, &h, "tag is not the key's");
        ctrl_of(&h)[i] ^= 1;
        khl_destroy(m64, &h);
    }
}

Test(table_check, a_deleted_mark_outside_a_rehash)
{
    for (unsigned s = 0; s < NSIZES; ++s) {
        khl_t(m64) h;
        fill(&h, sizes[s]);
        khl_iter_t i = 0;
        while (khl_exist(m64, &h, i))
            ++i;   /* the first empty bucket: every size leaves one */
        ctrl_of(&h)[i] = KHL_CTRL_DELETED;
        assert_says(check_m64, &h, "control byte neither tag nor empty");
        ctrl_of(&h)[i] = KHL_CTRL_EMPTY;
        khl_destroy(m64, &h);
    }
}

Test(table_check, growth_left_beyond_capacity)
{
    khl_t(m64) h;
    fill(&h, 1000);
    cr_assert_gt(h.b->n_buckets, KHL_GROUP_WIDTH);
    uint32_t was = khl_ext(h.b)->growth_left;
    khl_ext(h.b)->growth_left = h.b->n_buckets;
    assert_says(check_m64, &h, "growth_left does not match capacity (I2)");
    khl_ext(h.b)->growth_left = was;
    khl_destroy(m64, &h);
}

Test(table_check, a_shift_of_another_size)
{
    khl_t(m64) h;
    fill(&h, 1000);
    khl_ext(h.b)->shift += 1;
    assert_says(check_m64, &h, "shift does not match the bucket count");
    khl_ext(h.b)->shift -= 1;
    khl_destroy(m64, &h);
}

/* 17 keys of overflow class 0 (tags 0, 8, .. 128), all at home in group 0:
 * one is pushed past it, which sets bit 0, and only bit 0, of the group's
 * overflow byte. */
static void crowd_fill(khl_t(crowd) *h)
{
    khl_init(crowd, h, NULL);
    for (uint32_t k = 0; k <= 16 * 8; k += 8)
        khl_put(crowd, h, k, NULL);
    cr_assert_eq(khl_size(crowd, h), 17);
    cr_assert_gt(h->b->n_buckets, KHL_GROUP_WIDTH);
    cr_assert_eq(khl_check(crowd, h), 0);
}

Test(table_check, a_key_past_a_group_without_its_overflow_bit)
{
    khl_t(crowd) h;
    crowd_fill(&h);
    unsigned char *ovf = khl_ovf_at(khl_ctrlof_crowd(h.b), h.b->n_buckets);
    cr_assert_eq(ovf[0], 0x01, "group 0's overflow byte");
    ovf[0] = 0;
    assert_says(check_crowd, &h, "lacks its overflow bit (I3)");
    ovf[0] = 0x01;
    khl_destroy(crowd, &h);
}

/* A regression: the helper took a miss's class from the hash's top 7 bits
 * (the tags of before session 26), so its miss walks stopped by other
 * groups' bits than the table's: here a tag-1 miss (class 1) went on past
 * group 0 and a tag-136 miss (class 0) stopped there. */
Test(table_check, the_probe_helper_ends_a_miss_where_the_table_does)
{
    khl_t(crowd) h;
    crowd_fill(&h);
    cr_assert_eq(khl_get(crowd, &h, 1), khl_end(crowd, &h));
    cr_assert_eq(khl_get(crowd, &h, 136), khl_end(crowd, &h));
    cr_assert_eq(test_probe_groups(h.b, TEST_HASH(crowd, &h, 1), UINT32_MAX), 1,
                 "a miss of class 1 ends at home: the group has bit 0 alone");
    cr_assert_gt(test_probe_groups(h.b, TEST_HASH(crowd, &h, 136), UINT32_MAX), 1,
                 "a miss of class 0 goes past the group whose bit 0 is set");
    khl_destroy(crowd, &h);
}
