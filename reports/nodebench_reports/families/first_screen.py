"""The report's first screen: is this node good (the checklist's, validate's, the burn's and, given
``html --frameworks``, the framework check's verdicts,
one line each with a link to their evidence), what it does (the capacity table: ResNet-50 training
images/s per GPU and per node at the recommended batch of each precision, the memory that batch
uses, images per joule, the precision and layout to use), how it scales (scaling.py: advise's
model at 1, 2, 4, 8 GPUs and 2, 4, 8 nodes, with the resource that limits each step) and what to
fix, in order. Every number comes from the records, ``analysis.train_recommendation``,
``analysis.validation`` or an advise document; nothing is typed here."""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

from . import capacity_scaling as scaling
from ..checklist import FAIL, NOT_MEASURED, PASS, WARN, Item, worst
from ..conventions import is_number
from ..errors import ReportError
from ..load import ReportData, read_frameworks, read_json  # noqa: F401 (read_frameworks: the reader lives in load)
from ..util import fmt_bytes, fmt_pct

_SEVERITY = {"ok": PASS, "info": PASS, "warn": WARN, "fail": FAIL, "skipped": NOT_MEASURED}
_BADGE = {PASS: "pass", WARN: "warn", FAIL: "fail", NOT_MEASURED: "nm"}
_PREC_ORDER = {"fp16": 0, "bf16": 1, "tf32": 2, "fp32": 3}


@dataclass
class Verdict:
    key: str
    title: str
    status: str
    line: str
    href: str                      # where its evidence is on the page
    evidence: list[str] = field(default_factory=list)  # shown folded under the line (empty: the link says where)


@dataclass
class Fix:
    status: str
    title: str
    text: str
    href: str


def _check_line(c: dict) -> str:
    gpu = f" GPU {c['gpu']}" if is_number(c.get("gpu")) else ""
    return f"{c.get('id', '?')}{gpu}: {c.get('severity', '?')}: {c.get('summary') or ''}".rstrip(": ")


def _validation(data: ReportData) -> dict | None:
    v = data.analysis.get("validation")
    return v if isinstance(v, dict) else None


def _checks(v: dict) -> list[dict]:
    return [c for part in ("doctor", "benchmarks") for c in v.get(part) or [] if isinstance(c, dict)]


def verdicts(data: ReportData, checklist: list[Item], frameworks: dict | None = None) -> list[Verdict]:
    out = []
    counts = {s: sum(1 for i in checklist if i.status == s) for s in (PASS, WARN, FAIL, NOT_MEASURED)}
    bad = [i for i in checklist if i.status in (FAIL, WARN)]
    bad.sort(key=lambda i: i.status != FAIL)
    line = (f"{counts[PASS]} pass, {counts[WARN]} warn, {counts[FAIL]} fail, {counts[NOT_MEASURED]} not measured of "
            f"{len(checklist)} items" + (f"; worst: {bad[0].title}" if bad else ""))
    out.append(Verdict("checklist", "Node checklist", worst(i.status for i in checklist), line, "#checklist"))
    v = _validation(data)
    if v is not None:
        checks = [c for c in _checks(v) if not str(c.get("id", "")).startswith("burn.")]
        n = v.get("counts") or {}
        status = PASS if v.get("verdict") == "pass" else FAIL
        if status == PASS and any(c.get("severity") == "warn" for c in checks):
            status = WARN
        out.append(Verdict("validate", f"validate level {v.get('level', '?')}", status,
                           f"{v.get('verdict', '?')}: " + ", ".join(f"{n.get(k, 0)} {k}" for k in ("ok", "info", "warn", "fail", "skipped")),
                           "#ev-validate", [_check_line(c) for c in checks]))
    burn_checks = [c for c in _checks(v or {}) if str(c.get("id", "")).startswith("burn.")]
    if burn_checks:
        sts = [_SEVERITY.get(str(c.get("severity")), NOT_MEASURED) for c in burn_checks]
        failing = [c for c in burn_checks if c.get("severity") in ("fail", "warn")]
        out.append(Verdict("burn", "Burn-in (burn.* checks)", worst(sts),
                           f"{len(burn_checks)} checks, {sum(s == PASS for s in sts)} ok"
                           + (f"; {_check_line(failing[0])}" if failing else ""), "#ev-burn",
                           [_check_line(c) for c in burn_checks]))
    else:
        burn = next((i for i in checklist if i.key == "burn" and i.status != NOT_MEASURED), None)
        if burn is not None:
            out.append(Verdict("burn", "Burn-in", burn.status, burn.summary, f"#check-{burn.key}"))
    if frameworks is not None:
        checks = frameworks["checks"]
        sts = [_SEVERITY[c["severity"]] for c in checks]
        failing = [c for c in checks if c["severity"] in ("fail", "warn")]
        out.append(Verdict("frameworks", "Framework check", worst(sts) if sts else NOT_MEASURED,
                           f"{frameworks.get('verdict', '?')}: {len(checks)} checks, {sum(s == PASS for s in sts)} ok"
                           + (f"; {_check_line(failing[0])}" if failing else ""), "#ev-frameworks",
                           [_check_line(c) for c in checks]))
    return out


