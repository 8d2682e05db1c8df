/* objmodel.h: a small interpreter-style object model, written three ways.
 *
 * What it models.  Dynamic languages (Ruby, Python, Smalltalk) keep two kinds
 * of tiny hash tables by the million: every object has an instance-variable
 * table (@x, @y, ... : symbol -> value) and every class has a method table
 * (symbol -> function).  mruby used khash for both; its ao-render benchmark
 * creates millions of short-lived 3-ivar Vec objects, and merging khash's
 * three allocations per table into one made it ~10% faster (see the project
 * notes).  This header reproduces that situation in ~500 lines:
 *
 *   - symbols: interned names as uint32 ids (om_symtab);
 *   - values: tagged 64-bit words (63-bit integers, object pointers, nil);
 *   - classes: a superclass pointer, a method table and a 4-entry lookup
 *     cache; a method call walks the hierarchy on a cache miss;
 *   - objects: a class pointer and an ivar table, created and freed
 *     explicitly (an interpreter's GC would call om_*_object_free).
 *
 * Why three ways.  The ivar and method tables come in three kinds, so one
 * program can measure what the table's allocation pattern costs:
 *   om_single_*   khashlite, one block per table (KHL_INIT)
 *   om_split3_*   khashlite, header + ctrl + keys + vals (KHL_LAYOUT_SPLIT3,
 *                 bench/peers/khl_split.h:
 *                 khash's shape with khashlite's probing)
 *   om_khash_*    htslib's klib khash
 * The variant code is one template, objmodel_variant.h, included once per
 * kind; only its first section (the table wrappers) differs between kinds.
 * An object without ivars holds no table storage in any variant: khashlite
 * tables allocate on the first put, khash tables are created on first set.
 *
 * Memory.  Everything goes through an om_alloc_t: a khashlite allocator hook
 * (objects, classes, khashlite tables, symbols) and, for khash, whose free()
 * has no size argument, an unsized heap.  om_alloc_libc() and om_alloc_pool()
 * give both halves for malloc and for a khl_pool.  klib routes allocation
 * through its kmalloc/kcalloc/krealloc/kfree macros, which here read the
 * global om_kh_heap, which om_khash_vm_new points at its VM's heap: use one
 * khash VM at a time (per translation unit and thread), or at least create
 * the one you use last (om_khash_vm_free re-points it for its own teardown).
 *
 * Errors.  Every allocation failure is returned (NULL or -1) and leaves the
 * VM consistent; nothing aborts.
 */
#ifndef OBJMODEL_H
#define OBJMODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "khashlite/khashlite.h"
#include "khashlite/khl_pool.h"
/* The split3 kind: the benchmarks' storage, not the library's. */
#include "bench/peers/khl_split.h"

/* ------------------------------------------------------------------------ */
/* Values: tagged 64-bit words                                               */

/* bit 0 set: a 63-bit integer; low 3 bits clear: an object pointer (objects
 * are malloc-aligned); OM_NIL is neither. */
typedef uint64_t om_value;
#define OM_NIL ((om_value)0x2)

static inline om_value om_int(int64_t i)
{
    return ((uint64_t)i << 1) | 1u;   /* unsigned shift: no UB for negatives */
}

static inline int om_is_int(om_value v)
{
    return (int)(v & 1u);
}

static inline int64_t om_int_of(om_value v)
{
    /* Arithmetic shift by hand: >> of a negative signed value is
     * implementation-defined. */
    uint64_t u = v >> 1;
    if (v >> 63)
        u |= (uint64_t)1 << 63;
    return u > (uint64_t)INT64_MAX ? -(int64_t)(~u) - 1 : (int64_t)u;
}

static inline om_value om_ptr(const void *p)
{
    return (om_value)(uintptr_t)p;
}

static inline void *om_ptr_of(om_value v)
{
    return (v & 7u) || v == 0 ? NULL : (void *)(uintptr_t)v;
}

/* ------------------------------------------------------------------------ */
/* Allocation                                                                */

/* klib frees without a size, which a khl_allocator_t cannot do; khash gets
 * this unsized interface instead (malloc/realloc/free shaped). */
typedef struct om_heap {
    void *(*alloc)(void *ud, size_t n);
    void *(*resize)(void *ud, void *p, size_t n);
    void (*release)(void *ud, void *p);
    void *ud;
} om_heap_t;

typedef struct om_alloc {
    khl_allocator_t sized;   /* objects, classes, symbols, khashlite tables */
    om_heap_t unsized;       /* khash tables */
} om_alloc_t;

static inline void *om_libc_alloc(void *ud, size_t n) { (void)ud; return malloc(n); }
static inline void *om_libc_resize(void *ud, void *p, size_t n) { (void)ud; return realloc(p, n); }
static inline void om_libc_release(void *ud, void *p) { (void)ud; free(p); }

static inline void *om_pool_alloc(void *ud, size_t n) { return khl_pool_alloc((khl_pool_t *)ud, n); }
static inline void *om_pool_resize(void *ud, void *p, size_t n)
{
    return khl_pool_realloc_unsized((khl_pool_t *)ud, p, n);
}
static inline void om_pool_release(void *ud, void *p) { khl_pool_free_unsized((khl_pool_t *)ud, p); }

static inline om_alloc_t om_alloc_libc(void)
{
    om_alloc_t a = {khl_libc_allocator, {om_libc_alloc, om_libc_resize, om_libc_release, NULL}};
    return a;
}

/* The pool must outlive every VM made with it. */
static inline om_alloc_t om_alloc_pool(khl_pool_t *p)
{
    om_alloc_t a = {khl_pool_allocator(p), {om_pool_alloc, om_pool_resize, om_pool_release, p}};
    return a;
}

