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
from .schema_check import check_identity, unique_cases

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
NO_JSONSCHEMA = ("jsonschema is not installed (Debian/Ubuntu: apt install python3-jsonschema; elsewhere: python3 -m "
                 "pip install jsonschema)")
STRUCTURAL_ONLY = (f"the loader's structural checks (nodebench_reports.load.check_document) instead of the JSON "
                   f"Schema: {NO_JSONSCHEMA}")


def _where(err) -> str:
    """The field a jsonschema error is about; for a missing property, that property."""
    parts = list(err.absolute_path)
    if err.validator == "required" and isinstance(err.instance, dict):
        missing = [k for k in err.validator_value if k not in err.instance]
        if missing:
            parts.append(missing[0])
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".")


def schema_problems(doc, path: str, schema: dict | None = None, limit: int = 50) -> list[str] | None:
    """The document's violations of the JSON Schema, checked by jsonschema itself (4.10, Debian 12's
    python3-jsonschema, or newer), then what a schema cannot say (a case's uniqueness in the run);
    None when jsonschema is not installed. Each problem names the file and the field."""
    try:
        import jsonschema
    except ImportError:
        return None
    if schema is None:
        schema = load_schema()[0]
    try:
        validator = jsonschema.validators.validator_for(schema)(schema)
        errors = sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    except jsonschema.exceptions.SchemaError as exc:
        raise ReportError(f"the schema itself is invalid: {exc.message}") from None
    problems = []
    for err in errors[:limit]:
        message = "missing" if err.validator == "required" and _where(err) else err.message
        problems.append(f"{path}: field '{_where(err) or '(top level)'}': {message}")
    if len(errors) > limit:
        problems.append(f"{path}: ... and {len(errors) - limit} more")
    if not errors:
        problems += unique_cases(doc, path)
    return problems


def result_problems(doc, path: str, schema: dict | None = None) -> tuple[list[str], str]:
    """The problems of one result document (empty when none) and what found them: the JSON Schema
    (jsonschema) when installed; without it (a fresh GPU node has only what the build needs) the
    loader's structural checks, which need no package. The caller says which ran."""
    problems = schema_problems(doc, path, schema)
    if problems is not None:
        return problems, FULL_SCHEMA
    try:
        check_document(doc, path)
    except ReportError as exc:
        return [str(exc)], STRUCTURAL_ONLY
    return [], STRUCTURAL_ONLY


def validate_file(path: str, schema: dict | None = None) -> tuple[list[str], str]:
    """The problems of one file (empty when valid) and what found them; ReportError for unreadable files.
    The identity (schema name and version) first, so that a file of another version gets the clear
    message; then the JSON Schema (or, without jsonschema, the structural checks)."""
    doc = read_json(path)
    try:
        check_identity(doc, path)
    except ReportError as exc:
        return [str(exc)], FULL_SCHEMA
    return result_problems(doc, path, schema)
