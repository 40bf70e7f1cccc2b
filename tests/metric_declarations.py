#!/usr/bin/env python3
"""The C++ metric declarations (`nodebench list --metrics --json`) against the reports' (each
family module's METRICS, reports/nodebench_reports/families/*.py, and metrics.COMMON): every metric
a C++ family registers is declared by that family's reports module (or is common to both) with the
same direction where C++ states one; the harness's common metrics are common in the reports too.
A reports declaration no C++ family writes is named as a note. Exit 1 naming each mismatch.

Usage: metric_declarations.py NODEBENCH REPORTS_DIR [--flip FAMILY/NAME]
  --flip turns one reports declaration's direction round first (the test that the check fails)."""
import argparse
import dataclasses
import fnmatch
import json
import subprocess
import sys


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("nodebench")
    ap.add_argument("reports_dir")
    ap.add_argument("--flip", default="")
    a = ap.parse_args(argv)
    sys.path.insert(0, a.reports_dir)
    from nodebench_reports import metrics  # noqa: E402 (the reports package of this checkout)

    out = subprocess.run([a.nodebench, "list", "--metrics", "--json"], check=True, capture_output=True, text=True)
    cpp = json.loads(out.stdout)
    py = metrics.all_declared()
    common = dict(metrics.COMMON)
    if a.flip:
        fam, name = a.flip.split("/", 1)
        table = common if fam == "common" else py[fam]
        m = table[name]
        table[name] = dataclasses.replace(m, better=metrics.LOWER if m.better == metrics.HIGHER else metrics.HIGHER)

    errors, notes = [], []
    covered = {}  # family -> names of its reports table some C++ declaration matches
    for e in cpp:
        fam, name, better = e["family"], e["name"], e["better"]
        where = f"{fam or 'common'}/{name}"
        if fam is None:
            found = [common[name]] if name in common else []
        else:
            if fam not in py:
                errors.append(f"{where}: family '{fam}' has no reports module declaring METRICS")
                continue
            table = py[fam]
            if "*" in name:
                keys = [k for k in table if k == name or fnmatch.fnmatchcase(k, name)]
            else:
                keys = [k for k in table if k == name or ("*" in k and fnmatch.fnmatchcase(name, k))]
            covered.setdefault(fam, set()).update(keys)
            found = [table[k] for k in keys] or ([common[name]] if name in common else [])
        if not found:
            errors.append(f"{where}: written by C++, declared by no reports module")
            continue
        for m in found:
            if better != "none" and m.better != better:
                errors.append(f"{where}: direction {better} in C++, {m.better} in the reports ({m.name})")
    cpp_common = {e["name"] for e in cpp if e["family"] is None}
    for fam in sorted(covered):
        for k in sorted(set(py[fam]) - covered[fam] - cpp_common):
            notes.append(f"{fam}/{k}: declared by the reports, written by no C++ declaration of {fam}")
    for n in notes:
        print("note:", n)
    for e in errors:
        print("mismatch:", e)
    print(f"{len(cpp)} C++ declarations, {len(errors)} mismatch(es), {len(notes)} note(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
