#!/usr/bin/env bash
# bench/scripts/interp.sh MODE CSV: times real interpreters (mruby 3.1 through
# khl-mruby, Lua 5.4 through khl-lua) running our scripts in bench/ruby and
# bench/lua on glibc, tcmalloc, jemalloc, mimalloc (LD_PRELOAD) and on
# khl_pool (--alloc=pool, --alloc=pool-reserved), and appends rows to CSV:
#   workload interp, table = script, layout = mruby|lua, allocator,
#   n = KHL_SCALE, metrics seconds and peak_rss_kb (median/min/max over the
#   repetitions), ratio_vs_glibc (median seconds / glibc's median seconds),
#   pool_peak_bytes (the pool's highest in-use bytes) for the pool runs.
# MODE: standard (3 repetitions, each run ~0.5 s on glibc, ~1 min in all),
#       full (5 repetitions at the scripts' default sizes, 1-3 s a run),
#       smoke (1 repetition at tiny sizes: checks everything runs).
# Called by bench/scripts/run.sh; runs alone too:
#   BUILD=build bash bench/scripts/interp.sh standard /tmp/x.csv
# Exits non-zero when a run fails or when a script's output differs between
# allocators (the output is the script's checksum: it must not depend on
# the allocator).
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-}
csv=${2:-}
BUILD=${BUILD:-build}
case "$mode" in
    standard) reps=3 ;;
    full)     reps=5 ;;
    smoke)    reps=1 ;;
    *) echo "usage: $0 standard|full|smoke CSVFILE" >&2; exit 2 ;;
esac
[ -n "$csv" ] || { echo "usage: $0 standard|full|smoke CSVFILE" >&2; exit 2; }

# The hosts are examples, not benchmark binaries: bench-build does not make
# them, so make them here (a no-op when they are up to date).
mruby_bin=$BUILD/examples/khl-mruby
lua_bin=$BUILD/examples/khl-lua
${MAKE:-make} -s BUILD="$BUILD" "$mruby_bin" "$lua_bin" >&2

# interpreter script scale(standard) scale(full) scale(smoke).  Standard
# sizes take ~0.3-0.5 s on glibc on the 2-core reference machine, so the
# 6 scripts x 6 allocators x 3 repetitions stay around a minute; full uses
# the scripts' own defaults (1-3 s).
scripts=(
    "mruby ao_render  28     48      4"
    "mruby hash_churn 200000 600000  200"
    "mruby strings    150000 250000  200"
    "lua   ao_render  36     72      4"
    "lua   tables     300000 1500000 200"
    "lua   strings    150000 400000  200"
)

libdir=/usr/lib/x86_64-linux-gnu
declare -A preload=(
    [glibc]=""
    [tcmalloc]=$libdir/libtcmalloc_minimal.so.4
    [jemalloc]=$libdir/libjemalloc.so.2
    [mimalloc]=$libdir/libmimalloc.so.2
)
# allocator label, LD_PRELOAD key, --alloc value
allocs=()
for m in glibc tcmalloc jemalloc mimalloc; do
    if [ -n "${preload[$m]}" ] && [ ! -f "${preload[$m]}" ]; then
        echo "[interp] warning: ${preload[$m]} missing, no $m rows" >&2
        continue
    fi
    allocs+=("$m $m libc")
done
allocs+=("khl_pool glibc pool" "khl_pool_reserved glibc pool-reserved")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

total=$(( ${#scripts[@]} * ${#allocs[@]} * reps ))
i=0
start=$(date +%s)
for s in "${scripts[@]}"; do
    read -r interp name std full smoke <<<"$s"
    case "$mode" in standard) scale=$std ;; full) scale=$full ;; smoke) scale=$smoke ;; esac
    if [ "$interp" = mruby ]; then bin=$mruby_bin; file=bench/ruby/$name.rb
    else bin=$lua_bin; file=bench/lua/$name.lua; fi
    ref=""
    # Repetitions outermost, so a burst of load from elsewhere on the
    # machine spreads over all allocators instead of hitting one.
    for r in $(seq 1 "$reps"); do
        for a in "${allocs[@]}"; do
            read -r label key flag <<<"$a"
            i=$((i + 1))
            echo "[interp] $i/$total $interp $name on $label (n=$scale, rep $r/$reps, $(( $(date +%s) - start )) s)" >&2
            out=$tmp/out
            if ! env ${preload[$key]:+LD_PRELOAD=${preload[$key]}} KHL_SCALE="$scale" \
                    "$bin" --alloc="$flag" --csv="$name" "$file" > "$out" 2> "$tmp/err"; then
                echo "[interp] FAILED: $interp $name on $label (--alloc=$flag, KHL_SCALE=$scale):" >&2
                cat "$tmp/err" >&2
                exit 1
            fi
            grep -v '^interp,' "$out" > "$tmp/text" || true
            grep -q '^checksum ' "$tmp/text" || {
                echo "[interp] FAILED: $interp $name on $label printed no checksum line" >&2; exit 1; }
            if [ -z "$ref" ]; then
                ref=$tmp/ref-$interp-$name
                cp "$tmp/text" "$ref"
            elif ! cmp -s "$ref" "$tmp/text"; then
                echo "[interp] FAILED: $interp $name printed something else on $label:" >&2
                diff "$ref" "$tmp/text" >&2 || true
                exit 1
            fi
            # The binary's own per-run rows: metric value -> one file per series.
            grep '^interp,' "$out" | while IFS=, read -r _ _ _ _ _ metric value _; do
                echo "$value" >> "$tmp/v-$interp-$name-$label-$metric"
            done
        done
    done

    # Summaries: median/min/max per (allocator, metric), then the ratio of
    # each allocator's median seconds to glibc's.
    for a in "${allocs[@]}"; do
        read -r label _ _ <<<"$a"
        for f in "$tmp/v-$interp-$name-$label-"*; do
            metric=${f##*-"$label"-}
            sort -g "$f" | awk -v w="$interp" -v t="$name" -v l="$label" -v n="$scale" -v m="$metric" '
                { v[NR] = $1 }
                END {
                    med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                    printf "interp,%s,%s,%s,%s,%s,%.10g,%d,%.10g,%.10g,%.10g\n", t, w, l, n, m, med, NR, v[1], med, v[NR]
                }' >> "$tmp/rows"
        done
    done
    base=$(awk -F, -v t="$name" -v w="$interp" '$2 == t && $3 == w && $4 == "glibc" && $6 == "seconds" { print $7 }' "$tmp/rows")
    if [ -n "$base" ]; then
        awk -F, -v OFS=, -v t="$name" -v w="$interp" -v b="$base" '
            $2 == t && $3 == w && $6 == "seconds" {
                r = (b > 0) ? $7 / b : 0
                printf "interp,%s,%s,%s,%s,ratio_vs_glibc,%.4f,%s,%.4f,%.4f,%.4f\n", t, w, $4, $5, r, $8, r, r, r
            }' "$tmp/rows" > "$tmp/ratios"
        cat "$tmp/ratios" >> "$tmp/rows"
    fi
done
cat "$tmp/rows" >> "$csv"
echo "[interp] $total runs done in $(( $(date +%s) - start )) s, $(wc -l < "$tmp/rows") rows appended to $csv" >&2
