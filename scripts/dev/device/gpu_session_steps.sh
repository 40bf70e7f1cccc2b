# The later issues' steps of gpu_session.sh (repeat, conv-repeat, peak-indep, peak-wgmma, the train
# steps, mpi-shared, monitor, fresh-node, families, input-peer, frameworks), sourced by it, which
# defines left, tmo, log, note, keep, peer_round, ARCHS, NGPU, OUT, RAW, R and P.
# shellcheck shell=bash

step_repeat() {
  local rc
  timeout "$(tmo 480)" build/nodebench run --suite quick --runs "${REPEAT_RUNS:-5}" --quiet --out-file "$RAW/quick_runs.json" \
    > "$RAW/quick_runs.log" 2>&1; rc=$?
  grep -E "^== run|cases:" "$RAW/quick_runs.log" | tee -a "$OUT/session.log"
  keep quick_runs.json
  return $rc
}

step_conv_repeat() {
  local rc
  timeout "$(tmo 400)" build/nodebench run --suite full --gpus 0 --filter '^conv/resnet50/(fp16/nchw/b32|tf32/nhwc/b256)$' \
    --runs "${REPEAT_RUNS:-5}" --quiet --out-file "$RAW/conv_runs.json" > "$RAW/conv_runs.log" 2>&1; rc=$?
  python3 - "$RAW/conv_runs.json" <<'PY' | tee -a "$OUT/session.log"
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["records"]:
    rr = r.get("run_to_run") or {}
    ips = [r["params"]["batch"] / m for m in rr.get("medians_s", [])]
    print(f"  {r['id']:36s} {r['status']:7s} images/s per run {[round(x) for x in ips]} max/min {rr.get('max_over_min', 0):.3f}")
PY
  keep conv_runs.json
  return $rc
}

step_peak_indep() {
  local rc=0
  nvcc -O3 -arch="sm_${ARCHS%%;*}" -o "$RAW/peak_independent" scripts/dev/peers/peak_independent.cu > "$RAW/peak_indep_build.log" 2>&1 || return 1
  "$RAW/peak_independent" > "$RAW/peak_indep1.txt" 2>&1 || rc=1
  timeout "$(tmo 120)" build/nodebench run --suite quick --gpus 0 --family peak --max-time 1 --quiet \
    --out-file "$RAW/peak_family.json" > "$RAW/peak_family.log" 2>&1 || rc=1
  "$RAW/peak_independent" > "$RAW/peak_indep2.txt" 2>&1 || rc=1
  python3 - "$RAW/peak_family.json" "$RAW/peak_indep1.txt" "$RAW/peak_indep2.txt" <<'PY' | tee -a "$OUT/session.log" "$RAW/peak_indep_ratio.txt"
import json, sys
ind = {}
for f in sys.argv[2:]:
    for line in open(f):
        p = line.split()
        if len(p) > 2 and p[2] == "TFLOPS":
            ind.setdefault(p[0], []).append(float(p[1]))
unit = {"peak/fp32_ffma": "ffma", "peak/fp16_hfma2": "hfma2", "peak/bf16_fma2": "bf16x2", "peak/fp64_dfma": "dfma"}
d = json.load(open(sys.argv[1]))
print(f"  {'case':18s} {'nodebench':>10s} {'independent (before, after)':>30s} {'ratio':>7s}")
for r in d["records"]:
    k = unit.get(r["id"])
    if not k or k not in ind:
        continue
    nb = r["metrics"].get("tflops", 0)
    best = max(ind[k])
    print(f"  {r['id']:18s} {nb:10.1f} {str(ind[k]):>30s} {nb / best:7.3f}")
PY
  keep peak_family.json
  return $rc
}

