#!/bin/sh
# mruby/test.sh: `make mruby-test`.  Needs `make mruby` done (stock, khl and
# their hosts under $BUILD/mruby).  Fails on the first broken check.
#  1. mruby's own `rake test` (mrbtest + bintest) on stock and khl: nothing
#     KO or crashed, and the same counts on both.
#  2. Our scripts (bench/ruby/*.rb at small sizes, mruby/test/ivars.rb) print
#     the same on stock, khl, and khl on khl_pool; the pool ends at 0 bytes.
#     mruby/test/order.rb prints the same on khl under two hash seeds.
#  3. A script that raises: exit 1, pool at 0.
#  4. Out of memory (khl-mrb-probe): a failed iv-table or method-table
#     growth leaves the table as it was; a script that exhausts a memory limit ends in NoMemoryError
#     with no crash and every byte back after mrb_close; an object with 1 to
#     4 variables costs khl one allocation, and so do the methods of a module
#     with 1 or 20 of them.
#  5. stock and khl built with clang under ASan+UBSan: `rake test` on both
#     (the same counts), and step 4 again on khl.
set -eu
cd "$(dirname "$0")/.."
B=${BUILD:-build}
M=$B/mruby
step() { printf '\n=== mruby-test: %s\n' "$*"; }
fail() { echo "mruby-test: FAIL: $*" >&2; exit 1; }

counts() {   # the summary lines of mrbtest and bintest in a rake test log
    grep -E '^ *(Total|OK|KO|Crash|Skip): *[0-9]+ *$' "$1" | tr -s ' ' | tr '\n' ' '
}
rake_test() {   # VARIANT
    log=$M/$1-test.log
    sh mruby/build.sh "$1" "$M/src" "$M/$1" test > "$log" 2>&1 || { tail -30 "$log"; fail "rake test on $1 (log: $log)"; }
    c=$(counts "$log")
    echo "$1: $c"
    echo "$c" | grep -Eq 'KO: [1-9]|Crash: [1-9]' && fail "$1 has failures (log: $log)"
    [ "$(echo "$c" | grep -o 'Total:' | wc -l)" = 2 ] || fail "$1: no mrbtest/bintest summary (log: $log)"
}

step "1. rake test on stock and khl"
rake_test stock
rake_test khl
[ "$(counts "$M/stock-test.log")" = "$(counts "$M/khl-test.log")" ] || fail "stock and khl counts differ"
echo "same counts on stock and khl"

step "2. scripts: same output on stock, khl, khl + khl_pool"
out=$M/out
mkdir -p "$out"
for s in bench/ruby/*.rb mruby/test/ivars.rb mruby/test/methods.rb mruby/test/method_misses.rb; do
    n=$(basename "$s" .rb)
    case $n in ao_render) scale=6 ;; hash_churn|strings|object_churn) scale=3000 ;; *) scale= ;; esac
    for v in stock khl khl-pool; do
        case $v in khl-pool) bin=$M/host-khl; a=--alloc=pool ;; *) bin=$M/host-$v; a=--alloc=libc ;; esac
        KHL_SCALE=$scale "$bin" "$a" "$s" > "$out/$n.$v" 2>&1 || fail "$n on $v exited $? ($out/$n.$v)"
    done
    cmp -s "$out/$n.stock" "$out/$n.khl" || fail "$n: khl output differs from stock (diff $out/$n.stock $out/$n.khl)"
    cmp -s "$out/$n.stock" "$out/$n.khl-pool" || fail "$n: khl on khl_pool differs from stock"
    echo "$n: identical ($(wc -l < "$out/$n.stock") lines)"
done

for seed in 1 2; do
    KHL_SEED=$seed "$M/host-khl" --alloc=libc mruby/test/order.rb > "$out/order.$seed" 2>&1 ||
        fail "order.rb exited $? ($out/order.$seed)"
done
cmp -s "$out/order.1" "$out/order.2" ||
    fail "order.rb: khl's hash order changed with khashlite's seed (diff $out/order.1 $out/order.2)"
echo "order.rb: the same order under two seeds ($(wc -l < "$out/order.1") lines)"
step "3. a script that raises"
rc=0; "$M/host-khl" --alloc=pool mruby/test/raises.rb > "$out/raises.txt" 2>&1 || rc=$?
[ $rc = 1 ] || fail "raises.rb: exit $rc, expected 1 (3 = pool bytes left)"
grep -q "raised on purpose (ArgumentError)" "$out/raises.txt" || fail "raises.rb: error not reported"
echo "raises.rb: reported, exit 1, pool at 0"

oom_checks() {   # PROBE
    r=$("$1" mruby/test/oom_tables.rb 2>/dev/null) || fail "oom_tables.rb on $1 exited $?: $r"
    case $r in "oom_tables: ok "[1-9]*" "[1-9]*) echo "$r" ;; *) fail "$1: $r" ;; esac
    for lim in 0 64 1000 20000 300000 2000000; do
        rc=0; "$1" --limit=$lim mruby/test/oom_exhaust.rb > "$out/exhaust.txt" 2>&1 || rc=$?
        [ $rc = 4 ] || fail "oom_exhaust.rb --limit=$lim on $1: exit $rc, expected 4 ($(cat "$out/exhaust.txt"))"
    done
    echo "oom_exhaust.rb: NoMemoryError at 6 limits, pool at 0 after mrb_close"
}

step "4. out of memory, allocations per object and per class (khl)"
oom_checks "$M/probe-khl"
"$M/probe-khl" mruby/test/per_object.rb 2>/dev/null | tee "$out/per_object.khl"
for k in 1 3 4; do
    grep -q "^per_object $k 1.0 " "$out/per_object.khl" || fail "khl: an object with $k ivars does not cost exactly one allocation"
done
"$M/probe-khl" mruby/test/per_class.rb 2>/dev/null | tee "$out/per_class.khl"
for m in 1 20; do
    grep -q "^per_class Module $m [0-9.]* 1.0 " "$out/per_class.khl" || fail "khl: the methods of a module with $m of them are not in exactly one block"
done

step "5. stock and khl under ASan+UBSan (clang)"
sh mk/deps.sh clang libclang-rt-14-dev >/dev/null
rake_test stock-asan
rake_test khl-asan
[ "$(counts "$M/stock-asan-test.log")" = "$(counts "$M/khl-asan-test.log")" ] || fail "stock and khl counts differ under ASan+UBSan"
echo "same counts on stock and khl under ASan+UBSan"
asan=$M/probe-khl-asan
clang -std=c11 -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -I. \
    $(sh mruby/cflags.sh "$M/khl-asan/build/host/lib/libmruby.flags.mak") -o "$asan" mruby/probe.c \
    "$M/khl-asan/build/host/lib/libmruby.a" khashlite/*.c -lm -pthread
oom_checks "$asan"
echo
echo "mruby-test: all passed"
