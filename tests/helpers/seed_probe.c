/* seed_probe.c: prints khl_hash_str("x") under the default seed, so a test
 * can check that two processes get different seeds. */
#include <inttypes.h>
#include <stdio.h>

#include "khashlite/khashlite.h"

int main(void)
{
    printf("%016" PRIx64 "\n", khl_hash_str("x"));
    return 0;
}
