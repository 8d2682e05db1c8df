/* khl_pool_check.h: checked mode's per-call checks and khl_pool_check's
 * walk (khl_pool_check.c), above every layer they read. */
#ifndef KHL_POOL_CHECK_H
#define KHL_POOL_CHECK_H

#include "khl_pool_large.h"
#include "khl_pool_thread.h"

/* Under -DKHL_DEBUG every slow path ends by checking the whole pool (lock
 * held) and aborts on the first broken invariant. */
#ifdef KHL_DEBUG
#define KHL_I_DEBUG_CHECK(p) khl_i_check_or_die(p)
#else
#define KHL_I_DEBUG_CHECK(p) ((void)0)
#endif

/* khl_pool_check.c: checked mode, the validator */

KHL_HIDDEN _Noreturn void khl_i_die(const char *who, const void *ptr, const char *check);
KHL_HIDDEN khl_pool_chunk_t *khl_i_find_block(const khl_pool_t *p, const void *ptr, const char **why);
KHL_HIDDEN khl_pool_chunk_t *khl_i_check_live(const khl_pool_t *p, const void *ptr, size_t n, const char *who);
KHL_HIDDEN int khl_i_check_held(const khl_pool_t *p);
KHL_HIDDEN void khl_i_check_or_die(const khl_pool_t *p);

#endif /* KHL_POOL_CHECK_H */
