#!/usr/bin/env bash
# `nodebench frameworks` on a real TensorFlow: tensorflow-cpu from PyPI in a virtual environment
# (kept in ~/.cache/nodebench-tfcpu, made once), probed as a user's environment. What nodebench
# reports is checked against what that TensorFlow says of itself (version, tf.sysconfig's
# is_cuda_build), and, judged for a P40 (--for-cc 6.1), the build fails with the fix that pins
# the cuDNN wheel of harness/profiles/arch_facts.json.
# usage: tests/scripts/frameworks_tf_test.sh BUILD_DIR     (skips, saying why, where pip cannot
# install tensorflow-cpu)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
nb=${1:-build}/nodebench
[ -x "$nb" ] || { echo "frameworks_tf_test: no $nb (build first)"; exit 1; }
TF_VERSION=2.21.0
venv=${NODEBENCH_TFCPU_VENV:-$HOME/.cache/nodebench-tfcpu/venv-$TF_VERSION}
py=$venv/bin/python3
if ! "$py" -c 'import tensorflow' > /dev/null 2>&1; then
  rm -rf "$venv"
  if ! python3 -m venv "$venv" > /dev/null 2>&1 ||
     ! "$venv/bin/pip" install -q --disable-pip-version-check "tensorflow-cpu==$TF_VERSION" > /dev/null 2>&1; then
    echo "frameworks_tf_test: SKIP: tensorflow-cpu==$TF_VERSION could not be installed into a virtual environment (python3 -m venv, pip)"
    rm -rf "$venv"
    exit 0
  fi
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if "$@"; then echo "ok   - $desc"; else echo "FAIL - $desc"; fail=1; fi; }

# What TensorFlow says of itself, asked directly.
"$py" - > "$tmp/self.json" 2>/dev/null <<'PY'
import json, tensorflow as tf
print(json.dumps({"version": tf.__version__, "cuda": bool(tf.sysconfig.get_build_info().get("is_cuda_build"))}))
PY
"$nb" frameworks --python "$py" --timeout 180 --json > "$tmp/here.json" 2> "$tmp/here.err"; rc_here=$?
"$nb" frameworks --python "$py" --for-cc 6.1 --timeout 180 --json > "$tmp/p40.json" 2> "$tmp/p40.err"; rc_p40=$?
pin=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pins"]["cudnn_wheel"])' harness/profiles/arch_facts.json)

desc="here (no GPU): exit 0 (a CPU-only build on a machine without a GPU fails nothing)"; check [ "$rc_here" = 0 ]
desc="--for-cc 6.1: exit 1 (a CPU-only build cannot train on a P40)"; check [ "$rc_p40" = 1 ]
python3 - "$tmp/self.json" "$tmp/here.json" "$tmp/p40.json" "$pin" <<'PY' || fail=1
import json, sys
me, here, p40, pin = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), json.load(open(sys.argv[3])), sys.argv[4]
def get(doc, cid):
    return next((c for c in doc["checks"] if c["id"] == cid), None)
bad = 0
def check(cond, what):
    global bad
    print(("ok   - " if cond else "FAIL - ") + what)
    bad |= not cond
imp = get(here, "framework.tensorflow.import")
check(imp is not None and imp["severity"] == "ok" and me["version"] in imp["summary"],
      f"the import is ok and names TensorFlow's own version {me['version']} ({imp and imp['summary']})")
b = get(here, "framework.tensorflow.build")
check(not me["cuda"] and b is not None and b["severity"] == "warn" and "CPU-only" in b["summary"],
      f"tf.sysconfig says is_cuda_build={me['cuda']}; nodebench names a CPU-only build ({b and b['summary']})")
b61 = get(p40, "framework.tensorflow.build")
check(b61 is not None and b61["severity"] == "fail" and pin in (b61.get("fix") or ""),
      f"for cc 6.1 the build fails and the fix pins {pin} ({b61 and b61.get('fix')})")
sys.exit(1 if bad else 0)
PY
if [ $fail = 0 ]; then echo "frameworks_tf_test: all passed"; else
  echo "frameworks_tf_test: FAILED"; tail -5 "$tmp/here.err" "$tmp/p40.err"; fi
exit $fail
