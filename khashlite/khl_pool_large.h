/* khl_pool_large.h: blocks above max_small, spans of arenas and huge
 * frames (khl_pool_large.c), on the system memory below them. */
#ifndef KHL_POOL_LARGE_H
#define KHL_POOL_LARGE_H

#include "khl_pool_os.h"

/* khl_pool_large.c: blocks above max_small (lock held) */

KHL_HIDDEN void *khl_i_large_alloc(khl_pool_t *p, size_t n);
KHL_HIDDEN void khl_i_large_free(khl_pool_t *p, khl_pool_chunk_t *k);
KHL_HIDDEN void *khl_i_large_resize(khl_pool_t *p, khl_pool_chunk_t *k, size_t nsize);
KHL_HIDDEN void khl_i_large_shed(khl_pool_t *p);
KHL_HIDDEN void khl_i_large_trim(khl_pool_t *p);
KHL_HIDDEN void khl_i_large_destroy(khl_pool_t *p, khl_pool_unmap_t *u);

#endif /* KHL_POOL_LARGE_H */
