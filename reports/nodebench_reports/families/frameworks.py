"""The frameworks' own training rate in the report: the records of `nodebench frameworks --bench`
(a synthetic ResNet-50 run in PyTorch or TensorFlow per mode, docs/FRAMEWORKS.md), given with
``html --frameworks FILE``, beside nodebench's train step of the same precision, layout and batch
(the train family's records in the result files of the report) and, for a data-parallel mode,
beside ``nodebench advise``'s bound for that GPU count and batch (``html --advise``).

The frameworks check is a check, not a benchmark family: its records never sit in a result file's
``records``. This module is named as a family module so that the report finds it with the others
(``FAMILY`` is only its name here; no result-file record carries it). One figure (images/s per
mode, with nodebench's step and advise's bound marked) and one checklist item (each mode's ratio to
nodebench's step) come from :func:`rows`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import plots
from ..checklist import NOT_MEASURED, PASS, WARN, Item, placed
from ..conventions import is_number
from ..load import ReportData
from ..metrics import declare, metric

FAMILY = "frameworks"
# The bench records' own figures (`nodebench frameworks --bench`, docs/SCHEMA.md "Framework reports").
METRICS = declare(metric("images_per_s", "images/s"), "step_time_ms", "warmup_s")
PLOT_ORDER, CHECK_ORDER = 32, 84   # after the train family's figure (30) and items (80..82)
TITLES = {"torch": "PyTorch", "tensorflow": "TensorFlow"}
MODES = {"default": "default settings", "amp": "mixed precision", "fast": "fast settings"}


@dataclass
class Row:
    framework: str          # "PyTorch 2.9.0"
    mode: str               # default, amp, fast
    gpus: int
    batch: int
    precision: str
    layout: str
    compiled: bool
    images_per_s: float | None  # None: the mode failed (reason)
    reason: str = ""
    step_images_per_s: float | None = None  # nodebench's train step, same precision, layout and batch, one GPU
    step_id: str = ""
    bound_images_per_s: float | None = None  # advise's data-parallel bound for gpus and batch
    bound_label: str = ""

    @property
    def label(self) -> str:
        what = f"{self.precision}/{self.layout}{', compiled' if self.compiled else ''}"
        return f"{self.framework} {MODES.get(self.mode, self.mode)} ({what}), {self.gpus} GPU{'s' if self.gpus > 1 else ''}"

    def step_ratio(self) -> float | None:
        """The mode's images/s per GPU over nodebench's one-GPU step."""
        if self.images_per_s is None or not self.step_images_per_s:
            return None
        return self.images_per_s / self.gpus / self.step_images_per_s

    def bound_ratio(self) -> float | None:
        if self.images_per_s is None or not self.bound_images_per_s:
            return None
        return self.images_per_s / self.bound_images_per_s


def _train_step(data: ReportData, precision: str, layout: str, batch: int) -> tuple[float, str] | None:
    """nodebench's train step of that precision, layout and batch (the best GPU's where several ran it)."""
    best = None
    for r in data.family("train"):
        p, m = r.get("params") or {}, r.get("metrics") or {}
        if (str(p.get("precision")) == precision and str(p.get("layout")) == layout and p.get("batch") == batch
                and is_number(m.get("images_per_s")) and (best is None or m["images_per_s"] > best[0])):
            best = (float(m["images_per_s"]), r.get("id", "train"))
    return best


def _bound(data: ReportData, gpus: int, batch: int, precision: str, layout: str) -> tuple[float, str] | None:
    """advise's predicted images/s for that GPU count and per-GPU batch (no accumulation), where given."""
    advice = data.advice or {}
    for r in advice.get("rows") or []:
        if (r.get("gpus") == gpus and r.get("batch") == batch and r.get("accumulation", 1) == 1
                and r.get("precision", precision) == precision and r.get("layout", layout) == layout
                and is_number(r.get("images_per_s"))):
            return float(r["images_per_s"]), f"advise ({advice.get('label', 'predicted')})"
    return None


