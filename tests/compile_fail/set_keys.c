/* Must compile: a set's keys, and the key walk. */
#include "khashlite/khashlite.h"
KHL_SET_INIT_INT(s)
int main(void)
{
    khl_t(s) h = {0, 0};
    uint32_t k, sum = 0;
    khl_put(s, &h, 1, NULL);
    khl_foreach_key(s, &h, k, sum += k);
    khl_destroy(s, &h);
    return (int)sum - 1;
}
