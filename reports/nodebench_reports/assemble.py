"""Where the report's core consumes what the families contribute (``families/__init__.py`` defines the
contributions): every figure and every checklist item, the core's own with the families', in page order.
The core's modules (``plots.py``, ``checklist.py``) never import a family; the family modules import
them, and this module imports both, so no import runs in a circle.
"""

from __future__ import annotations

import warnings

import numpy as np

from . import families
from .checklist import ORDER, Item, check_clocks, check_compute_capability, check_mixed_precision, check_pcie, check_run, placed
from .load import ReportData
from .plots import Plot, plot_speedup

CORE_ITEMS = (check_compute_capability, check_pcie, check_mixed_precision, check_clocks, check_run)
CORE_FIGURES = (plot_speedup,)


def render_all(data: ReportData) -> list[Plot]:
    """The core's figures and every family's own, in page order (``Plot.order``)."""
    # odd values (huge, zero on a log axis) must not spill library warnings into the command's output
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        figures = [fn(data) for fn in CORE_FIGURES] + families.figures(data)
    return sorted(figures, key=lambda p: p.order)


def build_checklist(data: ReportData) -> list[Item]:
    """The core's items and every family's, in checklist order; where families judge one item, the
    one of higher precedence."""
    chosen: dict[str, Item] = {}
    own = [placed(i, ORDER[i.key]) for i in (fn(data) for fn in CORE_ITEMS)]
    for item in own + families.checklist_items(data):
        if item.key not in chosen or item.precedence > chosen[item.key].precedence:
            chosen[item.key] = item
    return sorted(chosen.values(), key=lambda i: i.order)
