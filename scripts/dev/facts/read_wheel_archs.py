#!/usr/bin/env python3
"""Re-reads the GPU architectures of the wheels harness/profiles/arch_facts.json names, so that a
release that drops (or keeps) sm_60/61/70 is one run away from being known.

    python3 scripts/dev/facts/read_wheel_archs.py --nodebench build/nodebench --out results/cpu/DATE-wheel-archs
    python3 scripts/dev/facts/read_wheel_archs.py --nodebench build/nodebench --wheels nvidia-nccl-cu12==2.29.3

For each 'builds' row of arch_facts.json whose 'read' is 'wheel' (or each PACKAGE==VERSION given
with --wheels), it downloads the wheel from PyPI (`pip download --no-deps`, x86_64 manylinux, into
--download-dir, never into the repository), takes the shared libraries the row names out of it (all
of the wheel's lib*.so* when the row names none it holds), and reads their fatbin headers with
`nodebench fatbin --json` (harness/base/fatbin.cpp: SASS and PTX architectures, no cuobjdump, no
GPU). It writes, under --out:

- wheel_archs.json: per wheel, per library, the SASS and PTX architectures read; their union;
  whether sm_60, sm_61 and sm_70 SASS are there; and, for rows of arch_facts.json, whether that
  agrees with the row's 'sass' and 'carries' (the row is the fact the fixes print);
- wheel_archs.txt: the same as a table.

Rows read from a release note, or from download.pytorch.org (the PyTorch wheels; not reachable
from the machines this was written on), are listed as not re-read.

Exit status: 0 every wheel read agrees with arch_facts.json; 1 a disagreement (the file needs an
update: the output says which row and what was read); 2 bad usage or a wheel/tool that failed.
"""
import argparse
import fnmatch
import json
import pathlib
import re
import subprocess
import sys
import tempfile
import zipfile

REPO = pathlib.Path(__file__).resolve().parents[3]
FACTS = REPO / "harness/profiles/arch_facts.json"
# Platforms NVIDIA's wheels are tagged with (older and newer manylinux tags both occur).
PLATFORMS = ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_18_x86_64", "manylinux_2_27_x86_64",
             "manylinux_2_28_x86_64"]
WATCHED = ("sm_60", "sm_61", "sm_70")


def fail(msg):
    print("read_wheel_archs: " + msg, file=sys.stderr)
    sys.exit(2)


def cc_of(name):
    m = re.match(r"(?:sm|compute)_(\d+)", name)
    return int(m.group(1)) if m else 0


def download(spec, into):
    """The wheel file for 'package==version', downloaded once into `into`."""
    pkg, _, ver = spec.partition("==")
    if not pkg or not ver:
        fail("'%s' is not PACKAGE==VERSION" % spec)
    stem = pkg.replace("-", "_") + "-" + ver + "-"
    have = [p for p in into.glob("*.whl") if p.name.startswith(stem)]
    if have:
        return have[0]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.11",
           "-d", str(into), spec]
    for p in PLATFORMS:
        cmd[4:4] = ["--platform", p]
    r = subprocess.run(cmd, capture_output=True, text=True)
    have = [p for p in into.glob("*.whl") if p.name.startswith(stem)]
    if r.returncode != 0 or not have:
        fail("pip download %s failed:\n%s" % (spec, (r.stderr or r.stdout)[-2000:]))
    return have[0]


def libraries_in(wheel, wanted):
    """The wheel's shared libraries whose names start with one of `wanted` (all lib*.so* if none
    match), as (name in the wheel, member)."""
    with zipfile.ZipFile(wheel) as z:
        libs = [n for n in z.namelist() if fnmatch.fnmatch(pathlib.PurePosixPath(n).name, "lib*.so*")]
    chosen = [n for n in libs if any(pathlib.PurePosixPath(n).name.startswith(w) for w in wanted)]
    return chosen or libs


