"""History: ``ingest`` result files, plot a ``trend`` per node, compare a ``fleet``.

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
import fnmatch
import hashlib
import json
import math
import os
import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass

from .errors import ReportError
from .historydb import HistoryDB, HistoryUnavailable, connect
from .load import Run, higher_is_better, is_number, key_label, primary_metric, record_key, record_mode

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
        cv = statistics.stdev(math.log(m) for m in meds) if len(meds) >= 2 else None
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


# ----------------------------------------------------------------------------------------------
# queries


@dataclass
class Point:
    node: str
    run_id: str
    started_at: str
    record_id: str
    gpus: str
    gpu_model: str
    metric: str
    value: float
    rank: int = -1
    machine: str = ""

    @property
    def label(self) -> str:
        return key_label((self.record_id, tuple(int(g) for g in self.gpus.split(",") if g),
                          None if self.rank < 0 else self.rank))


def _point_order(p: Point):
    return (p.started_at, p.run_id, p.record_id, p.gpus, p.rank, p.metric)


def stored_cases(conn: HistoryDB) -> list[str]:
    """The record ids with an ok value in the history (from case_latest: small, whatever the history)."""
    return sorted(r[0] for r in conn.query("SELECT DISTINCT record_id FROM case_latest"))


def query_points(conn: HistoryDB, case_glob: str | None, metric: str | None, nodes: list[str] | None = None,
                 since: str | None = None) -> list[Point]:
    """Values of ``metric`` (default: each record's primary metric) for ok records whose id matches,
    ordered by run start. The pattern is matched against the stored case ids first, so that the
    query reads the matching cases' rows only (index metrics_by_name)."""
    ids = stored_cases(conn)
    if case_glob:
        ids = [i for i in ids if fnmatch.fnmatchcase(i, case_glob)]
    points = []
    for chunk in _chunks(ids):
        sql, args = points_sql(chunk, metric, nodes, since)
        points += [Point(*row) for row in conn.query(sql, args)]
    points.sort(key=_point_order)
    return points


def points_sql(ids: list[str], metric: str | None, nodes: list[str] | None = None,
               since: str | None = None) -> tuple[str, list]:
    """The query of :func:`query_points` for these case ids, and its arguments."""
    sql = ("SELECT rec.node, r.run_id, r.started_at, rec.record_id, rec.gpus, rec.gpu_model, m.name, m.value, "
           "rec.rank, COALESCE(rec.machine, rec.node) FROM metrics m "
           "JOIN records rec ON m.run_id = rec.run_id AND m.record_id = rec.record_id AND m.gpus = rec.gpus "
           f"AND m.rank = rec.rank JOIN runs r ON r.run_id = rec.run_id WHERE rec.status = 'ok' "
           f"AND m.record_id IN ({_in(ids)})")
    args: list = list(ids)
    if metric:
        sql += " AND m.name = ?"
        args.append(metric)
    else:
        sql += " AND m.name = rec.primary_metric"
    if since:
        sql += " AND r.started_at >= ?"
        args.append(since)
    if nodes:
        sql += f" AND rec.node IN ({_in(nodes)})"
        args += nodes
    return sql, args


def latest_sql(metric: str | None, since: str | None = None) -> tuple[str, list]:
    """The query of :func:`latest_points`, and its arguments."""
    sql = ("SELECT node, run_id, started_at, record_id, gpus, gpu_model, name, value, rank, machine "
           "FROM case_latest WHERE primary_only = ?")
    args: list = [0 if metric else 1]
    if metric:
        sql += " AND name = ?"
        args.append(metric)
    if since:
        sql += " AND started_at >= ?"
        args.append(since)
    return sql, args


def latest_points(conn: HistoryDB, case_glob: str | None, metric: str | None, since: str | None = None) -> list[Point]:
    """Each machine's latest value per case, GPU model and metric (from case_latest): the last of
    :func:`query_points` per (case, GPUs, GPU model, metric, machine, rank)."""
    sql, args = latest_sql(metric, since)
    points = [Point(*row) for row in conn.query(sql, args)
              if not case_glob or fnmatch.fnmatchcase(row[3], case_glob)]
    points.sort(key=_point_order)
    return points


def _no_data(conn: HistoryDB, case_glob: str | None, metric: str | None) -> ReportError:
    ids = stored_cases(conn)
    names = sorted(r[0] for r in conn.query("SELECT DISTINCT name FROM case_latest"))
    if not ids:
        return ReportError("the database holds no successful records")
    hint = ""
    if case_glob and not any(fnmatch.fnmatchcase(i, case_glob) for i in ids):
        import difflib
        close = difflib.get_close_matches(case_glob, ids, n=5, cutoff=0.3) or ids[:5]
        hint = f"; no case matches {case_glob!r} (e.g. {', '.join(close)})"
    elif metric and metric not in names:
        hint = f"; no metric {metric!r} (metrics: {', '.join(names[:20])})"
    return ReportError(f"no data for case {case_glob or '*'} metric {metric or '(primary)'}{hint}")


_UNITS = {"tflops": "TFLOPS", "tops": "TOPS", "gbps": "GB/s", "busbw_gbps": "bus bandwidth (GB/s)",
          "algbw_gbps": "algorithm bandwidth (GB/s)", "median_s": "median time (s)", "latency_us": "latency (us)",
          "time_us": "time (us)", "train_images_per_s": "training images/s", "fwd_images_per_s": "forward images/s",
          "images_per_s": "images/s"}


def metric_axis_label(metric: str) -> str:
    """An axis label with the unit, from the metric's name (units are in the names)."""
    if metric in _UNITS:
        return _UNITS[metric]
    for suffix, unit in (("_per_ghz", "per GHz of SM clock"), ("_gbps", "GB/s"), ("_us", "us"), ("_ms", "ms"),
                         ("_s", "s"), ("_bytes", "bytes"), ("_pct", "%"), ("_w", "W"), ("_c", "deg C"),
                         ("_mhz", "MHz"), ("_x", "x")):
        if metric.endswith(suffix):
            return f"{metric} ({unit})"
    return metric


def _save(fig, out_path: str) -> None:
    import warnings

    import matplotlib.pyplot as plt

    ext = os.path.splitext(out_path)[1].lower()
    try:
        if ext not in (".png", ".svg", ".pdf"):
            raise ReportError(f"{out_path}: the plot file must end in .png, .svg or .pdf")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fig.savefig(out_path, dpi=100, bbox_inches="tight")
    except OSError as exc:
        raise ReportError(f"{out_path}: cannot write the plot: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)


# ----------------------------------------------------------------------------------------------
# trend


def trend(conn: HistoryDB, case_glob: str, metric: str | None, out_path: str, nodes: list[str] | None = None,
          since: str | None = None) -> tuple[list[Point], str]:
    points = query_points(conn, case_glob, metric, nodes, since)
    if not points:
        raise _no_data(conn, case_glob, metric)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    from .plots import _STYLE

    series: dict[tuple, list[tuple[_dt.datetime, float]]] = defaultdict(list)
    names = _display_names({p.machine for p in points})
    for p in points:
        t = _dt.datetime.strptime(p.started_at[:19], "%Y-%m-%dT%H:%M:%S")
        series[(names.get(p.machine, p.node), p.label, p.metric)].append((t, p.value))
    cases = {k[1] for k in series}
    metrics = sorted({k[2] for k in series})
    nodes = {k[0] for k in series}
    # one panel per metric (TFLOPS and TOPS, GB/s and us never share an axis); every line its own
    # colour and marker, the legend outside the lines
    cmap = plt.get_cmap("tab20")
    markers = "os^Dv<>pPX*h"
    with plt.rc_context(_STYLE):
        fig, axes = plt.subplots(len(metrics), 1, figsize=(10, 3.6 * len(metrics)), squeeze=False,
                                 layout="constrained")
        for ax, m in zip((a for row in axes for a in row), metrics):
            mine = sorted((k, v) for k, v in series.items() if k[2] == m)
            for i, (key, pts) in enumerate(mine):
                node, case_label, _m = key
                label = node if len(cases) == 1 else (case_label if len(nodes) == 1 else f"{node} {case_label}")
                ax.plot([t for t, _ in pts], [v for _, v in pts], "-", marker=markers[i % len(markers)], ms=4,
                        color=cmap(i % 20), label=label)
            ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator()))
            ax.set_ylabel(metric_axis_label(m))
            ax.set_xlabel("run start (UTC)")
            direction = "higher is better" if higher_is_better(m) else "lower is better"
            ax.set_title(f"{case_glob}: {m} over time ({direction})")
            if len(mine) <= 40:
                ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False,
                          fontsize=7, ncol=1 if len(mine) <= 20 else 2)
        _save(fig, out_path)
    table = "\n".join(f"{p.started_at}  {p.node:<20} {p.label}  {p.metric}={p.value:.6g}" for p in points)
    return points, table


