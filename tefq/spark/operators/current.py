"""The current-aggregate operator: the maths of `CurrentAggregatePlan` (one event fact, counts and
durations of the facts valid at each tick), run per bucket by `tefq.spark.operators.base`.

Input rows (`tefq.spark.protocol.current_wire`, kinds `RowKind`): SINCE/UNTIL rows with `ts`, `o` (order of
ties), `f` (identity hash), `e` (element hash), `g0..` group term hashes; OTHER rows (an element no
clause matches: only `ts` and `e` count, for its duplicates and lateness); HEARTBEAT rows; TERMS rows
naming group codes (`t0..`: the mapper sends each partition's distinct code -> term pairs once).
The bucket state keeps the open facts (every closed one is final once reported), the pending events
(after the last reported tick), and the group-term dictionary.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from tefq.spark.kernels.intervals import (OPEN, Events, Intervals, apply_events, apply_sorted_events, current_aggregates,
                              durations_exact, fsum_durations)
from tefq.spark.operators.base import Batch, BucketLogic, BucketState, bucket_operator, ingest_unnamed
from tefq.spark.output import NumericRows, rows_record, terms_record
from tefq.spark.planning.current import CurrentAggregatePlan
from tefq.spark.protocol import EVENT_KINDS, ORDER_SHIFT, TERMS, RowKind
from tefq.vocabulary import RunSettings


class CurrentState(BucketState):
    base: Intervals
    pending: list[Events]  # Events parts
    pending_sorted: bool  # pending is one part, distinct and in apply order

    def __init__(self, ngroups: int) -> None:
        super().__init__()
        self.base = Intervals.empty(ngroups)
        self.pending = []
        self.pending_sorted = False


def read_events(pdf: pd.DataFrame, rows: np.ndarray, ngroups: int, batch: int) -> Events:
    """The SINCE/UNTIL rows `rows` of `pdf` as Events of micro-batch `batch`."""
    def col(name: str) -> np.ndarray:
        return pdf[name].to_numpy(np.int64)[rows]

    groups = (np.stack([col(f"g{i}") for i in range(ngroups)], axis=1) if ngroups
              else np.zeros((len(rows), 0), np.int64))
    return Events(col("k"), col("ts"), batch * ORDER_SHIFT + col("o"), col("f"), groups, col("e"))


def read_terms(st: BucketState, pdf: pd.DataFrame, kinds: np.ndarray, ngroups: int) -> None:
    """TERMS rows name group codes: remember them for decoding the output."""
    named = np.nonzero(kinds == TERMS)[0]
    for i in range(ngroups):
        terms = pdf[f"t{i}"].to_numpy()[named]
        has = pd.notna(terms)
        st.terms.update(zip(pdf[f"g{i}"].to_numpy()[named][has].tolist(), terms[has].tolist()))


def emit_rows(st: BucketState, rows: NumericRows, batch: Batch) -> None:
    """Rows as one record, followed by the terms of the group codes they use."""
    batch.metrics["rows_out"] += len(rows)
    if len(rows):
        batch.out.append(rows_record(rows))
        used = np.unique(rows.groups)
        batch.out.append(terms_record({c: st.terms[c] for c in used.tolist() if c in st.terms}))


class CurrentAggregateLogic(BucketLogic):
    data_kinds = EVENT_KINDS + (RowKind.OTHER,)  # an element no clause matches is late too (spec §6)

    def __init__(self, plan: CurrentAggregatePlan) -> None:
        self.plan, self.ngroups, self.every_ms = plan, len(plan.group_vars), plan.every_ms
        self.late_note = f"ignored for fact {plan.fact}: ticks up to {{last}} were already reported"

    def new_state(self) -> CurrentState:
        return CurrentState(self.ngroups)

    def ingest(self, st: CurrentState, pdf: pd.DataFrame, kinds: np.ndarray, batch: Batch) -> None:
        read_terms(st, pdf, kinds, self.ngroups)
        ev = read_events(pdf, np.nonzero(np.isin(kinds, EVENT_KINDS))[0], self.ngroups, st.batches)
        if len(ev):
            st.pending.append(ev)
            st.pending_sorted = False
        # A stream is a set: the same element twice at one ms counts once, even across batches.
        if len(st.pending) > 1 or (st.pending and not st.pending_sorted):
            allp = Events.concat(st.pending)
            pend = allp.sorted_distinct()  # sorted by (fid, ts, order), as apply wants
            batch.metrics["duplicates"] = len(allp) - len(pend)
            st.pending, st.pending_sorted = [pend], True
        ingest_unnamed(st, pdf, kinds, batch)

    def advance(self, st: CurrentState, ticks: np.ndarray, batch: Batch) -> None:
        # Rows at ticks <= upto depend only on events at or before it (events apply in time
        # order), so one application serves the report and the new base.
        upto, cur, unmatched = int(ticks[-1]), st.base, 0
        if st.pending:
            pend = st.pending[0]
            done = pend.ts <= upto
            if done.any():
                applied = apply_sorted_events(st.base, pend.take(np.nonzero(done)[0]))
                cur, unmatched = applied.intervals, applied.unmatched_until
            rest = pend.take(np.nonzero(~done)[0])
            st.pending = [rest] if len(rest) else []
        _, rows = tick_rows(self.plan, cur, ticks)
        emit_rows(st, rows, batch)
        batch.metrics["unmatched_until"] += unmatched
        # Every close applied is at or before the last tick: only open facts stay in the state.
        final = cur.end <= upto
        real = final & (cur.end > cur.start)  # [t, t) (SINCE then UNTIL at one ms) is no fact
        batch.metrics["facts_created"] += int(real.sum())
        batch.metrics["facts_closed"] += int(real.sum())
        st.base = cur.take(np.nonzero(~final)[0])

    def finish(self, st: CurrentState, batch: Batch) -> None:
        if st.pending:  # nothing should remain after the last tick; apply for the metrics
            applied = apply_events(st.base, Events.concat(st.pending).distinct())
            st.base, st.pending = applied.intervals, []
            batch.metrics["unmatched_until"] += applied.unmatched_until
        nonempty = st.base.end > st.base.start
        batch.metrics["facts_created"] += int(nonempty.sum())
        batch.metrics["facts_closed"] += int((nonempty & (st.base.end != OPEN)).sum())
        st.base = Intervals.empty(self.ngroups)

    def snapshot(self, st: CurrentState, metrics: dict) -> None:
        metrics["open_facts"] = int((st.base.end == OPEN).sum())


def make_operator(plan: CurrentAggregatePlan, settings: RunSettings = RunSettings()):
    return bucket_operator(CurrentAggregateLogic(plan), settings)


def tick_rows(plan: CurrentAggregatePlan, facts: Intervals, ticks: np.ndarray):
    """The plan's aggregates over `facts` at `ticks`: (TickAggregates, NumericRows)."""
    agg = current_aggregates(facts, ticks)
    seconds = None
    if any(a.op != "count" for a in plan.aggregates):
        seconds = (agg.duration_ms / 1000.0 if durations_exact(facts, ticks)
                   else fsum_durations(facts, ticks, agg.group_codes))
    return agg, numeric_rows(plan, agg, seconds)


def numeric_rows(plan: CurrentAggregatePlan, agg, seconds) -> NumericRows:
    """The reported rows as numbers: one per (group, tick) with a valid fact."""
    gi, ki = np.nonzero(agg.count > 0)
    counts = agg.count[gi, ki]
    secs = seconds[gi, ki] if seconds is not None else None
    values: dict[str, np.ndarray] = {}
    for a in plan.aggregates:
        values[a.alias] = counts if a.op == "count" else secs if a.op == "sum_duration" else secs / counts
    return NumericRows(agg.ticks[ki], agg.group_codes[gi], values)
