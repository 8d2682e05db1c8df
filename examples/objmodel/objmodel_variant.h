/* objmodel_variant.h: the object model for one table kind.  objmodel.h
 * includes it three times with OM_KIND and OM_PREFIX set; do not include it
 * directly.  OM(name) pastes the prefix: OM(object_new) is
 * om_single_object_new, om_split3_object_new or om_khash_object_new.
 *
 * Section 1 is the only kind-specific code: the ivar table (om_sym ->
 * om_value) and the method table (om_sym -> om_method_fn) behind five small
 * functions each.  Everything below it is the same for every kind. */

typedef struct OM(vm) OM(vm);
typedef struct OM(class) OM(class);
typedef struct OM(object) OM(object);

/* ------------------------------------------------------------------------ */
/* 1. The tables                                                             */

#if OM_KIND == OM_KIND_SINGLE || OM_KIND == OM_KIND_SPLIT3

#if OM_KIND == OM_KIND_SINGLE
KHL_INIT(om_iv_single, om_sym, om_value, 1, khl_hash_u32, khl_eq_int)
KHL_INIT(om_mt_single, om_sym, om_method_fn, 1, khl_hash_u32, khl_eq_int)
#define OM_IV om_iv_single
#define OM_MT om_mt_single
#else
KHL_INIT_LAYOUT(om_iv_split3, om_sym, om_value, 1, khl_hash_u32, khl_eq_int, KHL_LAYOUT_SPLIT3)
KHL_INIT_LAYOUT(om_mt_split3, om_sym, om_method_fn, 1, khl_hash_u32, khl_eq_int, KHL_LAYOUT_SPLIT3)
#define OM_IV om_iv_split3
#define OM_MT om_mt_split3
#endif

/* khl_get(name, ...) pastes `name` unexpanded; OM_KHL(get, OM_IV, ...)
 * expands OM_IV to the table's name first. */
#define OM_KHL(op, ...) OM_KHL_(op, __VA_ARGS__)
#define OM_KHL_(op, ...) khl_##op(__VA_ARGS__)

/* A khashlite handle is two words and allocates nothing until the first
 * put: an object without ivars costs only its own allocation. */
typedef OM_KHL(t, OM_IV) OM(ivtab);
typedef OM_KHL(t, OM_MT) OM(mtab);

static inline void OM(iv_init)(OM(ivtab) *t, const om_alloc_t *a)
{
    OM_KHL(init, OM_IV, t, &a->sized);
}

static inline int OM(iv_lookup)(const OM(ivtab) *t, om_sym s, om_value *out)
{
    khl_iter_t k = OM_KHL(get, OM_IV, t, s);
    if (k == OM_KHL(end, OM_IV, t))
        return 0;
    *out = OM_KHL(val, OM_IV, (OM(ivtab) *)t, k);
    return 1;
}

static inline int OM(iv_store)(OM(ivtab) *t, om_sym s, om_value v)
{
    int ret;
    khl_iter_t k = OM_KHL(put, OM_IV, t, s, &ret);
    if (ret < 0)
        return -1;
    OM_KHL(val, OM_IV, t, k) = v;
    return 0;
}

static inline uint32_t OM(iv_count)(const OM(ivtab) *t)
{
    return OM_KHL(size, OM_IV, t);
}

static inline void OM(iv_release)(OM(ivtab) *t)
{
    OM_KHL(destroy, OM_IV, t);
}

static inline void OM(mt_init)(OM(mtab) *t, const om_alloc_t *a)
{
    OM_KHL(init, OM_MT, t, &a->sized);
}

static inline om_method_fn OM(mt_lookup)(const OM(mtab) *t, om_sym s)
{
    khl_iter_t k = OM_KHL(get, OM_MT, t, s);
    return k == OM_KHL(end, OM_MT, t) ? NULL : OM_KHL(val, OM_MT, (OM(mtab) *)t, k);
}

static inline int OM(mt_store)(OM(mtab) *t, om_sym s, om_method_fn fn)
{
    int ret;
    khl_iter_t k = OM_KHL(put, OM_MT, t, s, &ret);
    if (ret < 0)
        return -1;
    OM_KHL(val, OM_MT, t, k) = fn;
    return 0;
}

static inline void OM(mt_release)(OM(mtab) *t)
{
    OM_KHL(destroy, OM_MT, t);
}

#undef OM_IV
#undef OM_MT
#undef OM_KHL
#undef OM_KHL_

