"""The hostlink family in the report: bandwidth against transfer size per GPU (totals in a panel of
their own), and the checklist items host-to-device against the link, and pinned against pageable
memory (the data pipeline's headroom, against the training rate another family measured)."""

from __future__ import annotations

from collections import defaultdict

from .. import families, plots
from ..checklist import FAIL, NOT_MEASURED, PASS, WARN, Item, placed, worst
from ..conventions import is_number
from ..load import ReportData
from ..records import Where, gpu_label, max_link_gbps, model_of, num, where
from ..util import fmt_bytes, fmt_bytes_short, fmt_num
from ..metrics import declare, metric
from .resnet50 import IMAGE_BYTES

FAMILY = "hostlink"
PRIMARY = ("gbps",)
METRICS = declare(metric("gbps", "GB/s"), "h2d_gbps", "d2h_gbps", "sum_gbps", "gpu*_gbps", "link_gbps", "link_pct")
PLOT_ORDER, H2D_ORDER, PAGEABLE_ORDER = 40, 30, 31

# thresholds (documented in README.md)
H2D_PASS_PCT, H2D_WARN_PCT = 75.0, 50.0
PAGEABLE_RATIO_PASS = 0.5
HEADROOM_PASS = 2.0


def group_key(rec: dict) -> tuple:
    """(Where, direction, memory kind): one curve; the SM-copy engine is a kind of its own ("pinned/sm")."""
    p = rec.get("params") or {}
    engine = p.get("engine", "ce")
    memory = str(p.get("memory", "?")) + ("" if engine in ("ce", None) else f"/{engine}")
    return where(rec), str(p.get("direction", "?")), memory


def hostlink_curves(data: ReportData) -> dict[Where, dict[tuple, list[tuple[float, float]]]]:
    """{Where: {(direction, memory): [(bytes, gbps), ...]}}"""
    out: dict = defaultdict(lambda: defaultdict(list))
    for rec in data.family(FAMILY):
        p = rec["params"]
        gbps = num(rec["metrics"].get("gbps"))
        if gbps is None or not is_number(p.get("bytes")):
            continue
        w, direction, memory = group_key(rec)
        out[w][(direction, memory)].append((float(p["bytes"]), gbps))
    for curves in out.values():
        for pts in curves.values():
            pts.sort()
    return out


def link_gbps(data: ReportData, w: Where) -> float | None:
    """The link's theoretical one-direction bandwidth: from the records, else the GPU's maximum link."""
    best = None
    for rec in data.family(FAMILY):
        if where(rec) == w:
            v = num(rec["metrics"].get("link_gbps"))
            if v:
                best = max(best or 0, v)
    if best:
        return best
    if w.first_gpu is not None and w.rank <= 0:
        return max_link_gbps(data.gpu(w.first_gpu))
    return None


def hostlink_at_largest(data: ReportData, w: Where, direction: str, memory: str) -> tuple[float, float, dict] | None:
    """(bytes, gbps, record) of the largest transfer of that direction and memory kind (copy engine)."""
    best = None
    for rec in data.family(FAMILY):
        p = rec["params"]
        if where(rec) != w or p.get("direction") != direction or p.get("memory") != memory:
            continue
        if p.get("engine", "ce") not in ("ce", None):
            continue
        gbps = num(rec["metrics"].get("gbps"))
        if gbps is None or not is_number(p.get("bytes")):
            continue
        if best is None or p["bytes"] > best[0]:
            best = (float(p["bytes"]), gbps, rec)
    return best


# ----------------------------------------------------------------------------------------------
# figure

_TOTALS = ("bidir", "h2d_all_gpus", "d2h_all_gpus")
# single-size series (pageable, SM copy, write-combined): markers of their own, never lines
_POINT_MARKERS = {"pageable": "v", "pinned/sm": "D", "write_combined": "*"}
_POINT_COLORS = {"pageable": "C4", "pinned/sm": "C2", "write_combined": "C6"}
_DIR_COLORS = {"h2d": "C0", "d2h": "C1"}


def _is_total(direction: str, w) -> bool:
    return direction in _TOTALS or direction.endswith("_all_gpus") or len(w.gpus) > 1


