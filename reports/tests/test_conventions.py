"""Family conventions of docs/SCHEMA.md beyond the basic fixtures: MPI runs (records with `rank` and
`host`), one-rank NCCL communicators, p2p bidir records, analysis entries with int8 rows, not_measured
verdicts and batches that could not be recommended."""

from __future__ import annotations

import copy
import json
import sqlite3

import pytest

import nbgen
from nodebench_reports import derive
from nodebench_reports.families import conv, nccl, p2p
from nodebench_reports.checklist import NOT_MEASURED, PASS, WARN
from nodebench_reports.assemble import build_checklist
from nodebench_reports.load import Run, check_document, merge_runs


def data_of(doc):
    check_document(doc, "test.json")
    return merge_runs([Run("test.json", doc)])


def mpi_doc(hosts=("a", "b"), ranks_per_host=2, seed=1, slow_rank=None, started_at="2025-06-01T02:00:00Z"):
    """A run of one process per GPU: every rank ran the gemm cases on its own GPU."""
    one = nbgen.make_result(families=("gemm",), n_gpus=1, seed=seed, n_samples=8, started_at=started_at)
    template = [r for r in one["records"] if r["params"]["shape"] == "square"]
    doc = copy.deepcopy(one)
    doc["records"], ranks = [], []
    rank = 0
    for host in hosts:
        for local in range(ranks_per_host):
            ranks.append({"rank": rank, "local_rank": local, "host": host, "gpu": local,
                          "pci_bus_id": f"0000:{0x18 + local:02X}:00.0", "gpu_name": "NVIDIA H200"})
            factor = 1.25 if rank == slow_rank else 1.0
            for r in template:
                rec = copy.deepcopy(r)
                rec.update(gpus=[local], rank=rank, host=host)
                rec["samples_s"] = [x * factor for x in rec["samples_s"]]
                rec["stats"] = nbgen.stats_of(rec["samples_s"])
                for k in ("tflops", "tops"):
                    if k in rec["metrics"]:
                        rec["metrics"][k] /= factor
                doc["records"].append(rec)
            rank += 1
    doc["environment"]["ranks"] = ranks
    doc["environment"]["mpi"] = {"world_size": rank, "node_count": len(hosts)}
    doc["summary"].update(ok=len(doc["records"]), total=len(doc["records"]))
    return doc


def test_mpi_run_is_valid_and_keyed_by_rank(validate, cli, tmp_path):
    doc = mpi_doc()
    validate(doc)
    path = nbgen.write(doc, tmp_path / "mpi.json")
    r = cli("compare", path, path, "--json", tmp_path / "c.json")
    assert r.rc == 0, r
    cases = json.loads((tmp_path / "c.json").read_text())["cases"]
    assert len(cases) == len(doc["records"]) and {c["rank"] for c in cases} == {0, 1, 2, 3}
    assert "[gpu 1, rank 3]" in r.out


def test_mpi_regression_on_one_rank(cli, tmp_path):
    base = nbgen.write(mpi_doc(seed=1), tmp_path / "base.json")
    new = nbgen.write(mpi_doc(seed=2, slow_rank=2), tmp_path / "new.json")
    r = cli("compare", base, new, "--json", tmp_path / "c.json")
    assert r.rc == 1, r
    regressed = {c["rank"] for c in json.loads((tmp_path / "c.json").read_text())["cases"] if c["regression"]}
    assert regressed == {2}


def test_mpi_gpu_models_come_from_ranks(cli, tmp_path):
    a = mpi_doc()
    b = mpi_doc(seed=2)
    b["environment"]["ranks"][3]["gpu_name"] = "NVIDIA H100 80GB HBM3"
    r = cli("compare", nbgen.write(a, tmp_path / "a.json"), nbgen.write(b, tmp_path / "b.json"))
    assert r.rc == 2 and "environment.ranks[*].gpu_name" in r.err, r


def test_mpi_run_renders_per_rank(cli, tmp_path):
    r = cli("html", nbgen.write(mpi_doc(hosts=("a",)), tmp_path / "mpi.json"), "-o", tmp_path / "out")
    assert r.rc == 0, r
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert '<figure id="plot-gemm">' in html and "rank 1 GPU 1" in html