step_peak_wgmma() {
  local rc=0 ind="$RAW/peak_independent_wgmma" t="--max-time 1.5 --target-cv 0 --quiet" re=';90a?(-real|-virtual)?;'
  [[ ";$ARCHS;" =~ $re ]] || { note "peak-wgmma: CUDA_ARCHS ($ARCHS) lacks 90"; return 1; }
  timeout "$(tmo 120)" ctest --test-dir build -R gpu_peak_tensor_path --output-on-failure > "$RAW/ctest-wgmma.log" 2>&1 || rc=1
  grep -E "tests passed|FAIL|compute capability" "$RAW/ctest-wgmma.log" | tee -a "$OUT/session.log"
  nvcc -O3 -gencode arch=compute_90a,code=sm_90a -o "$ind" scripts/dev/peers/peak_independent.cu > "$RAW/wg_build.log" 2>&1 || return 1
  # shellcheck disable=SC2086  # $t: several options
  timeout "$(tmo 150)" build/nodebench run --suite quick --gpus 0 $t --out-file "$RAW/wg_gemm.json" \
    --filter '^gemm/(fp16|bf16|tf32|int8|fp8)/(cublas|cublaslt)/square_8192$' > "$RAW/wg_gemm.log" 2>&1 || rc=1
  CUDA_VISIBLE_DEVICES=0 timeout "$(tmo 60)" "$ind" --wgmma --seconds 1.5 > "$RAW/wg_indep1.txt" 2>&1 || rc=1
  # shellcheck disable=SC2086
  timeout "$(tmo 90)" build/nodebench run --suite quick --gpus 0 $t --family peak --filter '^peak/mma_' \
    --out-file "$RAW/wg_peak.json" > "$RAW/wg_peak.log" 2>&1 || rc=1
  CUDA_VISIBLE_DEVICES=0 timeout "$(tmo 60)" "$ind" --wgmma --seconds 1.5 > "$RAW/wg_indep2.txt" 2>&1 || rc=1
  cat "$RAW/wg_indep1.txt" "$RAW/wg_indep2.txt" >> "$OUT/session.log"
  python3 scripts/dev/device/peak_wgmma_table.py --gemm "$RAW/wg_gemm.json" --peak "$RAW/wg_peak.json" \
    --independent "$RAW/wg_indep1.txt" "$RAW/wg_indep2.txt" --out "$RAW/peak_wgmma_ratio.json" | tee -a "$OUT/session.log"
  [ "${PIPESTATUS[0]}" = 0 ] || rc=1
  keep peak_wgmma_ratio.json; keep wg_peak.json
  return $rc
}

step_train_peer() {
  local rc=0 mode batches=${TRAIN_BATCHES:-64,128,256} filt
  for mode in ${TRAIN_PEER_MODES:-fp16/nhwc tf32/nchw}; do
    filt="^train/resnet50/${mode}/b(${batches//,/|})$"
    CUDA_VISIBLE_DEVICES=0 timeout "$(tmo 200)" python3 scripts/dev/peers/peer_torch_train.py --mode "$mode" \
      --batches "$batches" --seconds 2 --gpu-busy --losses 20 --out "$RAW/train_torch_${mode/\//_}_0.json" >> "$RAW/train_peer.log" 2>&1 || rc=1
    timeout "$(tmo 300)" build/nodebench run --suite full --gpus 0 --family train --filter "$filt" --max-time 2 --quiet \
      --out-file "$RAW/train_nodebench_${mode/\//_}.json" > "$RAW/train_nodebench_${mode/\//_}.log" 2>&1 || rc=1
    CUDA_VISIBLE_DEVICES=0 timeout "$(tmo 200)" python3 scripts/dev/peers/peer_torch_train.py --mode "$mode" \
      --batches "$batches" --seconds 2 --gpu-busy --out "$RAW/train_torch_${mode/\//_}_1.json" >> "$RAW/train_peer.log" 2>&1 || rc=1
  done
  python3 scripts/dev/peers/compare_train_peer.py "$RAW"/train_nodebench_*.json --peer "$RAW"/train_torch_*.json \
    --out "$RAW/train_ratio.json" | tee -a "$OUT/session.log"
  keep train_ratio.json; keep train_nodebench_fp16_nhwc.json; keep train_nodebench_tf32_nchw.json
  return $rc
}

