"""Windowed queries, all windows in vectorised passes, against their single-pass limit (issue 23).

    .venv/bin/python bench/multiwindow.py [--events 1000000] [--sensor-events 1000000]
        [--repeat 2] [--batch-rows 500000] [--plot sensors.png] [--data DIR] [--json out.json]

1. The sliding count (RSP-QL, [RANGE PT60S STEP PT10S], COUNT of joins per channel) on
   `tefq gen iptv --events N`: the single pandas pass — keep the joins, assign each to its six
   windows, drop repeats inside a window (a window's content is a set), group by window and
   channel — is the limit; then the multi-window run (tefq.spark.kernels.windowed.multiwindow_run) on the
   same table, rows checked equal. Best of --repeat, the two interleaved; the Parquet files are
   read once, before either (reading is not timed). `--spark` also times Spark's whole
   `tefq run --engine spark` (a process: start-up, reading, the windowed operator, the CSV) on
   the same files, rows checked equal to the single pass, against the limit measured here, and
   its steady events/s (its micro-batches' own times; `--spark-files-per-trigger N`: N files each;
   `--spark-ingest direct,rows`: each ingestion path in turn, each against its own single pass).
2. The Strider-like sensor queries (examples/sensors/Q1-Q9) on `tefq gen sensors --events N`
   with a mix that changes phase four times (a structurally unstable stream), static against
   adaptive join order: whole-run and steady (median per batch) elements/s, rows checked equal.
   `--plot` draws the per-batch throughput of Q7-Q9 over event time, as Strider's Fig. 7/8.
3. `--sensor-spark`: the sensor queries named by `--sensor-queries` (default a star, a chain, the
   UNION and the 9-pattern one) on Spark against their limit, on the same files. The limit of a
   sensor query is the in-process multi-window run (tefq.spark.kernels.windowed.multiwindow_run.run_batched,
   the evaluator the operator runs, 2,000,000 assigned elements a pass, adaptive join order)
   over the whole stream as one table, read before the timing (reading and writing are not
   timed): no Spark, no process, no state between micro-batches. Then Spark's whole
   `tefq run --engine spark` (a process, timed from outside), its CSV checked byte for byte
   equal to the limit run's, its steady elements/s (its micro-batches' own times) and the
   windowed operator's own compute seconds (TEFQ_SPARK_PROFILE). `--events 0` skips the sliding
   count; `--sensor-data DIR` reuses a `tefq gen sensors` output (DIR/observations).
   `--sensor-warm-runs N`: also N runs of each query in one Spark session kept by this process
   (tefq.spark.engine.run, after one run that starts the session's workers, not counted): the
   steady rate of a micro-batch after the first when a run is a single micro-batch, as a
   long-lived session (the tefq.spark API) sees it; each run's rows checked equal to the limit's.
The load average is printed at the start and the end: the machine is shared.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from tefq.analysis import load
from tefq.spark.kernels.windowed.multiwindow_run import run_batched

os.environ.setdefault("TEFQ_SERVER", "0")  # each run in its own process, timed as before the warm engine
ROOT = Path(__file__).resolve().parents[1]
IPTV = "http://example.org/iptv#"
SLIDING = """PREFIX : <http://example.org/iptv#>
REGISTER RSTREAM <http://example.org/iptv/sliding-joins> AS
SELECT ?channel (COUNT(?user) AS ?joins)
FROM NAMED WINDOW :w ON <http://example.org/iptv/log> [RANGE PT60S STEP PT10S]
WHERE { WINDOW :w { ?user :join ?channel } } GROUP BY ?channel
"""
UNSTABLE = "flow=8,pressure=1,chlorine=1;flow=1,pressure=1,chlorine=8;flow=1,pressure=8,chlorine=1;" \
           "flow=4,pressure=1,chlorine=4"


def load_average() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def read_parquet_dir(directory: str) -> pd.DataFrame:
    files = sorted(glob.glob(os.path.join(directory, "*.parquet")))
    return pd.concat([pq.read_table(f).to_pandas() for f in files], ignore_index=True)


def read_categorical(directory: str) -> pd.DataFrame:
    """The Parquet files of `directory` in name order (their tie order) as one table whose terms
    are categorical, as the operator's direct ingestion hands them to the engine."""
    files = sorted(glob.glob(os.path.join(directory, "*.parquet")))
    table = pa.concat_tables([pq.read_table(f, read_dictionary=["s", "p", "o"]) for f in files])
    return table.unify_dictionaries().combine_chunks().to_pandas()


