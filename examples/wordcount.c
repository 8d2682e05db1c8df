/* wordcount.c: the README's longer example.  Counts the words of stdin in a
 * khashlite string map and prints those seen more than once.  Build it with
 *   cc wordcount.c $(pkg-config --cflags --libs khashlite)
 * or, from the repository, with `make examples`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <khashlite/khashlite.h>

KHL_MAP_INIT_STR(words, unsigned)

int main(void)
{
    khl_t(words) counts;
    khl_init(words, &counts, NULL);          /* libc allocator; allocates nothing yet */
    char buf[256];
    while (scanf("%255s", buf) == 1) {
        int ret;
        khl_iter_t k = khl_put(words, &counts, buf, &ret);
        if (ret < 0) {                       /* out of memory: the table is unchanged */
            fputs("out of memory\n", stderr);
            break;
        }
        if (ret == 1) {                      /* new key: store a copy the table can point at */
            size_t len = strlen(buf) + 1;
            char *copy = malloc(len);
            if (!copy) {
                khl_del(words, &counts, k);
                break;
            }
            khl_key(words, &counts, k) = memcpy(copy, buf, len);
            khl_val(words, &counts, k) = 0;
        }
        khl_val(words, &counts, k)++;
    }
    const char *w;
    unsigned n;
    khl_foreach(words, &counts, w, n, {
        if (n > 1)
            printf("%u %s\n", n, w);
    });
    khl_foreach_key(words, &counts, w, free((void *)w));
    khl_destroy(words, &counts);
    return 0;
}
