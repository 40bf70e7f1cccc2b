"""The conv family in the report: the images/s figure against batch size (the ResNet-50 network
cases, else the layer cases), the memory item judged from the file's ``analysis.batch_recommendation``
(the train family's judgment supersedes it where the file has one), and, for the other families'
items, the training throughput of the recommended batch."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from .. import plots
from ..checklist import FAIL, MEMORY_PASS, MEMORY_WARN, NOT_MEASURED, PASS, WARN, Item, placed, worst
from ..conventions import is_number
from ..derive import missing_analysis
from ..load import ReportData
from ..records import gpu_label, is_oom, model_of, num, where
from ..util import fmt_pct
from ..metrics import declare, metric
from .resnet50 import BatchPoint

FAMILY = "conv"
PRIMARY = ("train_images_per_s", "images_per_s", "tflops")
METRICS = declare(metric("train_images_per_s", "training images/s"), metric("fwd_images_per_s", "forward images/s"),
                  metric("images_per_s", "images/s"), metric("tflops", "TFLOPS"), "fwd_time_us",
                  metric("memory_fraction_x", better="lower"),  # of the GPU's memory: less leaves more room
                  "peak_memory_bytes", "workspace_bytes")
FEEDS = ("batch_recommendation", "fp16_vs_fp32")
NETWORK_LAYER = "resnet50_total"
PLOT_ORDER, MEMORY_ORDER = 20, 80


def group_key(rec: dict) -> tuple:
    """(Where, precision, layout) of a network case: one line per series; (Where, layer, precision,
    pass) of a layer case."""
    p = rec.get("params") or {}
    if p.get("layer") == NETWORK_LAYER:
        return where(rec), str(p.get("precision", "?")), str(p.get("layout", ""))
    return where(rec), str(p.get("layer", "?")), str(p.get("precision", "?")), str(p.get("pass", ""))


@dataclass
class ConvPoint(BatchPoint):
    train_ips: float | None
    fwd_ips: float | None
    peak_memory_bytes: float | None
    reason: str | None


def conv_network(data: ReportData) -> list[ConvPoint]:
    """Network-level (ResNet-50 total) conv points, ok and out-of-memory ones."""
    points = []
    for rec in data.family(FAMILY, status=None):
        params = rec["params"]
        if params.get("layer") != NETWORK_LAYER or not is_number(params.get("batch")):
            continue
        if rec["status"] != "ok" and not is_oom(rec):
            continue
        m = rec["metrics"]
        w, precision, layout = group_key(rec)
        points.append(ConvPoint(w, precision, layout, int(params["batch"]), rec["status"], is_oom(rec),
                                num(m.get("train_images_per_s")), num(m.get("fwd_images_per_s")),
                                num(m.get("peak_memory_bytes")), rec.get("reason")))
    return sorted(points, key=lambda p: (p.where, p.precision, p.layout, p.batch))


@dataclass
class BatchRec:
    gpu: int | None
    precision: str
    batch: int | None           # None: no batch recommended (reason says why)
    train_images_per_s: float | None
    memory_fraction: float | None
    source: str
    layout: str = ""
    limit: float | None = None  # memory_fraction_limit the recommendation was made under
    reason: str = ""
    batches_measured: int = 0   # distinct batch sizes measured for this series (0: unknown)

    @property
    def one_batch(self) -> bool:
        """Only one batch size was measured: a throughput, not a recommendation."""
        return self.batches_measured == 1

    @property
    def label(self) -> str:
        who = f"GPU {self.gpu}" if self.gpu is not None else "node"
        return f"{who} {self.precision}" + (f" {self.layout}" if self.layout else "")


def batch_recommendations(data: ReportData) -> list[BatchRec]:
    """The file's analysis.batch_recommendation (nothing without it: not judged a second time here)."""
    recs = []
    raw = data.analysis.get("batch_recommendation")
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        gpu = item.get("gpu")
        # one batch measured: no batch recommended, the measured one shown as such (one_batch)
        batch = item.get("batch") if is_number(item.get("batch")) else item.get("measured_batch")
        recs.append(BatchRec(gpu if isinstance(gpu, int) and not isinstance(gpu, bool) else None,
                             str(item.get("precision", "?")),
                             int(batch) if is_number(batch) else None,
                             num(item.get("train_images_per_s")), num(item.get("memory_fraction")),
                             "analysis.batch_recommendation", str(item.get("layout") or ""),
                             num(item.get("memory_fraction_limit")), str(item.get("reason") or "")))
    _count_batches(data, recs)
    return recs


