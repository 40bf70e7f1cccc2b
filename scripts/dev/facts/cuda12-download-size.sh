#!/usr/bin/env bash
# Prints the size of each pinned package that scripts/build-cuda12.sh downloads for its private
# CUDA 12 toolkit, and the total, by asking the registries (PyPI's JSON simple index, a HEAD
# request to Debian's archive) without downloading anything.
# usage: scripts/dev/facts/cuda12-download-size.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.." || exit 1
sed -n '/^PINS="/,/"$/p' scripts/build-cuda12.sh | tr -d '"' | grep -E '^(deb|whl) ' |
while read -r kind name ver sha; do
  if [ "$kind" = whl ]; then
    n=$(curl -fsS -H 'Accept: application/vnd.pypi.simple.v1+json' "https://pypi.org/simple/$name/" |
        python3 -c 'import json,sys; print(sum(f["size"] for f in json.load(sys.stdin)["files"] if f["hashes"].get("sha256")==sys.argv[1]))' "$sha")
  else
    n=$(curl -fsSI "http://deb.debian.org/debian/pool/non-free/n/nvidia-cuda-toolkit/${name}_${ver//\~/%7E}_amd64.deb" |
        tr -d '\r' | awk 'tolower($1)=="content-length:" {print $2}')
  fi
  printf '%12s  %s %s\n' "${n:-?}" "$name" "$ver"
done | awk '{print; s += $1} END {printf "%12.0f  in all (%.2f GB)\n", s, s / 1e9}'
