#!/usr/bin/env bash
# bench/scripts/run.sh MODE: runs every benchmark binary (one per program and malloc,
# plus the glibc ones on khl_pool, and khl-bench-fastmm), collects one
# results.csv, writes the machine details, then REPORT.md, summary.csv and
# the plots (bench/report/report.c, gnuplot).
#   standard  `make bench`: about nine minutes on 2 cores (4 repetitions)
#   full      `make bench-full`: big sizes, more repetitions
#   smoke     CI: tiny sizes, one repetition, checks the outputs are complete
#   report    `make bench-report`: no runs, the report again from the last
#             standard or full run's results.csv (after a change to report.c)
# Every output goes to $BUILD/bench/latest (smoke: $BUILD/bench/smoke):
# results.csv, traces/, machine.txt, the plots and their .dat files,
# REPORT.md and summary.csv.  Standard, full and report then copy REPORT.md
# and summary.csv, and nothing else, to bench/results/latest, the committed
# summary of the run.
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-standard}
BUILD=${BUILD:-build}
TABLE_BENCH_OPT=${TABLE_BENCH_OPT:?run by bench/bench.mk, which sets it}
case "$mode" in
    standard) flags=(--reps=4 --warmup=1) ;;
    full)     flags=(--full --reps=9 --warmup=2) ;;
    smoke)    flags=(--quick --reps=1 --warmup=0) ;;
    report)   ;;
    *) echo "usage: $0 standard|full|smoke|report" >&2; exit 2 ;;
esac

out=$BUILD/bench/latest
publish=bench/results/latest
[ "$mode" = smoke ] && out=$BUILD/bench/smoke && publish=
csv=$out/results.csv

# Writes the report into $out, and copies what is committed to $publish.
report() {
    "$BUILD/bench/khl-bench-report" "$out"
    echo "[bench] every output: $out/" >&2
    [ -n "$publish" ] || return 0
    rm -rf "$publish"
    mkdir -p "$publish"
    cp "$out/REPORT.md" "$out/summary.csv" "$publish/"
    echo "[bench] report: $publish/REPORT.md, $publish/summary.csv" >&2
}

if [ "$mode" = report ]; then
    [ -s "$csv" ] || { echo "$0: no $csv: run make bench first" >&2; exit 1; }
    report
    exit 0
fi

rm -rf "$out"
mkdir -p "$out/traces"
echo "workload,table,layout,allocator,n,metric,value,repetitions,min,median,max" > "$csv"

# The (program, malloc, allocator) runs bench.mk planned: "prog:malloc:libc|pool".
: "${BENCH_JOBS:?run through make bench, bench-full or bench-smoke (it sets BENCH_JOBS)}"
jobs=()
for j in $BENCH_JOBS; do jobs+=("${j//:/ }"); done

start=$(date +%s)
i=0
for j in "${jobs[@]}"; do
    read -r p m a <<<"$j"
    i=$((i + 1))
    echo "[bench] $i/${#jobs[@]} $p on $m (--alloc=$a), $(( $(date +%s) - start )) s" >&2
    "$BUILD/bench/khl-bench-$p-$m" "${flags[@]}" --alloc="$a" --trace-dir="$out/traces" >> "$csv"
done
# seed_fastmm: one binary that loads every malloc itself (bench/programs/fastmm.c).
echo "[bench] seed_fastmm, every allocator in one process, $(( $(date +%s) - start )) s" >&2
"$BUILD/bench/khl-bench-fastmm" "${flags[@]}" >> "$csv"
# large_churn: the same way, for blocks of 16 KiB-1 MiB (bench/programs/largechurn.c).
echo "[bench] large_churn, every allocator in one process, $(( $(date +%s) - start )) s" >&2
"$BUILD/bench/khl-bench-largechurn" "${flags[@]}" >> "$csv"
# huge_pages: a large table on khl_pool with and without huge pages
# (bench/programs/hugepages.c).
echo "[bench] huge_pages, $(( $(date +%s) - start )) s" >&2
"$BUILD/bench/khl-bench-hugepages" "${flags[@]}" >> "$csv"
# Real interpreters (mruby, Lua) running scripts on each allocator.
if [ -f bench/scripts/interp.sh ]; then
    BUILD=$BUILD bash bench/scripts/interp.sh "$mode" "$csv"
fi
# mruby built from source, stock and on khashlite: only after `make mruby`
# (mruby/bench.sh says so and adds no rows otherwise).
BUILD=$BUILD bash mruby/bench.sh "$mode" "$csv"
echo "[bench] all runs done in $(( $(date +%s) - start )) s" >&2

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "mode: $mode"
    echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cores)"
    echo "kernel: $(uname -sr)"
    echo "compiler: $(${CC:-cc} --version | head -1)"
    echo "flags: -O2 (library), -std=gnu11 -O2 -g (benchmarks; $TABLE_BENCH_OPT for the table programs peers and large), -flto (khl-bench-fastmm)"
    echo "glibc: $(ldd --version | head -1)"
    for pkg in libgoogle-perftools-dev libjemalloc-dev libmimalloc-dev libhts-dev libmruby-dev \
               libabsl-dev uthash-dev libboost1.81-dev libxxhash-dev; do
        echo "$pkg: $(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || echo missing)"
    done
} > "$out/machine.txt"

report
