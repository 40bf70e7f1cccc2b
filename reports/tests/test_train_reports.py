"""The train family in the reports: throughput and memory against batch (90% line, recommended
batch), the checklist's memory item judged from the training step, the fusion bound item."""

import math

import nbgen
import pytest

from nodebench_reports.families import train_derive as derive_train
from nodebench_reports.checklist import FAIL, NOT_MEASURED, PASS, WARN
from nodebench_reports.assemble import build_checklist
from nodebench_reports.families import train
from nodebench_reports.load import Run, check_document, merge_runs


def data_of(doc):
    check_document(doc, "test.json")
    return merge_runs([Run("test.json", doc)])


def items(doc):
    return {i.key: i for i in build_checklist(data_of(doc))}


def train_doc(**kw):
    return nbgen.make_result(families=("train",), n_gpus=1, **kw)


def test_points_and_recommendations_are_read():
    data = data_of(train_doc())
    pts = derive_train.train_points(data)
    assert {(p.precision, p.layout) for p in pts} == {("fp16", "nhwc"), ("tf32", "nchw")}
    assert any(p.oom for p in pts) and all(p.images_per_s for p in pts if p.status == "ok")
    recs = derive_train.train_recommendations(data)
    assert len(recs) == 2 and all(r.batch and r.memory_batch for r in recs)


def test_memory_item_judged_from_training_step():
    doc = train_doc()
    item = items(doc)["memory"]
    assert item.status == PASS
    assert "largest training batch within the limit" in item.summary
    recs = doc["analysis"]["train_recommendation"]
    top = max(r["memory_batch_fraction"] for r in recs)
    assert f"{top:.0%}" in item.summary
    assert any("out of memory" in e for e in item.evidence)
    assert any("accumulation" in e for e in item.evidence)
    assert any("analysis.train_recommendation" in e for e in item.evidence)


@pytest.mark.parametrize("frac,status", [(0.85, PASS), (0.93, WARN), (0.99, FAIL)])
def test_memory_item_status_follows_fraction_at_recommended_batch(frac, status):
    doc = train_doc()
    for r in doc["analysis"]["train_recommendation"]:
        r["memory_fraction"] = frac
    assert items(doc)["memory"].status == status


def test_sweep_that_stopped_far_below_the_limit_is_not_called_full():
    # Only batches up to 256 measured, at 9% of memory, no out-of-memory batch: the item must not
    # claim that the next doubling would not fit; it asks for the full sweep and warns.
    doc = train_doc()
    doc["records"] = [r for r in doc["records"] if not (r["family"] == "train" and r["status"] != "ok")]
    for r in doc["analysis"]["train_recommendation"]:
        r["memory_batch_fraction"] = 0.09
        r["memory_fraction"] = 0.05
    item = items(doc)["memory"]
    assert item.status == WARN
    assert "next doubling does not stay" not in item.summary
    assert "run the full train sweep" in item.summary and "9%" in item.summary


def test_no_batch_within_limit_warns():
    doc = train_doc()
    for r in doc["analysis"]["train_recommendation"]:
        r.update(batch=None, memory_batch=None, memory_batch_fraction=None,
                 reason="no measured batch stays within 90% of device memory")
    item = items(doc)["memory"]
    assert item.status == WARN
    assert any("no measured batch" in e for e in item.evidence)


def test_fusion_item_states_measured_share():
    doc = train_doc()
    for r in doc["records"]:
        if r["family"] == "train" and r["status"] == "ok":
            r["metrics"]["elementwise_share"] = 0.27
    item = items(doc)["fusion"]
    assert item.status == PASS
    assert "at most 27% of the step" in item.summary
    assert "XLA" in item.title and "torch.compile" in item.title


def fused_doc(memory_gbps=None):
    """A train sweep whose ok records are fused steps with per-kind times and byte floors; a
    memory-family record of memory_gbps on GPU 0 when given."""
    doc = train_doc()
    for r in doc["records"]:
        if r["family"] == "train" and r["status"] == "ok":
            r["metrics"].update({"time_bn_ms": 10.0, "time_elementwise_ms": 0.0, "time_pool_ms": 1.0,
                                 "time_update_ms": 0.5, "step_time_ms": 40.0, "bn_floor_bytes": 20e9,
                                 "elementwise_floor_bytes": 0.0, "pool_floor_bytes": 2e9, "update_floor_bytes": 0.4e9})
            r.setdefault("details", {})["fusion"] = {"setting": "1", "fused_layers": 49, "batch_norm_layers": 53}
    if memory_gbps:
        tmpl = next(r for r in doc["records"] if r["family"] == "train" and r["status"] == "ok")
        for gbps, kernel in ((memory_gbps, "copy"), (memory_gbps / 2, "scale")):
            m = dict(tmpl, family="memory", id=f"memory/{kernel}/4096MiB", params={"kernel": kernel, "size": "4096MiB"},
                     metrics={"gbps": gbps}, details={})
            doc["records"].append(m)
    return doc


