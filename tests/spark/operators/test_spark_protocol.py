"""The wire between mappers and operators (`tefq.spark.protocol`) and the one mapper around it
(`tefq.spark.runtime.mappers`), without Spark: every mapper ends its partition with the same
trailer, the heartbeat is encoded and decoded in one place, whole elements have their own kind."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from tefq.spark.operators.base import BucketLogic, bucket_operator
from tefq.spark.planning.fallback import FallbackPlan
from tefq.spark.protocol import ELEMENT, ELEMENT_WIRE, FLUSH, HEARTBEAT, RowKind, heartbeat_rows, read_heartbeats
from tefq.spark.runtime.mappers import make_mapper
from tefq.spark.runtime.sources import FLUSH_TERM
from tefq.spark.shapes import plan_document
from tefq.vocabulary import RunSettings
from tests.support import spark_docs as sd
from tests.support.operator_harness import FakeState, element_rows

IPTV = sd.IPTV


def decoded(rb: pa.RecordBatch) -> tuple[pd.DataFrame, np.ndarray]:
    pdf = rb.to_pandas()
    return pdf, pdf["k"].to_numpy()


def test_heartbeat_round_trip_and_a_partition_of_bad_rows_only_has_no_time_range():
    rows = pa.concat_batches([heartbeat_rows(ELEMENT_WIRE, [0], 5_000, 9_000, 3, 1),
                              heartbeat_rows(ELEMENT_WIRE, [0], None, None, 0, 2),  # bad rows only
                              heartbeat_rows(ELEMENT_WIRE, [0], 2_000, 4_000, 1, 0)])
    hb = read_heartbeats(*decoded(rows))
    assert (hb.lo, hb.hi, hb.elements, hb.bad) == (2_000, 9_000, 4, 3)
    hb = read_heartbeats(*decoded(heartbeat_rows(ELEMENT_WIRE, [0, 1], None, None, 0, 2)))
    assert (hb.lo, hb.hi, hb.elements, hb.bad) == (None, None, 0, 4)  # one per bucket: counted twice here
    assert read_heartbeats(*decoded(rows.slice(0, 0))) is None


def test_whole_elements_are_their_own_kind():
    assert ELEMENT not in (RowKind.SINCE, RowKind.UNTIL) and len({int(k) for k in RowKind}) == len(RowKind)


class Ticks(BucketLogic):
    """Reports each final tick as a row."""

    every_ms = 1000

    def advance(self, st, ticks, batch) -> None:
        batch.out.extend(("row", int(t), b"[]") for t in ticks)


def test_the_loop_takes_no_time_from_a_heartbeat_of_bad_rows_only():
    """A micro-batch whose partition read only bad rows must not stretch the tick range back to 0."""
    op, state, t = bucket_operator(Ticks(), RunSettings(t0=0, lateness_ms=0)), FakeState(), 1_700_000_000_000
    flush = pa.RecordBatch.from_pydict({"k": [int(FLUSH)], "ts": [0], "o": [0], "f": [0], "n": [0], "s": [None],
                                        "p": [None], "obj": [None], "b": [0]}, schema=ELEMENT_WIRE)
    ticks = []
    for rb in (heartbeat_rows(ELEMENT_WIRE, [0], t, t + 2000, 2, 0), heartbeat_rows(ELEMENT_WIRE, [0], None, None, 0, 5),
               flush):
        out = next(op((0,), iter([rb.to_pandas()]), state))
        ticks += out[out["kind"] == "row"]["tick"].tolist()
    assert ticks == [t, t + 1000, t + 2000]


def test_the_element_mapper_ends_with_the_heartbeat_and_the_flush():
    """Fallback and windowed plans: whole elements, then one heartbeat, then the flush (not passed
    through where it arrived); elements before t0 (IGNORED) are neither sent nor counted."""
    mapper = make_mapper(FallbackPlan("q", 0, ("n",), 1000, "any shape"), None)
    j = f"<{IPTV}join>"
    rows = element_rows([(5, "<u1>", j, "<c1>"), (0, FLUSH_TERM, FLUSH_TERM, FLUSH_TERM), (9, "<u2>", j, "<c2>"),
                         (1, "<u0>", j, "<c0>")],
                        [int(ELEMENT), int(FLUSH), int(ELEMENT), int(RowKind.IGNORED)])
    out = pa.Table.from_batches(list(mapper(iter([rows]), 0))).to_pandas()
    assert out["k"].tolist() == [ELEMENT, ELEMENT, HEARTBEAT, FLUSH]
    assert out["obj"].tolist()[:2] == ["<c1>", "<c2>"] and out["o"].tolist()[:2] == [0, 2]  # tie order: rows 0, 2
    assert out[["ts", "o", "f", "n"]].iloc[2].tolist() == [5, 9, 2, 0]  # range, elements, bad rows


def test_every_mapper_sends_its_heartbeat_and_flush_to_each_bucket_it_feeds():
    """A fact plan routed over buckets, and the same mapper feeding one bucket (direct ingestion)."""
    doc = sd.uc3(2000)
    plan = plan_document(doc, 3)[0]
    assert plan.buckets > 1
    k = [int(RowKind.OTHER), int(FLUSH)]
    arity, nterms = plan.widths
    cols = {"k": pa.array(k, pa.int32()), "fact": pa.array([0, 0], pa.int32()), "ts": pa.array([7, 0], pa.int64()),
            "o": pa.array([0, 0], pa.int64()), "f": pa.array([0, 0], pa.int64()), "e": pa.array([0, 0], pa.int64()),
            "n": pa.array([1, 1], pa.int64())}
    cols.update({f"v{i}": pa.array([0, 0], pa.int64()) for i in range(arity)})
    cols.update({f"t{i}": pa.nulls(2, pa.string()) for i in range(nterms)})
    cols.update(b=pa.array([0, 0], pa.int32()), x=pa.nulls(2, pa.string()))
    rows = pa.RecordBatch.from_pydict(cols)
    for only, buckets, other in ((None, list(range(plan.buckets)), [0]), (1, [1], [])):
        out = pa.Table.from_batches(list(make_mapper(plan, None, only=only)(iter([rows]), 0))).to_pandas()
        # the OTHER row (element hash 0) goes to bucket 0 alone, for its duplicates (fact_buckets.route_batch)
        assert out["k"].tolist() == [RowKind.OTHER] * len(other) + [HEARTBEAT] * len(buckets) + [FLUSH] * len(buckets)
        out = out[len(other):]
        assert out["b"].tolist() == buckets * 2 and out["f"].tolist()[:len(buckets)] == [1] * len(buckets)


def test_the_fallback_counts_bad_rows_from_the_heartbeats_as_every_operator_does():
    """The fallback takes its event time from its elements, and its bad rows from the heartbeats
    (the oracle counts them: before, a fallback query reported 0 for a Parquet input's bad rows)."""
    import json

    from tefq.spark.operators.fallback import make_fallback_operator

    doc = sd.uc3(2000)
    op = make_fallback_operator(doc, 0, doc.queries[0].every_ms, RunSettings(0, 0))
    j = f"<{IPTV}join>"
    rows = pa.concat_batches([element_rows([(1000, "<u1>", j, "<c1>")]).drop_columns(["x"]),
                              heartbeat_rows(ELEMENT_WIRE, [0], 1000, 1000, 1, 2)])
    out = next(op((0,), iter([rows.to_pandas()]), FakeState()))
    metric = json.loads(out[out["kind"] == "metric"]["payload"].iloc[0])
    assert metric["bad_rows"] == 2
