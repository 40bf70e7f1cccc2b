"""Merging several files of one node: analyses are united, not overwritten; one-batch conv runs."""

from __future__ import annotations

import copy

import nbgen


def _runs(tmp_path, docs):
    from nodebench_reports.load import load_run
    return [load_run(nbgen.write(d, tmp_path / f"f{i}.json")) for i, d in enumerate(docs)]


def test_analysis_is_united_by_key_and_does_not_depend_on_file_order(tmp_path):
    from nodebench_reports.assemble import build_checklist
    from nodebench_reports.load import merge_runs

    full = nbgen.make_result(seed=1)
    assert full["analysis"]["fp16_vs_fp32"]
    # a later file of the same node: another family only, with its own (different) analysis kind
    later = nbgen.make_result(families=("hostlink",), seed=2, started_at="2025-06-01T05:00:00Z", analysis=False)
    later["analysis"] = {"batch_recommendation": [{"gpu": 0, "precision": "fp16", "batch": 128,
                                                   "train_images_per_s": 9999.0, "memory_fraction": 0.2}]}
    a = merge_runs(_runs(tmp_path, [full, later]))
    b = merge_runs(_runs(tmp_path, [later, full]))
    assert a.analysis == b.analysis
    assert a.analysis["fp16_vs_fp32"] == full["analysis"]["fp16_vs_fp32"]   # kept (was lost)
    recs = a.analysis["batch_recommendation"]
    # entries of the same key: the later run's wins; others of the earlier file stay
    fp16_gpu0 = [r for r in recs if r.get("gpu") == 0 and r.get("precision") == "fp16" and not r.get("layout")]
    assert len(fp16_gpu0) == 1 and fp16_gpu0[0]["batch"] == 128
    earlier_keys = {(r.get("gpu"), r.get("precision"), r.get("layout"))
                    for r in full["analysis"]["batch_recommendation"]}
    assert earlier_keys <= {(r.get("gpu"), r.get("precision"), r.get("layout")) for r in recs}
    ca = {i.key: i.status for i in build_checklist(a)}
    cb = {i.key: i.status for i in build_checklist(b)}
    assert ca == cb


def test_one_batch_conv_says_run_the_sweep(tmp_path):
    from nodebench_reports.assemble import build_checklist
    from nodebench_reports.load import merge_runs

    doc = nbgen.make_result(families=("conv",), n_gpus=1, seed=3)
    keep = {"conv/resnet50_total_fp16_b256", "conv/resnet50_total_fp32_b256"}
    doc["records"] = [r for r in doc["records"] if r["params"].get("layer") != "resnet50_total" or r["id"] in keep]
    doc = nbgen.reanalyse(doc)   # the harness's recommendation of a one-batch run: that batch
    assert [r["batch"] for r in doc["analysis"]["batch_recommendation"]] == [256, 256]
    data = merge_runs(_runs(tmp_path, [doc]))
    item = next(i for i in build_checklist(data) if i.key == "memory")
    assert "one batch measured" in item.summary and "run the conv sweep" in item.summary
    assert "recommended batch" not in item.summary
    # with the whole sweep it is a recommendation again
    full = merge_runs(_runs(tmp_path, [nbgen.make_result(families=("conv",), n_gpus=1, seed=3)]))
    item = next(i for i in build_checklist(full) if i.key == "memory")
    assert "one batch measured" not in item.summary


def test_one_batch_entry_of_the_analysis_is_shown_as_such(tmp_path):
    """analysis.batch_recommendation of a one-batch series (nodebench's quick suite): batch null and
    measured_batch; the memory item says one batch was measured, it does not warn that no batch
    could be recommended."""
    from nodebench_reports.checklist import NOT_MEASURED, PASS, WARN
    from nodebench_reports.assemble import build_checklist
    from nodebench_reports.load import merge_runs

    doc = nbgen.make_result(families=("conv",), n_gpus=1, seed=3)
    keep = {"conv/resnet50_total_fp16_b256"}
    doc["records"] = [r for r in doc["records"] if r["params"].get("layer") != "resnet50_total" or r["id"] in keep]
    rec = next(r for r in doc["records"] if r["id"] in keep)
    doc["analysis"] = {"batch_recommendation": [{
        "gpu": 0, "precision": "fp16", "layout": "nhwc", "batch": None, "measured_batch": 256, "memory_fraction_limit": 0.9,
        "train_images_per_s": rec["metrics"]["train_images_per_s"], "memory_fraction": 0.3,
        "reason": "one batch measured (batch 256, ...): run the conv sweep (--suite full) for a recommendation"}]}
    item = next(i for i in build_checklist(merge_runs(_runs(tmp_path, [doc]))) if i.key == "memory")
    assert item.status == PASS and item.status not in (WARN, NOT_MEASURED), item
    assert "one batch measured" in item.summary and "no batch recommended" not in " ".join(item.evidence), item
    assert any("batch 256" in e for e in item.evidence), item.evidence
