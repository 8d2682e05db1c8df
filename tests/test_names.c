/* test_names.c: a table may have any name.  The names a KHL_INIT generates
 * (khl_<op>_<name>) must not be another identifier of the library for some
 * name: `key` made khl_del_<name> the macro khl_del_key, `t` made
 * khl_cursor_<name> the type khl_cursor_t, and `next`, `start`, `step`,
 * `keys`, `buckets`, `after`, `align` hit internal helpers.  Tables of those
 * names, used through every generated operation; and a scan of the
 * library's sources (run from the repository root, as `make test` does)
 * for any identifier that begins with a generated prefix. */
#define _POSIX_C_SOURCE 200809L
/* A 32-bit readdir gives up (EOVERFLOW) at the first 64-bit inode number. */
#define _FILE_OFFSET_BITS 64
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "khashlite/khashlite.h"
#include "support.h"

#define NAMES_TABLE(name) KHL_INIT(name, uint32_t, uint32_t, 1, khl_hash_u32, khl_eq_int)
NAMES_TABLE(t)
NAMES_TABLE(key)
NAMES_TABLE(keys)
NAMES_TABLE(next)
NAMES_TABLE(start)
NAMES_TABLE(step)
NAMES_TABLE(buckets)
NAMES_TABLE(after)
NAMES_TABLE(align)

/* 100 keys (a table of more than one group), each operation once at least;
 * the expected figures are counted here, not read back from the table. */
#define NAMES_LIFE(name)                                                            \
    {                                                                               \
        khl_t(name) h, c;                                                           \
        khl_cursor_t cur;                                                           \
        uint32_t seen = 0, sum = 0;                                                 \
        int ret;                                                                    \
        khl_init(name, &h, NULL);                                                   \
        khl_init(name, &c, NULL);                                                   \
        for (uint32_t i = 0; i < 100; ++i) {                                        \
            khl_iter_t k = khl_put(name, &h, i * 7u, &ret);                         \
            cr_assert_eq(ret, 1, #name ": put %u", i);                              \
            khl_val(name, &h, k) = i;                                               \
        }                                                                           \
        cr_assert_eq(khl_reserve(name, &h, 200), 0, #name ": reserve");             \
        for (uint32_t i = 0; i < 100; ++i) {                                        \
            cr_assert_eq(*khl_getp(name, &h, i * 7u), i, #name ": getp %u", i);     \
            cr_assert(khl_exist(name, &h, khl_get(name, &h, i * 7u)), #name ": get"); \
        }                                                                           \
        cur = khl_cursor(name, &h);                                                 \
        while (khl_cursor_next(name, &h, &cur)) {                                   \
            seen++;                                                                 \
            sum += khl_val(name, &h, cur.k);                                        \
        }                                                                           \
        cr_assert_eq(seen, 100u, #name ": cursor saw %u keys", seen);               \
        cr_assert_eq(sum, 99u * 100u / 2u, #name ": cursor's values");              \
        khl_del(name, &h, khl_get(name, &h, 0u));                                   \
        cr_assert_eq(khl_del_key(name, &h, 7u), 1, #name ": del_key");              \
        cr_assert_eq(khl_get(name, &h, 0u), khl_end(name, &h), #name ": del");      \
        cr_assert_eq(khl_copy(name, &c, &h), 0, #name ": copy");                    \
        cr_assert_eq(khl_size(name, &c), 98u, #name ": copy's size");               \
        cr_assert_eq(khl_shrink(name, &h), 0, #name ": shrink");                    \
        cr_assert_eq(khl_check(name, &h), 0, #name ": check");                      \
        khl_clear(name, &h);                                                        \
        cr_assert_eq(khl_size(name, &h), 0u, #name ": clear");                      \
        khl_destroy(name, &h);                                                      \
        khl_destroy(name, &c);                                                      \
    }

Test(names, tables_named_like_library_identifiers)
{
    NAMES_LIFE(t)
    NAMES_LIFE(key)
    NAMES_LIFE(keys)
    NAMES_LIFE(next)
    NAMES_LIFE(start)
    NAMES_LIFE(step)
    NAMES_LIFE(buckets)
    NAMES_LIFE(after)
    NAMES_LIFE(align)
}

/* The library's identifiers: generated prefixes (khl_..._ followed by
 * ##name) and whole names, from every file of khashlite/. */
#define NAMES_MAX 4096
typedef struct names {
    char *gen[NAMES_MAX], *ids[NAMES_MAX];
    int ngen, nids;
} names_t;

static int names_has(char *const *v, int n, const char *s)
{
    for (int i = 0; i < n; ++i)
        if (strcmp(v[i], s) == 0)
            return 1;
    return 0;
}

static int names_ident_char(int ch)
{
    return ch == '_' || (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static void names_scan(names_t *n, const char *text)
{
    for (const char *p = text; (p = strstr(p, "khl_")) != NULL;) {
        const char *e = p;
        if (p > text && names_ident_char((unsigned char)p[-1])) {
            p += 4;                        /* inside another identifier */
            continue;
        }
        while (names_ident_char((unsigned char)*e))
            ++e;
        size_t len = (size_t)(e - p);
        char *word = strndup(p, len);
        cr_assert_not_null(word);
        int generated = strncmp(e, "##name", 6) == 0;
        if (generated && !names_has(n->gen, n->ngen, word)) {
            cr_assert_lt(n->ngen, NAMES_MAX);
            n->gen[n->ngen++] = word;
        } else if (!generated && word[len - 1] != '_' && !names_has(n->ids, n->nids, word)) {
            /* A word ending in '_' is prose about a generated name
             * ("khl_put_<name>"), not an identifier. */
            cr_assert_lt(n->nids, NAMES_MAX);
            n->ids[n->nids++] = word;
        } else {
            free(word);
        }
        p = e;
    }
}

Test(names, no_library_identifier_begins_with_a_generated_prefix)
{
    static names_t n;
    DIR *d = opendir("khashlite");
    cr_assert_not_null(d, "no khashlite/ here: run from the repository root");
    int files = 0;
    for (struct dirent *ent; (ent = readdir(d)) != NULL;) {
        size_t len = strlen(ent->d_name);
        if (len < 3 || (strcmp(ent->d_name + len - 2, ".h") && strcmp(ent->d_name + len - 2, ".c")))
            continue;
        char path[512];
        snprintf(path, sizeof path, "khashlite/%s", ent->d_name);
        static char text[1 << 20];
        test_slurp(path, text, sizeof text);
        cr_assert_gt(strlen(text), 0, "%s is empty", path);
        names_scan(&n, text);
        files++;
    }
    closedir(d);
    cr_assert_gt(files, 5, "read %d files", files);
    /* The scan found what it must: a sanity check on the scanner. */
    cr_assert(names_has(n.gen, n.ngen, "khl_put_"), "khl_put_##name not found");
    cr_assert(names_has(n.ids, n.nids, "khl_cursor_t"), "khl_cursor_t not found");
    for (int g = 0; g < n.ngen; ++g)
        for (int i = 0; i < n.nids; ++i)
            cr_expect(strncmp(n.ids[i], n.gen[g], strlen(n.gen[g])) != 0,
                      "a table named \"%s\" would make %s##name the library's %s",
                      n.ids[i] + strlen(n.gen[g]), n.gen[g], n.ids[i]);
    for (int i = 0; i < n.ngen; ++i)
        free(n.gen[i]);
    for (int i = 0; i < n.nids; ++i)
        free(n.ids[i]);
}
