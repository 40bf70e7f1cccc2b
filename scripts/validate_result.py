#!/usr/bin/env python3
"""Validates nodebench result files against the JSON Schema (harness/schema/result-v1.schema.json).

usage: validate_result.py [--schema FILE] [--expect-invalid] RESULT.json...
Exit 0 when every file is valid (or, with --expect-invalid, when every file is invalid),
1 otherwise, 2 on bad usage or unreadable files.
"""
import argparse
import json
import pathlib
import sys

try:
    import jsonschema
except ImportError:
    print("validate_result.py: needs the 'jsonschema' package (pip install jsonschema)", file=sys.stderr)
    sys.exit(2)

HERE = pathlib.Path(__file__).resolve().parent.parent


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
    validator = jsonschema.Draft202012Validator(schema)
    failures = 0
    for f in a.files:
        try:
            doc = json.loads(pathlib.Path(f).read_text())
        except (OSError, json.JSONDecodeError) as e:
            print(f"{f}: cannot read: {e}", file=sys.stderr)
            return 2
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        if errors:
            print(f"{f}: INVALID ({len(errors)} errors)")
            for e in errors[:10]:
                print(f"  at /{'/'.join(str(p) for p in e.path)}: {e.message}")
        else:
            print(f"{f}: valid")
        if bool(errors) != a.expect_invalid:
            failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
