#!/usr/bin/env python3
"""GPU checks of the nccl family's watchdog and of the MPI launch mode (docs/MULTIGPU.md).

usage: multigpu_check.py --nodebench EXE --schema SCHEMA --mode MODE --out DIR [--mpirun LAUNCHER... NP]

modes:
  stall       one process; NODEBENCH_NCCL_TEST_STALL_S holds the first collective past
              NODEBENCH_NCCL_TIMEOUT_S: that case is recorded failed (a hang, aborted), the next
              one runs on a fresh communicator and passes; nodebench exits 1.
  mpi-one     under the launcher with one rank: the small collectives through the MPI bootstrap,
              verified; environment.ranks and environment.nodes describe the one rank.
  mpi-shared  under the launcher with two ranks: per-GPU records of both ranks at rank 0 (with
              rank and host); nccl ok when the ranks have GPUs of their own, else skipped with
              the reason (two ranks on one GPU).
  mpi-absent  two ranks, rank 1 never joins the communicator: rank 0's initialisation hangs until
              the watchdog; the case is recorded failed; nodebench exits 1.
Every mode validates the result file against the schema.
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys

from result_check import check_result  # the JSON Schema, or without jsonschema the loader's checks

SMALL = "^nccl/all_reduce/float/out_of_place/eager/(8B|64KiB)$"


def run(cmd, env, timeout=600):
    print("$", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    print(p.stdout[-6000:], p.stderr[-4000:])
    return p.returncode


def load(outdir: pathlib.Path, schema_path: str):
    files = sorted(outdir.glob("*.json"))
    if len(files) != 1:
        raise SystemExit(f"FAIL: expected one result file in {outdir}, found {[f.name for f in files]}")
    doc = json.loads(files[0].read_text())
    check_result(doc, schema_path, str(files[0]))
    return doc


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodebench", required=True)
    ap.add_argument("--schema", required=True)
    ap.add_argument("--mode", required=True, choices=["stall", "mpi-one", "mpi-shared", "mpi-absent"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--mpirun", nargs=argparse.REMAINDER, default=[])
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ)
    env.setdefault("NCCL_NVLS_ENABLE", "0")
    problems = []

    def expect(cond, what):
        if not cond:
            problems.append(what)

    if a.mode == "stall":
        env.update(NODEBENCH_NCCL_TEST_STALL_S="15", NODEBENCH_NCCL_TIMEOUT_S="4")
        rc = run([a.nodebench, "run", "--family", "nccl", "--filter", SMALL, "--out", str(out)], env)
        doc = load(out, a.schema)
        recs = doc["records"]
        expect(rc == 1, f"exit {rc}, expected 1 (a failed case)")
        expect(len(recs) == 2, f"{len(recs)} records, expected 2")
        if len(recs) == 2:
            expect(recs[0]["status"] == "failed" and "did not complete within" in (recs[0]["reason"] or ""),
                   f"first case not recorded as a hang: {recs[0]['status']}: {recs[0]['reason']}")
            expect(recs[1]["status"] == "ok" and recs[1]["metrics"].get("wrong_count") == 0,
                   f"the case after the hang: {recs[1]['status']}: {recs[1]['reason']}")
    else:
        if not a.mpirun:
            raise SystemExit("--mpirun LAUNCHER... NP is needed for the MPI modes")
        launcher = a.mpirun
        if a.mode == "mpi-absent":
            env.update(NODEBENCH_NCCL_TEST_ABSENT_RANK="1", NODEBENCH_NCCL_TIMEOUT_S="5")
            families, filt = "nccl", "^nccl/all_reduce/float/out_of_place/eager/8B$"
        elif a.mode == "mpi-one":
            families, filt = "nccl,p2p", SMALL + "|^nccl/sweep/|^p2p/latency"
        else:
            families, filt = "latency,nccl", "^latency/h2d_4b$|" + SMALL
        rc = run(launcher + [a.nodebench, "run", "--family", families, "--filter", filt, "--out", str(out)], env)
        doc = load(out, a.schema)
        recs = doc["records"]
        e = doc["environment"]
        nranks = int(launcher[-1])
        expect(len(e.get("ranks", [])) == nranks, f"environment.ranks: {len(e.get('ranks', []))}, expected {nranks}")
        expect(e.get("mpi", {}).get("world_size") == nranks, "environment.mpi.world_size")
        expect(len(e.get("nodes", [])) >= 1, "environment.nodes")
        expect(all("rank" in r and "host" in r for r in recs), "every record carries rank and host")
        nccl = [r for r in recs if r["family"] == "nccl"]
        if a.mode == "mpi-one":
            expect(rc == 0, f"exit {rc}")
            expect(len(nccl) >= 3, f"{len(nccl)} nccl records")
            for r in nccl:
                expect(r["status"] == "ok", f"{r['id']}: {r['status']}: {r['reason']}")
                if r["status"] == "ok":
                    expect(r["metrics"].get("wrong_count") == 0, f"{r['id']}: wrong_count {r['metrics'].get('wrong_count')}")
                    expect(r["details"].get("mode") in ("mpi", None), f"{r['id']}: mode {r['details'].get('mode')}")
            for r in recs:
                if r["family"] == "p2p":
                    expect(r["status"] == "skipped" and "needs 2 GPUs" in r["reason"], f"{r['id']}: {r['reason']}")
        elif a.mode == "mpi-shared":
            expect(rc == 0, f"exit {rc}")
            lat = [r for r in recs if r["family"] == "latency"]
            expect(sorted(r["rank"] for r in lat) == list(range(nranks)), f"latency records by rank: {[r['rank'] for r in lat]}")
            shared = len({(x["host"], x["pci_bus_id"]) for x in e.get("ranks", [])}) < nranks
            for r in nccl:
                expect(r["rank"] == 0, f"{r['id']}: reported by rank {r['rank']}")
                if shared:
                    expect(r["status"] == "skipped" and "share GPU" in (r["reason"] or ""), f"{r['id']}: {r['status']}: {r['reason']}")
                else:
                    expect(r["status"] == "ok" and r["params"].get("ngpus") == nranks, f"{r['id']}: {r['status']}: {r['reason']}")
        else:
            expect(rc == 1, f"exit {rc}, expected 1")
            expect(len(nccl) == 1, f"{len(nccl)} nccl records, expected 1 (rank 0's)")
            for r in nccl:
                reason = r["reason"] or ""
                expect(r["status"] == "failed" and "did not complete within" in reason and "rank 1" in reason,
                       f"{r['id']}: {r['status']}: {reason}")
        expect(doc["run_status"] == "complete", f"run_status {doc['run_status']}")
    for p in problems:
        print("FAIL:", p)
    print(f"{a.mode}: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
