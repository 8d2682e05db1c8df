/* Must not compile: the key+value walk on a set. */
#include "khashlite/khashlite.h"
KHL_SET_INIT_INT(s)
int main(void)
{
    khl_t(s) h = {0, 0};
    uint32_t k;
    char v;
    khl_foreach(s, &h, k, v, (void)k; (void)v;);
    return 0;
}