def _draw_gpu(ax, data: ReportData, g: Where, series: dict) -> None:
    for (direction, memory), pts in sorted(series.items()):
        base = direction.split("_")[0]
        color = _DIR_COLORS.get(base, "C7")
        xs, ys = [b for b, _ in pts], [v for _, v in pts]
        if len(pts) >= 2:
            ax.plot(xs, ys, "-" if memory == "pinned" else "--", marker="o", ms=3, color=color,
                    label=f"{direction} {memory}")
        else:
            pc = _POINT_COLORS.get(memory, "C5")
            filled = base == "h2d"
            ax.plot(xs, ys, ls="none", marker=_POINT_MARKERS.get(memory, "P"), ms=8,
                    markerfacecolor=pc if filled else "white", markeredgecolor=pc, markeredgewidth=1.5,
                    label=f"{direction} {memory} ({fmt_bytes_short(xs[0])} only)", zorder=4)
    link = link_gbps(data, g)
    if link:
        ax.axhline(link, color="black", ls=":", lw=1.2, label=f"link {link:.1f} GB/s one way")
    plots._bytes_axis(ax)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("transfer size (bytes)")
    ax.set_ylabel("bandwidth (GB/s)")
    ax.set_title(f"{gpu_label(g)}: {model_of(data, g)}")
    plots._legend(ax)


def _draw_totals(ax, totals: list, link: float | None) -> None:
    totals.sort()
    ys = range(len(totals))
    ax.barh(list(ys), [t[2] for t in totals], color="C9", height=0.55)
    for y, t in zip(ys, totals):
        ax.text(t[2], y, f" {t[2]:.1f}", va="center", fontsize=8)
    ax.set_yticks(list(ys))
    ax.set_yticklabels([t[0] for t in totals], fontsize=7)
    ax.invert_yaxis()
    if link:
        for k, ls in ((1, ":"), (2, "--")):
            ax.axvline(link * k, color="black", ls=ls, lw=1.0, label=f"{k} link{'s' if k > 1 else ''}: {link * k:.0f} GB/s")
    ax.set_xlabel("total bandwidth (GB/s)")
    ax.set_title("totals: both directions at once, all GPUs at once")
    ax.set_xlim(left=0)
    plots._legend(ax)


def plot_hostlink(data: ReportData) -> plots.Plot:
    plot = plots.Plot("hostlink", "Host link bandwidth against transfer size",
                      "Per GPU: copy bandwidth per direction (colour: blue host-to-device, orange device-to-host) "
                      "and host memory kind; transfer sizes measured once are markers (triangle pageable, diamond SM "
                      "copy, star write-combined; filled h2d, hollow d2h); dotted black: the link's theoretical "
                      "one-direction bandwidth. Totals (both directions at once, all GPUs at once) are in their own "
                      "panel, against one and several links.", order=PLOT_ORDER)
    curves = hostlink_curves(data)
    if not curves:
        plot.missing = plots._absent(data, FAMILY, "this plot")
        return plot
    per_gpu: dict = defaultdict(dict)
    totals = []  # (label, bytes, gbps, links it may use)
    for w, series in curves.items():
        for (direction, memory), pts in series.items():
            if _is_total(direction, w):
                b, v = pts[-1]
                n_links = (2 if direction == "bidir" else 1) * max(1, len(w.gpus))
                what = "both ways" if direction == "bidir" else direction.replace("_all_gpus", " all GPUs")
                totals.append((f"{gpu_label(w)} {what}\n{memory}, {fmt_bytes_short(b)}", b, v, n_links))
            else:
                per_gpu[w][(direction, memory)] = pts
    groups = sorted(per_gpu)[:plots.MAX_PANELS]
    with plots.plt.rc_context(plots._STYLE):
        fig, axes = plots._grid(len(groups) + (1 if totals else 0))
        for ax, g in zip(axes, groups):
            _draw_gpu(ax, data, g, per_gpu[g])
        if totals:
            link = next((link_gbps(data, g) for g in sorted(curves) if link_gbps(data, g)), None)
            _draw_totals(axes[len(groups)], totals, link)
        plot.png = plots._png(fig)
    return plot


def figures(data: ReportData) -> list:
    return [plot_hostlink(data)]


# ----------------------------------------------------------------------------------------------
# checklist