static inline void *om_new(const khl_allocator_t *a, size_t n)
{
    return a->fn(a->ud, NULL, 0, n);
}

static inline void om_delete(const khl_allocator_t *a, void *p, size_t n)
{
    if (p)
        a->fn(a->ud, p, n, 0);
}

/* klib's allocation macros, pointed at the current khash VM's heap. */
static const om_heap_t *om_kh_heap;

static inline void *om_kh_malloc(size_t n) { return om_kh_heap->alloc(om_kh_heap->ud, n); }
static inline void *om_kh_realloc(void *p, size_t n)
{
    return p ? om_kh_heap->resize(om_kh_heap->ud, p, n) : om_kh_heap->alloc(om_kh_heap->ud, n);
}
static inline void om_kh_free(void *p)
{
    if (p)
        om_kh_heap->release(om_kh_heap->ud, p);
}
static inline void *om_kh_calloc(size_t count, size_t n)
{
    void *p;
    if (n && count > SIZE_MAX / n)
        return NULL;
    p = om_kh_malloc(count * n);
    if (p)
        memset(p, 0, count * n);
    return p;
}

#define kmalloc(Z) om_kh_malloc(Z)
#define kcalloc(N, Z) om_kh_calloc(N, Z)
#define krealloc(P, Z) om_kh_realloc(P, Z)
#define kfree(P) om_kh_free(P)
#include <htslib/khash.h>

/* ------------------------------------------------------------------------ */
/* Symbols                                                                   */

typedef uint32_t om_sym;
#define OM_NO_SYM UINT32_MAX

KHL_MAP_INIT_STR(om_symmap, om_sym)

/* Interned names: name -> id in a khashlite map, id -> name in an array.
 * Every variant uses this same table; it is not what is being compared. */
typedef struct om_symtab {
    khl_t(om_symmap) ids;
    char **names;            /* names[id], owned copies */
    uint32_t count, cap;
    const khl_allocator_t *a;
} om_symtab;

static inline void om_symtab_init(om_symtab *st, const khl_allocator_t *a)
{
    memset(st, 0, sizeof *st);
    st->a = a;
    khl_init(om_symmap, &st->ids, a);
}

static inline void om_symtab_free(om_symtab *st)
{
    for (uint32_t i = 0; i < st->count; ++i)
        om_delete(st->a, st->names[i], strlen(st->names[i]) + 1);
    om_delete(st->a, st->names, st->cap * sizeof *st->names);
    khl_destroy(om_symmap, &st->ids);
    memset(st, 0, sizeof *st);
}

/* Room for one more name; -1 when out of memory. */
static inline int om_symtab_grow(om_symtab *st)
{
    uint32_t cap = st->cap ? st->cap * 2 : 16;
    char **names;
    if (st->count < st->cap)
        return 0;
    if (st->cap > UINT32_MAX / 2 || (size_t)cap * sizeof *names / sizeof *names != cap)
        return -1;   /* too many symbols for a uint32 id or for size_t */
    names = (char **)om_new(st->a, cap * sizeof *names);
    if (!names)
        return -1;
    if (st->count)
        memcpy(names, st->names, st->count * sizeof *names);
    om_delete(st->a, st->names, st->cap * sizeof *names);
    st->names = names;
    st->cap = cap;
    return 0;
}

/* The id of `name`, interning it on first use; OM_NO_SYM when out of memory. */
static inline om_sym om_intern(om_symtab *st, const char *name)
{
    khl_iter_t k = khl_get(om_symmap, &st->ids, name);
    size_t len = strlen(name) + 1;
    char *copy;
    int ret;
    if (k != khl_end(om_symmap, &st->ids))
        return khl_val(om_symmap, &st->ids, k);
    if (st->count == OM_NO_SYM || om_symtab_grow(st) < 0)
        return OM_NO_SYM;
    copy = (char *)om_new(st->a, len);
    if (!copy)
        return OM_NO_SYM;
    memcpy(copy, name, len);
    /* The key is the VM's copy: the caller's string may be temporary. */
    k = khl_put(om_symmap, &st->ids, copy, &ret);
    if (ret < 0) {
        om_delete(st->a, copy, len);
        return OM_NO_SYM;
    }
    khl_val(om_symmap, &st->ids, k) = st->count;
    st->names[st->count] = copy;
    return st->count++;
}

static inline const char *om_sym_name(const om_symtab *st, om_sym s)
{
    return s < st->count ? st->names[s] : NULL;
}

/* ------------------------------------------------------------------------ */
/* The three variants                                                        */

/* A method: receives its VM (the variant's om_*_vm), self and one argument. */
typedef om_value (*om_method_fn)(void *vm, om_value self, om_value arg);

#define OM_KIND_SINGLE 1
#define OM_KIND_SPLIT3 2
#define OM_KIND_KHASH 3

#define OM_CAT_(a, b) a##_##b
#define OM_CAT(a, b) OM_CAT_(a, b)
#define OM(x) OM_CAT(OM_PREFIX, x)     /* OM(object_new) -> om_single_object_new */

#define OM_KIND OM_KIND_SINGLE
#define OM_PREFIX om_single
#include "objmodel_variant.h"
#undef OM_KIND
#undef OM_PREFIX

#define OM_KIND OM_KIND_SPLIT3
#define OM_PREFIX om_split3
#include "objmodel_variant.h"
#undef OM_KIND
#undef OM_PREFIX

#define OM_KIND OM_KIND_KHASH
#define OM_PREFIX om_khash
#include "objmodel_variant.h"
#undef OM_KIND
#undef OM_PREFIX

#endif /* OBJMODEL_H */
