# bench/bench.mk: benchmark binaries, one per program and malloc, and the
# `make bench` / `make bench-full` / `make bench-smoke` drivers.  Included by
# the top-level Makefile.
#
# The tree: harness/ (the clock, rows, flags and allocators every program
# shares), programs/ (one file per program, plus its own helpers named after
# it), peers/ (the other tables and allocators, one adapter each), scripts/
# (the drivers), report/ (REPORT.md, summary.csv and the plots), ruby/ and
# lua/ (the interpreters' scripts), results/ (the committed summary of a run).
#
# Every output of a run goes to build/bench/latest/ (results.csv, traces/,
# machine.txt, the plots and their .dat files, REPORT.md, summary.csv); only
# REPORT.md and summary.csv are copied to bench/results/latest/ and committed.
# `make bench-report` writes them again from build/bench/latest/results.csv
# without running anything (after a change to bench/report/report.c).
#
# A program P is built from bench/programs/P.c plus the optional extra sources
# named in P_EXTRA (C or C++), linked once per malloc in P_MALLOCS (default
# BENCH_MALLOCS):
#   build/bench/khl-bench-P-glibc, -tcmalloc, -jemalloc, -mimalloc
# and run by bench/scripts/run.sh once per malloc, then on khl_pool over
# glibc unless P_POOL is no.  BENCH_JOBS is that plan, passed to run.sh.

BENCH_MALLOCS  = glibc tcmalloc jemalloc mimalloc
MALLOC_LIBS_glibc    =
MALLOC_LIBS_tcmalloc = -ltcmalloc_minimal
MALLOC_LIBS_jemalloc = -ljemalloc
MALLOC_LIBS_mimalloc = -lmimalloc

# fastmm is not among them: one binary for every malloc (below).
BENCH_PROGS   ?= churn large objmodel peers seeds
BENCH_OPT     ?= -O2
BENCH_CFLAGS   = -std=gnu11 $(BENCH_OPT) -g -Wall -Wextra -I. -Ibench
BENCH_CXXFLAGS = -std=c++17 $(BENCH_OPT) -g -Wall -Wextra -I. -Ibench
# The programs that compare tables (peers, large) build every table as its
# users build a release, with the flags of Jackson Allan's benchmark: at -O2
# without NDEBUG, absl's and boost's debug assertions ran in every operation
# (absl's u32 insert took 2.9x khashlite's time at 200k keys; 1.4x built
# so).  khashlite's and khash's code is inline in the program's file.
# Every function starts on 64 bytes and every loop on 32, whichever table it
# serves: with the compiler's own placement, a change to one table's code
# moved the others' loops across fetch boundaries: the flat array's life of
# 8 keys took 58 ns in one build and 40 in the next, its code the same, and
# T3's ratios at n = 4-8 went from 1.11-1.42 to 1.44-1.65 (3 runs of each
# build in turn); aligned, the two builds gave 1.05-1.41 and 1.07-1.41.
TABLE_BENCH_OBJ = $(addprefix $(BUILD)/bench/obj/,programs/peers.o programs/large.o \
                    programs/large_lf77.o programs/hugepages.o peers/flat.o peers/mruby.o \
                    peers/adapter.o)
TABLE_BENCH_OPT = -O3 -DNDEBUG -falign-functions=64 -falign-loops=32
export TABLE_BENCH_OPT      # run.sh writes it into REPORT.md's environment
$(TABLE_BENCH_OBJ): BENCH_OPT = $(TABLE_BENCH_OPT)
$(TABLE_BENCH_OBJ): bench/bench.mk
BENCH_LIBS     = -lm -pthread -ldl
BENCH_COMMON   = $(BUILD)/bench/obj/harness/bench.o $(BUILD)/bench/obj/harness/alloc.o \
                 $(BUILD)/bench/obj/harness/keys.o $(BUILD)/bench/obj/harness/dl.o $(SUPPORT_OBJ)