# ----------------------------------------------------------------------------------------------
# fleet


@dataclass
class FleetEntry:
    record_id: str
    gpus: str
    gpu_model: str
    metric: str
    node: str             # display name: the hostname, plus the machine hash where hostnames repeat
    value: float
    fleet_median: float
    deviation: float      # (value - median) / median, signed
    worse_by: float       # how much worse than the median, >= 0 means worse
    flagged: bool
    run_id: str
    started_at: str
    machine: str = ""
    fleet_spread: float = 0.0   # robust relative spread across machines: 1.4826 * MAD / median
    case_noise: float = 0.0     # the case's between-run spread (median over the fleet's machines)
    noise_source: str = ""
    z: float = 0.0              # worse_by / sqrt(fleet_spread^2 + case_noise^2)


@dataclass
class Fleet:
    entries: list[FleetEntry]
    threshold: float
    min_nodes: int
    groups_compared: int
    groups_too_small: int
    z_limit: float = 3.0
    noise_floor: float = 0.02

    @property
    def flagged_nodes(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for e in self.entries:
            if e.flagged:
                out[e.node] += 1
        return dict(sorted(out.items()))

    @property
    def nodes(self) -> list[str]:
        return sorted({e.node for e in self.entries})


DEFAULT_FLEET_Z = 3.0


def _display_names(machines: set[str]) -> dict[str, str]:
    """Hostname alone where it names one machine; hostname plus GPU hash where several share it."""
    by_host: dict[str, list[str]] = defaultdict(list)
    for m in machines:
        by_host[m.split("#", 1)[0]].append(m)
    out = {}
    for host, ms in by_host.items():
        for m in ms:
            out[m] = host if len(ms) == 1 else f"{host} [gpus {m.split('#', 1)[1] if '#' in m else '?'}]"
    return out


def fleet(conn: HistoryDB, case_glob: str | None, metric: str | None, threshold: float, min_nodes: int,
          since: str | None = None, z_limit: float = DEFAULT_FLEET_Z, noise_floor: float = 0.02) -> Fleet:
    """Each machine's latest value per case against the fleet: flagged when worse than the median
    by more than `threshold` AND by more than `z_limit` times the combined noise, the fleet's robust
    spread (MAD) and the case's between-run spread (from ``case_noise``; `noise_floor` if unknown)."""
    if not threshold >= 0:
        raise ReportError(f"the threshold must be >= 0, got {threshold}")
    points = latest_points(conn, case_glob, metric, since)
    if not points:
        raise _no_data(conn, case_glob, metric)
    latest: dict[tuple, Point] = {}
    for p in points:  # one per machine already (per GPU of it, under MPI)
        latest[(p.record_id, p.gpus, p.gpu_model, p.metric, p.machine, p.rank)] = p
    names = _display_names({p.machine for p in latest.values()})
    noise: dict[tuple, list[float]] = defaultdict(list)
    for machine, rid, gpus, _rank, cv in conn.query("SELECT machine, record_id, gpus, rank, cv FROM case_noise"):
        noise[(rid, gpus)].append(cv)
    groups: dict[tuple, list[Point]] = defaultdict(list)
    for (rid, gpus, model, m, _machine, _rank), p in latest.items():
        groups[(rid, gpus, model, m)].append(p)
    entries, compared, small = [], 0, 0
    for (rid, gpus, model, m), pts in sorted(groups.items()):
        if len(pts) < min_nodes:
            small += 1
            continue
        compared += 1
        med = statistics.median(p.value for p in pts)
        mad = statistics.median(abs(p.value - med) for p in pts)
        spread = 1.4826 * mad / med if med else 0.0
        if noise.get((rid, gpus)):
            case_cv, source = statistics.median(noise[(rid, gpus)]), f"history ({len(noise[(rid, gpus)])} machines)"
        else:
            case_cv, source = noise_floor, "floor"
        sigma = math.sqrt(spread ** 2 + case_cv ** 2)
        hib = higher_is_better(m)
        for p in sorted(pts, key=lambda p: names[p.machine]):
            dev = (p.value - med) / med if med else 0.0
            worse = -dev if hib else dev
            z = worse / sigma if sigma > 0 else (math.inf if worse > 0 else 0.0)
            entries.append(FleetEntry(rid, gpus, model, m, names[p.machine], p.value, med, dev, worse,
                                      worse > threshold and z > z_limit, p.run_id, p.started_at, p.machine,
                                      spread, case_cv, source, z if math.isfinite(z) else 1e9))
    return Fleet(entries, threshold, min_nodes, compared, small, z_limit, noise_floor)


def fleet_table(f: Fleet, show_all: bool = False) -> str:
    from .util import text_table

    lines = [f"fleet: {len(f.nodes)} node(s), {f.groups_compared} case/metric group(s) compared "
             f"(at least {f.min_nodes} nodes each); {f.groups_too_small} group(s) with fewer nodes skipped; "
             f"flag = worse than the fleet median by more than {f.threshold * 100:g}% and by more than "
             f"{f.z_limit:g} x the noise (fleet spread 1.4826 x MAD/median combined with the case's between-run "
             f"spread, {f.noise_floor * 100:g}% where not measured)", ""]
    rows = []
    for e in f.entries:
        if not show_all and not e.flagged:
            continue
        rows.append([("!! " if e.flagged else "   ") + e.node,
                     key_label((e.record_id, tuple(int(g) for g in e.gpus.split(",") if g))), e.gpu_model, e.metric,
                     f"{e.value:.4g}", f"{e.fleet_median:.4g}", f"{e.deviation * 100:+.1f}%",
                     f"{math.hypot(e.fleet_spread, e.case_noise) * 100:.1f}%", f"{min(e.z, 999):.1f}"])
    if rows:
        lines.append(text_table(["node", "case", "GPU model", "metric", "value", "fleet median", "vs median",
                                 "noise", "z"], rows))
    elif f.entries:
        lines.append("no node is worse than the fleet median by more than the threshold")
    lines.append("")
    per_node = defaultdict(list)
    for e in f.entries:
        per_node[e.node].append(e)
    summary = []
    for node in f.nodes:
        es = per_node[node]
        rel = statistics.median(-e.worse_by for e in es) if es else 0.0
        summary.append([node, str(len(es)), str(sum(e.flagged for e in es)), f"{rel * 100:+.1f}%"])
    if summary:
        lines.append(text_table(["node", "cases", "flagged", "median vs fleet (+ better)"], summary))
    flagged = f.flagged_nodes
    lines.append("")
    lines.append("result: " + (f"{len(flagged)} node(s) flagged: {', '.join(flagged)} (exit 1)" if flagged
                               else "no node flagged (exit 0)"))
    return "\n".join(lines)


def fleet_json(f: Fleet) -> dict:
    return {"tool": "nodebench-report fleet", "format_version": 1, "threshold": f.threshold, "min_nodes": f.min_nodes,
            "z_limit": f.z_limit, "noise_floor": f.noise_floor,
            "nodes": f.nodes, "flagged_nodes": f.flagged_nodes, "groups_compared": f.groups_compared,
            "groups_too_small": f.groups_too_small, "entries": [asdict(e) for e in f.entries]}


def fleet_plot(f: Fleet, out_path: str) -> None:
    """Per node: the distribution of (value vs fleet median, + is better) over the cases compared."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .plots import _STYLE

    nodes = f.nodes
    data = [[-e.worse_by * 100 for e in f.entries if e.node == n] for n in nodes]
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(nodes) + 2), 4))
        if any(data):
            ax.boxplot(data, showfliers=True)
        for i, node in enumerate(nodes, start=1):
            es = [e for e in f.entries if e.node == node]
            ax.scatter([i] * len(es), [-e.worse_by * 100 for e in es], s=10, zorder=3,
                       color=["C3" if e.flagged else "C0" for e in es])
        ax.set_xticks(range(1, len(nodes) + 1))
        ax.set_xticklabels(nodes, rotation=30, ha="right")
        ax.axhline(0, color="gray", lw=1)
        ax.axhline(-f.threshold * 100, color="red", ls="--", lw=1, label=f"flag threshold -{f.threshold * 100:g}%")
        ax.set_ylabel("vs fleet median (%), + is better")
        ax.set_title("fleet: each node against the fleet median, one dot per case (red: flagged)")
        ax.legend(loc="best")
        _save(fig, out_path)
