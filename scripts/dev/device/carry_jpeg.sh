#!/usr/bin/env bash
# Unpacks Debian's libjpeg-turbo development packages (libturbojpeg0-dev, libjpeg62-turbo-dev and
# their libraries) into .deps/jpeg, for a machine without them (the GPU machine has no network):
# carry .deps/jpeg with the tree; gpu_session.sh sets TURBOJPEG_ROOT to it, and CMake links the
# static libraries from it, so the binary needs nothing there at run time. Run on a Debian machine.
# usage: scripts/dev/device/carry_jpeg.sh [DEST]   (default .deps/jpeg)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
dest=${1:-.deps/jpeg}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download libturbojpeg0-dev libturbojpeg0 libjpeg62-turbo-dev libjpeg62-turbo)
mkdir -p "$dest"
for deb in "$tmp"/*.deb; do dpkg -x "$deb" "$dest"; done
ls "$dest/usr/include/turbojpeg.h" "$dest/usr/include/jpeglib.h" "$dest"/usr/lib/*/libturbojpeg.a "$dest"/usr/lib/*/libjpeg.a
du -sh "$dest"
