"""Spec §6.1 (event time with several streams) on both engines: each stream's event time is the
latest t read from it, the run's is the minimum over the streams not yet read to their end; a
tick is final once that minus the lateness is past it; an element at or before a reported tick
is late (counted per stream); the others apply in (t, stream order). The oracle's arrival model:
round k = the k-th file of each stream (Spark with one file per trigger and source)."""
from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from tefq.io.arrival import Arrival
from tefq.io.run_inputs import RunInputs
from tefq.io.stream_writers import write_stream
from tefq.oracle import run as oracle_run
from tefq.oracle.late import EventTime, late_by_stream
from tests.support import spark_docs as sd
from tests.support.spark import run_spark

IPTV = sd.IPTV
EXAMPLES = int(os.environ.get("TEFQ_SPARK_EXAMPLES", "0"))
SPARK_SETTINGS = settings(max_examples=EXAMPLES or 4, deadline=None, derandomize=not EXAMPLES,
                          phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a shrink step is a Spark run
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
HOUR = 3_600_000


def join(t: int, user: str, channel: str = "ch0", p: str = "join") -> tuple[int, str, str, str]:
    return t, f"<{IPTV}{user}>", f"<{IPTV}{p}>", f"<{IPTV}{channel}>"


def show(t: int, program: str, channel: str = "ch0", p: str = "start") -> tuple[int, str, str, str]:
    return t, f"<{IPTV}{channel}>", f"<{IPTV}{p}>", f"<{IPTV}{program}>"


def write_files(directory: str, name: str, chunks: list[list]) -> str:
    """One file per chunk, modification times in name order (Spark's file source takes files by
    modification time)."""
    d = os.path.join(directory, name)
    os.makedirs(d)
    for i, chunk in enumerate(chunks):
        p = os.path.join(d, f"part-{i:04d}.tsv")
        write_stream(chunk, p)
        os.utime(p, (1_000_000 + i, 1_000_000 + i))
    return d


def on_oracle(doc, paths: list[str], lateness_ms: int | None):
    elements, arrival = RunInputs(list(paths)).read_all()
    return oracle_run(doc, elements, None, 0, lateness_ms=lateness_ms, arrival=arrival)


# ------------------------------------------------------------------ the oracle's rule, no Spark

def test_event_time_is_the_minimum_over_active_streams_then_the_maximum():
    clock = EventTime(2)
    clock.see(0, [5000])
    assert clock.value() is None  # stream 1 is active and has read nothing: it holds everything back
    clock.see(1, [HOUR])
    assert clock.value() == 5000
    clock.end(0)  # read to its end: it no longer holds the event time back
    assert clock.value() == HOUR
    clock.end(1)
    assert clock.value() == HOUR


def test_a_guide_published_hours_ahead_makes_no_log_event_late():
    """Live UC3: the programme guide runs 2 h ahead of the viewing log; with the maximum over
    streams every later log file would be late, with the minimum none is."""
    guide = [[show(1000 + 2 * HOUR, "p1")], [show(2000 + 2 * HOUR, "p2")], [show(3000 + 2 * HOUR, "p3")]]
    log = [[join(1000 * i + 500, f"u{i}")] for i in range(3)]
    elements = [e for k in range(3) for e in (log[k] + guide[k])]
    arrival = Arrival(tuple(((0, 1), (1, 1)) for _ in range(3)), ("log", "guide"))
    kept, late = late_by_stream(elements, arrival, 0, 1000, 0)
    assert late == [] and len(kept) == 6
    single = Arrival.single([2, 2, 2])  # the old rule (one stream): the log's later files are late
    _, late_single = late_by_stream(elements, single, 0, 1000, 0)
    assert [ts for ts, _, _ in late_single] == [1500, 2500]


def test_late_events_are_counted_per_stream_with_every_stream_listed():
    with tempfile.TemporaryDirectory() as d:
        a = write_files(d, "a", [[join(1000, "u1"), join(20000, "u2")], [join(5000, "u3")]])
        b = write_files(d, "b", [[join(30000, "u4")], [join(2000, "u5")], [join(40000, "u6")]])
        r = on_oracle(sd.uc1(1000), [a, b], 0)
    # round 0: E = min(20000, 30000); round 1: a ends, E = 30000 (b): u3 (5000) and u5 (2000) late
    assert r.metrics.late_events == 2
    assert r.metrics.extra["late_events_by_stream"] == {a: 1, b: 1}


def test_without_lateness_ties_apply_in_stream_order():
    """A quit of stream 0 and a join of stream 1 at one ms: stream order says quit, then join."""
    with tempfile.TemporaryDirectory() as d:
        a = write_files(d, "a", [[join(1000, "u1")], [join(3000, "u1", p="quit")]])
        b = write_files(d, "b", [[join(3000, "u1")]])
        r = on_oracle(sd.uc1(1000), [a, b], None)
    assert r.results[0].rows[-1][0] == 3000 and r.results[0].rows[-1][1][1].startswith('"1"')


# ------------------------------------------------------------------ Spark equals the oracle

def user_event(draw, t: int):
    u, c = draw(st.integers(0, 3)), draw(st.integers(0, 1))
    return join(t, f"u{u}", f"ch{c}", draw(st.sampled_from(["join", "join", "quit"])))


@st.composite
def multi_streams(draw):
    """2-3 streams of 0-4 files, each stream with its own clock offset (one may run hours ahead,
    one may be short: it ends early, as an idle stream drops out), ties across streams and tick
    boundaries, out-of-order files (late data)."""
    streams = []
    for _ in range(draw(st.integers(2, 3))):
        base = draw(st.sampled_from([0, 0, 1000, HOUR]))
        files = []
        for _ in range(draw(st.integers(0, 4))):
            t = base + draw(st.integers(0, 8)) * 1000 + draw(st.sampled_from([0, 0, 1, 999]))
            files.append([user_event(draw, t + draw(st.sampled_from([0, 0, 1000, 2000]))) for _ in range(draw(st.integers(1, 3)))])
        streams.append(files)
    if not any(streams):
        streams[0].append([join(1000, "u0")])
    return streams, draw(st.sampled_from([0, 0, 1000, 3000]))


@pytest.mark.spark
@SPARK_SETTINGS
@given(case=multi_streams(), every=st.sampled_from([1000, 2000]))
def test_spark_equals_the_oracle_on_several_streams(spark, case, every):
    streams, lateness = case
    with tempfile.TemporaryDirectory(prefix="tefq-evtime-") as d:
        # a stream with no file is no input (a missing path is refused): left out
        paths = [write_files(d, f"s{i}", files) for i, files in enumerate(streams) if files]
        doc = sd.uc1(every)
        want = on_oracle(doc, paths, lateness)
        got = run_spark(spark, doc, paths, max_files_per_trigger=1, lateness_ms=lateness)
    assert got.results[0].rows == want.results[0].rows
    for k in ("events_in", "facts_created", "facts_closed", "late_events", "ticks", "rows_out"):
        assert getattr(got.metrics, k) == getattr(want.metrics, k), k
    assert got.metrics.extra["late_events_by_stream"] == want.metrics.extra["late_events_by_stream"]


@pytest.mark.spark
def test_spark_live_uc3_guide_ahead_loses_nothing(spark):
    guide = [[show(1000 + 2 * HOUR, "p1")], [show(2000 + 2 * HOUR, "p0")], [show(3000 + 2 * HOUR, "p2")]]
    log = [[join(1000 * i + 500, f"u{i}")] for i in range(4)]
    with tempfile.TemporaryDirectory(prefix="tefq-evtime-") as d:
        paths = [write_files(d, "log", log), write_files(d, "guide", guide)]
        want = on_oracle(sd.uc3(1000), paths, 0)
        got = run_spark(spark, sd.uc3(1000), paths, max_files_per_trigger=1, lateness_ms=0)
    assert got.metrics.late_events == want.metrics.late_events == 0
    assert got.results[0].rows == want.results[0].rows
    assert got.metrics.extra["late_events_by_stream"] == want.metrics.extra["late_events_by_stream"]


def test_spark_stream_clock_ends_bounded_streams_and_idles_live_ones():
    """The operator's rule (no Spark): a bounded stream ends after its micro-batches, a live one
    is idle after the idle timeout without a delivery (one that never delivered: since the start)."""
    from tefq.spark.operators.base import StreamClock, StreamSettings

    clock = StreamClock(now=0.0)
    clock.see({0: 5000, 1: HOUR}, now=0.0)
    bounded = StreamSettings(batches=(1, 3))
    assert clock.event_time(bounded, batches=1, now=0.0) == HOUR  # stream 0 read its one batch: ended
    assert StreamClock(0.0).event_time(bounded, batches=0, now=0.0) is None  # nothing read yet
    live = StreamSettings(batches=(None, None, None), idle_ms=10_000)
    assert clock.event_time(live, batches=1, now=5.0) is None  # stream 2 never delivered, not idle yet
    assert clock.event_time(live, batches=1, now=11.0) == HOUR  # 0, 1 and 2 silent 11 s: none active
    clock.see({0: 6000}, now=11.0)
    assert clock.event_time(live, batches=2, now=12.0) == 6000  # 0 delivered again: active again
    never = StreamSettings(batches=(None, None, None), idle_ms=0)
    assert clock.event_time(never, batches=2, now=1e6) is None  # 0: a silent stream holds everything back


def test_heartbeats_carry_each_streams_time_range():
    import pyarrow as pa

    from tefq.spark.protocol import ELEMENT_WIRE, StreamTimes, heartbeat_rows, read_heartbeats

    rb = heartbeat_rows(ELEMENT_WIRE, [0, 1], 1000, 9000, 5, 2, [StreamTimes(0, 1000, 3000, 2), StreamTimes(2, 4000, 9000, 3)])
    pdf = pa.Table.from_batches([rb]).to_pandas()
    hb = read_heartbeats(pdf[pdf["b"] == 0], pdf[pdf["b"] == 0]["k"].to_numpy())
    assert (hb.lo, hb.hi, hb.elements, hb.bad) == (1000, 9000, 5, 2)
    assert hb.latest == {0: 3000, 2: 9000}


def test_tie_keys_carry_the_stream():
    import numpy as np
    import pyarrow as pa

    from tefq.spark.protocol import STREAM_SHIFT, TieOrder, streams_of_keys

    fh = [(1 << STREAM_SHIFT) | 7, (1 << STREAM_SHIFT) | 7, (3 << STREAM_SHIFT) | 9]
    keys = TieOrder({}, partition=2)(pa.array(fh, pa.int64())).to_numpy()
    assert streams_of_keys(keys, (), False).tolist() == [1, 1, 3]
    ranked = TieOrder({fh[0]: 5}, partition=0)(pa.array(fh, pa.int64())).to_numpy()
    assert streams_of_keys(ranked, (0, 4, 6, 6), True).tolist() == [1, 1, 3]
    assert np.all(np.diff(keys) > 0)
