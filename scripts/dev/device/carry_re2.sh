#!/usr/bin/env bash
# Unpacks Debian's RE2 development package (libre2-dev: re2/re2.h and the static libre2.a) into
# .deps/re2, for a machine without it and without network (the GPU machine): carry .deps/re2 with
# the tree; cmake/NodebenchRE2.cmake looks there (or under RE2_ROOT) and links libre2.a, so the
# binary needs nothing there at run time. Debian 12's RE2 (2022) needs no Abseil. Run on a
# Debian machine.
# usage: scripts/dev/device/carry_re2.sh [DEST]   (default .deps/re2)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
dest=${1:-.deps/re2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download libre2-dev)
mkdir -p "$dest"
for deb in "$tmp"/*.deb; do dpkg -x "$deb" "$dest"; done
ls "$dest/usr/include/re2/re2.h" "$dest"/usr/lib/*/libre2.a
du -sh "$dest"