def check_h2d(data: ReportData) -> Item:
    title = "Host-to-device bandwidth against the link"
    if not data.has_family(FAMILY):
        return Item("h2d", title, NOT_MEASURED, "no hostlink records in these results")
    gpus = sorted({where(r) for r in data.family(FAMILY)})
    statuses, ev = [], []
    for gk in gpus:
        hit = hostlink_at_largest(data, gk, "h2d", "pinned")
        if hit is None:
            continue
        size, gbps, rec = hit
        link = link_gbps(data, gk)
        pct = rec["metrics"].get("link_pct")
        if not is_number(pct):
            pct = gbps / link * 100 if link else None
        if pct is None:
            ev.append(f"{gpu_label(gk)}: {gbps:.1f} GB/s pinned H2D at {fmt_bytes(size)}; link speed unknown")
            continue
        st = PASS if pct >= H2D_PASS_PCT else WARN if pct >= H2D_WARN_PCT else FAIL
        statuses.append(st)
        ev.append(f"{gpu_label(gk)}: {gbps:.1f} GB/s pinned H2D at {fmt_bytes(size)} = {pct:.0f}% of the "
                  f"link's {fmt_num(link)} GB/s ({st})")
    if not statuses:
        return Item("h2d", title, NOT_MEASURED, "no successful pinned host-to-device record with a known link", ev)
    status = worst(statuses)
    summary = (f"pinned H2D reaches >= {H2D_PASS_PCT:.0f}% of the link on every GPU" if status == PASS else
               f"pinned H2D below {H2D_PASS_PCT:.0f}% of the link on some GPU (warn < {H2D_PASS_PCT:.0f}%, "
               f"fail < {H2D_WARN_PCT:.0f}%): check NUMA placement, IOMMU, link state")
    return Item("h2d", title, status, summary, ev)


def _headroom(pin: float, pag: float, need: tuple[float, str]) -> tuple[str, str]:
    """(status, text) of the link's headroom over what the GPU's training consumes."""
    ips, what = need
    need_gbps = ips * IMAGE_BYTES / 1e9
    h_pin, h_pag = pin / need_gbps, pag / need_gbps
    text = (f"; ResNet-50 training ({what}, {ips:,.0f} images/s of 224x224 FP32 input) needs "
            f"{need_gbps:.2f} GB/s: headroom {h_pin:.1f}x pinned, {h_pag:.1f}x pageable")
    if h_pag >= HEADROOM_PASS:
        return PASS, text
    if h_pin >= HEADROOM_PASS:
        return WARN, text + " - use pinned buffers in the data loader (pin_memory)"
    if h_pin >= 1.0:
        return WARN, text + " - little headroom even pinned: send uint8 images and normalise on the GPU"
    return FAIL, text + " - the host link cannot feed the GPU"


def check_pinned_pageable(data: ReportData) -> Item:
    title = "Pinned versus pageable host memory (data-pipeline headroom)"
    if not data.has_family(FAMILY):
        return Item("pinned_pageable", title, NOT_MEASURED, "no hostlink records in these results")
    statuses, ev = [], []
    for gk in sorted({where(r) for r in data.family(FAMILY)}):
        pinned = hostlink_at_largest(data, gk, "h2d", "pinned")
        pageable = hostlink_at_largest(data, gk, "h2d", "pageable")
        if pinned is None or pageable is None:
            continue
        pin, pag = pinned[1], pageable[1]
        ratio = pag / pin if pin else 0.0
        line = (f"{gpu_label(gk)}: H2D pinned {pin:.1f} GB/s, pageable {pag:.1f} GB/s "
                f"(pageable = {ratio * 100:.0f}% of pinned)")
        # what this GPU's training consumes, from the family that measured it
        need = families.ask("training_images_per_s", data, gk.first_gpu) if gk.first_gpu is not None else None
        if need:
            st, more = _headroom(pin, pag, need)
            line += more
        else:
            st = PASS if ratio >= PAGEABLE_RATIO_PASS else WARN
            if st == WARN:
                line += " - pageable copies lose much bandwidth: use pinned buffers for input pipelines"
        statuses.append(st)
        ev.append(line + f" ({st})")
    if not statuses:
        return Item("pinned_pageable", title, NOT_MEASURED,
                    "pinned and pageable host-to-device results are not both present", ev)
    status = worst(statuses)
    summary = {PASS: "enough headroom for the input pipeline, even from pageable memory",
               WARN: "input pipelines should use pinned memory",
               FAIL: "the host link is slower than the GPU consumes input"}[status]
    return Item("pinned_pageable", title, status, summary, ev)


def checklist_items(data: ReportData) -> list:
    return [placed(check_h2d(data), H2D_ORDER), placed(check_pinned_pageable(data), PAGEABLE_ORDER)]
