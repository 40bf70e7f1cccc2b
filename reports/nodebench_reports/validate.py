"""Full JSON Schema validation against the packaged copy of ``result-v1.schema.json``."""

from __future__ import annotations

import json
from importlib import resources

from .errors import ReportError
from .load import check_document, read_json

SCHEMA_FILE = "result-v1.schema.json"


def packaged_schema() -> dict:
    text = resources.files(__package__).joinpath("schema", SCHEMA_FILE).read_text(encoding="utf-8")
    return json.loads(text)


def validate_file(path: str) -> list[str]:
    """Return the schema violations of one file (empty when valid); ReportError for unreadable files."""
    try:
        import jsonschema
    except ImportError:
        raise ReportError("full validation needs the jsonschema package: python3 -m pip install jsonschema") from None
    doc = read_json(path)
    # identity first, so that a file of another schema version gets the clear message
    if isinstance(doc, dict) and doc.get("schema") == "nodebench.result" and doc.get("schema_version") == 1:
        validator_cls = jsonschema.validators.validator_for(packaged_schema())
        validator = validator_cls(packaged_schema())
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
