"""The ``nodebench-report`` command line.

Exit status: 0 success (no regression, no flagged node); 1 a regression (compare) or a flagged
node (fleet); 2 bad input (malformed file, other schema version, mismatched runs, bad options)
or anything else that stopped the command, always with a one-line message and no traceback;
3 the history database (ingest, trend, fleet, compare --history) could not be reached or stayed
busy: the run being stored was not written, the same command may simply be run again later.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import __version__
from .errors import ReportError

EXIT_OK, EXIT_REGRESSION, EXIT_BAD_INPUT, EXIT_UNAVAILABLE = 0, 1, 2, 3

_EPILOG = ("exit status: 0 ok; 1 regression (compare) or flagged node (fleet); 2 bad input or error; "
           "3 the history database could not be reached (run the command again later). "
           "See reports/README.md.")
_DB_HELP = ("history: an SQLite file, or a postgresql:// URL (psycopg 3; credentials from PGPASSWORD, "
            "~/.pgpass or a service file, postgresql:///?service=NAME, never in the URL)")


def _fraction(text: str) -> float:
    """'0.05' or '5%' -> 0.05."""
    t = text.strip()
    try:
        if t.endswith("%"):
            value = float(t[:-1]) / 100.0
        else:
            value = float(t)
            if value >= 1.0:
                raise argparse.ArgumentTypeError(
                    f"{text!r}: give a fraction (0.05) or a percentage (5%)")
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0 or value != value:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 0")
    return value


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1 (exclusive)")
    return value


def _fail_on(text: str) -> tuple:
    from .compare_clock import parse_fail_on
    try:
        return parse_fail_on(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--fail-on {text!r}: {exc}") from None


def _date(text: str) -> str:
    """An ISO date or date-time (2025-01-31, 2025-01-31T02:00:00Z), kept as given (runs' started_at
    are compared as ISO text)."""
    import datetime as _dt
    t = text.strip()
    try:
        if not t or not t[:1].isdigit():
            raise ValueError
        _dt.datetime.fromisoformat(t[:-1] + "+00:00" if t.endswith("Z") else t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date; give an ISO date such as 2025-01-31 "
                                         f"or 2025-01-31T02:00:00Z") from None
    return t


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 1")
    return value


def _write(path: str, text: str) -> None:
    try:
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise ReportError(f"{path}: cannot write: {exc.strerror or exc}") from None


# ----------------------------------------------------------------------------------------------


def cmd_html(args) -> int:
    from .htmlpage import write_report
    from .load import check_same_node, load_runs, merge_runs, read_advice, read_frameworks

    runs = load_runs(args.results)
    if not args.allow_mismatch:
        check_same_node(runs)
    data = merge_runs(runs)
    if args.advise:
        data.advice = read_advice(args.advise)
    if args.frameworks:
        data.frameworks = read_frameworks(args.frameworks)
    html_path, md_path, checklist, plots = write_report(data, args.output, args.title, args.inter_node_gbps,
                                                        data.frameworks)
    shown = sum(1 for p in plots if p.png)
    print(f"wrote {html_path} ({shown} plot(s), {len(plots) - shown} not measured) and {md_path}")
    for item in checklist:
        print(f"  {item.status:<13} {item.title}: {item.summary}")
    return EXIT_OK


def cmd_compare(args) -> int:
    from .compare import compare_runs
    from .compare_output import format_table
    from .load import load_run

    files = list(args.runs)
    if args.base:
        bases, new_files = list(args.base), files
        if len(new_files) != 1:
            args.parser.error(f"with --base give exactly one NEW file, got {len(new_files)}")
    else:
        if len(files) < 2:
            args.parser.error("the following arguments are required: NEW (compare BASE... NEW, or --base FILE NEW)")
        bases, new_files = files[:-1], files[-1:]
    base_runs = [load_run(p) for p in bases]
    new = load_run(new_files[0])
    from .noise_prior import load as load_prior
    prior = None if args.no_noise_prior else load_prior(args.noise_prior)
    conn = None
    if args.history:
        from .history import open_db
        conn = open_db(args.history, create=False)
    try:
        result = compare_runs(base_runs, new, threshold=args.threshold, alpha=args.alpha, test=args.test,
                              allow_mismatch=args.allow_mismatch, noise_floor=args.noise_floor, history=conn,
                              history_path=args.history, ignore_settings=args.ignore_settings,
                              fail_on=args.fail_on, prior=prior)
    finally:
        if conn is not None:
            conn.close()
    _write_formats(args, "compare", result)
    if not args.quiet:
        print(format_table(result))
    else:
        print("result: " + ("REGRESSION (exit 1)" if result.exit_code else "no regression (exit 0)"))
    return result.exit_code


def cmd_ingest(args) -> int:
    from .history import ingest, open_db
    from .load import load_runs

    runs = load_runs(args.results)  # every file is checked before anything is written
    conn = open_db(args.db, create=True)
    try:
        res = ingest(conn, runs, node=args.node, replace_with_fewer=args.replace_with_fewer)
    finally:
        conn.close()
    print(f"ingested {res.runs} run(s) ({res.records} ok record(s)) into {args.db}"
          + (f"; {res.replaced} run(s) were already there and were replaced" if res.replaced else ""))
    return EXIT_OK


def cmd_trend(args) -> int:
    from .history import open_db
    from .history_query import trend

    conn = open_db(args.db, create=False)
    try:
        points, table = trend(conn, args.case, args.metric, args.output, args.node or None, args.since)
    finally:
        conn.close()
    if not args.quiet:
        print(table)
    print(f"wrote {args.output} ({len(points)} point(s), {len({p.node for p in points})} node(s))")
    return EXIT_OK


def cmd_fleet(args) -> int:
    from .history import open_db
    from .history_fleet import fleet, fleet_plot, fleet_table

    conn = open_db(args.db, create=False)
    try:
        if args.html:   # the capacity page (families/fleet_capacity.py): written whatever the case selection finds
            from .families import fleet_capacity
            caps = fleet_capacity.capacity(conn, args.threshold, args.min_nodes, args.since, args.z, args.noise_floor)
            _write(args.html, fleet_capacity.render(caps, args.target))
            print(f"wrote {args.html} ({len(caps)} precision(s))")
        f = fleet(conn, args.case, args.metric, args.threshold, args.min_nodes, args.since, z_limit=args.z,
                  noise_floor=args.noise_floor)
    finally:
        conn.close()
    if not f.entries:
        raise ReportError(f"no case was measured on at least {args.min_nodes} nodes "
                          f"({f.groups_too_small} case(s) on fewer); lower --min-nodes or ingest more nodes")
    print(fleet_table(f, show_all=args.all))
    _write_formats(args, "fleet", f)
    if args.output:
        fleet_plot(f, args.output)
        print(f"wrote {args.output}")
    return EXIT_REGRESSION if f.flagged_nodes else EXIT_OK


def cmd_validate(args) -> int:
    from .validate import FULL_SCHEMA, load_schema, validate_file

    schema, source = load_schema(args.schema)
    print(f"schema: {source}")
    bad = 0
    for i, path in enumerate(args.results):
        problems, checked_by = validate_file(path, schema)
        if i == 0 and checked_by != FULL_SCHEMA:
            print(f"nodebench-report: note: checked with {checked_by}", file=sys.stderr)
        if problems:
            bad += 1
            for p in problems:
                print(p, file=sys.stderr)
        else:
            print(f"{path}: valid (nodebench.result, schema version 1)")
            from .load import load_run
            odd = load_run(path).undeclared_metrics
            if odd:
                print(f"{path}: note: metrics their family does not declare (typed by their unit suffix): "
                      f"{', '.join(odd)}", file=sys.stderr)
    if bad:
        print(f"nodebench-report: error: {bad} of {len(args.results)} file(s) invalid", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK


# ----------------------------------------------------------------------------------------------

def cmd_check_db(args) -> int:
    from .historydb import check_url, is_url

    if is_url(args.db):
        check_url(args.db)   # ReportError (exit 2) naming the redacted URL
    return EXIT_OK


def cmd_timeline(args) -> int:
    from .load import load_run
    from .timeline import write_timeline_png

    run = load_run(args.result)
    plot = write_timeline_png(run, args.out)
    print(f"wrote {args.out}: {plot.title}")
    return EXIT_OK


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line plus usage, exit 2 (argparse's convention, kept)
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def _format_options(p, command: str) -> None:
    """One option per output format of the command that is written to a file it names (formats.py)."""
    from .formats import formats
    for fmt in formats(command):
        if fmt.option:
            p.add_argument(fmt.option, metavar="FILE", help=fmt.description)


def _write_formats(args, command: str, made) -> None:
    """Each format of the command whose option was given, rendered from what the command made."""
    from .formats import formats
    for fmt in formats(command):
        path = getattr(args, fmt.option.lstrip("-").replace("-", "_"), None) if fmt.option else None
        if path:
            _write(path, fmt.render(made))


def build_parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    parser = _Parser(prog="nodebench-report", formatter_class=fmt, epilog=_EPILOG,
                     description="Reports, comparisons and history for nodebench result files "
                                 "(schema nodebench.result, version 1).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("html", help="self-contained HTML report and Markdown summary", formatter_class=fmt,
                       epilog=_EPILOG, description=(
                           "Write DIR/report.html (one self-contained page: checklist, environment, plots "
                           "embedded as PNG) and DIR/summary.md from one or more result files of one node. "
                           "When several files hold the same case, the latest run's record is shown."))
    p.add_argument("results", nargs="+", metavar="RESULTS", help="result files (schema version 1), .json or gzip-compressed .json.gz")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="output folder (created if needed)")
    p.add_argument("--title", help="page title (default: node and GPUs)")
    p.add_argument("--allow-mismatch", action="store_true",
                   help="merge files of different hosts or GPU models (refused by default)")
    p.add_argument("--advise", metavar="FILE",
                   help="a `nodebench advise --json` document (.json or .json.gz): predicted lines in the scaling plot, and the "
                        "checklist's strategy item judged from its predicted efficiency where none was measured")
    p.add_argument("--inter-node-gbps", type=_positive_float, metavar="GBPS",
                   help="the network between nodes, GB/s per node (e.g. 12.5 for 100 Gb/s Ethernet): the first screen's "
                        "scaling at 2, 4 and 8 nodes (advise's --inter-node-gbps); without it those columns say so")
    p.add_argument("--frameworks", metavar="FILE",
                   help="a `nodebench frameworks --out FILE` report (.json or .json.gz): its verdict on the first "
                        "screen, its checks as the evidence, its failing ones among the fixes; written with --bench, "
                        "the frameworks' images/s per mode beside nodebench's train step of the same precision, "
                        "layout and batch from RESULTS, and beside advise's data-parallel bound (--advise)")
    p.set_defaults(func=cmd_html)

    p = sub.add_parser("timeline", help="plot a run's GPU timeline (nodebench run --monitor) as PNG",
                       formatter_class=fmt, epilog=_EPILOG, description=(
                           "Write the GPU timeline of one result file (utilisation, SM clock and power per GPU "
                           "against time, case boundaries marked) as a PNG. The HTML report holds the same plot."))
    p.add_argument("result", metavar="RESULT", help="a result file made with 'nodebench run --monitor' (.json or .json.gz)")
    p.add_argument("--out", required=True, metavar="PNG", help="the PNG file to write")
    p.set_defaults(func=cmd_timeline)

    p = sub.add_parser("compare", help="compare runs case by case; exit 1 on regression or missing case",
                       formatter_class=fmt, epilog=_EPILOG, description=(
                           "Compare NEW against BASE per case (record id + GPUs + mode). Several BASE files "
                           "(compare BASE1 BASE2 ... NEW, or --base repeated) are repeated runs of the baseline: "
                           "their spread per case is the between-run noise. For cases ok on both sides, the "
                           "slowdown of the case's figure of merit is tested against the larger of the within-run "
                           "noise (the samples) and the between-run noise (BASE files, the records' run_to_run, "
                           "--history, else --noise-floor); a regression is a significant slowdown that may reach "
                           "--threshold. A case ok in BASE and failed/wrong/skipped in NEW (or skipped -> "
                           "failed/wrong) is a regression, and a case measured in BASE and absent from NEW fails "
                           "as missing. A regression whose clock-normalised figure (*_per_ghz) is unchanged is "
                           "'slower: clock', counted apart (--fail-on); the header says when BASE and NEW ran on "
                           "different hosts or GPUs. Refuses runs of different GPU models unless --allow-mismatch, and cases "
                           "measured with other settings (L2, target CV, repetitions, mode) unless "
                           "--ignore-settings."))
    p.add_argument("runs", nargs="+", metavar="FILE", help="BASE... NEW (the last file is NEW), or NEW with --base; .json or gzip-compressed .json.gz")
    p.add_argument("--base", action="append", metavar="FILE",
                   help="a baseline file, .json or .json.gz (repeatable); then the positional file is NEW")
    p.add_argument("--threshold", type=_fraction, default=0.05, metavar="FRACTION",
                   help="smallest slowdown that counts, as 0.05 or 5%% (default 0.05)")
    p.add_argument("--alpha", type=_alpha, default=0.01, help="significance level (default 0.01)")
    p.add_argument("--test", choices=("mannwhitney", "bootstrap"), default="mannwhitney",
                   help="within-run test: one-sided Mann-Whitney U on the samples (default), or a bootstrap of "
                        "the ratio of medians (scipy.stats)")
    p.add_argument("--noise-floor", type=_fraction, default=0.02, metavar="FRACTION",
                   help="between-run spread of a case's median assumed where nothing measured it "
                        "(default 0.02; 0 judges such cases on their samples alone)")
    p.add_argument("--history", metavar="DB", help="history database (ingest): between-run spread per case "
                   "and machine; an SQLite file or a postgresql:// URL. It replaces the noise prior for a case "
                   "once it holds as many runs of it as the prior was measured on")
    prior = p.add_mutually_exclusive_group()
    prior.add_argument("--noise-prior", metavar="FILE",
                       help="between-run spread per case and GPU model measured by the project on repeated runs "
                            "(default: the one shipped with this package, used while the history is short); a "
                            "case too noisy for --threshold to be told from noise is 'unstable, not judged'")
    prior.add_argument("--no-noise-prior", action="store_true",
                       help="use no prior: cases without measured noise are judged against --noise-floor")
    p.add_argument("--ignore-settings", action="store_true",
                   help="compare cases whose measurement settings differ (refused by default)")
    _format_options(p, "compare")
    p.add_argument("--allow-mismatch", action="store_true", help="compare runs of different GPU models")
    p.add_argument("--fail-on", type=_fail_on, default=("regression", "clock"), metavar="WHAT",
                   help="which slowdowns fail (exit 1), comma-separated: 'regression' (slower at the same clock) "
                        "and 'clock' (a 'slower: clock' case: slower by its figure of merit, unchanged by its "
                        "clock-normalised *_per_ghz figure); default both, as before; missing cases always fail")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the result line")
    p.set_defaults(func=cmd_compare, parser=p)

    p = sub.add_parser("ingest", help="store result files in the history (SQLite or PostgreSQL)",
                       formatter_class=fmt, epilog=_EPILOG, description=(
                           "Add runs to the history DB: an SQLite file (created if needed) or a PostgreSQL "
                           "database (postgresql://...; the schema is created if needed). A run already there "
                           "(same run_id) is replaced, unless the file lacks records the stored copy has (refused, "
                           "see --replace-with-fewer). Every file is checked before anything is written; each "
                           "run is then stored whole in a transaction of its own, so that many nodes may "
                           "ingest into one database at once."))
    p.add_argument("results", nargs="+", metavar="RESULTS", help="result files, .json or gzip-compressed .json.gz")
    p.add_argument("--db", required=True, metavar="DB", help=_DB_HELP)
    p.add_argument("--node", help="node name to store (default: environment.host.hostname)")
    p.add_argument("--replace-with-fewer", action="store_true",
                   help="replace a stored run even when the file lacks records the stored copy has (refused by "
                        "default, exit 2, naming what would be lost)")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("trend", help="plot a metric over time per node", formatter_class=fmt, epilog=_EPILOG,
                       description="Plot METRIC of the matching case(s) over time, one line per node.")
    p.add_argument("--db", required=True, metavar="DB", help=_DB_HELP + ", written by ingest")
    p.add_argument("--case", required=True, metavar="ID",
                   help="record id, shell-style wildcards allowed (e.g. 'gemm/fp16_*_8192')")
    p.add_argument("--metric", help="metric name (e.g. tflops, gbps, median_s); default: the family's main metric")
    p.add_argument("--node", action="append", help="only this node (repeatable)")
    p.add_argument("--since", metavar="DATE", type=_date, help="only runs started at or after DATE (ISO, e.g. 2025-01-31)")
    p.add_argument("-o", "--output", default="trend.png", metavar="FILE",
                   help="image to write, .png or .svg (default trend.png)")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print the data points")
    p.set_defaults(func=cmd_trend)

    p = sub.add_parser("fleet", help="compare nodes; flag nodes worse than the fleet median", formatter_class=fmt,
                       epilog=_EPILOG, description=(
                           "For each case (and GPU model), take each machine's latest value (a machine: hostname plus "
                           "its GPUs' UUIDs); flag one that is worse than the fleet median by more than --threshold "
                           "and by more than --z times the noise (the fleet's robust spread, 1.4826 x MAD, combined "
                           "with the case's between-run spread from the history). Exit 1 when a node is flagged."))
    p.add_argument("--db", required=True, metavar="DB", help=_DB_HELP + ", written by ingest")
    p.add_argument("--case", metavar="ID", help="record id, wildcards allowed (default: every case)")
    p.add_argument("--metric", help="metric name (default: each family's main metric)")
    p.add_argument("--threshold", type=_fraction, default=0.05, metavar="FRACTION",
                   help="flag below the median by more than this, 0.05 or 5%% (default 0.05)")
    p.add_argument("--z", type=float, default=3.0, metavar="Z",
                   help="flag only beyond Z times the noise: the fleet's robust spread (1.4826 x MAD) combined "
                        "with the case's between-run spread (default 3)")
    p.add_argument("--noise-floor", type=_fraction, default=0.02, metavar="FRACTION",
                   help="between-run spread of a case where the history has not measured it (default 0.02)")
    p.add_argument("--min-nodes", type=_positive_int, default=3,
                   help="compare a case only when at least this many nodes have it (default 3)")
    p.add_argument("--since", metavar="DATE", type=_date,
                   help="only runs started at or after DATE (ISO, e.g. 2025-01-31)")
    p.add_argument("--all", action="store_true", help="list every node and case, not only flagged ones")
    _format_options(p, "fleet")
    p.add_argument("--html", metavar="FILE",
                   help="also write the fleet's capacity page: per precision each node's ResNet-50 training images/s "
                        "per GPU and per node, memory, board power and images/J, the fleet's total, the spread per "
                        "metric with the nodes outside it, and the nodes to add for a target")
    p.add_argument("--target", type=_positive_float, action="append", metavar="IMAGES_PER_S",
                   help="a fleet throughput to reach (repeatable): the page says how many nodes to add "
                        "(default: 1.5, 2, 4 and 10 times the fleet's total)")
    p.add_argument("-o", "--output", metavar="FILE", help="also write a plot (.png or .svg)")
    p.set_defaults(func=cmd_fleet)

    p = sub.add_parser("validate", help="validate result files against the JSON schema", formatter_class=fmt,
                       epilog=_EPILOG, description=(
                           "Check files against result-v1.schema.json (needs the jsonschema package) and the "
                           "conventions this package relies on. Exit 0 when all are valid, 2 otherwise."))
    p.add_argument("results", nargs="+", metavar="RESULTS", help="result files, .json or gzip-compressed .json.gz")
    p.add_argument("--schema", metavar="FILE", help="JSON Schema to use (default: harness/schema/"
                   "result-v1.schema.json of this checkout, else the packaged copy)")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("check-db", help="check a --db target without opening it (scripts/nightly.sh asks it)",
                       formatter_class=fmt, epilog=_EPILOG, description=(
                           "Refuse a postgresql:// URL that embeds a password (it would end up in ps, logs and "
                           "files; the message never shows it). Exit 0 when the target is acceptable, 2 otherwise."))
    p.add_argument("db", metavar="DB", help="an SQLite file or a postgresql:// URL")
    p.set_defaults(func=cmd_check_db)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return args.func(args)
    except ReportError as exc:
        print(f"nodebench-report: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        print("nodebench-report: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # never a traceback for the user; NODEBENCH_REPORT_DEBUG=1 shows it
        if os.environ.get("NODEBENCH_REPORT_DEBUG"):
            raise
        print(f"nodebench-report: error: could not process the input ({type(exc).__name__}: {exc}); "
              f"set NODEBENCH_REPORT_DEBUG=1 for a traceback", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
