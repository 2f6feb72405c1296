"""Elements no clause matches on the CURRENT and fact plans (UC1, UC3): a repeat of one at the
same ms is one element read (a stream is a set, spec §1), and one at or before a reported tick is
late (spec §6), as on the oracle — on every ingestion path (rows, columnar, direct). The mappers
send such an element as an OTHER row (its time and element hash `e`) to one bucket, whose operator
keeps the hash until its tick is reported (`operators.base.UnnamedElements`)."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from tefq.io.run_inputs import RunInputs
from tefq.oracle import run as oracle_run
from tefq.spark.operators.base import UnnamedElements
from tefq.spark.operators.current import make_operator
from tefq.spark.operators.fact import make_fact_operator
from tefq.spark.output import read_record
from tefq.spark.planning.current import CurrentAggregatePlan
from tefq.spark.protocol import HB_STREAM_SHIFT, RowKind
from tefq.spark.shapes import plan_document
from tefq.vocabulary import RunSettings
from tests.support import spark_docs as sd
from tests.support.spark import run_spark
from tests.support.streams import write

IPTV = sd.IPTV
DOCS = {"uc1": sd.uc1, "uc3": sd.uc3}


def el(t: int, s: str, p: str, o: str) -> tuple[int, str, str, str]:
    return t, f"<{IPTV}{s}>", f"<{IPTV}{p}>", f"<{IPTV}{o}>"


def foo(t: int, o: str = "x") -> tuple[int, str, str, str]:
    """An element of a predicate no clause of UC1 or UC3 names."""
    return el(t, "u9", "foo", o)


REPEATS = [  # one file per micro-batch: copies in one file and across two
    [el(1000, "u1", "join", "ch0"), el(1000, "ch0", "start", "p1"), foo(1500), foo(1500), foo(1500, "y")],
    [foo(1500), el(1700, "u2", "join", "ch0"), foo(1800), foo(1800)],
]
LATE = [  # the second file's ticks 1000-3000 are reported before the third file: its :foo is late
    [el(1000, "u1", "join", "ch0"), el(1000, "ch0", "start", "p1"), foo(1200)],
    [el(4500, "u2", "join", "ch0"), foo(4600)],
    [foo(1200), foo(2500), foo(2500), el(5000, "u1", "quit", "ch0"), foo(5100), foo(5100)],
]


def write_files(directory, chunks: list[list]) -> str:
    d = directory / "stream"
    d.mkdir()
    for i, chunk in enumerate(chunks):
        p = d / f"part-{i:04d}.parquet"
        write(str(p), chunk)
        os.utime(p, (1_000_000 + i, 1_000_000 + i))  # Spark's file source takes them by modification time
    return str(d)


def compare(spark, tmp_path, doc: str, chunks: list[list], ingest: str) -> None:
    path = write_files(tmp_path, chunks)
    d = DOCS[doc](1000)
    elements, arrival = RunInputs([path]).read_all()
    want = oracle_run(d, elements, None, 0, lateness_ms=0, arrival=arrival)
    got = run_spark(spark, d, [path], ingest=ingest, max_files_per_trigger=1, lateness_ms=0)
    assert got.results[0].rows == want.results[0].rows
    assert got.metrics.late_events == want.metrics.late_events
    assert got.metrics.events_in == want.metrics.events_in  # applied, each once: late ones left out
    assert got.metrics.extra["late_events_by_stream"] == want.metrics.extra["late_events_by_stream"]


@pytest.mark.spark
@pytest.mark.parametrize("ingest", ["rows", "columnar", "direct"])
@pytest.mark.parametrize("doc", ["uc1", "uc3"])
def test_a_repeat_of_an_unnamed_element_is_read_once(spark, tmp_path, doc, ingest):
    compare(spark, tmp_path, doc, REPEATS, ingest)


@pytest.mark.spark
@pytest.mark.parametrize("ingest", ["rows", "columnar", "direct"])
@pytest.mark.parametrize("doc", ["uc1", "uc3"])
def test_a_late_unnamed_element_is_late(spark, tmp_path, doc, ingest):
    compare(spark, tmp_path, doc, LATE, ingest)


# ------------------------------------------------------------------ the operators, no Spark

def test_unnamed_elements_count_repeats_and_keep_only_what_follows_the_last_tick():
    held = UnnamedElements()
    assert held.ingest(np.array([5, 5, 5, 7]), np.array([1, 1, 2, 1])) == 1  # (5, 1) twice
    assert held.ingest(np.array([5, 9]), np.array([2, 1])) == 1  # (5, 2) again, in a later call
    held.forget(5)
    assert sorted(zip(held.ts.tolist(), held.e.tolist())) == [(7, 1), (9, 1)]  # bounded: nothing at or before 5


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(-3, 3), st.integers(-2, 2)), max_size=12), max_size=5),
       st.lists(st.integers(-4, 4), min_size=5, max_size=5))
def test_unnamed_elements_count_what_a_set_counts(batches, forgets):
    """Against a Python set of (t, hash) pairs: each batch's repeats, then forget up to a time."""
    held, model = UnnamedElements(), set()
    for batch, upto in zip(batches, forgets):
        want = 0
        for pair in batch:
            want += pair in model
            model.add(pair)
        assert held.ingest(np.array([t for t, _ in batch], np.int64), np.array([e for _, e in batch], np.int64)) == want
        held.forget(upto)
        model = {(t, e) for t, e in model if t > upto}
        assert sorted(zip(held.ts.tolist(), held.e.tolist())) == sorted(model)


