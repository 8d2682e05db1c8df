/* adapter.c: what the table adapters (adapter.h) share at run time: the
 * allocation counter of the untimed passes and the allocator khashlite
 * tables use outside them. */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include "adapter.h"
#include "khashlite.h"

const khl_allocator_t *peers_khl_alloc = &khl_libc_allocator;

peers_count_t *peers_counting;

size_t peers_spend(void *p)
{
    return malloc_usable_size(p) + sizeof(size_t);
}

static void count_live(size_t add, size_t sub)
{
    peers_count_t *c = peers_counting;
    c->live += add;
    if (c->live > c->peak)
        c->peak = c->live;
    c->live -= sub;
}

void peers_count_alloc(void *p)
{
    peers_counting->allocs++;
    count_live(peers_spend(p), 0);
}

void peers_count_free(void *p)
{
    peers_counting->live -= peers_spend(p);
}

#if defined(__SANITIZE_ADDRESS__)
#define PEERS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PEERS_ASAN 1
#endif
#endif

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

/* Was p served by mmap?  glibc keeps a chunk's size in the word before it,
 * bit 1 IS_MMAPPED.  AddressSanitizer's and valgrind's allocators have no
 * such word: there every moved realloc counts as a copy. */
static int chunk_mmapped(const void *p)
{
#ifdef PEERS_ASAN
    (void)p;
    return 0;
#else
    return !RUNNING_ON_VALGRIND && (((const size_t *)p)[-1] & 2) != 0;
#endif
}

void *peers_count_realloc(void *p, size_t n)
{
    size_t old;
    int mmapped;
    void *q;
    if (!p)
        return peers_malloc(n);
    old = peers_spend(p);
    mmapped = chunk_mmapped(p);
    q = realloc(p, n);
    if (!q)
        return NULL;
    peers_counting->allocs++;
    if (q == p || mmapped) {
        size_t now = peers_spend(q);
        count_live(now > old ? now - old : 0, now < old ? old - now : 0);
    } else
        count_live(peers_spend(q), old);   /* malloc, copy, free: both held */
    return q;
}

static void *count_allocf(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud, (void)osize;
    return nsize ? peers_realloc(ptr, nsize) : (peers_free(ptr), NULL);
}

const khl_allocator_t peers_khl_count_allocator = {count_allocf, NULL, 1};

void peers_oom(const char *what)
{
    fprintf(stderr, "out of memory (%s)\n", what);
    exit(1);
}