def single_pass(log: pd.DataFrame, range_ms: int = 60_000, step_ms: int = 10_000) -> pd.Series:
    """The limit: joins per (window close, channel), windows [c - RANGE, c) with c = k * STEP."""
    joins = log[log["p"] == f"<{IPTV}join>"]
    ts = joins["ts"].to_numpy(np.int64)
    per = range_ms // step_ms
    close = (np.repeat(ts // step_ms + 1, per) + np.tile(np.arange(per), len(ts))) * step_ms
    content = pd.DataFrame({"w": close, "s": np.repeat(joins["s"].to_numpy(), per),
                            "o": np.repeat(joins["o"].to_numpy(), per)}).drop_duplicates()
    return content.groupby(["w", "o"], sort=False).size()


def timed(fn):
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def sliding_count(log: pd.DataFrame, repeat: int, batch_rows: int, tmp: str) -> dict:
    path = os.path.join(tmp, "sliding.rspql")
    Path(path).write_text(SLIDING)
    doc = load(path)
    limit, engine = [], []
    for _ in range(repeat):
        secs, counts = timed(lambda: single_pass(log))
        limit.append(secs)
        secs, got = timed(lambda: run_batched(doc, log, batch_rows=batch_rows))
        engine.append(secs)
    want = limit_rows(counts)
    rows = {(t, c[0], int(c[1].split('"')[1])) for t, c in got[0].rows}
    assert rows == want, "the multi-window run and the single pass disagree"
    steady = statistics.median(len_events(log, b) / b["seconds"] for b in got.batch_log)
    return {"events": len(log), "rows": len(got[0].rows), "limit_s": min(limit), "engine_s": min(engine),
            "limit_events_per_s": len(log) / min(limit), "engine_events_per_s": len(log) / min(engine),
            "share_of_limit": min(limit) / min(engine), "batches": got.batches,
            "steady_events_per_s": steady}


def limit_rows(counts: pd.Series) -> set:
    return {(int(w), o, int(n)) for (w, o), n in counts.items()}


def spark_whole_run(log_dir: str, log: pd.DataFrame, tmp: str, join_order: str | None,
                    files_per_trigger: int | None = None, ingest: str = "auto") -> dict:
    """Spark's whole `tefq run` on the log's files (a process, timed from outside), its CSV
    checked equal to the single pass, against the single pass timed just before it; steady: the
    median events/s of its micro-batches after the first (the only one if there is one), from
    the run's --metrics (Spark's triggerExecution time of each)."""
    import subprocess

    limit_s, counts = timed(lambda: single_pass(log))
    out, metrics = os.path.join(tmp, "spark.csv"), os.path.join(tmp, "spark-metrics.json")
    cmd = [sys.executable, "-m", "tefq", "run", os.path.join(tmp, "sliding.rspql"), "--stream", log_dir,
           "--engine", "spark", "--out", out, "--metrics", metrics, "--quiet"] + \
        (["--join-order", join_order] if join_order else []) + \
        (["--max-files-per-trigger", str(files_per_trigger)] if files_per_trigger else []) + ["--ingest", ingest]
    secs, _ = timed(lambda: subprocess.run(cmd, check=True))
    got = pd.read_csv(out)
    rows = set(zip(got.iloc[:, 0].astype(np.int64), got.iloc[:, 1], got.iloc[:, 2].astype(np.int64)))
    want = {(w, o[1:-1] if o.startswith("<") else o, n) for w, o, n in limit_rows(counts)}  # CSV: IRIs bare
    assert rows == want, "Spark's run and the single pass disagree"
    batches = [b for b in json.loads(Path(metrics).read_text()).get("micro_batches", []) if b["rows"] and b["ms"]]
    steady = steady_rate(batches)
    return {"ingest": ingest, "events": len(log), "rows": len(got), "spark_s": secs, "limit_s": limit_s,
            "spark_events_per_s": len(log) / secs, "share_of_limit": limit_s / secs,
            "micro_batches": len(batches), "steady_events_per_s": steady,
            "steady_share_of_limit": steady * limit_s / len(log)}


def window_by_window(log: pd.DataFrame, tmp: str) -> dict:
    """Today's engine loop (the oracle's run() with the one-window vectorised R2R) vs the batches."""
    from tefq.oracle.windowed.runner import run
    from tefq.spark.kernels.windowed.sparql import VectorEvaluator

    doc = load(os.path.join(tmp, "sliding.rspql"))
    elements = list(log[["ts", "s", "p", "o"]].itertuples(index=False, name=None))
    per_window, want = timed(lambda: run(doc, elements, evaluator=VectorEvaluator))
    engine, got = timed(lambda: run_batched(doc, log))
    assert got[0].sorted_rows() == want[0].sorted_rows()
    return {"events": len(log), "per_window_s": per_window, "engine_s": engine}


def len_events(table: pd.DataFrame, b: dict, step_ms: int = 10_000) -> int:
    """The stream elements a batch of windows newly covers: ts in [first close - STEP, last close)."""
    ts = table["ts"].to_numpy(np.int64)
    return int(np.searchsorted(ts, b["last"], "left") - np.searchsorted(ts, b["first"] - step_ms, "left"))


def sensor_queries(stream: pd.DataFrame, batch_rows: int) -> tuple[list[dict], dict]:
    results, logs = [], {}
    for path in sorted((ROOT / "examples" / "sensors").glob("*.rspql")):
        doc = load(str(path))
        runs = {}
        for order in ("static", "adaptive"):
            secs, got = timed(lambda: run_batched(doc, stream, join_order=order, batch_rows=batch_rows))
            runs[order] = (secs, got)
            logs[(path.stem, order)] = [(b["last"], len_events(stream, b) / b["seconds"]) for b in got.batch_log
                                        if len_events(stream, b)]
        (s_secs, s_got), (a_secs, a_got) = runs["static"], runs["adaptive"]
        assert s_got[0].sorted_rows() == a_got[0].sorted_rows(), f"{path.stem}: static and adaptive rows differ"
        strategies = sorted({r["strategy"] for r in a_got.join_orders})
        results.append({"query": path.stem, "rows": len(a_got[0].rows), "batches": a_got.batches,
                        "static_s": s_secs, "adaptive_s": a_secs,
                        "static_events_per_s": len(stream) / s_secs, "adaptive_events_per_s": len(stream) / a_secs,
                        "adaptive_strategies": strategies})
    return results, logs


def sensor_spark(path: Path, stream_dir: str, stream: pd.DataFrame, repeat: int, tmp: str) -> dict:
    """One sensor query: its limit (the in-process multi-window run, best of `repeat`), then
    Spark's whole `tefq run` on the stream's files, CSVs checked byte for byte equal."""
    import subprocess

    from tefq.io.result_writers import results_text

    doc = load(str(path))
    runs = [timed(lambda: run_batched(doc, stream)) for _ in range(repeat)]
    limit_s, want = min(secs for secs, _ in runs), results_text(list(runs[0][1]), "csv")
    out, metrics = os.path.join(tmp, f"{path.stem}.csv"), os.path.join(tmp, f"{path.stem}-metrics.json")
    profile = os.path.join(tmp, f"{path.stem}-profile.jsonl")
    cmd = [sys.executable, "-m", "tefq", "run", str(path), "--stream", stream_dir, "--engine", "spark",
           "--out", out, "--metrics", metrics, "--quiet"]
    secs, _ = timed(lambda: subprocess.run(cmd, check=True, env={**os.environ, "TEFQ_SPARK_PROFILE": profile}))
    with open(out, encoding="utf-8", newline="") as f:  # CSV rows end in CRLF
        assert f.read() == want, f"{path.stem}: Spark's CSV and the limit run's differ"
    batches = [b for b in json.loads(Path(metrics).read_text()).get("micro_batches", []) if b["rows"] and b["ms"]]
    steady = steady_rate(batches)
    return {"query": path.stem, "events": len(stream), "rows": len(runs[0][1][0].rows), "limit_s": limit_s,
            "limit_events_per_s": len(stream) / limit_s, "spark_s": secs, "spark_events_per_s": len(stream) / secs,
            "share_of_limit": limit_s / secs, "micro_batches": len(batches), "steady_events_per_s": steady,
            "steady_share_of_limit": steady * limit_s / len(stream),
            "operator_compute_s": sum(c["compute_s"] for c in operator_calls(profile))}


def sensor_warm(path: Path, stream_dir: str, want_csv: str, runs: int) -> dict:
    """`runs` runs of one sensor query in one Spark session, after one that starts its Python
    workers (not counted): per run its micro-batches' elements/s (`steady_rate`), rows checked."""
    from tefq.io.result_writers import results_text
    from tefq.spark import run
    from tefq.spark.runtime.session import get_session

    spark, doc, rates = get_session(), load(str(path)), []
    for i in range(runs + 1):
        got = run(doc, [stream_dir], spark=spark, progress=False)
        assert results_text(got.results, "csv") == want_csv, f"{path.stem}: a warm run's CSV differs from the limit's"
        batches = [b for b in got.metrics.extra.get("micro_batches", []) if b["rows"] and b["ms"]]
        if i:
            rates.append(steady_rate(batches))
    return {"warm_runs": runs, "warm_steady_events_per_s": statistics.median(rates), "warm_steady_each": rates}


def steady_rate(batches: list[dict]) -> float:
    """Elements/s of the micro-batches after the first (all of them if there is one): their
    input rows over their own durations (Spark's triggerExecution)."""
    later = batches[1:] or batches
    return sum(b["rows"] for b in later) / sum(b["ms"] for b in later) * 1000 if later else 0.0


def operator_calls(profile: str) -> list[dict]:
    """The windowed operator's calls in a TEFQ_SPARK_PROFILE file."""
    if not os.path.exists(profile):
        return []
    with open(profile, encoding="utf-8") as f:
        calls = [json.loads(line) for line in f if line.strip()]
    return [c for c in calls if c.get("where") == "windowed_operator"]


def sensor_spark_queries(a: argparse.Namespace, tmp: str) -> list[dict]:
    base = a.sensor_data or os.path.join(a.data or tmp, f"sensors-{a.sensor_events}")
    if not os.path.isdir(base):
        from tefq.sensors.generator import SensorsConfig
        from tefq.sensors.writer import generate

        generate(SensorsConfig(events=a.sensor_events, mix=UNSTABLE, seed=1), base)
    directory = os.path.join(base, "observations")
    stream = read_categorical(directory)
    results = []
    for q in a.sensor_queries.split(","):
        for path in sorted((ROOT / "examples" / "sensors").glob(f"{q}-*.rspql")):
            r = sensor_spark(path, directory, stream, a.repeat, tmp)
            results.append(r)
            print(f"{r['query']:<26} {r['events']:,} el, {r['rows']:,} rows = the limit run's: limit "
                  f"{r['limit_s']:.1f} s ({r['limit_events_per_s']:,.0f} el/s); Spark whole run {r['spark_s']:.1f} s "
                  f"({r['spark_events_per_s']:,.0f} el/s) = {r['share_of_limit']:.3f} of the limit; steady "
                  f"{r['steady_events_per_s']:,.0f} el/s over {r['micro_batches']} micro-batch(es) = "
                  f"{r['steady_share_of_limit']:.3f}; operator compute {r['operator_compute_s']:.1f} s", flush=True)
            if a.sensor_warm_runs:
                with open(os.path.join(tmp, f"{path.stem}.csv"), encoding="utf-8", newline="") as f:
                    r.update(sensor_warm(path, directory, f.read(), a.sensor_warm_runs))
                r["warm_steady_share_of_limit"] = r["warm_steady_events_per_s"] * r["limit_s"] / r["events"]
                print(f"{'':<26} warm session, {a.sensor_warm_runs} runs: steady {r['warm_steady_events_per_s']:,.0f} "
                      f"el/s (median; each {', '.join(f'{x:,.0f}' for x in r['warm_steady_each'])}) = "
                      f"{r['warm_steady_share_of_limit']:.3f} of the limit", flush=True)
    return results


def plot(logs: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    queries = sorted({q for q, _ in logs if q[:2] in ("q7", "q8", "q9")})
    fig, axes = plt.subplots(len(queries), 1, figsize=(9, 3 * len(queries)), squeeze=False)
    for ax, q in zip(axes[:, 0], queries):
        for order, colour in (("static", "tab:red"), ("adaptive", "tab:blue")):
            points = logs[(q, order)]
            t0 = points[0][0]
            ax.plot([(t - t0) / 60_000 for t, _ in points], [v for _, v in points], color=colour, label=order)
        ax.set_title(q)
        ax.set_ylabel("elements / s")
        ax.legend()
    axes[-1, 0].set_xlabel("event time (min)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def data(args: argparse.Namespace, tmp: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    from tefq.iptv.generator import IptvConfig
    from tefq.iptv.writer import generate as gen_iptv
    from tefq.sensors.generator import SensorsConfig
    from tefq.sensors.writer import generate as gen_sensors

    base = args.data or tmp
    iptv, sensors = os.path.join(base, f"iptv-{args.events}"), os.path.join(base, f"sensors-{args.sensor_events}")
    if args.events and not os.path.isdir(iptv):
        gen_iptv(IptvConfig(events=args.events), iptv)
    log = read_parquet_dir(os.path.join(iptv, "log")) if args.events else pd.DataFrame()
    if not (args.sensor_events and args.sensor_in_process):
        return log, pd.DataFrame()
    if args.sensor_data:
        return log, read_parquet_dir(os.path.join(args.sensor_data, "observations"))
    if not os.path.isdir(sensors):
        gen_sensors(SensorsConfig(events=args.sensor_events, mix=UNSTABLE, seed=1), sensors)
    return log, read_parquet_dir(os.path.join(sensors, "observations"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000, help="IPTV log events (0: skip the sliding count)")
    ap.add_argument("--sensor-events", type=int, default=1_000_000, help="sensor stream elements (0: skip)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--batch-rows", type=int, default=500_000, help="elements assigned to windows per pass")
    ap.add_argument("--sensor-batch-rows", type=int, default=120_000,
                    help="the same for the sensor queries (smaller: more points per run for the plot)")
    ap.add_argument("--per-window", type=int, default=0, metavar="N",
                    help="also time today's window-by-window run (the oracle's loop, vectorised R2R) on the "
                         "first N events, against the multi-window run on them")
    ap.add_argument("--spark", action="store_true", help="also time Spark's whole `tefq run` of the sliding count")
    ap.add_argument("--spark-files-per-trigger", type=int, metavar="N",
                    help="Spark's micro-batches: N of the log's files each (default: one micro-batch)")
    ap.add_argument("--spark-ingest", default="auto", metavar="PATHS",
                    help="Spark's ingestion path(s), comma-separated, run in turn in this order (auto, direct, "
                         "columnar, rows: `tefq run --ingest`; e.g. direct,rows for a same-run ratio)")
    ap.add_argument("--sensor-spark", action="store_true",
                    help="the sensor queries on Spark against their limit (the in-process multi-window run)")
    ap.add_argument("--sensor-queries", default="q1,q2,q5,q9", metavar="QS",
                    help="--sensor-spark's queries, examples/sensors by prefix (default: a star, a chain, the "
                         "UNION, the 9-pattern one)")
    ap.add_argument("--sensor-in-process", action=argparse.BooleanOptionalAction, default=True,
                    help="the in-process static against adaptive comparison of every sensor query")
    ap.add_argument("--sensor-data", metavar="DIR", help="a `tefq gen sensors` output to reuse (DIR/observations)")
    ap.add_argument("--sensor-warm-runs", type=int, default=0, metavar="N",
                    help="--sensor-spark: also N runs in one Spark session kept by this process, after one that "
                         "starts it (the steady rate of a one-micro-batch run on a warm session)")
    ap.add_argument("--data", metavar="DIR", help="generate into (and reuse from) DIR")
    ap.add_argument("--plot", metavar="PNG", help="static vs adaptive throughput of Q7-Q9 per batch")
    ap.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="tefq-mw-")
    try:
        print(f"load average at start: {load_average()}", file=sys.stderr)
        out = {"load_start": load_average()}
        log, stream = data(a, tmp)
        if a.events:
            sliding_part(a, log, tmp, out)
        if a.sensor_events and a.sensor_in_process:
            out["sensors"], logs = sensor_queries(stream, a.sensor_batch_rows)
            for r in out["sensors"]:
                print(f"{r['query']:<28} {r['rows']:>8,} rows  static {r['static_events_per_s']:>10,.0f} ev/s  "
                      f"adaptive {r['adaptive_events_per_s']:>10,.0f} ev/s  ({', '.join(r['adaptive_strategies'])})")
            if a.plot:
                plot(logs, a.plot)
        if a.sensor_spark:
            out["sensors_spark"] = sensor_spark_queries(a, tmp)
        out["load_end"] = load_average()
        print(f"load average at end: {out['load_end']}", file=sys.stderr)
        if a.json:
            Path(a.json).write_text(json.dumps(out, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def sliding_part(a: argparse.Namespace, log: pd.DataFrame, tmp: str, out: dict) -> None:
    """The sliding count in process, then (--spark) on Spark, --per-window against the oracle's loop."""
    out["sliding"] = s = sliding_count(log, a.repeat, a.batch_rows, tmp)
    print(f"sliding count, {s['events']:,} events, {s['rows']:,} rows: single pass {s['limit_s']:.2f} s "
          f"({s['limit_events_per_s']:,.0f} ev/s), multi-window {s['engine_s']:.2f} s "
          f"({s['engine_events_per_s']:,.0f} ev/s, steady {s['steady_events_per_s']:,.0f} ev/s, "
          f"{s['batches']} batches) = {s['share_of_limit']:.2f} of the limit")
    if a.spark:
        runs = [spark_whole_run(os.path.join(a.data or tmp, f"iptv-{a.events}", "log"), log, tmp, None,
                                a.spark_files_per_trigger, ingest) for ingest in a.spark_ingest.split(",")]
        out["spark"], out["spark_runs"] = runs[0], runs
        for r in runs:
            print(f"Spark whole run (tefq run --ingest {r['ingest']}), {r['events']:,} events, {r['rows']:,} rows "
                  f"= the single pass: {r['spark_s']:.1f} s ({r['spark_events_per_s']:,.0f} ev/s); single pass "
                  f"{r['limit_s']:.2f} s = {r['share_of_limit']:.3f} of the limit; steady "
                  f"{r['steady_events_per_s']:,.0f} ev/s over {r['micro_batches']} micro-batch(es) = "
                  f"{r['steady_share_of_limit']:.3f} of the limit")
    if a.per_window:
        out["per_window"] = p = window_by_window(log.iloc[:a.per_window], tmp)
        print(f"first {p['events']:,} events: window by window {p['per_window_s']:.1f} s, multi-window "
              f"{p['engine_s']:.2f} s (x{p['per_window_s'] / p['engine_s']:.0f})")


if __name__ == "__main__":
    main()
