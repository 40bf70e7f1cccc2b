"""``fleet``: the latest value of each case on every machine of the history against the fleet's median,
judged against the between-run noise (:mod:`.history` stores it, :mod:`.history_query` reads it)."""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass

from .errors import ReportError
from .formats import register
from .historydb import HistoryDB
from .history_query import Point, _display_names, _no_data, _save, latest_points
from .load import higher_is_better, key_label
from .stats import robust_rel_spread
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
    fleet_spread: float = 0.0   # robust relative spread across machines: MAD (normal scale) / median
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
        spread = robust_rel_spread([p.value for p in pts])
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


@register("fleet-text", "fleet", "the fleet table on standard output")
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


@register("fleet-json", "fleet", "also write the fleet view as JSON", option="--json")
def fleet_json_text(f: Fleet) -> str:
    return json.dumps(fleet_json(f), indent=2) + "\n"


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
