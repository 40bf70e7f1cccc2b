#!/usr/bin/env bash
# The tests on a fresh machine (no GPU needed): install, build, run the C++ unit and CLI tests,
# the reporting package's tests, and the CUDA 12 / sm_61 build check (skip that one with
# NODEBENCH_SKIP_CUDA12=1). GPU tests are separate: ctest --test-dir build -L gpu
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
bash scripts/setup.sh || exit 1
# The report tests render the HTML page in headless Chromium (Debian's package).
if ! command -v chromium >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium > /dev/null ||
    echo "test.sh: could not install chromium; the browser test will be skipped"
fi
bash scripts/build.sh || exit 1
echo "== C++ unit and CLI tests (ctest -LE gpu)"
ctest --test-dir build -LE gpu --output-on-failure || status=1
echo "== reporting package tests (pytest)"
python3 -m pytest reports/tests -q || status=1
if [ "${NODEBENCH_SKIP_CUDA12:-0}" != 1 ] && [ -f scripts/ci-cuda12.sh ]; then
  echo "== CUDA 12 build for sm_61 (P40) and machine-code check"
  bash scripts/ci-cuda12.sh || status=1
fi
if [ $status = 0 ]; then echo "ALL TESTS PASSED"; else echo "SOME TESTS FAILED"; fi
exit $status
