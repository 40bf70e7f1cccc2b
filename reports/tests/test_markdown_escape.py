"""summary.md carries names from the result file: HTML-special characters must arrive escaped."""
from __future__ import annotations

import nbgen
from nodebench_reports.cli import main
from nodebench_reports.util import md_escape


def test_md_escape_turns_markup_into_text():
    assert md_escape("<b>x</b> & y") == "&lt;b&gt;x&lt;/b&gt; &amp; y"
    assert md_escape("a|b\nc") == "a\\|b c"
    assert md_escape("`code`") == "&#96;code&#96;"


def test_summary_md_escapes_names_and_reasons(tmp_path):
    doc = nbgen.make_result(families=("gemm",), n_gpus=1, seed=5)
    doc["environment"]["host"]["hostname"] = "node<img src=x onerror=alert(1)>"
    doc["environment"]["gpus"][0]["name"] = "NVIDIA <H200> & co"
    rid = doc["records"][0]["id"]
    doc = nbgen.set_status(doc, rid, "failed", "<script>alert(2)</script> | broke")
    path = nbgen.write(doc, tmp_path / "odd.json")
    out = tmp_path / "report"
    assert main(["html", str(path), "-o", str(out)]) == 0
    md = (out / "summary.md").read_text(encoding="utf-8")
    for raw in ("<img", "<script>", "<H200>"):
        assert raw not in md, raw
    assert "node&lt;img src=x onerror=alert(1)&gt;" in md.splitlines()[0]   # the title
    assert "NVIDIA &lt;H200&gt; &amp; co" in md
    assert "&lt;script&gt;alert(2)&lt;/script&gt; \\| broke" in md
    # The HTML page escapes the same names (as it did before).
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<script>alert(2)" not in html and "<img src=x" not in html
