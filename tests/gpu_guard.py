#!/usr/bin/env python3
"""Runs a GPU test only where a GPU is: `gpu_guard.py NODEBENCH -- COMMAND...`.

Asks `NODEBENCH env --json` which GPUs CUDA sees. Only a clean "no GPU" answer is a skip (exit 77,
which ctest reports as skipped through SKIP_RETURN_CODE): `env --json` exiting 0 with `"gpus": []`,
or exiting 3 (nodebench's "no usable GPU"). Anything else -- a crash (a signal, exit 139), another
exit status, a timeout, output that is not the environment JSON -- fails the test (exit 1) with
the output shown: a broken binary must not turn every GPU test into a skip. With GPUs, runs
COMMAND and returns its status.

Environment: NODEBENCH_GPU_GUARD_TIMEOUT_S (default 120) bounds the `env --json` call.
"""
import json
import os
import signal
import subprocess
import sys

SKIP = 77
FAIL = 1
NO_GPU = 3  # nodebench's exit status for "no usable GPU"


def describe_exit(rc: int) -> str:
    if rc < 0:
        try:
            return f"killed by signal {-rc} ({signal.Signals(-rc).name})"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit {rc}"


def fail(message: str, p=None) -> int:
    print(f"FAIL: {message}")
    if p is not None:
        for name, text in (("stdout", p.stdout), ("stderr", p.stderr)):
            if text:
                print(f"--- {name} of `env --json` (last 4000 characters):")
                print(text[-4000:])
    return FAIL


def main() -> int:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print("usage: gpu_guard.py NODEBENCH -- COMMAND...", file=sys.stderr)
        return 2
    nodebench, command = sys.argv[1], sys.argv[3:]
    timeout = float(os.environ.get("NODEBENCH_GPU_GUARD_TIMEOUT_S", "120"))
    try:
        p = subprocess.run([nodebench, "env", "--json"], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        print(f"FAIL: `{nodebench} env --json` did not finish in {timeout:g} s")
        for name, text in (("stdout", e.stdout), ("stderr", e.stderr)):
            if text:
                print(f"--- {name}:")
                print((text.decode(errors="replace") if isinstance(text, bytes) else text)[-4000:])
        return FAIL
    except OSError as e:
        return fail(f"cannot run `{nodebench} env --json`: {e}")
    if p.returncode == NO_GPU:
        print(f"SKIP: no usable GPU (`env --json` exit 3): {p.stderr.strip()[-300:]}; a GPU test")
        return SKIP
    if p.returncode != 0:
        return fail(f"`{nodebench} env --json` {describe_exit(p.returncode)}: not a clean answer about the GPUs", p)
    try:
        env = json.loads(p.stdout)
        gpus = env["gpus"]
        if not isinstance(gpus, list):
            raise ValueError("'gpus' is not a list")
    except (ValueError, KeyError, TypeError) as e:
        return fail(f"`{nodebench} env --json` exited 0 but its output is not the environment JSON ({e})", p)
    if not gpus:
        print(f"SKIP: no GPU visible ({env.get('cuda_error') or 'CUDA sees none'}); a GPU test")
        return SKIP
    try:
        return subprocess.call(command)
    except OSError as e:
        return fail(f"cannot run the test `{' '.join(command)}`: {e} (is its target built?)")


if __name__ == "__main__":
    sys.exit(main())
