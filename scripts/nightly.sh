#!/usr/bin/env bash
# Nightly check of a GPU node: run the quick suite, compare with a baseline, keep the history,
# write the report. See --help.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prog=$(basename "$0")

usage() {
  cat <<EOF
Usage: $prog [options] BASELINE

Runs the nodebench suite on this node, compares the new result file with BASELINE (a result
file from an earlier, known-good run on the same GPU model), adds the new run to the history
database and writes the HTML report.

Steps:
  1. \$NODEBENCH_BIN run --suite SUITE --out OUT       (the new result file appears in OUT)
  2. nodebench-report compare BASELINE NEW             -> OUT/compare.txt, compare.json, compare.junit.xml
  3. nodebench-report ingest NEW --db DB               (DB: an SQLite file or a postgresql:// URL)
  4. nodebench-report html NEW -o OUT/report            -> OUT/report/report.html, summary.md

Arguments:
  BASELINE            baseline result file (JSON, schema nodebench.result version 1)

Options:
  --out DIR           folder for the run's result file and the reports
                      (default: results/runs/nightly-YYYYmmdd-HHMMSS under the repository)
  --db FILE|URL       history database (default: results/runs/history.sqlite under the repository):
                      an SQLite file, or a PostgreSQL database that a whole fleet writes to,
                      postgresql://USER@HOST/DB or postgresql:///?service=NAME. Credentials come
                      from the environment (PGPASSWORD, PGUSER, ...), ~/.pgpass or a libpq service
                      file (PGSERVICEFILE), never from the URL: a URL with a password is refused
  --suite NAME        suite to run (default: quick)
  --threshold F       slowdown that counts as a regression, 0.05 or 5% (default 0.05)
  --alpha A           significance level of the comparison (default 0.01)
  --test NAME         mannwhitney (default) or bootstrap
  --allow-mismatch    compare even when the GPU models differ
  -h, --help          show this help

Environment:
  NODEBENCH_BIN       the nodebench binary (default: build/nodebench under the repository)
  NODEBENCH_REPORT    the report command (default: nodebench-report when on PATH,
                      else "python3 -m nodebench_reports"); install it with
                      python3 -m pip install -e reports (a postgresql:// DB also needs
                      python3 -m pip install -e 'reports[postgres]')
  PGPASSWORD, PGUSER, PGHOST, PGSERVICEFILE, PGPASSFILE, ...
                      libpq's, for a postgresql:// DB

Exit status (the comparison's):
  0  no regression
  1  regression: a case slower beyond the threshold and significant, or a case that was ok in
     the baseline and failed/wrong/skipped now
  2  bad input or a broken pipeline: missing baseline or binary, no result file, files that do
     not match (schema, GPU model); also when the comparison passed but the run exited with an
     error or the ingest/report step failed (a broken night never passes silently)
  3  no regression, but the run was not stored: the history database could not be reached
     (or stayed busy). The result file and the report are kept; OUT/not-stored.txt holds
     the exact command that stores the run later. A regression (1) or a broken pipeline (2)
     takes precedence over 3; the run is then reported as not stored all the same.
EOF
}

die() { echo "$prog: error: $*" >&2; exit 2; }

out="" db="" suite="quick" baseline=""
compare_opts=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --out) [ $# -ge 2 ] || die "--out needs a folder"; out=$2; shift 2 ;;
    --out=*) out=${1#*=}; shift ;;
    --db) [ $# -ge 2 ] || die "--db needs a file or a postgresql:// URL"; db=$2; shift 2 ;;
    --db=*) db=${1#*=}; shift ;;
    --suite) [ $# -ge 2 ] || die "--suite needs a name"; suite=$2; shift 2 ;;
    --suite=*) suite=${1#*=}; shift ;;
    --threshold|--alpha|--test)
      [ $# -ge 2 ] || die "$1 needs a value"; compare_opts+=("$1" "$2"); shift 2 ;;
    --threshold=*|--alpha=*|--test=*) compare_opts+=("$1"); shift ;;
    --allow-mismatch) compare_opts+=("$1"); shift ;;
    --) shift; break ;;
    -*) echo "$prog: error: unknown option $1" >&2; echo "Try '$prog --help'." >&2; exit 2 ;;
    *) [ -z "$baseline" ] || die "only one BASELINE may be given (got '$baseline' and '$1')"
       baseline=$1; shift ;;
  esac
