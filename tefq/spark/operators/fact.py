"""The fact-aggregate operator: event facts, derived facts and WHILE scopes in one stateful bucket,
one call per micro-batch (applyInPandasWithState), numpy throughout — never a state call per event.
With several buckets (`FactAggregatePlan.routing`) each bucket holds the groups of its key values
and every replicated fact in full; a replicated fact's counts are taken in bucket 0 only.

Input rows (built by `tefq.spark.runtime.fact_rows`): `k` kind (`RowKind`: SINCE, UNTIL, HEARTBEAT,
FLUSH), `fact` (index into the plan's event facts), `ts`, `o` (order of ties; a heartbeat's max
event time), `f` (identity hash; a heartbeat's event count), `e` (element hash: a stream is a set),
`n` (a heartbeat's bad-row count), `v0..` identity variable codes and `t0..` output terms; OTHER
rows (an element no clause matches: only `ts` and `e` count, for its duplicates and lateness).

Per micro-batch, with `T` the last reported tick and `U` the last tick now final:
1. events with `ts <= U` are applied to each event fact's intervals (`tefq.spark.kernels.intervals`); later
   ones stay pending;
2. each derived fact = its body joined and coalesced (`tefq.spark.kernels.joins.derive`) together with
   its facts still open at `T`, cut at `T` (so a fact keeps the start it had coalesced to);
3. the aggregates at the ticks in `(T, U]` (`tefq.spark.kernels.tick_aggregates`);
4. the state keeps only what later ticks can need: open facts (their intervals can only grow),
   pending events, and — under WHILE without CURRENT — closed facts of the matched fact that a
   still open scope fact started before. Closed facts are final: no later event changes them.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from tefq.spark.kernels.joins import Relation, cut, derive, key_ranks
from tefq.spark.planning.fact import DerivedFactPlan, EventFactPlan, FactAggregatePlan
from tefq.spark.kernels.tick_aggregates import TickSpec, tick_rows
from tefq.spark.kernels.intervals import OPEN, Events, Intervals, apply_events
from tefq.spark.operators.base import (Batch, BucketLogic, BucketState, bucket_operator, ingest_unnamed,
                                       uncount_late_copies)
from tefq.spark.fact_output import facts_record, open_facts_record, wants_open_snapshots
from tefq.spark.output import rows_record, terms_record
from tefq.spark.protocol import EVENT_KINDS, ORDER_SHIFT, SINCE, Heartbeats, RowKind
from tefq.vocabulary import RunSettings


class FactState(BucketState):
    base: dict[str, Intervals]  # open after last_tick
    pending: dict[str, list[Events]]
    open: dict[str, Relation]
    retained: Relation | None  # closed matched facts a live WHILE scope still needs

    def __init__(self, plan: FactAggregatePlan) -> None:
        super().__init__()
        self.base = {f.name: Intervals.empty(len(f.identity)) for f in plan.event_facts}
        self.pending = {f.name: [] for f in plan.event_facts}
        self.open = {f.name: Relation.empty(f.identity) for f in plan.facts if isinstance(f, DerivedFactPlan)}
        self.retained = None


def tick_spec(plan: FactAggregatePlan) -> TickSpec:
    return TickSpec(plan.current, plan.every_ms, plan.group_cols,
                    tuple((a.alias, a.op, c) for a, c in zip(plan.aggregates, plan.distinct_cols)),
                    plan.while_.query_key if plan.while_ else None,
                    partial=plan.routing is not None and plan.routing.merge)


def _relation(iv: Intervals, names: tuple[str, ...]) -> Relation:
    return Relation(names, iv.groups, iv.start, iv.end)


class FactEvaluator:
    """Steps 1-4 on a state, independent of Spark (the tests drive it directly). `facts`: also
    emit each fact's intervals as they close, and the open ones at the end (`fact_output`: the
    fact table of spec §12 as a second output of the same query); `open_snapshots` (a live run's
    fact table): also the intervals open at each last reported tick."""

    def __init__(self, plan: FactAggregatePlan, facts: bool = False, open_snapshots: bool = False) -> None:
        self.plan = plan
        self.spec = tick_spec(plan)
        self.index = {f.name: f for f in plan.facts}
        self.facts = facts
        self.open_snapshots = facts and open_snapshots

    def counted(self, bucket: int) -> set[str]:
        """The facts this bucket counts (and emits): a replicated fact in bucket 0 only."""
        return {f.name for f in self.plan.facts if bucket == 0 or f.name not in self.plan.replicated}

    def advance(self, st: FactState, ticks: np.ndarray, metrics: dict,
                bucket: int = 0) -> list[tuple[str, int, bytes]]:
        """`bucket`: a replicated fact is in every bucket; its counts are taken in bucket 0 only."""
        upto, counted = int(ticks[-1]), self.counted(bucket)
        current = self.current_facts(st, upto, metrics, counted)
        # a plan with no output columns (the fact table's: tefq.facts.spark) reports no rows
        out = self.tick_records(st, current, ticks, metrics) if self.plan.columns else []
        if self.facts:
            out.extend(self.fact_records(st, current, counted, lambda r: r.end <= upto))
        if self.open_snapshots:
            out.extend(self.open_records(st, current, counted, bucket, upto))
        # Keep what later ticks need: open facts; closed ones are final and counted once.
        for f in self.plan.facts:
            r = current[f.name]
            done = r.end <= upto
            if f.name in counted:
                metrics["facts_created"] += int(done.sum())
                metrics["facts_closed"] += int(done.sum())
            if isinstance(f, EventFactPlan):
                base = st.base[f.name]
                st.base[f.name] = base.take(np.nonzero(base.end > upto)[0])
            else:
                st.open[f.name] = r.take(np.nonzero(~done)[0])
        st.last_tick = upto
        return out

    def current_facts(self, st: FactState, upto: int, metrics: dict, counted: set[str]) -> dict[str, Relation]:
        """Steps 1-2: the events up to `upto` applied, each derived fact derived; per fact its
        intervals known at `upto` (open ones, and the ones closed since the last tick)."""
        current: dict[str, Relation] = {}
        for f in self.plan.facts:
            if isinstance(f, EventFactPlan):
                pend = Events.concat(st.pending[f.name]) if st.pending[f.name] else None
                if pend is not None:
                    done = pend.ts <= upto
                    applied = apply_events(st.base[f.name], pend.take(np.nonzero(done)[0]))
                    st.base[f.name] = applied.intervals
                    metrics["unmatched_until"] += applied.unmatched_until if f.name in counted else 0
                    rest = pend.take(np.nonzero(~done)[0])
                    st.pending[f.name] = [rest] if len(rest) else []
                current[f.name] = _relation(st.base[f.name], f.identity).nonempty()
            else:
                bodies = [current[b.fact].project(self.index[b.fact].identity) for b in f.body]
                bodies = [Relation(b.names, r.codes, r.start, r.end) for b, r in zip(f.body, bodies)]
                carried = cut(st.open[f.name], st.last_tick) if st.last_tick is not None else None
                current[f.name] = derive(bodies, f.identity, carried)
        return current

    def tick_records(self, st: FactState, current: dict[str, Relation], ticks: np.ndarray,
                     metrics: dict) -> list[tuple[str, int, bytes]]:
        """Step 3: the aggregates at `ticks` (and, under WHILE without CURRENT, what is retained)."""
        plan, upto = self.plan, int(ticks[-1])
        matched = current[plan.fact]
        if st.retained is not None and len(st.retained):
            matched = Relation.concat([matched, st.retained])
        scope = None
        if plan.while_ is not None:
            w = current[plan.while_.fact]
            scope = Relation(tuple(f"k{i}" for i in plan.while_.key), w.codes[:, list(plan.while_.key)]
                             .reshape(len(w), len(plan.while_.key)), w.start, w.end)
        out: list[tuple[str, int, bytes]] = []
        rows = tick_rows(matched, self.spec, scope, ticks)
        if self.spec.partial:  # shares of rows the driver adds up: not rows yet
            metrics["partial_rows"] = metrics.get("partial_rows", 0) + len(rows)
        else:
            metrics["rows_out"] += len(rows)
        if len(rows):
            out.append(rows_record(rows))
            used = np.unique(rows.groups)
            out.append(terms_record({c: st.terms[c] for c in used.tolist() if c in st.terms}))
        if plan.while_ is not None and not plan.current:
            st.retained = self._retained(matched, scope, upto)
        return out

    def chosen_facts(self, current: dict[str, Relation], counted: set[str],
                     chosen: Callable[[Relation], np.ndarray]) -> list[tuple[int, Relation]]:
        """Per fact this bucket counts (by its number in the plan), the intervals `chosen` selects."""
        out = []
        for i, f in enumerate(self.plan.facts):
            r = current[f.name]
            if f.name in counted and len(r):
                r = r.take(np.nonzero(chosen(r))[0])
                if len(r):
                    out.append((i, r))
        return out

    def fact_records(self, st: FactState, current: dict[str, Relation], counted: set[str],
                     chosen: Callable[[Relation], np.ndarray]) -> list[tuple[str, int, bytes]]:
        """The intervals `chosen(relation)` selects of each fact this bucket counts, as `facts`
        records, and the terms their identities use."""
        parts = self.chosen_facts(current, counted, chosen)
        return [facts_record(i, r.codes, r.start, r.end) for i, r in parts] + used_terms(st, parts)

    def open_records(self, st: FactState, current: dict[str, Relation], counted: set[str], bucket: int,
                     upto: int) -> list[tuple[str, int, bytes]]:
        """The bucket's snapshot of the intervals open at `upto` (one record, even when empty:
        it replaces the previous one on the driver), and the terms they use."""
        parts = self.chosen_facts(current, counted, lambda r: r.end > upto)
        return [open_facts_record(bucket, upto, [(i, r.codes, r.start) for i, r in parts])] + used_terms(st, parts)

    def _retained(self, matched: Relation, scope: Relation, upto: int) -> Relation:
        """Closed matched facts that overlap a scope fact still open after `upto`: later ticks of
        that scope still count them (a scope starting later cannot overlap them)."""
        closed = matched.take(np.nonzero(matched.end <= upto)[0])
        live = scope.take(np.nonzero(scope.end > upto)[0])
        if not len(closed) or not len(live):
            return Relation.empty(matched.vars)
        keys = closed.codes[:, list(self.plan.while_.query_key)].reshape(len(closed), -1)
        kc, kl = key_ranks(keys, live.codes)
        first_start = np.full(int(max(kc.max(initial=0), kl.max(initial=0))) + 1, OPEN, dtype=np.int64)
        np.minimum.at(first_start, kl, live.start)
        return closed.take(np.nonzero(first_start[kc] < closed.end)[0])

    def finish(self, st: FactState, metrics: dict, bucket: int = 0) -> list[tuple[str, int, bytes]]:
        """End of input: the facts still open are created, not closed (and, asked for facts, emitted)."""
        counted = self.counted(bucket)
        still: dict[str, Relation] = {}
        for f in self.plan.facts:
            if isinstance(f, EventFactPlan):
                still[f.name] = _relation(st.base[f.name], f.identity).nonempty()
            else:
                still[f.name] = st.open[f.name]
            if f.name in counted:
                metrics["facts_created"] += len(still[f.name])
        return self.fact_records(st, still, counted, lambda r: np.ones(len(r), bool)) if self.facts else []


def used_terms(st: FactState, parts: list[tuple[int, Relation]]) -> list[tuple[str, int, bytes]]:
    """The `code -> term` pairs the identities of `parts` use, as one terms record (none: no record)."""
    if not parts:
        return []
    codes = np.unique(np.concatenate([r.codes.reshape(-1) for _, r in parts])).tolist()
    return [terms_record({c: st.terms[c] for c in codes if c in st.terms})]


def read_fact_events(pdf: pd.DataFrame, arity: int, batch: int) -> Events:
    """One event fact's SINCE/UNTIL rows as Events of micro-batch `batch`."""
    codes = pdf[[f"v{i}" for i in range(arity)]].to_numpy(dtype=np.int64).reshape(len(pdf), arity)
    fid = pdf["f"].to_numpy(np.int64)
    # A stream is a set: equal elements at one ms count once per identity. One element can give
    # two identities through two clauses of one fact, so the duplicate key mixes in the identity.
    elem = pdf["e"].to_numpy(np.int64).view(np.uint64) ^ (fid.view(np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    return Events(pdf["k"].to_numpy(np.int64), pdf["ts"].to_numpy(np.int64),
                  batch * ORDER_SHIFT + pdf["o"].to_numpy(np.int64), fid, codes, elem.view(np.int64))


class FactAggregateLogic(BucketLogic):
    """The bucket loop's view of `FactEvaluator`, in one of the plan's buckets (`plan.routing`)."""

    data_kinds = EVENT_KINDS + (RowKind.OTHER,)  # an element no clause matches is late too (spec §6)

    def __init__(self, plan: FactAggregatePlan, facts: bool = False, open_snapshots: bool = False) -> None:
        self.plan, self.every_ms = plan, plan.every_ms
        self.evaluator = FactEvaluator(plan, facts, open_snapshots)
        self.late_note = f"ignored for query {plan.query}: ticks up to {{last}} were already reported"
        self.copies = [i for i, f in enumerate(plan.event_facts) if f.name in plan.replicated]
        self.late_copies = np.zeros(0, bool)  # this call's late rows (in order): copies of a replicated row?

    def see_time(self, st: FactState, hb: Heartbeats | None, pdf: pd.DataFrame, kinds: np.ndarray,
                 batch: Batch) -> None:
        """Also note which late rows are copies of a replicated fact's row (bucket 0 counts and warns)."""
        super().see_time(st, hb, pdf, kinds, batch)
        self.late_copies = np.zeros(0, bool)
        if batch.bucket and self.copies and st.last_tick is not None:
            late = np.isin(kinds, self.data_kinds) & (pdf["ts"].to_numpy() <= st.last_tick)  # as drop_late's
            self.late_copies = np.isin(pdf["fact"].to_numpy()[late], self.copies) & np.isin(kinds[late], EVENT_KINDS)

    def new_state(self) -> FactState:
        return FactState(self.plan)

    def ingest(self, st: FactState, pdf: pd.DataFrame, kinds: np.ndarray, batch: Batch) -> None:
        uncount_late_copies(batch, self.late_copies)
        evs = pdf[np.isin(kinds, EVENT_KINDS)]
        fact_col = evs["fact"].to_numpy()
        for i, f in enumerate(self.plan.event_facts):
            mine = evs[fact_col == i]
            if not len(mine):
                continue
            since = mine[mine["k"].to_numpy() == SINCE]
            for j, pos in enumerate(f.terms):
                pairs = since[[f"v{pos}", f"t{j}"]].dropna().drop_duplicates(f"v{pos}")
                st.terms.update(zip(pairs[f"v{pos}"].to_numpy(np.int64).tolist(), pairs[f"t{j}"].tolist()))
            st.pending[f.name].append(read_fact_events(mine, len(f.identity), st.batches))
        for f in self.plan.event_facts:  # a stream is a set: the same element twice at one ms counts once
            if st.pending[f.name]:
                allp = Events.concat(st.pending[f.name])
                pend = allp.distinct()
                if not batch.bucket or f.name not in self.plan.replicated:
                    batch.metrics["duplicates"] += len(allp) - len(pend)
                st.pending[f.name] = [pend]
        ingest_unnamed(st, pdf, kinds, batch)

    def advance(self, st: FactState, ticks: np.ndarray, batch: Batch) -> None:
        batch.out.extend(self.evaluator.advance(st, ticks, batch.metrics, batch.bucket))

    def finish(self, st: FactState, batch: Batch) -> None:
        batch.out.extend(self.evaluator.finish(st, batch.metrics, batch.bucket))

    def snapshot(self, st: FactState, metrics: dict) -> None:
        metrics["open_facts"] = sum(len(b) for b in st.base.values()) + sum(len(r) for r in st.open.values())


def make_fact_operator(plan: FactAggregatePlan, settings: RunSettings = RunSettings(), facts: bool = False):
    """`facts`: also emit the fact table's records (`tefq.spark.fact_output`), in a live run with
    the snapshots of the open facts."""
    logic = FactAggregateLogic(plan, facts, wants_open_snapshots(facts, settings))
    return bucket_operator(logic, settings, "fact_operator")
