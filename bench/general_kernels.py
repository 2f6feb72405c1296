"""Micro-bench of the general vectorised kernels (issue 27, phase 1): events/s per query shape on
generated IPTV data, single process, no Spark, next to UC1's specialised kernels on the same data.

    .venv/bin/python bench/general_kernels.py [--events 200000] [--batch 200000] [--data DIR]

Generates `tefq gen iptv --events N --epg` (Parquet) unless --data names such a directory, gives
every channel a genre and a rank as background, codes the elements once (as a mapper would), then
per shape: the evaluator's ingest + advance per micro-batch of --batch events (the kernel time:
what a bucket operator would spend), and the formatting of the rows (what the driver would spend).
UC1 (specialised) runs `tefq.spark.kernels.intervals` the way the current-aggregate operator does.
Figures: events / kernel second (CPU seconds of this process: on a shared machine wall time measures
the load), rows, and the peak state rows.
"""
from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from tefq.analysis import bind  # noqa: E402
from tefq.plan.ticks import tick_range  # noqa: E402
from tefq.spark.kernels.general.coding import Elements, code_columns  # noqa: E402
from tefq.spark.kernels.general.local import LocalRun, coded_background  # noqa: E402
from tefq.spark.kernels.general.rows import concat, format_rows  # noqa: E402
from tefq.spark.kernels.intervals import Events, Intervals, apply_sorted_events, current_aggregates  # noqa: E402
from tefq.spark.kernels.joins import Relation  # noqa: E402
from tefq.spark.kernels.tick_aggregates import TickSpec, tick_rows  # noqa: E402
from tefq.spark.planning.general import plan_general  # noqa: E402
from tefq.syntax import parse  # noqa: E402

IPTV = "http://example.org/iptv#"
EVERY = 'EVERY "PT1M"^^xsd:duration'
FACTS = f"""PREFIX : <{IPTV}>
CONSTRUCT FACT UserFact {{?user :watching ?channel .}} (UNION (SINCE ?user :join ?channel) (UNTIL ?user :quit ?channel))
CONSTRUCT FACT ProgramFact {{?channel :showing ?program .}} (UNION (SINCE ?channel :start ?program) (UNTIL ?channel :finish ?program))
CONSTRUCT FACT ViewShipFact {{?user :attends ?program .}} {{?user :watching ?channel . ?channel :showing ?program}}
CONSTRUCT FACT GenreFact {{?user :likes ?genre .}} (UNION (SINCE ?user :join ?c . ?c :genre ?genre FILTER(?c != :ch1))
                                                   (UNTIL ?user :quit ?c . ?c :genre ?genre))
"""
SHAPES = {
    "UC1 (general kernels)": "SELECT ?channel AS C, ?user AS N (AGGREGATE ?channel, COUNT ?user WHERE (CURRENT ?user :watching ?channel) GROUP BY ?channel {every})",
    "UC2 (general kernels)": "SELECT ?channel AS C, ?n AS N, ?t/?n AS A (AGGREGATE ?channel, SUM DURATION(?S,?E) AS ?t, COUNT ?user AS ?n WHERE (CURRENT ?user :watching ?channel [?S,?E]) GROUP BY ?channel {every})",
    "genre (CURRENT + background)": "SELECT ?genre AS G, ?n AS N (AGGREGATE ?genre, COUNT DISTINCT ?user AS ?n WHERE {{ (CURRENT ?user :watching ?channel) . ?channel :genre ?genre }} GROUP BY ?genre {every})",
    "event pattern": "SELECT ?channel AS C, ?n AS N (AGGREGATE ?channel, COUNT ?user AS ?n WHERE {{ ?user :join ?channel }} GROUP BY ?channel {every})",
    "two facts joined": "SELECT ?program AS P, ?n AS N, ?t AS T (AGGREGATE ?program, COUNT DISTINCT ?user AS ?n, SUM DURATION(?S,?E) AS ?t WHERE {{ ?user :watching ?channel [?S,?E] . ?channel :showing ?program }} GROUP BY ?program {every})",
    "fact pattern, SUM DURATION": "SELECT ?channel AS C, ?t AS T (AGGREGATE ?channel, SUM DURATION(?S,?E) AS ?t WHERE {{ ?user :watching ?channel [?S,?E] }} GROUP BY ?channel {every})",
    "FILTER over pattern variables": "SELECT ?channel AS C, ?n AS N (AGGREGATE ?channel, COUNT ?user AS ?n WHERE {{ (CURRENT ?user :watching ?channel) . ?channel :rank ?r FILTER(?r > 10 && ?channel != :ch2) }} GROUP BY ?channel {every})",
    "FILTER over interval variables": "SELECT ?channel AS C, ?n AS N (AGGREGATE ?channel, COUNT ?user AS ?n WHERE {{ ?user :watching ?channel [?S,?E] FILTER(DURATION(?S,?E) > 600) }} GROUP BY ?channel {every})",
    "WHILE + background pattern": "SELECT ?channel AS C, ?g AS G, ?n AS N (AGGREGATE ?channel, ?g, COUNT DISTINCT ?user AS ?n WHERE {{ ?user :watching ?channel [?S,?E] . ?channel :genre ?g }} GROUP BY ?channel ?g WHILE ?channel :showing ?program [?SS,?ES] {every})",
    "SINCE/UNTIL + background BGP": "SELECT ?genre AS G, ?n AS N (AGGREGATE ?genre, COUNT ?user AS ?n WHERE (CURRENT ?user :likes ?genre) GROUP BY ?genre {every})",
    "UC3 (derived fact, WHILE)": "SELECT ?show AS S, ?n AS N, ?t/?n AS A (AGGREGATE ?show, SUM DURATION(?SA,?EA) AS ?t, COUNT DISTINCT ?user AS ?n WHERE ?user :attends ?show [?SA,?EA] GROUP BY ?show WHILE ?_ :showing ?show [?SS,?ES] {every})",
}


