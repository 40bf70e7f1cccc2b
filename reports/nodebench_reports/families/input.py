"""The input family in the report: the checklist item "the input pipeline keeps up" and the figure of
the host's decode rate against its worker count beside what the GPUs' training step consumes.

The arithmetic is the family's (benchmarks/input/input_verdict.cpp, docs/SCHEMA.md "input"): the
workers needed for a rate are read off the measured curve (its running maximum, linear between
points) and, beyond its largest point, that point's rate per worker for every further worker; the
cores needed are those decode workers (whole cores) plus one core per GPU for the process that
drives it, against the CPUs the input case could use (``details.cpus_available``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import plots
from ..checklist import NOT_MEASURED, PASS, WARN, Item, placed
from ..conventions import is_number
from ..load import ReportData
from ..metrics import declare, metric
from . import train_derive as derive_train

FAMILY = "input"
PRIMARY = ("images_per_s",)
METRICS = declare(metric("images_per_s", "images/s"), "per_core_images_per_s", "per_core_cpu_time_images_per_s",
                  "decode_per_image_ms", "augment_per_image_ms", "augment_gpu_time_per_image_ms",
                  "gpu_time_per_image_ms", "cores_count", "mean_file_bytes", "output_bytes", "worker_cpu_share")
FEEDS = ("input_pipeline",)
# The figure after the others (the page's last); the item beside the host link's (30/31): the data
# pipeline's questions together, before the distribution strategy (50).
PLOT_ORDER, CHECK_ORDER = 90, 40

GPU_COUNTS = (1, 2, 4, 8)
PLOT_KEY = "input"


def group_key(rec: dict) -> tuple | None:
    """(where it ran, layout/dtype, placement or backend): one curve of the sweep, the NUMA pair, one
    GPU decode backend; the CPU records have no GPU (host-only), so the host is the run's."""
    p = rec.get("params") or {}
    kind = "cpu" if str(rec.get("id", "")).startswith("input/cpu/") else "gpu"
    how = p.get("placement") if kind == "cpu" else p.get("backend")
    return kind, f"{p.get('layout')}/{p.get('dtype')}", str(how)


@dataclass
class Curve:
    series: str                 # "nchw/fp32"
    host_cpus: int
    points: list = field(default_factory=list)  # (cores, images/s), by cores


@dataclass
class GpuDecode:
    id: str
    series: str
    images_per_s: float
    gpu_time_per_image_ms: float


def curves(data: ReportData) -> list[Curve]:
    """The sweep (placement "spread") of each series: the fastest record per worker count."""
    pts: dict[str, dict[int, float]] = {}
    cpus: dict[str, int] = {}
    for r in data.family(FAMILY):
        p, m, d = r.get("params") or {}, r.get("metrics") or {}, r.get("details") or {}
        if not r["id"].startswith("input/cpu/") or p.get("placement") != "spread":
            continue
        if not is_number(m.get("images_per_s")) or not is_number(p.get("cores")):
            continue
        s = f"{p.get('layout')}/{p.get('dtype')}"
        by = pts.setdefault(s, {})
        by[int(p["cores"])] = max(by.get(int(p["cores"]), 0.0), float(m["images_per_s"]))
        cpus[s] = max(cpus.get(s, 0), int(d.get("cpus_available") or 0))
    return [Curve(s, cpus[s], sorted(by.items())) for s, by in sorted(pts.items())]


def gpu_decodes(data: ReportData) -> list[GpuDecode]:
    out = []
    for r in data.family(FAMILY):
        p, m = r.get("params") or {}, r.get("metrics") or {}
        if r["id"].startswith("input/gpu/") and is_number(m.get("images_per_s")):
            out.append(GpuDecode(r["id"], f"{p.get('layout')}/{p.get('dtype')}", float(m["images_per_s"]),
                                 float(m.get("gpu_time_per_image_ms") or 0.0)))
    return out


def _monotone(points):
    out, best = [], 0.0
    for c, v in points:
        best = max(best, v)
        out.append((c, best))
    return out


