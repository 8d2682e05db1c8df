/* dl.c: see dl.h. */
#define _GNU_SOURCE
#include "harness/dl.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const bench_dl_lib_t bench_dl_libs[BENCH_DL_LIBS] = {
    {"tcmalloc", "libtcmalloc_minimal.so.4"},
    {"jemalloc", "libjemalloc.so.2"},
    {"mimalloc", "libmimalloc.so.2"},
};

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

bench_trim_fn bench_dl_trim(void *handle, const char *who)
{
    if (!handle)
        return glibc_trim;
    if (!strcmp(who, "tcmalloc"))
        return (*(void **)&tc_release_fn = bench_dl_sym(handle, "MallocExtension_ReleaseFreeMemory", NULL))
                   ? tcmalloc_trim : NULL;
    if (!strcmp(who, "jemalloc"))
        return (*(void **)&mallctl_fn = bench_dl_sym(handle, "mallctl", NULL)) ? jemalloc_trim : NULL;
    if (!strcmp(who, "mimalloc"))
        return (*(void **)&mi_collect_fn = bench_dl_sym(handle, "mi_collect", NULL)) ? mimalloc_trim : NULL;
    return NULL;
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
