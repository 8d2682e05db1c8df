/* Compiles only when KHL_MAX_LOAD (given with -D) is a sane load factor. */
#include "khashlite/khashlite.h"
KHL_MAP_INIT_INT(m, int)
int main(void)
{
    khl_t(m) h = {0, 0};
    khl_put(m, &h, 1, NULL);
    khl_destroy(m, &h);
    return 0;
}
