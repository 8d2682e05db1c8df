#!/usr/bin/env bash
# mruby/bench.sh MODE CSV: the `mruby` section of `make bench` (called by
# bench/scripts/run.sh).  Times mruby 3.1 stock and khl (iv and method
# tables on khashlite), each on glibc and on khl_pool, running all four of
# mruby's own benchmark/*.rb, sized to take about a second or less
# (ao_render, fib at 30, so_lists at a third of its size, app_lc_fizzbuzz
# up to 30 instead of 100, which takes a minute), and bench/ruby/*.rb,
# and appends rows in bench/harness/bench.h's columns to CSV:
#   mruby_run  table = script, layout = stock|khl, allocator = glibc|khl_pool,
#              n = size: seconds and peak_rss_kb (median, min, max of the
#              repetitions, the four variants interleaved, their order
#              rotated), ratio_vs_stock (stock on glibc's CPU seconds / this
#              one's in the same round: median, min, max; above 1 is faster),
#              ratio_vs_glibc for khl_pool (the same
#              build's CPU seconds on glibc / on khl_pool, paired by
#              repetition: median, min, max), and allocf_calls (allocating calls over one
#              run, through khl-mrb-probe)
#   mruby_instr table = script, layout, allocator, n = size: instructions
#              (cachegrind, one run) and ratio_vs_stock (this build's count /
#              stock's on glibc: below 1 is fewer)
#   mruby_obj  table = ivars_K: allocs_per_object and bytes_per_object for an
#              object with K instance variables (mruby/test/per_object.rb)
#   mruby_cls  table = methods_M: blocks_per_module and bytes_per_module, the
#              method table of a module with M methods (mruby/test/per_class.rb)
# Runs only when `make mruby` has been run (build/mruby/host-khl exists):
# fetching and building mruby takes minutes, so `make bench` does not do it.
# MODE: standard (4 repetitions, 6 for a script under 0.5 s), full (9, 14),
# smoke (1, tiny sizes).
# Exits non-zero when a run fails or the builds' outputs differ.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-} csv=${2:-}
BUILD=${BUILD:-build}
M=$BUILD/mruby
declare -A reps_of=([standard]=4 [full]=9 [smoke]=1)
reps=${reps_of[$mode]:-}
[ -n "$reps" ] && [ -n "$csv" ] || { echo "usage: $0 standard|full|smoke CSVFILE" >&2; exit 2; }
for b in host-stock host-khl probe-stock probe-khl; do
    if [ ! -x "$M/$b" ]; then
        echo "[mruby] $M/$b missing: run \`make mruby\` first; no mruby rows" >&2
        exit 0
    fi
done

# mruby's benchmarks read their size from ARGV or a constant, which the
# hosts do not provide: sized copies go to $M/bench (never committed).
w=$M/bench
mkdir -p "$w"
src=$M/src/benchmark
small() { [ "$mode" = smoke ] && echo "$1" || echo "$2"; }
{ echo "ARGV = [\"$(small 4 12)\"]"; cat "$src/bm_ao_render.rb"; } > "$w/bm_ao_render.rb"
sed "s/fib(37)/fib($(small 12 30))/" "$src/bm_fib.rb" > "$w/bm_fib.rb"
sed "s/^NUM = 300/NUM = $(small 2 100)/" "$src/bm_so_lists.rb" > "$w/bm_so_lists.rb"
# FizzBuzz up to N in lambda calculus: its 100 is a Church numeral, a
# hundred nested p[...]; N of them, and the answer printed, so that the
# builds' outputs are compared.
fizzbuzz() {   # N OUT
    perl -pe 's/(?:p\[){100}x\]{100}/("p[" x '"$1"') . "x" . ("]" x '"$1"')/e; s/^# puts answer/puts answer/' \
        "$src/bm_app_lc_fizzbuzz.rb" > "$2"
    grep -q '^puts answer' "$2" || { echo "[mruby] bm_app_lc_fizzbuzz.rb: not the expected source" >&2; exit 1; }
}
fizzbuzz "$(small 5 30)" "$w/bm_app_lc_fizzbuzz.rb"