step_train_tests() {
  local rc=0
  timeout "$(tmo 400)" ctest --test-dir build -R "gpu_train_(quick|gradients|dp_engine)" --output-on-failure \
    > "$RAW/ctest-train.log" 2>&1 || rc=1
  grep -E "tests passed|Passed|Failed|\*\*\*|Not Run" "$RAW/ctest-train.log" | tee -a "$OUT/session.log"
  timeout "$(tmo 200)" build/nodebench run --suite full --family train_dp --filter '^train_dp/resnet50/fp16/nhwc/b32$' \
    --max-time 1 --quiet --out-file "$RAW/train_dp_b32.json" > "$RAW/train_dp_b32.log" 2>&1 || rc=1
  python3 - "$RAW/train_dp_b32.json" <<'PY' | tee -a "$OUT/session.log"
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["records"]:
    m = r.get("metrics", {})
    print(f"  {r['id']:34s} gpus {r.get('params', {}).get('gpus')} {r['status']:7s} step {m.get('step_time_ms', 0):7.2f} ms"
          f" compute {m.get('compute_step_ms', 0):7.2f} exposed {m.get('exposed_comm_ms', 0):6.2f}"
          f" eff {m.get('scaling_efficiency', 0):.3f} {r.get('reason') or ''}")
PY
  keep train_dp_b32.json
  return $rc
}

