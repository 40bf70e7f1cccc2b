"""The fleet's capacity page (`fleet --html`, families/fleet_capacity.py) on an SQLite history of generated
runs: five nodes with the train family, one of them 25% slower and one with two GPUs: per node the
capacity row, the fleet's total, the spread with the slow node outside it, and the nodes to add."""

from __future__ import annotations

import math
import re
import sqlite3
import statistics

import pytest

import nbgen
from nodebench_reports.cli import main
from nodebench_reports.families import fleet_capacity
from nodebench_reports.history import open_db

NODES = {"node01": (1.0, 1), "node02": (1.0, 1), "node03": (0.75, 1), "node04": (1.0, 2), "node05": (1.0, 1)}


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fleetcap")
    files = []
    for i, (node, (speed, gpus)) in enumerate(NODES.items()):
        doc = nbgen.make_result(families=("train",), n_gpus=gpus, hostname=node, started_at="2026-12-01T02:00:00Z",
                                seed=i, speed=speed, n_samples=10)
        for r in doc["records"]:   # the board's power on every ok step: 250 W
            if r["status"] == "ok":
                r["metrics"]["board_power_w"] = 250.0
        files.append(nbgen.write(doc, folder / f"{node}.json"))
    db = str(folder / "history.sqlite")
    assert main(["ingest", *files, "--db", db]) == 0
    return db


def expected(db: str, rid: str) -> dict[str, float]:
    """Each node's images/s per GPU of `rid`, read straight from the metrics table."""
    con = sqlite3.connect(db)
    out: dict[str, list[float]] = {}
    for node, v in con.execute("SELECT rec.node, m.value FROM metrics m JOIN records rec ON m.run_id = rec.run_id "
                               "AND m.record_id = rec.record_id AND m.gpus = rec.gpus WHERE m.record_id = ? "
                               "AND m.name = 'images_per_s'", (rid,)):
        out.setdefault(node, []).append(v)
    return {n: statistics.mean(v) for n, v in out.items()}


def test_capacity_per_node_total_and_outliers(history):
    with open_db(history, create=False) as h:
        caps = fleet_capacity.capacity(h)
    assert [c.precision for c in caps] == ["fp16", "tf32"]
    for c in caps:
        want = expected(history, c.record_id)
        assert {r.node: r.images_per_s for r in c.rows} == pytest.approx(want)
        gpus = {r.node: r.gpus for r in c.rows}
        assert gpus == {n: g for n, (_, g) in NODES.items()}
        assert c.total == pytest.approx(sum(want[n] * NODES[n][1] for n in want))
        ips = next(s for s in c.spreads if s.metric == "images_per_s")
        assert ips.outside == ["node03"]
        assert ips.low == pytest.approx(want["node03"])
        assert all(r.images_per_j == pytest.approx(r.images_per_s / 250.0) for r in c.rows)
        power = next(s for s in c.spreads if s.metric == "board_power_w")
        assert power.rel_spread == 0 and power.outside == []
        # the fastest case measured by every node
        con = sqlite3.connect(history)
        rates = {rid: statistics.median(expected(history, rid).values())
                 for (rid,) in con.execute("SELECT DISTINCT record_id FROM metrics WHERE record_id LIKE ?",
                                           (f"train/resnet50/{c.precision}/%",))}
        assert c.record_id == max(rates, key=rates.get)


def test_nodes_needed():
    assert fleet_capacity.nodes_needed(1000.0, 1000.0, 100.0) == 0
    assert fleet_capacity.nodes_needed(1001.0, 1000.0, 100.0) == 1
    assert fleet_capacity.nodes_needed(1500.0, 1000.0, 100.0) == 5
    assert fleet_capacity.nodes_needed(1550.0, 1000.0, 100.0) == 6


def test_fleet_html_page(history, tmp_path, capsys):
    page = tmp_path / "fleet.html"
    rc = main(["fleet", "--db", history, "--html", str(page), "--target", "100000", "--target", "1"])
    assert rc in (0, 1)   # 1: the fleet view flags node03 (exit of `fleet`)
    html = page.read_text()
    with open_db(history, create=False) as h:
        caps = fleet_capacity.capacity(h)
    fp16 = caps[0]
    sec = re.search(r'<section id="fleet-fp16">.*?</section>', html, re.S).group(0)
    assert f"{fp16.total:,.0f}" in re.search(r'<b id="total-fp16">(.*?)</b>', sec).group(1)
    assert re.search(r'<tr data-node="node03" class="outside">', sec)
    assert 'data-node="node01" class="outside"' not in sec
    need = math.ceil((100000 - fp16.total) / fp16.median_node)
    assert f'<tr data-target="100000"><td class="num">100,000</td><td class="num">{need}</td></tr>' in sec
    assert '<tr data-target="1"><td class="num">1</td><td class="num">0</td></tr>' in sec
    assert "http://" not in html and "https://" not in html and "<script" not in html


def test_fleet_html_without_train_records(tmp_path):
    doc = nbgen.make_result(families=("gemm",), n_gpus=1, hostname="n1")
    f = nbgen.write(doc, tmp_path / "a.json")
    db = str(tmp_path / "h.sqlite")
    assert main(["ingest", f, "--db", db]) == 0
    page = tmp_path / "f.html"
    main(["fleet", "--db", db, "--html", str(page), "--min-nodes", "1"])
    assert 'data-status="not measured"' in page.read_text()
