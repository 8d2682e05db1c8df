/* table_model.h: the obviously correct model the differential tests and the
 * table fuzzer compare a table with after every step: which key ids
 * (0..MODEL_KEYS-1, MODEL_KEYS defined by the includer) are present and with
 * what value. */
#ifndef KHL_SUPPORT_TABLE_MODEL_H
#define KHL_SUPPORT_TABLE_MODEL_H

#include <stdint.h>

typedef struct model {
    unsigned char present[MODEL_KEYS];
    uint32_t val[MODEL_KEYS];
    uint32_t size;
} model_t;

/* The value of bucket k as a uint32_t lvalue; sets have none. */
#define MAP_VAL(name, h, k) (*(uint32_t *)(void *)&khl_val(name, h, k))
#define SET_VAL(name, h, k) (*(uint32_t *)NULL)

#endif
