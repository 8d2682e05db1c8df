/* workload.h: one deterministic object workload, shared by the demo, the
 * test suite and bench/programs/objmodel.c so all three run exactly the same
 * code on every variant.
 *
 * The world: Object (root, defines `kind`) > Shape (defines `value`, the sum
 * of the object's integer ivars) > Box, Vec3 > Particle, and Empty < Object
 * (its own `value`).  An object with n ivars (0..8) gets the class
 * om_class_for(n) and ivars @a, @b, ... in that order.
 *
 *   churn: count objects one at a time: create, set n ivars, read them
 *          back, call `value` and `kind` (method lookup), free.
 *   live:  count objects alive at once with 0..8 ivars (i % 9), then a pass
 *          reading every ivar, overwriting one and calling `value`, then
 *          all freed.
 * Both fold every value they see into a checksum that does not depend on
 * the table kind, the allocator or hash seeds.
 *
 * The file includes itself once per variant (OM_PREFIX set) and ends with
 * om_variants[], the three variants behind one function-pointer interface
 * for programs that choose a variant at run time. */
#ifndef OM_PREFIX
#ifndef OBJMODEL_WORKLOAD_H
#define OBJMODEL_WORKLOAD_H

#include "objmodel.h"

#define OM_MAX_IVARS 8

static inline uint64_t om_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

/* The class an object with n ivars belongs to. */
static inline int om_class_for(int n)
{
    return n == 0 ? 0 : n < 3 ? 1 : n < 8 ? 2 : 3;   /* Empty, Box, Vec3, Particle */
}

#define OM_PREFIX om_single
#include "workload.h"
#undef OM_PREFIX
#define OM_PREFIX om_split3
#include "workload.h"
#undef OM_PREFIX
#define OM_PREFIX om_khash
#include "workload.h"
#undef OM_PREFIX

/* A variant behind function pointers: `world` is its om_*_world. */
typedef struct om_variant {
    const char *name;        /* --variant=NAME */
    const char *table;       /* bench `table` column */
    const char *layout;      /* bench `layout` column */
    void *(*world_new)(const om_alloc_t *a);
    void (*world_free)(void *world);
    int (*churn)(void *world, int n_ivars, long count, uint64_t *sum);
    int (*live)(void *world, long count, uint64_t *sum);
} om_variant_t;

#define OM_VARIANT(prefix, name, table, layout)                                     \
    {name, table, layout, OM_CAT(prefix, world_new_v), OM_CAT(prefix, world_free_v), \
     OM_CAT(prefix, churn_v), OM_CAT(prefix, live_v)}

static const om_variant_t om_variants[3] = {
    OM_VARIANT(om_single, "single", "khashlite", "single"),
    OM_VARIANT(om_split3, "split3", "khashlite", "split3"),
    OM_VARIANT(om_khash, "khash", "khash", "khash"),
};
#define OM_N_VARIANTS 3

#endif /* OBJMODEL_WORKLOAD_H */
#else /* ------------------- the template, once per variant ------------------- */

typedef struct OM(world) {
    OM(vm) *vm;
    OM(class) *classes[4];             /* by om_class_for(n) */
    om_sym ivar[OM_MAX_IVARS];         /* @a .. @h */
    om_sym m_value, m_kind;
} OM(world);

/* Object#kind: the class's name symbol, as an integer. */
static om_value OM(m_kind)(void *vm, om_value self, om_value arg)
{
    (void)vm;
    (void)arg;
    return om_int(((OM(object) *)om_ptr_of(self))->klass->name);
}

/* Shape#value: arg + the sum of the integer ivars. */
static om_value OM(m_shape_value)(void *vm, om_value self, om_value arg)
{
    const OM(world) *w = (const OM(world) *)((OM(vm) *)vm)->data;
    const OM(object) *o = (const OM(object) *)om_ptr_of(self);
    int64_t sum = om_int_of(arg);
    for (uint32_t i = 0; i < OM(ivar_count)(o) && i < OM_MAX_IVARS; ++i) {
        om_value v = OM(ivar_get)(o, w->ivar[i]);
        sum += om_is_int(v) ? om_int_of(v) : 0;
    }
    return om_int(sum);
}

/* Empty#value: just arg. */
static om_value OM(m_empty_value)(void *vm, om_value self, om_value arg)
{
    (void)vm;
    (void)self;
    return arg;
}

/* Builds the classes, methods and symbols; 0 or -1 (out of memory). */
static inline int OM(world_setup)(OM(world) *w)
{
    static const char *const names[OM_MAX_IVARS] = {"@a", "@b", "@c", "@d", "@e", "@f", "@g", "@h"};
    OM(vm) *vm = w->vm;
    OM(class) *object = OM(class_new)(vm, "Object", NULL);
    OM(class) *shape = object ? OM(class_new)(vm, "Shape", object) : NULL;
    OM(class) *vec3 = shape ? OM(class_new)(vm, "Vec3", shape) : NULL;
    if (!vec3)
        return -1;
    w->classes[0] = OM(class_new)(vm, "Empty", object);
    w->classes[1] = OM(class_new)(vm, "Box", shape);
    w->classes[2] = vec3;
    w->classes[3] = OM(class_new)(vm, "Particle", vec3);
    for (int i = 0; i < 4; ++i)
        if (!w->classes[i])
            return -1;
    for (int i = 0; i < OM_MAX_IVARS; ++i)
        if ((w->ivar[i] = OM(intern)(vm, names[i])) == OM_NO_SYM)
            return -1;
    w->m_value = OM(intern)(vm, "value");
    w->m_kind = OM(intern)(vm, "kind");
    if (w->m_value == OM_NO_SYM || w->m_kind == OM_NO_SYM)
        return -1;
    if (OM(define_method)(vm, object, "kind", OM(m_kind)) < 0 ||
        OM(define_method)(vm, shape, "value", OM(m_shape_value)) < 0 ||
        OM(define_method)(vm, w->classes[0], "value", OM(m_empty_value)) < 0)
        return -1;
    return 0;
}

