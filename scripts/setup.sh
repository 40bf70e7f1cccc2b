#!/usr/bin/env bash
# Installs what nodebench needs to build and test on a Debian/Ubuntu machine that already has
# the CUDA toolkit (nvcc, cuBLAS). Safe to run again. Needs root (or sudo) for apt-get.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

pkgs=(cmake g++ make ninja-build pkg-config libbenchmark-dev libgtest-dev nlohmann-json3-dev libcli11-dev)
# MPI: the launch mode of one process per GPU over several nodes (optional at build time).
pkgs+=(libopenmpi-dev openmpi-bin)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: no CUDA toolkit found (nvcc). Install CUDA 12.x or 13.x first; see README.md." >&2
  exit 1
fi

# Python side: the schema validator used by the tests, and the reporting package.
python3 -m pip install -q --disable-pip-version-check jsonschema pytest
if [ -f "$here/reports/pyproject.toml" ]; then
  python3 -m pip install -q --disable-pip-version-check -e "$here/reports[test]"
fi
echo "setup: done"
