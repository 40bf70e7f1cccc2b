"""History in SQLite: ``ingest`` result files, plot a ``trend`` per node, compare a ``fleet``.

The database (python's built-in sqlite3) holds three tables:

* ``runs``: one row per run (``run_id`` is the key; ingesting a run again replaces it),
* ``records``: one row per record (status, median time, parameters, GPU model, the node it ran on:
  the record's ``host`` in runs under MPI, else the run's node; ``rank`` is -1 outside MPI),
* ``metrics``: one row per record metric, plus ``median_s`` for every timed record.

A *node* is ``environment.host.hostname`` unless ``ingest --node`` overrides it.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import json
import os
import sqlite3
import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass

from .errors import ReportError
from .load import Run, higher_is_better, is_number, key_label, primary_metric, record_key

DB_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, node TEXT NOT NULL, started_at TEXT NOT NULL, finished_at TEXT,
    run_status TEXT NOT NULL, gpu_models TEXT NOT NULL, nodebench_version TEXT, git_commit TEXT,
    schema_version INTEGER NOT NULL, source TEXT, ingested_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, record_id TEXT NOT NULL,
    gpus TEXT NOT NULL, rank INTEGER NOT NULL, node TEXT NOT NULL, family TEXT NOT NULL, case_name TEXT NOT NULL,
    status TEXT NOT NULL, gpu_model TEXT NOT NULL, median_s REAL, cv REAL, n_samples INTEGER, params TEXT,
    flags TEXT, reason TEXT, primary_metric TEXT, PRIMARY KEY (run_id, record_id, gpus, rank));
CREATE TABLE IF NOT EXISTS metrics (
    run_id TEXT NOT NULL, record_id TEXT NOT NULL, gpus TEXT NOT NULL, rank INTEGER NOT NULL, name TEXT NOT NULL,
    value REAL NOT NULL, PRIMARY KEY (run_id, record_id, gpus, rank, name));
CREATE INDEX IF NOT EXISTS metrics_by_name ON metrics(record_id, name);
CREATE INDEX IF NOT EXISTS runs_by_node ON runs(node, started_at);
"""


def _gpus_text(gpus) -> str:
    return ",".join(str(g) for g in gpus)


def open_db(path: str, create: bool) -> sqlite3.Connection:
    if not create and not os.path.exists(path):
        raise ReportError(f"{path}: no such database (run 'nodebench-report ingest ... --db {path}' first)")
    if os.path.isdir(path):
        raise ReportError(f"{path}: is a directory, expected an SQLite database file")
    if create:
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise ReportError(f"{path}: the folder {parent} does not exist")
    try:
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA foreign_keys = ON")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as exc:
        raise ReportError(f"{path}: not a usable SQLite database: {exc}") from None
    if tables and "meta" not in tables:
        conn.close()
        raise ReportError(f"{path}: an SQLite database, but not a nodebench history (no 'meta' table)")
    if "meta" in tables:
        row = conn.execute("SELECT value FROM meta WHERE key='db_version'").fetchone()
        if not row or row[0] != str(DB_VERSION):
            conn.close()
            raise ReportError(f"{path}: history database version {row[0] if row else 'unknown'}; "
                              f"this nodebench-report uses version {DB_VERSION}")
    elif not create:
        conn.close()
        raise ReportError(f"{path}: empty database (nothing ingested yet)")
    else:
        conn.executescript(_SCHEMA)
        conn.execute("INSERT INTO meta(key, value) VALUES ('db_version', ?)", (str(DB_VERSION),))
        conn.commit()
    return conn


@dataclass
class IngestResult:
    runs: int = 0
    replaced: int = 0
    records: int = 0


