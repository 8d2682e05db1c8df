/* split_table.c: the one definition of the tables split_table.h declares. */
#include "split_table.h"

KHL_DEFINE(split_s2i, const char *, int, 1, khl_hash_str, khl_eq_str)
KHL_DEFINE(split_u64set, uint64_t, char, 0, khl_hash_u64, khl_eq_int)