def test_mpi_history_uses_record_hosts(cli, tmp_path):
    db = tmp_path / "h.sqlite"
    files = [nbgen.write(mpi_doc(hosts=("a", "b", "c"), seed=s, slow_rank=3 if s == 9 else None,
                                 started_at=f"2025-06-0{s}T02:00:00Z"), tmp_path / f"m{s}.json") for s in (1, 9)]
    assert cli("ingest", *files, "--db", db).rc == 0
    nodes = {row[0] for row in sqlite3.connect(db).execute("SELECT DISTINCT node FROM records")}
    assert nodes == {"a", "b", "c"}
    r = cli("fleet", "--db", db, "--json", tmp_path / "f.json")
    assert r.rc == 1, r
    flagged = json.loads((tmp_path / "f.json").read_text())["flagged_nodes"]
    assert list(flagged) == ["b"]          # rank 3 is host b's second GPU


def one_rank_copies(doc, finish):
    """Each two-GPU collective of doc copied as one rank's record (id 1gpu, GPU 0, ngpus 1),
    finish(copy) changing the rest."""
    extra = []
    for r in doc["records"]:
        if r["params"]["ngpus"] == 2:
            one = copy.deepcopy(r)
            one["id"] = one["id"].replace("2gpu", "1gpu")
            one["params"]["ngpus"] = 1
            one["gpus"] = [0]
            finish(one)
            extra.append(one)
    return extra


def test_one_rank_allreduce_is_left_out_of_scaling():
    doc = nbgen.make_result(families=("nccl",), n_gpus=4)
    # busbw_gbps 0 by definition for one rank
    doc["records"] += one_rank_copies(doc, lambda one: one["metrics"].update(busbw_gbps=0.0))
    curves = nccl.allreduce_curves(data_of(doc))
    assert sorted(curves) == [2, 4]
    item = {i.key: i for i in build_checklist(data_of(doc))}["distribution"]
    # no training step in these results: not judged from bus bandwidth alone; the evidence lists 2 and 4 GPUs
    assert item.status == NOT_MEASURED and "bus bandwidth alone" in item.summary
    assert [e.split(" ")[0] for e in item.evidence if e[0].isdigit()] == ["2", "4"]


def test_one_rank_record_as_nodebench_writes_it_is_no_link(validate, cli, tmp_path):
    """A one-rank collective (flag single_rank, no bandwidth metric: docs/SCHEMA.md) is valid, renders,
    compares, and is neither a curve point nor a scaling row; even with a stray bandwidth, the flag wins."""
    doc = nbgen.make_result(families=("nccl",), n_gpus=4)

    def as_nodebench_writes_it(one):
        one["metrics"] = {"time_us": 0.3, "data_bytes": one["metrics"].get("data_bytes", 1.0), "gpu_count": 1}
        one["flags"] = ["single_rank"]
        one["primary_metric"], one["primary_better"] = "time_us", "lower"

    extra = one_rank_copies(doc, as_nodebench_writes_it)
    stray = copy.deepcopy(extra[0])
    stray["id"] += "_stray"
    stray["params"]["ngpus"] = 2  # a record that says two GPUs but carries the flag
    stray["metrics"].update(busbw_gbps=220254.0, algbw_gbps=220254.0, gpu_count=2)
    doc["records"] += extra + [stray]
    validate(doc)
    curves = nccl.allreduce_curves(data_of(doc))
    assert sorted(curves) == [2, 4]
    assert all(bw < 1000 for pts in curves.values() for _, bw in pts)
    path = nbgen.write(doc, tmp_path / "one_rank.json")
    assert cli("html", path, "-o", tmp_path / "html").rc == 0
    assert cli("compare", path, path).rc == 0


def test_p2p_bidir_pairs_fill_both_cells():
    doc = nbgen.make_result(families=("p2p",), n_gpus=3)
    doc["records"] = [r for r in doc["records"]
                      if r["params"]["mode"] == "one_way" or r["params"]["src"] < r["params"]["dst"]]
    latency = copy.deepcopy(doc["records"][0])
    latency["id"] += "-latency"
    latency["params"].update(test="latency", bytes=4)
    latency["metrics"] = {"latency_us": 2.1}
    doc["records"].append(latency)
    mats = p2p.p2p_matrices(data_of(doc))
    assert mats["bidir"][(2, 0)] == mats["bidir"][(0, 2)] and len(mats["bidir"]) == 6
    assert len(mats["one_way"]) == 6


