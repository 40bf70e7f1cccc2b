"""The train family in the report: throughput and memory against batch size (the limit and the
recommended batch marked), and the checklist items memory at the recommended batch (judged from
``analysis.train_recommendation``; it supersedes the conv sweep's judgment), what kernel fusion can save
at most, and whether small batches are host-bound. The numbers come from ``train_derive.py``."""

from __future__ import annotations

from .. import plots
from ..checklist import FAIL, MEMORY_PASS, MEMORY_WARN, NOT_MEASURED, PASS, WARN, Item, placed, worst
from ..load import ReportData
from ..records import gpu_label, model_of, where
from ..util import fmt_bytes, fmt_pct
from ..metrics import declare, metric
from . import train_derive as derive_train

FAMILY = "train"
PRIMARY = ("images_per_s",)
METRICS = declare(metric("images_per_s", "images/s"), "step_time_ms", metric("tflops", "TFLOPS"), "eager_images_per_s",
                  "eager_step_ms", "host_issue_ms", "peak_memory_bytes", "device_used_bytes",
                  metric("memory_fraction_x", better="lower"),
                  "workspace_bytes", "elementwise_share",
                  *(f"time_{k}_ms" for k in ("conv", "bn", "elementwise", "pool", "fc", "loss", "update")),
                  *(f"{k}_floor_bytes" for k in ("bn", "elementwise", "pool", "update")),
                  metric("board_power_w", "board power (W)", better="lower"))
FEEDS = ("train_recommendation",)
PLOT_ORDER = 30
MEMORY_ORDER, FUSION_ORDER, HOST_ORDER = 80, 81, 82
MEMORY_PRECEDENCE = 1   # over the conv sweep's memory item: the whole training step was measured


def group_key(rec: dict) -> tuple:
    """(Where, precision, layout): one series of the batch sweep, as derive_train groups its points."""
    p = rec.get("params") or {}
    return where(rec), str(p.get("precision", "")), str(p.get("layout", ""))


# ----------------------------------------------------------------------------------------------
# figure


def _draw_series(ax_t, ax_m, ok: list, label: str, color: str, rec) -> float | None:
    """One series' throughput (graph and call by call) and memory lines, and its recommended batch;
    returns the memory limit of its recommendation."""
    if any(p.images_per_s for p in ok):
        ax_t.plot(*zip(*[(p.batch, p.images_per_s) for p in ok if p.images_per_s]), "o-", color=color, label=label,
                  ms=4)
    eager = [(p.batch, p.eager_images_per_s) for p in ok if p.eager_images_per_s]
    if eager:
        ax_t.plot(*zip(*eager), "--", color=color, label=f"{label}, call by call", lw=1.2, alpha=0.8)
    if any(p.memory_fraction is not None for p in ok):
        ax_m.plot(*zip(*[(p.batch, p.memory_fraction) for p in ok if p.memory_fraction is not None]),
                  "o-", color=color, label=label, ms=4)
    if rec is None:
        return None
    hit = [p for p in ok if p.batch == rec.batch]
    if hit and hit[0].images_per_s:
        ax_t.plot([rec.batch], [hit[0].images_per_s], "*", ms=14, color=color, mec="black",
                  label=f"recommended {label}: {rec.batch}")
    if hit and hit[0].memory_fraction is not None:
        ax_m.plot([rec.batch], [hit[0].memory_fraction], "*", ms=14, color=color, mec="black")
    return rec.limit


def _finish(ax_t, ax_m, ooms: list, limit: float, name: str) -> None:
    for ax in (ax_t, ax_m):
        if ooms:
            ax.scatter([p.batch for p in ooms], [0] * len(ooms), marker="X", s=90, color=plots._OOM_COLOR,
                       zorder=5, label="out of memory", clip_on=False)
        plots._pow2_axis(ax)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("batch size")
    ax_m.axhline(limit, ls="--", color="gray", label=f"{limit:.0%} of memory")
    ax_m.set_ylim(0, 1.05)
    ax_t.set_ylabel("images/s")
    ax_m.set_ylabel("device memory used (fraction)")
    ax_t.set_title(f"{name}: throughput")
    ax_m.set_title(f"{name}: memory")
    plots._legend(ax_t)
    plots._legend(ax_m)


