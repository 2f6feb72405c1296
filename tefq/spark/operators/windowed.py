"""The windowed (C-SPARQL, spec §8) operator: every windowed query of a document in one stateful
bucket (`planning.WindowedPlan`), run by the bucket loop of `tefq.spark.operators.base`.

Its input is whole elements (`protocol.ELEMENT`, only those whose predicate some query can match:
runtime/columns.project_windowed), OTHER rows for the others (time and hash, to bucket 0) and the
heartbeats, which carry the event time every element read advances. Each element's hash `f` is
kept until the windows reach its time (`BucketState.unnamed`), so that a repeat at one ms counts
as a duplicate (a stream is a set: `events_in` counts it once, as the oracle). The operator keeps
the elements of the windows not yet closed (as tables); when event time (minus the lateness)
passes window closes it evaluates every due window of a query in one vectorised pass, the window
id one more join and group key (tefq.spark.kernels.windowed.multiwindow, run by
tefq.spark.kernels.windowed.multiwindow_incremental), and feeds REGISTER STREAM output back round
after round, as the oracle's `run()` orders them. BGPs are joined in Strider's order (`join_order`:
static or adaptive); each micro-batch's choices go out in its metrics (`join_orders`). The rows go
out as one columnar record per query (tefq.spark.windowed_output); late elements are counted per
micro-batch and per input stream (`late_stream.<index>`), the driver adds them up.
"""
from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from tefq.oracle.windowed.windows import count_close_instants
from tefq.plan.logical import Document
from tefq.results import paused_gc
from tefq.spark.kernels.windowed.multiwindow_incremental import FrameState, IncrementalBatchedRun
from tefq.spark.operators.base import (Batch, BucketLogic, BucketState, StreamSettings, bucket_operator,
                                       count_late_streams, too_many_ticks)
from tefq.spark.protocol import ELEMENT, Heartbeats, RowKind, streams_of_keys
from tefq.spark.windowed_output import windowed_rows_record
from tefq.vocabulary import RunSettings

if TYPE_CHECKING:
    from tefq.spark.kernels.windowed.partitioning import WindowSlabs

ELEMENT_COLUMNS = {"ts": "ts", "s": "s", "p": "p", "obj": "o"}  # wire column -> IncrementalRun's
WINDOWED_EVENTS = "events_read"  # bucket 0's events of this micro-batch (events_in is the state's running total)


class WindowedBucket(BucketState):
    """A bucket's state: the incremental run's (`FrameState`)."""

    windows: FrameState

    def __init__(self) -> None:
        super().__init__()
        self.windows = self.annotation_types()["FrameState"]()

    @staticmethod
    def annotation_types() -> dict[str, type]:
        """The classes its annotations name that this module imports only when a run needs them
        (the windowed kernels; runtime/codec resolves the annotations with them)."""
        return {"FrameState": FrameState}


