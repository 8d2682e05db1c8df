/* pool_inline.c: a hot allocation loop on khl_pool, with the pool's fast
 * paths inlined into it.  They live in libkhashlite.a, so a compiler can
 * inline them only if it sees their code when it links: build the library
 * with fat LTO objects (machine code too, so it still links without LTO),
 * link with -flto, and ask for the inlining with flatten, since at -O2
 * GCC's size heuristics alone do not inline them:
 *
 *     make CFLAGS='-O2 -flto -ffat-lto-objects'
 *     cc -O2 -flto -I. examples/pool_inline.c build/libkhashlite.a
 *
 * On post 003's FastMM loop (docs/posts.md) this makes the pool 1.4-1.8x
 * faster than mimalloc, against a tie when it is called (docs/pool.md,
 * Speed).
 * Built without LTO the program runs the same, with calls.  Without LTO the
 * same fast paths come inline from a header instead (khl_pool_inline.h):
 *
 *     cc -O2 -DKHL_POOL_INLINE -I. examples/pool_inline.c build/libkhashlite.a
 *
 * It prints a checksum and the pool's counters, which do not depend on the
 * build. */
#include <stdint.h>
#include <stdio.h>

#include <khashlite/khl_pool.h>

typedef struct node {
    struct node *next;
    uint64_t value;
    char payload[32];
} node_t;

enum { ROUNDS = 200, NODES = 10000 };

#if defined(__GNUC__) || defined(__clang__)
#define FLATTEN __attribute__((flatten))
#else
#define FLATTEN
#endif

/* Builds a list of NODES nodes, sums it and frees it, ROUNDS times.
 * Returns the sum, or 0 if an allocation failed. */
static FLATTEN uint64_t churn(khl_pool_t *pool)
{
    uint64_t sum = 0;
    for (int r = 0; r < ROUNDS; ++r) {
        node_t *head = NULL;
        for (uint64_t i = 0; i < NODES; ++i) {
            node_t *n = khl_pool_alloc(pool, sizeof *n);
            if (!n) {
                while (head) {
                    node_t *next = head->next;
                    khl_pool_free(pool, head, sizeof *head);
                    head = next;
                }
                return 0;
            }
            n->next = head;
            n->value = i * (uint64_t)(r + 1);
            head = n;
        }
        while (head) {
            node_t *next = head->next;
            sum += head->value;
            khl_pool_free(pool, head, sizeof *head);
            head = next;
        }
    }
    return sum;
}

int main(void)
{
    khl_pool_t *pool = khl_pool_new(NULL);
    khl_pool_stats_t st;
    uint64_t sum;
    if (!pool) {
        fprintf(stderr, "pool_inline: khl_pool_new failed\n");
        return 1;
    }
    sum = churn(pool);
    khl_pool_stats(pool, &st);
    printf("sum %llu allocs %llu frees %llu in use %zu peak %zu\n", (unsigned long long)sum,
           (unsigned long long)st.allocs, (unsigned long long)st.frees, st.in_use_bytes,
           st.peak_bytes);
    khl_pool_destroy(pool);
    return sum ? 0 : 1;
}
