#!/usr/bin/env bash
# The three calls of results/h100/2026-12-07-train-fp32-4 (one H100 machine, in turn, the second
# and third on the warm machine reusing the first's build and algorithm cache), from the repository
# root of commit 73d3980; each call's $OUT/s was packed as callN.tgz.
export NCCL_NVLS_ENABLE=0
O=$OUT/s; mkdir -p "$O"
case "${CALL:-1}" in
1)  OUT=$O BUDGET_S=470 ALGO_CACHE=/tmp/nb_algo_cache.json POINTS="fp32/nchw:64 fp32/nchw:256" \
      TESTS='TrainBnLayerGpu.*:TrainFusionGpu.*' bash scripts/dev/device/train_fp32_session.sh > "$O/stdout.txt" 2>&1
    # The statistics kernel's device-memory bytes and GPU time under each flush (no cache control by ncu).
    for f in dirty clean; do
      timeout 40 ncu --clock-control none --cache-control none -k regex:stats_n --launch-count 30 \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum --csv \
        build/tests/nodebench_bn_bandwidth --layouts nchw --batches 64 --reps 2 --flush $f > "$O/ncu_$f.csv" 2>&1
    done ;;
2)  OUT=$O BUDGET_S=420 ALGO_CACHE=/tmp/nb_algo_cache.json POINTS="tf32/nhwc:256 fp32/nchw:256 tf32/nchw:256" \
      TESTS= BN=0 bash scripts/dev/device/train_fp32_session.sh > "$O/stdout.txt" 2>&1 ;;
3)  OUT=$O BUDGET_S=280 ALGO_CACHE=/tmp/nb_algo_cache.json POINTS="tf32/nchw:256 tf32/nhwc:256" NEED_POINT=90 \
      TESTS= BN=0 bash scripts/dev/device/train_fp32_session.sh > "$O/stdout.txt" 2>&1 ;;
esac
cd "$OUT" && tar czf "call${CALL:-1}.tgz" s