def fixes(data: ReportData, checklist: list[Item], frameworks: dict | None = None) -> list[Fix]:
    """What to fix, in order: validate's failing checks (with their fix), then the framework check's,
    then validate's and the framework check's warnings, then the checklist's fail and warn items in
    the checklist's order."""
    out = []
    v = _validation(data)
    for sev in ("fail", "warn"):
        for c in _checks(v or {}):
            if c.get("severity") == sev:
                anchor = "#ev-burn" if str(c.get("id", "")).startswith("burn.") else "#ev-validate"
                out.append(Fix(_SEVERITY[sev], str(c.get("id")), str(c.get("fix") or c.get("summary") or ""), anchor))
        for c in (frameworks or {}).get("checks") or []:
            if c.get("severity") == sev:
                out.append(Fix(_SEVERITY[sev], str(c.get("id")), str(c.get("fix") or c.get("summary") or ""),
                               "#ev-frameworks"))
    for st in (FAIL, WARN):
        out += [Fix(st, i.title, i.summary, f"#check-{i.key}") for i in checklist if i.status == st]
    return out


# ----------------------------------------------------------------------------------------------
# capacity


@dataclass
class Capacity:
    gpu: int | None
    precision: str
    layout: str
    batch: int
    images_per_s: float               # one GPU
    source: str                       # the record id
    how: str                          # how the batch was chosen
    peak_memory_bytes: float | None = None
    memory_fraction: float | None = None
    board_power_w: float | None = None
    node_images_per_s: float | None = None
    node_how: str = ""
    use: bool = False
    others: list[str] = field(default_factory=list)   # the other layouts of this precision, for the evidence

    @property
    def images_per_j(self) -> float | None:
        return images_per_joule(self.images_per_s, self.board_power_w)


def images_per_joule(images_per_s: float | None, board_power_w: float | None) -> float | None:
    """Images per joule of one GPU: its images/s over its board's mean power in the timed iterations."""
    if not is_number(images_per_s) or not is_number(board_power_w) or board_power_w <= 0:
        return None
    return float(images_per_s) / float(board_power_w)


def _train_record(data: ReportData, gpu, precision, layout, batch) -> dict | None:
    for r in data.family("train"):
        p = r.get("params") or {}
        if (p.get("precision"), p.get("layout"), p.get("batch")) == (precision, layout, batch) and \
                (gpu is None or gpu in (r.get("gpus") or [])):
            return r
    return None


