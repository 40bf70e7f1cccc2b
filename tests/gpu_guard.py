#!/usr/bin/env python3
"""Runs a GPU test only where a GPU is: `gpu_guard.py NODEBENCH -- COMMAND...`.

Asks `NODEBENCH env --json` which GPUs CUDA sees; with none it prints why and exits 77, which
ctest reports as skipped (SKIP_RETURN_CODE) rather than failed, so a plain `ctest` on a machine
without a GPU passes with the GPU tests skipped. Otherwise runs COMMAND and returns its status.
"""
import json
import subprocess
import sys

SKIP = 77


def main() -> int:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print("usage: gpu_guard.py NODEBENCH -- COMMAND...", file=sys.stderr)
        return 2
    nodebench, command = sys.argv[1], sys.argv[3:]
    try:
        p = subprocess.run([nodebench, "env", "--json"], capture_output=True, text=True, timeout=120)
        env = json.loads(p.stdout)
        gpus = env.get("gpus") or []
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        print(f"SKIP: cannot ask nodebench for the GPUs: {e}")
        return SKIP
    if not gpus:
        print(f"SKIP: no GPU visible ({env.get('cuda_error') or 'CUDA sees none'}); a GPU test")
        return SKIP
    return subprocess.call(command)


if __name__ == "__main__":
    sys.exit(main())