def _count_batches(data: ReportData, recs: list[BatchRec]) -> None:
    """How many batch sizes were measured (ok) behind each recommendation's series."""
    seen: dict[tuple, set] = defaultdict(set)
    for p in conv_network(data):
        if p.status == "ok":
            seen[(p.where.first_gpu, p.precision, p.layout)].add(p.batch)
            seen[(None, p.precision, p.layout)].add(p.batch)
    for r in recs:
        batches = seen.get((r.gpu, r.precision, r.layout)) or seen.get((r.gpu, r.precision, ""))
        r.batches_measured = len(batches) if batches else 0


# ----------------------------------------------------------------------------------------------
# cross-family facts (families.ask)


def training_step(data: ReportData) -> tuple[float, str] | None:
    """Seconds per training step at the recommended batch (fastest recommendation), with a label."""
    best = None
    for r in batch_recommendations(data):
        if r.train_images_per_s and r.batch:
            step = r.batch / r.train_images_per_s
            if best is None or r.train_images_per_s > best[2]:
                best = (step, f"ResNet-50 {r.precision} batch {r.batch}", r.train_images_per_s)
    return (best[0], best[1]) if best else None


def training_images_per_s(data: ReportData, gpu: int) -> tuple[float, str] | None:
    """Best recommended training images/s on this GPU, else on a GPU of the same model."""
    def model(index):
        g = data.gpu(index) if index is not None else None
        return g["name"] if g else None

    recs = [r for r in batch_recommendations(data) if r.train_images_per_s and r.batch]
    mine = [r for r in recs if r.gpu == gpu or r.gpu is None]
    same = [r for r in recs if model(r.gpu) is not None and model(r.gpu) == model(gpu)]
    pick = mine or same
    if not pick:
        return None
    best = max(pick, key=lambda r: r.train_images_per_s)
    at = "" if best.gpu in (gpu, None) else f", measured on GPU {best.gpu}"
    return best.train_images_per_s, f"{best.precision} batch {best.batch}{at}"


# ----------------------------------------------------------------------------------------------
# figure


def _draw_network(ax, mine: list[ConvPoint], series, colors, name) -> None:
    for s in series:
        ok = [p for p in mine if (p.precision, p.layout) == s and p.status == "ok"]
        if not ok:
            continue
        if any(p.train_ips for p in ok):
            xs = [(p.batch, p.train_ips) for p in ok if p.train_ips]
            ax.plot(*zip(*xs), "o-", color=colors[s], label=f"{name(ok[0])} train", ms=4)
        if any(p.fwd_ips for p in ok):
            xs = [(p.batch, p.fwd_ips) for p in ok if p.fwd_ips]
            ax.plot(*zip(*xs), "s--", color=colors[s], label=f"{name(ok[0])} forward", ms=3, alpha=0.8)
    ooms = [p for p in mine if p.oom]
    if ooms:
        ax.scatter([p.batch for p in ooms], [0] * len(ooms), marker="X", s=90, color=plots._OOM_COLOR, zorder=5,
                   label="out of memory", clip_on=False)
        for p in ooms:
            ax.annotate(f"OOM {name(p)}", (p.batch, 0), textcoords="offset points", xytext=(0, 8),
                        ha="center", fontsize=7, color=plots._OOM_COLOR)


