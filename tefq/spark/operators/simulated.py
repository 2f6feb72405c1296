"""The simulated-fact operator (spec §7, `tefq run --simulate S` on Spark): per bucket it cuts time
into tumbling windows `(tau - w, tau]` and, window after window,

1. restores the facts valid at the window's open from the *strategy's own carried form* only
   (refresh bindings, per-group packs, or the state-event sequence — never a fact table;
   `tefq.spark.kernels.strategies`),
2. applies the window's events to them (`facts.apply_events`, the native kernel),
3. evaluates the query at `tau` (`facts.current_aggregates`), and
4. hands the facts valid at `tau` back to the strategy, which stores them in its form and counts
   what that costs (`intermediate_bindings`).

Everything is numpy per bucket; the loop is per window, as the simulated engines must run it. The
input rows are those of the current-aggregate operator (`tefq.spark.operators.current`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from tefq.plan.ticks import tick_array
from tefq.spark.kernels.intervals import OPEN, Events, apply_events
from tefq.spark.kernels.strategies import Changes, RefreshPerFact, RefreshPerGroup, Sequence, make_strategy, state_changes
from tefq.spark.operators.base import Batch, BucketState, bucket_operator
from tefq.spark.operators.current import CurrentAggregateLogic, emit_rows, read_events, read_terms, tick_rows
from tefq.spark.output import NumericRows
from tefq.spark.planning.current import CurrentAggregatePlan
from tefq.spark.protocol import EVENT_KINDS
from tefq.vocabulary import RunSettings


def simulate_window(strategy, plan: CurrentAggregatePlan, tau: int, w: int, ev: Events | None,
                    metrics: dict) -> NumericRows | None:
    """One window `(tau - w, tau]`: carried state + the window's events -> rows at `tau` -> carry."""
    base = strategy.restore()
    if ev is not None and len(ev):
        changes = state_changes(base, ev)
        applied = apply_events(base, ev)
        cur = applied.intervals
        metrics["unmatched_until"] += applied.unmatched_until
    else:
        z = np.zeros(0, np.int64)
        changes, cur = Changes(z, base.groups[:0], z.astype(bool), z, z), base
    real = cur.end > cur.start  # [t, t) is no fact
    metrics["facts_created"] += int((real & (cur.start > tau - w)).sum())
    metrics["facts_closed"] += int((real & (cur.end <= tau)).sum())
    valid = cur.take(np.nonzero(cur.end == OPEN)[0])  # every event is at or before tau
    rows = None
    if len(valid):
        _, rows = tick_rows(plan, valid, np.array([tau], np.int64))
    strategy.carry(valid, changes)
    return rows


class SimState(BucketState):
    strategy: RefreshPerFact | RefreshPerGroup | Sequence
    pending: list[Events]

    def __init__(self, strategy: RefreshPerFact | RefreshPerGroup | Sequence) -> None:
        super().__init__()
        self.strategy = strategy
        self.pending = []


class SimulationLogic(CurrentAggregateLogic):
    """The current-aggregate plan's rows, computed window by window through a strategy's carried form."""

    def __init__(self, plan: CurrentAggregatePlan, strategy: str) -> None:
        super().__init__(plan)
        self.strategy = strategy
        self.late_note = f"ignored for fact {plan.fact}: windows up to {{last}} were already closed"

    def new_state(self) -> SimState:
        return SimState(make_strategy(self.strategy, self.ngroups))

    def ingest(self, st: SimState, pdf: pd.DataFrame, kinds: np.ndarray, batch: Batch) -> None:
        read_terms(st, pdf, kinds, self.ngroups)
        ev = read_events(pdf, np.nonzero(np.isin(kinds, EVENT_KINDS))[0], self.ngroups, st.batches)
        if len(ev):
            st.pending.append(ev)

    def advance(self, st: SimState, ticks: np.ndarray, batch: Batch) -> None:
        w, start, upto = self.every_ms, int(ticks[0]), int(ticks[-1])
        pend = Events.concat(st.pending) if st.pending else None
        if pend is not None:
            d = pend.distinct()  # a stream is a set
            batch.metrics["duplicates"] = len(pend) - len(d)
            pend = d.take(np.argsort(d.ts, kind="stable"))
        bounds = (np.searchsorted(pend.ts, tick_array(start - w, upto, w), side="right")
                  if pend is not None else None)
        rows = []
        for k, tau in enumerate(ticks.tolist()):
            ev = pend.take(np.arange(bounds[k], bounds[k + 1])) if pend is not None else None
            r = simulate_window(st.strategy, self.plan, tau, w, ev, batch.metrics)
            if r is not None and len(r):
                rows.append(r)
        if rows:
            emit_rows(st, NumericRows.concat(rows, self.ngroups, list(rows[0].values)), batch)
        if pend is not None:
            rest = pend.take(np.nonzero(pend.ts > upto)[0])
            st.pending = [rest] if len(rest) else []

    def finish(self, st: SimState, batch: Batch) -> None:
        batch.metrics["intermediate_bindings"] = int(st.strategy.bindings)

    def snapshot(self, st: SimState, metrics: dict) -> None:
        metrics["open_facts"] = len(st.strategy.restore())


def make_simulation_operator(plan: CurrentAggregatePlan, strategy: str, settings: RunSettings = RunSettings()):
    """applyInPandasWithState function: the windows that became final in this micro-batch, in order."""
    return bucket_operator(SimulationLogic(plan, strategy), settings, "simulation_operator")
