"""Static against adaptive join order on Spark, over a structurally unstable sensor stream (issue 23,
Strider's Fig. 7/8).

    .venv/bin/python bench/sensors_adaptive.py [--events 200000] [--batches 20]
        [--queries q2,q8,q9] [--mix 'flow=8,...;...'] [--data DIR] [--plot out.png] [--json out.json]

`tefq gen sensors --events N --mix M` (default: four phases whose proportions of flow, pressure and
chlorine observations change), cut into `--batches` Parquet files in time order, one file per
micro-batch (`max_files_per_trigger` 1). Each query of examples/sensors named by `--queries` runs
on Spark twice in one session (after one unmeasured warm-up run), `--join-order static` and
`adaptive`, which one first alternating from query to query: the whole run's seconds and
elements/s, each micro-batch's elements/s (its input rows over its duration, from the run's
metrics), the windowed operator's own compute seconds per micro-batch (TEFQ_SPARK_PROFILE: the
join work without Spark's per-batch cost), and the join orders the adaptive run chose
(`join_orders`: strategy and order per batch). The rows of the two runs are checked equal. `--plot` draws each query's throughput per
micro-batch over event time, static and adaptive, as Strider's Fig. 7/8. The load average is
printed at the start and the end: the machine is shared.
"""
from __future__ import annotations

import argparse
import collections
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
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
UNSTABLE = "flow=8,pressure=1,chlorine=1;flow=1,pressure=1,chlorine=8;flow=1,pressure=8,chlorine=1;" \
           "flow=4,pressure=1,chlorine=4"


def load_average() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def stream_files(events: int, mix: str, batches: int, base: str) -> tuple[str, list[int]]:
    """The generated stream re-cut into `batches` files in time order (one per micro-batch);
    returns the directory and each file's last timestamp."""
    from tefq.sensors.generator import SensorsConfig
    from tefq.sensors.writer import generate

    gen = os.path.join(base, "generated")
    if not os.path.isdir(gen):
        generate(SensorsConfig(events=events, mix=mix, seed=1), gen)
    table = pa.concat_tables([pq.read_table(f) for f in sorted(glob.glob(os.path.join(gen, "observations", "*")))])
    out = os.path.join(base, f"batches-{batches}")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    ts = table.column("ts").to_numpy()
    last = []
    for i, rows in enumerate(np.array_split(np.arange(table.num_rows), batches)):
        path = os.path.join(out, f"part-{i:05d}.parquet")
        pq.write_table(table.take(pa.array(rows)), path)
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))  # Spark takes the oldest file first
        last.append(int(ts[rows[-1]]))
    return out, last


def operator_calls(profile: str, start: int) -> list[dict]:
    """The windowed operator's calls logged since byte `start` of the TEFQ_SPARK_PROFILE file."""
    if not os.path.exists(profile):
        return []
    with open(profile, encoding="utf-8") as f:
        f.seek(start)
        calls = [json.loads(line) for line in f if line.strip()]
    return [c for c in calls if c.get("where") == "windowed_operator"]


def one_run(spark, doc, stream: str, order: str) -> dict:
    """One whole run; per micro-batch its elements/s (Spark's duration) and the operator's own
    compute seconds (TEFQ_SPARK_PROFILE: the join work without Spark's per-batch cost)."""
    from tefq.spark import run

    profile = os.environ["TEFQ_SPARK_PROFILE"]
    start = os.path.getsize(profile) if os.path.exists(profile) else 0
    started = time.perf_counter()
    got = run(doc, [stream], spark=spark, progress=False, max_files_per_trigger=1, join_order=order)
    seconds = time.perf_counter() - started
    batches = [b for b in got.metrics.extra.get("micro_batches", []) if b.get("rows")]
    return {"seconds": seconds, "rows": [r.rows for r in got.results], "events": got.metrics.events_in,
            "per_batch": [b["rows"] / (b["ms"] / 1000) for b in batches],
            "operator_s": [c["compute_s"] for c in sorted(operator_calls(profile, start), key=lambda c: c["batch"])],
            "join_orders": got.metrics.extra.get("join_orders", [])}