BENCH_HEADERS  = $(wildcard bench/*/*.h) $(SUPPORT_HEADERS) $(HEADERS)
BENCH_DEPS     = libgoogle-perftools-dev libjemalloc-dev libmimalloc-dev libhts-dev \
                 libmruby-dev liblua5.4-dev libabsl-dev uthash-dev libboost1.81-dev \
                 gnuplot-nox libxxhash-dev pkg-config valgrind

# Per-program extra sources and libraries (each program's author owns its lines).
# They must be set before the link rules below are generated.
seeds_EXTRA = bench/peers/boost_pool.cpp
seeds_LIBS  =
large_EXTRA = bench/peers/adapter.c bench/peers/flat.cpp bench/peers/mruby.c \
              bench/programs/large_lf77.c
large_LIBS  = $(shell pkg-config --libs absl_flat_hash_map) -lmruby -lm
# One large table is table work, not allocator work (a rebuild is one
# allocation), and the report reads its glibc rows only: glibc only, which
# keeps `make bench` near 9 minutes with peers.
large_MALLOCS = glibc
large_POOL    = no
churn_EXTRA =
churn_LIBS  =
# peers compares tables, not mallocs, and counts memory as glibc spends it.
peers_EXTRA   = bench/peers/adapter.c bench/peers/flat.cpp
peers_LIBS    = $(shell pkg-config --libs absl_flat_hash_map)
peers_MALLOCS = glibc
peers_POOL    = no

bench_mallocs = $(or $($(1)_MALLOCS),$(BENCH_MALLOCS))
BENCH_JOBS = $(foreach p,$(BENCH_PROGS),$(foreach m,$(call bench_mallocs,$(p)),$(p):$(m):libc) \
                 $(if $(filter no,$($(p)_POOL)),,$(p):glibc:pool))

.PHONY: bench bench-full bench-smoke bench-build bench-report

$(BUILD)/bench/obj/%.o: bench/%.c $(BENCH_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) -c $< -o $@

$(BUILD)/bench/obj/%.o: bench/%.cpp $(BENCH_HEADERS)
	@mkdir -p $(@D)
	$(CXX) $(BENCH_CXXFLAGS) -c $< -o $@

# The only object that differs between a program's binaries: its malloc's name.
$(BUILD)/bench/obj/malloc-%.o: bench/harness/malloc_name.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) -DBENCH_MALLOC_NAME='"$*"' -c $< -o $@

# One link rule per (program, malloc).
define BENCH_LINK
$(BUILD)/bench/khl-bench-$(1)-$(2): $(BUILD)/bench/obj/programs/$(1).o $$(patsubst bench/%,$(BUILD)/bench/obj/%.o,$$(basename $$($(1)_EXTRA))) $(BENCH_COMMON) $(BUILD)/bench/obj/malloc-$(2).o $(LIB)
	$$(CXX) -o $$@ $$^ $$($(1)_LIBS) $(BENCH_LIBS) $(MALLOC_LIBS_$(2))
BENCH_BINS += $(BUILD)/bench/khl-bench-$(1)-$(2)
endef
$(foreach p,$(BENCH_PROGS),$(foreach m,$(call bench_mallocs,$(p)),$(eval $(call BENCH_LINK,$(p),$(m)))))

# seed_fastmm (bench/programs/fastmm.c): one binary on glibc that loads the other
# mallocs itself, so every contender runs in one process.  The library's
# sources are compiled into it with -flto, so the pool's fast paths can
# inline into the loop (its khl_pool_inline rows), as in a program linking
# libkhashlite statically with LTO; fastmm_direct.c is compiled without it
# (khl_pool_direct: ordinary calls).
FASTMM_BIN = $(BUILD)/bench/khl-bench-fastmm
FASTMM_OBJ = $(LIB_SRC:khashlite/%.c=$(BUILD)/bench/obj/lto/%.o) $(BUILD)/bench/obj/lto/fastmm.o \
             $(BUILD)/bench/obj/programs/fastmm_direct.o

$(BUILD)/bench/obj/lto/%.o: khashlite/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(KHL_CFLAGS) -flto -c $< -o $@

$(BUILD)/bench/obj/lto/fastmm.o: bench/programs/fastmm.c $(BENCH_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) -flto -c $< -o $@

$(FASTMM_BIN): $(FASTMM_OBJ) $(BENCH_COMMON) $(BUILD)/bench/obj/malloc-glibc.o
	$(CC) -O2 -flto -o $@ $^ $(BENCH_LIBS) -ldl
BENCH_BINS += $(FASTMM_BIN)

# large_churn (bench/programs/largechurn.c): like fastmm, one binary on glibc
# that loads the other mallocs itself; the pool is the library as linked.
LARGECHURN_BIN = $(BUILD)/bench/khl-bench-largechurn
$(LARGECHURN_BIN): $(BUILD)/bench/obj/programs/largechurn.o $(BENCH_COMMON) $(BUILD)/bench/obj/malloc-glibc.o $(LIB)
	$(CC) -O2 -o $@ $^ $(BENCH_LIBS)
BENCH_BINS += $(LARGECHURN_BIN)

# huge_pages (bench/programs/hugepages.c): a large table on khl_pool with
# and without huge_pages, one binary on glibc.
HUGEPAGES_BIN = $(BUILD)/bench/khl-bench-hugepages
$(HUGEPAGES_BIN): $(BUILD)/bench/obj/programs/hugepages.o $(BENCH_COMMON) $(BUILD)/bench/obj/malloc-glibc.o $(LIB)
	$(CC) -O2 -o $@ $^ $(BENCH_LIBS)
BENCH_BINS += $(HUGEPAGES_BIN)

$(BUILD)/bench/khl-bench-report: bench/report/report.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) -o $@ $< -lm

bench-build: $(BENCH_BINS) $(BUILD)/bench/khl-bench-report

bench:
	$(call deps_then,$(BENCH_DEPS),bench-build)
	BUILD=$(BUILD) BENCH_JOBS="$(strip $(BENCH_JOBS))" bash bench/scripts/run.sh standard
bench-full:
	$(call deps_then,$(BENCH_DEPS),bench-build)
	BUILD=$(BUILD) BENCH_JOBS="$(strip $(BENCH_JOBS))" bash bench/scripts/run.sh full
bench-smoke:
	$(call deps_then,$(BENCH_DEPS),bench-build)
	BUILD=$(BUILD) BENCH_JOBS="$(strip $(BENCH_JOBS))" bash bench/scripts/run.sh smoke
bench-report: $(BUILD)/bench/khl-bench-report
	BUILD=$(BUILD) bash bench/scripts/run.sh report
