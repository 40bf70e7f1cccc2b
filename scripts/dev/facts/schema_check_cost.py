#!/usr/bin/env python3
"""Time the two checks of a result file: the full JSON Schema through jsonschema (what `nodebench-report
validate` runs) and the loader's structural checks (what every command runs on the files it reads).

usage: schema_check_cost.py RESULT.json[.gz] [--repeat N]   prints one JSON object (seconds, best of N)
"""
import argparse
import json
import pathlib
import platform
import sys
import time

HERE = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(HERE / "reports"))

from nodebench_reports.load import read_json  # noqa: E402
from nodebench_reports.schema_check import check_document  # noqa: E402
from nodebench_reports.validate import load_schema, schema_problems  # noqa: E402


def best(fn, n):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    import jsonschema  # the measurement needs it
    from importlib.metadata import version
    doc = read_json(a.result)
    schema = load_schema()[0]
    full = best(lambda: schema_problems(doc, a.result, schema), a.repeat)
    loader = best(lambda: check_document(doc, a.result), a.repeat)
    print(json.dumps({"file": a.result, "records": len(doc["records"]), "jsonschema": version("jsonschema"),
                      "python": platform.python_version(), "repeat": a.repeat,
                      "jsonschema_s": round(full, 3), "loader_checks_s": round(loader, 3),
                      "ratio": round(full / loader, 1)}, indent=1))
    del jsonschema
    return 0


if __name__ == "__main__":
    sys.exit(main())
