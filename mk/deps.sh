#!/bin/sh
# mk/deps.sh: makes sure the Debian packages named on the command line are
# installed.  As root with apt-get it installs what is missing; otherwise it
# prints the exact command to run and fails, so `make` stops with a clear
# message instead of a compiler error about a missing header.
set -u
missing=""
for pkg in "$@"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    case "$status" in
        *"install ok installed"*) ;;
        *) missing="$missing $pkg" ;;
    esac
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "deps: installing$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    # The package lists may be stale or absent on a fresh machine.
    apt-get update -qq >&2 || true
    apt-get install -y -qq --no-install-recommends $missing >&2 && exit 0
    echo "deps: apt-get install failed for:$missing" >&2
    exit 1
fi
echo "deps: missing Debian packages:$missing" >&2
echo "deps: run:  sudo apt-get install -y$missing" >&2
exit 1
