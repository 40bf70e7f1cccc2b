"""Small formatting helpers shared by the text, Markdown and HTML outputs."""

from __future__ import annotations

import math


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds == 0:
        return "0 s"
    if seconds < 1e-6:
        return f"{seconds * 1e9:.3g} ns"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.4g} us"
    if seconds < 1:
        return f"{seconds * 1e3:.4g} ms"
    return f"{seconds:.4g} s"


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    n = float(n)
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            value = n / size
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n:.0f} B"


def fmt_bytes_short(n: float) -> str:
    """Axis tick labels: 4K, 1M, 256M, 1G."""
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size:
            value = n / size
            return f"{value:.0f}{unit}" if abs(value - round(value)) < 1e-9 else f"{value:.1f}{unit}"
    return f"{n:.0f}"


def fmt_num(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return str(value)
    if value == 0:
        return "0"
    if abs(value) >= 10 ** digits:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def fmt_pct(fraction: float | None, digits: int = 1) -> str:
    if fraction is None:
        return "-"
    return f"{fraction * 100:.{digits}f}%"


def fmt_p(p: float | None) -> str:
    if p is None:
        return "-"
    if p < 1e-4:
        return f"{p:.1e}"
    return f"{p:.4f}"


def text_table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = ["  ".join(h.ljust(widths[i]) for i, h in enumerate(headers)).rstrip(),
             "  ".join("-" * w for w in widths)]
    for row in rows:
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    return "\n".join(lines)


def md_escape(text: str) -> str:
    """Text for Markdown: HTML-special characters as entities (a Markdown renderer passes raw HTML
    through, so a name like `<img onerror=...>` must not reach it as markup), `|` escaped for
    tables, backticks as entities (no code span can start), one line."""
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("`", "&#96;").replace("|", "\\|").replace("\r", " ").replace("\n", " "))


def md_table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(md_escape(h) for h in headers) + " |",
             "|" + "|".join("---" for _ in headers) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(md_escape(c) for c in row) + " |")
    return "\n".join(lines)