def rows(data: ReportData) -> list[Row]:
    """One row per bench record of the frameworks report, in its order, with its comparisons."""
    doc = getattr(data, "frameworks", None) or {}
    out = []
    for r in doc.get("records") or []:
        p, m = r.get("params") or {}, r.get("metrics") or {}
        fw = TITLES.get(str(r.get("framework")), str(r.get("framework")))
        if r.get("framework_version"):
            fw += f" {r['framework_version']}"
        ok = r.get("status") == "ok" and is_number(m.get("images_per_s"))
        row = Row(fw, str(r.get("mode", "?")), int(p.get("gpus", 1)), int(p.get("batch", 0)), str(p.get("precision", "?")),
                  str(p.get("layout", "?")), bool(p.get("compiled")), float(m["images_per_s"]) if ok else None,
                  "" if ok else str(r.get("reason") or r.get("status")))
        step = _train_step(data, row.precision, row.layout, row.batch)
        if step:
            row.step_images_per_s, row.step_id = step
        if row.gpus > 1:
            bound = _bound(data, row.gpus, row.batch, row.precision, row.layout)
            if bound:
                row.bound_images_per_s, row.bound_label = bound
        out.append(row)
    return out


def plot_frameworks(data: ReportData) -> plots.Plot:
    plot = plots.Plot("frameworks", "The frameworks' own ResNet-50 training beside nodebench's step",
                      "images/s of a synthetic ResNet-50 training run per framework, mode and GPU count "
                      "(nodebench frameworks --bench); black diamond: nodebench's train step of the same precision, "
                      "layout and batch, times the GPU count; red cross: nodebench advise's data-parallel bound.",
                      order=PLOT_ORDER)
    rs = rows(data)
    ok = [r for r in rs if r.images_per_s is not None]
    if not ok:
        plot.missing = "no framework bench record with a rate" if rs else "no framework bench records"
        return plot
    with plots.plt.rc_context(plots._STYLE):
        fig, ax = plots.plt.subplots(figsize=(9, 0.45 * len(ok) + 1.2))
        ys = list(range(len(ok)))[::-1]
        ax.barh(ys, [r.images_per_s for r in ok], color="C0", label="framework")
        steps = [(y, r.step_images_per_s * r.gpus) for y, r in zip(ys, ok) if r.step_images_per_s]
        if steps:
            ax.plot(*zip(*[(v, y) for y, v in steps]), "D", color="black", label="nodebench's step")
        bounds = [(y, r.bound_images_per_s) for y, r in zip(ys, ok) if r.bound_images_per_s]
        if bounds:
            ax.plot(*zip(*[(v, y) for y, v in bounds]), "x", color="C3", ms=9, mew=2, label="advise's bound")
        ax.set_yticks(ys)
        ax.set_yticklabels([r.label for r in ok])
        ax.set_xlabel("images/s")
        ax.set_xlim(left=0)
        plots._legend(ax)
        plot.png = plots._png(fig)
    return plot


def check_frameworks(data: ReportData) -> Item:
    title = "The frameworks' own training rate beside nodebench's step (nodebench frameworks --bench)"
    rs = rows(data)
    if not rs:
        return Item("frameworks", title, NOT_MEASURED, "no framework bench records")
    ev = []
    for r in rs:
        if r.images_per_s is None:
            ev.append(f"{r.label}: no rate ({r.reason})")
            continue
        text = f"{r.label}: {r.images_per_s:,.0f} images/s"
        x = r.step_ratio()
        text += (f", {x:.2f}x nodebench's step per GPU ({r.step_id}: {r.step_images_per_s:,.0f} images/s)" if x is not None
                 else f", no nodebench step of {r.precision}/{r.layout} at batch {r.batch} in the results")
        b = r.bound_ratio()
        if b is not None:
            text += f", {b:.2f}x {r.bound_label}'s bound of {r.bound_images_per_s:,.0f} images/s"
        ev.append(text)
    compared = [(r, r.step_ratio()) for r in rs if r.step_ratio() is not None and r.gpus == 1]
    failed = [r for r in rs if r.images_per_s is None]
    if compared:
        summary = "; ".join(f"{r.framework.split(' ')[0]} {MODES.get(r.mode, r.mode)} reach {x:.2f}x nodebench's step"
                            for r, x in compared)
    else:
        summary = "measured, but no nodebench step of the same precision, layout and batch to compare with"
    if failed:
        summary += f"; {len(failed)} mode(s) gave no rate"
    return Item("frameworks", title, WARN if failed else PASS, summary, ev)


def figures(data: ReportData) -> list:
    return [plot_frameworks(data)] if getattr(data, "frameworks", None) else []


def checklist_items(data: ReportData) -> list:
    return [placed(check_frameworks(data), CHECK_ORDER)] if getattr(data, "frameworks", None) else []
