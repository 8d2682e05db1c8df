# Makefile: builds libkhashlite.a, runs the Criterion suite, installs.
#   make            build/libkhashlite.a
#   make test       the test suite (C and C++), prints Criterion's summary
#   make install    PREFIX=/usr/local DESTDIR= : headers, library, khashlite.pc
#   make bench      the benchmarks (bench/bench.mk): every output in build/bench/latest/,
#                   REPORT.md and summary.csv in bench/results/latest/
#   make mruby      mruby 3.1 from Debian's source, stock and on khashlite (mk/mruby.mk)
#   make mruby-test mruby's own tests and ours on both builds
#   make deps       every Debian package the project uses (mk/deps.sh)
# Missing Debian packages are installed when run as root, otherwise make
# stops with the apt-get command to run (mk/deps.sh).  `make deps` checks
# them all; each goal below checks its own list once before building.

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

# support/: the checking allocator and the PRNG the tests, the fuzzers and
# the benchmarks share; built into them, never into the library.
SUPPORT_SRC     = $(wildcard support/*.c)
SUPPORT_HEADERS = $(wildcard support/*.h)
SUPPORT_OBJ     = $(SUPPORT_SRC:support/%.c=$(BUILD)/support/%.o)

TEST_SRC   = $(wildcard tests/test_*.c)
TEST_CXX   = $(wildcard tests/test_*.cpp)
TEST_OBJ   = $(TEST_SRC:tests/%.c=$(BUILD)/tests/%.o) $(TEST_CXX:tests/%.cpp=$(BUILD)/tests/%.o) \
             $(BUILD)/tests/support.o $(SUPPORT_OBJ)
SPLIT_LIB  = $(BUILD)/tests/libsplit_table.a
TEST_BIN   = $(BUILD)/tests/khl-tests

DEPS_LIB   = libxxhash-dev
# Example fragments add the packages their programs need (EXAMPLE_BINS are
# part of the suite).
DEPS_TEST  = libcriterion-dev libxxhash-dev libhts-dev libmruby-dev pkg-config

# $(call deps_then,PACKAGES,TARGETS): check the packages, then build the
# targets in a sub-make.  The check must finish before any compiler starts;
# an order-only prerequisite of the goal would run beside its other
# prerequisites under -j, and one on every object rule says it once per rule.
# Two recipe lines, so `make -n` prints the check instead of running it.
define deps_then
@sh mk/deps.sh $(1)
+@$(MAKE) --no-print-directory $(2)
endef

# Each example directory may bring a fragment that builds its programs and
# adds them to EXAMPLE_BINS, which the test suite runs.  Included before the
# rules below, whose prerequisite lists read EXAMPLE_BINS.
.DEFAULT_GOAL := all
EXAMPLE_BINS =
include $(wildcard examples/*/*.mk)
include bench/bench.mk
include mk/mruby.mk

.PHONY: all lib test test-suite check check-asan check-valgrind check-tsan check-headers \
        check-readme check-cross fuzz examples install uninstall clean deps
all: lib
lib:
	$(call deps_then,$(DEPS_LIB),$(LIB))