def best_train(doc):
    ok = [r for r in doc["records"] if r["family"] == "train" and r["status"] == "ok"]
    return max(ok, key=lambda r: (r["metrics"]["images_per_s"], r["params"]["batch"]))


def test_fusion_item_on_a_fused_step_bounds_what_a_compiler_could_still_save():
    doc = fused_doc(memory_gbps=4000.0)
    best = best_train(doc)
    item = items(doc)["fusion"]
    # At 4000 GB/s (the higher memory record): bn 20 GB -> 5 ms, pool 2 GB -> 0.5 ms, update
    # 0.4 GB -> 0.1 ms; above their floors: (10 - 5) + 0 + (1 - 0.5) + (0.5 - 0.1) = 5.9 ms of 40.
    assert item.status == PASS
    assert "at most 15% of it (5.90 of 40.00 ms)" in item.summary, item.summary
    assert f"batch {best['params']['batch']}" in item.summary
    assert "at 4000 GB/s" in item.summary and "fused step" in item.summary
    assert any("memory/copy/4096MiB" in e for e in item.evidence)
    assert any(e.startswith("bn_act: 10.00 ms") and "5.00 ms at 4000 GB/s" in e for e in item.evidence)
    h = derive_train.fusion_headroom(data_of(doc))
    assert h.savings_ms == pytest.approx(5.9) and h.share == pytest.approx(5.9 / 40)


def test_fusion_item_without_a_memory_record_bounds_by_the_kinds_whole_time():
    item = items(fused_doc())["fusion"]
    # No floor time: 10 + 0 + 1 + 0.5 = 11.5 ms of 40 (29%).
    assert "at most 29% of it (11.50 of 40.00 ms)" in item.summary, item.summary
    assert "no memory-family record" in item.summary


def test_fusion_item_on_an_unfused_step_keeps_the_share():
    doc = fused_doc(memory_gbps=4000.0)
    for r in doc["records"]:
        if r["family"] == "train" and r["status"] == "ok":
            r["details"]["fusion"] = {"setting": "0", "fused_layers": 0, "batch_norm_layers": 53}
            r["metrics"]["elementwise_share"] = 0.69
    assert "at most 69% of the step" in items(doc)["fusion"].summary


def test_fusion_item_not_measured_without_train():
    doc = nbgen.make_result(families=("gemm",), n_gpus=1)
    assert items(doc)["fusion"].status == NOT_MEASURED


def test_plot_marks_limit_and_recommended_batch(monkeypatch):
    from nodebench_reports import plots
    figures = []
    monkeypatch.setattr(plots, "_png", lambda fig: figures.append(fig) or b"png")
    doc = train_doc()
    plot = train.plot_train(data_of(doc))
    assert plot.png == b"png" and len(figures) == 1
    ax_t, ax_m = [a for a in figures[0].axes if a.get_visible()][:2]
    assert "throughput" in ax_t.get_title() and "memory" in ax_m.get_title()
    # the memory limit line at 0.9 and a star at each recommended batch
    assert any(list(line.get_ydata()) == [0.9, 0.9] for line in ax_m.get_lines())
    rec_batches = sorted(r["batch"] for r in doc["analysis"]["train_recommendation"])
    stars = sorted(int(line.get_xdata()[0]) for line in ax_t.get_lines() if line.get_marker() == "*")
    assert stars == rec_batches
    labels = ax_t.get_legend_handles_labels()[1]
    assert any(lab.startswith("recommended fp16 nhwc") for lab in labels)
    # the call-by-call step dashed beside each series, at the records' eager_images_per_s
    dashed = {line.get_label(): list(line.get_ydata()) for line in ax_t.get_lines() if line.get_linestyle() == "--"}
    for prec, layout in (("fp16", "nhwc"), ("tf32", "nchw")):
        want = [r["metrics"]["eager_images_per_s"] for r in doc["records"] if r["family"] == "train"
                and r["status"] == "ok" and r["params"]["precision"] == prec and r["params"]["layout"] == layout]
        assert dashed[f"{prec} {layout}, call by call"] == pytest.approx(want)
    assert "out of memory" in labels


def test_plot_missing_without_train():
    plot = train.plot_train(data_of(nbgen.make_result(families=("gemm",), n_gpus=1)))
    assert plot.png is None and "not measured" in plot.missing


def _host_bound_batches(doc, prec, layout, share=0.9):
    """The batches whose call-by-call images/s is below `share` of the graph step's, from the records."""
    return sorted(r["params"]["batch"] for r in doc["records"] if r["family"] == "train" and r["status"] == "ok"
                  and r["params"]["precision"] == prec and r["params"]["layout"] == layout
                  and r["metrics"]["eager_images_per_s"] < share * r["metrics"]["images_per_s"])


