# examples/lua/lua.mk: builds $(BUILD)/examples/khl-lua, the Lua 5.4 host that
# runs a Lua script on libc or on khl_pool (khl_lua.c), and adds it to
# EXAMPLE_BINS so `make test` builds it before tests/test_interp.c runs it.
# Included by the top-level Makefile.
KHL_LUA_BIN = $(BUILD)/examples/khl-lua
EXAMPLE_BINS += $(KHL_LUA_BIN)

# The suite runs the host, so its packages are the suite's.
DEPS_TEST += liblua5.4-dev pkg-config

# Recursive variables: pkg-config runs in the recipe, after the goal's
# package check has installed liblua5.4-dev, not when make reads this file.
KHL_LUA_CFLAGS = $(shell pkg-config --cflags lua5.4)
KHL_LUA_LIBS   = $(shell pkg-config --libs lua5.4)

$(KHL_LUA_BIN): examples/lua/khl_lua.c examples/host.h $(HEADERS) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(KHL_CFLAGS) $(KHL_LUA_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(KHL_LUA_LIBS) -lm
