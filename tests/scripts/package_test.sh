#!/usr/bin/env bash
# Tests of the packages (run by scripts/test.sh after the build): builds the .deb and the
# .tar.gz with CPack in BUILD_DIR, unpacks the .deb into a temporary root (dpkg-deb -x, no
# install) and runs nodebench from there without a GPU (CUDA_VISIBLE_DEVICES=): --version,
# list, env --json; checks the installed layout and the declared dependencies; builds the
# reports wheel and runs it from a private folder.
# usage: tests/scripts/package_test.sh [BUILD_DIR]   (default build)
# Exit status: 0 all passed, 1 a check failed.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd) || { echo "package_test: no build directory"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nodebench-package-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
check() {
  local what=$1; shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:[A-Z]*=//p' "$build/CMakeCache.txt")

# .deb
rm -f "$build"/nodebench_*.deb "$build"/nodebench-*.tar.gz
(cd "$build" && cpack -G DEB > "$tmp/cpack-deb.log" 2>&1) || { cat "$tmp/cpack-deb.log"; }
deb=$(ls "$build"/nodebench_*.deb 2>/dev/null | head -1)
check "cpack -G DEB made a .deb" test -n "$deb"
if [ -n "$deb" ]; then
  check "the .deb is named nodebench, version $version" test "$(dpkg-deb -f "$deb" Package)/$(dpkg-deb -f "$deb" Version)" = "nodebench/$version"
  depends=$(dpkg-deb -f "$deb" Depends)
  check "its Depends names libc6 ($depends)" grep -q libc6 <<<"$depends"
  # Each Debian package that owns a shared library the binary loads from the system is declared.
  for lib in $(ldd "$build/nodebench" | awk '/=> \/(usr\/)?lib\// && /libbenchmark|libmpi\./ {print $3}'); do
    owner=$(dpkg-query -S "$(realpath "$lib")" 2>/dev/null | head -1 | cut -d: -f1)
    [ -n "$owner" ] && check "Depends declares $owner (owner of $(basename "$lib"))" grep -q "$owner" <<<"$depends"
  done
  dpkg-deb -x "$deb" "$tmp/root"
  r="$tmp/root/usr"
  check "bin/nodebench is executable" test -x "$r/bin/nodebench"
  for f in compat devices frameworks thresholds; do
    check "share/nodebench/profiles/$f.json is valid JSON" python3 -m json.tool "$r/share/nodebench/profiles/$f.json" /dev/null
  done
  check "the result schema is installed" cmp -s "$r/share/nodebench/schema/result-v1.schema.json" "$repo/harness/schema/result-v1.schema.json"
  check "README and docs under share/doc/nodebench" test -f "$r/share/doc/nodebench/README.md" -a -f "$r/share/doc/nodebench/SCHEMA.md"
  check "the Slurm health check is installed, executable" test -x "$r/share/nodebench/slurm/nodebench-healthcheck.sh"
  check "and its --help runs from there" bash -c "'$r/share/nodebench/slurm/nodebench-healthcheck.sh' --help | grep -q 'Exit status'"
  check "the alerting rules are installed" cmp -s "$r/share/nodebench/prometheus/nodebench.rules.yml" "$repo/scripts/prometheus/nodebench.rules.yml"
  bin="$r/bin/nodebench"
  CUDA_VISIBLE_DEVICES='' "$bin" --version > "$tmp/version.out" 2>&1; rc=$?
  check "nodebench --version from the unpacked .deb exits 0 (rc=$rc)" test "$rc" = 0
  check "and prints the package version $version" grep -q "$version" "$tmp/version.out"
  CUDA_VISIBLE_DEVICES='' "$bin" list > "$tmp/list.out" 2>&1; rc=$?
  check "nodebench list exits 0 (rc=$rc)" test "$rc" = 0
  check "and lists the FP32 GEMM case" grep -q "gemm/fp32/cublas/square_8192" "$tmp/list.out"
  CUDA_VISIBLE_DEVICES='' "$bin" env --json > "$tmp/env.json" 2> "$tmp/env.err"; rc=$?
  check "nodebench env --json exits 0 without a GPU (rc=$rc)" test "$rc" = 0
  check "and writes a JSON object" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert isinstance(d, dict) and d' "$tmp/env.json"
  [ "$fails" = 0 ] || cat "$tmp/version.out" "$tmp/env.err" | head -20
fi

# .tar.gz
(cd "$build" && cpack -G TGZ > "$tmp/cpack-tgz.log" 2>&1) || cat "$tmp/cpack-tgz.log"
tgz=$(ls "$build"/nodebench-*.tar.gz 2>/dev/null | head -1)
check "cpack -G TGZ made a .tar.gz with bin/nodebench" bash -c "[ -n '$tgz' ] && tar -tzf '$tgz' | grep -q '/bin/nodebench$'"

# reports wheel
# From a copy: setuptools leaves build/ in the folder it builds.
cp -r "$repo/reports" "$tmp/reports-src" && rm -rf "$tmp/reports-src/build" "$tmp"/reports-src/*.egg-info
if python3 -m pip wheel -q "$tmp/reports-src" -w "$tmp/dist" --no-deps > "$tmp/wheel.log" 2>&1; then
  whl=$(ls "$tmp"/dist/nodebench_reports-*.whl | head -1)
  python3 -m pip install -q --no-index --no-deps --target "$tmp/site" "$whl" > "$tmp/wheel.log" 2>&1
  out=$(cd "$tmp" && PYTHONPATH="$tmp/site" python3 -c 'import nodebench_reports, sys; print(nodebench_reports.__file__)')
  check "the reports wheel installs and imports from its own folder" test "${out#"$tmp/site/"}" != "$out"
  check "the wheel carries the result schema" bash -c "ls '$tmp'/site/nodebench_reports/schema/*.json > /dev/null"
else
  cat "$tmp/wheel.log"; check "python3 -m pip wheel reports" false
fi

if [ "$fails" = 0 ]; then echo "package_test: all passed"; exit 0; fi
echo "package_test: $fails check(s) failed"; exit 1
