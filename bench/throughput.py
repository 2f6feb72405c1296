"""Throughput of the Spark engine on the IPTV use-cases (a benchmark, not a test).

    python bench/throughput.py --usecase uc1|uc2|uc3 --events N --json OUT [--data DIR] [--master URL]
    python bench/throughput.py --usecase uc1 --events 20000000 --files-per-trigger 1 --skip-python-loop \
        --pathway-events 0 --checkpoint /tmp/ck20m --json OUT    (memory, state and checkpoint sizes)
    python bench/throughput.py --usecase uc1 --whole-run --json OUT    (Spark vs oracle, default data)

Writes {usecase, events, events_per_s, steady_events_per_s, limit_events_per_s (the fastest of
--limit-repeat runs), peak_rss_mb,
state_bytes_per_open_fact, micro_batches, ...} and the ratios to a plain per-event Python loop
and to Pathway (bench/pathway_uc.py, on the first --pathway-events events; null with a
`pathway_note` when Pathway is not installed). `limit` is the single-pass numpy evaluation of the
same use-case over the same events in this process (bench/baselines.py), the bar to approach.
`steady` leaves out the first micro-batch (start-up) and the end-of-input flush batch.
`peak_memory_mb`: sampled peaks of the driver, the JVM and Spark's Python workers (bench/memory.py);
`cpu_seconds` (and `warm_cpu_seconds` per --warm-runs run): the CPU each of them spent in the run.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))  # the checkout: tests.support holds the hand-built documents
IPTV = "http://example.org/iptv#"


def docs(usecase: str):
    from tests.support import spark_docs as sd

    return {"uc1": lambda: sd.uc1(10_000), "uc2": lambda: sd.uc2(60_000), "uc3": lambda: sd.uc3(60_000)}[usecase]()


def ensure_data(data: str, events: int, days: float = 2.0) -> str:
    """Generate the IPTV log when absent: over `days` days, with the paper's events per user and
    day (100,000 events for 22,872 users in one day), so the generator does not stretch the log
    beyond --days. More events mean more users (more open facts), not more ticks."""
    log = os.path.join(data, "log")
    if not os.path.isdir(log):
        users = max(1, round(events * 22_872 / 100_000 / days))
        subprocess.run([sys.executable, "-m", "tefq.cli", "gen", "iptv", "--out", data, "--events", str(events),
                        "--users", str(users), "--days", str(days), "--epg", "--format", "parquet"], check=True)
    return log


def stream_files(d: str) -> list[str]:
    from tefq.io.readers import stream_files as files

    return files(d)


def guide_by_log_part(data: str, log: str) -> str:
    """The programme guide cut at the log files' time bounds, one guide file per log file (made
    once, beside `epg/`). Spark reads each stream's files in its own source, `maxFilesPerTrigger`
    each, so micro-batch k carries the log's files and the guide's rows of the same time span. One
    guide file spanning the whole log (the generator's) would arrive in the first micro-batch,
    move the event time to the log's end, and make every later log event late (spec §6)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    out = os.path.join(data, "epg-by-log-part")
    if os.path.isdir(out):
        return out
    guide = pa.concat_tables([pq.read_table(f) for f in stream_files(os.path.join(data, "epg"))])
    guide = guide.take(pc.sort_indices(guide, [("ts", "ascending")]))  # stable: stream order within a ms
    ts = guide.column("ts").to_numpy()
    ends = [int(pq.read_table(f, columns=["ts"]).column("ts").to_numpy().max()) for f in stream_files(log)]
    cuts = np.searchsorted(ts, ends[:-1], side="right").tolist()
    tmp = out + ".tmp"
    os.makedirs(tmp, exist_ok=True)
    mtime = time.time() - len(ends)
    for i, (a, z) in enumerate(zip([0] + cuts, cuts + [len(ts)])):
        f = os.path.join(tmp, f"part-{i:05d}.parquet")
        pq.write_table(guide.slice(a, z - a), f)
        os.utime(f, (mtime + i, mtime + i))  # Spark takes a source's files oldest first
    os.rename(tmp, out)
    return out


def load(dirs: list[str]):
    """Every event of the stream directories, in time order (stable: stream order within a ms)."""
    import numpy as np
    import pyarrow as pa

    table = pa.concat_tables([pq.read_table(f) for d in dirs for f in stream_files(d)])
    if len(dirs) > 1:
        table = table.take(pa.array(np.argsort(table.column("ts").to_numpy(), kind="stable")))
    return table


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def batch_figures(batches: list[dict]) -> tuple[list[dict], float | None]:
    """Per micro-batch figures, and the steady rate: every batch but the first (worker start-up,
    state-store set-up) and any without events (an end-of-input flush, where a run has one)."""
    per = [{"batch": b["batch"], "events": b["rows"], "seconds": b["ms"] / 1000.0,
            "events_per_s": b["rows"] / (b["ms"] / 1000.0) if b["ms"] else None,
            "state_bytes": b.get("state_bytes"), "durations_ms": b.get("durations_ms")} for b in batches]
    steady = [b for b in per[1:] if b["events"] > 1]
    events, secs = sum(b["events"] for b in steady), sum(b["seconds"] for b in steady)
    return per, (events / secs if secs else None)


def best_of(n: int, timed, *args, **kwargs):
    """The fastest of `n` runs of `timed(...) -> (seconds, result)`: the bar is the best this
    machine did. A single run flatters the engine: UC1's limit on 2M events took 1.7-2.1 s alone
    in a process, 0.65 s as the best of three (docs/bench/uc1-2m.json)."""
    runs = [timed(*args, **kwargs) for _ in range(max(1, n))]
    LIMIT_RUNS.append([round(secs, 3) for secs, _ in runs])
    return min(runs, key=lambda r: r[0])


LIMIT_RUNS: list[list[float]] = []  # seconds of every limit run, into the JSON


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--usecase", choices=("uc1", "uc2", "uc3"), required=True)
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--json", required=True)
    ap.add_argument("--data", default=None, help="IPTV data dir (generated when absent)")
    ap.add_argument("--master", default=None)
    ap.add_argument("--pathway-events", type=int, default=50_000,
                    help="run Pathway on this many first events (0: skip)")
    ap.add_argument("--days", type=float, default=2.0, help="days of log when generating --data")
    ap.add_argument("--batch-events", type=int, default=1_000_000,
                    help="about this many events per micro-batch (rounded to whole files)")
    ap.add_argument("--files-per-trigger", type=int, default=None,
                    help="micro-batch size in files (overrides --batch-events)")
    ap.add_argument("--limit-repeat", type=int, default=3,
                    help="the limit is the fastest of this many runs (a single run varies by 2x here)")
    ap.add_argument("--buckets", type=int, default=None,
                    help="buckets offered to the planner (default: all, one per shuffle partition; 1: UC3 on one bucket)")
    ap.add_argument("--skip-python-loop", action="store_true",
                    help="no per-event Python loop (its row lists dominate memory at 10M+ events)")
    ap.add_argument("--checkpoint", default=None,
                    help="run with this --checkpoint (emptied first) and record its size")
    ap.add_argument("--ingest", choices=("auto", "columnar", "direct", "rows"), default="auto",
                    help="how the engine reads the Parquet inputs (tefq run --ingest; runtime/columnar.py)")
    ap.add_argument("--whole-run", action="store_true",
                    help="instead: wall time of `tefq run` on Spark vs the oracle on the default data "
                         "(--data, default /tmp/tefq-bench-default: tefq gen iptv --epg --seed 1)")
    ap.add_argument("--repeat", type=int, default=2, help="--whole-run: runs of each engine, alternating")
    ap.add_argument("--warm-runs", type=int, default=0,
                    help="then the same run N times on the session the first started (the warm engine's case)")
    return ap.parse_args()


def main() -> int:
    args = parse_args()
    if args.whole_run:
        from whole_run import whole_run

        result = {"usecase": args.usecase, "machine": f"{os.cpu_count()} cores", "load_average_start": load_average()}
        result.update(whole_run(args.usecase, args.data or "/tmp/tefq-bench-default", args.repeat))
        result["load_average_end"] = load_average()
        return write(args.json, result)
    data = args.data or f"/tmp/tefq-bench-iptv-{args.events}"
    log = ensure_data(data, args.events, args.days)
    streams = [log] + ([guide_by_log_part(data, log)] if args.usecase == "uc3" else [])  # UC3 joins the EPG
    table = load(streams)
    doc = docs(args.usecase)
    result: dict = {"usecase": args.usecase, "events": table.num_rows, "data": data,
                    "machine": f"{os.cpu_count()} cores", "load_average_start": load_average()}
    limit_rows = baselines(args, doc, table, result)
    if args.pathway_events:
        result.update(pathway_figures(args.usecase, table, doc.queries[0].every_ms, args.pathway_events))
    # Spark applies maxFilesPerTrigger to each stream's source: size it on the log's files
    log_rows = sum(pq.ParquetFile(f).metadata.num_rows for f in stream_files(log))
    fpt = args.files_per_trigger or max(1, round(len(stream_files(log)) * args.batch_events / max(log_rows, 1)))
    del table  # the engine run's memory is what the peaks measure
    engine_figures(args, doc, streams, fpt, result, limit_rows)
    result["limit_runs_seconds"] = LIMIT_RUNS
    result["load_average_end"] = load_average()
    return write(args.json, result)


def write(path: str, result: dict) -> int:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=2)
    print(json.dumps(result, indent=2))
    return 0


