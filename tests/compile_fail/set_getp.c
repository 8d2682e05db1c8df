/* Must not compile: a set has no values (khl_getp on a set). */
#include "khashlite/khashlite.h"
KHL_SET_INIT_INT(s)
int main(void)
{
    khl_t(s) h = {0, 0};
    khl_put(s, &h, 1, NULL);
    return khl_getp(s, &h, 1) != 0;
}
