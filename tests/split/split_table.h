/* split_table.h: a table declared for use across translation units, the way
 * a static library (mruby-style) exposes one: KHL_DECLARE here, KHL_DEFINE in
 * split_table.c, archived into its own .a by the Makefile. */
#ifndef SPLIT_TABLE_H
#define SPLIT_TABLE_H
#include "khashlite/khashlite.h"

KHL_DECLARE(split_s2i, const char *, int, 1)
KHL_DECLARE(split_u64set, uint64_t, char, 0)

#endif