def baselines(args: argparse.Namespace, doc, table, result: dict) -> str | None:
    """The single-pass numpy limit (and the per-event Python loop) over the same events; UC3's
    limit also returns a digest of its result rows, formatted, for a cell-by-cell check of the
    engine's."""
    every = doc.queries[0].every_ms
    if args.usecase in ("uc1", "uc2"):
        from baselines import numpy_limit, python_loop

        secs, result["limit_rows"] = best_of(args.limit_repeat, numpy_limit, table, every, args.usecase == "uc2")
        result["limit_events_per_s"] = table.num_rows / secs
        if args.usecase == "uc2":  # for reference: the cheaper sum that is not the oracle's answer
            secs, _ = best_of(args.limit_repeat, numpy_limit, table, every, True, exact=False)
            result["limit_rational_events_per_s"] = table.num_rows / secs
            result["limit_note"] = ("limit_events_per_s sums the double durations exactly (the oracle's "
                                    "math.fsum), as the engine must; limit_rational_events_per_s divides the "
                                    "exact sum in ms once, which differs from the oracle in ~9% of cells")
        if not args.skip_python_loop:
            secs, result["python_loop_rows"] = python_loop(table, every, args.usecase == "uc2")
            result["python_loop_events_per_s"] = table.num_rows / secs
    else:  # the fact-aggregate plan evaluated in one numpy pass (tefq.spark.derived_limit)
        from tefq.spark.derived_limit import single_pass

        from tefq.spark.shapes import collector_of, plan_document

        def timed_single_pass(plan, events):
            started = time.perf_counter()
            out = single_pass(plan, events)
            return time.perf_counter() - started, out

        plan = plan_document(doc, 1)[0]
        secs, (counts, records) = best_of(args.limit_repeat, timed_single_pass, plan, table)
        result["limit_rows"], result["limit_facts_created"] = counts["rows_out"], counts["facts_created"]
        result["limit_events_per_s"] = table.num_rows / secs
        result["python_loop_note"] = "no per-event Python loop for UC3 (the oracle is one: see tefq compare)"
        col = collector_of(plan)
        for record in records:
            col.add(*record)
        return rows_digest(col.sorted_rows())  # a digest: the rows would weigh on the engine's peaks
    return None


