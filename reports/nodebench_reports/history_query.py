"""The history's queries (the points of a case and metric, the latest value per machine) and ``trend``:
a case's metric over time per node (:mod:`.history` stores what they read)."""

from __future__ import annotations

import datetime as _dt
import fnmatch
import os
from collections import defaultdict
from dataclasses import dataclass

from . import metrics
from .errors import ReportError
from .history import _chunks, _in
from .historydb import HistoryDB
from .load import higher_is_better, key_label

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


def metric_axis_label(metric: str) -> str:
    """An axis label with the unit, from the metric's declaration (:mod:`.metrics`)."""
    return metrics.by_name(metric).axis_label


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
