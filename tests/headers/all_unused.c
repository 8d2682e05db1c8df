/* all_unused.c: instantiates every ready-made table type and uses none of
 * them.  Compiled with -Werror as C11 and as C++ by `make check-headers`:
 * generated functions a file does not use must cause no warning. */
#include "khashlite/khashlite.h"
#define KHL_POOL_INLINE   /* the pool's inline fast paths, unused */
#include "khashlite/khl_pool.h"

KHL_MAP_INIT_INT(u_m32, int)
KHL_MAP_INIT_INT64(u_m64, int)
KHL_MAP_INIT_STR(u_mstr, int)
KHL_SET_INIT_INT(u_s32)
KHL_SET_INIT_INT64(u_s64)
KHL_SET_INIT_STR(u_sstr)
KHL_DECLARE(u_decl, uint32_t, double, 1)

static void *u_allocf(void *ud, void *ptr, size_t osize, size_t nsize)
{
    return khl_libc_allocator.fn(ud, ptr, osize, nsize);
}
KHL_INIT_ALLOC(u_alloc, uint64_t, int, 1, khl_hash_u64, khl_eq_int, u_allocf)

int khl_headers_compile(void);
int khl_headers_compile(void) { return 0; }
