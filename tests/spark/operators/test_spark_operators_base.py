"""The one bucket loop (`tefq.spark.operators.base.bucket_operator`) and the row kinds, with a
small logic that records what the loop hands it (no Spark: the state is a stand-in)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tefq.spark.operators.base import BucketLogic, BucketState, MAX_WARNINGS, bucket_operator
from tefq.spark.output import data_record, read_record
from tefq.spark.protocol import ELEMENT, EVENT_KINDS, RowKind
from tefq.spark.runtime.codec import decode
from tefq.vocabulary import RunSettings

COLUMNS = ["k", "ts", "o", "f", "n"]


class FakeState:
    def __init__(self) -> None:
        self.exists, self.get = False, None

    def update(self, v) -> None:
        self.exists, self.get = True, v


class RecordingState(BucketState):
    seen: list[int]
    finished: bool

    def __init__(self) -> None:
        super().__init__()
        self.seen, self.finished = [], False


class Recording(BucketLogic):
    """Keeps the event times it was given; reports each tick as a row of (tick, events so far)."""

    def __init__(self, every: int) -> None:
        self.every_ms = every

    def new_state(self) -> RecordingState:
        return RecordingState()

    def ingest(self, st, pdf, kinds, batch) -> None:
        st.seen.extend(pdf["ts"].to_numpy()[np.isin(kinds, self.data_kinds)].tolist())

    def advance(self, st, ticks, batch) -> None:
        for t in ticks.tolist():
            batch.out.append(data_record("row", t, [t, sum(1 for s in st.seen if s <= t)]))

    def finish(self, st, batch) -> None:
        st.finished = True

    def snapshot(self, st, metrics) -> None:
        metrics["open_facts"] = len(st.seen)


def events(*times: int, kind: RowKind = RowKind.SINCE) -> list[dict]:
    return [dict(k=int(kind), ts=t, o=i, f=0, n=0) for i, t in enumerate(times)]


def heartbeat(lo: int, hi: int, count: int) -> dict:
    return dict(k=int(RowKind.HEARTBEAT), ts=lo, o=hi, f=count, n=0)


def call(op, state, rows: list[dict], bucket: int = 0):
    out = next(op((bucket,), iter([pd.DataFrame(rows, columns=COLUMNS)]), state))
    recs = list(out.itertuples(index=False))
    metric = [read_record(k, p, Any) for k, _, p in recs if k == "metric"]
    assert len(metric) == 1 and recs[-1][0] == "metric"  # one metric record, last
    return ([read_record(k, p, Any) for k, _, p in recs if k == "row"],
            [read_record(k, p, str) for k, _, p in recs if k == "warn"], metric[0])


def test_ticks_wait_for_event_time_minus_lateness_and_flush_reports_the_rest():
    op, state = bucket_operator(Recording(10), RunSettings(t0=0, lateness_ms=5)), FakeState()
    rows, _, m = call(op, state, events(3, 12) + [heartbeat(3, 12, 2)])
    assert rows == [] and m["batch"] == 1 and m["events_in"] == 2  # 12 - 5 - 1 = 6: no tick at or before
    rows, _, m = call(op, state, events(25) + [heartbeat(25, 25, 1)])
    assert rows == [[10, 1]] and m["ticks"] == 1 and m["batch"] == 2  # up to 19: tick 10 only
    rows, _, m = call(op, state, [dict(k=int(RowKind.FLUSH), ts=0, o=0, f=0, n=0)])
    assert rows == [[20, 2], [30, 3]]  # the first tick at or after the last event is the last
    assert decode(state.get[0], RecordingState).finished
    rows, _, m = call(op, state, [dict(k=int(RowKind.FLUSH), ts=0, o=0, f=0, n=0)])
    assert rows == [] and "ticks" not in m  # after the flush nothing more is reported


def test_late_events_are_dropped_counted_and_warned_about_up_to_the_cap():
    op, state = bucket_operator(Recording(10), RunSettings(t0=0, lateness_ms=0)), FakeState()
    call(op, state, events(1, 30) + [heartbeat(1, 30, 2)])  # reports 10, 20
    late = list(range(0, 20)) + list(range(0, 20))
    rows, warns, m = call(op, state, events(*late, 25) + [heartbeat(0, 25, len(late) + 1)])
    assert m["late_events"] == len(late) and len(warns) == MAX_WARNINGS
    assert warns[0] == "late event at 0 ms ignored: ticks up to 20 were already reported"
    st = decode(state.get[0], RecordingState)
    assert st.seen == [1, 30, 25] and m["open_facts"] == 3  # late ones never reached the logic


def test_only_bucket_zero_counts_the_shared_heartbeat_and_ticks():
    op = bucket_operator(Recording(10), RunSettings(t0=0, lateness_ms=0))
    _, _, m0 = call(op, FakeState(), events(5, 25) + [heartbeat(5, 25, 2)], bucket=0)
    r1, _, m1 = call(op, FakeState(), events(5, 25) + [heartbeat(5, 25, 2)], bucket=1)
    assert m0["events_in"] == 2 and m0["ticks"] == 2 and r1 == [[10, 1], [20, 1]]
    assert "events_in" not in m1 and "ticks" not in m1


def test_row_kinds_are_one_protocol():
    codes = [int(k) for k in RowKind]
    assert len(codes) == len(set(codes))  # no code means two kinds
    assert ELEMENT is RowKind.ELEMENT and ELEMENT not in EVENT_KINDS  # a whole element is no SINCE event
    from tefq.spark.operators import windowed

    assert windowed.ELEMENT is RowKind.ELEMENT  # the windowed operator reads the one protocol's kinds