#else /* OM_KIND_KHASH */

/* klib tables are heap objects; NULL stands for "no table yet", created on
 * the first store as mruby does, so an ivar-less object allocates no table
 * here either.  Every call runs on om_kh_heap (set by om_khash_vm_new). */
KHASH_MAP_INIT_INT(om_iv_kh, om_value)
KHASH_MAP_INIT_INT(om_mt_kh, om_method_fn)
typedef kh_om_iv_kh_t *OM(ivtab);
typedef kh_om_mt_kh_t *OM(mtab);

static inline void OM(iv_init)(OM(ivtab) *t, const om_alloc_t *a)
{
    (void)a;
    *t = NULL;
}

static inline int OM(iv_lookup)(const OM(ivtab) *t, om_sym s, om_value *out)
{
    khint_t k;
    if (!*t)
        return 0;
    k = kh_get(om_iv_kh, *t, s);
    if (k == kh_end(*t))
        return 0;
    *out = kh_val(*t, k);
    return 1;
}

static inline int OM(iv_store)(OM(ivtab) *t, om_sym s, om_value v)
{
    int ret;
    khint_t k;
    if (!*t && !(*t = kh_init(om_iv_kh)))
        return -1;
    k = kh_put(om_iv_kh, *t, s, &ret);
    if (ret < 0)
        return -1;
    kh_val(*t, k) = v;
    return 0;
}

static inline uint32_t OM(iv_count)(const OM(ivtab) *t)
{
    return *t ? kh_size(*t) : 0u;
}

static inline void OM(iv_release)(OM(ivtab) *t)
{
    kh_destroy(om_iv_kh, *t);   /* NULL-safe */
    *t = NULL;
}

static inline void OM(mt_init)(OM(mtab) *t, const om_alloc_t *a)
{
    (void)a;
    *t = NULL;
}

static inline om_method_fn OM(mt_lookup)(const OM(mtab) *t, om_sym s)
{
    khint_t k;
    if (!*t)
        return NULL;
    k = kh_get(om_mt_kh, *t, s);
    return k == kh_end(*t) ? NULL : kh_val(*t, k);
}

static inline int OM(mt_store)(OM(mtab) *t, om_sym s, om_method_fn fn)
{
    int ret;
    khint_t k;
    if (!*t && !(*t = kh_init(om_mt_kh)))
        return -1;
    k = kh_put(om_mt_kh, *t, s, &ret);
    if (ret < 0)
        return -1;
    kh_val(*t, k) = fn;
    return 0;
}

static inline void OM(mt_release)(OM(mtab) *t)
{
    kh_destroy(om_mt_kh, *t);
    *t = NULL;
}

#endif

/* ------------------------------------------------------------------------ */
/* 2. VM, classes, objects                                                   */

/* Method lookups are cached per class in a few direct-mapped slots.  A
 * definition anywhere bumps the VM's epoch, which invalidates every cache
 * at once: a subclass's cache may hold a superclass's method. */
#define OM_CACHE_SLOTS 4u

struct OM(vm) {
    om_alloc_t alloc;        /* tables point at alloc.sized: the VM never moves */
    om_symtab syms;
    uint32_t epoch;
    OM(class) *classes;      /* every class, for teardown */
    size_t live_objects;
    void *data;              /* for the embedding program (methods reach it via vm) */
};

struct OM(class) {
    OM(class) *super;        /* NULL for a root class */
    OM(class) *next;         /* the VM's list of classes */
    om_sym name;
    OM(mtab) methods;
    struct {
        om_sym sym;
        uint32_t epoch;      /* 0: empty (the VM's epoch starts at 1) */
        om_method_fn fn;
    } cache[OM_CACHE_SLOTS];
};

struct OM(object) {
    OM(class) *klass;
    OM(ivtab) ivars;
};

/* A new VM on `a` (copied); NULL when out of memory. */
static inline OM(vm) *OM(vm_new)(const om_alloc_t *a)
{
    OM(vm) *vm = (OM(vm) *)om_new(&a->sized, sizeof *vm);
    if (!vm)
        return NULL;
    memset(vm, 0, sizeof *vm);
    vm->alloc = *a;
    vm->epoch = 1;
    om_symtab_init(&vm->syms, &vm->alloc.sized);
#if OM_KIND == OM_KIND_KHASH
    om_kh_heap = &vm->alloc.unsized;
#endif
    return vm;
}

