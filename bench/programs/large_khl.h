/* large_khl.h: the single-block khashlite tables of program large as
 * adapters (bench/peers/khashlite.h), for u32, u64_u32 and str_u32; large.c
 * includes it at the default KHL_MAX_LOAD, large_lf77.c at 0.77. */
#ifndef KHL_BENCH_LARGE_KHL_H
#define KHL_BENCH_LARGE_KHL_H

#include "khashlite/khashlite.h"
#include "peers/khashlite.h"

PEERS_KHL_TABLE(khl_u32, u32, khl_hash_u32, khl_eq_int, KHL_LAYOUT_SINGLE)
PEERS_KHL_TABLE(khl_u64, u64_u32, khl_hash_u64, khl_eq_int, KHL_LAYOUT_SINGLE)
PEERS_KHL_TABLE(khl_str, str_u32, khl_hash_str, khl_eq_str, KHL_LAYOUT_SINGLE)

#endif
