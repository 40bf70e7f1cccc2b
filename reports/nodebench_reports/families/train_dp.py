"""The train_dp family in the report: measured data-parallel training throughput and efficiency
against GPU count, per configuration, beside the advisor's prediction (``nodebench advise --json``,
given with ``html --advise``), and what combines them with the nccl family's estimate: the scaling
figure and the distribution-strategy item (judged from training efficiency: measured, else predicted,
else estimated from one GPU's step and the all-reduce)."""

from __future__ import annotations

from dataclasses import dataclass

from .. import plots
from ..checklist import FAIL, NOT_MEASURED, PASS, WARN, Item, placed
from ..conventions import is_number
from ..load import ReportData
from ..records import max_link_gbps, num
from ..util import fmt_bytes
from ..metrics import declare, metric
from .nccl import scaling as nccl_scaling
from .resnet50 import RESNET50_GRAD_BYTES

FAMILY = "train_dp"
PRIMARY = ("images_per_s",)
METRICS = declare(metric("images_per_s", "images/s"), "step_time_ms", "scaling_efficiency_ratio", "one_gpu_images_per_s",
                  "one_gpu_step_ms", "compute_step_ms", "exposed_comm_ms", "bucket_count", "bucket_bytes",
                  "gradient_bytes")
SCALING_PASS, SCALING_WARN = 0.9, 0.7
DISTRIBUTION_ORDER, SCALING_ORDER = 50, 70


def group_key(rec: dict) -> tuple | None:
    """(precision, layout, per-GPU batch, accumulation steps): one configuration against GPU count."""
    p = rec.get("params") or {}
    if not isinstance(p.get("batch"), int):
        return None
    return str(p.get("precision", "")), str(p.get("layout", "")), p["batch"], int(p.get("accumulation", 1) or 1)


@dataclass
class DpPoint:
    gpus: int
    images_per_s: float
    efficiency: float | None


@dataclass
class DpSeries:
    """One configuration (precision, layout, per-GPU batch, accumulation) against GPU count."""
    key: tuple[str, str, int, int]
    measured: list[DpPoint]
    predicted: list[DpPoint]
    one_gpu_ips: float | None      # the 1-GPU throughput the ideal line and efficiency rest on
    predicted_label: str = ""

    @property
    def label(self) -> str:
        p, l, b, k = self.key
        return f"ResNet-50 {p} {l} batch {b}/GPU" + (f", {k} accumulation steps" if k > 1 else "")


def dp_series(data: ReportData) -> list[DpSeries]:
    """Measured points from train_dp records and predicted points from the advise document, per configuration.
    Efficiency: the record's scaling_efficiency_ratio (N-GPU over N x 1-GPU throughput), else the ratio to
    the 1-GPU point of the same configuration."""
    series: dict[tuple, DpSeries] = {}

    def get(key):
        return series.setdefault(key, DpSeries(key, [], [], None))

    for rec in data.family(FAMILY):
        p, m = rec["params"], rec["metrics"]
        n, ips, key = p.get("gpus"), num(m.get("images_per_s")), group_key(rec)
        if not isinstance(n, int) or key is None or ips is None:
            continue
        eff = num(m.get("scaling_efficiency_ratio"))
        if eff is not None and eff > 1.5:   # given in percent
            eff /= 100.0
        get(key).measured.append(DpPoint(n, ips, eff))
    if data.advice:
        for r in data.advice.get("rows", []):
            key = (str(r.get("precision", "")), str(r.get("layout", "")), int(r["batch"]), int(r["accumulation"]))
            s = get(key)
            s.predicted.append(DpPoint(int(r["gpus"]), float(r["images_per_s"]), float(r["efficiency"])))
            s.predicted_label = str(data.advice.get("label", "predicted"))
    out = []
    for s in series.values():
        s.measured.sort(key=lambda q: q.gpus)
        s.predicted.sort(key=lambda q: q.gpus)
        ones = [q.images_per_s for q in s.measured if q.gpus == 1] or [q.images_per_s for q in s.predicted if q.gpus == 1]
        s.one_gpu_ips = ones[0] if ones else None
        for q in s.measured:
            if q.efficiency is None and s.one_gpu_ips:
                q.efficiency = q.images_per_s / (q.gpus * s.one_gpu_ips)
        out.append(s)
    return sorted(out, key=lambda s: s.key)


def _best_at_top(series, which: str):
    """(series, point) with the largest GPU count above one and, there, the best efficiency."""
    best = None
    for s in series:
        for q in getattr(s, which):
            if q.gpus < 2 or q.efficiency is None:
                continue
            if best is None or (q.gpus, q.efficiency) > (best[1].gpus, best[1].efficiency):
                best = (s, q)
    return best