def rows_digest(rows: list) -> str:
    import hashlib

    h = hashlib.sha256()
    for row in rows:
        h.update(repr(row).encode("utf-8"))
    return h.hexdigest()


def engine_figures(args: argparse.Namespace, doc, streams: list[str], fpt: int, result: dict,
                   limit_rows: str | None = None) -> None:
    """The Spark run: steady and overall rates, peak memory of driver, JVM and Python workers,
    state size per batch and (with --checkpoint) the checkpoint's size on disk."""
    import shutil

    from memory import PeakMemory, cpu_seconds_since, cpu_ticks, du_bytes

    from tefq.errors import TefqError
    from tefq.spark import run

    if args.checkpoint:
        shutil.rmtree(args.checkpoint, ignore_errors=True)
    started, cpu_before = time.perf_counter(), cpu_ticks(os.getpid())
    r = None
    with PeakMemory() as mem:
        try:
            r = run(doc, streams, master=args.master, max_files_per_trigger=fpt, progress=True,
                    checkpoint=args.checkpoint, buckets=args.buckets, ingest=args.ingest)
        except TefqError as e:
            result["error"] = str(e)
    wall = time.perf_counter() - started
    result["cpu_seconds"] = cpu_seconds_since(cpu_before)  # driver, JVM, Python workers (a cold run: Spark's start-up too)
    result["peak_memory_mb"] = mem.peaks
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # driver only
    if args.checkpoint:
        result["checkpoint_bytes"] = du_bytes(args.checkpoint)
    if r is None:
        return
    per, steady = batch_figures(r.metrics.extra.get("micro_batches", []))
    result.update({
        "events_per_s": result["events"] / wall, "steady_events_per_s": steady,
        "wall_seconds": wall, "collect_seconds": r.metrics.extra.get("collect_seconds"),
        "files_per_trigger": fpt, "micro_batches": per, "buckets": args.buckets or "all",
        "state_bytes_per_open_fact": r.metrics.extra.get("state_bytes_per_open_fact"),
        "peak_open_facts": r.metrics.extra.get("peak_open_facts"),
        "rows_out": r.metrics.rows_out, "facts_created": r.metrics.facts_created,
        "late_events": r.metrics.late_events, "events_in": r.metrics.events_in,
        "ingest": r.metrics.extra.get("ingest"),
    })
    if limit_rows is not None:  # UC3: every cell, not only the count
        result["rows_equal_limit_cells"] = rows_digest(r.results[0].rows) == limit_rows
    ratios(result, steady)
    warm_runs(args, doc, streams, fpt, result, r.metrics.rows_out)


