/* Types no table can hold: -DHUGE_VALUE, a value of 1 GiB (its size was an
 * enumerator past int's range: only -Wpedantic said anything), or
 * -DHUGE_ALIGN, a key aligned beyond 4096 bytes; with neither, types at the
 * limits, which compile.  -DVALUE_BYTES=n: a value of n bytes (make
 * check-cross: on i386, where 16 pairs of 128 MiB wrapped size_t, 128 MiB
 * must not compile and 128 MiB - 64 must). */
#include "khashlite/khashlite.h"

#ifdef __cplusplus
#define ALIGNED(n) alignas(n)
#else
#define ALIGNED(n) _Alignas(n)
#endif

#if defined(HUGE_VALUE)
typedef struct big { char b[(size_t)1 << 30]; } big_t;
#elif defined(VALUE_BYTES)
typedef struct big { char b[VALUE_BYTES]; } big_t;
#else
typedef struct big { char b[((size_t)1 << 30) - 64]; } big_t;
#endif
KHL_INIT(huge, uint64_t, big_t, 1, khl_hash_u64, khl_eq_int)

#if defined(HUGE_ALIGN)
typedef struct { ALIGNED(8192) uint64_t k; } wide_t;
#else
typedef struct { ALIGNED(4096) uint64_t k; } wide_t;
#endif
static uint64_t wide_hash(wide_t w) { return khl_hash_u64(w.k); }
#define wide_eq(a, b) ((a).k == (b).k)
KHL_INIT(wide, wide_t, char, 0, wide_hash, wide_eq)

int huge_types_used(void);
int huge_types_used(void)
{
    khl_t(huge) h;
    khl_t(wide) w;
    khl_init(huge, &h, NULL);
    khl_init(wide, &w, NULL);
    khl_destroy(huge, &h);
    khl_destroy(wide, &w);
    return 0;
}