def _fabric_evidence(data: ReportData, sc) -> list:
    """The all-reduce bus bandwidth of the most GPUs against the fastest PCIe link (the maximum
    link: idle GPUs train down), as evidence of the interconnect class."""
    if sc is None or not sc.rows:
        return []
    pcie = [p for p in (max_link_gbps(g) for g in data.gpus) if is_number(p)]
    if not pcie:
        return []
    top_bw = max(sc.rows, key=lambda r: r.ngpus).busbw_gbps
    fabric = "NVLink/NVSwitch-class" if top_bw > 1.2 * max(pcie) else "PCIe/host-class"
    return [f"bus bandwidth {top_bw:.0f} GB/s vs PCIe {max(pcie):.0f} GB/s: {fabric} interconnect"]


def _efficiency(data: ReportData, series, sc, ev: list) -> tuple[float, int, str] | None:
    """(efficiency, GPU count, basis) of the strategy: measured, else predicted, else estimated; None
    when there is no training step to judge by. Adds its evidence to ``ev``."""
    measured = _best_at_top(series, "measured")
    predicted = _best_at_top(series, "predicted")
    if measured:
        s, q = measured
        ev.append(f"{s.label}: {q.images_per_s:.0f} images/s on {q.gpus} GPUs, efficiency {q.efficiency * 100:.1f}% "
                  f"(train_dp, N-GPU over N x 1-GPU throughput)")
        for pq in [pq for ps in series if ps.key == s.key for pq in ps.predicted if pq.gpus == q.gpus]:
            ev.append(f"predicted for the same configuration: {pq.images_per_s:.0f} images/s "
                      f"({(pq.images_per_s - q.images_per_s) / q.images_per_s * 100:+.1f}%)")
        return q.efficiency, q.gpus, "measured data-parallel training efficiency"
    if predicted:
        s, q = predicted
        ev.append(f"{s.label}: {q.images_per_s:.0f} images/s predicted on {q.gpus} GPUs, "
                  f"efficiency {q.efficiency * 100:.1f}%")
        return q.efficiency, q.gpus, f"predicted data-parallel training efficiency ({s.predicted_label}, nodebench advise)"
    if sc is not None and sc.step_s is not None and any(r.ngpus >= 2 for r in sc.rows):
        top = max(sc.rows, key=lambda r: r.ngpus)
        ev.append(f"step time used: {sc.step_s * 1e3:.1f} ms ({sc.step_label}, per GPU)")
        return top.train_efficiency, top.ngpus, "predicted data-parallel training efficiency (one-GPU step + all-reduce, no overlap)"
    return None


def _strategy(eff: float, n: int) -> tuple[str, str]:
    if eff >= SCALING_PASS:
        return PASS, f"data parallel (DDP: one process per GPU, NCCL all-reduce) across {n} GPUs"
    if eff >= SCALING_WARN:
        return WARN, (f"data parallel across {n} GPUs with gradient-bucket overlap and a larger per-GPU batch "
                      f"or gradient accumulation to amortise the all-reduce")
    return FAIL, (f"all-reduce-bound at {n} GPUs: accumulate gradients / communicate less often, keep "
                  f"sharded strategies inside fast-link groups, and check the interconnect")


def check_distribution(data: ReportData) -> Item:
    """Judged from training efficiency (N-GPU throughput over N x 1-GPU throughput): measured (train_dp
    records), else predicted by `nodebench advise`, else estimated from the one-GPU step and the all-reduce
    curve (no overlap). Bus bandwidth alone never judges a strategy: it is evidence only."""
    title = "Distribution strategy from training efficiency"
    sc = nccl_scaling(data)
    ev: list[str] = []
    judged = _efficiency(data, dp_series(data), sc, ev)
    if judged is None:
        if len(data.gpus) == 1 and sc is None:
            return Item("distribution", title, NOT_MEASURED, "single GPU: no multi-GPU strategy to choose")
        why = ("no all-reduce (nccl) records in these results" if sc is None else
               "no training step time (train, train_dp or conv records, or an advise document): "
               "bus bandwidth alone does not judge a strategy")
        for r in (sc.rows if sc else []):
            ev.append(f"{r.ngpus} GPU(s): all-reduce bus bandwidth {r.busbw_gbps:.1f} GB/s at "
                      f"{fmt_bytes(sc.common_bytes)}")
        ev += _fabric_evidence(data, sc)
        return Item("distribution", title, NOT_MEASURED, why, ev)
    eff, n, basis = judged
    if sc is not None:
        for r in sc.rows:
            line = (f"{r.ngpus} GPU(s): all-reduce bus bandwidth {r.busbw_gbps:.1f} GB/s at "
                    f"{fmt_bytes(sc.common_bytes)}; ResNet-50 FP32 gradient all-reduce "
                    f"({fmt_bytes(RESNET50_GRAD_BYTES)}) ~ {r.allreduce_s * 1e3:.2f} ms")
            if r.train_efficiency is not None:
                line += f", no-overlap training efficiency ~ {r.train_efficiency * 100:.1f}%"
            ev.append(line)
        ev += _fabric_evidence(data, sc)
    if data.advice:   # the advisor's strategy table, each statement with its figures
        ev += [f"advise ({st.get('topic', '')}): {st.get('text', '')}" for st in data.advice.get("recommendation", [])
               if isinstance(st, dict)]
    status, strategy = _strategy(eff, n)
    return Item("distribution", title, status, f"{basis} {eff * 100:.1f}% at {n} GPUs: {strategy}", ev)


