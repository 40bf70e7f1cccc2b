#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, and run the quick suite.
# Arguments go to `nodebench run` (default: --suite quick). Results land in results/runs/.
# Exit code: nodebench's (0 ok, 1 a case failed, 2 bad usage, 3 no usable GPU).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
bash scripts/setup.sh --for build || exit 1   # no Python package, no network needed when all is present
bash scripts/build.sh || exit 1
[ $# -gt 0 ] || set -- --suite quick
exec build/nodebench run "$@"