def plot_conv(data: ReportData) -> plots.Plot:
    plot = plots.Plot("conv", "Convolution throughput against batch size",
                      "ResNet-50 images/s per precision (solid: training, dashed: forward); black crosses on the "
                      "axis: batches that ran out of memory.", order=PLOT_ORDER)
    points = conv_network(data)
    if not points:
        return _plot_conv_layers(data, plot)
    groups = sorted({p.where for p in points})[:plots.MAX_PANELS]
    layouts = {p.layout for p in points}

    def name(p):  # "fp16" or, when several layouts were measured, "fp16 nhwc"
        return p.precision + (f" {p.layout}" if len(layouts) > 1 and p.layout else "")

    series = sorted({(p.precision, p.layout) for p in points}, key=lambda s: (plots._prec_key(s[0]), s[1]))
    # two lines a series (training, forward): more than three series are split by layout, then into
    # small multiples sharing the y axis
    by_layout = [[s for s in series if s[1] == lay] for lay in sorted(layouts)] if len(series) > 3 else [series]
    panels = [(g, part) for g in groups for group in by_layout
              for part in plots.split_series(group, lines_each=2)]
    with plots.plt.rc_context(plots._STYLE):
        fig, axes = plots._grid(len(panels), sharey=len(panels) > 1)
        colors = {s: plots._color(i) for i, s in enumerate(series)}
        for ax, (g, part) in zip(axes, panels):
            _draw_network(ax, [p for p in points if p.where == g], part, colors, name)
            plots._pow2_axis(ax)
            ax.set_ylim(bottom=0)
            ax.set_xlabel("batch size")
            ax.set_ylabel("images/s")
            ax.set_title(f"{gpu_label(g)}: {model_of(data, g)}")
            plots._legend(ax)
        plot.png = plots._png(fig)
    return plot


def _plot_conv_layers(data: ReportData, plot: plots.Plot) -> plots.Plot:
    series: dict = defaultdict(dict)
    ooms: dict = defaultdict(list)
    for rec in data.family(FAMILY, status=None):
        p = rec["params"]
        if not is_number(p.get("batch")):
            continue
        label = f"{p.get('layer', '?')} {p.get('precision', '?')} {p.get('pass', '')}".strip()
        if rec["status"] == "ok" and is_number(rec["metrics"].get("images_per_s")):
            series[label][p["batch"]] = rec["metrics"]["images_per_s"]
        elif is_oom(rec):
            ooms[label].append(p["batch"])
    if not series and not ooms:
        plot.missing = plots._absent(data, FAMILY, "this plot")
        return plot
    plot.caption = "Per-layer convolution images/s per precision and pass; black crosses: out of memory."
    with plots.plt.rc_context(plots._STYLE):
        parts = plots.split_series(sorted(series.items())[:12])
        fig, axes = plots._grid(len(parts), w=8 if len(parts) == 1 else 5.6, h=4.2, sharey=len(parts) > 1)
        all_oom = [b for bs in ooms.values() for b in bs]
        for k, (ax, part) in enumerate(zip(axes, parts)):
            for i, (label, pts) in enumerate(part, start=k * len(parts[0])):
                xs = sorted(pts.items())
                ax.plot([x for x, _ in xs], [v for _, v in xs], "o-", color=plots._color(i), label=label, ms=4)
            if all_oom:
                ax.scatter(all_oom, [0] * len(all_oom), marker="X", s=90, color=plots._OOM_COLOR,
                           label="out of memory", clip_on=False, zorder=5)
            plots._pow2_axis(ax)
            ax.set_ylim(bottom=0)
            ax.set_xlabel("batch size")
            ax.set_ylabel("images/s")
            plots._legend(ax)
        plot.png = plots._png(fig)
    return plot


def figures(data: ReportData) -> list:
    return [plot_conv(data)]