def capacity(data: ReportData, inter_gbps: float | None = None) -> list[Capacity]:
    """One row per precision: the layout with the most images/s at its recommended batch
    (``analysis.train_recommendation``), else at the fastest measured batch (the file has no
    recommendation); the fastest row is the one to use."""
    cands: list[Capacity] = []
    for e in data.analysis.get("train_recommendation") or []:
        if not isinstance(e, dict) or not is_number(e.get("batch")):
            continue
        gpu = int(e["gpu"]) if is_number(e.get("gpu")) else None
        rec = _train_record(data, gpu, e.get("precision"), e.get("layout"), int(e["batch"]))
        ips = (rec or {}).get("metrics", {}).get("images_per_s", e.get("images_per_s"))
        if not is_number(ips):
            continue
        cands.append(Capacity(gpu, str(e.get("precision")), str(e.get("layout")), int(e["batch"]), float(ips),
                              (rec or {}).get("id", "analysis.train_recommendation"),
                              f"recommended: {e.get('reason') or ''}".rstrip(": ")))
    if not cands:
        best: dict[tuple, dict] = {}
        for r in data.family("train"):
            p, m = r.get("params") or {}, r.get("metrics") or {}
            if not is_number(m.get("images_per_s")) or not is_number(p.get("batch")):
                continue
            k = (p.get("precision"), p.get("layout"))
            if k not in best or m["images_per_s"] > best[k]["metrics"]["images_per_s"]:
                best[k] = r
        for (prec, lay), r in best.items():
            cands.append(Capacity((r.get("gpus") or [None])[0], str(prec), str(lay), int(r["params"]["batch"]),
                                  float(r["metrics"]["images_per_s"]), r["id"],
                                  "fastest measured batch (no analysis.train_recommendation in the file)"))
    for c in cands:
        rec = _train_record(data, c.gpu, c.precision, c.layout, c.batch) or {}
        m = rec.get("metrics") or {}
        c.peak_memory_bytes = m.get("peak_memory_bytes") if is_number(m.get("peak_memory_bytes")) else None
        c.memory_fraction = m.get("memory_fraction_x") if is_number(m.get("memory_fraction_x")) else None
        c.board_power_w = m.get("board_power_w") if is_number(m.get("board_power_w")) else None
    rows: dict[str, Capacity] = {}
    for c in sorted(cands, key=lambda c: -c.images_per_s):
        if c.precision in rows:
            who = f"GPU {c.gpu} " if c.gpu is not None else ""
            rows[c.precision].others.append(f"{who}{c.layout} batch {c.batch}: {c.images_per_s:.0f} images/s ({c.source})")
        else:
            rows[c.precision] = c
    out = sorted(rows.values(), key=lambda c: (_PREC_ORDER.get(c.precision, 9), c.precision))
    if out:
        max(out, key=lambda c: c.images_per_s).use = True
    n = max(1, len(data.gpus))
    inp = scaling.gather(data.records, data.analysis)
    for c in out:
        if n == 1:
            c.node_images_per_s, c.node_how = c.images_per_s, "measured (one GPU)"
            continue
        p = _node_prediction(data, inp, c, n)
        if p is not None and p.images_per_s:
            c.node_images_per_s, c.node_how = p.images_per_s, f"predicted at {n} GPUs ({p.limit}-bound)"
        else:
            c.node_images_per_s = n * c.images_per_s
            c.node_how = f"{n} x one GPU, an upper bound: {p.missing if p else 'no prediction'}"
    return out


def _node_prediction(data, inp, c: Capacity, n: int):
    if data.advice:
        rows = [p for p in scaling.from_advice(data.advice, c.precision, c.layout, c.batch) if p.gpus == n and p.nodes == 1]
        if rows:
            return rows[0]
    return scaling.predict(inp, c.precision, c.layout, c.batch, n)


