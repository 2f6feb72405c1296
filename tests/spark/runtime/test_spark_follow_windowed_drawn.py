"""Windowed queries under `--follow` on real Spark against the oracle, on drawn streams (issue 40):
the windowed differential cases (every kind of term, ties, ticks of 7 ms and 1 s, times at both
ends of tefq's range) over a directory whose files arrive while the run follows it, and over a
Redis stream whose entries arrive in the same chunks (read a page at a time as columns). Two closing
elements after the drawn ones (a query of their own matches them) tell when the run's event time
has passed every window the drawn elements fall in; by then each window closed is reported once,
its rows the oracle's."""
from __future__ import annotations

import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tefq
from tefq.io.stream_writers import write_stream
from tefq.vocabulary import TIME_MIN
from tests.support import term_streams as ts
from tests.support.differential import KINDS, document_text
from tests.support.windowed_spark import followed, reported

CASES = KINDS["windowed"][1]
END = "<http://x/end>"
EXAMPLES = int(os.environ.get("TEFQ_FOLLOW_EXAMPLES", "4"))  # a followed run is seconds of real Spark


@st.composite
def followed_cases(draw) -> tuple[str, int, list[list]]:
    """A windowed case, its elements in time order dealt into 1-4 files."""
    name = draw(st.sampled_from(sorted(CASES)))
    times = ts.Times(draw(st.sampled_from([0, ts.EPOCH, TIME_MIN, -ts.EPOCH])), draw(st.sampled_from([1000, 7])))
    elements = draw(ts.elements(times, CASES[name][1]))
    files = draw(ts.split_streams(elements, in_time_order=True, max_streams=1, max_files=4))[0]
    return name, times.every, files


def closing(last: int, every: int) -> list[list]:
    """Two files after the drawn ones: an :end element just after them (and after t0 = 0: a run
    reads nothing before it), then one four STEPs later (more than a window's RANGE, 1.5 STEPs, and
    two STEPs), which closes every window holding the first."""
    first = max(last, 0) + 1
    return [[(first, "<http://x/e>", END, "<http://x/f>")], [(first + 4 * every, "<http://x/e>", END, "<http://x/f>")]]


class Directory:
    """A followed directory: each chunk a Parquet file, written hidden and renamed."""

    def __init__(self, tmp_path_factory, request) -> None:
        self.path = tmp_path_factory.mktemp("live")
        self.input, self.written = str(self.path), 0

    def add(self, rows: list) -> None:
        hidden = self.path / f".part-{self.written:04d}.parquet"
        write_stream(rows, str(hidden), fmt="parquet")
        os.replace(hidden, self.path / f"part-{self.written:04d}.parquet")
        self.written += 1


class RedisStreamInput:
    """A Redis stream (a fresh key on the module's server): each chunk one MULTI/EXEC of entries."""

    def __init__(self, tmp_path_factory, request) -> None:
        from tefq.io.redis_stream import RedisStream

        self.input = f"redis://127.0.0.1:{request.getfixturevalue('redis_port')}/drawn-{time.time_ns()}"
        self.stream = RedisStream.parse(self.input)

    def add(self, rows: list) -> None:
        from tefq.io.redis_stream import add_elements

        client = self.stream.connect()
        add_elements(client, self.stream, rows)
        client.close()


@pytest.mark.spark
@pytest.mark.parametrize("source", [Directory, RedisStreamInput], ids=["directory", "redis"])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                        HealthCheck.too_slow])
@given(case=followed_cases())
def test_a_followed_windowed_run_reports_the_oracles_windows_once(spark, tmp_path_factory, request, source,
                                                                  case) -> None:
    name, every, files = case
    elements = [e for f in files for e in f]
    files = files + closing(max(e[0] for e in elements), every)
    text = document_text("windowed", name, every) + "\n" + (
        f"REGISTER QUERY zend AS SELECT ?e FROM STREAM <http://x/s> [RANGE {every + every // 2}ms STEP {every}ms]"
        f" WHERE {{ ?e {END} ?f }}\n")
    doc = tefq.compile(text).document()
    everything = [e for f in files for e in f]
    end_closes = {row[0] for row in reported(doc, everything, 1 << 62)[-1]}  # the windows holding an :end element
    assert end_closes
    live = source(tmp_path_factory, request)
    live.add(files[0])

    def feed() -> None:
        for rows in files[1:]:
            time.sleep(0.3)
            live.add(rows)

    event_time = files[-1][0][0]
    got = followed(spark, doc, [live.input], feed, max(c for c in end_closes if c <= event_time))
    assert [sorted(rows) for rows in got] == reported(doc, everything, event_time)
