#!/usr/bin/env bash
# The calls of results/h100/2026-12-07-bn-tail (one H100 machine each, a fresh machine per call),
# from the repository root. CALL=1: the tree built with its GPU tests (TESTS), the copy bandwidth
# and the batch-norm bandwidth (train_fp32_session.sh), then nodebench_bn_bandwidth alternated,
# a new process each: 838a01a's reductions (a copy of the tree with train_bn_reduce.cu and
# train_vec.hpp of 838a01a, from /tmp/base_src:
#   mkdir -p /tmp/base_src && for f in train_bn_reduce.cu train_vec.hpp; do
#     git show 838a01a:kernels/train/$f > /tmp/base_src/$f; done
# ) and this tree's; then (POINT, default fp32/nchw:64; empty: none) the step against PyTorch, and
# with NCU_FULL=1 Nsight Compute's full set and sampled warp stalls per SASS instruction on the
# 256x196 and 512x49 statistics kernels at b64. CALL=2: step points only. Each call's $OUT/s was
# packed as callN.tgz (call 2's prof.ncu-rep left out: prof_source.csv and prof_details.csv are
# its export). As run:
#   call 1: NCU=1 POINT= CALL=1 bash call.sh   (the first form of the change, not committed alone)
#   call 2: NCU_FULL=1 POINT= CALL=1 bash call.sh   (the commit with this record; its 838a01a
#           build failed, the copy then taking this tree's train_vec.hpp: no alternated runs)
export NCCL_NVLS_ENABLE=0
O=$OUT/s; mkdir -p "$O"
case "${CALL:-1}" in
1)  START=$(date +%s)
    BASE_SRC=${BASE_SRC:-/tmp/base_src/train_bn_reduce.cu}
    rm -rf /tmp/base && mkdir -p /tmp/base && tar --exclude=./build -cf - . | tar -xf - -C /tmp/base &&
      cp "$BASE_SRC" /tmp/base/kernels/train/train_bn_reduce.cu && cp /tmp/base_src/train_vec.hpp /tmp/base/kernels/train/train_vec.hpp
    archs=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
    ( cmake -S /tmp/base -B /tmp/base/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$archs" &&
        cmake --build /tmp/base/build -j 6 --target nodebench_bn_bandwidth ) > "$O/base_build.log" 2>&1 &
    OUT=$O BUDGET_S=300 POINTS= TESTS=${TESTS-'TrainBnLayerGpu.*:TrainFusionGpu.*'} BN_DIRTY=0 NCU=${NCU:-0} \
      bash scripts/dev/device/train_fp32_session.sh > "$O/stdout.txt" 2>&1
    wait
    copy=$(grep -o 'memory/copy/8xL2: [0-9.]*' "$O/session.log" | awk '{print $2}')
    for r in 1 2; do
      for v in base new; do
        bin=build/tests/nodebench_bn_bandwidth; [ $v = base ] && bin=/tmp/base/build/tests/nodebench_bn_bandwidth
        timeout 55 $bin --reps 5 ${copy:+--copy-gbps $copy} --out "$O/bn_${v}_$r.json" > "$O/bn_${v}_$r.txt" 2>&1
      done
    done
    python3 - "$O"/bn_base_1.json "$O"/bn_new_1.json "$O"/bn_base_2.json "$O"/bn_new_2.json <<'PY' | tee "$O/alternated.txt"
import json, sys
print("step-weighted ratio to the copy per pass, in run order (base = 838a01a's reductions)")
for f in sys.argv[1:]:
    try: d = json.load(open(f))
    except Exception as e: print(f, "missing", e); continue
    for st in d["step"]:
        print(f"{f.split('/')[-1]:<16} {st['layout']}/b{st['batch']:<4}",
              "  ".join(f"{k} {st[k]['ratio']:.3f}" for k in ("fwd_stats", "fwd_apply", "bwd_reduce", "bwd_apply", "all")))
PY
    # Then the step against PyTorch at one point, in the time left (POINT, default fp32/nchw:64).
    left=$(( 560 - $(date +%s) + START ))
    if [ "$left" -gt 150 ] && [ -n "${POINT-fp32/nchw:64}" ]; then
      OUT=$O/step BUDGET_S=$left ALGO_CACHE=/tmp/nb_algo_cache.json POINTS="${POINT-fp32/nchw:64}" TESTS= BN=0 \
        bash scripts/dev/device/train_fp32_session.sh > "$O/step_stdout.txt" 2>&1
      tail -4 "$O/step/summary.txt" | tee -a "$O/alternated.txt"
    fi
    [ "${NCU_FULL:-0}" = 1 ] || { cd "$OUT" && tar czf call1.tgz s; cat "$O/alternated.txt"; exit 0; }
    # Where the small layers' statistics time goes: every section and the sampled warp stalls per
    # SASS instruction, for the 256x196 and 512x49 layers at b64 in both layouts.
    timeout 120 ncu --set full --clock-control none --cache-control none -k 'regex:stats_n' --launch-count 8 -f -o "$O/prof" \
      build/tests/nodebench_bn_bandwidth --shapes 256x196,512x49 --batches 64 --reps 1 > "$O/prof.log" 2>&1
    ncu -i "$O/prof.ncu-rep" --page source --csv --print-source sass > "$O/prof_source.csv" 2> "$O/prof_source.err"
    ncu -i "$O/prof.ncu-rep" --page details --csv > "$O/prof_details.csv" 2>&1
    ls -la "$O"/prof* | tee -a "$O/alternated.txt"
    ;;
2)  OUT=$O BUDGET_S=560 ALGO_CACHE=/tmp/nb_algo_cache.json POINTS="${POINTS:-fp32/nchw:64 tf32/nhwc:256}" TESTS= BN=0 \
      bash scripts/dev/device/train_fp32_session.sh > "$O/stdout.txt" 2>&1 ;;
esac
cd "$OUT" && tar czf "call${CALL:-1}.tgz" s
tail -25 "$OUT/s/stdout.txt" 2>/dev/null; cat "$OUT/s/alternated.txt" 2>/dev/null
