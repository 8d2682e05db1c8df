/* mruby.c: the mruby_khash adapter (adapter.h) of program large: mruby
 * 3.1's own khash (the Debian libmruby-dev header <mruby/khash.h>, used as
 * mruby uses it) with a real mrb_state from mrb_open(), so every allocation
 * goes through mruby's allocator hook (mrb_default_allocf, that is, the
 * malloc this binary links).  Its own translation unit: mruby's khash.h and
 * htslib's define the same names.
 *
 * Hashes are mruby's defaults: kh_int_hash_func for u32, kh_int64_hash_func
 * for u64, X31 (kh_str_hash_func) with strcmp for the 16-byte strings.
 * Tables start at mruby's default 32 buckets (kh_init) and double when size
 * reaches UPPER_BOUND = 3/4 of the buckets.  Out of memory makes mruby raise
 * NoMemoryError; with no Ruby frame to catch it, mruby aborts. */
#include <stdint.h>
#include <stdio.h>

#include <mruby.h>
#include <mruby/khash.h>

#include "adapter.h"
#include "khash_family.h"

static mrb_state *mrb;

int peers_mruby_open(void)
{
    mrb = mrb_open();
    return mrb ? 0 : -1;
}

void peers_mruby_close(void)
{
    if (mrb)
        mrb_close(mrb);
    mrb = NULL;
}

KHASH_DECLARE(mr32, uint32_t, uint32_t, 1)
KHASH_DEFINE(mr32, uint32_t, uint32_t, 1, kh_int_hash_func, kh_int_hash_equal)
KHASH_DECLARE(mr64, uint64_t, uint32_t, 1)
KHASH_DEFINE(mr64, uint64_t, uint32_t, 1, kh_int64_hash_func, kh_int64_hash_equal)
KHASH_DECLARE(mrstr, kh_cstr_t, uint32_t, 1)
KHASH_DEFINE(mrstr, kh_cstr_t, uint32_t, 1, kh_str_hash_func, kh_str_hash_equal)

/* mruby/khash.h: an mrb_calloc'd header, one block [keys][vals][flags: nb/4]. */
#define PEERS_MRB mrb,
#define PEERS_MRUBY_FLAG_BYTES(nb) ((nb) / 4)
#define PEERS_MRUBY(TAG, NAME, BP)                                                    \
    PEERS_KH_FAMILY(TAG, NAME, BP, PEERS_MRB, mrb, PEERS_MRUBY_FLAG_BYTES)

PEERS_MRUBY(mr_u32, mr32, u32)
PEERS_MRUBY(mr_u64, mr64, u64_u32)
PEERS_MRUBY(mr_str, mrstr, str_u32)

const peers_ops_t peers_mruby_ops[PEERS_N_BP] = PEERS_OPS3(mr_u32, mr_u64, mr_str);
