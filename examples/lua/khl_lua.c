/* khl_lua.c: runs a Lua script under Lua 5.4 with khashlite's pool as the
 * state's allocator, or with the stock libc allocator, so the same script
 * can be timed on glibc (or whatever LD_PRELOAD puts there) and on the pool.
 *
 *   khl-lua [--alloc=libc|pool|pool-reserved] [--limit=BYTES] [--stats] [--csv=NAME] SCRIPT.lua
 *
 *   --alloc=libc           luaL_newstate(): Lua's l_alloc (realloc/free)
 *   --alloc=pool           lua_newstate(khl_pool_allocf, pool): lua_Alloc
 *                          passes the old size, so the pool takes its sized
 *                          path (no header lookup on free)
 *   --alloc=pool-reserved  the pool with blocks of Lua's commonest small sizes
 *                          reserved before the state opens (see reserve_plan)
 *   --limit=BYTES          the pool may hold at most BYTES of system memory:
 *                          past it the script gets "not enough memory"
 *   --stats                one line on stderr at exit: wall time, peak RSS,
 *                          pool counters (in use after lua_close, peak,
 *                          system bytes, allocs, frees)
 *   --csv=NAME             the same numbers as CSV rows (bench/harness/bench.h's
 *                          columns, workload `interp`, table NAME) on
 *                          stdout after the script's own output
 *
 * Scripts read their size from os.getenv("KHL_SCALE").
 *
 * Flags, exit status and the report are examples/host.h's. */
#define _XOPEN_SOURCE 700
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "examples/host.h"

/* What pool-reserved reserves: the size classes Lua 5.4 requests most,
 * counted with an instrumented lua_Alloc while opening a state with
 * luaL_openlibs (~300 blocks, mostly 32 B: short strings, a 24 B TString
 * header plus text) and running bench/lua/{ao_render,tables,strings}.lua: tables (a Table is 56 B:
 * the 64-byte class), 48 B closures and strings, 96 B blocks (ao_render's
 * 3-field hash parts), 16..128 B array and hash parts as small tables grow
 * (tables.lua).  The counts are about the live peak of each class between
 * two GC cycles at the standard sizes (~0.75 MB in all), so the steady state
 * never takes a chunk from the system; past that the free lists recycle
 * blocks anyway. */
static const host_reserve_t reserve_plan[] = {
    {16, 1024}, {32, 4096}, {48, 2048}, {64, 4096}, {96, 2048}, {128, 512},
};

/* lua_newstate sets no panic handler (luaL_newstate does): without one an
 * error outside any protected call would just abort() silently. */
static int panic(lua_State *L)
{
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "khl-lua: PANIC: unprotected error: %s\n", msg ? msg : "(error object is not a string)");
    return 0;   /* Lua then aborts */
}

/* Message handler for lua_pcall: adds a traceback to the error. */
static int traceback(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    luaL_traceback(L, L, msg ? msg : "(error object is not a string)", 1);
    return 1;
}

/* Opens the standard libraries and runs the script (path as light
 * userdata), under the caller's lua_pcall. */
static int run_script(lua_State *L)
{
    const char *path = lua_touserdata(L, 1);
    luaL_openlibs(L);
    if (luaL_loadfile(L, path) != LUA_OK)
        return lua_error(L);
    lua_call(L, 0, 0);
    return 0;
}

static const char usage[] =
    "usage: khl-lua [--alloc=libc|pool|pool-reserved] [--limit=BYTES] [--stats] [--csv=NAME]\n"
    "       SCRIPT.lua\n"
    "  --limit=BYTES: the most system memory the pool may hold (pool modes)\n";

int main(int argc, char **argv)
{
    host_t h = {"khl-lua", "lua", HOST_LIBC, 0, NULL, NULL, NULL, 0, NULL, 0, 0};
    int status = host_parse(&h, argc, argv, usage);
    if (status)
        return status < 0 ? 0 : status;
    if (host_open(&h, reserve_plan, sizeof reserve_plan / sizeof reserve_plan[0]) < 0)
        return 2;
    lua_State *L = h.pool ? lua_newstate(khl_pool_allocf, h.pool) : luaL_newstate();
    if (L == NULL) {
        fputs("khl-lua: cannot create the Lua state (out of memory)\n", stderr);
        host_finish(&h, 2);
        return 2;
    }
    if (h.pool)
        lua_atpanic(L, panic);

    /* Everything that can raise runs protected: opening the libraries can
     * run out of memory just as the script can. */
    lua_pushcfunction(L, traceback);
    lua_pushcfunction(L, run_script);
    lua_pushlightuserdata(L, (void *)h.path);
    if (lua_pcall(L, 1, 0, 1) != LUA_OK) {
        fflush(stdout);
        const char *msg = lua_tostring(L, -1);
        fprintf(stderr, "khl-lua: %s\n", msg ? msg : "(error object is not a string)");
        status = 1;
    }
    lua_close(L);
    return host_finish(&h, status);
}