/* Frees the VM and its classes.  Objects must be freed first (there is no
 * GC to find them); live_objects says how many are left. */
static inline void OM(vm_free)(OM(vm) *vm)
{
    khl_allocator_t a;
    if (!vm)
        return;
#if OM_KIND == OM_KIND_KHASH
    om_kh_heap = &vm->alloc.unsized;   /* its tables go back where they came from */
#endif
    while (vm->classes) {
        OM(class) *c = vm->classes;
        vm->classes = c->next;
        OM(mt_release)(&c->methods);
        om_delete(&vm->alloc.sized, c, sizeof *c);
    }
    om_symtab_free(&vm->syms);
    a = vm->alloc.sized;   /* vm->alloc goes with vm */
    om_delete(&a, vm, sizeof *vm);
}

static inline om_sym OM(intern)(OM(vm) *vm, const char *name)
{
    return om_intern(&vm->syms, name);
}

/* A class named `name` under `super` (NULL: a root); NULL when out of memory. */
static inline OM(class) *OM(class_new)(OM(vm) *vm, const char *name, OM(class) *super)
{
    om_sym s = OM(intern)(vm, name);
    OM(class) *c;
    if (s == OM_NO_SYM)
        return NULL;
    c = (OM(class) *)om_new(&vm->alloc.sized, sizeof *c);
    if (!c)
        return NULL;
    memset(c, 0, sizeof *c);
    c->super = super;
    c->name = s;
    OM(mt_init)(&c->methods, &vm->alloc);
    c->next = vm->classes;
    vm->classes = c;
    return c;
}

/* Defines (or redefines) a method; 0, or -1 when out of memory. */
static inline int OM(define_method)(OM(vm) *vm, OM(class) *c, const char *name, om_method_fn fn)
{
    om_sym s = OM(intern)(vm, name);
    if (s == OM_NO_SYM || OM(mt_store)(&c->methods, s, fn) < 0)
        return -1;
    vm->epoch++;
    return 0;
}

/* The method `s` of class c or its nearest ancestor, NULL if none. */
static inline om_method_fn OM(find_method)(OM(vm) *vm, OM(class) *c, om_sym s)
{
    unsigned slot = s % OM_CACHE_SLOTS;
    om_method_fn fn = NULL;
    if (c->cache[slot].epoch == vm->epoch && c->cache[slot].sym == s)
        return c->cache[slot].fn;
    for (OM(class) *k = c; k && !fn; k = k->super)
        fn = OM(mt_lookup)(&k->methods, s);
    if (fn) {
        c->cache[slot].sym = s;
        c->cache[slot].epoch = vm->epoch;
        c->cache[slot].fn = fn;
    }
    return fn;
}

/* A new object without ivars: one allocation, the table costs nothing yet.
 * NULL when out of memory. */
static inline OM(object) *OM(object_new)(OM(vm) *vm, OM(class) *c)
{
    OM(object) *o = (OM(object) *)om_new(&vm->alloc.sized, sizeof *o);
    if (!o)
        return NULL;
    o->klass = c;
    OM(iv_init)(&o->ivars, &vm->alloc);
    vm->live_objects++;
    return o;
}

static inline void OM(object_free)(OM(vm) *vm, OM(object) *o)
{
    if (!o)
        return;
    OM(iv_release)(&o->ivars);
    om_delete(&vm->alloc.sized, o, sizeof *o);
    vm->live_objects--;
}

/* Sets @s; 0, or -1 when out of memory (the object is unchanged). */
static inline int OM(ivar_set)(OM(object) *o, om_sym s, om_value v)
{
    return OM(iv_store)(&o->ivars, s, v);
}

/* @s, or OM_NIL when unset (as in Ruby). */
static inline om_value OM(ivar_get)(const OM(object) *o, om_sym s)
{
    om_value v = OM_NIL;
    OM(iv_lookup)(&o->ivars, s, &v);
    return v;
}

static inline uint32_t OM(ivar_count)(const OM(object) *o)
{
    return OM(iv_count)(&o->ivars);
}

/* Calls method s on o with one argument: 0 and *out, or -1 when no class
 * in o's hierarchy defines s. */
static inline int OM(send)(OM(vm) *vm, OM(object) *o, om_sym s, om_value arg, om_value *out)
{
    om_method_fn fn = OM(find_method)(vm, o->klass, s);
    if (!fn)
        return -1;
    *out = fn(vm, om_ptr(o), arg);
    return 0;
}