static inline void OM(world_free)(OM(world) *w)
{
    if (!w)
        return;
    OM(vm_free)(w->vm);
    free(w);
}

/* A VM on `a` with the world's classes; NULL when out of memory.  The world
 * struct itself is the program's (malloc), not the VM's. */
static inline OM(world) *OM(world_new)(const om_alloc_t *a)
{
    OM(world) *w = (OM(world) *)calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->vm = OM(vm_new)(a);
    if (!w->vm) {
        free(w);
        return NULL;
    }
    w->vm->data = w;
    if (OM(world_setup)(w) < 0) {
        OM(world_free)(w);
        return NULL;
    }
    return w;
}

/* Sets @a.. on o to n integers derived from seed; 0 or -1. */
static inline int OM(fill)(const OM(world) *w, OM(object) *o, int n, uint64_t seed)
{
    for (int i = 0; i < n; ++i)
        if (OM(ivar_set)(o, w->ivar[i], om_int((int64_t)((seed + (uint64_t)i) & 0xffff))) < 0)
            return -1;
    return 0;
}

/* Reads o's n ivars, calls `value` and `kind`, folds all into h. */
static inline int OM(visit)(OM(world) *w, OM(object) *o, int n, uint64_t *h)
{
    om_value v;
    for (int i = 0; i < n; ++i)
        *h = om_mix(*h, OM(ivar_get)(o, w->ivar[i]));
    if (OM(send)(w->vm, o, w->m_value, om_int(n), &v) < 0)
        return -1;
    *h = om_mix(*h, v);
    if (OM(send)(w->vm, o, w->m_kind, OM_NIL, &v) < 0)
        return -1;
    *h = om_mix(*h, v);
    return 0;
}

static inline int OM(churn)(OM(world) *w, int n, long count, uint64_t *sum)
{
    uint64_t h = *sum;
    if (n < 0 || n > OM_MAX_IVARS)
        return -1;
    for (long i = 0; i < count; ++i) {
        OM(object) *o = OM(object_new)(w->vm, w->classes[om_class_for(n)]);
        int err = !o || OM(fill)(w, o, n, (uint64_t)i) < 0 || OM(visit)(w, o, n, &h) < 0;
        OM(object_free)(w->vm, o);
        if (err)
            return -1;
    }
    *sum = h;
    return 0;
}

static inline void OM(free_all)(OM(world) *w, OM(object) **objs, long count)
{
    for (long i = 0; i < count; ++i)
        OM(object_free)(w->vm, objs[i]);
    free(objs);
}

static inline int OM(live)(OM(world) *w, long count, uint64_t *sum)
{
    OM(object) **objs = count > 0 ? (OM(object) **)calloc((size_t)count, sizeof *objs) : NULL;
    uint64_t h = *sum;
    if (!objs)
        return -1;
    for (long i = 0; i < count; ++i) {
        int n = (int)(i % (OM_MAX_IVARS + 1));
        objs[i] = OM(object_new)(w->vm, w->classes[om_class_for(n)]);
        if (!objs[i] || OM(fill)(w, objs[i], n, (uint64_t)i * 7u) < 0) {
            OM(free_all)(w, objs, count);
            return -1;
        }
    }
    for (long i = 0; i < count; ++i) {
        int n = (int)(i % (OM_MAX_IVARS + 1));
        /* Overwriting an existing ivar never allocates, so never fails. */
        if (OM(visit)(w, objs[i], n, &h) < 0 ||
            (n && OM(ivar_set)(objs[i], w->ivar[0], om_int((int64_t)i)) < 0)) {
            OM(free_all)(w, objs, count);
            return -1;
        }
        h = om_mix(h, OM(ivar_get)(objs[i], w->ivar[0]));
    }
    OM(free_all)(w, objs, count);
    *sum = h;
    return 0;
}

/* The same, behind om_variant_t's void pointers. */
static inline void *OM(world_new_v)(const om_alloc_t *a) { return OM(world_new)(a); }
static inline void OM(world_free_v)(void *w) { OM(world_free)((OM(world) *)w); }
static inline int OM(churn_v)(void *w, int n, long count, uint64_t *sum)
{
    return OM(churn)((OM(world) *)w, n, count, sum);
}
static inline int OM(live_v)(void *w, long count, uint64_t *sum)
{
    return OM(live)((OM(world) *)w, count, sum);
}

#endif /* OM_PREFIX */