step_train_sweep() {
  local series name rc=0
  for series in ${TRAIN_SWEEP_SERIES:-fp16/nhwc tf32/nchw}; do
    name=${series/\//_}
    if [ "$(left)" -lt 90 ]; then note "train-sweep: no time left for $series"; continue; fi
    name=${TRAIN_SWEEP_TAG:-}_$name; name=${name#_}
    timeout $(( $(left) - 20 )) build/nodebench run --suite full --gpus 0 --family train --filter "^train/resnet50/$series/" \
      --max-time 1 --algo-cache "${ALGO_CACHE:-$RAW/algo_cache.json}" --out-file "$RAW/train_sweep_$name.json" \
      > "$RAW/train_sweep_$name.log" 2>&1 || rc=1
    note "train sweep $series rc=$rc"
    grep -iE "cases:|recommend|accumulation|90%" "$RAW/train_sweep_$name.log" | head -8 | tee -a "$OUT/session.log"
    [ -f "$RAW/train_sweep_$name.json" ] && python3 - "$RAW/train_sweep_$name.json" <<'PY' | tee -a "$OUT/session.log"
import json, sys
d = json.load(open(sys.argv[1]))
print(f"  {'case':30s} {'status':7s} {'s':>4s} {'step ms':>8s} {'img/s':>6s} {'eager ms':>8s} {'issue ms':>8s}"
      f" {'mem %':>5s} {'kinds ms':>8s} fused graph warn")
for r in d["records"]:
    m, det = r.get("metrics", {}), r.get("details", {})
    g = (det.get("cuda_graph") or {}).get("used")
    fu = (det.get("fusion") or {}).get("fused_layers")
    print(f"  {r['id']:30s} {r['status']:7s} {r.get('duration_s') or 0:4.0f} {m.get('step_time_ms', 0):8.2f}"
          f" {m.get('images_per_s', 0):6.0f} {m.get('eager_step_ms', 0):8.2f} {m.get('host_issue_ms', 0):8.2f}"
          f" {100 * m.get('memory_fraction_x', 0):5.1f} {det.get('profile_sum_ms') or 0:8.2f} {fu if fu is not None else '-':>5}"
          f" {'yes' if g else 'NO ' if g is False else '-  '}  {'W' if det.get('profile_warning') else '-'}"
          f" {(r.get('reason') or (det.get('cuda_graph') or {}).get('reason') or '')[:70]}")
PY
    keep "train_sweep_$name.json"
  done
  return $rc
}

step_mpi_shared() {
  local rc=0
  if ! command -v mpirun > /dev/null || ! grep -q "MPI launch mode built" "$RAW/build.log" 2>/dev/null; then
    note "mpi-shared: no mpirun, or the build has no MPI launch mode: not run"; return 1
  fi
  timeout "$(tmo 120)" mpirun --allow-run-as-root --oversubscribe -np 2 -x NCCL_NVLS_ENABLE -x CUDA_VISIBLE_DEVICES=0 \
    build/nodebench run --suite quick --family memory,latency --out-file "$RAW/mpi_shared_gpu.json" \
    > "$RAW/mpi_shared_gpu.log" 2>&1 || rc=1
  python3 - "$RAW/mpi_shared_gpu.json" <<'PY' | tee -a "$OUT/session.log"
import collections, json, sys
d = json.load(open(sys.argv[1]))
print("mpi-shared:", d["run_status"], d["summary"])
kinds = collections.Counter((r["status"], r.get("reason_kind")) for r in d["records"])
print("  (status, reason_kind) counts:", dict(kinds))
for r in d["records"][:2]:
    print("  e.g.", r["id"], r.get("rank"), r["status"], r.get("reason"))
PY
  keep mpi_shared_gpu.json
  return $rc
}

step_monitor() {
  local rc=0
  timeout "$(tmo 30)" build/nodebench monitor --duration 3 --format jsonl > "$RAW/monitor.jsonl" 2> "$RAW/monitor.err" || rc=1
  note "monitor: $(wc -l < "$RAW/monitor.jsonl") JSON lines in 3 s; first: $(head -c 400 "$RAW/monitor.jsonl")"
  timeout "$(tmo 30)" build/nodebench monitor --duration 1 --format prometheus --out "$RAW/nodebench_gpu.prom" || rc=1
  grep -E "^nodebench_gpu_(power_watts|sm_clock_hertz|throttle_reason.*} 1)" "$RAW/nodebench_gpu.prom" | head -8 | tee -a "$OUT/session.log"
  timeout "$(tmo 600)" build/nodebench run --suite quick --monitor --quiet --out-file "$RAW/quick_monitor.json" \
    > "$RAW/quick_monitor.log" 2>&1 || rc=1
  grep -E "cases:|monitor" "$RAW/quick_monitor.log" | tee -a "$OUT/session.log"
  PYTHONPATH="$PWD/reports${PYTHONPATH:+:$PYTHONPATH}" timeout "$(tmo 120)" python3 -m nodebench_reports timeline \
    "$RAW/quick_monitor.json" --out "$RAW/quick_monitor_timeline.png" 2>&1 | tee -a "$OUT/session.log" || rc=1
  keep quick_monitor.json; keep quick_monitor_timeline.png
  return $rc
}

step_fresh_node() {  # scripts/dev/device/fresh_node.sh
  local rc=0
  grep -E "nodebench: RE2" "$RAW/build.log" | tee -a "$OUT/session.log"
  bash scripts/dev/device/fresh_node.sh "$RAW" "$(tmo 420)" 2>&1 | tee -a "$OUT/session.log" || rc=1
  keep nccl_one_rank.json; keep conv_quick_one_batch.json
  return $rc
}

step_families() {
  local rc=0
  local tests="gpu_session_resources|gpu_quick_gemm_small|gpu_quick_families_small|gpu_quick_nccl_p2p_small"
  tests+="|gpu_p2p_loopback_one_gpu|gpu_train_gradients|gpu_train_dp_engine|gpu_validate_level2_passes"
  timeout "$(tmo 420)" ctest --test-dir build -R "^($tests)\$" --output-on-failure > "$RAW/ctest-families.log" 2>&1 || rc=1
  grep -E "Test +#|tests passed|tests failed" "$RAW/ctest-families.log" | tee -a "$OUT/session.log"
  timeout "$(tmo 180)" build/nodebench run --suite quick --out-file "$RAW/families_quick.json" \
    > "$RAW/families_quick.log" 2>&1 || rc=1
  [ -f "$RAW/families_quick.json" ] || return 1
  python3 - "$RAW/families_quick.json" <<'PY' | tee -a "$OUT/session.log"
import collections, json, sys
d = json.load(open(sys.argv[1]))
n = collections.defaultdict(collections.Counter)
for r in d["records"]:
    n[r["family"]][r["status"]] += 1
print(f"  quick suite: run_status {d['run_status']}, {len(d['records'])} records")
print(f"  {'family':10s} {'ok':>4s} {'skipped':>8s} {'failed':>7s} {'wrong':>6s}")
for f, c in sorted(n.items()):
    print(f"  {f:10s} {c['ok']:4d} {c['skipped']:8d} {c['failed']:7d} {c['wrong']:6d}")
for r in d["records"]:
    if r["status"] in ("failed", "wrong"):
        print(f"  {r['status']}: {r['id']}: {r['reason']}")
print("  analyses:", ", ".join(sorted(d.get("analysis", {}))))
PY
  keep families_quick.json
  return $rc
}

step_input_peer() {  # ~2 minutes on 16 cores: two peer runs around one nodebench run, on the same files
  local rc=0 keep="$RAW/input_jpegs" w
  timeout "$(tmo 150)" ctest --test-dir build -R "gpu_input" --output-on-failure > "$RAW/ctest-input.log" 2>&1 || rc=1
  grep -E "tests passed|Failed|\*\*\*|Not Run" "$RAW/ctest-input.log" | tee -a "$OUT/session.log"
  w=$(python3 -c "import os; n = len(os.sched_getaffinity(0)); print(','.join(map(str, sorted({2 ** i for i in range(n.bit_length()) if 2 ** i < n} | {n}))))")
  NODEBENCH_INPUT_KEEP="$keep" timeout "$(tmo 60)" build/nodebench run --family input --quiet --out-file "$RAW/input_quick.json" \
    > "$RAW/input_quick.log" 2>&1 || rc=1   # writes the files; the quick case
  for i in 0 1; do
    [ $i = 1 ] && { NODEBENCH_INPUT_KEEP="$keep" timeout "$(tmo 240)" build/nodebench run --suite full --family input --max-time 1.5 \
      --quiet --out-file "$RAW/input_nodebench.json" > "$RAW/input_nodebench.log" 2>&1 || rc=1; }
    timeout "$(tmo 150)" python3 scripts/dev/peers/peer_torch_input.py --files "$keep" --workers "$w" --seconds 1.5 --gpu \
      --out "$RAW/input_peer$i.json" >> "$RAW/input_peer.log" 2>&1 || rc=1
  done
  grep -E "input (decode|pipeline)|cases:" "$RAW/input_nodebench.log" | tee -a "$OUT/session.log"
  python3 scripts/dev/peers/compare_input_peer.py "$RAW/input_nodebench.json" --peer "$RAW/input_peer0.json" \
    --peer "$RAW/input_peer1.json" --out "$RAW/input_ratio.json" | tee -a "$OUT/session.log"
  rm -rf "$keep"
  keep input_nodebench.json; keep input_ratio.json
  return $rc
}

step_frameworks() {  # issue 44: the installed PyTorch probed for real, hidden GPUs, for a P40, and --bench
  local rc=0
  OUT="$RAW/frameworks" SKIP_BUILD=1 timeout "$(tmo 420)" scripts/dev/device/frameworks_session.sh \
    > "$RAW/frameworks_session.log" 2>&1 || rc=1
  [ -f "$RAW/frameworks/session.log" ] && tail -40 "$RAW/frameworks/session.log" | tee -a "$OUT/session.log"
  timeout "$(tmo 120)" ctest --test-dir build -R "^(fatbin_|frameworks_)" --output-on-failure > "$RAW/ctest-frameworks.log" 2>&1 || rc=1
  grep -E "tests passed|Failed|\*\*\*|Skipped|Not Run" "$RAW/ctest-frameworks.log" | tee -a "$OUT/session.log"
  return $rc
}
