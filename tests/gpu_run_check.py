#!/usr/bin/env python3
"""GPU test: runs `nodebench run` with the given arguments into a fresh folder, then checks
that it exited 0, wrote exactly one result file that validates against the schema, that every
record is ok (or skipped with a reason), and that every ok GEMM record was verified.

usage: gpu_run_check.py NODEBENCH SCHEMA OUTDIR [run arguments...]
"""
import pathlib
import sys

from result_check import run_one_file, verdict  # the JSON Schema, or without jsonschema the loader's checks


def main() -> int:
    exe, schema_path, outdir = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
    doc = run_one_file(exe, schema_path, outdir, sys.argv[4:], timeout=240)
    if doc is None:
        return 1
    bad = []
    for r in doc["records"]:
        if r["status"] == "skipped":
            if not r["reason"]:
                bad.append(f"{r['id']}: skipped without a reason")
        elif r["status"] != "ok":
            bad.append(f"{r['id']}: {r['status']}: {r['reason']}")
        elif r["family"] == "gemm":
            v = r["details"].get("verification", {})
            if v.get("samples", 0) < 4 or v.get("failures") != 0:
                bad.append(f"{r['id']}: not verified: {v}")
        elif r["family"] == "nccl":
            v = r["details"].get("verification", {})
            if r["metrics"].get("wrong_count") != 0 or not v.get("elements_checked"):
                bad.append(f"{r['id']}: not verified: {v}")
    if doc["run_status"] != "complete" or not doc["records"]:
        bad.append(f"run_status {doc['run_status']}, {len(doc['records'])} records")
    return verdict(bad, doc)


if __name__ == "__main__":
    sys.exit(main())