def ingest(conn: sqlite3.Connection, runs: list[Run], node: str | None = None) -> IngestResult:
    result = IngestResult()
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    with conn:
        for run in runs:
            exists = conn.execute("SELECT 1 FROM runs WHERE run_id=?", (run.run_id,)).fetchone()
            if exists:
                conn.execute("DELETE FROM metrics WHERE run_id=?", (run.run_id,))
                conn.execute("DELETE FROM records WHERE run_id=?", (run.run_id,))
                conn.execute("DELETE FROM runs WHERE run_id=?", (run.run_id,))
                result.replaced += 1
            nb = run.doc["nodebench"]
            conn.execute(
                "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (run.run_id, node or run.hostname, run.started_at, run.doc.get("finished_at"), run.run_status,
                 json.dumps(sorted(run.gpu_names)), nb.get("version"), nb.get("git_commit"),
                 run.doc["schema_version"], os.path.abspath(run.path), now))
            run_node = node or run.hostname
            for rec in run.records:
                stats = rec.get("stats") or {}
                gpus = _gpus_text(rec["gpus"])
                rank = record_key(rec)[2]
                rec_node = rec["host"] if (rank is not None and isinstance(rec.get("host"), str) and not node) \
                    else run_node
                pm = primary_metric(rec)
                conn.execute(
                    "INSERT INTO records VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (run.run_id, rec["id"], gpus, -1 if rank is None else rank, rec_node, rec["family"], rec["case"],
                     rec["status"], run.gpu_model(rec["gpus"], rank), stats.get("median"),
                     stats.get("cv") if is_number(stats.get("cv")) else None, len(rec["samples_s"]),
                     json.dumps(rec["params"], sort_keys=True), json.dumps(rec["flags"]), rec.get("reason"), pm))
                if rec["status"] != "ok":
                    continue
                values = {k: v for k, v in rec["metrics"].items() if is_number(v)}
                if is_number(stats.get("median")):
                    values["median_s"] = stats["median"]
                conn.executemany("INSERT INTO metrics VALUES (?,?,?,?,?,?)",
                                 [(run.run_id, rec["id"], gpus, -1 if rank is None else rank, k, float(v))
                                  for k, v in values.items()])
                result.records += 1
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

    @property
    def label(self) -> str:
        return key_label((self.record_id, tuple(int(g) for g in self.gpus.split(",") if g),
                          None if self.rank < 0 else self.rank))


def query_points(conn: sqlite3.Connection, case_glob: str | None, metric: str | None, nodes: list[str] | None = None,
                 since: str | None = None) -> list[Point]:
    """Values of ``metric`` (default: each record's primary metric) for ok records whose id matches."""
    sql = ("SELECT rec.node, r.run_id, r.started_at, rec.record_id, rec.gpus, rec.gpu_model, m.name, m.value, "
           "rec.rank FROM records rec JOIN runs r ON r.run_id = rec.run_id "
           "JOIN metrics m ON m.run_id = rec.run_id AND m.record_id = rec.record_id AND m.gpus = rec.gpus "
           "AND m.rank = rec.rank WHERE rec.status = 'ok'")
    args: list = []
    if metric:
        sql += " AND m.name = ?"
        args.append(metric)
    else:
        sql += " AND m.name = rec.primary_metric"
    if since:
        sql += " AND r.started_at >= ?"
        args.append(since)
    if nodes:
        sql += f" AND rec.node IN ({','.join('?' * len(nodes))})"
        args += nodes
    sql += " ORDER BY r.started_at"
    points = []
    for row in conn.execute(sql, args):
        if case_glob and not fnmatch.fnmatchcase(row[3], case_glob):
            continue
        points.append(Point(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8]))
    return points


def _no_data(conn: sqlite3.Connection, case_glob: str | None, metric: str | None) -> ReportError:
    ids = [r[0] for r in conn.execute("SELECT DISTINCT record_id FROM records WHERE status='ok' ORDER BY 1")]
    names = [r[0] for r in conn.execute("SELECT DISTINCT name FROM metrics ORDER BY 1")]
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


