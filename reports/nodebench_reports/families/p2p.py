"""The p2p family in the report: the peer-to-peer bandwidth matrices (one-way, bidirectional)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from .. import plots
from ..conventions import is_number
from ..load import ReportData
from ..records import num
from ..metrics import declare, metric

FAMILY = "p2p"
PRIMARY = ("gbps",)
METRICS = declare(metric("gbps", "GB/s"), "fwd_gbps", "rev_gbps", "sum_gbps", "wall_gbps", metric("latency_us", "latency (us)"),
                  "p90_latency_us")
FEEDS = ("p2p",)
PLOT_ORDER = 50


def group_key(rec: dict) -> tuple:
    """(test, mode): one matrix; its cells are the records' (src, dst) pairs."""
    p = rec.get("params") or {}
    return str(p.get("test", "bandwidth")), str(p.get("mode", "one_way"))


def p2p_matrices(data: ReportData) -> dict[str, dict[tuple[int, int], float]]:
    """{mode: {(src, dst): gbps}}, peer access enabled preferred, the largest transfer per pair."""
    chosen: dict[tuple, tuple] = {}
    for rec in data.family(FAMILY):
        p = rec["params"]
        gbps = num(rec["metrics"].get("gbps"))
        if gbps is None or not isinstance(p.get("src"), int) or not isinstance(p.get("dst"), int):
            continue
        test, mode = group_key(rec)
        if test != "bandwidth":
            continue
        enabled = p.get("peer", "enabled") == "enabled"
        engine_ce = p.get("engine", "ce") == "ce"
        size = float(p["bytes"]) if is_number(p.get("bytes")) else 0.0
        k = (mode, p["src"], p["dst"])
        preference = (enabled, engine_ce, size)
        if k not in chosen or preference > chosen[k][0]:
            chosen[k] = (preference, gbps)
    out: dict[str, dict] = defaultdict(dict)
    for (mode, src, dst), (_, gbps) in chosen.items():
        out[mode][(src, dst)] = gbps
    for mode, cells in out.items():   # bidir is measured once per unordered pair: both cells show it
        if mode == "bidir":
            for (src, dst), gbps in list(cells.items()):
                cells.setdefault((dst, src), gbps)
    return dict(out)


def _draw(fig, ax, mode: str, cells: dict, n: int) -> None:
    grid = np.full((n, n), np.nan)
    for (s, d), v in cells.items():
        grid[s, d] = v
    ax.grid(False)
    im = ax.imshow(grid, cmap="viridis", vmin=0)
    vmax = np.nanmax(grid) if np.any(~np.isnan(grid)) else 1.0
    if n <= 10:
        for s in range(n):
            for d in range(n):
                if not np.isnan(grid[s, d]):
                    ax.text(d, s, f"{grid[s, d]:.0f}", ha="center", va="center", fontsize=7,
                            color="white" if grid[s, d] < 0.6 * vmax else "black")
    ax.set_xticks(range(n))
    ax.set_yticks(range(n))
    ax.set_xlabel("destination GPU")
    ax.set_ylabel("source GPU")
    ax.set_title(mode.replace("_", "-"))
    fig.colorbar(im, ax=ax, label="GB/s", shrink=0.85)


def plot_p2p(data: ReportData) -> plots.Plot:
    plot = plots.Plot("p2p", "Peer-to-peer bandwidth",
                      "GB/s from source GPU (row) to destination GPU (column), the largest transfer measured.",
                      order=PLOT_ORDER)
    mats = p2p_matrices(data)
    if not mats:
        plot.missing = plots._absent(data, FAMILY, "this plot")
        return plot
    modes = sorted(mats, key=lambda m: (m != "one_way", m))
    n = 1 + max(max(s, d) for m in mats.values() for s, d in m)
    n = max(n, len(data.gpus))
    with plots.plt.rc_context(plots._STYLE):
        fig, axes = plots._grid(len(modes), w=1.0 + 0.55 * max(n, 4) + 1.2, h=0.55 * max(n, 4) + 1.0)
        for ax, mode in zip(axes, modes):
            _draw(fig, ax, mode, mats[mode], n)
        plot.png = plots._png(fig)
    return plot


def figures(data: ReportData) -> list:
    return [plot_p2p(data)]