done
if [ $# -gt 0 ]; then
  if [ -n "$baseline" ] || [ $# -ne 1 ]; then die "only one BASELINE may be given"; fi
  baseline=$1
fi
[ -n "$baseline" ] || { echo "$prog: error: missing BASELINE (a result file to compare with)" >&2
                        echo "Usage: $prog [options] BASELINE; try '$prog --help'." >&2; exit 2; }
[ -f "$baseline" ] || die "baseline '$baseline' is not a file"

bin=${NODEBENCH_BIN:-$repo/build/nodebench}
[ -x "$bin" ] || die "nodebench binary '$bin' not found or not executable (build it, or set NODEBENCH_BIN)"

if [ -n "${NODEBENCH_REPORT:-}" ]; then
  read -r -a report <<<"$NODEBENCH_REPORT"
elif command -v nodebench-report >/dev/null 2>&1; then
  report=(nodebench-report)
else
  report=(python3 -m nodebench_reports)
fi
"${report[@]}" --version >/dev/null 2>&1 \
  || die "the report command '${report[*]}' does not work (python3 -m pip install -e $repo/reports, or set NODEBENCH_REPORT)"

stamp=$(date -u +%Y%m%d-%H%M%S)
out=${out:-$repo/results/runs/nightly-$stamp}
db=${db:-$repo/results/runs/history.sqlite}
case "$db" in
  postgresql://*|postgres://*)
    # a password in the URL would end up in ps, logs and files: refused (and never printed), by the
    # report's own check (historydb.check_url), the one the history applies
    "${report[@]}" check-db "$db" || exit 2 ;;
  *) mkdir -p "$(dirname "$db")" || die "cannot create the folder of '$db'"
     # absolute, so that the saved "store it later" command stores into this history from any folder
     db=$(cd "$(dirname "$db")" && pwd)/$(basename "$db") ;;
esac
mkdir -p "$out" || die "cannot create '$out'"

# 1. run
marker="$out/.nightly-start"
: >"$marker" || die "cannot write in '$out'"
echo "== run: $bin run --suite $suite --out $out"
"$bin" run --suite "$suite" --out "$out"
run_rc=$?
[ "$run_rc" -eq 0 ] || echo "$prog: warning: nodebench exited with status $run_rc" >&2

new=""
while IFS= read -r f; do
  if grep -q '"nodebench.result"' "$f" 2>/dev/null; then new=$f; break; fi
done < <(find "$out" -maxdepth 1 -type f -name '*.json' -newer "$marker" -printf '%T@ %p\n' 2>/dev/null \
           | sort -rn | cut -d' ' -f2-)
rm -f "$marker"
[ -n "$new" ] || die "the run wrote no result file in '$out' (nodebench exit status $run_rc)"
echo "== new result: $new"

# 2. compare
echo "== compare: $baseline -> $new"
"${report[@]}" compare "$baseline" "$new" ${compare_opts[@]+"${compare_opts[@]}"} \
  --json "$out/compare.json" --junit "$out/compare.junit.xml" | tee "$out/compare.txt"
compare_rc=${PIPESTATUS[0]}

# 3. ingest, 4. report (failures here do not hide the comparison's verdict)
broken=0 not_stored=0
echo "== ingest into $db"
"${report[@]}" ingest "$new" --db "$db"
ingest_rc=$?
if [ "$ingest_rc" -ne 0 ]; then
  if [ "$ingest_rc" -eq 3 ]; then not_stored=1; else broken=1; fi
  new_abs=$(cd "$(dirname "$new")" && pwd)/$(basename "$new")
  later=$(printf '%q ' "${report[@]}" ingest "$new_abs" --db "$db")
  later=${later% }
  printf '# %s: the run was not stored in the history database (ingest exit %s); store it with:\n%s\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$ingest_rc" "$later" > "$out/not-stored.txt"
  echo "$prog: warning: the run was NOT stored in the history database (ingest exit $ingest_rc);" \
       "the result file and the report are kept. Store it later with:" >&2
  echo "  $later" >&2
  echo "(also in $out/not-stored.txt)" >&2
fi
echo "== report"
"${report[@]}" html "$new" -o "$out/report" || { echo "$prog: warning: the HTML report failed" >&2; broken=1; }

case "$compare_rc" in
  0) if [ "$run_rc" -ne 0 ] || [ "$broken" -ne 0 ]; then
       echo "$prog: no regression in the cases measured, but the pipeline did not complete (run status $run_rc)" >&2
       exit 2
     fi
     if [ "$not_stored" -ne 0 ]; then
       echo "$prog: no regression, but the run was not stored in the history (exit 3; see $out/not-stored.txt)" >&2
       exit 3
     fi
     echo "== nightly: no regression"; exit 0 ;;
  1) echo "== nightly: REGRESSION (see $out/compare.txt)"; exit 1 ;;
  *) echo "$prog: the comparison could not be made (status $compare_rc)" >&2; exit 2 ;;
esac