def workers_for(curve: Curve, need: float) -> tuple[float, bool]:
    """(workers, extrapolated) for `need` images/s."""
    p = _monotone(curve.points)
    if not p or need <= 0:
        return 0.0, False
    if need <= p[0][1]:
        return need / (p[0][1] / p[0][0]), False
    for (c0, v0), (c1, v1) in zip(p, p[1:]):
        if need <= v1:
            return c0 + (need - v0) / (v1 - v0) * (c1 - c0), False
    top = next(q for q in p if q[1] == p[-1][1])
    return top[0] + (need - top[1]) / (top[1] / top[0]), True


def feed(curve: Curve, per_gpu: float, gpus: int, gpu: GpuDecode | None = None) -> dict:
    workers, extrapolated = workers_for(curve, per_gpu * gpus)
    decode = math.ceil(workers - 1e-9)
    needed = decode + gpus
    short = max(0, needed - curve.host_cpus)
    row = {"gpus": gpus, "need": per_gpu * gpus, "workers": workers, "decode_cores": decode, "cores_needed": needed,
           "host_cpus": curve.host_cpus, "cores_short": short, "extrapolated": extrapolated,
           "status": "pass" if short == 0 else "warn"}
    if gpu is not None:
        share = per_gpu * gpu.gpu_time_per_image_ms / 1000.0
        keeps = gpu.images_per_s >= per_gpu
        row["gpu_decode"] = {"id": gpu.id, "keeps_up": keeps, "gpu_time_share": share,
                             "closes_gap": keeps and 2 * gpus <= curve.host_cpus}
    return row


def curve_for(cs: list[Curve], precision: str, layout: str) -> tuple[Curve | None, str]:
    if not cs:
        return None, ""
    want = f"{layout}/{'fp16' if precision == 'fp16' else 'fp32'}"
    for c in cs:
        if c.series == want:
            return c, ""
    pick = next((c for c in cs if c.series.startswith(layout + "/")), cs[0])
    return pick, f"no {want} decode curve: the {pick.series} one instead"


def demands(data: ReportData) -> list[tuple[str, str, int, float]]:
    """(precision, layout, batch, images/s per GPU): each training series' fastest batch."""
    best: dict[tuple, tuple] = {}
    for q in derive_train.train_points(data):
        if q.status == "ok" and q.images_per_s and q.images_per_s > best.get((q.precision, q.layout), (0, 0))[1]:
            best[(q.precision, q.layout)] = (q.batch, q.images_per_s)
    return [(p, layout, b, ips) for (p, layout), (b, ips) in sorted(best.items())]


def judged_count(data: ReportData) -> int:
    """The node's GPU count rounded down to 1, 2, 4 or 8 (1 without a GPU)."""
    n = max((len(run.gpus) for run in data.runs), default=0)
    return max([g for g in GPU_COUNTS if g <= max(1, n)])


def _gpu_for(gs: list[GpuDecode], series: str) -> GpuDecode | None:
    same = [g for g in gs if g.series == series]
    return max(same or gs, key=lambda g: g.images_per_s) if gs else None


def _row_text(row: dict) -> str:
    t = (f"{row['gpus']} GPU(s) x {row['need'] / row['gpus']:,.0f} images/s: {row['decode_cores']} decode cores + "
         f"{row['gpus']} driving = {row['cores_needed']} of {row['host_cpus']} CPUs")
    t += "" if row["cores_short"] == 0 else f", {row['cores_short']} short"
    if "gpu_decode" in row:
        g = row["gpu_decode"]
        t += (f"; GPU decode {'closes the gap' if g['closes_gap'] else 'does not close it'} "
              f"({g['gpu_time_share'] * 100:.1f}% of each GPU's time)")
    return t


