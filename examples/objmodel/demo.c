/* demo.c: the object model in action.  Builds the class hierarchy of
 * workload.h, shows a few objects and method calls, then runs the churn and
 * live workloads and prints their checksum, which is the same for every
 * variant and allocator.
 *
 *   objmodel-demo [--variant=single|split3|khash] [--alloc=libc|pool] [--objects=N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/objmodel/workload.h"

/* A guided tour on the single-block variant: what a user's code looks like. */
static int tour(const om_alloc_t *a)
{
    om_single_world *w = om_single_world_new(a);
    om_single_object *p;
    om_value v;
    if (!w)
        return -1;
    /* A Particle (< Vec3 < Shape < Object) with three ivars. */
    p = om_single_object_new(w->vm, w->classes[om_class_for(8)]);
    if (!p || om_single_ivar_set(p, w->ivar[0], om_int(1)) < 0 ||
        om_single_ivar_set(p, w->ivar[1], om_int(2)) < 0 ||
        om_single_ivar_set(p, w->ivar[2], om_int(39)) < 0 ||
        om_single_send(w->vm, p, w->m_value, om_int(0), &v) < 0) {
        om_single_object_free(w->vm, p);
        om_single_world_free(w);
        return -1;
    }
    printf("Particle: %u ivars, @c = %lld, value (inherited from Shape) = %lld, class %s\n",
           (unsigned)om_single_ivar_count(p), (long long)om_int_of(om_single_ivar_get(p, w->ivar[2])),
           (long long)om_int_of(v), om_sym_name(&w->vm->syms, p->klass->name));
    printf("unset @d reads as nil: %s\n", om_single_ivar_get(p, w->ivar[3]) == OM_NIL ? "yes" : "no");
    om_single_object_free(w->vm, p);
    om_single_world_free(w);
    return 0;
}

static const om_variant_t *find_variant(const char *name)
{
    for (int i = 0; i < OM_N_VARIANTS; ++i)
        if (!strcmp(om_variants[i].name, name))
            return &om_variants[i];
    return NULL;
}

int main(int argc, char **argv)
{
    const om_variant_t *var = &om_variants[0];
    const char *alloc = "libc";
    long objects = 100000;
    khl_pool_t *pool = NULL;
    om_alloc_t a;
    uint64_t sum = 0;
    void *w;
    int err = 0;

    for (int i = 1; i < argc; ++i) {
        if (!strncmp(argv[i], "--variant=", 10) && find_variant(argv[i] + 10)) {
            var = find_variant(argv[i] + 10);
        } else if (!strcmp(argv[i], "--alloc=libc") || !strcmp(argv[i], "--alloc=pool")) {
            alloc = argv[i] + 8;
        } else if (!strncmp(argv[i], "--objects=", 10) && atol(argv[i] + 10) > 0) {
            objects = atol(argv[i] + 10);
        } else {
            fprintf(stderr, "usage: %s [--variant=single|split3|khash] [--alloc=libc|pool] [--objects=N]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!strcmp(alloc, "pool") && !(pool = khl_pool_new(NULL))) {
        fprintf(stderr, "objmodel-demo: cannot create the pool\n");
        return 1;
    }
    a = pool ? om_alloc_pool(pool) : om_alloc_libc();

    if (tour(&a) < 0 || !(w = var->world_new(&a))) {
        fprintf(stderr, "objmodel-demo: out of memory\n");
        khl_pool_destroy(pool);
        return 1;
    }
    for (int n = 0; n <= OM_MAX_IVARS && !err; ++n)
        err = var->churn(w, n, objects / (OM_MAX_IVARS + 1), &sum) < 0;
    if (!err)
        err = var->live(w, objects, &sum) < 0;
    var->world_free(w);
    khl_pool_destroy(pool);
    if (err) {
        fprintf(stderr, "objmodel-demo: out of memory\n");
        return 1;
    }
    printf("variant %s (%s), alloc %s, %ld objects: checksum %016llx\n", var->name, var->table,
           alloc, objects, (unsigned long long)sum);
    return 0;
}
