"""The fleet page (``nodebench-report fleet --html FILE``): the first screen's capacity table per node,
from the history database (SQLite or PostgreSQL, each machine's latest values: ``case_latest``):
per precision the ResNet-50 training case most nodes measured (the fastest of them by the fleet's
median), each node's images/s per GPU and per node, memory, board power and images per joule; the
fleet's total; the spread of each metric and the nodes outside it (history's own outlier rule,
:func:`history.fleet`); and how many more nodes a target throughput needs."""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from html import escape

from .. import history_fleet as history  # fleet and its outlier rule (DEFAULT_FLEET_Z)
from ..historydb import HistoryDB

METRICS = ("images_per_s", "peak_memory_bytes", "board_power_w")
TARGET_FACTORS = (1.5, 2, 4, 10)   # the targets shown without --target: the fleet's total times these


@dataclass
class NodeRow:
    node: str
    machine: str
    gpus: int
    images_per_s: float                 # per GPU: the mean over the node's GPUs that ran the case
    peak_memory_bytes: float | None
    board_power_w: float | None
    run_id: str
    started_at: str

    @property
    def node_images_per_s(self) -> float:
        """The node's GPUs times one GPU's rate: an upper bound (no all-reduce in it)."""
        return self.gpus * self.images_per_s

    @property
    def images_per_j(self) -> float | None:
        return self.images_per_s / self.board_power_w if self.board_power_w else None


@dataclass
class Spread:
    metric: str
    median: float
    low: float
    high: float
    rel_spread: float        # 1.4826 x MAD / median, as history's fleet
    outside: list[str]       # nodes history's rule flags


@dataclass
class PrecisionCapacity:
    precision: str
    record_id: str
    rows: list[NodeRow]
    spreads: list[Spread] = field(default_factory=list)

    @property
    def total(self) -> float:
        return sum(r.node_images_per_s for r in self.rows)

    @property
    def median_node(self) -> float:
        return statistics.median(r.node_images_per_s for r in self.rows)


def nodes_needed(target: float, total: float, per_node: float) -> int:
    """The nodes to add (of the median node's rate) so the fleet reaches `target` images/s."""
    if target <= total:
        return 0
    return math.ceil((target - total) / per_node)


def _gpu_counts(conn: HistoryDB) -> dict[str, int]:
    """Each machine's GPU count, from its latest run's GPU list."""
    out: dict[str, tuple] = {}
    for machine, started, run_id, models in conn.query("SELECT machine, started_at, run_id, gpu_models FROM runs"):
        if machine not in out or (started, run_id) > out[machine][0]:
            try:
                n = len(json.loads(models))
            except (TypeError, ValueError):
                n = 1
            out[machine] = ((started, run_id), max(1, n))
    return {m: v[1] for m, v in out.items()}


def capacity(conn: HistoryDB, threshold: float = 0.05, min_nodes: int = 3, since: str | None = None,
             z_limit: float = history.DEFAULT_FLEET_Z, noise_floor: float = 0.02) -> list[PrecisionCapacity]:
    sql = ("SELECT machine, node, record_id, gpus, name, value, run_id, started_at FROM case_latest "
           "WHERE primary_only = 0 AND record_id LIKE 'train/resnet50/%'")
    args: list = []
    if since:
        sql += " AND started_at >= ?"
        args.append(since)
    vals: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    meta: dict[tuple, tuple] = {}
    for machine, node, rid, _gpus, name, value, run_id, started in conn.query(sql, args):
        if name in METRICS:
            vals[(rid, machine)][name].append(float(value))
            meta[(rid, machine)] = (node, run_id, started)
    counts = _gpu_counts(conn)
    by_case: dict[str, dict[str, float]] = defaultdict(dict)
    for (rid, machine), m in vals.items():
        if m.get("images_per_s"):
            by_case[rid][machine] = statistics.mean(m["images_per_s"])
    out = []
    precisions = sorted({rid.split("/")[2] for rid in by_case if rid.count("/") >= 4})
    for prec in precisions:
        cases = [rid for rid in by_case if rid.split("/")[2] == prec]
        rid = max(cases, key=lambda r: (len(by_case[r]), statistics.median(by_case[r].values()), r))
        rows = []
        for machine, ips in sorted(by_case[rid].items()):
            m = vals[(rid, machine)]
            node, run_id, started = meta[(rid, machine)]
            rows.append(NodeRow(node, machine, counts.get(machine, 1), ips,
                                max(m["peak_memory_bytes"]) if m.get("peak_memory_bytes") else None,
                                statistics.mean(m["board_power_w"]) if m.get("board_power_w") else None, run_id, started))
        pc = PrecisionCapacity(prec, rid, rows)
        for metric in METRICS:
            got = [getattr(r, metric) for r in rows if getattr(r, metric) is not None]
            if not got:
                continue
            med = statistics.median(got)
            mad = statistics.median(abs(v - med) for v in got)
            outside: list[str] = []
            if len(got) >= min_nodes:
                f = history.fleet(conn, rid, metric, threshold, min_nodes, since, z_limit=z_limit, noise_floor=noise_floor)
                outside = sorted({e.node for e in f.entries if e.flagged})
            pc.spreads.append(Spread(metric, med, min(got), max(got), 1.4826 * mad / med if med else 0.0, outside))
        out.append(pc)
    return out