def check_input_pipeline(data: ReportData) -> Item:
    title = "The input pipeline keeps up (JPEG decode and augmentation on the CPU)"
    cs = curves(data)
    if not cs:
        return Item("input_pipeline", title, NOT_MEASURED, "no input family records: run the input family "
                    "(its quick case measures the host's decode rate)")
    ev = [f"decode {c.series}: " + ", ".join(f"{n} worker(s) {v:,.0f} images/s" for n, v in c.points) +
          f" ({c.points[0][1] / c.points[0][0]:,.0f} per core; {c.host_cpus} CPUs)" for c in cs]
    want = demands(data)
    if not want:
        return Item("input_pipeline", title, NOT_MEASURED,
                    "the decode rate is measured but no training step to feed: add train results", ev)
    at = judged_count(data)
    gs = gpu_decodes(data)
    statuses, parts = [], []
    for prec, layout, batch, ips in want:
        c, note = curve_for(cs, prec, layout)
        g = _gpu_for(gs, c.series)
        rows = [feed(c, ips, n, g) for n in GPU_COUNTS]
        for row in rows:
            ev.append(f"{prec}/{layout} (batch {batch}, {ips:,.0f} images/s per GPU): {_row_text(row)}"
                      + (" (extrapolated beyond the measured workers)" if row["extrapolated"] else "")
                      + (f" ({note})" if note else ""))
        judged = rows[GPU_COUNTS.index(at)]
        statuses.append(PASS if judged["status"] == "pass" else WARN)
        parts.append(f"{prec}/{layout} at {at} GPU(s): " + ("keeps up" if judged["status"] == "pass" else
                                                            f"{judged['cores_short']} cores short") +
                     f" ({judged['cores_needed']} cores needed of {judged['host_cpus']})")
    ev.append("source: input records (one pinned worker per core) and the train records' fastest batch; judged at "
              "the node's GPU count")
    status = WARN if WARN in statuses else PASS
    return Item("input_pipeline", title, status, "; ".join(parts), ev)


def plot_input(data: ReportData) -> plots.Plot:
    plot = plots.Plot(PLOT_KEY, "Input pipeline: images/s the host decodes and augments against its workers",
                      "Measured images/s of JPEG decode + random-resized crop + flip + normalise with one pinned worker "
                      "per core (solid), extended beyond the measured workers at the last point's rate per worker "
                      "(dotted); horizontal lines: what the fastest training step consumes on 1, 2, 4, 8 GPUs; "
                      "vertical line: the CPUs of the host. Where a GPU count's line crosses the curve is the decode "
                      "cores it needs (plus one per GPU to drive it).", order=PLOT_ORDER)
    cs = curves(data)
    if not cs:
        plot.missing = plots._absent(data, "input", "a decode curve")
        return plot
    want = demands(data)
    top = max(want, key=lambda w: w[3]) if want else None
    host = max(c.host_cpus for c in cs)
    need_max = top[3] * GPU_COUNTS[-1] if top else 0.0
    x_max = max([host] + [math.ceil(workers_for(c, need_max)[0]) for c in cs] + [c.points[-1][0] for c in cs])
    x_max = min(max(x_max, 2), 4096)
    with plots.plt.rc_context(plots._STYLE):
        fig, (ax,) = plots._grid(1)
        for i, c in enumerate(cs):
            xs, ys = zip(*c.points)
            ax.plot(xs, ys, "o-", color=plots._color(i), label=f"decode {c.series}", ms=4)
            per = c.points[-1][1] / c.points[-1][0]
            if x_max > xs[-1]:
                ax.plot([xs[-1], x_max], [ys[-1], ys[-1] + per * (x_max - xs[-1])], ":", color=plots._color(i))
        if top:
            for j, n in enumerate(GPU_COUNTS):
                ax.axhline(top[3] * n, ls="--", lw=1, color="gray", alpha=0.4 + 0.15 * j)
                ax.annotate(f"{n} GPU{'s' if n > 1 else ''} ({top[0]}/{top[1]})", (x_max, top[3] * n), fontsize=7,
                            ha="right", va="bottom", color="dimgray")
        ax.axvline(host, color="black", lw=1, label=f"this host: {host} CPUs")
        ax.set_xlim(0, x_max * 1.02)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("decode workers (one per core)")
        ax.set_ylabel("images/s")
        ax.set_title("JPEG decode and augmentation against the training step")
        plots._legend(ax)
        plot.png = plots._png(fig)
    return plot


def figures(data: ReportData) -> list:
    return [plot_input(data)]


def checklist_items(data: ReportData) -> list:
    return [placed(check_input_pipeline(data), CHECK_ORDER)]
