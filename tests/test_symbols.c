/* test_symbols.c: libkhashlite.a exports only khl_-prefixed symbols, so it
 * links into an interpreter that carries its own xxHash or khash without a
 * clash.  Reads the archive beside the suite's build directory with nm. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "support.h"

Test(symbols, library_exports_only_khl_names)
{
    char lib[4096], cmd[4096 + 64], line[512];
    test_build_path(lib, sizeof lib, "libkhashlite.a");
    snprintf(cmd, sizeof cmd, "nm -g --defined-only '%s'", lib);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    int exported = 0;
    while (fgets(line, sizeof line, p)) {
        char addr[64], type[8], name[256];
        if (sscanf(line, "%63s %7s %255s", addr, type, name) != 3)
            continue;                      /* "file.o:" headers and blank lines */
        exported++;
        /* AddressSanitizer adds an __odr_asan.NAME twin of each global. */
        const char *bare = strncmp(name, "__odr_asan.", 11) ? name : name + 11;
        /* i386's position-independent code loads its address through
         * gcc's __x86.get_pc_thunk.REG: hidden, one copy per link (a COMDAT
         * group), in the implementation's own namespace. */
        if (!strncmp(name, "__x86.get_pc_thunk.", 19))
            continue;
        cr_expect(strncmp(bare, "khl_", 4) == 0, "exported symbol %s lacks the khl_ prefix", name);
    }
    cr_assert_eq(pclose(p), 0, "%s failed", cmd);
    cr_assert_gt(exported, 5, "nm listed %d symbols: the archive was not read", exported);
}
