#!/usr/bin/env python3
"""Time `nodebench-report fleet` and `trend` on a large synthetic history (gen_history.py).

    scripts/dev/facts/history_scale.py --work DIR --out RESULTS_DIR [--backend sqlite|postgresql]
                                 [--machines 1000] [--nights 365] [--cases 100] [--repeat 3]

DIR holds the generated database (an SQLite file, or the data folder of a PostgreSQL server
started for the measurement from Debian's package, as the tests do: reports/tests/pgserver.py,
with more memory); keep it out of git. RESULTS_DIR gets, per backend, the generator's log, the
timings (JSON) and the query plans of the queries that fleet and trend run (EXPLAIN), in files
named BACKEND-MACHINESxNIGHTSxCASES.*. With --reuse an existing database of the same size is
timed again without generating it.

Timed (each --repeat times, wall clock of the whole command, python start included):
  fleet --db DB                      every case, each machine's latest value against the fleet
  fleet --db DB --case 'gemm/*'      a quarter of the cases
  trend --db DB --case C --node N    one case on one node: N nights
  trend --db DB --case C --node N1..N10
  trend --db DB --case C             one case on every machine (machines x nights points)
and, in-process, the query of trend alone (history_query.query_points) for that last one; then
`ingest` of one more night of a machine with a full history, and of the same file again.
The load average (os.getloadavg) before and after is recorded: other work on the machine
slows every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "reports"))
sys.path.insert(0, os.path.join(REPO, "reports", "tests"))
sys.path.insert(0, HERE)

PG_CONF = ("shared_buffers = 6GB\nwork_mem = 64MB\nmaintenance_work_mem = 2GB\nmax_wal_size = 32GB\n"
           "checkpoint_timeout = 30min\nwal_level = minimal\nmax_wal_senders = 0\neffective_cache_size = 16GB\n"
           "max_parallel_maintenance_workers = 2\nmax_parallel_workers_per_gather = 2\n")


def sh(cmd, **kw):
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return proc, time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--backend", choices=("sqlite", "postgresql"), required=True)
    ap.add_argument("--machines", type=int, default=1000)
    ap.add_argument("--nights", type=int, default=365)
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reuse", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    tag = f"{args.backend}-{args.machines}x{args.nights}x{args.cases}"
    server = None
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "reports"))
    if args.backend == "postgresql":
        import pgserver
        base = os.path.join(args.work, f"pg-{args.machines}x{args.nights}x{args.cases}")
        fresh = not (args.reuse and os.path.isdir(os.path.join(base, "data")))
        if fresh and os.path.isdir(base):
            shutil.rmtree(base)
        server = pgserver.PgServer(base=base, extra_conf=PG_CONF)
        if fresh:
            server.start()
            target = server.new_database("scale")
        else:  # the server of an earlier run, started again
            server.bindir, server.user = pgserver.find_bindir(), ("postgres" if os.geteuid() == 0 else None)
            try:
                server._run("pg_ctl", "-D", os.path.join(base, "data"), "status")
            except RuntimeError:     # not running: start it
                server._run("pg_ctl", "-D", os.path.join(base, "data"), "-l", os.path.join(base, "server.log"),
                            "-w", "start")
            server.running = True
            import psycopg
            with psycopg.connect(server.url("postgres")) as c:
                name = c.execute("SELECT datname FROM pg_database WHERE datname LIKE 'scale_%'").fetchone()[0]
            target = server.url(name)
    else:
        target = os.path.join(args.work, f"{tag}.sqlite")
        fresh = not (args.reuse and os.path.exists(target))
        if fresh and os.path.exists(target):
            os.remove(target)
    try:
        if fresh:
            gen = [sys.executable, os.path.join(HERE, "gen_history.py"), "--db", target, "--machines",
                   str(args.machines), "--nights", str(args.nights), "--cases", str(args.cases)]
            with open(os.path.join(args.out, f"{tag}.generate.log"), "w") as log:
                log.write("$ " + " ".join(gen[1:]).replace(target, "DB") + "\n")
                log.flush()
                t = time.perf_counter()
                rc = subprocess.run(gen, stdout=log, stderr=subprocess.STDOUT, env=env).returncode
                log.write(f"# exit {rc}, {time.perf_counter() - t:.1f} s\n")
            if rc:
                print(f"generation failed, see {log.name}", file=sys.stderr)
                return 1
        from nodebench_reports.history import SECONDARY_INDEXES, open_db
        from nodebench_reports.history_query import query_points
        built = {}
        if not fresh:   # a database generated by an earlier version of the schema's step 3
            with open_db(target, create=False) as db:
                for statement in SECONDARY_INDEXES:
                    t = time.perf_counter()
                    db.execute(statement)
                    built[statement] = round(time.perf_counter() - t, 1)
                db.execute("ANALYZE")
            print("indexes (IF NOT EXISTS), seconds:", built, flush=True)
        with open_db(target, create=False) as db:
            sizes = {t: db.query_one(f"SELECT count(*) FROM {t}")[0]
                     for t in ("runs", "records", "metrics", "case_noise", "case_latest")}
            if db.dialect == "postgresql":
                sizes["database_bytes"] = db.query_one("SELECT pg_database_size(current_database())")[0]
            else:
                sizes["database_bytes"] = os.path.getsize(target)
            case = db.query_one("SELECT min(record_id) FROM case_latest WHERE record_id LIKE 'gemm/%'")[0]
            node = db.query_one("SELECT min(node) FROM runs")[0]
            nodes10 = [r[0] for r in db.query("SELECT DISTINCT node FROM case_latest ORDER BY 1")][:10]
        cmd = [sys.executable, "-m", "nodebench_reports"]
        png = os.path.join(args.work, "plot.png")
        runs = {
            "fleet (every case)": cmd + ["fleet", "--db", target],
            "fleet --case 'gemm/*'": cmd + ["fleet", "--db", target, "--case", "gemm/*"],
            "trend --case C --node N (1 node)": cmd + ["trend", "--db", target, "--case", case, "--node", node, "-q",
                                                       "-o", png],
            "trend --case C --node x10 (10 nodes)": cmd + ["trend", "--db", target, "--case", case, "-q", "-o", png]
            + [a for n in nodes10 for a in ("--node", n)],
            "trend --case C (every machine)": cmd + ["trend", "--db", target, "--case", case, "-q", "-o", png],
        }
        timings = {"load average before": os.getloadavg()}
        for what, c in runs.items():
            times, rcs, tail = [], [], ""
            for _ in range(args.repeat):
                proc, secs = sh(c, env=env)
                times.append(round(secs, 2))
                rcs.append(proc.returncode)
                tail = (proc.stdout.strip().splitlines() or [""])[-1]
            timings[what] = {"seconds": times, "exit": rcs, "last_line": tail.replace(target, "DB")}
            print(what, times, rcs, tail, flush=True)
        timings.update(time_ingest(target, args, env, cmd))
        proc, secs = sh([sys.executable, "-c", "import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot"])
        timings["python start + matplotlib import (the floor of every trend/fleet command)"] = {
            "seconds": [round(secs, 2)]}
        with open_db(target, create=False) as db:
            for what, nodes in (("every machine", None), ("1 node", [node]), ("10 nodes", nodes10)):
                secs = []
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    pts = query_points(db, case, None, nodes)
                    secs.append(round(time.perf_counter() - t, 3))
                timings[f"query_points (trend's query alone, in-process), {what}"] = {
                    "seconds": secs, "points": len(pts)}
            plans = explain(db, case, node)
        timings["load average after"] = os.getloadavg()
        result = {"backend": args.backend, "machines": args.machines, "nights": args.nights, "cases": args.cases,
                  "case": case, "node": node, "sizes": sizes, "timings": timings,
                  "indexes_built_before_timing_seconds": built,
                  "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                              "platform": platform.platform()},
                  "postgresql_conf_extra": PG_CONF if server else None}
        with open(os.path.join(args.out, f"{tag}.timings.json"), "w") as fh:
            json.dump(result, fh, indent=2)
            fh.write("\n")
        with open(os.path.join(args.out, f"{tag}.explain.txt"), "w") as fh:
            fh.write(plans)
        print(json.dumps(sizes))
    finally:
        if server is not None:
            server._admin = None
            if server.running:
                server._run("pg_ctl", "-D", os.path.join(server.base, "data"), "-m", "fast", "-w", "stop")
    return 0


def time_ingest(target: str, args, env, cmd) -> dict:
    """`ingest` of one more night of machine gpu0005 (a generated result file whose 59 records
    carry 59 of the synthetic case ids and the machine's GPU UUID, so that the refresh of the
    derived tables reads that machine's whole history of those cases), then the same file again
    (a replacement)."""
    import hashlib

    import nbgen
    from gen_history import cases

    doc = nbgen.make_result(families=("gemm",), n_gpus=1, hostname="gpu0005", seed=5,
                            started_at="2027-01-01T02:00:00Z")
    doc["environment"]["gpus"][0]["uuid"] = f"GPU-{hashlib.md5(b'gpu0005').hexdigest()}"
    ids = [c[0] for c in cases(args.cases)]
    for rec, rid in zip(doc["records"], ids):
        rec["id"] = rid
    doc["records"] = doc["records"][:len(ids)]
    path = nbgen.write(doc, os.path.join(args.work, "one-more-night.json"))
    out = {}
    for what in ("ingest one run of a machine with a full history", "ingest the same run again (replaces it)"):
        proc, secs = sh(cmd + ["ingest", path, "--db", target], env=env)
        out[what] = {"seconds": [round(secs, 2)], "exit": [proc.returncode], "records": len(doc["records"]),
                     "last_line": (proc.stdout.strip().splitlines() or [""])[-1].replace(target, "DB")}
        print(what, out[what], flush=True)
    return out


def explain(db, case: str, node: str) -> str:
    """The plans of the queries fleet, trend and ingest send (the SQL is history.py and history_query.py's own)."""
    from nodebench_reports import history as H
    from nodebench_reports import history_query as Q

    machine = db.query_one("SELECT machine FROM case_latest WHERE node = ? LIMIT 1", (node,))[0]
    queries = [
        ("fleet: latest values",) + Q.latest_sql(None),
        ("fleet: between-run noise", "SELECT machine, record_id, gpus, rank, cv FROM case_noise", ()),
        ("trend: one case, every machine",) + Q.points_sql([case], None),
        ("trend: one case, one node",) + Q.points_sql([case], None, [node]),
        ("ingest: refresh the derived tables of one machine (noise)",
         f"{H._NOISE_SQL} AND machine = ? AND record_id IN (?)", (machine, case)),
        ("ingest: refresh the derived tables of one machine (latest)",
         f"{H._LATEST_SQL} AND rec.machine = ? AND rec.record_id IN (?)", (machine, case)),
    ]
    out = []
    for title, sql, args in queries:
        if db.dialect == "postgresql":
            rows = db.query("EXPLAIN (ANALYZE, BUFFERS) " + sql, list(args))
        else:
            rows = [(f"{r[-1]}",) for r in db.query("EXPLAIN QUERY PLAN " + sql, list(args))]
        out.append(f"== {title}\n{sql}\n-- args {args}\n" + "\n".join(r[0] for r in rows) + "\n")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