# ----------------------------------------------------------------------------------------------
# checklist: memory at the recommended batch


MEMORY_TITLE = "Memory use at the recommended batch size"


def _judge(r: BatchRec, statuses: list, ev: list, fractions: list) -> None:
    """One recommendation's status and evidence line."""
    if r.batch is None:
        statuses.append(WARN)
        ev.append(f"{r.label}: no batch recommended" + (f" - {r.reason}" if r.reason else "") + " (warn)")
        return
    ips = f", {r.train_images_per_s:,.0f} images/s" if r.train_images_per_s else ""
    limit = r.limit if r.limit else MEMORY_PASS
    if r.one_batch:
        mem = f", {fmt_pct(r.memory_fraction, 0)} of GPU memory" if r.memory_fraction is not None else ""
        ev.append(f"{r.label}: one batch measured (batch {r.batch}{ips}{mem}): run the conv sweep for a "
                  f"recommendation")
        if r.memory_fraction is not None:
            fractions.append(r.memory_fraction)
            statuses.append(PASS if r.memory_fraction <= limit else WARN)
        return
    if r.memory_fraction is None:
        ev.append(f"{r.label}: batch {r.batch}{ips}; memory use unknown")
        return
    st = PASS if r.memory_fraction <= limit else WARN if r.memory_fraction <= limit + (MEMORY_WARN - MEMORY_PASS) \
        else FAIL
    statuses.append(st)
    fractions.append(r.memory_fraction)
    ev.append(f"{r.label}: batch {r.batch}{ips}, {fmt_pct(r.memory_fraction, 0)} of GPU memory "
              f"(limit {fmt_pct(limit, 0)}; {st})")


def _summary(recs: list[BatchRec], status: str, fractions: list) -> str:
    single = [r for r in recs if r.one_batch]
    top = max(fractions) if fractions else None
    if status == PASS and len(single) == len(recs):
        return f"one batch measured (at most {fmt_pct(top, 0)} of GPU memory): run the conv sweep for a recommendation"
    if status == PASS:
        return f"at most {fmt_pct(top, 0)} of GPU memory at the recommended batch"
    if status == FAIL:
        return f"up to {fmt_pct(top, 0)} of GPU memory: expect out-of-memory errors in practice"
    if top is not None and top > min(r.limit or MEMORY_PASS for r in recs):
        return f"up to {fmt_pct(top, 0)} of GPU memory: little room for fragmentation or larger inputs"
    unrecommended = sum(1 for r in recs if r.batch is None)
    return f"no batch recommended for {unrecommended} precision/layout series (see the evidence)"


def check_memory(data: ReportData) -> Item:
    """Memory at the batch the file's analysis.batch_recommendation recommends, against its limit."""
    title = MEMORY_TITLE
    recs = batch_recommendations(data)
    if not recs:
        why = missing_analysis(data, "batch_recommendation") if conv_network(data) else None
        return Item("memory", title, NOT_MEASURED, why or "no batch recommendation (no network conv results)")
    statuses, ev, fractions = [], [], []
    for r in recs:
        _judge(r, statuses, ev, fractions)
    for p in conv_network(data):
        if p.oom:
            ev.append(f"{gpu_label(p.where)} {p.precision}{' ' + p.layout if p.layout else ''}: "
                      f"batch {p.batch} out of memory")
    ev.append(f"source: {recs[0].source}")
    if not statuses:
        if all(r.one_batch for r in recs):
            return Item("memory", title, NOT_MEASURED, "one batch measured: run the conv sweep for a recommendation",
                        ev)
        return Item("memory", title, NOT_MEASURED, "recommended batch known but not its memory use", ev)
    status = worst(statuses)
    return Item("memory", title, status, _summary(recs, status, fractions), ev)


def checklist_items(data: ReportData) -> list:
    return [placed(check_memory(data), MEMORY_ORDER)]