class FakeState:
    def __init__(self) -> None:
        self.exists, self.get = False, None

    def update(self, v) -> None:
        self.exists, self.get = True, v


def wire_rows(plan, rows: list[tuple[int, int, int]], hi: int) -> pd.DataFrame:
    """(kind, ts, e) rows on the plan's wire and a heartbeat reaching `hi` (one stream)."""
    names = ["k", "ts", "o", "f", "e", "n", "b"] + [c for c in plan_columns(plan)]
    out = [dict(k=int(k), ts=t, o=i, e=e, n=1) for i, (k, t, e) in enumerate(rows)]
    out.append(dict(k=int(RowKind.HEARTBEAT), ts=min([t for _, t, _ in rows] or [hi]), o=hi,
                    f=(0 << HB_STREAM_SHIFT) | len(rows), n=0))
    frame = pd.DataFrame(out).reindex(columns=names)
    ints = [c for c in names if not c.startswith("t") or c == "ts"]
    return frame.fillna({c: 0 for c in ints}).astype({c: "int64" for c in ints})


def plan_columns(plan) -> list[str]:
    if isinstance(plan, CurrentAggregatePlan):
        return [c for i in range(len(plan.group_vars)) for c in (f"g{i}", f"t{i}")]
    arity, nterms = plan.widths
    return ["fact"] + [f"v{i}" for i in range(arity)] + [f"t{i}" for i in range(nterms)]


@pytest.mark.parametrize("doc", ["uc1", "uc3"])
def test_the_operator_counts_repeats_of_other_rows_and_late_ones(doc):
    plan = plan_document(DOCS[doc](1000), 1)[0]
    op = (make_operator(plan, RunSettings(0, 0)) if doc == "uc1" else make_fact_operator(plan, RunSettings(0, 0)))
    state, other = FakeState(), RowKind.OTHER

    def call(rows, hi):
        out = next(op((0,), iter([wire_rows(plan, rows, hi)]), state))
        recs = list(out.itertuples(index=False))
        return read_record("metric", recs[-1][2], dict), [p for k, _, p in recs if k == "warn"]

    m, _ = call([(other, 1500, 7), (other, 1500, 7), (other, 1500, 8)], 1500)
    assert m["duplicates"] == 1 and m["late_events"] == 0
    m, _ = call([(other, 1500, 7), (other, 4600, 7)], 4600)  # a copy in a later batch; ticks 2000-4000
    assert m["duplicates"] == 1 and m["ticks"] == 3
    m, warned = call([(other, 1200, 7), (other, 4600, 7)], 4600)
    assert m["late_events"] == 1 and len(warned) == 1 and m["duplicates"] == 1
