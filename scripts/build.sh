#!/usr/bin/env bash
# Configures and builds nodebench into build/ (CMake, Ninja when present). Extra arguments go to
# the configure step, e.g. scripts/build.sh -DCMAKE_CUDA_ARCHITECTURES=90
set -euo pipefail
cd "$(dirname "$0")/.."
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
if [ -f build/CMakeCache.txt ]; then gen=(); fi  # keep the generator an existing build dir has
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build "${gen[@]}" "$@"
cmake --build build -j "$jobs"
