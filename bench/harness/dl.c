/* dl.c: see dl.h. */
#define _GNU_SOURCE
#include "harness/dl.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *bench_dl_sym(void *handle, const char *name, void *glibc_own)
{
    void *f = dlsym(handle, name);
    return f && f != glibc_own ? f : NULL;
}

void *bench_dl_malloc(const char *soname, const char *who)
{
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "%s: no row: %s\n", who, dlerror());
        return NULL;
    }
    if (!bench_dl_sym(h, "malloc", (void *)malloc) || !bench_dl_sym(h, "free", (void *)free)) {
        fprintf(stderr, "%s: no row: %s does not bring its own malloc\n", who, soname);
        return NULL;
    }
    return h;
}

static void glibc_trim(void)
{
    malloc_trim(0);
}

static void (*tc_release_fn)(void);
static void tcmalloc_trim(void)
{
    tc_release_fn();
}

static int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
static void jemalloc_trim(void)
{
    mallctl_fn("arena.4096.purge", NULL, NULL, NULL, 0);   /* MALLCTL_ARENAS_ALL */
}

static void (*mi_collect_fn)(int);
static void mimalloc_trim(void)
{
    mi_collect_fn(1);
}

static bench_trim_fn tcmalloc_trim_of(void *handle)
{
    *(void **)&tc_release_fn = bench_dl_sym(handle, "MallocExtension_ReleaseFreeMemory", NULL);
    return tc_release_fn ? tcmalloc_trim : NULL;
}

static bench_trim_fn jemalloc_trim_of(void *handle)
{
    *(void **)&mallctl_fn = bench_dl_sym(handle, "mallctl", NULL);
    return mallctl_fn ? jemalloc_trim : NULL;
}

static bench_trim_fn mimalloc_trim_of(void *handle)
{
    *(void **)&mi_collect_fn = bench_dl_sym(handle, "mi_collect", NULL);
    return mi_collect_fn ? mimalloc_trim : NULL;
}

const bench_dl_lib_t bench_dl_libs[BENCH_DL_LIBS] = {
    {"tcmalloc", "libtcmalloc_minimal.so.4", tcmalloc_trim_of},
    {"jemalloc", "libjemalloc.so.2", jemalloc_trim_of},
    {"mimalloc", "libmimalloc.so.2", mimalloc_trim_of},
};

bench_trim_fn bench_dl_trim(void *handle, const bench_dl_lib_t *lib)
{
    return lib ? lib->trim_of(handle) : glibc_trim;
}

void bench_dl_make_room_for_jemalloc(char **argv)
{
    static const char tunable[] = "glibc.rtld.optional_static_tls=65536";
    const char *old = getenv("GLIBC_TUNABLES");
    char buf[1024];
    if (getenv("KHL_BENCH_FASTMM_REEXEC") || (old && strstr(old, "optional_static_tls")))
        return;
    snprintf(buf, sizeof buf, "%s%s%s", old ? old : "", old ? ":" : "", tunable);
    if (setenv("GLIBC_TUNABLES", buf, 1) == 0 && setenv("KHL_BENCH_FASTMM_REEXEC", "1", 1) == 0) {
        fflush(NULL);
        execv("/proc/self/exe", argv);
    }
}
