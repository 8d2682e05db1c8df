/* fastmm_direct.h: the khl_pool_direct and khl_pool_header loops of
 * seed_fastmm, defined in fastmm_direct.c, which is compiled without
 * link-time optimisation. */
#ifndef KHL_BENCH_FASTMM_DIRECT_H
#define KHL_BENCH_FASTMM_DIRECT_H

int fastmm_direct_published(void *pool, void **ptr, int rounds);
int fastmm_direct_write(void *pool, void **ptr, int rounds);
int fastmm_header_published(void *pool, void **ptr, int rounds);
int fastmm_header_write(void *pool, void **ptr, int rounds);

#endif
