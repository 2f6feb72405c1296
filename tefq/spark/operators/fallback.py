"""The general fallback: any aggregate query shape on Spark, evaluated by the oracle per micro-batch.

One bucket holds every element read so far (its state) and, each micro-batch, asks the oracle for
the rows of the ticks that just became final (rows at `tau` depend only on events `t <= tau`).
Correct for every shape the oracle knows (derived facts, WHILE, FILTER, background patterns, ...),
with restart and late-data handling like the vectorised operator, but O(input) per micro-batch and
one bucket: use it for correctness, not for throughput. The planner picks it only when the vectorised
operator does not support the query. Input rows are whole elements (`RowKind.ELEMENT`), the
heartbeats and FLUSH; every element reaches the one bucket, so the event time is that of the
elements themselves.

Why every element stays (O(input) state): the oracle re-derives every fact from the elements, so
dropping one would change a later row or count — the SINCE of a fact still open, the closed body
facts a derived fact's start was coalesced with, an UNTIL matched to nothing (`unmatched_until`),
the first element (the tick range), and the counts the oracle reports at the flush. Bounded state
needs evaluation on carried facts instead: the general plan (`tefq.spark.kernels.general`).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from tefq.oracle import run as oracle_run
from tefq.plan.logical import Document
from tefq.spark.operators.base import Batch, BucketLogic, BucketState, bucket_operator, widen
from tefq.spark.output import READY_ROW, data_record
from tefq.spark.protocol import ELEMENT, ORDER_SHIFT, Heartbeats
from tefq.vocabulary import RunSettings


class FallbackState(BucketState):
    elements: list[tuple[int, int, str, str, str]]  # (ts, order, s, p, o)

    def __init__(self) -> None:
        super().__init__()
        self.elements = []


class FallbackLogic(BucketLogic):
    """`background`: the background's triples in N-Triples form (picklable, so they travel to
    the executors inside the operator; the oracle indexes them). `evaluate(doc, elements,
    background, t0) -> RunResult` defaults to the oracle (the simulations pass theirs)."""

    data_kinds = (ELEMENT,)

    def __init__(self, doc: Document, query_index: int, every: int, t0: int, background: list | None = None,
                 evaluate=None) -> None:
        self.doc = replace(doc, queries=(doc.queries[query_index],))
        self.every_ms, self.t0, self.background, self.evaluate = every, t0, background, evaluate

    def new_state(self) -> FallbackState:
        return FallbackState()

    def see_time(self, st: FallbackState, hb: Heartbeats | None, pdf: pd.DataFrame, kinds: np.ndarray,
                 batch: Batch) -> None:
        """The elements' own times (every element reaches the one bucket); of the heartbeats only
        the bad rows (the oracle counts the elements at the flush)."""
        ts = pdf["ts"].to_numpy()[kinds == ELEMENT]
        if len(ts):
            widen(st, int(ts.min()), int(ts.max()))
            batch.metrics["read"] = len(ts)
        if hb is not None:
            batch.metrics["bad_rows"] = hb.bad

    def ingest(self, st: FallbackState, pdf: pd.DataFrame, kinds: np.ndarray, batch: Batch) -> None:
        data = pdf[kinds == ELEMENT]
        st.elements.extend(zip(data["ts"].tolist(), (st.batches * ORDER_SHIFT + data["o"]).tolist(),
                               data["s"].tolist(), data["p"].tolist(), data["obj"].tolist()))

    def advance(self, st: FallbackState, ticks: np.ndarray, batch: Batch) -> None:
        start, upto = int(ticks[0]), int(ticks[-1])
        st.elements.sort(key=lambda e: (e[0], e[1]))
        res = (self.evaluate or oracle_run)(self.doc, [(t, s, p, o) for t, _, s, p, o in st.elements],
                                            self.background, self.t0)
        rows = [r for r in res.results[0].rows if start <= r[0] <= upto]
        batch.out.extend(data_record(READY_ROW, t, list(cells)) for t, cells in rows)
        batch.metrics["rows_out"] = len(rows)
        if batch.flush:  # the oracle's counts of the whole run
            m = res.metrics
            batch.metrics.update(applied_events=m.events_in, facts_created=m.facts_created, facts_closed=m.facts_closed,
                                 unmatched_until=m.unmatched_until, intermediate_bindings=m.intermediate_bindings)


def make_fallback_operator(doc: Document, query_index: int, every: int, settings: RunSettings = RunSettings(),
                           background: list | None = None, evaluate=None):
    return bucket_operator(FallbackLogic(doc, query_index, every, settings.t0, background, evaluate), settings,
                           "fallback")