def _plot_dp(plot: plots.Plot, series: list) -> plots.Plot:
    """Data-parallel training against GPU count: throughput (measured points, predicted line, ideal line
    N x 1-GPU) and efficiency (N-GPU over N x 1-GPU throughput)."""
    plot.caption = ("Data-parallel ResNet-50 training against GPU count: throughput (points measured by the "
                    "train_dp family, lines predicted by nodebench advise: the bound set by communication and input, "
                    "leaving out framework, optimizer and straggler costs; dashed the ideal N x 1-GPU) and "
                    "scaling efficiency (N-GPU throughput over N x 1-GPU throughput).")
    if any(s.predicted_label.startswith("predicted from profile") for s in series):
        plot.caption += " Predicted from profile, not measured."
    with plots.plt.rc_context(plots._STYLE):
        fig, (ax, ax2) = plots._grid(2, w=5.6, h=3.8)
        xs_all: set[int] = set()
        for i, s in enumerate(series[:8]):
            c = plots._color(i)
            if s.measured:
                ax.plot([q.gpus for q in s.measured], [q.images_per_s for q in s.measured], "o", color=c,
                        label=f"{s.label} (measured)")
                pts = [q for q in s.measured if q.efficiency is not None]
                ax2.plot([q.gpus for q in pts], [q.efficiency * 100 for q in pts], "o", color=c)
            if s.predicted:
                ax.plot([q.gpus for q in s.predicted], [q.images_per_s for q in s.predicted], "-", color=c,
                        label=f"{s.label} (predicted)")
                ax2.plot([q.gpus for q in s.predicted], [q.efficiency * 100 for q in s.predicted], "-", color=c)
            xs = sorted({q.gpus for q in s.measured + s.predicted})
            xs_all.update(xs)
            if s.one_gpu_ips:
                ax.plot(xs, [x * s.one_gpu_ips for x in xs], "--", color=c, lw=1, alpha=0.7)
        ax2.axhline(100, color="gray", ls="--", lw=1, label="ideal")
        for a in (ax, ax2):
            a.set_xticks(sorted(xs_all))
            a.set_xlabel("GPU count")
        ax.set_ylabel("images/s (dashed: ideal N x 1 GPU)")
        ax2.set_ylabel("scaling efficiency (%)")
        ax2.set_ylim(0, 110)
        plots._legend(ax)
        plot.png = plots._png(fig)
    return plot


def plot_scaling(data: ReportData) -> plots.Plot:
    plot = plots.Plot("scaling", "Scaling efficiency against GPU count",
                "All-reduce bus bandwidth at the largest message relative to the smallest GPU count, and the "
                "estimated data-parallel ResNet-50 training efficiency (FP32 gradients, no overlap).", order=SCALING_ORDER)
    # a configuration with a point beyond one GPU (measured, or predicted by advise): a one-GPU run alone
    # draws no empty frame
    series = [s for s in dp_series(data) if any(q.gpus >= 2 for q in s.measured + s.predicted)]
    if series:
        return _plot_dp(plot, series)
    sc = nccl_scaling(data)
    if sc is None and dp_series(data):
        plot.missing = ("not measured: data-parallel training ran on one GPU only; `nodebench advise --json` "
                        "predicts the scaling (give it with html --advise to draw the prediction)")
        return plot
    if sc is None:
        plot.missing = plots._absent(data, "nccl", "scaling")
        return plot
    with plots.plt.rc_context(plots._STYLE):
        fig, (ax,) = plots._grid(1, w=7.0, h=3.8)
        xs = [r.ngpus for r in sc.rows]
        ax.plot(xs, [r.busbw_efficiency * 100 for r in sc.rows], "o-", color="C0",
                label=f"all-reduce bus bandwidth at {fmt_bytes(sc.common_bytes)},\nrelative to {xs[0]} GPUs")
        if sc.step_s is not None:
            ax.plot([1] + xs, [100.0] + [r.train_efficiency * 100 for r in sc.rows], "s-", color="C1",
                    label=f"data-parallel training efficiency\n({sc.step_label}, no overlap)")
        ax.axhline(100, color="gray", ls="--", lw=1, label="ideal")
        ax.set_xticks(sorted(set(([1] if sc.step_s is not None else []) + xs)))
        lo = min([r.busbw_efficiency * 100 for r in sc.rows] +
                 ([r.train_efficiency * 100 for r in sc.rows] if sc.step_s is not None else []))
        ax.set_ylim(min(lo - 5, 80), max(105, max(r.busbw_efficiency * 100 for r in sc.rows) + 5))
        ax.set_xlabel("GPU count")
        ax.set_ylabel("efficiency (%)")
        plots._legend(ax)
        plot.png = plots._png(fig)
    return plot


def figures(data: ReportData) -> list:
    return [plot_scaling(data)]


def checklist_items(data: ReportData) -> list[Item]:
    return [placed(check_distribution(data), DISTRIBUTION_ORDER)]
