"""The GPU timeline of a run made with ``nodebench run --monitor`` (the result's ``timeline``).

Three panels sharing the time axis: utilisation (%), SM clock (MHz) and board power (W), one line
per GPU; each case's span (its ``start``/``end`` marks) shaded in turn, with its boundaries as
thin vertical lines and, where there is room, the case's name above the first panel.
"""

from __future__ import annotations

from .errors import ReportError
from .load import Run, is_number
from .plots import Plot, _color, _legend, _png, plt

# (key, axis label) of the panels, top to bottom.
PANELS = (("gpu_util", "GPU utilisation (%)"), ("sm_clock_mhz", "SM clock (MHz)"), ("power_w", "board power (W)"))
MAX_CASE_LABELS = 24  # more cases than this: spans and lines only, the names would overlap


def _series(g: dict, key: str) -> list[float | None] | None:
    vals = g.get(key)
    if not isinstance(vals, list) or len(vals) != len(g.get("t_s", [])):
        return None
    return [v if is_number(v) else None for v in vals]


def timeline_of(run: Run) -> dict | None:
    """The run's timeline when it has a usable one: GPUs with equal-length numeric series."""
    t = run.doc.get("timeline")
    if not isinstance(t, dict) or not isinstance(t.get("gpus"), list):
        return None
    gpus = []
    for g in t["gpus"]:
        if not isinstance(g, dict) or not isinstance(g.get("t_s"), list) or not g["t_s"]:
            continue
        if not all(is_number(x) for x in g["t_s"]):
            continue
        series = {key: _series(g, key) for key, _ in PANELS}
        if any(s is None for s in series.values()):
            continue
        gpus.append({"cuda_index": g.get("cuda_index"), "uuid": g.get("uuid"), "t_s": g["t_s"], **series})
    if not gpus:
        return None
    marks = [m for m in t.get("marks", []) if isinstance(m, dict) and is_number(m.get("t_s"))
             and isinstance(m.get("text"), str)]
    return {"interval_s": t.get("interval_s"), "gpus": gpus, "marks": sorted(marks, key=lambda m: m["t_s"])}


def case_spans(marks: list[dict]) -> list[tuple[float, float, str]]:
    """(start, end, case id) of each case from its ``start <id>`` and ``end <id>`` marks, in time
    order; a case without an end mark (an interrupted run) ends at its start."""
    open_: dict[str, list[float]] = {}
    spans = []
    for m in marks:
        what, _, case = m["text"].partition(" ")
        if what == "start":
            open_.setdefault(case, []).append(m["t_s"])
        elif what == "end" and open_.get(case):
            spans.append((open_[case].pop(0), m["t_s"], case))
    for case, starts in open_.items():
        spans += [(s, s, case) for s in starts]
    return sorted(spans)


def _gpu_label(g: dict) -> str:
    label = f"GPU {g['cuda_index']}"
    if isinstance(g.get("uuid"), str) and g["uuid"]:
        label += f" ({g['uuid'][:12]})"
    return label


def plot_timeline(run: Run) -> Plot | None:
    """The timeline plot of one run, or None when the run has no timeline."""
    t = timeline_of(run)
    if t is None:
        return None
    spans = case_spans(t["marks"])
    interval = t["interval_s"]
    caption = ("GPU utilisation, SM clock and board power against time during the run (sampled through NVML"
               + (f" every {interval:g} s" if is_number(interval) else "")
               + "; long runs are averaged to at most 600 points). Shaded: the span of each case, alternating; "
               "thin lines: case boundaries.")
    plot = Plot("timeline", f"GPU timeline ({run.run_id[:8]})", caption)
    fig, axes = plt.subplots(len(PANELS), 1, figsize=(11, 7.5), sharex=True, layout="constrained")
    for k, (ax, (key, label)) in enumerate(zip(axes, PANELS)):
        for i, g in enumerate(t["gpus"]):
            xs = [x for x, v in zip(g["t_s"], g[key]) if v is not None]
            ys = [v for v in g[key] if v is not None]
            if ys:
                ax.plot(xs, ys, color=_color(i), lw=1.2, marker="." if len(xs) < 60 else None, label=_gpu_label(g))
        for j, (a, b, _case) in enumerate(spans):
            if b > a and j % 2 == 0:
                ax.axvspan(a, b, color="0.85", alpha=0.5, lw=0, zorder=0)
            ax.axvline(a, color="0.55", lw=0.6, zorder=0)
        ax.set_ylabel(label)
        if key == "gpu_util":
            ax.set_ylim(0, 105)
        else:
            ax.set_ylim(bottom=0)
        if k == 0:
            _legend(ax)
    if spans and len(spans) <= MAX_CASE_LABELS:
        top = axes[0]
        for a, b, case in spans:
            top.annotate(case.split("/", 1)[-1], xy=((a + b) / 2, 1.0), xycoords=("data", "axes fraction"),
                         xytext=(0, 3), textcoords="offset points", rotation=60, ha="left", va="bottom", fontsize=7)
    axes[-1].set_xlabel("time since the run's cases began (s)")
    plot.png = _png(fig)
    return plot


def timeline_plots(runs: list[Run]) -> list[Plot]:
    """One timeline plot per run that has a timeline, oldest run first."""
    out = []
    for run in sorted(runs, key=lambda r: r.started_at):
        p = plot_timeline(run)
        if p is not None:
            if len(runs) > 1:
                p.key = f"timeline-{run.run_id[:8]}"
            out.append(p)
    return out


def write_timeline_png(run: Run, out_path: str) -> Plot:
    """``nodebench-report timeline FILE --out PNG``."""
    plot = plot_timeline(run)
    if plot is None:
        raise ReportError(f"{run.path}: no timeline in this result (run it with 'nodebench run --monitor')")
    try:
        with open(out_path, "wb") as fh:
            fh.write(plot.png)
    except OSError as exc:
        raise ReportError(f"{out_path}: cannot write: {exc.strerror or exc}") from None
    return plot
