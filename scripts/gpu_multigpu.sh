#!/usr/bin/env bash
# One call on a lent GPU machine for the multi-GPU families (p2p, nccl) and the MPI launch mode
# (docs/MULTIGPU.md): configure and build, run their GPU tests, the quick suite of both families
# in one process, and again under mpirun with one rank per GPU. Works on one GPU (p2p is then
# skipped with its reason; NCCL runs on a one-rank communicator) and on several.
# Everything goes under $OUT (default ./gpu-out).
# usage: scripts/gpu_multigpu.sh [CUDA_ARCHS]   (default 90)
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
ARCHS=${1:-90}
BUILD=${BUILD:-build}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
log() { echo "== $*" | tee -a "$OUT/session.log"; }
# jsonschema for the tests' validation, carried as wheels where the machine has no registry.
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
nvidia-smi -L > "$OUT/nvidia-smi.txt" 2>&1; nvidia-smi topo -m >> "$OUT/nvidia-smi.txt" 2>&1
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || echo 1)
log "GPUs: $NGPU; mpirun: $(command -v mpirun || echo none)"
log "configure+build (archs $ARCHS)"
t0=$(date +%s)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" > "$OUT/build.log" 2>&1 &&
  cmake --build "$BUILD" -j "$(nproc)" --target nodebench nodebench_unit_tests \
    $(grep -q nodebench_mpi_gather_test "$BUILD/build.ninja" 2>/dev/null && echo nodebench_mpi_gather_test) >> "$OUT/build.log" 2>&1 ||
  { log "BUILD FAILED"; grep -E "error|Error" "$OUT/build.log" | head -30; tail -20 "$OUT/build.log"; exit 1; }
grep -E "nodebench: (MPI|NCCL)" "$OUT/build.log" | tee -a "$OUT/session.log"
log "build took $(( $(date +%s) - t0 )) s"

log "ctest: multi-GPU and MPI tests"
ctest --test-dir "$BUILD" -R "nccl|p2p|mpi|Collective|BusFactor|PickClosest|Cluster|CaseRecords" --output-on-failure \
  > "$OUT/ctest.log" 2>&1; echo "ctest rc=$?" | tee -a "$OUT/session.log"
grep -E "tests passed|Failed|\*\*\*|Not Run" "$OUT/ctest.log" | tee -a "$OUT/session.log"

if [ "$NGPU" = 1 ]; then
  log "p2p loopback on one GPU (NODEBENCH_P2P_LOOPBACK=1)"
  NODEBENCH_P2P_LOOPBACK=1 "$BUILD/nodebench" run --suite quick --family p2p --out-file "$OUT/quick_p2p_loopback.json" \
    > "$OUT/quick_p2p_loopback.log" 2>&1
  echo "p2p loopback rc=$?" | tee -a "$OUT/session.log"
  tail -12 "$OUT/quick_p2p_loopback.log"
fi
log "quick suite, nccl and p2p, one process"
"$BUILD/nodebench" run --suite quick --family p2p,nccl --out-file "$OUT/quick_single.json" > "$OUT/quick_single.log" 2>&1
echo "single-process rc=$?" | tee -a "$OUT/session.log"
tail -40 "$OUT/quick_single.log"

if command -v mpirun > /dev/null && grep -q "MPI launch mode built" "$OUT/build.log"; then
  log "quick suite under mpirun, one rank per GPU ($NGPU)"
  mpirun --allow-run-as-root --oversubscribe -np "$NGPU" -x NCCL_NVLS_ENABLE \
    "$BUILD/nodebench" run --suite quick --family latency,p2p,nccl --out-file "$OUT/quick_mpi.json" \
    > "$OUT/quick_mpi.log" 2>&1
  echo "mpi rc=$?" | tee -a "$OUT/session.log"
  tail -40 "$OUT/quick_mpi.log"
fi
python3 - "$OUT" <<'EOF' | tee -a "$OUT/session.log"
import json, pathlib, sys
for f in sorted(pathlib.Path(sys.argv[1]).glob("quick_*.json")):
    d = json.loads(f.read_text())
    print(f.name, d["run_status"], d["summary"])
    p2p = d.get("analysis", {}).get("p2p")
    if p2p:
        print("  p2p gpus", p2p["gpus"], "links", p2p["link_type"], "access", p2p["access"])
        for k, m in (p2p.get("bandwidth_gbps") or {}).items():
            print("  p2p", k, [[round(x, 1) if x else x for x in row] for row in m])
    for k, v in (d.get("analysis", {}).get("nccl_scaling") or {}).items():
        print("  scaling", k, [(p["ngpus"], round(p.get("busbw_gbps") or 0, 1), p.get("efficiency_pct")) for p in v["points"]])
EOF
# At most 8 files come back from $OUT: pack the logs.
tar czf "$OUT/logs.tar.gz" -C "$OUT" build.log ctest.log $(cd "$OUT" && ls quick_*.log) nvidia-smi.txt 2>/dev/null
rm -f "$OUT"/build.log "$OUT"/quick_*.log "$OUT"/nvidia-smi.txt
ls -la "$OUT"
