#!/bin/sh
# mruby/build.sh VARIANT SRC OUT: builds one mruby (stock, khl, stock-asan, khl-asan; see
# mruby/build_config.rb) from the unpacked source SRC into OUT, with rake -j2.
# khl variants build from OUT/src, a copy of SRC with mruby/patches/*.patch
# applied; the copy is remade when the set of patches or one of them changed
# (its stamp holds their names and checksums).
# With a fourth argument "test", runs mruby's `rake test` instead and prints
# its summary.
set -eu
variant=$1 src=$(cd "$2" && pwd) out=$3 action=${4:-all}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

case $variant in
stock|stock-asan) tree=$src ;;
khl|khl-asan)
    tree=$out/src
    stamp=$out/src/.khl-patched
    sums=$(cd "$here/patches" && cksum ./*.patch)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$sums" ]; then
        rm -rf "$tree" "$out/build"
        cp -a "$src" "$tree"
        for p in "$here"/patches/*.patch; do
            echo "mruby: applying $(basename "$p")" >&2
            patch -s -p1 -d "$tree" < "$p"
        done
        printf '%s\n' "$sums" > "$stamp"
    fi ;;
*) echo "mruby/build.sh: unknown variant $variant" >&2; exit 2 ;;
esac

# CFLAGS from the environment would replace mruby's own flags.
cd "$tree"
exec env -u CFLAGS -u CXXFLAGS -u LDFLAGS -u MAKEFLAGS -u MFLAGS \
    KHL_MRUBY_VARIANT="$variant" KHL_ROOT="$root" KHL_LIBDIR="${KHL_LIBDIR:-$root/build}" \
    MRUBY_CONFIG="$here/build_config.rb" MRUBY_BUILD_DIR="$out/build" INSTALL_DIR="$out/bin" \
    rake -j2 "$action"