def plot_train(data: ReportData) -> plots.Plot:
    plot = plots.Plot("train", "ResNet-50 training step: throughput and memory against batch size",
                      "Left: images/s of the measured training step per precision and layout (solid: the step as "
                      "one CUDA graph; dashed: the same step issued call by call, as a loop without graphs runs it). "
                      "Right: measured device "
                      "memory in use (fraction of the GPU) with the memory limit (dashed) and the recommended batch "
                      "(star); black crosses: batches that ran out of memory.", order=PLOT_ORDER)
    points = derive_train.train_points(data)
    if not points:
        plot.missing = plots._absent(data, FAMILY, "a batch sweep")
        return plot
    recs = {(r.gpu, r.precision, r.layout): r for r in derive_train.train_recommendations(data)}
    groups = sorted({p.where for p in points})[:plots.MAX_PANELS // 2]
    series = sorted({(p.precision, p.layout) for p in points}, key=lambda s: (plots._prec_key(s[0]), s[1]))
    colors = {s: plots._color(i) for i, s in enumerate(series)}
    with plots.plt.rc_context(plots._STYLE):
        fig, axes = plots._grid(2 * len(groups))
        for gi, g in enumerate(groups):
            ax_t, ax_m = axes[2 * gi], axes[2 * gi + 1]
            limit = 0.9
            for s in series:
                ok = [p for p in points if p.where == g and (p.precision, p.layout) == s and p.status == "ok"]
                got = _draw_series(ax_t, ax_m, ok, f"{s[0]} {s[1]}", colors[s], recs.get((g.first_gpu, s[0], s[1])))
                limit = got if got is not None else limit
            _finish(ax_t, ax_m, [p for p in points if p.where == g and p.oom], limit,
                    f"{gpu_label(g)}: {model_of(data, g)}")
        plot.png = plots._png(fig)
    return plot


def figures(data: ReportData) -> list:
    return [plot_train(data)]


# ----------------------------------------------------------------------------------------------
# checklist


def check_train_memory(data: ReportData, title: str) -> Item | None:
    """The guide's "raise the batch until about 90% of memory is used", judged from the measured
    training step: the largest batch within the limit, and the memory at the recommended batch."""
    recs = derive_train.train_recommendations(data)
    if not recs:
        return None
    statuses, ev, top = [], [], []
    for r in recs:
        if r.memory_batch is None or r.memory_batch_fraction is None:
            statuses.append(WARN if r.batch is None else PASS)
            ev.append(f"{r.label}: {r.reason}")
            continue
        frac = r.memory_fraction if r.memory_fraction is not None else r.memory_batch_fraction
        st = PASS if frac <= r.limit else WARN if frac <= r.limit + (MEMORY_WARN - MEMORY_PASS) else FAIL
        statuses.append(st)
        top.append(r.memory_batch_fraction)
        ev.append(f"{r.label}: batch {r.memory_batch} is the largest within {fmt_pct(r.limit, 0)} of GPU memory "
                  f"({fmt_pct(r.memory_batch_fraction, 0)} measured); recommended batch {r.batch} "
                  f"({fmt_pct(frac, 0)}; {st}): {r.reason}" + (f"; {r.accumulation}" if r.accumulation else "")
                  + (f"; {r.note}" if r.note else ""))
    for p in derive_train.train_points(data):
        if p.oom:
            ev.append(f"{gpu_label(p.where)} {p.precision} {p.layout}: batch {p.batch} out of memory")
    ev.append("source: analysis.train_recommendation (measured ResNet-50 training step)")
    status = worst(statuses)
    if not top:
        return Item("memory", title, status, "no training batch within the memory limit measured", ev)
    limit = max(r.limit for r in recs)
    pts = derive_train.train_points(data)
    plateau = derive_train.plateau_stops(data)
    # Reached per series: a batch of the series ran out of memory, or its next doubling would not fit.
    series = {(r.gpu, r.precision, r.layout): r for r in recs if r.memory_batch_fraction is not None}
    first_oom: dict[tuple, int] = {}  # the smallest batch of each series that did not fit
    for p in pts:
        k = (p.where.first_gpu, p.precision, p.layout)
        if p.oom and (k not in first_oom or p.batch < first_oom[k]):
            first_oom[k] = p.batch

    def full(k, r):  # memory ended the series: a batch did not fit before any plateau stop, or 2x would not
        by_oom = k in first_oom and (k not in plateau or first_oom[k] < plateau[k].batch)
        return by_oom or 2 * r.memory_batch_fraction > r.limit

    reached = all(full(k, r) for k, r in series.items())
    stopped = all(full(k, r) or k in plateau for k, r in series.items())
    for k, stop in sorted(plateau.items(), key=lambda kv: str(kv[0])):
        ev.append(f"GPU {k[0]} {k[1]} {k[2]}: the sweep stopped at its throughput plateau before batch {stop.batch}"
                  + (f" (the step's memory plan: {fmt_pct(stop.plan_fraction, 0)} of GPU memory there)"
                     if stop.plan_fraction is not None else ""))
    if reached:
        summary = (f"the largest training batch within the limit uses {fmt_pct(max(top), 0)} of GPU memory "
                   f"(the guide's \"about 90%\": the next doubling does not stay within it)")
    elif stopped:
        summary = (f"the largest training batch measured uses {fmt_pct(max(top), 0)} of GPU memory: the sweeps "
                   f"stopped at their throughput plateau (a doubling gained under 3%), where a larger batch no "
                   f"longer trains faster; filling memory to the guide's \"about 90%\" would buy nothing here")
    else:
        summary = (f"the largest training batch measured uses {fmt_pct(max(top), 0)} of GPU memory and the sweep "
                   f"stopped there: a doubled batch would still fit within {fmt_pct(limit, 0)}; run the full "
                   f"train sweep (up to out of memory) for the guide's \"about 90%\"")
        status = worst([status, WARN])
    return Item("memory", title, status, summary, ev)


def check_fusion(data: ReportData) -> Item:
    """The guide's "enable XLA compilation" (and torch.compile). On a fused step (its batch norms
    with their ReLU and add fused: details.fusion), what a compiler could still save: the
    memory-bound kinds' time above their byte floor at the measured memory bandwidth. On an
    unfused step, the measured memory-bound share (batch norm, ReLU, add, pooling) is what fusing
    can save at most."""
    title = "XLA / torch.compile: what kernel fusion can save at most"
    h = derive_train.fusion_headroom(data)
    if h is not None:
        return fusion_headroom_item(title, h)
    b = derive_train.elementwise_bound(data)
    if b is None:
        return Item("fusion", title, NOT_MEASURED, "no train record: run the train family")
    share, p = b
    ev = [f"{gpu_label(q.where)} {q.precision} {q.layout} batch {q.batch}: memory-bound share "
          f"{fmt_pct(q.elementwise_share, 0)}" for q in derive_train.train_points(data)
          if q.status == "ok" and q.elementwise_share is not None][-8:]
    summary = (f"at most {fmt_pct(share, 0)} of the step ({gpu_label(p.where)} {p.precision} {p.layout} "
               f"batch {p.batch}: batch norm, ReLU, add and pooling); the convolutions are not fused away")
    return Item("fusion", title, PASS, summary, ev)


def fusion_headroom_item(title: str, h) -> Item:
    names = {"bn": "bn_act", "elementwise": "elementwise", "pool": "pool", "update": "update"}
    ev = [f"{names[k]}: {h.kinds_ms[k]:.2f} ms a step, floor {fmt_bytes(h.floor_bytes[k])}"
          + (f" = {h.floor_ms[k]:.2f} ms at {h.bandwidth_gbps:.0f} GB/s" if h.bandwidth_gbps else "")
          for k in derive_train.MEMORY_BOUND_KINDS]
    if h.bandwidth_gbps:
        ev.append(f"memory bandwidth: {h.bandwidth_gbps:.0f} GB/s, the memory family's best on that GPU ({h.bandwidth_id})")
        how = (f"the memory-bound kinds' time above the time their bytes take at {h.bandwidth_gbps:.0f} GB/s "
               f"(each tensor moved once)")
    else:
        ev.append("no memory-family record for that GPU: the floor's time is unknown, so the bound is the kinds' "
                  "whole time; run the memory family for a tighter one")
        how = "the memory-bound kinds' whole time (no memory-family record for the byte floor's time)"
    ev.append(f"source: the train record's time_<kind>_ms and <kind>_floor_bytes; {h.fused_layers} of its 53 batch "
              f"norms ran with their ReLU / add fused")
    summary = (f"on the fused step ({gpu_label(h.where)} {h.precision} {h.layout} batch {h.batch}), a compiler could "
               f"still save at most {fmt_pct(h.share, 0)} of it ({h.savings_ms:.2f} of {h.step_ms:.2f} ms): {how}; "
               f"the memory-bound kinds take {sum(h.kinds_ms.values()):.2f} ms, the convolutions are not fused away")
    return Item("fusion", title, PASS, summary, ev)


def check_host_bound(data: ReportData) -> Item:
    """Whether a loop that issues the step call by call (frameworks' eager mode) keeps up with the
    GPU: from the train records' graph and call-by-call figures. Warns when the recommended batch
    is host-bound (CUDA graphs, or XLA, would then pay)."""
    title = "Host-bound small batches: CUDA graphs"
    rows = derive_train.host_bound(data)
    if not rows:
        return Item("host", title, NOT_MEASURED, "no train record with the call-by-call step (eager_images_per_s): "
                    "run the train family")
    statuses, ev, parts = [], [], []
    for h in rows:
        name = f"{gpu_label(h.where)} {h.precision} {h.layout}"
        ev.append(f"{name}: call by call / graph images/s " +
                  ", ".join(f"b{b} {fmt_pct(r, 0)}" for b, r in sorted(h.ratios.items())))
        if h.largest is None:
            statuses.append(PASS)
            parts.append(f"{name}: the host keeps up at every measured batch")
            continue
        rec_bound = h.recommended is not None and h.recommended <= h.largest
        statuses.append(WARN if rec_bound else PASS)
        parts.append(f"{name}: host-bound up to batch {h.largest} (call by call {fmt_pct(h.ratios[h.largest], 0)} "
                     f"of the graph step's images/s there)" +
                     (f"; the recommended batch {h.recommended} is among them: use CUDA graphs "
                      f"(torch.cuda.graphs, XLA) or a larger batch" if rec_bound else ""))
    ev.append(f"source: train records, eager_images_per_s / images_per_s; host-bound below {fmt_pct(derive_train.HOST_BOUND, 0)}")
    return Item("host", title, worst(statuses), "; ".join(parts), ev)


def checklist_items(data: ReportData) -> list:
    items = []
    memory = check_train_memory(data, "Memory use at the recommended batch size")
    if memory is not None:   # without a train recommendation the conv sweep's judgment stands
        items.append(placed(memory, MEMORY_ORDER, MEMORY_PRECEDENCE))
    return items + [placed(check_fusion(data), FUSION_ORDER), placed(check_host_bound(data), HOST_ORDER)]