def test_fp16_analysis_with_int8_rows_and_not_measured():
    doc = nbgen.make_result(n_gpus=2)
    entry = doc["analysis"]["fp16_vs_fp32"][0]
    entry["rows"].append({"source": "gemm 8192^3", "kind": "int8", "fp32": 52.0, "int8": 1400.0, "speedup_x": 26.9})
    doc["analysis"]["fp16_vs_fp32"].append({"gpu": 1, "rows": [], "verdict": "not_measured", "reason": "no pair"})
    rows, verdicts, _ = derive.fp16_speedups(data_of(doc))
    assert all("int8" not in r.source for r in rows)
    item = {i.key: i for i in build_checklist(data_of(doc))}["mixed_precision"]
    assert item.status == PASS and "verdict not measured" in " ".join(item.evidence)
    doc["analysis"]["fp16_vs_fp32"] = [{"gpu": 0, "rows": [], "verdict": "not_measured", "reason": "no pair"}]
    assert {i.key: i for i in build_checklist(data_of(doc))}["mixed_precision"].status == NOT_MEASURED
    doc["analysis"]["fp16_vs_fp32"] = [{"gpu": 0, "rows": [], "verdict": "does_not_pay", "reason": "1.1x",
                                        "recommendation": "use INT8 for inference"}]
    item = {i.key: i for i in build_checklist(data_of(doc))}["mixed_precision"]
    assert item.status == WARN and "use INT8 for inference" in item.summary


@pytest.mark.parametrize("fraction, limit, status", [(0.85, 0.9, PASS), (0.93, 0.9, WARN), (0.99, 0.9, "fail"),
                                                      (0.73, 0.7, WARN)])
def test_memory_fraction_against_recorded_limit(fraction, limit, status):
    doc = nbgen.make_result(families=("conv",), n_gpus=1)
    for rec in doc["analysis"]["batch_recommendation"]:
        rec.update(memory_fraction=0.5, memory_fraction_limit=limit)
    doc["analysis"]["batch_recommendation"][0]["memory_fraction"] = fraction
    assert {i.key: i for i in build_checklist(data_of(doc))}["memory"].status == status


def test_no_recommended_batch_warns_with_reason():
    doc = nbgen.make_result(families=("conv",), n_gpus=1)
    doc["analysis"]["batch_recommendation"][0].update(batch=None, memory_fraction=None, train_images_per_s=None,
                                                      reason="even batch 32 exceeds the memory limit")
    item = {i.key: i for i in build_checklist(data_of(doc))}["memory"]
    assert item.status == WARN and "even batch 32 exceeds the memory limit" in " ".join(item.evidence)


def test_conv_layouts_are_separate_series(cli, tmp_path):
    doc = nbgen.make_result(families=("conv",), n_gpus=1)
    nchw = []
    for r in doc["records"]:
        if r["params"].get("layer") == "resnet50_total":
            c = copy.deepcopy(r)
            c["id"] += "_nchw"
            c["params"]["layout"] = "nchw"
            nchw.append(c)
    doc["records"] += nchw
    doc = nbgen.reanalyse(doc)      # the harness writes one recommendation per GPU, precision and layout
    assert {r.layout for r in conv.batch_recommendations(data_of(nbgen.make_result(families=("conv",), n_gpus=1)))} \
        == {"nhwc"}
    data = data_of(doc)
    recs = conv.batch_recommendations(data)
    assert sorted((r.precision, r.layout) for r in recs) == [("fp16", "nchw"), ("fp16", "nhwc"),
                                                             ("fp32", "nchw"), ("fp32", "nhwc")]
    # each series' batches are counted in its own layout: the whole sweep, not one batch
    want = {(p, lay): len({r["params"]["batch"] for r in doc["records"] if r["status"] == "ok"
                           and r["params"].get("layer") == "resnet50_total" and r["params"]["precision"] == p
                           and r["params"]["layout"] == lay}) for p in ("fp16", "fp32") for lay in ("nchw", "nhwc")}
    assert {(r.precision, r.layout): r.batches_measured for r in recs} == want
    # and the figure draws one training line per precision and layout
    assert len({conv.group_key(r) for r in doc["records"] if r["params"].get("layer") == "resnet50_total"}) == 4
    r = cli("html", nbgen.write(doc, tmp_path / "layouts.json"), "-o", tmp_path / "out")
    assert r.rc == 0, r