def test_host_item_names_the_largest_host_bound_batch():
    doc = train_doc()
    item = items(doc)["host"]
    # nbgen's sweep: the graph step runs b / (ips (1 - 0.6 e^(-b/40))) seconds (ips 3000 fp16, 1300
    # tf32) and the call-by-call step at least 25 ms, so a batch is host-bound (call by call below
    # 90% of the graph step's images/s) when its graph step is under 22.5 ms: fp16 up to batch 32
    # (14.6 ms; 64: 24.3 ms), tf32 up to 16 (20.6 ms; 32: 33.7 ms).
    def bound(ips):
        return [b for b in nbgen.TRAIN_BATCHES if b / (ips * (1 - 0.6 * math.exp(-b / 40.0))) < 0.9 * 0.025]
    assert _host_bound_batches(doc, "fp16", "nhwc") == bound(3000.0) and max(bound(3000.0)) == 32
    assert _host_bound_batches(doc, "tf32", "nchw") == bound(1300.0) and max(bound(1300.0)) == 16
    assert "fp16 nhwc: host-bound up to batch 32" in item.summary
    assert "tf32 nchw: host-bound up to batch 16" in item.summary
    # Both recommended batches (128) are above the host-bound ones: the host keeps up there.
    assert {r["precision"]: r["batch"] for r in doc["analysis"]["train_recommendation"]} == {"fp16": 128, "tf32": 128}
    assert item.status == PASS


def test_host_item_warns_when_the_recommended_batch_is_host_bound():
    doc = train_doc()
    rec = doc["analysis"]["train_recommendation"][0]
    for r in doc["records"]:  # every batch of that series host-bound: call by call at half the rate
        if r["family"] == "train" and r["status"] == "ok" and r["params"]["precision"] == rec["precision"]:
            r["metrics"]["eager_images_per_s"] = 0.5 * r["metrics"]["images_per_s"]
    item = items(doc)["host"]
    assert item.status == WARN
    assert f"the recommended batch {rec['batch']} is among them" in item.summary and "CUDA graphs" in item.summary


def test_host_item_passes_when_the_host_keeps_up():
    doc = train_doc()
    for r in doc["records"]:
        if r["family"] == "train" and r["status"] == "ok":
            r["metrics"]["eager_images_per_s"] = 0.97 * r["metrics"]["images_per_s"]
    item = items(doc)["host"]
    assert item.status == PASS and "the host keeps up at every measured batch" in item.summary


def test_host_item_not_measured_without_call_by_call_figures():
    doc = train_doc()
    for r in doc["records"]:
        if r["family"] == "train":
            r["metrics"].pop("eager_images_per_s", None)
    assert items(doc)["host"].status == NOT_MEASURED


def test_a_sweep_stopped_at_its_plateau_is_not_called_out_of_memory():
    # The sweeps stopped at their plateau (records skipped, reason_kind plateau) far below the
    # limit; another series ran out of memory. The item must neither say the next doubling would
    # not fit nor ask for a sweep that ran: it passes and says why the memory stays unused.
    doc = train_doc()
    recs = doc["analysis"]["train_recommendation"]
    for r in recs:
        r["memory_batch_fraction"] = 0.29
        r["memory_fraction"] = 0.15
    series = {(r["precision"], r["layout"]) for r in recs}
    doc["records"] = [r for r in doc["records"] if not (r["family"] == "train" and r["status"] != "ok")]
    for prec, layout in sorted(series):
        base = next(r for r in doc["records"] if r["family"] == "train" and r["params"]["precision"] == prec
                    and r["params"]["layout"] == layout)
        skipped = dict(base, id=f"train/resnet50/{prec}/{layout}/b8192", case=f"resnet50/{prec}/{layout}/b8192",
                       params=dict(base["params"], batch=8192), status="skipped", reason_kind="plateau",
                       reason="not run: the sweep reached its plateau", stats=None, metrics={}, samples_s=[],
                       percent_of_peak=None, flags=[], details={"memory_plan_fraction": 0.58})
        doc["records"].append(skipped)
        # A larger batch the memory plan rules out (as every full sweep has) does not make it "full".
        doc["records"].append(dict(skipped, id=f"train/resnet50/{prec}/{layout}/b16384",
                                   case=f"resnet50/{prec}/{layout}/b16384", params=dict(base["params"], batch=16384),
                                   reason_kind="oom", reason="out of memory by the step's memory plan", details={}))
    item = items(doc)["memory"]
    assert item.status == PASS, item.summary
    assert "next doubling does not stay" not in item.summary
    assert "run the full train sweep" not in item.summary
    assert "throughput plateau" in item.summary and "29%" in item.summary
    assert any("before batch 8192" in e and "58%" in e for e in item.evidence)
