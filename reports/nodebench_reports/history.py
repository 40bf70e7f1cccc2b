"""History: ``ingest`` result files (this module: the schema, its migrations, the derived tables and the
ingest), plot a ``trend`` per node (:mod:`.history_query`: the queries and the trend), compare a
``fleet`` (:mod:`.history_fleet`).

The history is an SQLite file (the default) or a PostgreSQL database (a ``postgresql://`` URL;
see :mod:`.historydb`), with one schema, written once for both:

* ``meta``: ``db_version``, the schema's version (:data:`DB_VERSION`); older histories are
  migrated when opened, step by step (:data:`_STEPS`: a new database runs every step, so the
  migrations run on both backends),
* ``runs``: one row per run (``run_id`` is the key; ingesting a run again replaces it),
* ``records``: one row per record (status, median time, parameters, GPU model, the node it ran on:
  the record's ``host`` in runs under MPI, else the run's node; ``rank`` is -1 outside MPI),
* ``metrics``: one row per record metric, plus ``median_s`` for every timed record,
* ``case_noise``: per case and machine, the between-run spread of the case's median over the
  machine's ingested runs (standard deviation of the log medians, and max/min), or the largest
  ``run_to_run.cv`` of its records when that is larger,
* ``case_latest``: per case, machine, GPU model and metric, the latest ok value (what ``fleet``
  compares), both for "any record with this metric" and "records whose primary metric it is".

The last two are derived: each ingest recomputes them for the machine(s) and cases of the run it
stores only (:func:`refresh_derived`), which gives the same rows as recomputing the whole history
(:func:`recompute_derived`). Each run is stored in a transaction of its own, under locks on its
run id and its machines, so that many nodes can ingest at once: a run lands whole or not at all,
a run ingested twice is stored once, and the derived tables see every committed run.

A *node* is ``environment.host.hostname`` unless ``ingest --node`` overrides it. A *machine* is
the node plus a short hash of its GPUs' UUIDs (or serials), so that hosts of one name (every
cloud VM called ``vm``) stay apart; ``fleet`` and ``compare --history`` key by machine.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from collections import defaultdict
from dataclasses import dataclass

from .errors import ReportError
from .historydb import HistoryDB, HistoryUnavailable, connect
from .load import Run, is_number, primary_metric, record_key, record_mode
from .stats import between_run_spread

DB_VERSION = 3

# The schema as the steps that built it: step N takes a history of version N-1 to version N.
# A new database runs them all; an older one the steps after its version. Each statement must
# mean the same to SQLite and PostgreSQL.
_STEPS: dict[int, list[str]] = {
    1: [
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, node TEXT NOT NULL, started_at TEXT NOT NULL, "
        "finished_at TEXT, run_status TEXT NOT NULL, gpu_models TEXT NOT NULL, nodebench_version TEXT, "
        "git_commit TEXT, schema_version INTEGER NOT NULL, source TEXT, ingested_at TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS records (run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, "
        "record_id TEXT NOT NULL, gpus TEXT NOT NULL, rank INTEGER NOT NULL, node TEXT NOT NULL, "
        "family TEXT NOT NULL, case_name TEXT NOT NULL, status TEXT NOT NULL, gpu_model TEXT NOT NULL, "
        "median_s DOUBLE PRECISION, cv DOUBLE PRECISION, n_samples INTEGER, params TEXT, flags TEXT, reason TEXT, "
        "primary_metric TEXT, PRIMARY KEY (run_id, record_id, gpus, rank))",
        "CREATE TABLE IF NOT EXISTS metrics (run_id TEXT NOT NULL, record_id TEXT NOT NULL, gpus TEXT NOT NULL, "
        "rank INTEGER NOT NULL, name TEXT NOT NULL, value DOUBLE PRECISION NOT NULL, "
        "PRIMARY KEY (run_id, record_id, gpus, rank, name))",
        "CREATE INDEX IF NOT EXISTS metrics_by_name ON metrics(record_id, name)",
        "CREATE INDEX IF NOT EXISTS runs_by_node ON runs(node, started_at)",
    ],
    2: [  # the machine key (node + GPU identity) and the between-run spread
        "ALTER TABLE runs ADD COLUMN machine TEXT",
        "ALTER TABLE records ADD COLUMN machine TEXT",
        "ALTER TABLE records ADD COLUMN run_to_run_cv DOUBLE PRECISION",
        "UPDATE runs SET machine = node",
        "UPDATE records SET machine = node",
        "CREATE TABLE IF NOT EXISTS case_noise (machine TEXT NOT NULL, record_id TEXT NOT NULL, gpus TEXT NOT NULL, "
        "rank INTEGER NOT NULL, runs INTEGER NOT NULL, cv DOUBLE PRECISION NOT NULL, max_over_min DOUBLE PRECISION, "
        "PRIMARY KEY (machine, record_id, gpus, rank))",
    ],
    3: [  # many writers, a fleet of 1,000s of machines: the latest value per case kept at ingest,
          # the index that lets an ingest refresh one machine's cases, and one for trend --node
        "CREATE TABLE IF NOT EXISTS case_latest (machine TEXT NOT NULL, record_id TEXT NOT NULL, "
        "gpus TEXT NOT NULL, rank INTEGER NOT NULL, gpu_model TEXT NOT NULL, name TEXT NOT NULL, "
        "primary_only INTEGER NOT NULL, run_id TEXT NOT NULL, started_at TEXT NOT NULL, node TEXT NOT NULL, "
        "value DOUBLE PRECISION NOT NULL, PRIMARY KEY (machine, record_id, gpus, rank, gpu_model, name, primary_only))",
        "CREATE INDEX IF NOT EXISTS records_by_machine ON records(machine, record_id)",
        # trend --node: the node's rows of a case, not the whole fleet's
        "CREATE INDEX IF NOT EXISTS records_by_node ON records(node, record_id)",
    ],
}
# indexes a bulk load may drop and build again afterwards (scripts/dev/facts/gen_history.py)
SECONDARY_INDEXES = [s for step in _STEPS.values() for s in step if s.startswith("CREATE INDEX")]
_MIGRATION_LOCK = "nodebench-history-schema"


def stored_id(rec: dict) -> str:
    """The record id as stored: a case measured with all GPUs at once ("concurrent") is another case
    than the same id measured alone, and is kept apart by a suffix."""
    mode = record_mode(rec)
    return rec["id"] if mode == "alone" else f"{rec['id']} ({mode})"


def _gpus_text(gpus) -> str:
    return ",".join(str(g) for g in gpus)


def _in(values) -> str:
    return ",".join("?" * len(values))


def _chunks(values: list, n: int = 400):
    for i in range(0, len(values), n):
        yield values[i:i + n]


def open_db(target: str, create: bool) -> HistoryDB:
    """Open (with `create`: create) the history at `target`, a file path or a postgresql:// URL,
    migrating an older schema; ReportError when it is not a usable nodebench history."""
    db = connect(str(target), create)
    try:
        _check_and_migrate(db, create)
    except BaseException:
        db.close()
        raise
    return db


def _version(db: HistoryDB) -> str | None:
    row = db.query_one("SELECT value FROM meta WHERE key='db_version'")
    return row[0] if row else None


def _check_and_migrate(db: HistoryDB, create: bool) -> None:
    what = "a PostgreSQL database" if db.dialect == "postgresql" else "an SQLite database"
    tables = db.tables()
    if tables and "meta" not in tables:
        raise ReportError(f"{db.target}: {what}, but not a nodebench history (no 'meta' table)")
    if "meta" in tables and _version(db) == str(DB_VERSION):
        return
    if "meta" not in tables and not create:
        raise ReportError(f"{db.target}: empty database (nothing ingested yet)")
    def body(tx: HistoryDB):
        tx.lock([_MIGRATION_LOCK])
        # again under the lock: another writer may have created or migrated it meanwhile
        have = tx.tables()
        if have and "meta" not in have:
            raise ReportError(f"{db.target}: {what}, but not a nodebench history (no 'meta' table)")
        text = _version(tx) if "meta" in have else "0"
        version = int(text) if text and text.isdigit() else -1
        if version > DB_VERSION or version < 0 or (version == 0 and "meta" in have):
            raise ReportError(f"{db.target}: history database version {_version(tx) or 'unknown'}; "
                              f"this nodebench-report uses version {DB_VERSION}")
        for step in range(version + 1, DB_VERSION + 1):
            for statement in _STEPS[step]:
                tx.execute(statement)
        if version == 0:
            tx.execute("INSERT INTO meta(key, value) VALUES ('db_version', ?)", (str(DB_VERSION),))
        elif version < DB_VERSION:
            tx.execute("UPDATE meta SET value=? WHERE key='db_version'", (str(DB_VERSION),))
            recompute_derived(tx)     # older versions kept less (or nothing) derived

    db.run_transaction(body)


def machine_key(node: str, run: Run) -> str:
    """Node name plus a hash of its GPUs' UUIDs (else serials, else PCI bus ids); the node name
    alone when the run names no GPU."""
    ids = []
    for g in run.gpus:
        for key in ("uuid", "serial", "pci_bus_id"):
            if isinstance(g.get(key), str) and g[key]:
                ids.append(g[key])
                break
    if not ids:
        return node
    return f"{node}#{hashlib.sha1(','.join(sorted(ids)).encode()).hexdigest()[:8]}"


# ----------------------------------------------------------------------------------------------
# derived tables: case_noise and case_latest, from the rows of records/metrics they summarise

_NOISE_SQL = ("SELECT machine, record_id, gpus, rank, median_s, run_to_run_cv FROM records "
              "WHERE status='ok' AND median_s > 0")
_LATEST_SQL = ("SELECT COALESCE(rec.machine, rec.node), rec.record_id, rec.gpus, rec.rank, rec.gpu_model, m.name, "
               "CASE WHEN m.name = rec.primary_metric THEN 1 ELSE 0 END, r.run_id, r.started_at, rec.node, m.value "
               "FROM records rec JOIN runs r ON r.run_id = rec.run_id "
               "JOIN metrics m ON m.run_id = rec.run_id AND m.record_id = rec.record_id AND m.gpus = rec.gpus "
               "AND m.rank = rec.rank WHERE rec.status = 'ok'")
_NOISE_COLUMNS = "machine, record_id, gpus, rank, runs, cv, max_over_min"
_LATEST_COLUMNS = "machine, record_id, gpus, rank, gpu_model, name, primary_only, run_id, started_at, node, value"


def noise_rows(rows) -> list[tuple]:
    """case_noise rows from (machine, record_id, gpus, rank, median_s, run_to_run_cv) rows of ok
    records: per group, the sample standard deviation of the log medians (2 runs or more), or the
    largest run_to_run cv when larger; groups with neither are left out. Independent of row order."""
    groups: dict[tuple, list] = defaultdict(list)
    rtr: dict[tuple, float] = {}
    for machine, rid, gpus, rank, med, rcv in rows:
        key = (machine, rid, gpus, int(rank))
        groups[key].append(float(med))
        if rcv is not None:
            rtr[key] = max(rtr.get(key, 0.0), float(rcv))
    out = []
    for key, meds in sorted(groups.items()):
        meds.sort()
        cv = between_run_spread(meds) if len(meds) >= 2 else None
        if key in rtr and (cv is None or rtr[key] > cv):
            cv = rtr[key]
        if cv is None:
            continue
        out.append(key + (len(meds), cv, meds[-1] / meds[0]))
    return out


def latest_rows(rows) -> list[tuple]:
    """case_latest rows from (machine, record_id, gpus, rank, gpu_model, name, is_primary, run_id,
    started_at, node, value) rows of ok records' metrics: per key the row of the latest run (start
    time, then run id), once over every record with the metric (primary_only 0) and once over the
    records whose primary metric it is (primary_only 1)."""
    best: dict[tuple, tuple] = {}
    for machine, rid, gpus, rank, model, name, is_primary, run_id, started, node, value in rows:
        order = (started, run_id)
        rest = (run_id, started, node, float(value))
        for flag in ((0, 1) if is_primary else (0,)):
            key = (machine, rid, gpus, int(rank), model, name, flag)
            if key not in best or order > best[key][0]:
                best[key] = (order, rest)
    return [key + rest for key, (_order, rest) in sorted(best.items())]


def recompute_derived(db: HistoryDB) -> None:
    """Rebuild case_noise and case_latest from the whole history (after a migration; the
    reference that :func:`refresh_derived` must equal). Call inside a transaction."""
    db.execute("DELETE FROM case_noise")
    db.executemany(f"INSERT INTO case_noise ({_NOISE_COLUMNS}) VALUES (?,?,?,?,?,?,?)",
                   noise_rows(db.query(_NOISE_SQL)))
    db.execute("DELETE FROM case_latest")
    db.executemany(f"INSERT INTO case_latest ({_LATEST_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                   latest_rows(db.query(_LATEST_SQL)))


def refresh_derived(db: HistoryDB, touched: dict[str, set[str]]) -> None:
    """Recompute case_noise and case_latest for these machines and their record ids only (from
    every run of the machine, so the rows equal a full recompute). Call inside the transaction
    that changed them, holding the machines' locks."""
    for machine in sorted(touched):
        for ids in _chunks(sorted(touched[machine])):
            args = [machine, *ids]
            db.execute(f"DELETE FROM case_noise WHERE machine = ? AND record_id IN ({_in(ids)})", args)
            db.executemany(f"INSERT INTO case_noise ({_NOISE_COLUMNS}) VALUES (?,?,?,?,?,?,?)",
                           noise_rows(db.query(f"{_NOISE_SQL} AND machine = ? AND record_id IN ({_in(ids)})", args)))
            db.execute(f"DELETE FROM case_latest WHERE machine = ? AND record_id IN ({_in(ids)})", args)
            db.executemany(
                f"INSERT INTO case_latest ({_LATEST_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                latest_rows(db.query(f"{_LATEST_SQL} AND rec.machine = ? AND rec.record_id IN ({_in(ids)})", args)))


def update_case_noise(db: HistoryDB, machines: list[str] | None = None) -> None:
    """Recompute the derived tables of the given machines (default: the whole history)."""
    def body(tx):
        if not machines:
            recompute_derived(tx)
            return
        tx.lock(f"machine:{m}" for m in machines)
        touched: dict[str, set[str]] = defaultdict(set)
        for m in machines:
            touched[m].update(r[0] for r in tx.query("SELECT DISTINCT record_id FROM records WHERE machine=?", (m,)))
            touched[m].update(r[0] for r in tx.query("SELECT record_id FROM case_noise WHERE machine=?", (m,)))
            touched[m].update(r[0] for r in tx.query("SELECT record_id FROM case_latest WHERE machine=?", (m,)))
        refresh_derived(tx, touched)
    db.run_transaction(body)


def case_noise(conn: HistoryDB, run: Run, rec: dict) -> tuple[int, float] | None:
    """(runs, spread) of this case on the machine of `run`, when the history knows it."""
    rank = record_key(rec)[2]
    node = rec["host"] if (rank is not None and isinstance(rec.get("host"), str)) else run.hostname
    row = None
    # the node name alone: runs ingested by version 1, which knew no GPU identity
    for machine in (machine_key(node, run), node):
        row = conn.query_one("SELECT runs, cv FROM case_noise WHERE machine=? AND record_id=? AND gpus=? AND rank=?",
                             (machine, stored_id(rec), _gpus_text(rec["gpus"]), -1 if rank is None else rank))
        if row:
            break
    return (int(row[0]), float(row[1])) if row else None


# ----------------------------------------------------------------------------------------------
# ingest


@dataclass
class IngestResult:
    runs: int = 0
    replaced: int = 0
    records: int = 0


_RUN_COLUMNS = ("run_id, node, started_at, finished_at, run_status, gpu_models, nodebench_version, git_commit, "
                "schema_version, source, ingested_at, machine")
_RECORD_COLUMNS = ("run_id, record_id, gpus, rank, node, family, case_name, status, gpu_model, median_s, cv, "
                   "n_samples, params, flags, reason, primary_metric, machine, run_to_run_cv")
_METRIC_COLUMNS = "run_id, record_id, gpus, rank, name, value"
_UPSERT_RUN = (f"INSERT INTO runs ({_RUN_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (run_id) DO UPDATE SET "
               + ", ".join(f"{c} = excluded.{c}" for c in _RUN_COLUMNS.split(", ")[1:]))


def run_rows(run: Run, node: str | None, now: str) -> tuple[tuple, list[tuple], list[tuple]]:
    """The runs row, the records rows and the metrics rows that store `run`."""
    nb = run.doc["nodebench"]
    run_node = node or run.hostname
    run_row = (run.run_id, run_node, run.started_at, run.doc.get("finished_at"), run.run_status,
               json.dumps(sorted(run.gpu_names)), nb.get("version"), nb.get("git_commit"), run.doc["schema_version"],
               os.path.abspath(run.path), now, machine_key(run_node, run))
    records, metrics = [], []
    for rec in run.records:
        stats = rec.get("stats") or {}
        gpus = _gpus_text(rec["gpus"])
        rank = record_key(rec)[2]
        rec_node = rec["host"] if (rank is not None and isinstance(rec.get("host"), str) and not node) else run_node
        rtr = rec.get("run_to_run") if isinstance(rec.get("run_to_run"), dict) else {}
        rtr_cv = rtr.get("cv") if is_number(rtr.get("cv")) and (rtr.get("runs") or 0) >= 2 else None
        rank_i = -1 if rank is None else rank
        records.append((run.run_id, stored_id(rec), gpus, rank_i, rec_node, rec["family"], rec["case"], rec["status"],
                        run.gpu_model(rec["gpus"], rank), stats.get("median"),
                        stats.get("cv") if is_number(stats.get("cv")) else None, len(rec["samples_s"]),
                        json.dumps(rec["params"], sort_keys=True), json.dumps(rec["flags"]), rec.get("reason"),
                        primary_metric(rec), machine_key(rec_node, run), rtr_cv))
        if rec["status"] != "ok":
            continue
        values = {k: v for k, v in rec["metrics"].items() if is_number(v)}
        if is_number(stats.get("median")):
            values["median_s"] = stats["median"]
        metrics += [(run.run_id, stored_id(rec), gpus, rank_i, k, float(v)) for k, v in values.items()]
    return run_row, records, metrics


def store_run(db: HistoryDB, run_row: tuple, records: list[tuple], metrics: list[tuple]) -> bool:
    """Store one run (replacing one of the same run id) and refresh the derived tables of its
    machines and cases, in one transaction; True when a run of that id was replaced."""
    run_id = run_row[0]
    mine: dict[str, set[str]] = defaultdict(set)
    for r in records:
        mine[r[16]].add(r[1])

    def body(tx: HistoryDB) -> bool:
        tx.lock([f"run:{run_id}"] + [f"machine:{m}" for m in mine])
        touched = defaultdict(set, {m: set(ids) for m, ids in mine.items()})
        replaced = tx.query_one("SELECT 1 FROM runs WHERE run_id=?", (run_id,)) is not None
        if replaced:   # what the old copy held must be refreshed too (its machines may differ)
            for machine, rid in tx.query("SELECT DISTINCT COALESCE(machine, node), record_id FROM records "
                                         "WHERE run_id=?", (run_id,)):
                touched[machine].add(rid)
            tx.lock(f"machine:{m}" for m in touched)
            tx.execute("DELETE FROM metrics WHERE run_id=?", (run_id,))
            tx.execute("DELETE FROM records WHERE run_id=?", (run_id,))
        tx.execute(_UPSERT_RUN, run_row)
        tx.executemany(f"INSERT INTO records ({_RECORD_COLUMNS}) VALUES ({_in(range(18))})", records)
        tx.executemany(f"INSERT INTO metrics ({_METRIC_COLUMNS}) VALUES (?,?,?,?,?,?)", metrics)
        refresh_derived(tx, touched)
        return replaced

    return bool(db.run_transaction(body))


def lost_records(conn: HistoryDB, run_id: str, records: list[tuple]) -> list[str]:
    """The records stored for `run_id` that the new rows `records` lack (record id [gpus, rank])."""
    new = {(r[1], r[2], int(r[3])) for r in records}
    stored = conn.query("SELECT record_id, gpus, rank FROM records WHERE run_id=?", (run_id,))
    return sorted(f"{rid} [gpus {gpus}" + (f", rank {rank}" if int(rank) >= 0 else "") + "]"
                  for rid, gpus, rank in stored if (rid, gpus, int(rank)) not in new)


def ingest(conn: HistoryDB, runs: list[Run], node: str | None = None,
           replace_with_fewer: bool = False) -> IngestResult:
    """Store `runs`, each in its own transaction (see :func:`store_run`). A run already stored is
    replaced only when the new copy keeps every stored record (else ReportError before anything is
    written, naming what would be lost), unless `replace_with_fewer`."""
    result = IngestResult()
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    rows = [run_rows(run, node, now) for run in runs]
    if not replace_with_fewer:
        for run, (run_row, records, _m) in zip(runs, rows):
            lost = lost_records(conn, run.run_id, records)
            if lost:
                raise ReportError(
                    f"{run.path}: run {run.run_id} is already stored, and this file lacks {len(lost)} of its "
                    f"stored records (e.g. {', '.join(lost[:3])}); ingesting it would drop them. Nothing was "
                    f"written; pass --replace-with-fewer to replace the stored run anyway")
    for run, (run_row, records, metrics) in zip(runs, rows):
        try:
            replaced = store_run(conn, run_row, records, metrics)
        except HistoryUnavailable as exc:
            if result.runs:
                raise HistoryUnavailable(f"{exc} ({result.runs} of {len(runs)} run(s) were stored before; "
                                         f"ingesting them again replaces them)") from None
            raise
        if replaced:
            result.replaced += 1
        result.records += sum(1 for r in records if r[7] == "ok")
        result.runs += 1
    return result
