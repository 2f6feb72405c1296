"""The general operator (issue 27): any aggregate query the general planner accepts
(planning/general.py), in one of its buckets, on the general kernels (tefq.spark.kernels.general),
under the one bucket loop of operators/base.py.

Rows in: whole stream elements (`protocol.ELEMENT_WIRE`) the mapper routed to this bucket
(runtime/encodings.GeneralRows: only the elements a SINCE/UNTIL clause or an event pattern matches,
`n` 1 on an element's first copy; OTHER rows, the hashes of the others, only to count their
duplicates), heartbeats and the flush. Each batch is coded here (SipHash
term codes, the mapper's; under direct ingestion the terms arrive categorical, each distinct one
coded once: `code_rows`), ingested, and at the ticks that became final the evaluator's rows
(`BucketRows`: final, or partial aggregates the driver merges) leave as one record
(kernels/general/collector.general_rows_record). The state is the evaluator's numpy arrays (runtime/codec).
"""
from __future__ import annotations

import os
import resource

import numpy as np
import pandas as pd

from tefq.spark.kernels.general.coding import Elements, code_categorical, code_columns
from tefq.spark.kernels.general.collector import general_rows_record
from tefq.spark.kernels.general.evaluator import GeneralEvaluator
from tefq.spark.kernels.general.local import coded_background
from tefq.spark.kernels.general.state import COUNTERS, GeneralState
from tefq.spark.operators.base import Batch, BucketLogic, BucketState, bucket_operator, profile, uncount_late_copies
from tefq.spark.planning.general import GeneralPlan
from tefq.spark.protocol import ELEMENT, ORDER_SHIFT, Heartbeats, RowKind
from tefq.vocabulary import RunSettings


class GeneralBucketState(BucketState):
    """The loop's bookkeeping and the evaluator's state (its arrays)."""

    general: GeneralState
    reported: dict[str, int]  # the counters already emitted as metrics

    def __init__(self, general: GeneralState) -> None:
        super().__init__()
        self.general = general
        self.reported = dict.fromkeys(COUNTERS, 0)


