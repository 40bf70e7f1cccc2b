#!/usr/bin/env python3
"""Bulk-load a synthetic fleet history, to measure `fleet` and `trend` at scale.

    scripts/dev/facts/gen_history.py --db TARGET [--machines 1000] [--nights 365] [--cases 100]
                               [--metrics-per-record 1] [--slow 5] [--seed 1]

TARGET is an SQLite file or a postgresql:// URL of an EMPTY database (refused otherwise). The
schema is created by nodebench_reports itself (history.open_db: the same migrations as ingest);
the rows go in directly, not through ingest: COPY (PostgreSQL) or executemany in one transaction
(SQLite), with the secondary indexes dropped during the load and built again afterwards. The
derived tables (case_noise, case_latest) are computed per machine with the functions that
ingest uses (history.noise_rows, history.latest_rows).

Each machine (node gpuNNNN, one GPU with a UUID) has one run per night; each run one record per
case, ok, with `--metrics-per-record` metric rows (1: the case's primary metric; 2: plus median_s,
as ingest stores it). Values: a per-case base, a per-machine offset (sd 1%), a per-night noise (sd
2%); the `--slow` machines are 15% slower over their last 30 nights (fleet should flag them).

Prints one JSON line per phase (rows, seconds) and a final summary line. Needs the reports
package importable (PYTHONPATH=reports) and, for PostgreSQL, psycopg 3.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import io
import json
import math
import os
import random
import sys
import time
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "reports"))

from nodebench_reports import history as H  # noqa: E402
from nodebench_reports.history import open_db  # noqa: E402

FAMILIES = [("gemm", "tflops", 600.0), ("memory", "gbps", 3000.0), ("nccl", "busbw_gbps", 350.0),
            ("conv", "tflops", 250.0)]
GPU_MODEL = "NVIDIA H100 80GB HBM3"
START = dt.datetime(2025, 1, 1, 2, 0, 0)


def log(**kw) -> None:
    print(json.dumps(kw), flush=True)


def cases(n: int):
    out = []
    for k in range(n):
        fam, metric, base = FAMILIES[k % len(FAMILIES)]
        out.append((f"{fam}/synthetic/case_{k:03d}", fam, f"case_{k:03d}", metric, base * (1 + 0.01 * (k % 7))))
    return out


def machine_rows(i: int, args, case_list, rng: random.Random):
    node = f"gpu{i:04d}"
    machine = H.machine_key(node, SimpleNamespace(gpus=[{"uuid": f"GPU-{hashlib.md5(node.encode()).hexdigest()}"}]))
    offset = rng.gauss(0.0, 0.01)
    slow = i < args.slow
    runs, records, metrics, noise_in, latest_in = [], [], [], [], []
    for d in range(args.nights):
        run_id = f"r{i:05d}-{d:04d}"
        t0 = START + dt.timedelta(days=d, seconds=7 * i)
        started = t0.strftime("%Y-%m-%dT%H:%M:%SZ")
        finished = (t0 + dt.timedelta(minutes=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
        runs.append((run_id, node, started, finished, "complete", json.dumps([GPU_MODEL]), "0.1.0", "synthetic", 1,
                     "synthetic", started, machine))
        factor = math.exp(offset + rng.gauss(0.0, 0.02)) * (0.85 if slow and d >= args.nights - 30 else 1.0)
        for rid, fam, case, metric, base in case_list:
            value = base * factor * math.exp(rng.gauss(0.0, 0.005))
            median_s = 1e-3 * (base / value)
            records.append((run_id, rid, "0", -1, node, fam, case, "ok", GPU_MODEL, median_s, 0.01, 10, "{}", "[]",
                            None, metric, machine, None))
            noise_in.append((machine, rid, "0", -1, median_s, None))
            metrics.append((run_id, rid, "0", -1, metric, value))
            latest_in.append((machine, rid, "0", -1, GPU_MODEL, metric, 1, run_id, started, node, value))
            if args.metrics_per_record >= 2:
                metrics.append((run_id, rid, "0", -1, "median_s", median_s))
                latest_in.append((machine, rid, "0", -1, GPU_MODEL, "median_s", 0, run_id, started, node, median_s))
    return runs, records, metrics, H.noise_rows(noise_in), H.latest_rows(latest_in)


def _tsv(rows) -> bytes:
    buf = io.StringIO()
    for r in rows:
        buf.write("\t".join("\\N" if v is None else (repr(v) if isinstance(v, float) else str(v)) for v in r))
        buf.write("\n")
    return buf.getvalue().encode()


COLUMNS = {"runs": H._RUN_COLUMNS, "records": H._RECORD_COLUMNS, "metrics": H._METRIC_COLUMNS,
           "case_noise": H._NOISE_COLUMNS, "case_latest": H._LATEST_COLUMNS}
ORDER = ["runs", "records", "metrics", "case_noise", "case_latest"]


def index_names() -> list[str]:
    return [s.split(" ON ")[0].split()[-1] for s in H.SECONDARY_INDEXES]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--machines", type=int, default=1000)
    ap.add_argument("--nights", type=int, default=365)
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--metrics-per-record", type=int, choices=(1, 2), default=1)
    ap.add_argument("--slow", type=int, default=5, help="machines made 15%% slower over their last 30 nights")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=20, help="machines per COPY / executemany batch")
    args = ap.parse_args()
    t_all = time.perf_counter()
    db = open_db(args.db, create=True)
    if db.query_one("SELECT count(*) FROM runs")[0]:
        sys.exit(f"{args.db}: already holds runs; give an empty database")
    case_list = cases(args.cases)
    rng = random.Random(args.seed)
    pg = db.dialect == "postgresql"
    counts = dict.fromkeys(ORDER, 0)
    t0 = time.perf_counter()
    if pg:
        # one transaction; the tables emptied in it, so that with wal_level=minimal COPY skips the WAL
        db.conn.autocommit = False
        cur = db.conn.cursor()
        # rows that are consistent by construction: no per-row foreign-key trigger (needs a superuser)
        cur.execute("SET session_replication_role = replica")
        cur.execute("TRUNCATE case_latest, case_noise, metrics, records, runs")
        for name in index_names():
            cur.execute(f"DROP INDEX IF EXISTS {name}")
    else:
        db.conn.execute("PRAGMA foreign_keys = OFF")   # consistent by construction
        db.conn.execute("PRAGMA journal_mode = OFF")
        db.conn.execute("PRAGMA synchronous = OFF")
        db.conn.execute("PRAGMA cache_size = -1000000")
        db.conn.execute("BEGIN")
        for name in index_names():
            db.conn.execute(f"DROP INDEX IF EXISTS {name}")
    for first in range(0, args.machines, args.batch):
        batch = dict((t, []) for t in ORDER)
        for i in range(first, min(args.machines, first + args.batch)):
            for t, rows in zip(ORDER, machine_rows(i, args, case_list, rng)):
                batch[t] += rows
        for t in ORDER:
            cols = COLUMNS[t]
            if pg:
                with cur.copy(f"COPY {t} ({cols}) FROM STDIN") as cp:
                    data = _tsv(batch[t])
                    for k in range(0, len(data), 1 << 22):
                        cp.write(data[k:k + (1 << 22)])
            else:
                db.conn.executemany(f"INSERT INTO {t} ({cols}) VALUES ({','.join('?' * len(cols.split(', ')))})",
                                    batch[t])
            counts[t] += len(batch[t])
        if (first // args.batch) % 10 == 0:
            log(phase="load", machines_done=min(args.machines, first + args.batch),
                seconds=round(time.perf_counter() - t0, 1))
    log(phase="load", rows=counts, seconds=round(time.perf_counter() - t0, 1))
    t1 = time.perf_counter()
    for statement in H.SECONDARY_INDEXES:
        t2 = time.perf_counter()
        (cur if pg else db.conn).execute(statement)
        log(phase="index", statement=statement, seconds=round(time.perf_counter() - t2, 1))
    if pg:
        db.conn.commit()
        db.conn.autocommit = True
        t2 = time.perf_counter()
        db.conn.execute("ANALYZE")
        log(phase="analyze", seconds=round(time.perf_counter() - t2, 1))
        size = db.query_one("SELECT pg_database_size(current_database())")[0]
    else:
        db.conn.execute("COMMIT")
        t2 = time.perf_counter()
        db.conn.execute("ANALYZE")
        log(phase="analyze", seconds=round(time.perf_counter() - t2, 1))
        size = os.path.getsize(args.db)
    db.close()
    log(phase="done", backend=db.dialect, machines=args.machines, nights=args.nights, cases=args.cases,
        metrics_per_record=args.metrics_per_record, rows=counts, database_bytes=size,
        index_seconds=round(time.perf_counter() - t1, 1), total_seconds=round(time.perf_counter() - t_all, 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
