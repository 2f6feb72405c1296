"""Whole-run wall time of `tefq run` with the warm engine (docs/spark.md "Warm engine"), timed from
outside as a user types it (a benchmark, not a test):

    python bench/warm.py [--pairs 3] [--data DIR] [--queries tour,uc1] [--variants ...] [--json OUT]

Two runs: the tour's query (`examples/spec10/uc1.tef` over its 8 events) and UC1 on the default
data (`tefq gen iptv --out DIR --epg --seed 1`, 100,000 log events; `--data` another, e.g. 10M
events with `--queries uc1 --variants first,warm,cold`). Each pair, in this order (`--variants`: some):

- `first`: `--engine spark` with no engine up (it starts one and runs there: what a user's first
  Spark run costs; the engines are stopped before each query's);
- `warm`: `--engine spark` in that engine, a fresh `tefq` process;
- `auto-warm`: the default `--engine auto` with the engine up (the tour: the oracle in the engine);
- `oracle`: `--engine oracle`, `TEFQ_SERVER=0` (a fresh process, as before the engine);
- `cold`: `--engine spark`, `TEFQ_SERVER=0` (Spark started in the run's own process, as before).

Every run's CSV must equal the oracle's (without `oracle`: the first variant's). The engines live
in a private directory and are stopped at the end; the load average is recorded beside each pair.
"""
from __future__ import annotations

import argparse
import filecmp
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from tefq.io.staging import events_in

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOUR = ("tour", os.path.join(ROOT, "examples", "spec10", "uc1.tef"), os.path.join(ROOT, "examples", "spec10", "events.tsv"))
VARIANTS = ("first", "warm", "auto-warm", "oracle", "cold")


def tefq(args: list[str], env: dict) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tefq", *args], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"tefq {' '.join(args)}: exit {done.returncode}\n{done.stderr[-3000:]}")
    return seconds


def size_name(events: int) -> str:
    return f"{events / 1e6:g}M" if events >= 1_000_000 else f"{events // 1000}k"


def variant_args(variant: str) -> list[str]:
    return {"first": ["--engine", "spark"], "warm": ["--engine", "spark"], "auto-warm": [],
            "oracle": ["--engine", "oracle"], "cold": ["--engine", "spark"]}[variant]


def one_pair(runs: list[tuple[str, str, str]], tmp: str, env: dict, alone: dict,
             variants: tuple[str, ...] = VARIANTS) -> dict:
    """One run of every variant of every query; {query: {variant: seconds}} and whether the CSVs agree."""
    out: dict = {name: {} for name, _, _ in runs}
    equal = True
    for variant in variants:
        for name, query, stream in runs:
            if variant == "first":
                tefq(["server", "stop"], env)
            csv = os.path.join(tmp, f"{name}-{variant}.csv")
            args = ["run", query, "--stream", stream, "--out", csv, "--format", "csv", "--quiet", *variant_args(variant)]
            out[name][variant] = round(tefq(args, alone if variant in ("oracle", "cold") else env), 3)
    reference = "oracle" if "oracle" in variants else variants[0]
    for name, _, _ in runs:
        want = os.path.join(tmp, f"{name}-{reference}.csv")
        equal = equal and all(filecmp.cmp(want, os.path.join(tmp, f"{name}-{v}.csv"), shallow=False) for v in variants)
    return {"seconds": out, "outputs_equal": equal, "load": list(os.getloadavg())}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--data", default="/tmp/tefq-bench-default", help="the default data (generated when absent)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--queries", default="tour,uc1", help="of tour, uc1 (UC1 on --data)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"of {', '.join(VARIANTS)}")
    args = ap.parse_args()
    queries, chosen = set(args.queries.split(",")), set(args.variants.split(","))
    if not queries or queries - {"tour", "uc1"} or not chosen or chosen - set(VARIANTS):
        ap.error(f"--queries: of tour, uc1; --variants: of {', '.join(VARIANTS)}")
    variants = tuple(v for v in VARIANTS if v in chosen)
    home = tempfile.mkdtemp(prefix="tefq-bench-engines-")
    env = {**os.environ, "TEFQ_SERVER": "1", "TEFQ_SERVER_DIR": home}
    alone = {**os.environ, "TEFQ_SERVER": "0"}
    if not os.path.isdir(os.path.join(args.data, "log")):
        tefq(["gen", "iptv", "--out", args.data, "--epg", "--seed", "1"], alone)
    uc1 = (f"uc1-{size_name(events_in([os.path.join(args.data, 'log')])[0])}", os.path.join(ROOT, "usecases", "uc1.tef"),
           os.path.join(args.data, "log"))
    runs = [run for run, name in ((TOUR, "tour"), (uc1, "uc1")) if name in queries]
    pairs = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(args.pairs):
                pairs.append(one_pair(runs, tmp, env, alone, variants))
                print(json.dumps(pairs[-1]), file=sys.stderr, flush=True)
    finally:
        tefq(["server", "stop"], env)
    medians = {name: {v: statistics.median(p["seconds"][name][v] for p in pairs) for v in variants}
               for name, _, _ in runs}
    result = {"pairs": pairs, "medians": medians, "outputs_equal": all(p["outputs_equal"] for p in pairs),
              "cpus": os.cpu_count()}
    for name, m in medians.items():
        ratios = [f"{a}/{b} {m[a] / m[b]:.2f}" for a, b in (("warm", "oracle"), ("first", "cold")) if a in m and b in m]
        print(f"{name}: " + ", ".join(f"{v} {m[v]:.2f} s" for v in variants) + (f"; {', '.join(ratios)}" if ratios else ""))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=1)
    return 0 if result["outputs_equal"] else 1


if __name__ == "__main__":
    sys.exit(main())
