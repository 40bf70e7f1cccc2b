"""Shared fixtures: generated result files (see nbgen.py) and a helper to run the CLI in-process."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import nbgen  # noqa: E402

from nodebench_reports.cli import main  # noqa: E402

REPO = HERE.parents[1]
HARNESS_SCHEMA = REPO / "harness" / "schema" / "result-v1.schema.json"
PLOT_KEYS = ["gemm", "conv", "train", "hostlink", "p2p", "allreduce", "scaling", "fp16_speedup"]


def load_schema() -> dict:
    if HARNESS_SCHEMA.exists():
        return json.loads(HARNESS_SCHEMA.read_text(encoding="utf-8"))
    from nodebench_reports.validate import packaged_schema
    return packaged_schema()


@pytest.fixture(scope="session")
def schema() -> dict:
    return load_schema()


@pytest.fixture(scope="session")
def validate(schema):
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.validators.validator_for(schema)(schema)

    def check(doc):
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        assert not errors, "; ".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])
    return check


class CLIResult:
    def __init__(self, rc, out, err):
        self.rc, self.out, self.err = rc, out, err

    def __repr__(self):
        return f"CLIResult(rc={self.rc}, out={self.out[-600:]!r}, err={self.err[-600:]!r})"


@pytest.fixture
def cli(capsys):
    """Run nodebench-report in-process; an escaping exception (a traceback) fails the test."""
    def run(*args) -> CLIResult:
        capsys.readouterr()
        rc = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return CLIResult(rc, out, err)
    return run


# ----------------------------------------------------------------------------------------------
# generated files, built once per session (tests copy before changing them)


@pytest.fixture(scope="session")
def gen_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("generated")


@pytest.fixture(scope="session")
def full_doc() -> dict:
    return nbgen.make_result(seed=1)


@pytest.fixture(scope="session")
def full_file(gen_dir, full_doc) -> Path:
    return Path(nbgen.write(full_doc, gen_dir / "full.json"))


@pytest.fixture(scope="session")
def full_file_again(gen_dir) -> Path:
    """Same node and distributions as full_file, other noise (another night without change)."""
    return Path(nbgen.write(nbgen.make_result(seed=2, started_at="2025-06-02T02:00:00Z"), gen_dir / "full2.json"))


@pytest.fixture(scope="session")
def gemm_only_file(gen_dir) -> Path:
    return Path(nbgen.write(nbgen.make_result(families=("gemm",), n_gpus=1, seed=3), gen_dir / "gemm_only.json"))


@pytest.fixture(scope="session")
def full_report(tmp_path_factory, full_file) -> Path:
    """The report of full_file: a folder with report.html and summary.md."""
    out = tmp_path_factory.mktemp("report")
    assert main(["html", str(full_file), "-o", str(out)]) == 0
    return out


# ----------------------------------------------------------------------------------------------
# history backends: an SQLite file, and a database on a throw-away PostgreSQL server (pgserver.py)


@pytest.fixture(scope="session")
def pg_server():
    import pgserver

    server, why = pgserver.start_or_reason()
    if server is None:
        if pgserver.required():
            pytest.fail(f"NODEBENCH_TEST_POSTGRES=required, but {why}")
        pytest.skip(f"PostgreSQL tests skipped: {why}")
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def history_target(request, tmp_path):
    """Where a new, empty history lives: an SQLite file path, or a postgresql:// URL."""
    if request.param == "sqlite":
        return str(tmp_path / "history.sqlite")
    return request.getfixturevalue("pg_server").new_database()