def trend(conn: sqlite3.Connection, case_glob: str, metric: str | None, out_path: str, nodes: list[str] | None = None,
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
    for p in points:
        t = _dt.datetime.strptime(p.started_at[:19], "%Y-%m-%dT%H:%M:%S")
        series[(p.node, p.label, p.metric)].append((t, p.value))
    cases = {k[1] for k in series}
    metrics = {k[2] for k in series}
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(9, 4.5))
        for i, (key, pts) in enumerate(sorted(series.items())):
            node, case_label, m = key
            label = node
            if len(cases) > 1:
                label += f" {case_label}"
            if len(metrics) > 1:
                label += f" {m}"
            ax.plot([t for t, _ in pts], [v for _, v in pts], "o-", ms=4, color=f"C{i % 10}", label=label)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator()))
        metric_label = metric or ", ".join(sorted(metrics))
        ax.set_ylabel(metric_label)
        direction = "higher is better" if higher_is_better(sorted(metrics)[0]) else "lower is better"
        ax.set_title(f"{case_glob}: {metric_label} over time per node ({direction})")
        if len(series) <= 20:
            ax.legend(loc="best", fontsize=7, ncol=2 if len(series) > 8 else 1)
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
    node: str
    value: float
    fleet_median: float
    deviation: float      # (value - median) / median, signed
    worse_by: float       # how much worse than the median, >= 0 means worse
    flagged: bool
    run_id: str
    started_at: str


@dataclass
class Fleet:
    entries: list[FleetEntry]
    threshold: float
    min_nodes: int
    groups_compared: int
    groups_too_small: int

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


def fleet(conn: sqlite3.Connection, case_glob: str | None, metric: str | None, threshold: float, min_nodes: int,
          since: str | None = None) -> Fleet:
    if not threshold >= 0:
        raise ReportError(f"the threshold must be >= 0, got {threshold}")
    points = query_points(conn, case_glob, metric, None, since)
    if not points:
        raise _no_data(conn, case_glob, metric)
    latest: dict[tuple, Point] = {}
    for p in points:  # ordered by time: the last one per node wins (per GPU of it, under MPI)
        latest[(p.record_id, p.gpus, p.gpu_model, p.metric, p.node, p.rank)] = p
    groups: dict[tuple, list[Point]] = defaultdict(list)
    for (rid, gpus, model, m, _node, _rank), p in latest.items():
        groups[(rid, gpus, model, m)].append(p)
    entries, compared, small = [], 0, 0
    for (rid, gpus, model, m), pts in sorted(groups.items()):
        if len(pts) < min_nodes:
            small += 1
            continue
        compared += 1
        med = statistics.median(p.value for p in pts)
        hib = higher_is_better(m)
        for p in sorted(pts, key=lambda p: p.node):
            dev = (p.value - med) / med if med else 0.0
            worse = -dev if hib else dev
            entries.append(FleetEntry(rid, gpus, model, m, p.node, p.value, med, dev, worse,
                                      worse > threshold, p.run_id, p.started_at))
    return Fleet(entries, threshold, min_nodes, compared, small)


def fleet_table(f: Fleet, show_all: bool = False) -> str:
    from .util import text_table

    lines = [f"fleet: {len(f.nodes)} node(s), {f.groups_compared} case/metric group(s) compared "
             f"(at least {f.min_nodes} nodes each); {f.groups_too_small} group(s) with fewer nodes skipped; "
             f"flag = worse than the fleet median by more than {f.threshold * 100:g}%", ""]
    rows = []
    for e in f.entries:
        if not show_all and not e.flagged:
            continue
        rows.append([("!! " if e.flagged else "   ") + e.node,
                     key_label((e.record_id, tuple(int(g) for g in e.gpus.split(",") if g))), e.gpu_model, e.metric,
                     f"{e.value:.4g}", f"{e.fleet_median:.4g}", f"{e.deviation * 100:+.1f}%"])
    if rows:
        lines.append(text_table(["node", "case", "GPU model", "metric", "value", "fleet median", "vs median"], rows))
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