class WindowedLogic(BucketLogic):
    """The windowed maths under the bucket loop: elements kept for open windows, each window
    evaluated when event time (minus the lateness) passes its close. Late elements are not dropped:
    windows still open need them (the incremental run counts them)."""

    data_kinds = ()

    def __init__(self, doc: Document, t0: int, small: int, join_order: str = "adaptive",
                 slabs: WindowSlabs | None = None, background: tuple[tuple[str, str, str], ...] = ()) -> None:
        self.doc, self.t0, self.small, self.join_order = doc, t0, small, join_order
        self.slabs = slabs  # split by windows: a bucket evaluates its slabs' windows alone
        self.background = background  # N-Triples triples, in every window (shipped in the closure)

    @cached_property
    def run(self):
        """The parsed queries, once per operator instance (made where the operator runs)."""
        return IncrementalBatchedRun(self.doc, self.t0, small=self.small, join_order=self.join_order,
                                     background=self.background)

    def new_state(self) -> WindowedBucket:
        return WindowedBucket()

    def see_time(self, st: WindowedBucket, hb: Heartbeats | None, pdf: pd.DataFrame, kinds: np.ndarray,
                 batch: Batch) -> None:
        """The loop's (time range, bad rows) and the incremental run's: elements read, time range."""
        super().see_time(st, hb, pdf, kinds, batch)  # its events_in: replaced by the run's total (`snapshot`)
        if hb is not None and batch.bucket == 0:
            batch.metrics[WINDOWED_EVENTS] = hb.elements
        if hb is not None:
            self.run.add(st.windows, pd.DataFrame(columns=list(ELEMENT_COLUMNS.values())), hb.lo, hb.hi,
                         hb.elements)

    def ingest(self, st: WindowedBucket, pdf: pd.DataFrame, kinds: np.ndarray, batch: Batch) -> None:
        with paused_gc():  # tables of strings, no cycles
            self.add_elements(st, pdf, kinds, batch)

    def add_elements(self, st: WindowedBucket, pdf: pd.DataFrame, kinds: np.ndarray, batch: Batch) -> None:
        at = np.flatnonzero(kinds == ELEMENT)
        keys = pdf["o"].to_numpy(np.int64)[at]
        if len(keys) > 1 and (keys[1:] < keys[:-1]).any():  # ties in stream order: file rank, then row
            at = at[np.argsort(keys, kind="stable")]
            keys = pdf["o"].to_numpy(np.int64)[at]
        elements = pdf.iloc[at][list(ELEMENT_COLUMNS)].rename(columns=ELEMENT_COLUMNS)
        self.run.add(st.windows, elements.astype({"ts": np.int64}), None, None, 0, stream_iris_of(keys, batch))
        if self.slabs is not None:  # an element at a slab's edge is in two buckets: counted by its first
            at = at[self.slabs.element_buckets(elements["ts"].to_numpy(np.int64), self.t0)[0] == batch.bucket]
        self.count_read(st, pdf, np.concatenate([at, np.flatnonzero(kinds == RowKind.OTHER)]), batch)

    @staticmethod
    def count_read(st: WindowedBucket, pdf: pd.DataFrame, rows: np.ndarray, batch: Batch) -> None:
        """The elements this bucket counts (`rows`: its own, and the OTHER rows, which no query can
        match): the late ones (before the windows' event time: counted, also per input, and kept
        for the windows still open) and the repeats of the others (`duplicates`)."""
        w = st.windows
        ts = pdf["ts"].to_numpy(np.int64)[rows]
        late = ts < w.done if w.done is not None else np.zeros(len(rows), bool)
        if late.any():
            count_late(w, pdf["o"].to_numpy(np.int64)[rows][late], batch)
        batch.metrics["duplicates"] += st.unnamed.ingest(ts[~late], pdf["f"].to_numpy(np.int64)[rows][~late])

    def report(self, st: WindowedBucket, batch: Batch) -> None:
        with paused_gc():  # the windows' rows are millions of tuples (measured: 30-45% of a 1M batch's compute)
            self.report_due(st, batch)

    def report_due(self, st: WindowedBucket, batch: Batch) -> None:
        w = st.windows
        # spec §6.1: windows close by the run's event time (the least among the active streams),
        # not by the latest element seen (a stream running ahead made the others' elements late)
        held = not batch.flush and (batch.event_time is None or w.last is None)
        upto = None if batch.flush or held else batch.event_time - batch.settings.lateness_ms
        if not held:
            self.bound_windows(w, batch.settings.max_ticks)
        reports = [] if held else self.run.evaluate_due(w, upto, self.owned(batch.bucket))
        if w.done is not None:  # a later copy of an element before `done` is late, never a repeat
            st.unnamed.forget(w.done - 1)
        by_query: dict[int, list] = {}
        for r in reports:
            by_query.setdefault(r.query, []).append(r)
        batch.out.extend(windowed_rows_record(i, rs) for i, rs in by_query.items())
        batch.metrics["rows_out"] = sum(len(r.rows) for r in reports)
        batch.metrics["join_orders"] = self.run.join_orders(w)  # taken out before the state is saved
        # the windows' running total: a bucket's own windows when split by windows, else every window
        # (counted by bucket 0); the driver adds up each bucket's latest
        batch.metrics["ticks"] = w.ticks if batch.bucket == 0 or self.slabs is not None else 0
        batch.metrics["bucket"] = batch.bucket

    def bound_windows(self, w: FrameState, max_ticks: int) -> None:
        """--max-ticks bounds the windows that close, as on the oracle (`bound_ticks`: every window of
        a query's, over the span read so far), before one is enumerated: a stray timestamp makes
        billions (745 GiB of closes for one element at 10^14 ms and a RANGE of 1 s)."""
        if max_ticks <= 0 or w.first is None or w.last is None:
            return
        for q in self.run.queries:
            for win in q.windows:
                if count_close_instants(w.first, w.last, win.range_ms, win.step_ms, self.t0) > max_ticks:
                    raise too_many_ticks(max_ticks, win.step_ms, w.first, w.last, query=q.name)

    def owned(self, bucket: int):
        """The windows (by their closes) that `bucket` evaluates: all, unless split by windows."""
        slabs, t0 = self.slabs, self.t0
        if slabs is None:
            return None
        return lambda closes: slabs.bucket_of_closes(closes, t0) == bucket

    def snapshot(self, st: WindowedBucket, metrics: dict) -> None:
        w = st.windows  # running totals in the state: the driver keeps the largest
        metrics.update(events_in=w.events_in, feedback_triples=w.feedback_triples, state_elements=len(w.external))
        metrics.setdefault("bad_rows", 0)  # this batch's (heartbeats carry them)


def stream_iris_of(keys: np.ndarray, batch: Batch) -> np.ndarray | None:
    """Per element (tie keys `keys`), the IRI its input is bound to (None: unnamed); None when
    no input is bound to an IRI."""
    inputs = batch.settings if isinstance(batch.settings, StreamSettings) else StreamSettings()
    if not any(inputs.stream_iris):
        return None
    iris = np.array(list(inputs.stream_iris) + [None], dtype=object)
    index = streams_of_keys(keys, inputs.rank_starts, inputs.ranked)
    return iris[np.where((index >= 0) & (index < len(inputs.stream_iris)), index, len(inputs.stream_iris))]


def count_late(w, keys: np.ndarray, batch: Batch) -> None:
    """This batch's late elements (tie keys `keys`: their input streams), in its metrics (summed
    on the driver over batches and buckets, per input as `late_stream.<index>`) and one warning."""
    inputs = batch.settings if isinstance(batch.settings, StreamSettings) else StreamSettings()
    batch.metrics["late_events"] = len(keys)
    count_late_streams(batch, streams_of_keys(keys, inputs.rank_starts, inputs.ranked), 1)
    batch.warn(w.last or 0, f"{len(keys)} late events: windows up to {w.done} ms were already reported")


def make_windowed_operator(doc: Document, settings: RunSettings, small: int, join_order: str = "adaptive",
                           slabs: WindowSlabs | None = None, background: tuple[tuple[str, str, str], ...] = ()):
    """The windowed operator (applyInPandasWithState): the bucket loop around `WindowedLogic`.
    `small`: a lone due window with fewer relevant elements goes to rdflib (window_batches);
    `slabs`: the plan's split by windows (tefq.spark.kernels.windowed.partitioning), if any;
    `background`: the run's background knowledge (N-Triples triples)."""
    return bucket_operator(WindowedLogic(doc, settings.t0, small, join_order, slabs, background), settings,
                           "windowed_operator")
