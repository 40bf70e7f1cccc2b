"""``nodebench-report html``: one self-contained HTML page plus a Markdown summary."""

from __future__ import annotations

import base64
import json
import datetime as _dt
import os
from collections import Counter
from html import escape

from . import __version__
from .assemble import build_checklist, render_all
from .checklist import FAIL, NOT_MEASURED, PASS, WARN, Item
from .errors import ReportError
from .formats import formats, register
from .load import ReportData, is_number
from .plots import Plot
from .records import gpu_label, where
from .families import first_screen  # the first screen: verdicts, capacity, scaling (several families' records)
from .timeline import timeline_plots
from .util import fmt_bytes, fmt_num, fmt_time, md_escape, md_table

HTML_NAME = "report.html"
MD_NAME = "summary.md"

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;color:#1d2430;
 background:#f6f7f9;line-height:1.4}
main{max-width:1180px;margin:0 auto;padding:18px 28px 40px}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin:1.6em 0 .5em;border-bottom:2px solid #dde1e7;
 padding-bottom:.2em}h3{font-size:1em;margin:1em 0 .3em}
.sub{color:#5b6573;font-size:.9em}
table{border-collapse:collapse;background:#fff;font-size:.86em;margin:.3em 0 .8em}
th,td{border:1px solid #dde1e7;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;min-width:84px;text-align:center;padding:2px 8px;border-radius:10px;font-weight:600;
 font-size:.85em;white-space:nowrap}
.pass{background:#d8f3dc;color:#1b5e20}.warn{background:#fff3cd;color:#7a5600}.fail{background:#f8d7da;color:#8b1a1a}
.nm{background:#e7e9ee;color:#4a5260}
.counts span{margin-right:8px}
.checklist td.ev{font-size:.92em}.checklist ul{margin:.3em 0 0 1em;padding:0;color:#3b4452}
figure{background:#fff;border:1px solid #dde1e7;border-radius:6px;margin:0 0 16px;padding:10px 12px}
figure img{max-width:100%;height:auto;display:block}
figcaption{color:#5b6573;font-size:.85em;margin-top:4px}
.missing{background:#fff;border:1px dashed #b9c0ca;border-radius:6px;padding:10px 12px;margin:0 0 16px;color:#5b6573}
details{margin:.5em 0}summary{cursor:pointer;font-weight:600}
footer{color:#8a93a0;font-size:.8em;margin-top:30px}
""" + first_screen.CSS

_BADGE = {PASS: "pass", WARN: "warn", FAIL: "fail", NOT_MEASURED: "nm"}


def _badge(status: str) -> str:
    return f'<span class="badge {_BADGE[status]}">{escape(status)}</span>'


def _kv_table(rows: list[tuple[str, object]]) -> str:
    body = "".join(f"<tr><th>{escape(k)}</th><td>{escape(_s(v))}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"


def _s(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (list, tuple)):
        return ", ".join(_s(x) for x in v) if v else "-"
    return str(v)


def _table(headers: list[str], rows: list[list[str]], num_cols: tuple[int, ...] = ()) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(f'<td class="num">{escape(c)}</td>' if i in num_cols else f"<td>{escape(c)}</td>"
                        for i, c in enumerate(row))
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


# ----------------------------------------------------------------------------------------------
# environment


def environment_sections(data: ReportData) -> list[tuple[str, list[tuple[str, object]]]]:
    env = data.environment
    host, sw = env["host"], env["software"]
    nb = data.latest.doc["nodebench"]
    numa = host.get("numa_nodes")
    return [
        ("Host", [
            ("hostname", host.get("hostname")), ("OS", host.get("os")), ("kernel", host.get("kernel")),
            ("CPU", host.get("cpu_model")), ("CPU count", host.get("cpu_count")),
            ("NUMA nodes", len(numa) if isinstance(numa, list) else None),
            ("memory", fmt_bytes(host["memory_bytes"]) if is_number(host.get("memory_bytes")) else None),
        ]),
        ("Software", [
            ("driver", sw.get("driver_version")), ("CUDA driver API", sw.get("cuda_driver_version")),
            ("CUDA runtime", sw.get("cuda_runtime_version")), ("cuBLAS", sw.get("cublas_version")),
            ("cuDNN", sw.get("cudnn_version")), ("NCCL", sw.get("nccl_version")),
            ("NVML", "available" if env["nvml"]["available"] else f"not available: {env['nvml'].get('error')}"),
            ("CUDA_VISIBLE_DEVICES", env.get("cuda_visible_devices")), ("CUDA error", env.get("cuda_error")),
        ]),
        ("nodebench", [
            ("version", nb.get("version")), ("git commit", nb.get("git_commit")),
            ("CUDA architectures", nb.get("cuda_architectures")),
            ("command line", " ".join(nb.get("command_line") or [])),
        ]),
    ]


def gpu_rows(data: ReportData) -> list[list[str]]:
    rows = []
    for g in data.gpus:
        pcie = g.get("pcie") or {}
        link = "-"
        if is_number(pcie.get("gen_current")) and is_number(pcie.get("width_current")):
            link = f"Gen{pcie['gen_current']} x{pcie['width_current']}"
            if is_number(pcie.get("gen_max")) and is_number(pcie.get("width_max")):
                link += f" (max Gen{pcie['gen_max']} x{pcie['width_max']})"
        clocks = "-"
        if is_number(g.get("clock_sm_max_mhz")):
            clocks = f"{g.get('clock_sm_mhz') or '-'} / {g['clock_sm_max_mhz']} MHz"
        rows.append([
            str(g["index"]), g["name"], g["compute_capability"], _s(g.get("sm_count")),
            fmt_bytes(g["memory_bytes"]), link, clocks,
            f"{g['power_limit_w']:.0f} W" if is_number(g.get("power_limit_w")) else "-",
            f"{g['temperature_c']:.0f} C" if is_number(g.get("temperature_c")) else "-",
            _s(g.get("ecc_enabled")), _s(g.get("mig_mode")), _s(g.get("profile")),
            _s(g.get("throttle_reasons")), _s(g.get("pci_bus_id")),
        ])
    return rows


GPU_HEADERS = ["#", "name", "CC", "SMs", "memory", "PCIe link", "SM clock / max", "power limit", "temp",
               "ECC", "MIG", "profile", "throttle reasons", "bus id"]


def _status_counts(data: ReportData) -> Counter:
    return Counter(r["status"] for r in data.records)


def _record_row(r: dict) -> list[str]:
    stats = r.get("stats") or {}
    metrics = ", ".join(f"{k}={fmt_num(v)}" for k, v in (r.get("metrics") or {}).items() if v is not None)
    pop = r.get("percent_of_peak")
    return [r["id"], gpu_label(where(r)), r["status"], fmt_time(stats.get("median")),
            fmt_num(stats.get("cv")) if stats else "-", metrics or "-",
            f"{pop['percent']:.0f}%" if pop and is_number(pop.get("percent")) else "-",
            ", ".join(r["flags"]) or "-", r.get("reason") or ""]


RECORD_HEADERS = ["id", "GPUs", "status", "median", "CV", "metrics", "% of peak", "flags", "reason"]


# ----------------------------------------------------------------------------------------------


def _title(data: ReportData) -> str:
    models = Counter(g["name"] for g in data.gpus)
    gpus = ", ".join(f"{n}x {m}" for m, n in models.items()) or "no GPU"
    return f"nodebench report: {data.environment['host']['hostname']} ({gpus})"


@register("html", "html", "the self-contained HTML report", file_name=HTML_NAME)
def render_html(data: ReportData, checklist: list[Item], plots: list[Plot], title: str | None = None,
                inter_node_gbps: float | None = None, frameworks: dict | None = None) -> str:
    if inter_node_gbps is None:
        inter_node_gbps = data.inter_node_gbps
    if frameworks is None:
        frameworks = data.frameworks
    title = title or _title(data)
    counts = _status_counts(data)
    generated = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    runs = "; ".join(f"run {escape(r.run_id)} ({escape(r.run_status)}, {escape(r.started_at)} to "
                     f"{escape(r.doc.get('finished_at') or '...')})" for r in data.runs)
    out = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body><main>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="sub">{runs}</p>',
        '<p class="counts">' + "".join(
            f'<span class="badge {cls}">{counts[s]} {s}</span>'
            for s, cls in (("ok", "pass"), ("skipped", "nm"), ("failed", "fail"), ("wrong", "fail"))) + "</p>",
    ]
    if data.superseded:
        out.append(f'<p class="sub">{data.superseded} record(s) measured again in a later file: the latest is shown.</p>')
    out.append(first_screen.render(data, checklist, inter_node_gbps, frameworks))

    out.append('<h2 id="checklist">Checklist</h2>')
    out.append('<table class="checklist"><thead><tr><th>item</th><th>status</th><th>evidence</th></tr></thead><tbody>')
    for item in checklist:
        ev = "".join(f"<li>{escape(e)}</li>" for e in item.evidence)
        # The evidence folds under the one-line verdict: every line stays on the page.
        fold = (f"<details><summary>{len(item.evidence)} evidence line{'s' if len(item.evidence) != 1 else ''}</summary>"
                f"<ul>{ev}</ul></details>") if ev else ""
        out.append(f'<tr id="check-{escape(item.key)}" data-status="{escape(item.status)}"><td>{escape(item.title)}</td>'
                   f"<td>{_badge(item.status)}</td><td class=\"ev\">{escape(item.summary)}{fold}</td></tr>")
    out.append("</tbody></table>")

    out.append('<h2 id="plots">Plots</h2>')
    for plot in plots:
        if plot.png:
            b64 = base64.b64encode(plot.png).decode("ascii")
            boxes = getattr(plot.png, "boxes", None)   # plot areas and legends in the image (figure_boxes.py)
            data_boxes = f' data-boxes="{escape(json.dumps(boxes))}"' if boxes else ""
            out.append(f'<figure id="plot-{escape(plot.key)}"><h3>{escape(plot.title)}</h3>'
                       f'<img alt="{escape(plot.title)}"{data_boxes} src="data:image/png;base64,{b64}">'
                       f"<figcaption>{escape(plot.caption)}</figcaption></figure>")
        else:
            out.append(f'<div class="missing" id="plot-{escape(plot.key)}" data-status="not measured">'
                       f"<h3>{escape(plot.title)}</h3>{escape(plot.missing or 'not measured')}</div>")

    out.append('<h2 id="environment">Environment</h2>')
    for name, rows in environment_sections(data):
        out.append(f"<h3>{escape(name)}</h3>{_kv_table(rows)}")
    out.append("<h3>GPUs</h3>")
    out.append(_table(GPU_HEADERS, gpu_rows(data)) if data.gpus else "<p>no GPU seen</p>")
    out.append("<h3>Run options</h3>")
    out.append(_kv_table(sorted((str(k), _s(v)) for k, v in data.latest.doc["options"].items())))

    bad = [r for r in data.records if r["status"] != "ok"]
    out.append('<h2 id="records">Records</h2>')
    if bad:
        out.append(f"<h3>Not ok ({len(bad)})</h3>")
        out.append(_table(["id", "GPUs", "status", "reason"],
                          [[r["id"], gpu_label(where(r)), r["status"], r.get("reason") or ""] for r in bad]))
    out.append(f"<details><summary>All records ({len(data.records)})</summary>")
    out.append(_table(RECORD_HEADERS, [_record_row(r) for r in data.records], num_cols=(3, 4, 6)))
    out.append("</details>")
    files = ", ".join(escape(os.path.basename(r.path)) for r in data.runs)
    out.append(f"<footer>Generated by nodebench-report {__version__} on {generated} from {files}.</footer>")
    out.append("</main></body></html>")
    return "\n".join(out)


@register("markdown", "html", "the Markdown summary beside it", file_name=MD_NAME)
def render_markdown(data: ReportData, checklist: list[Item], plots: list[Plot], title: str | None = None) -> str:
    # Every text that comes from a file (names, hosts, reasons, paths) goes through md_escape.
    title = title or _title(data)
    counts = _status_counts(data)
    lines = [f"# {md_escape(title)}", ""]
    for r in data.runs:
        lines.append(f"- run {md_escape(r.run_id)} ({md_escape(r.run_status)}), started {md_escape(r.started_at)}, "
                     f"file {md_escape(os.path.basename(r.path))}")
    lines.append("- records: " + ", ".join(f"{counts[s]} {s}" for s in ("ok", "skipped", "failed", "wrong")))
    caps = first_screen.capacity(data)
    if caps:   # the first screen's capacity table (families/first_screen.py)
        lines += ["", "## Capacity: ResNet-50 training", ""]
        lines.append(md_table(["precision", "layout", "batch", "images/s per GPU", "images/s per node", "images/J", ""],
                              [[c.precision, c.layout, str(c.batch), f"{c.images_per_s:,.0f}",
                                f"{c.node_images_per_s:,.0f}" if c.node_images_per_s else "-",
                                f"{c.images_per_j:.2f}" if c.images_per_j is not None else "not measured",
                                "use this" if c.use else ""] for c in caps]))
    lines += ["", "## Checklist", ""]
    lines.append(md_table(["item", "status", "evidence"],
                          [[i.title, f"**{i.status}**" if i.status in (FAIL, WARN) else i.status, i.summary]
                           for i in checklist]))
    lines += ["", "## Plots", ""]
    for p in plots:
        lines.append(f"- {md_escape(p.title)}: " + (f"see {HTML_NAME}" if p.png else md_escape(p.missing or "not measured")))
    lines += ["", "## Environment", ""]
    for name, rows in environment_sections(data):
        lines.append(f"**{md_escape(name)}**: " + "; ".join(f"{md_escape(k)} {md_escape(_s(v))}" for k, v in rows
                                                         if v not in (None, "", [])))
        lines.append("")
    if data.gpus:
        lines.append(md_table(GPU_HEADERS[:8], [row[:8] for row in gpu_rows(data)]))
    bad = [r for r in data.records if r["status"] != "ok"]
    if bad:
        lines += ["", "## Not ok", ""]
        lines.append(md_table(["id", "GPUs", "status", "reason"],
                              [[r["id"], gpu_label(where(r)), r["status"], r.get("reason") or ""] for r in bad]))
    lines.append("")
    return "\n".join(lines)


def write_report(data: ReportData, out_dir: str, title: str | None = None, inter_node_gbps: float | None = None,
                 frameworks: dict | None = None) -> tuple[str, str, list[Item], list[Plot]]:
    if inter_node_gbps is not None:
        data.inter_node_gbps = inter_node_gbps
    if frameworks is not None:
        data.frameworks = frameworks
    checklist = build_checklist(data)
    plots = render_all(data) + timeline_plots(data.runs)  # a timeline only where a run has one
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        raise ReportError(f"{out_dir}: cannot create the output folder: {exc.strerror or exc}") from None
    paths = {}
    try:
        for fmt in formats("html"):   # every format of the page (formats.py), each to its file
            paths[fmt.name] = os.path.join(out_dir, fmt.file_name)
            with open(paths[fmt.name], "w", encoding="utf-8") as fh:
                fh.write(fmt.render(data, checklist, plots, title))
    except OSError as exc:
        raise ReportError(f"{out_dir}: cannot write the report: {exc.strerror or exc}") from None
    return paths["html"], paths["markdown"], checklist, plots