def scaling_rows(data: ReportData, c: Capacity, inter_gbps: float | None = None) -> tuple[list[scaling.Prediction], str]:
    """The step ``c`` at 1, 2, 4, 8 GPUs on one node and on 2, 4, 8 nodes of this node's GPU count;
    from the advise document when given, else from scaling.py's copy of advise's model."""
    per_node = max(1, len(data.gpus))
    if data.advice:
        rows = scaling.from_advice(data.advice, c.precision, c.layout, c.batch)
        if rows:
            return rows, f"nodebench advise --json ({data.advice.get('label', '')})"
    inp = scaling.gather(data.records, data.analysis)
    rows = [scaling.predict(inp, c.precision, c.layout, c.batch, n) for n in scaling.GPU_COUNTS]
    rows += [scaling.predict(inp, c.precision, c.layout, c.batch, per_node, m, inter_gbps) for m in scaling.NODE_COUNTS]
    return rows, "advise's model (docs/ADVISE.md) on these records"


# ----------------------------------------------------------------------------------------------
# HTML


def _badge(status: str) -> str:
    return f'<span class="badge {_BADGE[status]}">{escape(status)}</span>'


def _fold(key: str, lines: list[str]) -> str:
    if not lines:
        return ""
    items = "".join(f"<li>{escape(x)}</li>" for x in lines)
    return f'<details id="ev-{escape(key)}" class="ev"><summary>{len(lines)} evidence lines</summary><ul>{items}</ul></details>'


def _ips(v: float | None) -> str:
    return f"{v:,.0f}" if is_number(v) else "-"


def capacity_html(rows: list[Capacity], n_gpus: int) -> str:
    if not rows:
        return ('<p class="missing" id="capacity" data-status="not measured">Capacity: not measured: no ResNet-50 '
                "train record (run the train family: nodebench run --family train)</p>")
    head = ("<tr><th>precision</th><th>layout</th><th>batch</th><th>images/s per GPU</th>"
            f"<th>images/s per node ({n_gpus} GPU{'s' if n_gpus != 1 else ''})</th><th>memory at batch</th>"
            "<th>board power</th><th>images/J</th><th></th></tr>")
    body = []
    for c in rows:
        mem = fmt_bytes(c.peak_memory_bytes) if c.peak_memory_bytes is not None else "-"
        if c.memory_fraction is not None:
            mem += f" ({fmt_pct(c.memory_fraction, 0)} of GPU)"
        ipj = c.images_per_j
        power = f"{c.board_power_w:.0f} W" if c.board_power_w is not None else "not measured"
        use = ' class="use"' if c.use else ""
        body.append(
            f'<tr data-precision="{escape(c.precision)}"{use}>'
            f"<td>{escape(c.precision)}</td><td>{escape(c.layout)}</td><td class=\"num\">{c.batch}</td>"
            f'<td class="num" title="{escape(c.source)}">{_ips(c.images_per_s)}</td>'
            f'<td class="num" title="{escape(c.node_how)}">{_ips(c.node_images_per_s)}</td>'
            f"<td>{escape(mem)}</td><td class=\"num\">{escape(power)}</td>"
            f'<td class="num ipj">{f"{ipj:.2f}" if ipj is not None else "-"}</td>'
            f"<td>{'<b>use this</b>' if c.use else ''}</td></tr>")
    ev = []
    for c in rows:
        ev.append(f"{c.precision} {c.layout} batch {c.batch}: {c.images_per_s:.1f} images/s from {c.source}; {c.how}")
        ev.append(f"{c.precision}: per node {c.node_how}")
        if c.board_power_w is None:
            ev.append(f"{c.precision}: no board_power_w in {c.source} (files before issue 46 have none)")
        ev += [f"{c.precision} also measured: {o}" for o in c.others]
    return (f'<table id="capacity" class="capacity"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>'
            + _fold("capacity", ev))


