#!/usr/bin/env python3
"""Validates nodebench result files against the JSON Schema (harness/schema/result-v1.schema.json).

usage: validate_result.py [--schema FILE] [--expect-invalid] RESULT.json...
Exit 0 when every file is valid (or, with --expect-invalid, when every file is invalid),
1 otherwise, 2 on bad usage or unreadable files.

Without the jsonschema package (a GPU node that has only what the build needs) it runs the
reports package's structural checks (reports/nodebench_reports/load.py, no package needed, taken
from this checkout) instead, and says so on its first line.
"""
import argparse
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "reports"))  # this checkout's nodebench_reports, installed or not

from nodebench_reports.validate import result_problems  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schema", default=str(HERE / "harness/schema/result-v1.schema.json"))
    ap.add_argument("--expect-invalid", action="store_true", help="succeed only if every file is invalid")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    try:
        schema = json.loads(pathlib.Path(a.schema).read_text())
    except (OSError, json.JSONDecodeError) as e:
        print(f"validate_result.py: cannot read schema {a.schema}: {e}", file=sys.stderr)
        return 2
    failures = 0
    for i, f in enumerate(a.files):
        try:
            doc = json.loads(pathlib.Path(f).read_text())
        except (OSError, json.JSONDecodeError) as e:
            print(f"{f}: cannot read: {e}", file=sys.stderr)
            return 2
        errors, checked_by = result_problems(doc, f, schema)
        if i == 0:
            print(f"validate_result.py: checked with {checked_by}")
        if errors:
            print(f"{f}: INVALID ({len(errors)} errors)")
            for e in errors[:10]:
                print(f"  {e}")
        else:
            print(f"{f}: valid")
        if bool(errors) != a.expect_invalid:
            failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
