#!/usr/bin/env bash
# Builds nodebench at a commit (default 9f879c2: before the redesign of issue 22) into .before/,
# with the Google Benchmark library it links (Debian's soname, which a GPU machine running another
# distribution may lack), for gpu_full_session.sh's quick suite before and after. Run on the
# development machine; .before/ is carried with the tree (ignore it in .git/info/exclude).
# usage: scripts/dev/device/build_before.sh [COMMIT] [CUDA_ARCHS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
commit=${1:-9f879c2}
archs=${2:-90}
wt=$(mktemp -d)/before
git worktree add --detach "$wt" "$commit" > /dev/null
trap 'git worktree remove --force "$wt"' EXIT
cmake -S "$wt" -B "$wt/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$archs" > /dev/null
cmake --build "$wt/build" --target nodebench -j "$(nproc)"
mkdir -p .before
cp "$wt/build/nodebench" ".before/nodebench-$commit"
lib=$(ldd ".before/nodebench-$commit" | awk '/libbenchmark/ {print $3}')
[ -n "$lib" ] && cp -L "$lib" .before/
ls -la .before
