#!/usr/bin/env bash
# `nodebench frameworks` on the GPU machine (issue 44), in about 5 minutes: build nodebench from this
# tree (unless SKIP_BUILD=1 and build/nodebench exists), then with the PyTorch installed there
# (FW_PYTHON, default /opt/torch/.venv/bin/python3):
#   1. live            the probe for real: the GPUs it sees, a matmul and a convolution with batch norm on each
#   2. hidden          the same with CUDA_VISIBLE_DEVICES= : it sees none and says why (exit 1 expected)
#   3. cc61            --for-cc 6.1 on the same environment: what a P40 would lack (exit 1 expected)
#   4. bench           --bench on one GPU (CUDA_VISIBLE_DEVICES=0): default settings, mixed precision,
#                      fast settings (channels_last, AMP, torch.compile), BENCH_SECONDS timed seconds each
#   5. train           nodebench's own ResNet-50 train step at the bench's batch, for the precisions and
#                      layouts the bench's modes ran in (tf32/nchw, fp16/nchw, fp16/nhwc on cc 8.0 and newer)
#   6. report          nodebench-report html with --frameworks (where matplotlib is importable)
# and last a table: each bench mode's images/s beside nodebench's step of the same precision, layout
# and batch.
# usage: scripts/dev/device/frameworks_session.sh        (environment: OUT (default ./gpu-out), FW_PYTHON,
#        BENCH_SECONDS (5), BENCH_BATCH (64), ARCHS (90), SKIP_BUILD)
# Exit 0 when every step ended as expected, else 1.
# Output in $OUT: session.log, table.txt, frameworks_{live,hidden,cc61,bench}.json (+ .log; bench also
#   .xml and .prom), train_step.json (+ .log), build.log, report/ (when made).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.." || exit 1
case "${1:-}" in -h|--help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;; esac

OUT=${OUT:-$PWD/gpu-out}
PY=${FW_PYTHON:-/opt/torch/.venv/bin/python3}
SECS=${BENCH_SECONDS:-5}
BATCH=${BENCH_BATCH:-64}
ARCHS=${ARCHS:-90}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
START=$(date +%s)
TABLE=()
note() { echo "$*" | tee -a "$OUT/session.log"; }
step() {  # step NAME EXPECTED_RC COMMAND...: runs it, notes rc and seconds
  local name=$1 want=$2 t0 rc; shift 2
  t0=$(date +%s)
  "$@"; rc=$?
  TABLE+=("$(printf '%-8s rc=%-3s (expected %s) %4d s' "$name" "$rc" "$want" $(( $(date +%s) - t0 )))")
  note "== $name: rc=$rc (expected $want), $(( $(date +%s) - t0 )) s"
  [ "$rc" = "$want" ] || BAD=1
  return 0
}
BAD=0

note "frameworks session: $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), python $PY"
nvidia-smi --query-gpu=index,name,driver_version,compute_cap --format=csv,noheader 2>&1 | tee -a "$OUT/session.log"
if [ ! -x "$PY" ]; then note "no interpreter at $PY (set FW_PYTHON)"; exit 2; fi
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" 2>&1 | tee -a "$OUT/session.log"

build() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" > "$OUT/build.log" 2>&1 &&
    cmake --build build -j "$(nproc)" --target nodebench >> "$OUT/build.log" 2>&1
}
if [ "${SKIP_BUILD:-0}" != 1 ] || [ ! -x build/nodebench ]; then
  step build 0 build
  [ -x build/nodebench ] || { note "the build failed (build.log)"; grep -E "error" "$OUT/build.log" | head -20; exit 1; }
fi
NB=build/nodebench

