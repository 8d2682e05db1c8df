/* Must not compile: a set has no values (khl_val on a set). */
#include "khashlite/khashlite.h"
KHL_SET_INIT_INT(s)
int main(void)
{
    khl_t(s) h = {0, 0};
    khl_val(s, &h, khl_put(s, &h, 1, NULL)) = 2;
    return 0;
}
