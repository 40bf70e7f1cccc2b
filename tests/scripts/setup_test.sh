#!/usr/bin/env bash
# Tests of scripts/setup.sh (run by scripts/test.sh after setup has run, so everything is here):
#  a) apt-get, apt and pip made to fail (PATH shims that exit 1 and log their call): setup still
#     succeeds, for the build and for the tests, and calls none of them;
#  b) a library made missing (the NODEBENCH_SETUP_HIDE seam hides it from CMake's find_package):
#     setup tries apt-get with the dpkg lock wait, fails, exits 1 and names the library and the
#     package that provides it;
#  c) bad usage exits 2.
# Exit status: 0 all passed, 1 a check failed.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nodebench-setup-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
check() {  # description, then a command that must succeed
  local what=$1; shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}

real_python=$(command -v python3)
mkdir -p "$tmp/bin"
for c in apt-get apt pip pip3; do
  printf '#!/bin/sh\necho "%s $*" >> "%s/calls"\nexit 1\n' "$c" "$tmp" > "$tmp/bin/$c"
done
# python3 -m pip fails too; every other use of python3 is the real one.
cat > "$tmp/bin/python3" <<SHIM
#!/bin/sh
if [ "\$1" = -m ] && [ "\$2" = pip ]; then echo "python3 \$*" >> "$tmp/calls"; exit 1; fi
exec "$real_python" "\$@"
SHIM
printf '#!/bin/sh\nexec "$@"\n' > "$tmp/bin/sudo"
chmod +x "$tmp/bin"/*
shimmed() { PATH="$tmp/bin:$PATH" PYTHONPATH="$repo/reports${PYTHONPATH:+:$PYTHONPATH}" "$@"; }

# a) everything present, nothing can be installed
: > "$tmp/calls"
shimmed bash "$repo/scripts/setup.sh" --for build > "$tmp/a1.out" 2>&1; rc=$?
check "a) --for build succeeds with apt/pip failing (rc=$rc)" test "$rc" = 0
check "a) --for build reports the toolkit it found" grep -q "found CUDAToolkit" "$tmp/a1.out"
check "a) --for build reports RE2 (found, or the built-in matcher)" \
  grep -qE "found RE2 re2|optional: RE2 not found: --filter uses the built-in" "$tmp/a1.out"
shimmed bash "$repo/scripts/setup.sh" --for tests > "$tmp/a2.out" 2>&1; rc=$?
check "a) --for tests succeeds with apt/pip failing (rc=$rc)" test "$rc" = 0
check "a) no apt-get or pip call was made" test ! -s "$tmp/calls"
[ "$fails" = 0 ] || { cat "$tmp/a1.out" "$tmp/a2.out" "$tmp/calls"; }

# b) nlohmann_json missing, nothing can be installed
: > "$tmp/calls"
NODEBENCH_SETUP_HIDE=nlohmann_json shimmed bash "$repo/scripts/setup.sh" --for build > "$tmp/b.out" 2> "$tmp/b.err"; rc=$?
check "b) a missing library fails with exit 1 (rc=$rc)" test "$rc" = 1
check "b) the message names nlohmann_json and its package" \
  grep -q "nlohmann_json.*nlohmann-json3-dev" "$tmp/b.err"
check "b) the other libraries are not called missing" bash -c "! grep -qE '^  - (benchmark|GTest|CLI11|CUDAToolkit|cmake|cxx)' '$tmp/b.err'"
check "b) apt-get install was tried with the dpkg lock wait" \
  grep -qE "^apt-get .*DPkg::Lock::Timeout=300 .*install .*nlohmann-json3-dev" "$tmp/calls"
[ "$fails" = 0 ] || { cat "$tmp/b.out" "$tmp/b.err" "$tmp/calls"; }

# c) bad usage
bash "$repo/scripts/setup.sh" --for nothing > /dev/null 2> "$tmp/c.err"; rc=$?
check "c) --for nothing exits 2 (rc=$rc)" test "$rc" = 2
check "c) and says what --for takes" grep -q "build or tests" "$tmp/c.err"

if [ "$fails" = 0 ]; then echo "setup_test: all passed"; exit 0; fi
echo "setup_test: $fails check(s) failed"; exit 1
