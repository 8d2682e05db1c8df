/* large_lf77.c: the khashlite tables of workload `large` (prog_large.c) built
 * a second time at KHL_MAX_LOAD 0.77, khash's load limit, so khashlite can be
 * compared with khash at the same maximum load.  KHL_MAX_LOAD is read when
 * khashlite.h is first included, hence a translation unit of its own; it
 * includes prog_large.c with LARGE_LF77_TU set, which compiles only the
 * khashlite part and exports large_khl_lf77_ops.  (bench.mk does not know this
 * object depends on prog_large.c: after editing prog_large.c, remove
 * build/bench/obj/large_lf77.o.) */
#define KHL_MAX_LOAD 0.77
#define LARGE_LF77_TU 1
#include "large.c"