def warm_runs(args: argparse.Namespace, doc, streams: list[str], fpt: int, result: dict, rows_out: int) -> None:
    """--warm-runs N: the same run N times more on the session the first one started, as a run in the
    warm engine finds it (docs/spark.md "Warm engine"): whole-run seconds and events/s of each."""
    from memory import cpu_seconds_since, cpu_ticks

    from tefq.spark import run

    walls, steadies, cpus = [], [], []
    for _ in range(args.warm_runs):
        started, cpu_before = time.perf_counter(), cpu_ticks(os.getpid())
        again = run(doc, streams, master=args.master, max_files_per_trigger=fpt, progress=False,
                    buckets=args.buckets, ingest=args.ingest)
        walls.append(round(time.perf_counter() - started, 3))
        cpus.append(cpu_seconds_since(cpu_before))
        steadies.append(batch_figures(again.metrics.extra.get("micro_batches", []))[1])
        assert again.metrics.rows_out == rows_out, "a warm run's rows differ from the first run's"
    if walls:
        result.update({"warm_wall_seconds": walls, "warm_events_per_s": result["events"] / min(walls),
                       "warm_steady_events_per_s": steadies, "warm_cpu_seconds": cpus})


def ratios(result: dict, steady: float | None) -> None:
    if result.get("limit_events_per_s"):
        result["steady_vs_limit"] = (steady or 0) / result["limit_events_per_s"]
        # the engine's counts against the limit's, over every event: no event late, none skipped
        result["rows_agree"] = (result["limit_rows"] == result["rows_out"] and result.get("late_events") == 0
                                and result.get("rows_equal_limit_cells", True)
                                and result.get("events_in") == result["events"]
                                and result.get("limit_facts_created", result.get("facts_created")) == result.get("facts_created"))
    if result.get("python_loop_events_per_s"):
        result["vs_python_loop"] = result["events_per_s"] / result["python_loop_events_per_s"]
        result["steady_vs_python_loop"] = (steady or 0) / result["python_loop_events_per_s"]
        result["rows_agree"] = result["rows_agree"] and result["limit_rows"] == result["python_loop_rows"]
    if result.get("pathway_events_per_s"):  # Pathway ran on a prefix: compare rates
        result["vs_pathway"] = result["events_per_s"] / result["pathway_events_per_s"]
        result["steady_vs_pathway"] = (steady or 0) / result["pathway_events_per_s"]


def pathway_figures(usecase: str, table, every: int, events: int) -> dict:
    """Pathway on the first `events` events (it runs at a few thousand events/s here), its rows
    checked against the numpy limit's on the same prefix."""
    try:
        import pathway  # noqa: F401
    except ImportError:
        return {"pathway_events_per_s": None, "pathway_note": "pathway is not installed (pip install '.[bench]')"}
    from baselines import numpy_limit
    from pathway_uc import run_pathway

    prefix = table.slice(0, min(events, table.num_rows))
    out = run_pathway(usecase, prefix, every)
    out["pathway_events"] = prefix.num_rows
    if out.get("pathway_rows") is not None:
        out["pathway_rows_agree"] = out["pathway_rows"] == numpy_limit(prefix, every, usecase == "uc2")[1]
    return out


if __name__ == "__main__":
    sys.exit(main())
