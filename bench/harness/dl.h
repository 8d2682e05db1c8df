/* dl.h: the other mallocs loaded into one process beside glibc's, for the
 * programs that interleave every allocator in one process (fastmm.c,
 * largechurn.c): each Debian shared library dlopen'ed with RTLD_LOCAL so it
 * keeps its own heap, its functions called through pointers. */
#ifndef KHL_BENCH_DL_H
#define KHL_BENCH_DL_H

#include <stddef.h>

typedef void (*bench_trim_fn)(void);

/* The mallocs loaded beside glibc's, in the order of their rows: each
 * contender's name, the soname of its Debian library, and what finds its
 * trim call (bench_dl_trim) in the library once loaded. */
typedef struct bench_dl_lib {
    const char *name, *soname;
    bench_trim_fn (*trim_of)(void *handle);
} bench_dl_lib_t;
#define BENCH_DL_LIBS 3
extern const bench_dl_lib_t bench_dl_libs[BENCH_DL_LIBS];

/* The library's own symbol `name` (NULL when it lacks one, or when the
 * symbol is glibc's: RTLD_LOCAL lookups fall through to the process's). */
void *bench_dl_sym(void *handle, const char *name, void *glibc_own);

/* The library loaded (NULL with a message naming `who` on stderr when it
 * cannot be, or brings no malloc of its own).  It stays loaded until exit:
 * its caches may hold its heap. */
void *bench_dl_malloc(const char *soname, const char *who);

/* What gives a malloc's free memory back to the system, so that its next
 * blocks start on pages it has not touched, as a new pool's do: glibc's
 * malloc_trim(0) (lib NULL), tcmalloc's MallocExtension_ReleaseFreeMemory,
 * a purge of every jemalloc arena, mimalloc's mi_collect(true), from the
 * library `lib` loaded as handle.  NULL when the library lacks the call.
 * One of each library per process (bench_dl_malloc's). */
bench_trim_fn bench_dl_trim(void *handle, const bench_dl_lib_t *lib);

/* jemalloc's library keeps its thread state in initial-exec TLS, which
 * dlopen can only place in glibc's static TLS surplus, by default too small
 * for it.  The surplus is a tunable read at startup: this sets it and
 * starts the program again (once).  If that fails the jemalloc rows are
 * missing, nothing else.  Call first thing in main. */
void bench_dl_make_room_for_jemalloc(char **argv);

#endif
