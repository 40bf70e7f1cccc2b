"""Full JSON Schema validation of result files against ``result-v1.schema.json``.

The schema used is ``--schema FILE`` when given, else ``harness/schema/result-v1.schema.json`` of the
nodebench checkout the package runs from, else the copy packaged with nodebench-reports (a test
checks that this copy matches the harness one).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from .errors import ReportError
from .load import check_document, read_json

SCHEMA_FILE = "result-v1.schema.json"


def packaged_schema() -> dict:
    text = resources.files(__package__).joinpath("schema", SCHEMA_FILE).read_text(encoding="utf-8")
    return json.loads(text)


def repository_schema_path() -> Path | None:
    """harness/schema/result-v1.schema.json when the package runs from a nodebench checkout."""
    candidate = Path(__file__).resolve().parents[2] / "harness" / "schema" / SCHEMA_FILE
    return candidate if candidate.is_file() else None


def load_schema(path: str | None = None) -> tuple[dict, str]:
    """The schema to validate against, and where it came from: the given file, else the checkout's
    harness/schema copy (the source of truth), else the copy packaged with nodebench-reports."""
    if path is None:
        repo = repository_schema_path()
        if repo is None:
            return packaged_schema(), "packaged copy"
        path = str(repo)
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise ReportError(f"{path}: not a JSON Schema (expected an object)")
    return doc, path


FULL_SCHEMA = "the JSON Schema (jsonschema)"
STRUCTURAL_ONLY = ("the loader's structural checks (nodebench_reports.load.check_document) instead of the JSON "
                   "Schema: jsonschema is not installed")


def result_problems(doc, path: str, schema: dict | None = None) -> tuple[list[str], str]:
    """The problems of one result document (empty when none) and what found them: the full JSON
    Schema when jsonschema is installed; without it (a fresh GPU node has only what the build
    needs) the loader's structural checks, which need no package. The caller says which ran."""
    try:
        import jsonschema
    except ImportError:
        try:
            check_document(doc, path)
        except ReportError as exc:
            return [str(exc)], STRUCTURAL_ONLY
        return [], STRUCTURAL_ONLY
    if schema is None:
        schema = load_schema()[0]
    validator = jsonschema.validators.validator_for(schema)(schema)
    problems = []
    for err in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))[:50]:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path).lstrip(".")
        problems.append(f"{path}: field '{where or '(top level)'}': {err.message}")
    return problems, FULL_SCHEMA


def validate_file(path: str, schema: dict | None = None) -> list[str]:
    """Return the schema violations of one file (empty when valid); ReportError for unreadable files."""
    try:
        import jsonschema
    except ImportError:
        raise ReportError("full validation needs the jsonschema package: python3 -m pip install jsonschema") from None
    if schema is None:
        schema = load_schema()[0]
    doc = read_json(path)
    # identity first, so that a file of another schema version gets the clear message
    if isinstance(doc, dict) and doc.get("schema") == "nodebench.result" and doc.get("schema_version") == 1:
        try:
            validator = jsonschema.validators.validator_for(schema)(schema)
        except jsonschema.exceptions.SchemaError as exc:
            raise ReportError(f"the schema itself is invalid: {exc.message}") from None
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        problems = []
        for err in errors[:50]:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path).lstrip(".")
            problems.append(f"{path}: field '{where or '(top level)'}': {err.message}")
        if len(errors) > 50:
            problems.append(f"{path}: ... and {len(errors) - 50} more")
        if problems:
            return problems
    try:
        check_document(doc, path)
    except ReportError as exc:
        return [str(exc)]
    return []
