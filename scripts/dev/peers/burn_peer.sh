#!/usr/bin/env bash
# nodebench burn beside gpu-burn (the public tool, built from its source outside this tree), taken
# alternately on the same GPUs: gpu-burn, nodebench burn, gpu-burn. Board power is sampled once a
# second with nvidia-smi while gpu-burn runs (nodebench records its own from NVML).
#
# usage: scripts/dev/peers/burn_peer.sh NODEBENCH GPU_BURN_DIR OUTDIR STEP...
#   NODEBENCH     the nodebench binary
#   GPU_BURN_DIR  a folder holding a built gpu_burn and its compare.ptx (gpu-burn reads it from its cwd)
#   OUTDIR        where the logs, samples and result files go
#   STEP          peer:SECONDS or burn:SECONDS, in the order to run them; e.g. peer:150 burn:300 peer:150
# Environment: FIRST_STEP (default 1) numbers the steps' files, so that steps split over several
# invocations into one OUTDIR keep their order; PRECISION (default tf32: nodebench --precision tf32 against gpu_burn -tc; fp32
# against gpu_burn's default SGEMM, fp64 against gpu_burn -d).
# Then scripts/dev/peers/burn_peer_summary.py OUTDIR writes the ratio table (burn_peer.json).
set -uo pipefail
[ $# -ge 4 ] || { sed -n 2,14p "$0"; exit 2; }
NB=$1 GB=$2 OUTDIR=$3; shift 3
PRECISION=${PRECISION:-tf32}
case $PRECISION in
  tf32) GBFLAG=(-tc) ;; fp32) GBFLAG=() ;; fp64) GBFLAG=(-d) ;;
  *) echo "burn_peer: PRECISION must be tf32, fp32 or fp64 (gpu-burn has no other)" >&2; exit 2 ;;
esac
[ -x "$NB" ] || { echo "burn_peer: $NB is not an executable" >&2; exit 2; }
[ -x "$GB/gpu_burn" ] || { echo "burn_peer: no gpu_burn in $GB" >&2; exit 2; }
mkdir -p "$OUTDIR"
export NCCL_NVLS_ENABLE=0
n=$(( ${FIRST_STEP:-1} - 1 ))
for step in "$@"; do
  n=$((n + 1))
  kind=${step%%:*} secs=${step#*:}
  case $secs in ''|*[!0-9]*) echo "burn_peer: '$step': the seconds must be a whole number" >&2; exit 2 ;; esac
  case $kind in
    peer)
      nvidia-smi --query-gpu=timestamp,index,power.draw,power.limit,clocks.sm,temperature.gpu,clocks_event_reasons.active \
        --format=csv,noheader,nounits -l 1 > "$OUTDIR/$n-peer-power.csv" 2>/dev/null &
      smi=$!
      echo "== $n: gpu_burn ${GBFLAG[*]} $secs ($(date -u +%T))"
      (cd "$GB" && ./gpu_burn "${GBFLAG[@]}" "$secs") > "$OUTDIR/$n-peer.log" 2>&1
      echo "   rc $?"
      kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
      ;;
    burn)
      echo "== $n: nodebench burn --precision $PRECISION --duration ${secs}s ($(date -u +%T))"
      "$NB" burn --precision "$PRECISION" --duration "${secs}s" --out-file "$OUTDIR/$n-burn.json" \
        > "$OUTDIR/$n-burn.log" 2>&1
      echo "   rc $?"
      ;;
    *) echo "burn_peer: unknown step kind '$kind' (peer or burn)" >&2; exit 2 ;;
  esac
done
