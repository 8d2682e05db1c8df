#!/usr/bin/env bash
# bench/scripts/check_smoke.sh DIR: checks that a `make bench-smoke` run produced
# complete outputs, so the benchmarks cannot rot unnoticed in CI: every
# program ran on every allocator, each expected workload has rows, the report
# has its sections, the plots exist and summary.csv gives the same report.
set -euo pipefail
dir=${1:?usage: check_smoke.sh DIR}
csv=$dir/results.csv
fail() { echo "bench smoke: $*" >&2; exit 1; }

[ -s "$csv" ] || fail "no $csv"
head -1 "$csv" | grep -qx 'workload,table,layout,allocator,n,metric,value,repetitions,min,median,max' \
    || fail "bad CSV header"
awk -F, 'NR > 1 && NF != 11 { bad = 1 } END { exit bad }' "$csv" || fail "a CSV row has the wrong column count"
for a in glibc tcmalloc jemalloc mimalloc khl_pool khl_pool_inline khl_pool_hook khl_pool_ts khl_pool_per_thread floor; do
    grep -q ",$a," "$csv" || fail "no rows for allocator $a"
done
for w in churn_int churn_int_reserve churn_str churn_str_reserve hook_pair many large \
         seed_fastmm pool_latency pool_threads seed_hhs seed_lighttpd seed_latency seed_locks peers \
         vs_khash tiny growth weak_hash large_churn huge_pages; do
    grep -q "^$w," "$csv" || fail "no rows for workload $w"
done
for s in '## Headline' '## Targets' '## Table core v2 targets' '## Many live tables' '## One large table' \
         '## mruby on khashlite' '## The seeds' '## Machine and build'; do
    grep -qF "$s" "$dir/REPORT.md" || fail "REPORT.md lacks '$s'"
done
# program peers: every table has rows in each of its workloads, and every
# T1-T6 target line came out measured.
for t in khashlite boost absl khash; do
    for w in peers vs_khash tiny growth; do
        grep -q "^$w,$t," "$csv" || fail "no $w rows for $t"
    done
done
for tg in T1 T2 T3 T4 T5 T6; do
    grep -q "^| $tg " "$dir/REPORT.md" || fail "REPORT.md has no $tg target"
done
if grep '^| T[1-6] ' "$dir/REPORT.md" | grep -q 'not measured'; then
    fail "a core v2 target was not measured"
fi
# Issue 14's rows: the hook, threads sharing a pool, a pool per thread.
for tg in 'mimalloc / khl_pool_hook' 'threads sharing one pool' 'threads, a pool each'; do
    grep '^| ' "$dir/REPORT.md" | grep -F "$tg" | grep -qv 'not measured' \
        || fail "REPORT.md has no measured '$tg' target"
done
grep -qF '### Threads sharing one allocator' "$dir/REPORT.md" || fail "REPORT.md lacks the threads section"
# Issue 21's rows: large-block churn, every target measured.
grep -qF '## Large-block churn' "$dir/REPORT.md" || fail "REPORT.md lacks the large-block churn section"
for a in glibc mimalloc khl_pool; do
    grep -q "^large_churn,alloc,[^,]*,$a," "$csv" || fail "no large_churn rows for $a"
done
if [ "$(grep '^| large churn: ' "$dir/REPORT.md" | grep -cv 'not measured')" -ne 5 ]; then
    fail "REPORT.md lacks a measured large churn target"
fi
# Issue 21's mruby rows, where `make mruby` was run: every script on each
# build, on glibc and on khl_pool, and both target rows measured.
if grep -q '^mruby_run,' "$csv"; then
    for v in stock,glibc stock,khl_pool khl,glibc khl,khl_pool; do
        grep -q "^mruby_run,object_churn,$v," "$csv" || fail "no mruby object_churn rows for $v"
    done
    grep -qF '### mruby on khl_pool' "$dir/REPORT.md" || fail "REPORT.md lacks the mruby on khl_pool section"
    if [ "$(grep '^| mruby [a-z]* on khl_pool / ' "$dir/REPORT.md" | grep -cv 'not measured')" -ne 2 ]; then
        fail "REPORT.md lacks a measured mruby on khl_pool target"
    fi
fi
# Every table of REPORT.md has its header and at least one row: no header
# printed with no rows after it, no rows printed without one.
awk '{ l[NR] = $0 } END {
    for (i = 1; i <= NR; ++i) {
        if (l[i] ~ /^\|/ && l[i - 1] !~ /^\|/ && l[i + 1] !~ /^\|[-|]+$/)
            { print "REPORT.md line " i ": table rows without a header"; bad = 1 }
        if (l[i] ~ /^\|[-|]+$/ && l[i + 1] !~ /^\|/)
            { print "REPORT.md line " i - 1 ": table header without rows"; bad = 1 }
    }
    exit bad }' "$dir/REPORT.md" >&2 || fail "REPORT.md has a broken table"
# summary.csv, what `make bench` commits beside REPORT.md, holds every figure
# of the report: the report written again from it alone is the same.
[ -s "$dir/summary.csv" ] || fail "no $dir/summary.csv"
again=$(mktemp -d)
trap 'rm -rf "$again"' EXIT
cp "$dir/summary.csv" "$dir/machine.txt" "$again/"
"${BUILD:-build}/bench/khl-bench-report" "$again" 2> /dev/null || fail "the report cannot be written from summary.csv"
cmp -s "$dir/REPORT.md" "$again/REPORT.md" || fail "REPORT.md written from summary.csv alone differs"
for p in churn_ns churn_ratio churn_bytes latency; do
    grep -q '<svg' "$dir/$p.svg" || fail "plot $p.svg missing or empty"
done
echo "bench smoke: $(($(wc -l < "$csv") - 1)) rows, report and plots complete"
