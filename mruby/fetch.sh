#!/bin/sh
# mruby/fetch.sh DIR: unpacks Debian's mruby source package into DIR (skipped
# when DIR already holds it).  apt-get source needs a deb-src entry for the
# running Debian suite: as root it is added (one file under sources.list.d),
# otherwise the commands to add it are printed and the script fails.
set -eu
dest=$1
[ -f "$dest/Rakefile" ] && exit 0

. /etc/os-release
suite=${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}
list=/etc/apt/sources.list.d/khashlite-deb-src.sources

has_src() {
    grep -rqs -E "^(deb-src|Types:.*deb-src)" /etc/apt/sources.list /etc/apt/sources.list.d/
}
if ! has_src; then
    entry="Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
    if [ "$(id -u)" = 0 ]; then
        echo "mruby: adding a deb-src entry for $suite ($list)" >&2
        printf '%s\n' "$entry" > "$list"
        apt-get update -qq >&2
    else
        echo "mruby: no deb-src entry; as root run:" >&2
        printf "  printf '%%s\\\\n' '%s' > %s\n" "$(printf '%s' "$entry" | sed 's/$/\\n/' | tr -d '\n')" "$list" >&2
        echo "  apt-get update && apt-get install -y dpkg-dev ruby rake bison" >&2
        exit 1
    fi
fi

tmp=$dest.tmp
rm -rf "$tmp" && mkdir -p "$tmp"
(cd "$tmp" && apt-get source -qq mruby >&2)
src=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'mruby-*' | head -1)
[ -n "$src" ] || { echo "mruby: apt-get source produced no mruby-* directory" >&2; exit 1; }
rm -rf "$dest"
mv "$src" "$dest"
rm -rf "$tmp"
