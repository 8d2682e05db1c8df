# Makefile: builds libkhashlite.a, runs the Criterion suite, installs.
#   make            build/libkhashlite.a
#   make test       the test suite (C and C++), prints Criterion's summary
#   make install    PREFIX=/usr/local DESTDIR= : headers, library, khashlite.pc
# Missing Debian packages are installed when run as root, otherwise make
# stops with the apt-get command to run (mk/deps.sh).

CC      ?= cc
CXX     ?= c++
AR      ?= ar
PREFIX  ?= /usr/local
BUILD   ?= build
CFLAGS  ?= -O2
CXXFLAGS ?= -O2
LDFLAGS ?=
WARN     = -Wall -Wextra -Wpedantic
KHL_CFLAGS   = -std=c11 $(WARN) $(CFLAGS) -I.
KHL_CXXFLAGS = -std=c++20 $(WARN) $(CXXFLAGS) -I.

LIB      = $(BUILD)/libkhashlite.a
LIB_SRC  = $(wildcard khashlite/*.c)
LIB_OBJ  = $(LIB_SRC:khashlite/%.c=$(BUILD)/obj/%.o)
HEADERS  = $(wildcard khashlite/*.h)

TEST_SRC   = $(wildcard tests/test_*.c)
TEST_CXX   = $(wildcard tests/test_*.cpp)
TEST_OBJ   = $(TEST_SRC:tests/%.c=$(BUILD)/tests/%.o) $(TEST_CXX:tests/%.cpp=$(BUILD)/tests/%.o) \
             $(BUILD)/tests/support.o
SPLIT_LIB  = $(BUILD)/tests/libsplit_table.a
TEST_BIN   = $(BUILD)/tests/khl-tests

DEPS_LIB   = libxxhash-dev
DEPS_TEST  = libcriterion-dev libxxhash-dev libhts-dev libmruby-dev pkg-config

.PHONY: all lib test check-headers examples install uninstall clean deps-lib deps-test
all: lib
lib: $(LIB)

deps-lib:
	@sh mk/deps.sh $(DEPS_LIB)
deps-test:
	@sh mk/deps.sh $(DEPS_TEST)

$(BUILD)/obj/%.o: khashlite/%.c $(HEADERS) | deps-lib
	@mkdir -p $(@D)
	$(CC) $(KHL_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

# --- tests -----------------------------------------------------------------

$(BUILD)/tests/%.o: tests/%.c $(HEADERS) tests/support.h | deps-test
	@mkdir -p $(@D)
	$(CC) $(KHL_CFLAGS) -Itests -c $< -o $@

$(BUILD)/tests/%.o: tests/%.cpp $(HEADERS) tests/support.h | deps-test
	@mkdir -p $(@D)
	$(CXX) $(KHL_CXXFLAGS) -Itests -c $< -o $@

# KHL_DECLARE in a header, KHL_DEFINE in one .c, archived like a user's
# static library and linked into the suite.
$(BUILD)/tests/split/split_table.o: tests/split/split_table.c tests/split/split_table.h $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(KHL_CFLAGS) -c $< -o $@

$(SPLIT_LIB): $(BUILD)/tests/split/split_table.o
	@rm -f $@
	$(AR) rcs $@ $^

$(TEST_BIN): $(TEST_OBJ) $(SPLIT_LIB) $(LIB)
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -pthread -o $@ $(TEST_OBJ) $(SPLIT_LIB) $(LIB) -lcriterion

# Run by test_hash.c from beside the suite's binary.
$(BUILD)/tests/seed-probe: tests/helpers/seed_probe.c $(LIB)
	$(CC) $(KHL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB)

test: $(TEST_BIN) $(BUILD)/tests/seed-probe
	$(TEST_BIN) $(TEST_ARGS)

# Every public header, with every table type instantiated and unused, must
# compile without a warning as C11 and as C++20.
check-headers: | deps-lib
	@mkdir -p $(BUILD)/headers
	$(CC) $(KHL_CFLAGS) -Werror -c tests/headers/all_unused.c -o $(BUILD)/headers/c.o
	$(CXX) $(KHL_CXXFLAGS) -Werror -x c++ -c tests/headers/all_unused.c -o $(BUILD)/headers/cxx.o

examples: $(BUILD)/examples/wordcount

$(BUILD)/examples/%: examples/%.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(KHL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB)

# --- install ---------------------------------------------------------------

install: $(LIB)
	install -d $(DESTDIR)$(PREFIX)/include/khashlite $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 $(HEADERS) $(DESTDIR)$(PREFIX)/include/khashlite/
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(shell sed -n 's/^#define KHL_VERSION "\(.*\)"/\1/p' khashlite/khashlite.h)|' \
	    mk/khashlite.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/khashlite.pc

uninstall:
	rm -rf $(DESTDIR)$(PREFIX)/include/khashlite
	rm -f $(DESTDIR)$(PREFIX)/lib/libkhashlite.a $(DESTDIR)$(PREFIX)/lib/pkgconfig/khashlite.pc

clean:
	rm -rf $(BUILD)
