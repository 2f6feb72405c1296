"""The Spark fact operator without Spark, on the bench data: where a micro-batch's Python time goes.

    .venv/bin/python bench/profile_operator.py --usecase uc1 --data /tmp/bench2m [--batch 1000000] [--cprofile]

Builds the Spark SQL projection's rows (codes from pandas.factorize instead of xxhash64) per input
partition, runs the engine's mapper on them, splits the result by bucket for micro-batches of
--batch events, feeds each bucket to the operator as applyInPandasWithState would, and prints
the seconds per step. With --cprofile, the operator's top functions.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time

import numpy as np
import pandas as pd
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))  # the checkout: tests.support holds the hand-built documents

from throughput import IPTV, docs, load  # noqa: E402

from tefq.spark.runtime.mappers import make_mapper  # noqa: E402
from tefq.spark.operators.base import FLUSH  # noqa: E402
from tefq.spark.operators.current import make_operator  # noqa: E402

from tefq.spark.shapes import collector_of, plan_document  # noqa: E402
from tefq.vocabulary import RunSettings


class FakeState:
    def __init__(self) -> None:
        self.exists, self.get = False, None

    def update(self, v) -> None:
        self.exists, self.get = True, v


def projected_batches(table, plan, partition_rows: int) -> list[pa.RecordBatch]:
    """The engine's Spark SQL projection of the stream, per input partition (codes from
    pandas.factorize instead of xxhash64)."""
    ts = table.column("ts").to_numpy()
    s_codes, _ = pd.factorize(table.column("s").to_numpy(zero_copy_only=False))
    o_codes, o_terms = pd.factorize(table.column("o").to_numpy(zero_copy_only=False))
    p = table.column("p").to_numpy(zero_copy_only=False)
    kind = np.where(p == f"<{IPTV}join>", 0, np.where(p == f"<{IPTV}quit>", 1, -1)).astype(np.int32)
    fid = s_codes.astype(np.int64) * 1_000_003 + o_codes
    g = o_codes.astype(np.int64) * 7919 + 17
    out = []
    for lo in range(0, len(ts), partition_rows):
        sl = slice(lo, lo + partition_rows)
        n = len(ts[sl])
        out.append(pa.RecordBatch.from_pydict({
            "k": kind[sl], "ts": ts[sl], "o": np.zeros(n, np.int64), "f": fid[sl], "e": fid[sl] * 2 + kind[sl],
            "n": np.zeros(n, np.int64), "g0": g[sl], "t0": pa.array(o_terms[o_codes[sl]], pa.string()),
            "b": (g[sl] % plan.buckets).astype(np.int32), "x": pa.nulls(n, pa.string())}))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--usecase", default="uc1")
    ap.add_argument("--data", required=True)
    ap.add_argument("--batch", type=int, default=1_000_000)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--partition", type=int, default=200_000, help="rows per input partition")
    ap.add_argument("--cprofile", action="store_true")
    a = ap.parse_args()
    table = load(os.path.join(a.data, "log"))
    plan = plan_document(docs(a.usecase), a.buckets)[0]
    parts = projected_batches(table, plan, a.partition)
    flush = pa.RecordBatch.from_pydict({"k": pa.array([FLUSH], pa.int32()), **{
        c: pa.array([0], pa.int64()) for c in ("ts", "o", "f", "e", "n", "g0")}, "t0": pa.nulls(1, pa.string()),
        "b": pa.array([0], pa.int32()), "x": pa.nulls(1, pa.string())})
    per_batch = max(1, a.batch // a.partition)
    batches = [parts[i:i + per_batch] for i in range(0, len(parts), per_batch)] + [[flush]]
    op = make_operator(plan, RunSettings(0, 0))
    mapper = make_mapper(plan, None)
    states = [FakeState() for _ in range(a.buckets)]
    collector = collector_of(plan)
    prof = cProfile.Profile() if a.cprofile else None
    for i, group in enumerate(batches):
        started = time.perf_counter()
        mapped = [rb for p, rb in enumerate(group) for rb in mapper(iter([rb]), p)]
        frame = pa.Table.from_batches(mapped).to_pandas()
        frames = [frame[frame["b"] == b] for b in range(a.buckets)]
        print(f"batch {i}: mapper + to_pandas {time.perf_counter() - started:.2f} s")
        for b, pdf in enumerate(frames):
            started = time.perf_counter()
            if prof:
                prof.enable()
            out = list(op((b,), iter([pdf]), states[b]))
            if prof:
                prof.disable()
            print(f"batch {i} bucket {b}: {len(pdf)} rows in, {time.perf_counter() - started:.2f} s, "
                  f"{sum(len(o) for o in out)} records")
            for o in out:
                for kind, tick, payload in o.itertuples(index=False):
                    collector.add(kind, tick, payload)
    started = time.perf_counter()
    rows = collector.sorted_rows()
    print(f"driver: {len(rows)} rows formatted and sorted in {time.perf_counter() - started:.2f} s")
    if prof:
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
