/* dl.c: see dl.h. */
#define _GNU_SOURCE
#include "harness/dl.h"

#include <dlfcn.h>
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
