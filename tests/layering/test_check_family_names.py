#!/usr/bin/env python3
"""check_family_names.py on small trees made here: each offence it exists for is found, and what
it must leave alone (comments, a subcommand that shares a family's name, the core's own metrics,
bare units, a family's code) is not. Exit 1 on the first wrong answer."""
import os
import subprocess
import sys
import tempfile

PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_family_names.py")
METRIC_HPP = """enum class Unit {
  tflops, gbps,  // rates
  us, ms, bytes,
};
inline constexpr MetricDecl kTimeMetric{"time", Unit::us, Better::lower};
"""
FAMILY = """void run(CaseContext& ctx) {
  ctx.metric("step_time", Unit::ms, 1.0);
  ctx.metric("", Unit::gbps, 2.0);
}
inline constexpr MetricDecl kPeak{"peak_memory", Unit::bytes};
"""


def tree(root, harness_code):
    os.makedirs(os.path.join(root, "benchmarks", "train"))
    os.makedirs(os.path.join(root, "benchmarks", "shared"))  # no family.cmake: not a family
    os.makedirs(os.path.join(root, "harness", "bench"))
    with open(os.path.join(root, "benchmarks", "train", "family.cmake"), "w") as f:
        f.write("nb_family(train SOURCES train.cpp)\n")
    with open(os.path.join(root, "benchmarks", "train", "train.cpp"), "w") as f:
        f.write(FAMILY)
    with open(os.path.join(root, "harness", "bench", "metric.hpp"), "w") as f:
        f.write(METRIC_HPP)
    with open(os.path.join(root, "harness", "bench", "core.cpp"), "w") as f:
        f.write(harness_code)


def run(harness_code):
    with tempfile.TemporaryDirectory() as root:
        tree(root, harness_code)
        p = subprocess.run([sys.executable, PROBE, root], capture_output=True, text=True)
        return p.returncode, p.stdout


CASES = [
    # (harness code, expected exit code, a part of the output expected)
    ('if (id.rfind("train/resnet50/", 0) == 0) use(r);\n', 1, "picks records by the train family's id"),
    ('double s = num(m, "step_time_ms");\n', 1, "reads a metric of the train family by name"),
    ('auto mem = m["peak_memory_bytes"];\n', 1, "reads a metric of the train family by name"),
    ('if (r.value("family", "") == "train") n++;\n', 1, "picks records by the family's name"),
    ('const json& t = at(at(doc, "analysis"), "train");\n', 1, "reads the train family's analysis by name"),
    ('// reads "step_time_ms" of "train/resnet50/" records\n/* "train/x" */ int x = 0;\n', 0, "0 place(s)"),
    ('if (name == "train") return cmd_train();\n', 0, "0 place(s)"),  # a subcommand's name
    ('double t = num(m, "time_us") + num(m, "gbps");\n', 0, "0 place(s)"),  # the core's own, a bare unit
    ('throw Error("no ok train record");\n', 0, "0 place(s)"),  # a message, not a pick
]


def main():
    bad = 0
    for code, want_rc, want_text in CASES:
        rc, out = run(code)
        if rc != want_rc or want_text not in out:
            print(f"FAIL: {code.strip()!r}: exit {rc} (expected {want_rc}), output:\n{out}")
            bad += 1
    # No family at all: the probe checks nothing and says so (exit 1), never passes vacuously.
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "benchmarks"))
        os.makedirs(os.path.join(root, "harness", "bench"))
        with open(os.path.join(root, "harness", "bench", "metric.hpp"), "w") as f:
            f.write(METRIC_HPP)
        p = subprocess.run([sys.executable, PROBE, root], capture_output=True, text=True)
        if p.returncode != 1:
            print(f"FAIL: a tree without families passed:\n{p.stdout}")
            bad += 1
    print(f"{len(CASES) + 1 - bad} of {len(CASES) + 1} probe cases as expected")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
