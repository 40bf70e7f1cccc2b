#!/bin/sh
# A stand-in for nodebench in the tests of tests/gpu_guard.py: `env --json` answers as
# FAKE_NODEBENCH_MODE says (a crash, no GPU, nodebench's exit 3, garbage, bad usage, one GPU).
case "${FAKE_NODEBENCH_MODE:-}" in
  crash) kill -SEGV $$ ;;
  nogpu) echo '{"gpus": [], "cuda_error": "fake: CUDA sees no GPU"}' ;;
  exit3) echo "nodebench: no usable GPU (fake)" >&2; exit 3 ;;
  garbage) echo "not the environment"; exit 0 ;;
  usage) echo "nodebench: bad usage (fake)" >&2; exit 2 ;;
  gpu) echo '{"gpus": [{"index": 0, "name": "Fake GPU"}]}' ;;
  *) echo "fake_nodebench.sh: set FAKE_NODEBENCH_MODE" >&2; exit 2 ;;
esac