class GeneralLogic(BucketLogic):
    """The bucket loop's view of `GeneralEvaluator` in bucket `bucket` of the plan's buckets (the
    evaluator is made per bucket on its first call: the background coded once per worker)."""

    data_kinds = (ELEMENT, RowKind.OTHER)  # an element no bucket needs is late too (spec §6): bucket 0 alone gets it

    def __init__(self, plan: GeneralPlan) -> None:
        self.plan, self.every_ms, self.cq = plan, plan.every_ms, plan.compiled()
        self.late_note = f"ignored for query {plan.query}: ticks up to {{last}} were already reported"
        self.evaluators: dict[int, GeneralEvaluator] = {}
        self.late_copies = np.zeros(0, bool)

    def evaluator(self, bucket: int) -> GeneralEvaluator:
        if bucket not in self.evaluators:
            self.evaluators[bucket] = GeneralEvaluator(self.cq, *coded_background(self.plan.background), bucket,
                                                       self.plan.buckets)
        return self.evaluators[bucket]

    def new_state(self) -> GeneralBucketState:
        return GeneralBucketState(GeneralState.new(self.cq.facts))

    def see_time(self, st: GeneralBucketState, hb: Heartbeats | None, pdf: pd.DataFrame, kinds: np.ndarray,
                 batch: Batch) -> None:
        """Also note which late rows are copies of an element another bucket got first (that one
        counts and warns; an OTHER row has no copies)."""
        super().see_time(st, hb, pdf, kinds, batch)
        self.late_copies = np.zeros(0, bool)
        if st.last_tick is not None:
            late = np.isin(kinds, self.data_kinds) & (pdf["ts"].to_numpy() <= st.last_tick)  # as drop_late's
            self.late_copies = (kinds[late] == ELEMENT) & (pdf["n"].to_numpy()[late] == 0)

    def ingest(self, st: GeneralBucketState, pdf: pd.DataFrame, kinds: np.ndarray, batch: Batch) -> None:
        uncount_late_copies(batch, self.late_copies)
        unmatched = pdf[kinds == RowKind.OTHER]
        if len(unmatched):  # only their duplicates count (runtime/encodings.GeneralRows)
            self.evaluator(batch.bucket).ingest_unmatched(st.general, unmatched["ts"].to_numpy(np.int64),
                                                          unmatched["o"].to_numpy(np.int64),
                                                          unmatched["f"].to_numpy(np.int64))
        data = pdf[kinds == ELEMENT]
        if not len(data):
            return
        el, terms = code_rows(data)
        el.order = st.batches * ORDER_SHIFT + data["o"].to_numpy(np.int64)  # ties in stream order
        self.evaluator(batch.bucket).ingest(st.general, el, terms)

    def advance(self, st: GeneralBucketState, ticks: np.ndarray, batch: Batch) -> None:
        profile("general_memory", bucket=batch.bucket, phase="ingested", **worker_memory())
        rows = self.evaluator(batch.bucket).advance(st.general, ticks)
        profile("general_memory", bucket=batch.bucket, phase="advanced", **worker_memory())
        if len(rows):
            batch.out.append(general_rows_record(rows))
        batch.metrics["partial_rows" if rows.partial else "rows_out"] = len(rows)
        self.count(st, batch)

    def counted(self, bucket: int) -> set[str]:
        """The facts whose intervals this bucket counts: its share of a split fact; a fact every
        bucket holds whole, in bucket 0 only."""
        split = {name for name, _ in self.plan.split.facts} if self.plan.split is not None else set()
        return {f.name for f in self.cq.facts if bucket == 0 or f.name in split}

    def count(self, st: GeneralBucketState, batch: Batch) -> None:
        """The duplicates since the last report (bucket 0's only when the plan reads an input whole:
        its copies would count once per bucket), the UNTILs matched to nothing and the facts closed
        by this advance (of the facts this bucket counts)."""
        g, ev, counted = st.general, self.evaluator(batch.bucket), self.counted(batch.bucket)
        new = g.counters["duplicates"] - st.reported["duplicates"]
        st.reported["duplicates"] = g.counters["duplicates"]
        if batch.bucket == 0 or not self.plan.whole:
            batch.metrics["duplicates"] += new
        batch.metrics["unmatched_until"] += sum(n for name, n in ev.unmatched_in_step.items() if name in counted)
        closed = sum(n for name, n in ev.closed_in_step.items() if name in counted)
        batch.metrics["facts_created"] += closed
        batch.metrics["facts_closed"] += closed

    def finish(self, st: GeneralBucketState, batch: Batch) -> None:
        """End of input: the facts still open were created, not closed."""
        still = sum(len(iv) for name, iv in st.general.open.items() if name in self.counted(batch.bucket))
        batch.metrics["facts_created"] += still

    def snapshot(self, st: GeneralBucketState, metrics: dict) -> None:
        size = st.general.size()
        metrics["open_facts"] = size["open_facts"]
        metrics["state_rows"] = sum(size.values())


def code_rows(data: pd.DataFrame) -> tuple[Elements, dict[int, str]]:
    """The element rows coded: categorical term columns (direct ingestion) by their categories."""
    ts, cols = data["ts"].to_numpy(np.int64), [data[c] for c in ("s", "p", "obj")]
    if all(isinstance(c.dtype, pd.CategoricalDtype) for c in cols):
        return code_categorical(ts, *(c.array for c in cols))
    return code_columns(ts, *(c.to_numpy(object) for c in cols))


def worker_memory() -> dict[str, float]:
    """This worker's resident and peak resident MB (bench/ reads them from TEFQ_SPARK_PROFILE)."""
    with open("/proc/self/statm", encoding="utf-8") as fh:
        rss = int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    return {"rss_mb": round(rss, 1), "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def make_general_operator(plan: GeneralPlan, settings: RunSettings = RunSettings()):
    return bucket_operator(GeneralLogic(plan), settings, "general_operator")
