#!/usr/bin/env python3
"""No code of the harness (harness/, comments aside) knows a family by name: what a family knows
lives in its folder (benchmarks/<family>/) behind the interfaces the core defines
(bench/contributions.hpp, bench/metric.hpp's MetricDecl), and the core iterates the registries.

An offence is a string literal in code under harness/ that
  - starts with a family's id ("<family>/...": picks records by id),
  - is a family's name compared with a record's family or id (== or !=: picks records), or read
    as a key of a document's "analysis" (reads a family's analysis by name),
  - is the name of a metric a family declares (reads the family's metric by name).
Family names are the folders of benchmarks/ with a family.cmake; a family's metric names are
derived from what its sources declare ("stem", Unit::<unit>: a MetricDecl, ctx.metric(...),
make_metric(...)) as the harness names them (stem_unit; a bare unit for an empty stem). Left out:
bare unit names (a case's throughput metric, named by its unit alone) and names the core declares
itself (a MetricDecl or make_metric in harness/: time_us, latency_us, ...). Exit 1 with the list
of offences, 0 when clean."""
import os
import re
import sys

SOURCES = (".cpp", ".hpp", ".cu", ".cuh", ".in")
DECL = re.compile(r'"([a-z0-9_]*)"\s*,\s*Unit::([a-z_]+)')
CORE_DECL = re.compile(r'(?:MetricDecl\s+\w+\s*\{|make_metric\s*\()\s*"([a-z0-9_]*)"\s*,\s*Unit::([a-z_]+)')
UNITS = re.compile(r"enum class Unit\s*\{(.*?)\};", re.S)
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
# A comparison with a family's name picks records when the line is about a record's family or id
# (a subcommand that shares a family's name, `name == "burn"`, does not).
ABOUT_RECORD = re.compile(r'\bfamily\b|"family"|\bid\b|"id"')


def sources(top):
    for dirpath, _, files in os.walk(top):
        for name in sorted(files):
            if name.endswith(SOURCES):
                yield os.path.join(dirpath, name)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def strip_comments(text):
    """The text with // and /* */ comments blanked (line numbers kept), string literals untouched."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append("\n" * text.count("\n", i, j))  # raw strings (embedded data): not code
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def families(root):
    bench = os.path.join(root, "benchmarks")
    return sorted(d for d in os.listdir(bench) if os.path.isfile(os.path.join(bench, d, "family.cmake")))


def metric_name(stem, unit):
    return f"{stem}_{unit}" if stem else unit


def units(root):
    text = read(os.path.join(root, "harness", "bench", "metric.hpp"))
    body = re.sub(r"//[^\n]*", "", UNITS.search(text).group(1))
    return {u.strip() for u in body.split(",") if u.strip()}


def family_metrics(root, fams):
    """{metric name: the families that declare it}, less bare units and the core's own names."""
    bare = units(root)
    core = set()
    for path in sources(os.path.join(root, "harness")):
        for stem, unit in CORE_DECL.findall(strip_comments(read(path))):
            core.add(metric_name(stem, unit))
    out = {}
    for fam in fams:
        for path in sources(os.path.join(root, "benchmarks", fam)):
            for stem, unit in DECL.findall(strip_comments(read(path))):
                if unit not in bare:
                    continue
                name = metric_name(stem, unit)
                if name not in bare and name not in core:
                    out.setdefault(name, set()).add(fam)
    return out


def offences(root):
    fams = families(root)
    metrics = family_metrics(root, fams)
    compared = [re.compile(r'(?:==|!=)\s*"(%s)"|"(%s)"\s*(?:==|!=)' % (f, f)) for f in fams]
    analysis = [re.compile(r'"analysis"\s*(?:\)\s*,|\]\s*\[|\)\s*\.\s*(?:at|value|find|contains)\s*\()\s*"(%s)"' % f)
                for f in fams]
    out = []
    for path in sources(os.path.join(root, "harness")):
        rel = os.path.relpath(path, root)
        for n, line in enumerate(strip_comments(read(path)).split("\n"), 1):
            for lit in LITERAL.findall(line):
                fam = next((f for f in fams if lit.startswith(f + "/")), None)
                if fam:
                    out.append(f'{rel}:{n}: "{lit}" picks records by the {fam} family\'s id')
                elif lit in metrics:
                    who = ", ".join(sorted(metrics[lit]))
                    out.append(f'{rel}:{n}: "{lit}" reads a metric of the {who} family by name')
            for f, rx in zip(fams, compared):
                if rx.search(line) and ABOUT_RECORD.search(line):
                    out.append(f'{rel}:{n}: "{f}" picks records by the family\'s name')
            for f, rx in zip(fams, analysis):
                if rx.search(line):
                    out.append(f'{rel}:{n}: "{f}" reads the {f} family\'s analysis by name')
    return out, fams, metrics


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    bad, fams, metrics = offences(root)
    for b in bad:
        print(b)
    print(f"{len(bad)} place(s) in harness/ that know a family by name "
          f"({len(fams)} families, {len(metrics)} family metric names checked)")
    # A probe that finds no family or no metric checks nothing: fail rather than pass vacuously.
    if not fams or not metrics:
        print("no families or no family metrics found under benchmarks/: the probe would check nothing")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
