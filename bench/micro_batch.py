"""The fixed cost of a micro-batch, setting against setting, on one warm session (a benchmark):

    python bench/micro_batch.py [--files 30] [--events-per-file 2000] [--pairs 3]
                                [--variant LABEL=KEY=VALUE[,KEY=VALUE...] ...] [--json OUT]

UC1 over `--files` small Parquet files read one per micro-batch (`max_files_per_trigger=1`): each
micro-batch carries the same few events, so its time is mostly what every micro-batch pays before
its events (planning, the offsets log, the state store's load and commit, the sink). Each variant
runs on its own `newSession()` of one warm Spark session with its Spark SQL settings, alternated
with the others `--pairs` times (A B A B: the same load for each on a shared machine); its rows
must equal the first variant's. Printed per variant: the median over its micro-batches (the first
of each run left out) of Spark's `durationMs` phases and the state store's times.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PHASES = ("triggerExecution", "queryPlanning", "addBatch", "walCommit", "commitOffsets", "latestOffset")
STATE = ("allUpdatesTimeMs", "commitTimeMs", "rocksdbCommitFileSyncLatencyMs", "rocksdbLoadLatencyMs")


def write_files(directory: str, files: int, per_file: int) -> None:
    """`files` Parquet files of UC1 joins and quits, time increasing across them."""
    users, channels = 200, 10
    for f in range(files):
        ts = [(f * per_file + i) * 50 for i in range(per_file)]
        s = [f"<http://example.org/iptv#u{(f * per_file + i) % users}>" for i in range(per_file)]
        p = ["<http://example.org/iptv#join>" if ((f * per_file + i) // users) % 2 == 0 else
             "<http://example.org/iptv#quit>" for i in range(per_file)]
        o = [f"<http://example.org/iptv#ch{(f * per_file + i) % channels}>" for i in range(per_file)]
        pq.write_table(pa.table({"ts": ts, "s": s, "p": p, "o": o}), os.path.join(directory, f"part-{f:05d}.parquet"))


def one_run(spark, doc, stream: str, settings: dict[str, str]) -> tuple[list, list[dict]]:
    from tefq.spark.engine import run

    session = spark.newSession()
    for key, value in settings.items():
        session.conf.set(key, value)
    r = run(doc, [stream], spark=session, max_files_per_trigger=1, progress=False, ingest="rows")
    return r.results[0].rows, r.metrics.extra.get("micro_batches", [])[1:]


def figures(batches: list[dict]) -> dict[str, float]:
    out = {k: statistics.median(b["durations_ms"].get(k, 0) for b in batches) for k in PHASES}
    out.update({f"state.{k}": statistics.median(b["state_ms"].get(k, 0) for b in batches) for k in STATE})
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=30)
    ap.add_argument("--events-per-file", type=int, default=2000)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--variant", action="append", default=[], metavar="LABEL=KEY=VALUE[,KEY=VALUE]")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    from tefq.analysis import load
    from tefq.spark.runtime.session import get_session

    variants = {"base": {}}
    for v in args.variant:
        label, _, rest = v.partition("=")
        variants[label] = dict(kv.split("=", 1) for kv in rest.split(",") if kv)
    doc = load(os.path.join(ROOT, "usecases", "uc1.tef"))
    spark = get_session(args.master)
    batches: dict[str, list[dict]] = {k: [] for k in variants}
    with tempfile.TemporaryDirectory() as tmp:
        write_files(tmp, args.files, args.events_per_file)
        want, _ = one_run(spark, doc, tmp, {})  # warm-up, unmeasured: JIT, Python workers
        for pair in range(args.pairs):
            for label, settings in variants.items():
                started = time.perf_counter()
                rows, done = one_run(spark, doc, tmp, settings)
                assert rows == want, f"{label}: rows differ"
                batches[label] += done
                print(f"pair {pair} {label}: {time.perf_counter() - started:.1f} s, load {os.getloadavg()[0]:.1f}",
                      file=sys.stderr, flush=True)
    result = {label: figures(b) for label, b in batches.items()}
    for label, f in result.items():
        print(f"{label:>12}: " + ", ".join(f"{k} {v:.0f}" for k, v in f.items()))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"variants": variants, "medians_ms": result, "load": os.getloadavg()}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
