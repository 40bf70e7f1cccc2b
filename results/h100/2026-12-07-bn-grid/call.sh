#!/usr/bin/env bash
# The call of results/h100/2026-12-07-bn-grid/README.md (on the GPU machine, repository root, T seconds).
export NCCL_NVLS_ENABLE=0; S=$(date +%s); el() { echo $(( $(date +%s) - S )); }; T=${T:-300}
A=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .'); nvidia-smi --query-gpu=name --format=csv,noheader
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=$A > $OUT/build.log 2>&1 && timeout $(( T - 90 )) cmake --build build -j 16 --target nodebench_train_gpu_tests nodebench_bn_bandwidth >> $OUT/build.log 2>&1; echo "build rc $? at $(el) s"
timeout $(( T - 60 - $(el) )) build/tests/nodebench_train_gpu_tests --gtest_filter='TrainBnLayerGpu.*' > $OUT/tests.log 2>&1; echo "tests rc $? at $(el) s"; grep -E "grid|cases run|OK|FAILED" $OUT/tests.log | grep -vE "^  .* [0-9.e-]+$" | tail -5; grep -c " grid " $OUT/tests.log
for g in 4:512 4:128 4:512 4:128; do [ $(el) -lt $(( T - 25 )) ] || break; timeout $(( T - 5 - $(el) )) build/tests/nodebench_bn_bandwidth --reps 3 --blocks-per-sm ${g%%:*} --row-bytes ${g#*:} --out $OUT/bn_${g/:/_}_$(el).json > $OUT/bn_${g/:/_}_$(el).txt 2>&1; echo "bn $g at $(el) s"; done

python3 - $OUT/bn_*.json <<'PY'
import json, sys
for f in sys.argv[1:]:
    d = json.load(open(f))
    for s in d["step"]:
        print(f.split("/")[-1][:-5], f"{s['layout']}/b{s['batch']}", "  ".join(f"{k} {s[k]['ms']:.3f}ms {s[k]['gbps']:.0f}" for k in ("fwd_stats", "bwd_reduce", "all")))
PY
cd $OUT && tar czf all.tgz *.json *.txt *.log 2>/dev/null; ls | head