fw() {  # fw NAME ARGS...: nodebench frameworks, its report and console under $OUT
  local name=$1; shift
  timeout 600 "$NB" frameworks --python "$PY" --out "$OUT/frameworks_$name.json" "$@" > "$OUT/frameworks_$name.log" 2>&1
}
step live 0 fw live --junit "$OUT/frameworks_live.xml"
hidden() { CUDA_VISIBLE_DEVICES='' fw hidden; }
step hidden 1 hidden
step cc61 1 fw cc61 --for-cc 6.1
bench_one_gpu() {
  CUDA_VISIBLE_DEVICES=0 fw bench --bench --bench-seconds "$SECS" --bench-batch "$BATCH" --bench-timeout 240 \
    --junit "$OUT/frameworks_bench.xml" --prometheus "$OUT/frameworks_bench.prom"
}
step bench 0 bench_one_gpu
for f in live hidden cc61 bench; do
  note "-- frameworks $f"
  grep -E "^  (ok|FAIL|WARN|info) " "$OUT/frameworks_$f.log" | tee -a "$OUT/session.log" >/dev/null
  grep -cE "^  (ok|FAIL|WARN|info) " "$OUT/frameworks_$f.log" | sed 's/^/   checks: /' | tee -a "$OUT/session.log"
done

# nodebench's step for the precisions and layouts the bench's modes ran in, at its batch.
series=$(python3 - "$OUT/frameworks_bench.json" <<'PYEOF'
import json, sys
try:
    recs = json.load(open(sys.argv[1])).get("records", [])
except Exception:
    recs = []
print("|".join(sorted({"%s/%s" % (r["params"]["precision"], r["params"]["layout"]) for r in recs})) or "tf32/nchw|fp16/nhwc")
PYEOF
)
note "nodebench train step for: $series at batch $BATCH"
step train 0 env CUDA_VISIBLE_DEVICES=0 timeout 300 "$NB" run --suite full --gpus 0 --family train \
  --filter "^train/resnet50/($series)/b$BATCH\$" --max-time 2 --quiet --out-file "$OUT/train_step.json" \
  > "$OUT/train_step.log" 2>&1

if [ ! -f "$OUT/train_step.json" ]; then
  note "== report: skipped (no train_step.json)"
elif python3 -c "import matplotlib" 2>/dev/null; then
  step report 0 env PYTHONPATH="$PWD/reports" python3 -m nodebench_reports html "$OUT/train_step.json" \
    --frameworks "$OUT/frameworks_bench.json" -o "$OUT/report" > "$OUT/report.log" 2>&1
else
  note "== report: skipped (no matplotlib for python3 here)"
fi

python3 - "$OUT/frameworks_bench.json" "$OUT/train_step.json" <<'PYEOF' | tee "$OUT/table.txt" | tee -a "$OUT/session.log"
import json, sys
def load(p):
    try:
        return json.load(open(p))
    except Exception as e:
        print("cannot read %s: %s" % (p, e))
        return {}
bench, train = load(sys.argv[1]), load(sys.argv[2])
steps = {}
for r in train.get("records", []):
    if r.get("family") == "train" and r.get("status") == "ok":
        p = r["params"]
        steps[(p["precision"], p["layout"], p["batch"])] = r["metrics"]["images_per_s"]
print("%-10s %-8s %4s %-14s %9s %11s %9s %s" % ("framework", "mode", "gpus", "prec/layout", "images/s", "nodebench",
                                                 "per GPU", "note"))
for r in bench.get("records", []):
    p = r["params"]
    key = (p["precision"], p["layout"], p["batch"])
    ips = (r.get("metrics") or {}).get("images_per_s")
    nb = steps.get(key)
    print("%-10s %-8s %4d %-14s %9s %11s %9s %s" % (
        r["framework"], r["mode"], p["gpus"], "%s/%s b%d" % key, "%.0f" % ips if ips else "-", "%.0f" % nb if nb else "-",
        "%.2fx" % (ips / p["gpus"] / nb) if ips and nb else "-", "" if r["status"] == "ok" else r.get("reason", "")[:80]))
PYEOF
note "steps:"
for t in "${TABLE[@]}"; do note "  $t"; done
note "wall: $(( $(date +%s) - START )) s; $([ $BAD = 0 ] && echo "every step as expected" || echo "a step not as expected")"
exit $BAD
