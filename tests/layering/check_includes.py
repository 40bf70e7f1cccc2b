#!/usr/bin/env python3
"""Every `#include "..."` of our own code in harness/, benchmarks/ and kernels/ is either a file of
the includer's own folder or a path through an exposed root ("run/plan.hpp",
"kernels/train/train_kernels.cuh", "shared/cudnn/cudnn_conv.hpp"), and goes to the same or a lower
layer (docs/ARCHITECTURE.md). The build enforces the order; this also catches `../` paths, which
would get around it, and names each offence. Exit 1 with the list, 0 when clean."""
import os
import re
import sys

ORDER = {"base": 0, "node": 1, "cluster": 2, "bench": 3, "run": 4, "output": 5, "check": 6, "advise": 6, "app": 7}
GENERATED = {"build_info.hpp", "git_commit.hpp"}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def where(path):
    """(kind, level, folder) of a source file relative to the repository."""
    parts = path.split("/")
    if parts[0] == "harness" and parts[1] in ORDER:
        return "layer", ORDER[parts[1]], parts[1]
    if parts[0] == "benchmarks":
        return "family", 3.5, parts[1]
    if parts[0] == "kernels":
        return "kernels", -1, parts[1]
    return None


def offences(root):
    out = []
    for top in ("harness", "benchmarks", "kernels"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith((".cpp", ".hpp", ".cu", ".cuh")):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root)
                w = where(rel)
                if w is None:
                    continue
                kind, level, folder = w
                with open(full, encoding="utf-8") as f:
                    text = f.read()
                for inc in INCLUDE.findall(text):
                    out.extend(judge(rel, kind, level, folder, inc, dirpath))
    return out


def judge(rel, kind, level, folder, inc, dirpath):
    if inc.startswith("..") or "/../" in inc:
        return [f"{rel}: relative include \"{inc}\""]
    head = inc.split("/")[0]
    if "/" not in inc:
        if inc in GENERATED or os.path.exists(os.path.join(dirpath, inc)):
            return []
        return [f"{rel}: \"{inc}\" is not in its own folder: include it by path"]
    if kind == "kernels":
        return [] if head == "kernels" else [f"{rel}: kernels include only CUDA headers and kernels/, not \"{inc}\""]
    if head in ORDER:
        if ORDER[head] > level or (kind == "layer" and ORDER[head] == level and head != folder):
            return [f"{rel}: \"{inc}\" is a layer above (or beside) {folder}"]
        return []
    if head == "shared":
        return [] if kind == "family" else [f"{rel}: the library cannot include benchmarks' shared code \"{inc}\""]
    if head == "kernels":
        return []
    return [f"{rel}: \"{inc}\" is neither a layer, kernels/ nor shared/"]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    bad = offences(root)
    for b in bad:
        print(b)
    print(f"{len(bad)} include(s) against the layering rule")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
