/* large_lf77.c: the khashlite tables of program large (large.c) built a
 * second time at KHL_MAX_LOAD 0.77, khash's load limit, so khashlite can be
 * compared with khash at the same maximum load.  KHL_MAX_LOAD is read when
 * khashlite.h is first included, hence a translation unit of its own, which
 * instantiates the same tables (large_khl.h) as large.c. */
#define KHL_MAX_LOAD 0.77
#include "harness/keys.h"
#include "large_khl.h"

extern const peers_ops_t large_khl_lf77_ops[N_KEYTYPES];
extern const double large_khl_lf77_max_load;
const peers_ops_t large_khl_lf77_ops[N_KEYTYPES] = PEERS_OPS3(khl_u32, khl_u64, khl_str);
const double large_khl_lf77_max_load = KHL_MAX_LOAD;
