/* om_check.h: an allocator for the example object model (om_alloc_t,
 * examples/objmodel) whose two halves, sized and unsized, both run through
 * one check_alloc_t: one set of counts and one failure schedule for all of
 * the model's allocations.  Used by its tests and its benchmark. */
#ifndef KHL_SUPPORT_OM_CHECK_H
#define KHL_SUPPORT_OM_CHECK_H

#include "examples/objmodel/objmodel.h"
#include "support/check_alloc.h"

static inline void *om_check_alloc(void *ud, size_t n)
{
    return check_alloc_unsized((check_alloc_t *)ud, n);
}
static inline void *om_check_resize(void *ud, void *p, size_t n)
{
    return check_realloc_unsized((check_alloc_t *)ud, p, n);
}
static inline void om_check_release(void *ud, void *p)
{
    check_free_unsized((check_alloc_t *)ud, p);
}

/* c, initialised, must outlive every world made with the result. */
static inline om_alloc_t om_alloc_check(check_alloc_t *c)
{
    om_alloc_t a = {c->a, {om_check_alloc, om_check_resize, om_check_release, c}};
    return a;
}

#endif