def load(directory: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every element of the log and the EPG, in time order (stable: stream order for ties)."""
    import pyarrow as pa

    files = sorted(glob.glob(os.path.join(directory, "log", "*.parquet"))) + \
        sorted(glob.glob(os.path.join(directory, "epg", "*.parquet")))
    t = pa.concat_tables([pq.read_table(f) for f in files])
    ts = t.column("ts").to_numpy()
    order = np.argsort(ts, kind="stable")
    cols = [t.column(c).to_numpy(zero_copy_only=False)[order] for c in ("s", "p", "o")]
    return (ts[order], *cols)


def background(channels: np.ndarray) -> list[tuple[str, str, str]]:
    genres = ["News", "Sports", "Film", "Kids", "Music", "Docs"]
    out = []
    for i, ch in enumerate(sorted(set(channels.tolist()))):
        out.append((ch, f"<{IPTV}genre>", f"<{IPTV}{genres[i % len(genres)]}>"))
        out.append((ch, f"<{IPTV}rank>", f'"{i}"^^<http://www.w3.org/2001/XMLSchema#integer>'))
    return out


def batches(ts: np.ndarray, size: int, every: int):
    """(lo, hi, last final tick index) per micro-batch of `size` elements."""
    for lo in range(0, len(ts), size):
        hi = min(lo + size, len(ts))
        final = (int(ts[hi]) - 1) // every if hi < len(ts) else tick_range(int(ts[0]), int(ts[-1]), 0, every)[1]
        yield lo, hi, final


def run_shape(name: str, data, coded, bg, batch: int) -> dict:
    text = FACTS + SHAPES[name].format(every=EVERY)
    doc = bind(parse(text, name), name, text, {}, frozenset(p for _, p, _ in bg))
    plan = plan_general(doc, doc.queries[0], 1)
    if not hasattr(plan, "compiled"):
        raise SystemExit(f"{name}: {plan}")
    cq = plan.compiled(doc)
    run = LocalRun(cq, *coded_background(bg))
    ts = data[0]
    run.done = tick_range(int(ts[0]), int(ts[-1]), 0, cq.every)[0] - 1
    peak, kernel = 0, 0.0
    for lo, hi, final in batches(ts, batch, cq.every):
        el, terms = coded[lo // batch]
        started = time.process_time()
        run.ingest(el, terms)
        run.report_through(final)
        kernel += time.process_time() - started
        size = run.states[0].size()
        peak = max(peak, size["open_facts"] + size["closed_facts"] + size["events"] + size["pending"])
    started = time.process_time()
    rows = format_rows(cq, concat(run.out, cq))
    return {"kernel_s": kernel, "format_s": time.process_time() - started, "rows": len(rows), "peak_state_rows": peak}


def watching_events(el: Elements, join: int, quit_: int) -> Events:
    """UserFact's SINCE (join) / UNTIL (quit) events of a coded batch: identity (user, channel)."""
    keep = np.nonzero((el.spo[:, 1] == join) | (el.spo[:, 1] == quit_))[0]
    s, o = el.spo[keep, 0], el.spo[keep, 2]
    return Events((el.spo[keep, 1] == quit_).astype(np.int64), el.ts[keep], el.order[keep], s * 1_000_003 + o,
                  np.stack([s, o], axis=1), s ^ o)


def run_specialised(data, coded, batch: int, spec: TickSpec | None) -> dict:
    """UserFact on `tefq.spark.kernels.intervals`, as the specialised operators run it per batch:
    spec None: UC1's counts (`current_aggregates`, the CURRENT operator); else the fact operator's
    `tick_rows` (its seconds also alone, `ticks_s`)."""
    every = 60_000
    ts = data[0]
    join, quit_ = (int(code_columns(np.zeros(1), np.array([f"<{IPTV}{k}>"], object), np.array(["x"], object),
                                    np.array(["x"], object))[0].spo[0, 0]) for k in ("join", "quit"))
    base, pending = Intervals.empty(2), None
    done = tick_range(int(ts[0]), int(ts[-1]), 0, every)[0] - 1
    kernel, ticks_s, rows = 0.0, 0.0, 0
    for lo, hi, final in batches(ts, batch, every):
        started = time.process_time()
        ev = watching_events(coded[lo // batch][0], join, quit_)
        pending = ev if pending is None else Events.concat([pending, ev])
        if final > done:
            ticks = np.arange(done + 1, final + 1, dtype=np.int64) * every
            order = pending.apply_order()
            now = pending.ts[order] <= ticks[-1]
            cur = apply_sorted_events(base, pending.take(order[now])).intervals
            tick_started = time.process_time()
            if spec is None:
                rows += int((current_aggregates(Intervals(cur.fid, cur.start, cur.end, cur.groups[:, 1:]),
                                                ticks).count > 0).sum())
            else:
                rows += len(tick_rows(Relation(("user", "channel"), cur.groups, cur.start, cur.end), spec, None,
                                      ticks))
            ticks_s += time.process_time() - tick_started
            base = cur.take(np.nonzero(cur.end > ticks[-1])[0])
            pending = pending.take(np.nonzero(pending.ts > ticks[-1])[0])
            done = final
        kernel += time.process_time() - started
    return {"kernel_s": kernel, "format_s": 0.0, "rows": rows, "peak_state_rows": len(base), "ticks_s": ticks_s}


FACT_SUM = TickSpec(False, 60_000, (1,), (("t", "sum_duration", -1),))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=200_000)
    ap.add_argument("--data", help="a `tefq gen iptv --epg` Parquet directory (else generated in a temp dir)")
    ap.add_argument("--only", nargs="*", help="shapes to run (substrings of their names)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tefq-bench-") as tmp:
        directory = args.data or os.path.join(tmp, "iptv")
        if not args.data:
            tefq = os.path.join(os.path.dirname(sys.executable), "tefq")
            subprocess.run([tefq, "gen", "iptv", "--out", directory, "--events", str(args.events), "--epg"], check=True)
        data = load(directory)
    n = len(data[0])
    coded = [code_columns(data[0][lo:lo + args.batch], *(c[lo:lo + args.batch] for c in data[1:]), lo)
             for lo in range(0, n, args.batch)]
    bg = background(data[3][data[2] == f"<{IPTV}join>"])
    print(f"{n:,} elements (log + EPG), micro-batches of {args.batch:,}, EVERY PT1M, single process")
    results = {"UC1 (specialised kernels)": run_specialised(data, coded, args.batch, None),
               "fact operator, SUM DURATION": run_specialised(data, coded, args.batch, FACT_SUM)}
    for name in SHAPES:
        if not args.only or any(o in name for o in args.only):
            results[name] = run_shape(name, data, coded, bg, args.batch)
    base = n / results["UC1 (specialised kernels)"]["kernel_s"]
    print(f"{'shape':32s} {'kernel s':>9s} {'events/s':>11s} {'x UC1':>6s} {'format s':>9s} {'rows':>8s} {'state':>8s}"
          f" {'ticks s':>8s}")
    for name, r in results.items():
        rate = n / r["kernel_s"]
        print(f"{name:32s} {r['kernel_s']:9.2f} {rate:11,.0f} {rate / base:6.2f} {r['format_s']:9.2f} {r['rows']:8,d}"
              f" {r['peak_state_rows']:8,d} {r.get('ticks_s', float('nan')):8.2f}")


if __name__ == "__main__":
    main()