$(BUILD)/obj/%.o: khashlite/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(KHL_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

# --- tests -----------------------------------------------------------------

EXAMPLE_HEADERS = $(wildcard examples/*/*.h)
# The split storages, the benchmarks' baselines: the tests, the fuzzer and
# the object model example include them; never installed.
SPLIT_HEADER    = bench/peers/khl_split.h

$(BUILD)/support/%.o: support/%.c $(SUPPORT_HEADERS) $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(KHL_CFLAGS) -c $< -o $@

$(BUILD)/tests/%.o: tests/%.c $(HEADERS) $(EXAMPLE_HEADERS) $(SPLIT_HEADER) tests/support.h $(SUPPORT_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(KHL_CFLAGS) -Itests -c $< -o $@

$(BUILD)/tests/%.o: tests/%.cpp $(HEADERS) tests/support.h $(SUPPORT_HEADERS)
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

TEST_PROGS = $(TEST_BIN) $(BUILD)/tests/seed-probe $(EXAMPLE_BINS)

test:
	$(call deps_then,$(DEPS_TEST),test-suite)
test-suite: $(TEST_PROGS)
	$(TEST_BIN) $(TEST_ARGS)

# Every public header, with every table type instantiated and unused, must
# compile without a warning as C11 and as C++20.
check-headers:
	@sh mk/deps.sh $(DEPS_LIB)
	@mkdir -p $(BUILD)/headers
	$(CC) $(KHL_CFLAGS) -Werror -c tests/headers/all_unused.c -o $(BUILD)/headers/c.o
	$(CXX) $(KHL_CXXFLAGS) -Werror -x c++ -c tests/headers/all_unused.c -o $(BUILD)/headers/cxx.o

# README's example, as README shows it: it must compile and run.
$(BUILD)/readme/example.c: README.md
	@mkdir -p $(@D)
	awk '/^## Example/ { sect = 1 } sect && /^```c$$/ { code = 1; next } code && /^```$$/ { exit } code' \
	    README.md > $@
	@test -s $@ || { echo "check-readme: no C block under README's Example"; exit 1; }

$(BUILD)/readme/example: $(BUILD)/readme/example.c $(LIB)
	$(CC) $(KHL_CFLAGS) -Werror $(LDFLAGS) -o $@ $< $(LIB)

check-readme:
	$(call deps_then,$(DEPS_LIB),$(BUILD)/readme/example)
	$(BUILD)/readme/example

examples:
	$(call deps_then,$(DEPS_TEST),$(BUILD)/examples/wordcount $(BUILD)/examples/pool_inline $(EXAMPLE_BINS))

$(BUILD)/examples/%: examples/%.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(KHL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB)


# --- hardening (make check, make fuzz) --------------------------------------

DEPS_CHECK = clang libclang-rt-14-dev valgrind
SAN_FLAGS  = -O1 -g -fno-omit-frame-pointer
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = $(patsubst fuzz/fuzz_%.c,%,$(wildcard fuzz/fuzz_*.c))

# What mk/mruby.mk's mruby-test needs before it starts.
deps-check:
	@sh mk/deps.sh $(DEPS_CHECK)

# The suite under ASan+UBSan, under valgrind memcheck, and the pool's thread
# tests under ThreadSanitizer, each in its own build directory.
check: check-asan check-valgrind check-tsan

check-asan:
	@sh mk/deps.sh $(DEPS_CHECK)
	$(MAKE) test BUILD=$(BUILD)/asan CFLAGS="$(SAN_FLAGS) -fsanitize=address,undefined -fno-sanitize-recover=all" \
	    CXXFLAGS="$(SAN_FLAGS) -fsanitize=address,undefined -fno-sanitize-recover=all" \
	    LDFLAGS="-fsanitize=address,undefined"

# Criterion runs each test in a child process whose exit status does not
# reach the runner, so --error-exitcode alone let an invalid read in a test
# pass: every process writes its own log, and mk/valgrind-logs.sh fails the
# target on an error or a definite leak in any of them, printing the log.
# TEST_ARGS as for `make test` (--filter=...).
VALGRIND_LOGS = $(BUILD)/valgrind
check-valgrind:
	$(call deps_then,$(DEPS_CHECK) $(DEPS_TEST),$(TEST_PROGS))
	@rm -rf $(VALGRIND_LOGS) && mkdir -p $(VALGRIND_LOGS)
	valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
	    --show-leak-kinds=definite,indirect --suppressions=tests/valgrind.supp \
	    --trace-children=yes --trace-children-skip='*/sh,*/bash' --log-file=$(VALGRIND_LOGS)/%p.log \
	    $(TEST_BIN) --jobs 1 $(TEST_ARGS); rc=$$?; \
	    sh mk/valgrind-logs.sh $(VALGRIND_LOGS) && exit $$rc

# Criterion's runner cannot start under TSan (its shared arena collides with
# TSan's shadow memory), so the pool's thread stress runs as its own program.
$(BUILD)/tsan/pool_stress: tests/tsan/pool_stress.c $(LIB_SRC) $(HEADERS) $(SUPPORT_HEADERS)
	@mkdir -p $(@D)
	clang -std=c11 $(SAN_FLAGS) -fsanitize=thread -I. -o $@ $< $(LIB_SRC) -pthread

check-tsan:
	$(call deps_then,$(DEPS_CHECK),$(BUILD)/tsan/pool_stress)
	TSAN_OPTIONS=halt_on_error=1 $(BUILD)/tsan/pool_stress

# libFuzzer targets under ASan+UBSan, each run FUZZ_SECONDS from its corpus.
# fuzz_table's tables grow in place from 256-byte blocks (64 KiB in the
# library), so that tables of its 1,024 keys take that path too.
$(BUILD)/fuzz/fuzz_table: FUZZ_DEFS = -DKHL_RESIZE_BYTES=256u
$(BUILD)/fuzz/fuzz_%: fuzz/fuzz_%.c $(LIB_SRC) $(HEADERS) $(SPLIT_HEADER) $(SUPPORT_SRC) $(SUPPORT_HEADERS)
	@mkdir -p $(@D)
	clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I. \
	    $(FUZZ_DEFS) -o $@ $< $(LIB_SRC) $(SUPPORT_SRC) -pthread

fuzz:
	$(call deps_then,$(DEPS_CHECK),$(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%))
	@for t in $(FUZZ_TARGETS); do \
	    mkdir -p $(BUILD)/fuzz/corpus-$$t && \
	    echo "fuzz: $$t for $(FUZZ_SECONDS) s" && \
	    $(BUILD)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	        -artifact_prefix=$(BUILD)/fuzz/$$t- $(BUILD)/fuzz/corpus-$$t fuzz/corpus/$$t \
	        > $(BUILD)/fuzz/$$t.log 2>&1; rc=$$?; \
	    tail -12 $(BUILD)/fuzz/$$t.log; \
	    [ $$rc = 0 ] || { echo "fuzz: $$t failed, see $(BUILD)/fuzz/$$t.log"; exit 1; }; \
	done

# --- other word sizes and byte orders (make check-cross) ---------------------

# What x86-64 never shows: a 32-bit size_t and a uint64_t aligned to 4 in a
# struct (i386, with the portable group code and with SSE2), and big-endian
# words (s390x).  Each fuzz target's checks run outside libFuzzer
# (fuzz/replay.c) on its committed corpus and on generated inputs, under
# UBSan, built by a cross compiler and run under qemu-user with the cross
# libc as its root.  An architecture is named by its Debian cross triplet's
# first word, a variant by what follows a '-'.
DEPS_CROSS  = gcc-i686-linux-gnu libc6-dev-i386-cross libubsan1-i386-cross \
              gcc-s390x-linux-gnu libc6-dev-s390x-cross libubsan1-s390x-cross qemu-user
CROSS_ARCHS = i386 i386-sse2 s390x
CROSS_TRIPLET_i386  = i686-linux-gnu
CROSS_TRIPLET_s390x = s390x-linux-gnu
CROSS_FLAGS_i386-sse2 = -msse2
cross_arch = $(firstword $(subst -, ,$(1)))
cross_triplet = $(CROSS_TRIPLET_$(call cross_arch,$(1)))
# Generated inputs per target: about a minute of qemu for every build.
REPLAY_COUNT_table = 2000
REPLAY_COUNT_pool  = 300
CROSS_BINS = $(foreach a,$(CROSS_ARCHS),$(FUZZ_TARGETS:%=$(BUILD)/cross/$(a)/replay_%))

$(BUILD)/cross/%/replay_table: FUZZ_DEFS = -DKHL_RESIZE_BYTES=256u
define cross_build
$(BUILD)/cross/$(1)/replay_%: fuzz/fuzz_%.c fuzz/replay.c $(LIB_SRC) $(HEADERS) $(SPLIT_HEADER) \
                              $(SUPPORT_SRC) $(SUPPORT_HEADERS)
	@mkdir -p $$(@D)
	$(call cross_triplet,$(1))-gcc $(CROSS_FLAGS_$(1)) -std=c11 -Wall -Wextra -Wpedantic -Werror \
	    -O1 -g -fsanitize=undefined -fno-sanitize-recover=all -I. $$(FUZZ_DEFS) \
	    -o $$@ $$< fuzz/replay.c $(LIB_SRC) $(SUPPORT_SRC) -pthread
endef
$(foreach a,$(CROSS_ARCHS),$(eval $(call cross_build,$(a))))

# A one-group block's size is a constant computed without checks, so a
# 32-bit size_t caps a key with its value at 128 MiB: compiled, not run.
CROSS_HUGE = $(CROSS_TRIPLET_i386)-gcc -std=c11 -Wall -Wextra -Wpedantic -Werror -I. \
             -c tests/compile_fail/huge_types.c -o /dev/null
check-cross:
	$(call deps_then,$(DEPS_CROSS),$(CROSS_BINS))
	@mkdir -p $(BUILD)/cross
	@echo "check-cross: a value of 128 MiB - 64 compiles on i386, one of 128 MiB does not"
	@$(CROSS_HUGE) '-DVALUE_BYTES=((size_t)1 << 27) - 64'
	@if $(CROSS_HUGE) '-DVALUE_BYTES=(size_t)1 << 27' > $(BUILD)/cross/huge.log 2>&1; then \
	    echo "check-cross: a value of 128 MiB compiled on i386"; exit 1; fi
	@grep -q "128 MiB or more where size_t has 32 bits" $(BUILD)/cross/huge.log || \
	    { cat $(BUILD)/cross/huge.log; echo "check-cross: the error does not say why"; exit 1; }
	@set -e; $(foreach a,$(CROSS_ARCHS),$(foreach t,$(FUZZ_TARGETS), \
	    echo "check-cross: $(t) on $(a)"; \
	    qemu-$(call cross_arch,$(a)) -L /usr/$(call cross_triplet,$(a)) \
	        $(BUILD)/cross/$(a)/replay_$(t) -n $(REPLAY_COUNT_$(t)) fuzz/corpus/$(t)/*;))

# --- every package at once --------------------------------------------------

# For a machine that will run everything, or to see the whole list as a
# non-root user: mk/deps.sh prints the apt-get command.
deps:
	@sh mk/deps.sh $(sort $(DEPS_LIB) $(DEPS_TEST) $(DEPS_CHECK) $(DEPS_CROSS) $(BENCH_DEPS) $(DEPS_MRUBY))
	@echo "deps: every package the project uses is installed"

# --- install ---------------------------------------------------------------

# Not installed: the pool's layers, which programs never include.
INTERNAL_HEADERS = $(addprefix khashlite/,khl_pool_internal.h khl_pool_os.h khl_pool_large.h \
                   khl_pool_class.h khl_pool_thread.h khl_pool_check.h)

install: $(LIB)
	install -d $(DESTDIR)$(PREFIX)/include/khashlite $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 $(filter-out $(INTERNAL_HEADERS),$(HEADERS)) $(DESTDIR)$(PREFIX)/include/khashlite/
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(shell sed -n 's/^#define KHL_VERSION "\(.*\)"/\1/p' khashlite/khashlite.h)|' \
	    mk/khashlite.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/khashlite.pc

uninstall:
	rm -rf $(DESTDIR)$(PREFIX)/include/khashlite
	rm -f $(DESTDIR)$(PREFIX)/lib/libkhashlite.a $(DESTDIR)$(PREFIX)/lib/pkgconfig/khashlite.pc

clean:
	rm -rf $(BUILD)