# script path, KHL_SCALE (empty for mruby's own), n for the CSV
scripts=(
    "$w/bm_ao_render.rb - $(small 4 12)"
    "$w/bm_fib.rb - $(small 12 30)"
    "$w/bm_so_lists.rb - $(small 2 100)"
    "$w/bm_app_lc_fizzbuzz.rb - $(small 5 30)"
    "bench/ruby/ao_render.rb $(small 4 28) $(small 4 28)"
    "bench/ruby/hash_churn.rb $(small 200 150000) $(small 200 150000)"
    "bench/ruby/strings.rb $(small 200 100000) $(small 200 100000)"
    "bench/ruby/object_churn.rb $(small 200 250000) $(small 200 250000)"
)
# Stock on khl_pool too: issue 21 asks each build on the pool to be at
# least as fast as the same build on glibc.
variants=("stock host-stock glibc --alloc=libc" "khl host-khl glibc --alloc=libc" "khl host-khl khl_pool --alloc=pool"
          "stock host-stock khl_pool --alloc=pool")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stat() {   # FILE of numbers -> "median min max count"
    sort -g "$1" | awk '{v[NR]=$1} END {m = NR % 2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2; printf "%.6g %.6g %.6g %d", m, v[1], v[NR], NR}'
}
row() {   # workload table layout allocator n metric median min max reps
    echo "$1,$2,$3,$4,$5,$6,$7,${10},$8,$7,$9" >> "$csv"
}