# ----------------------------------------------------------------------------------------------
# HTML

_CSS = """body{font-family:system-ui,"DejaVu Sans",sans-serif;margin:0;color:#1d2430;background:#f6f7f9}
main{max-width:1180px;margin:0 auto;padding:18px 28px 40px}h1{font-size:1.5em}h2{font-size:1.15em;margin:1.2em 0 .4em}
table{border-collapse:collapse;background:#fff;font-size:.86em;margin:.3em 0 .8em}
th,td{border:1px solid #dde1e7;padding:4px 8px;text-align:left}th{background:#eef1f5}
td.num{text-align:right;font-variant-numeric:tabular-nums}tr.outside td{background:#fff3cd}
.sub{color:#5b6573;font-size:.9em}"""

_LABEL = {"images_per_s": "images/s per GPU", "peak_memory_bytes": "memory at batch", "board_power_w": "board power"}


def _fmt(metric: str, v: float | None) -> str:
    if v is None:
        return "-"
    if metric == "peak_memory_bytes":
        return f"{v / 2**30:.1f} GiB"
    if metric == "board_power_w":
        return f"{v:.0f} W"
    return f"{v:,.0f}"


def render(caps: list[PrecisionCapacity], targets: list[float] | None = None, title: str = "nodebench fleet") -> str:
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{escape(title)}</title><style>{_CSS}</style></head><body><main>", f"<h1>{escape(title)}</h1>"]
    if not caps:
        out.append('<p id="fleet-capacity" data-status="not measured">no ResNet-50 train record in the history: '
                   "ingest runs with the train family</p>")
    for pc in caps:
        outside = {n for s in pc.spreads for n in s.outside}
        out.append(f'<section id="fleet-{escape(pc.precision)}"><h2>{escape(pc.precision)}: {escape(pc.record_id)}</h2>')
        out.append(f'<p class="sub">fleet total <b id="total-{escape(pc.precision)}">{pc.total:,.0f}</b> images/s over '
                   f"{len(pc.rows)} nodes (each node: its GPUs x one GPU's rate, an upper bound; the median node "
                   f"{pc.median_node:,.0f})</p>")
        out.append("<table class=\"capacity\"><thead><tr><th>node</th><th>GPUs</th><th>images/s per GPU</th>"
                   "<th>images/s per node</th><th>memory at batch</th><th>board power</th><th>images/J</th>"
                   "<th>run</th></tr></thead><tbody>")
        for r in pc.rows:
            cls = ' class="outside"' if r.node in outside else ""
            ipj = f"{r.images_per_j:.2f}" if r.images_per_j is not None else "-"
            out.append(f'<tr data-node="{escape(r.node)}"{cls}><td>{escape(r.node)}</td><td class="num">{r.gpus}</td>'
                       f'<td class="num">{r.images_per_s:,.0f}</td><td class="num">{r.node_images_per_s:,.0f}</td>'
                       f'<td class="num">{_fmt("peak_memory_bytes", r.peak_memory_bytes)}</td>'
                       f'<td class="num">{_fmt("board_power_w", r.board_power_w)}</td><td class="num">{ipj}</td>'
                       f"<td>{escape(r.started_at)}</td></tr>")
        out.append("</tbody></table>")
        out.append("<table class=\"spread\"><thead><tr><th>metric</th><th>median</th><th>lowest</th><th>highest</th>"
                   "<th>spread (1.4826 MAD / median)</th><th>nodes outside (history's fleet rule)</th></tr></thead><tbody>")
        for s in pc.spreads:
            out.append(f'<tr data-metric="{escape(s.metric)}"><td>{escape(_LABEL[s.metric])}</td>'
                       f'<td class="num">{_fmt(s.metric, s.median)}</td><td class="num">{_fmt(s.metric, s.low)}</td>'
                       f'<td class="num">{_fmt(s.metric, s.high)}</td><td class="num">{100 * s.rel_spread:.1f}%</td>'
                       f'<td class="outside">{escape(", ".join(s.outside) or "none")}</td></tr>')
        out.append("</tbody></table>")
        wanted = targets or [round(pc.total * f, -2) for f in TARGET_FACTORS]
        out.append("<table class=\"needed\"><thead><tr><th>target images/s</th><th>nodes to add (at the median node's "
                   "rate)</th></tr></thead><tbody>")
        for t in wanted:
            out.append(f'<tr data-target="{t:g}"><td class="num">{t:,.0f}</td>'
                       f'<td class="num">{nodes_needed(t, pc.total, pc.median_node)}</td></tr>')
        out.append("</tbody></table></section>")
    out.append("</main></body></html>")
    return "\n".join(out)
