"""A windowed query split by its windows (tefq.spark.kernels.windowed.partitioning.WindowSlabs): every window
an element falls in is evaluated in one of the (at most two) buckets it is sent to, the split
applies only where no window's report depends on another's, and the mapper's routing
(runtime/windowed_rows.route_by_window) copies exactly the elements at a slab's edge."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from tefq.spark.kernels.windowed.partitioning import WindowSlabs, window_slabs


def windows_holding(t: int, t0: int, range_ms: int, step_ms: int) -> list[int]:
    """Brute force: the ids k >= 0 whose window [t0 + k·STEP, t0 + k·STEP + RANGE] holds t."""
    return [k for k in range(0, (t - t0) // step_ms + 2) if t0 + k * step_ms <= t <= t0 + k * step_ms + range_ms]


@given(t0=st.integers(0, 5_000), range_ms=st.integers(1, 5_000), step_ms=st.integers(1, 5_000),
       offsets=st.lists(st.integers(0, 200_000), min_size=1, max_size=40), buckets=st.integers(2, 5))
def test_every_window_of_an_element_is_evaluated_where_the_element_goes(t0, range_ms, step_ms, offsets,
                                                                         buckets) -> None:
    slabs = WindowSlabs(range_ms, step_ms, 4 * -(-range_ms // step_ms), buckets)
    ts = np.array([t0 + x for x in offsets], np.int64)
    first, last = slabs.element_buckets(ts, t0)
    for t, a, b in zip(ts.tolist(), first.tolist(), last.tolist()):
        ks = windows_holding(t, t0, range_ms, step_ms)
        closes = np.array([t0 + k * step_ms + range_ms for k in ks], np.int64)
        owners = set(slabs.bucket_of_closes(closes, t0).tolist())
        assert owners <= {a, b}, (t, ks)
        if ks:  # no copy goes where none of its windows is evaluated
            assert {a, b} <= owners


def test_consecutive_windows_fill_a_slab_then_move_to_the_next_bucket() -> None:
    slabs = WindowSlabs(60_000, 10_000, 24, 2)
    closes = 1_000 + np.arange(60, dtype=np.int64) * 10_000 + 60_000
    assert slabs.bucket_of_closes(closes, 1_000).tolist() == [0] * 24 + [1] * 24 + [0] * 12


def test_only_queries_whose_windows_stand_alone_are_split(tmp_path) -> None:
    from tefq.analysis import load
    from tefq.spark.kernels.windowed.multiwindow_incremental import IncrementalBatchedRun

    def queries(text: str):
        path = tmp_path / "q.rspql"
        path.write_text("PREFIX : <http://example.org/iptv#>\n" + text)
        return IncrementalBatchedRun(load(str(path))).queries

    body = "FROM NAMED WINDOW :w ON <http://example.org/iptv/log> [RANGE PT6S STEP PT2S] WHERE { WINDOW :w { ?u :join ?c } }"
    rstream = queries("REGISTER RSTREAM <http://example.org/q> AS SELECT (COUNT(?u) AS ?n) " + body)
    assert window_slabs(rstream, 2) == WindowSlabs(6_000, 2_000, 12, 2)
    assert window_slabs(rstream, 1) is None  # one bucket: nothing to split
    istream = queries("REGISTER ISTREAM <http://example.org/q> AS SELECT ?u " + body)
    assert window_slabs(istream, 2) is None  # ISTREAM compares a window with the one before


def wire(ts: list[int], kinds: list[int]) -> pa.RecordBatch:
    from tefq.spark.protocol import ELEMENT_WIRE

    n = len(ts)
    zeros = pa.array([0] * n, pa.int64())
    cols = {"k": pa.array(kinds, pa.int32()), "ts": pa.array(ts, pa.int64()), "o": pa.array(range(n), pa.int64()),
            "f": zeros, "n": zeros, "s": pa.array([f"<s{i}>" for i in range(n)]), "p": pa.array(["<p>"] * n),
            "obj": pa.array(["<o>"] * n), "b": pa.array([0] * n, pa.int32())}
    return pa.RecordBatch.from_arrays([cols[f.name] for f in ELEMENT_WIRE], schema=ELEMENT_WIRE)


def test_the_routing_copies_the_elements_at_a_slab_edge_and_keeps_stream_order() -> None:
    from tefq.spark.planning.windowed import WindowedPlan
    from tefq.spark.protocol import ELEMENT
    from tefq.spark.runtime.windowed_rows import route_by_window

    slabs = WindowSlabs(2_000, 1_000, 8, 2)  # slab 0: windows 0-7 (closes 2-9 s), slab 1: windows 8-15
    plan = WindowedPlan(("q",), ("w",), None, (), buckets=2, slabs=slabs, t0=0)
    ts = [500, 7_500, 8_000, 9_000, 9_500, 12_000]
    out = route_by_window(plan, wire(ts, [int(ELEMENT)] * len(ts)))
    got = list(zip(out.column("ts").to_pylist(), out.column("b").to_pylist()))
    # 8,000 and 9,000 are in windows 6-8 and 7-9: slabs 0 and 1; 9,500 only in 8-9; 7,500 in 6-7
    assert got == [(500, 0), (7_500, 0), (8_000, 0), (8_000, 1), (9_000, 0), (9_000, 1), (9_500, 1), (12_000, 1)]
    only = route_by_window(plan, wire(ts, [int(ELEMENT)] * len(ts)), only=1)
    assert only.column("ts").to_pylist() == [8_000, 9_000, 9_500, 12_000] and set(only.column("b").to_pylist()) == {1}