def scaling_html(rows: list[scaling.Prediction], source: str, c: Capacity) -> str:
    cols = [(f"{p.gpus} GPU{'s' if p.gpus > 1 else ''}" if p.nodes == 1 else f"{p.nodes} nodes ({p.gpus})") for p in rows]
    head = "<tr><th></th>" + "".join(f"<th>{escape(x)}</th>" for x in cols) + "</tr>"

    def cell(p, text):
        return f'<td class="num" title="{escape(p.why or p.missing)}">{escape(text)}</td>'

    ips = "".join(cell(p, _ips(p.images_per_s)) for p in rows)
    eff = "".join(cell(p, fmt_pct(p.efficiency, 0) if p.efficiency is not None else "-") for p in rows)
    lim = "".join(cell(p, p.limit or "not predicted") for p in rows)
    missing = sorted({p.missing for p in rows if p.missing})
    ev = [f"{col}: " + (p.why or p.missing) for col, p in zip(cols, rows)]
    ev.append(f"source: {source}; the efficiency is a bound set by communication and input (docs/ADVISE.md)")
    note = ("; ".join(f"not predicted: {m}" for m in missing))
    return (f'<table id="scaling" class="scaling"><caption>{escape(c.precision)} {escape(c.layout)} batch {c.batch} '
            f"per GPU, predicted</caption><thead>{head}</thead><tbody><tr><th>images/s</th>{ips}</tr>"
            f"<tr><th>efficiency</th>{eff}</tr><tr><th>limited by</th>{lim}</tr></tbody></table>"
            + (f'<p class="sub">{escape(note)}</p>' if note else "") + _fold("scaling", ev))


def render(data: ReportData, checklist: list[Item], inter_gbps: float | None = None,
           frameworks: dict | None = None) -> str:
    vs = verdicts(data, checklist, frameworks)
    rows = capacity(data, inter_gbps)
    out = ['<section id="summary" class="summary">', '<div id="verdicts" class="verdicts">']
    for v in vs:
        out.append(f'<div class="verdict" data-key="{escape(v.key)}" data-status="{escape(v.status)}">{_badge(v.status)} '
                   f'<b>{escape(v.title)}</b>: {escape(v.line)} <a href="{escape(v.href)}">evidence</a>'
                   f"{_fold(v.key, v.evidence)}</div>")
    out.append("</div>")
    out.append('<h2 id="capacity-title">Capacity: ResNet-50 training</h2>')
    out.append(capacity_html(rows, max(1, len(data.gpus))))
    out.append('<h2 id="scaling-title">Scaling</h2>')
    use = next((c for c in rows if c.use), None)
    if use is None:
        out.append('<p class="missing">not predicted: no train record to scale</p>')
    else:
        out.append(scaling_html(*scaling_rows(data, use, inter_gbps), use))
    out.append('<h2 id="fix-title">What to fix, in order</h2>')
    fx = fixes(data, checklist, frameworks)
    if fx:
        out.append('<ol id="fixes" class="fixes">' + "".join(
            f'<li data-status="{escape(f.status)}" title="{escape(f.text)}">{_badge(f.status)} <b>{escape(f.title)}</b> '
            f'(<a href="{escape(f.href)}">evidence</a>): <span class="fixtext">{escape(f.text)}</span></li>' for f in fx)
                   + "</ol>")
    else:
        out.append('<p id="fixes">nothing: no check failed or warned</p>')
    out.append("</section>")
    return "\n".join(out)


CSS = """
.summary .verdict{margin:.15em 0;font-size:.92em}.summary .verdict details{display:inline}
.summary details.ev{margin:.1em 0;font-size:.85em}.summary details.ev summary{font-weight:400;color:#5b6573}
.summary details.ev ul{margin:.2em 0 .2em 1.2em;padding:0;color:#3b4452}
table.capacity tr.use td{background:#eef7ee}
table.scaling caption{text-align:left;color:#5b6573;font-size:.85em}table.scaling{font-size:.8em}table.scaling th{white-space:nowrap}
ol.fixes{margin:.2em 0;padding-left:1.4em;font-size:.86em}
ol.fixes li{margin:.15em 0;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.summary h2{margin:.7em 0 .3em}
"""
