/* input.h: how both fuzzers read their input.  Operations are read from the
 * front; the allocator's failures from the back, one byte per allocation
 * attempt (check_alloc's fail_if), so the two streams meet in the middle. */
#ifndef KHL_FUZZ_INPUT_H
#define KHL_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s: %s failed at line %d\n", __FILE__, #c, __LINE__); abort(); } } while (0)

typedef struct input {
    const uint8_t *p;
    size_t front, back;
    int fail_below;          /* an allocation fails on a back byte below this */
} input_t;

/* The next operation byte, or -1 at the end. */
static inline int next_op(input_t *in)
{
    return in->front < in->back ? in->p[in->front++] : -1;
}

/* check_alloc's fail_if, with the input as its context. */
static inline int input_fails(void *ctx, size_t nsize)
{
    input_t *in = ctx;
    (void)nsize;
    return in->back > in->front && in->p[--in->back] < in->fail_below;
}

#endif