def read_archs(nodebench, wheel, members):
    """{library name: {"sass": [...], "ptx": [...]}} from `nodebench fatbin --json`."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="nb-wheel-") as tmp, zipfile.ZipFile(wheel) as z:
        paths = []
        for m in members:
            p = pathlib.Path(tmp) / pathlib.PurePosixPath(m).name
            with z.open(m) as src, open(p, "wb") as dst:
                while True:
                    chunk = src.read(1 << 24)
                    if not chunk:
                        break
                    dst.write(chunk)
            paths.append(str(p))
        r = subprocess.run([nodebench, "fatbin", "--json"] + paths, capture_output=True, text=True)
        if r.returncode not in (0, 1):
            fail("%s fatbin failed (exit %d): %s" % (nodebench, r.returncode, r.stderr[-2000:]))
        for line in r.stdout.splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            j = json.loads(line)
            name = pathlib.Path(j.get("file", "?")).name
            if "error" in j:
                fail("%s: %s" % (name, j["error"]))
            out[name] = {"sass": sorted(j.get("sass", []), key=cc_of), "ptx": sorted(j.get("ptx", []), key=cc_of)}
    if not out:
        fail("nodebench fatbin printed nothing for %s" % wheel.name)
    return out


def summarise(libs):
    sass = sorted({a for l in libs.values() for a in l["sass"]}, key=cc_of)
    ptx = sorted({a for l in libs.values() for a in l["ptx"]}, key=cc_of)
    # A library "carries" an architecture when every library read has its SASS (an operation
    # whose library lacks it cannot run): the weakest library decides.
    carries = {w: all(w in l["sass"] for l in libs.values() if l["sass"]) for w in WATCHED}
    return {"sass": sass, "ptx": ptx, "carries": carries, "lowest_sass": sass[0] if sass else None}


def compare(row, summary):
    """Differences between a row of arch_facts.json and what was read ([] when it agrees)."""
    diffs = []
    for w in WATCHED:
        want = row.get("carries", {}).get(w)
        if want is not None and want != summary["carries"][w]:
            diffs.append("%s: arch_facts.json says %s, the wheel %s" % (w, want, summary["carries"][w]))
    listed = [a.strip() for a in row.get("sass", "").split(",") if re.fullmatch(r"sm_\d+[af]?", a.strip())]
    if listed:
        lowest = min(listed, key=cc_of)
        if summary["lowest_sass"] and cc_of(lowest) != cc_of(summary["lowest_sass"]):
            diffs.append("lowest SASS: arch_facts.json says %s, the wheel %s" % (lowest, summary["lowest_sass"]))
    return diffs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--nodebench", required=True, help="the nodebench binary (with the fatbin command)")
    ap.add_argument("--out", help="folder for wheel_archs.json and wheel_archs.txt (default: print only)")
    ap.add_argument("--download-dir", default=str(pathlib.Path(tempfile.gettempdir()) / "nodebench-wheels"),
                    help="where the wheels go (default: %(default)s; kept for a second run)")
    ap.add_argument("--wheels", nargs="*", help="PACKAGE==VERSION to read instead of arch_facts.json's wheel rows")
    ap.add_argument("--only", nargs="*", help="of arch_facts.json's wheel rows, only these PACKAGE==VERSION")
    ap.add_argument("--wheel-files", nargs="*", help="wheels already at hand, read instead of downloading (their "
                    "names give PACKAGE==VERSION and so the arch_facts.json row)")
    a = ap.parse_args()
    if not pathlib.Path(a.nodebench).is_file():
        fail("--nodebench %s: no such file" % a.nodebench)
    dl = pathlib.Path(a.download_dir)
    dl.mkdir(parents=True, exist_ok=True)
    if REPO in dl.resolve().parents or dl.resolve() == REPO:
        fail("--download-dir %s is inside the repository" % dl)
    facts = json.loads(FACTS.read_text())
    rows = facts["builds"]
    jobs = []  # (spec, row or None)
    local = {}
    for w in a.wheel_files or []:
        p = pathlib.Path(w)
        m = re.match(r"([A-Za-z0-9_.]+?)-([0-9][^-]*)-", p.name)
        if not p.is_file() or not m:
            fail("--wheel-files %s: not a wheel file" % w)
        local[m.group(1).replace("_", "-") + "==" + m.group(2)] = p
    if a.wheel_files:
        for spec in local:
            pkg, _, ver = spec.partition("==")
            jobs.append((spec, next((r for r in rows if r["package"] == pkg and r["version"] == ver), None)))
    elif a.wheels:
        for spec in a.wheels:
            pkg, _, ver = spec.partition("==")
            row = next((r for r in rows if r["package"] == pkg and r["version"] == ver), None)
            jobs.append((spec, row))
    else:
        for r in rows:
            spec = r["package"] + "==" + r["version"]
            if r.get("read") == "wheel" and (not a.only or spec in a.only):
                jobs.append((spec, r))
    not_read = [{"component": r["component"], "package": r["package"], "version": r["version"], "read": r.get("read"),
                 "why": "read from %s, not re-read here" % r.get("read")}
                for r in rows if r.get("read") != "wheel"]
    results, disagree = [], 0
    for spec, row in jobs:
        wheel = local.get(spec) or download(spec, dl)
        wanted = [l.strip() for l in (row or {}).get("libraries", "").split(",") if l.strip().startswith("lib")]
        libs = read_archs(a.nodebench, wheel, libraries_in(wheel, wanted))
        s = summarise(libs)
        diffs = compare(row, s) if row else []
        disagree += bool(diffs)
        results.append({"wheel": wheel.name, "spec": spec, "libraries": libs, **s,
                        "arch_facts_row": bool(row), "agrees": not diffs if row else None, "differences": diffs})
    doc = {"about": "GPU architectures of the wheels arch_facts.json names, read with `nodebench fatbin` "
                    "(scripts/dev/facts/read_wheel_archs.py); 'carries' is true when every library read has that SASS",
           "nodebench": a.nodebench, "wheels": results, "not_re_read": not_read}
    lines = []
    for r in results:
        lines.append("%-58s lowest SASS %-7s sm_60 %-5s sm_61 %-5s sm_70 %-5s %s" % (
            r["wheel"], r["lowest_sass"], r["carries"]["sm_60"], r["carries"]["sm_61"], r["carries"]["sm_70"],
            "agrees with arch_facts.json" if r["agrees"] else
            ("DIFFERS: " + "; ".join(r["differences"]) if r["arch_facts_row"] else "(no arch_facts.json row)")))
        for name, l in sorted(r["libraries"].items()):
            lines.append("    %-40s SASS %s; PTX %s" % (name, " ".join(l["sass"]) or "-", " ".join(l["ptx"]) or "-"))
    for n in not_read:
        lines.append("not re-read: %s %s %s (%s)" % (n["component"], n["package"], n["version"], n["why"]))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.out:
        out = pathlib.Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "wheel_archs.json").write_text(json.dumps(doc, indent=1) + "\n")
        (out / "wheel_archs.txt").write_text(text)
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main())
