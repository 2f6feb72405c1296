"""The windowed (C-SPARQL, spec §8) operator: every windowed query of a document in one stateful
bucket (`planning.WindowedPlan`), run by the bucket loop of `tefq.spark.operators.base`.

Its input is whole elements (`protocol.ELEMENT`, only those whose predicate some query can match:
runtime/columns.project_windowed) and the heartbeats, which carry the event time every element
read advances. The operator keeps the elements of the windows not yet closed (as tables); when
event time (minus the lateness) passes window closes it evaluates every due window of a query in
one vectorised pass, the window id one more join and group key (tefq.relational.multiwindow, run
by tefq.relational.multiwindow_incremental), and feeds REGISTER STREAM output back round after
round, as the oracle's `run()` orders them. BGPs are joined in Strider's order (`join_order`:
static or adaptive); each micro-batch's choices go out in its metrics (`join_orders`).
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from tefq.plan.logical import Document
from tefq.spark.operators.base import Batch, BucketLogic, BucketState, bucket_operator
from tefq.spark.output import json_record, windowed_rows_kind
from tefq.spark.protocol import ELEMENT, Heartbeats
from tefq.vocabulary import RunLimits

ELEMENT_COLUMNS = {"ts": "ts", "s": "s", "p": "p", "obj": "o"}  # wire column -> IncrementalRun's


class WindowedBucket(BucketState):
    """A bucket's state: the incremental run's (`FrameState`)."""

    def __init__(self) -> None:
        super().__init__()
        from tefq.relational.multiwindow_incremental import FrameState

        self.windows = FrameState()


class WindowedLogic(BucketLogic):
    """The windowed maths under the bucket loop: elements kept for open windows, each window
    evaluated when event time (minus the lateness) passes its close. Late elements are not dropped:
    windows still open need them (the incremental run counts them)."""

    data_kinds = ()

    def __init__(self, doc: Document, t0: int, small: int, join_order: str = "adaptive") -> None:
        self.doc, self.t0, self.small, self.join_order = doc, t0, small, join_order

    @cached_property
    def run(self):
        """The parsed queries, once per operator instance (made where the operator runs)."""
        from tefq.relational.multiwindow_incremental import IncrementalBatchedRun

        return IncrementalBatchedRun(self.doc, self.t0, small=self.small, join_order=self.join_order)

    def new_state(self) -> WindowedBucket:
        return WindowedBucket()

    def see_time(self, st: WindowedBucket, hb: Heartbeats | None, pdf: pd.DataFrame, kinds: np.ndarray,
                 batch: Batch) -> None:
        """The loop's (time range, bad rows) and the incremental run's: elements read, time range."""
        super().see_time(st, hb, pdf, kinds, batch)  # its events_in: replaced by the run's total (`snapshot`)
        if hb is not None:
            self.run.add(st.windows, pd.DataFrame(columns=list(ELEMENT_COLUMNS.values())), hb.lo, hb.hi,
                         hb.elements)

    def ingest(self, st: WindowedBucket, pdf: pd.DataFrame, kinds: np.ndarray, batch: Batch) -> None:
        elements = pdf.loc[kinds == ELEMENT, list(ELEMENT_COLUMNS)].rename(columns=ELEMENT_COLUMNS)
        self.run.add(st.windows, elements.astype({"ts": np.int64}), None, None, 0)

    def report(self, st: WindowedBucket, batch: Batch, t0: int, lateness_ms: int) -> None:
        w, late_before = st.windows, st.windows.late_events
        reports = self.run.advance(w, None if batch.flush else (w.last - lateness_ms if w.last is not None else None))
        by_query: dict[int, list] = {}
        for r in reports:
            by_query.setdefault(r.query, []).extend([r.tick, list(c)] for c in r.rows)
        for i, rows in by_query.items():
            batch.out.append(json_record(windowed_rows_kind(i), rows[-1][0], rows))
        batch.metrics["rows_out"] = sum(len(r) for r in by_query.values())
        batch.metrics["join_orders"] = self.run.join_orders(w)  # taken out before the state is saved
        # the windows' running total, once: every bucket evaluates every window (the driver takes the largest)
        batch.metrics["ticks"] = w.ticks if batch.bucket == 0 else 0
        if w.late_events > late_before:
            batch.warn(w.last or 0, f"{w.late_events - late_before} late events: windows up to {w.done} ms were "
                                    "already reported")

    def snapshot(self, st: WindowedBucket, metrics: dict) -> None:
        w = st.windows  # cumulative in the state: the driver keeps the largest
        metrics.update(events_in=w.events_in, feedback_triples=w.feedback_triples,
                       late_events=w.late_events, state_elements=len(w.external))
        metrics.setdefault("bad_rows", 0)  # this batch's (heartbeats carry them)


def make_windowed_operator(doc: Document, t0: int, lateness_ms: int, small: int, limits: RunLimits = RunLimits(),
                           join_order: str = "adaptive"):
    """The windowed operator (applyInPandasWithState): the bucket loop around `WindowedLogic`.
    `small`: a lone due window with fewer relevant elements goes to rdflib (window_batches)."""
    return bucket_operator(WindowedLogic(doc, t0, small, join_order), t0, lateness_ms, "windowed_operator",
                           limits=limits)
