#!/usr/bin/env bash
# gpu_session.sh's fresh-node step (issue 25 on the GPU): `fresh_node.sh RAW CTEST_TIMEOUT_S`,
# run from the repository root after the build. Every GPU test with jsonschema hidden (as on a
# node with only what `setup.sh --for build` installs; the checks must say they ran the structural
# checks and none may fail on the import), the one-rank nccl records (flag single_rank, no
# bandwidth metric), the quick conv network case's one-batch line. Prints a summary; exit 1 when
# something is wrong.
set -uo pipefail
raw=$1 tmo=${2:-420} rc=0
PYTHONPATH="$PWD/tests/data/no_jsonschema" timeout "$tmo" ctest --test-dir build -L gpu --output-on-failure \
  > "$raw/ctest-gpu-no-jsonschema.log" 2>&1 || rc=1
grep -E "tests passed|Failed|Not Run|\*\*\*" "$raw/ctest-gpu-no-jsonschema.log" | tail -15
echo "fresh-node: $(grep -c "structural checks" "$raw/ctest-gpu-no-jsonschema.log") check(s) ran the structural" \
     "checks; $(grep -c "No module named 'jsonschema'" "$raw/ctest-gpu-no-jsonschema.log") jsonschema import error(s)"
timeout 120 build/nodebench run --suite quick --gpus 0 --family nccl --max-time 0.3 --quiet \
  --filter '^nccl/(all_reduce/float/(in_place|out_of_place)/eager/64MiB|broadcast/float/out_of_place/eager/1MiB|sweep/all_reduce/float/256MiB)$' \
  --out-file "$raw/nccl_one_rank.json" > "$raw/nccl_one_rank.log" 2>&1 || rc=1
timeout 180 build/nodebench run --suite quick --gpus 0 --family conv --filter '^conv/resnet50/' \
  --out-file "$raw/conv_quick_one_batch.json" > "$raw/conv_quick_one_batch.log" 2>&1 || rc=1
grep -E "ResNet-50 convolutions" "$raw/conv_quick_one_batch.log" || rc=1
python3 - "$raw/nccl_one_rank.json" <<'PY' || rc=1
import json, sys
d = json.load(open(sys.argv[1]))
bad = 0
for r in d["records"]:
    m = r.get("metrics", {})
    one = "single_rank" in r.get("flags", [])
    bw = [k for k in ("algbw_gbps", "busbw_gbps", "bus_factor_x") if k in m]
    bad += int(r["status"] != "ok" or not one or bool(bw))
    print(f"  {r['id']:44s} {r['status']:6s} single_rank={one} bandwidth={bw or 'none'} time {m.get('time_us', 0):.2f} us"
          f" | {(r.get('details') or {}).get('note', '')[:90]}")
print(f"  one-rank records: {len(d['records'])}, wrong shape: {bad}")
sys.exit(1 if bad or not d["records"] else 0)
PY
exit $rc
