"""Throughput of the Spark engine on the IPTV use-cases (a benchmark, not a test).

    python bench/throughput.py --usecase uc1|uc2|uc3 --events N --json OUT [--data DIR] [--master URL]

Writes {usecase, events, events_per_s, steady_events_per_s, limit_events_per_s, peak_rss_mb,
state_bytes_per_open_fact, ...} and the ratios to a plain per-event Python loop and to Pathway
(null when Pathway is not installed). `limit` is a single-pass numpy evaluation of the same
use-case over the same events in this process (tefq.spark.facts kernels), the bar to approach.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
IPTV = "http://example.org/iptv#"


def docs(usecase: str):
    import spark_docs as sd

    return {"uc1": lambda: sd.uc1(10_000), "uc2": lambda: sd.uc2(60_000), "uc3": lambda: sd.uc3(60_000)}[usecase]()


def ensure_data(data: str, events: int) -> str:
    log = os.path.join(data, "log")
    if not os.path.isdir(log):
        subprocess.run([sys.executable, "-m", "tefq.cli", "gen", "iptv", "--out", data, "--events", str(events),
                        "--epg", "--format", "parquet"], check=True)
    return log


def load(log: str):
    from tefq.io.readers import stream_files

    tables = [pq.read_table(f) for f in stream_files(log)]
    import pyarrow as pa

    return pa.concat_tables(tables)


def limit_rate(table, every: int, uc: str) -> float:
    """Single-pass numpy: encode, apply every event, aggregate at every tick."""
    import pandas as pd

    from tefq.spark.facts import Events, Intervals, apply_events, current_aggregates, tick_at_or_after

    started = time.perf_counter()
    ts = table.column("ts").to_numpy()
    s = pd.factorize(table.column("s").to_numpy(zero_copy_only=False))[0].astype(np.int64)
    p = table.column("p").to_pandas()
    o = pd.factorize(table.column("o").to_numpy(zero_copy_only=False))[0].astype(np.int64)
    kind = np.where(p == f"<{IPTV}join>", 0, np.where(p == f"<{IPTV}quit>", 1, -1))
    m = kind >= 0
    ev = Events(kind[m], ts[m], np.arange(int(m.sum()), dtype=np.int64), s[m] * 1_000_003 + o[m], o[m].reshape(-1, 1))
    iv = apply_events(Intervals.empty(1), ev).intervals
    ticks = np.arange(tick_at_or_after(int(ts.min()), 0, every), tick_at_or_after(int(ts.max()), 0, every) + 1,
                      every, dtype=np.int64)
    agg = current_aggregates(iv, ticks)
    if uc == "uc2":
        _ = agg.duration_ms / 1000.0 / np.maximum(agg.count, 1)
    return len(ts) / (time.perf_counter() - started)


def python_loop_rate(table, every: int, limit: int = 300_000) -> float:
    """A plain per-event loop (dicts), the way one would write it without vectorisation."""
    n = min(limit, table.num_rows)
    rows = table.slice(0, n).to_pylist()
    started = time.perf_counter()
    open_: dict = {}
    counts: dict = {}
    next_tick = None
    for r in rows:
        t = r["ts"]
        if next_tick is None:
            next_tick = -(-t // every) * every
        while t > next_tick:
            _ = dict(counts)  # report
            next_tick += every
        key = (r["s"], r["o"])
        if r["p"].endswith("join>"):
            if key not in open_:
                open_[key] = t
                counts[r["o"]] = counts.get(r["o"], 0) + 1
        elif key in open_:
            del open_[key]
            counts[r["o"]] -= 1
    return n / (time.perf_counter() - started)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--usecase", choices=("uc1", "uc2", "uc3"), required=True)
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--json", required=True)
    ap.add_argument("--data", default=None, help="IPTV data dir (generated when absent)")
    ap.add_argument("--master", default=None)
    ap.add_argument("--files-per-trigger", type=int, default=None,
                    help="micro-batch size in files (default: about 1M events per micro-batch)")
    args = ap.parse_args()
    data = args.data or f"/tmp/tefq-bench-iptv-{args.events}"
    log = ensure_data(data, args.events)
    table = load(log)
    doc = docs(args.usecase)
    every = doc.queries[0].every_ms
    result: dict = {"usecase": args.usecase, "events": table.num_rows, "machine": f"{os.cpu_count()} cores"}
    result["limit_events_per_s"] = limit_rate(table, every, args.usecase)
    result["python_loop_events_per_s"] = python_loop_rate(table, every)
    try:
        import pathway  # noqa: F401

        result["pathway_events_per_s"] = None  # TODO: a Pathway pipeline of the same use-case
    except ImportError:
        result["pathway_events_per_s"] = None
    from tefq.errors import TefqError
    from tefq.spark.engine import run

    nfiles = len(os.listdir(log))
    fpt = args.files_per_trigger or max(1, round(nfiles * 1_000_000 / max(table.num_rows, 1)))
    started = time.perf_counter()
    try:
        r = run(doc, [log], master=args.master, max_files_per_trigger=fpt, progress=True)
    except TefqError as e:
        result["error"] = str(e)
        r = None
    wall = time.perf_counter() - started
    if r is not None:
        batches = [b for b in r.metrics.extra.get("micro_batches", []) if b["rows"]]
        steady = batches[1:] or batches
        rows, ms = sum(b["rows"] for b in steady), sum(b["ms"] for b in steady)
        result.update({
            "events_per_s": table.num_rows / wall,
            "steady_events_per_s": rows / (ms / 1000.0) if ms else None,
            "wall_seconds": wall, "micro_batches": len(batches), "files_per_trigger": fpt,
            "state_bytes_per_open_fact": r.metrics.extra.get("state_bytes_per_open_fact"),
            "rows_out": r.metrics.rows_out, "facts_created": r.metrics.facts_created,
        })
        result["steady_vs_limit"] = (result["steady_events_per_s"] or 0) / result["limit_events_per_s"]
        result["vs_python_loop"] = result["events_per_s"] / result["python_loop_events_per_s"]
        result["vs_pathway"] = None
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # driver only
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=2)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