def compare(spark, path: Path, stream: str, last_ts: list[int], first: str) -> dict:
    """Both orders on one query, `first` run first (the caller alternates: no order is always
    the one that meets a cold session or a busier minute)."""
    from tefq.analysis import load

    doc = load(str(path))
    orders = ("static", "adaptive") if first == "static" else ("adaptive", "static")
    runs = {order: one_run(spark, doc, stream, order) for order in orders}
    assert runs["static"]["rows"] == runs["adaptive"]["rows"], f"{path.stem}: static and adaptive rows differ"
    out = {"query": path.stem, "rows": sum(len(r) for r in runs["static"]["rows"]), "event_time": last_ts}
    for order, r in runs.items():
        out[order] = {"seconds": r["seconds"], "events_per_s": r["events"] / r["seconds"],
                      "median_batch_events_per_s": statistics.median(r["per_batch"]) if r["per_batch"] else None,
                      "per_batch": r["per_batch"], "operator_s": r["operator_s"],
                      "operator_total_s": sum(r["operator_s"])}
    chosen = runs["adaptive"]["join_orders"]
    out["adaptive"]["strategies"] = dict(collections.Counter(j["strategy"] for j in chosen))
    out["adaptive"]["orders"] = dict(collections.Counter(str(j["order"]) for j in chosen))
    out["static"]["orders"] = dict(collections.Counter(str(j["order"]) for j in runs["static"]["join_orders"]))
    return out


def plot(results: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), 1, figsize=(9, 3 * len(results)), squeeze=False)
    for ax, r in zip(axes[:, 0], results):
        t0 = r["event_time"][0]
        for order, colour in (("static", "tab:red"), ("adaptive", "tab:blue")):
            ys = r[order]["per_batch"][:len(r["event_time"])]  # the file batches (not the end-of-input flush)
            xs = [(t - t0) / 60_000 for t in r["event_time"][:len(ys)]]
            ax.plot(xs, ys, marker=".", color=colour, label=f"{order} ({r[order]['events_per_s']:,.0f} el/s whole run)")
        ax.set_title(f"{r['query']} on Spark")
        ax.set_ylabel("elements / s per micro-batch")
        ax.legend(fontsize=8)
    axes[-1, 0].set_xlabel("event time (min)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000, help="sensor stream elements")
    ap.add_argument("--batches", type=int, default=20, help="micro-batches (files)")
    ap.add_argument("--queries", default="q2,q8,q9", help="examples/sensors queries by prefix, comma-separated")
    ap.add_argument("--mix", default=UNSTABLE, help="tefq gen sensors --mix")
    ap.add_argument("--data", metavar="DIR", help="generate into (and reuse from) DIR")
    ap.add_argument("--plot", metavar="PNG")
    ap.add_argument("--json", metavar="PATH")
    a = ap.parse_args()
    from tefq.spark.runtime.session import get_session

    base = a.data or tempfile.mkdtemp(prefix="tefq-sensors-")
    os.makedirs(base, exist_ok=True)
    os.environ["TEFQ_SPARK_PROFILE"] = os.path.join(base, f"profile-{os.getpid()}.jsonl")  # before Spark starts
    print(f"load average at start: {load_average()}", file=sys.stderr)
    stream, last_ts = stream_files(a.events, a.mix, a.batches, os.path.join(base, f"sensors-{a.events}"))
    spark = get_session("local[2]")
    paths = [p for q in a.queries.split(",") for p in sorted((ROOT / "examples" / "sensors").glob(f"{q}-*.rspql"))]
    if paths:  # warm-up, not measured: the session's first run starts the Python workers
        from tefq.analysis import load

        one_run(spark, load(str(paths[0])), stream, "adaptive")
    results = []
    for k, path in enumerate(paths):
        r = compare(spark, path, stream, last_ts, "static" if k % 2 == 0 else "adaptive")
        results.append(r)
        s, ad = r["static"], r["adaptive"]
        print(f"{r['query']:<24} {r['rows']:>7,} rows  whole run static {s['events_per_s']:>8,.0f} el/s  adaptive "
              f"{ad['events_per_s']:>8,.0f} el/s  median batch static {s['median_batch_events_per_s'] or 0:>8,.0f} "
              f"adaptive {ad['median_batch_events_per_s'] or 0:>8,.0f}  operator compute static "
              f"{s['operator_total_s']:.1f} s adaptive {ad['operator_total_s']:.1f} s  strategies {ad['strategies']}")
    out = {"events": a.events, "batches": a.batches, "mix": a.mix, "load_end": load_average(), "queries": results}
    print(f"load average at end: {out['load_end']}", file=sys.stderr)
    if a.plot:
        plot(results, a.plot)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    if not a.data:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