start=$(date +%s)
for s in "${scripts[@]}"; do
    read -r path scale n <<<"$s"
    name=$(basename "$path" .rb)
    [ "$scale" = - ] && scale=
    echo "[mruby] $name, $reps x ${#variants[@]} variants (3/2 as many under 0.5 s), $(( $(date +%s) - start )) s" >&2
    # Each repetition runs the four variants in an order rotated by one
    # (stock on glibc first in the first, the output the others must match),
    # so that no variant always follows the same one; a script under half a
    # second gets 3/2 of the repetitions (6 in standard mode, about 15 s
    # more in all): at 0.1-0.4 s a run on a shared machine moves by 30% and
    # more.
    nreps=$reps
    for ((r = 0; r < nreps; r++)); do
        for ((i = 0; i < ${#variants[@]}; i++)); do
            v=${variants[(i + r) % ${#variants[@]}]}
            read -r layout bin alloc flag <<<"$v"
            key=$layout-$alloc
            KHL_SCALE=$scale "$M/$bin" "$flag" --stats "$path" > "$tmp/out.$key" 2> "$tmp/err"
            sed -n 's/.* seconds=\([0-9.]*\) .*/\1/p' "$tmp/err" >> "$tmp/sec.$key"
            sed -n 's/.* cpu_seconds=\([0-9.]*\) .*/\1/p' "$tmp/err" >> "$tmp/cpu.$key"
            sed -n 's/.* peak_rss_kb=\([0-9]*\) .*/\1/p' "$tmp/err" >> "$tmp/rss.$key"
            cmp -s "$tmp/out.stock-glibc" "$tmp/out.$key" || { echo "[mruby] $name: $key output differs from stock" >&2; exit 1; }
        done
        if [ "$r" = 0 ] && awk -v s="$(head -n 1 "$tmp/sec.stock-glibc")" 'BEGIN {exit !(s < 0.5)}'; then
            nreps=$((reps * 3 / 2))
        fi
    done
    # A build on khl_pool against the same build on glibc, repetition by
    # repetition (the two ran in the same round): the median of those
    # ratios, not a ratio of medians taken apart.  CPU seconds (user and
    # system: the pool's system calls and page faults count), since on a
    # loaded 2-core machine a run's wall time also holds its waits for a CPU.
    for layout in stock khl; do
        paste "$tmp/cpu.$layout-glibc" "$tmp/cpu.$layout-khl_pool" | awk '{print $1 / $2}' > "$tmp/paired"
        read -r pmed pmn pmx cnt <<<"$(stat "$tmp/paired")"
        row mruby_run "$name" "$layout" khl_pool "$n" ratio_vs_glibc "$pmed" "$pmn" "$pmx" "$cnt"
    done
    # Against stock on glibc the same way: its CPU seconds over this
    # variant's in the same round, median (min, max) over the rounds.
    for v in "${variants[@]}"; do
        read -r layout bin alloc flag <<<"$v"
        key=$layout-$alloc
        read -r med mn mx cnt <<<"$(stat "$tmp/sec.$key")"
        row mruby_run "$name" "$layout" "$alloc" "$n" seconds "$med" "$mn" "$mx" "$cnt"
        read -r rmed rmn rmx cnt <<<"$(stat "$tmp/rss.$key")"
        row mruby_run "$name" "$layout" "$alloc" "$n" peak_rss_kb "$rmed" "$rmn" "$rmx" "$cnt"
        paste "$tmp/cpu.stock-glibc" "$tmp/cpu.$key" | awk '{print $1 / $2}' > "$tmp/paired"
        read -r pmed pmn pmx cnt <<<"$(stat "$tmp/paired")"
        row mruby_run "$name" "$layout" "$alloc" "$n" ratio_vs_stock "$pmed" "$pmn" "$pmx" "$cnt"
    done
    rm -f "$tmp"/sec.* "$tmp"/cpu.* "$tmp"/rss.*
    for layout in stock khl; do
        KHL_SCALE=$scale "$M/probe-$layout" "$path" > /dev/null 2> "$tmp/err"
        calls=$(sed -n 's/^probe: allocs=\([0-9]*\) .*/\1/p' "$tmp/err")
        row mruby_run "$name" "$layout" counted "$n" allocf_calls "$calls" "$calls" "$calls" 1
    done
done

# Instructions (cachegrind): deterministic, where wall time on these shared
# machines moves by several percent.  Smaller sizes than the timed runs
# (valgrind is some 30x slower); bm_ao_render at 6 and 12, as issue 20's
# targets name them.  The variants of a script run at once, with one hash
# seed (KHL_SEED, examples/host.h): a random one moves a count by up to half
# a percent, as a hot key lands in one group of its table or another.
if command -v valgrind > /dev/null; then
    { echo "ARGV = [\"$(small 3 6)\"]"; cat "$src/bm_ao_render.rb"; } > "$w/ir_ao_small.rb"
    sed "s/fib(37)/fib($(small 10 24))/" "$src/bm_fib.rb" > "$w/ir_fib.rb"
    sed "s/^NUM = 300/NUM = $(small 1 10)/" "$src/bm_so_lists.rb" > "$w/ir_so_lists.rb"
    fizzbuzz "$(small 3 15)" "$w/ir_fizzbuzz.rb"
    ir_scripts=(
        "$w/ir_ao_small.rb bm_ao_render - $(small 3 6)"
        "$w/bm_ao_render.rb bm_ao_render - $(small 4 12)"
        "$w/ir_fib.rb bm_fib - $(small 10 24)"
        "$w/ir_so_lists.rb bm_so_lists - $(small 1 10)"
        "$w/ir_fizzbuzz.rb bm_app_lc_fizzbuzz - $(small 3 15)"
        "bench/ruby/ao_render.rb ao_render $(small 4 8) $(small 4 8)"
        "bench/ruby/hash_churn.rb hash_churn $(small 200 20000) $(small 200 20000)"
        "bench/ruby/strings.rb strings $(small 200 20000) $(small 200 20000)"
        "bench/ruby/object_churn.rb object_churn $(small 200 20000) $(small 200 20000)"
    )
    for s in "${ir_scripts[@]}"; do
        read -r path name scale n <<<"$s"
        [ "$scale" = - ] && scale=
        echo "[mruby] $name at $n: instructions, $(( $(date +%s) - start )) s" >&2
        for v in "${variants[@]}"; do
            read -r layout bin alloc flag <<<"$v"
            KHL_SEED=1 KHL_SCALE=$scale valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
                "$M/$bin" "$flag" "$path" > /dev/null 2> "$tmp/ir.$layout-$alloc" &
        done
        wait
        ir() { sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' "$tmp/ir.$1" | tr -d ,; }
        base=$(ir stock-glibc)
        [ -n "$base" ] || { echo "[mruby] $name: no cachegrind count" >&2; exit 1; }
        for v in "${variants[@]}"; do
            read -r layout bin alloc flag <<<"$v"
            count=$(ir "$layout-$alloc")
            row mruby_instr "$name" "$layout" "$alloc" "$n" instructions "$count" "$count" "$count" 1
            ratio=$(awk -v a="$count" -v b="$base" 'BEGIN {printf "%.6f", a / b}')
            row mruby_instr "$name" "$layout" "$alloc" "$n" ratio_vs_stock "$ratio" "$ratio" "$ratio" 1
        done
    done
else
    echo "[mruby] valgrind missing: no instruction counts" >&2
fi

echo "[mruby] per-object costs, $(( $(date +%s) - start )) s" >&2
for layout in stock khl; do
    "$M/probe-$layout" mruby/test/per_object.rb 2> /dev/null | while read -r _ k calls bytes; do
        row mruby_obj "ivars_$k" "$layout" counted "$k" allocs_per_object "$calls" "$calls" "$calls" 1
        row mruby_obj "ivars_$k" "$layout" counted "$k" bytes_per_object "$bytes" "$bytes" "$bytes" 1
    done
done
# Method tables: blocks alive per module with 1 or 20 methods (per_class.rb
# also prints Class.new rows, which add the metaclass's tables).
for layout in stock khl; do
    "$M/probe-$layout" mruby/test/per_class.rb 2> /dev/null | while read -r _ kind m _ blocks bytes; do
        [ "$kind" = Module ] && [ "$m" != 0 ] || continue
        row mruby_cls "methods_$m" "$layout" counted "$m" blocks_per_module "$blocks" "$blocks" "$blocks" 1
        row mruby_cls "methods_$m" "$layout" counted "$m" bytes_per_module "$bytes" "$bytes" "$bytes" 1
    done
done
echo "[mruby] done in $(( $(date +%s) - start )) s" >&2
