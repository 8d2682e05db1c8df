/* malloc_name.c: names the malloc a benchmark binary links (see bench.mk). */
#include "bench.h"

const char *const bench_malloc_name = BENCH_MALLOC_NAME;
