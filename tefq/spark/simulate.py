"""Simulated-fact baselines on Spark (spec §7): `tefq run Q.tef --simulate S [--window W]`.

The same streaming pipeline as the native engine (projection, heartbeats, buckets by group key,
applyInPandasWithState, parquet sink), with a different stateful operator: per bucket it cuts time
into tumbling windows `(tau - w, tau]` and, window after window,

1. restores the facts valid at the window's open from the *strategy's own carried form* only
   (refresh bindings, per-group packs, or the state-event sequence — never a fact table),
2. applies the window's events to them (`facts.apply_events`, the native kernel),
3. evaluates the query at `tau` (`facts.current_aggregates`), and
4. hands the facts valid at `tau` back to the strategy, which stores them in its form and counts
   what that costs (`intermediate_bindings`).

Everything is numpy per bucket; the loop is per window, as the simulated engines must run it.
Query shapes the vectorised operator does not cover (UC3: derived facts, WHILE) run on one bucket
with the oracle-side simulation (`tefq.simulate`) per micro-batch — see `simulation_operator`.
"""
from __future__ import annotations

import pickle
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from typing import Iterator

import numpy as np
import pandas as pd

from tefq.errors import TefqError
from tefq.plan.logical import AggregateQuery, Document
from tefq.results import Metrics, RunResult
from tefq.spark.facts import OPEN, SINCE, Events, Intervals, apply_events, tick_at_or_after, tick_at_or_before
from tefq.spark.output import NumericRows, json_record, rows_record, terms_record
from tefq.spark.physical import CurrentAggregatePlan, FallbackPlan, plan_document

STRATEGIES = ("refresh", "refresh-group", "sequence")


# ---------------------------------------------------------------- what crosses a window
@dataclass
class Changes:
    """The status changes of one window, in (identity, time, order) order: the sequence's state
    events. `start` is the start of the interval an event opens or closes (a rejoin at the quit's
    very ms continues the earlier interval, so it keeps its start)."""

    fid: np.ndarray
    groups: np.ndarray
    opens: np.ndarray  # bool
    ts: np.ndarray
    start: np.ndarray

    def __len__(self) -> int:
        return len(self.fid)


def state_changes(base: Intervals, ev: Events) -> Changes:
    """Which events change a fact's status when applied in order to the open facts `base` (unique,
    sorted by fid): a SINCE of a closed identity, an UNTIL of an open one (spec §7)."""
    ev = ev.take(np.lexsort((ev.order, ev.ts, ev.fid)))
    n = len(ev)
    first = np.ones(n, dtype=bool)
    first[1:] = ev.fid[1:] != ev.fid[:-1]
    pos = np.searchsorted(base.fid, ev.fid)
    posc = np.minimum(pos, max(len(base) - 1, 0))
    in_base = (pos < len(base)) & (base.fid[posc] == ev.fid) if len(base) else np.zeros(n, bool)
    prev_open = np.empty(n, dtype=bool)
    prev_open[1:] = ev.kind[:-1] == SINCE
    prev_open[first] = in_base[first]
    eff = np.nonzero(((ev.kind == SINCE) & ~prev_open) | ((ev.kind != SINCE) & prev_open))[0]
    fid, ts, opens = ev.fid[eff], ev.ts[eff], ev.kind[eff] == SINCE
    e_first = np.ones(len(eff), dtype=bool)
    e_first[1:] = fid[1:] != fid[:-1]
    meets = np.zeros(len(eff), dtype=bool)  # an open at the ms of the same identity's close: coalesces
    meets[1:] = opens[1:] & ~opens[:-1] & ~e_first[1:] & (ts[1:] == ts[:-1])
    # The interval's start: a fresh open starts it; the first close of a carried fact has its start;
    # every later event of the identity inherits from the last of those (forward fill).
    head = opens & ~meets
    closes_carried = e_first & ~opens
    value = np.where(head, ts, base.start[posc[eff]] if len(base) else 0)
    src = np.where(head | closes_carried, np.arange(len(eff)), -1)
    src = np.maximum.accumulate(src) if len(src) else src
    return Changes(fid, ev.groups[eff], opens, ts, value[src] if len(src) else ts.copy())


def _open_facts(fid: np.ndarray, start: np.ndarray, groups: np.ndarray) -> Intervals:
    order = np.argsort(fid, kind="stable")
    return Intervals(fid[order], start[order], np.full(len(fid), OPEN, np.int64), groups[order])


class RefreshPerFact:
    """C-SPARQL refresh, per fact: one binding `(identity, start)` per fact valid at `tau`,
    re-emitted into the next window."""

    name = "refresh"

    def __init__(self, ngv: int) -> None:
        z = np.zeros(0, np.int64)
        self.fid, self.start, self.groups = z, z.copy(), np.zeros((0, ngv), np.int64)
        self.bindings = 0

    def restore(self) -> Intervals:
        return _open_facts(self.fid, self.start, self.groups)

    def carry(self, valid: Intervals, changes: Changes) -> None:
        self.fid, self.start, self.groups = valid.fid.copy(), valid.start.copy(), valid.groups.copy()
        self.bindings += len(valid)


class RefreshPerGroup:
    """C-SPARQL refresh, per group: one aggregate-state binding per group with a valid fact; it packs
    the group's members `(identity, start)` (exact on repeated joins and unmatched quits). Without
    GROUP BY no pattern binds a group key: one binding per fact, as the oracle's simulation does."""

    name = "refresh-group"

    def __init__(self, ngv: int) -> None:
        z = np.zeros(0, np.int64)
        self.keys = np.zeros((0, ngv), np.int64)  # one row per pack
        self.offsets = np.zeros(1, np.int64)  # members of pack i: offsets[i]:offsets[i+1]
        self.member_fid, self.member_start = z, z.copy()
        self.bindings = 0

    def restore(self) -> Intervals:
        counts = np.diff(self.offsets)
        return _open_facts(self.member_fid, self.member_start, np.repeat(self.keys, counts, axis=0))

    def carry(self, valid: Intervals, changes: Changes) -> None:
        ngv = valid.groups.shape[1]
        if ngv == 0:  # every fact is its own pack
            self.keys = np.zeros((len(valid), 0), np.int64)
            self.offsets = np.arange(len(valid) + 1, dtype=np.int64)
        else:
            order = np.lexsort(valid.groups.T[::-1])
            g = valid.groups[order]
            cut = np.ones(len(g), dtype=bool)
            cut[1:] = (g[1:] != g[:-1]).any(axis=1)
            heads = np.nonzero(cut)[0]
            self.keys = g[heads]
            self.offsets = np.append(heads, len(g)).astype(np.int64)
            valid = valid.take(order)
        self.member_fid, self.member_start = valid.fid.copy(), valid.start.copy()
        self.bindings += len(self.keys)


class Sequence:
    """EP-SPARQL sequence: an append-only log of state events; the current state is, per identity,
    its latest event (the "no intervening event" lookup), kept as an index into the log."""

    name = "sequence"

    def __init__(self, ngv: int) -> None:
        self.n = 0
        self.log = {k: np.zeros(1024, np.int64) for k in ("fid", "ts", "start", "opens")}
        self.log_groups = np.zeros((1024, ngv), np.int64)
        self.index_fid = np.zeros(0, np.int64)  # sorted: identities whose latest event opens
        self.index_pos = np.zeros(0, np.int64)  # -> position of that event in the log
        self.bindings = 0

    def restore(self) -> Intervals:
        p = self.index_pos
        return Intervals(self.index_fid, self.log["start"][p], np.full(len(p), OPEN, np.int64), self.log_groups[p])

    def carry(self, valid: Intervals, changes: Changes) -> None:
        m = len(changes)
        if m == 0:
            return
        order = np.argsort(changes.ts, kind="stable")  # stream order in the log
        self._append(changes, order)
        # latest event per identity among this window's changes (changes are in (fid, ts) order)
        last = np.ones(m, dtype=bool)
        last[:-1] = changes.fid[:-1] != changes.fid[1:]
        pos_of = np.empty(m, np.int64)
        pos_of[order] = self.n - m + np.arange(m)
        touched, latest_opens, latest_pos = changes.fid[last], changes.opens[last], pos_of[last]
        keep = ~np.isin(self.index_fid, touched)
        fid = np.concatenate([self.index_fid[keep], touched[latest_opens]])
        pos = np.concatenate([self.index_pos[keep], latest_pos[latest_opens]])
        o = np.argsort(fid, kind="stable")
        self.index_fid, self.index_pos = fid[o], pos[o]
        self.bindings = self.n

    def _append(self, c: Changes, order: np.ndarray) -> None:
        need = self.n + len(c)
        if need > len(self.log["fid"]):
            cap = max(need, 2 * len(self.log["fid"]))
            for k, a in self.log.items():
                self.log[k] = np.resize(a, cap)
            self.log_groups = np.resize(self.log_groups, (cap, self.log_groups.shape[1]))
        sl = slice(self.n, need)
        self.log["fid"][sl], self.log["ts"][sl] = c.fid[order], c.ts[order]
        self.log["start"][sl], self.log["opens"][sl] = c.start[order], c.opens[order]
        self.log_groups[sl] = c.groups[order]
        self.n = need

    def __getstate__(self) -> dict:  # the state blob holds the log, not its spare capacity
        d = dict(self.__dict__)
        d["log"] = {k: a[: self.n] for k, a in self.log.items()}
        d["log_groups"] = self.log_groups[: self.n]
        return d


def make_strategy(name: str, ngv: int):
    return {"refresh": RefreshPerFact, "refresh-group": RefreshPerGroup, "sequence": Sequence}[name](ngv)


# ---------------------------------------------------------------- one window
def simulate_window(strategy, plan: CurrentAggregatePlan, tau: int, w: int, ev: Events | None,
                    metrics: dict) -> NumericRows | None:
    """One window `(tau - w, tau]`: carried state + the window's events -> rows at `tau` -> carry."""
    from tefq.spark.operator import tick_rows

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


# ---------------------------------------------------------------- the operator
class SimBucketState:
    def __init__(self, strategy) -> None:
        self.strategy = strategy
        self.pending: list[Events] = []
        self.terms: dict[int, str] = {}
        self.gmin: int | None = None
        self.gmax: int | None = None
        self.last_tick: int | None = None
        self.batches = 0
        self.flushed = False


def make_simulation_operator(plan: CurrentAggregatePlan, strategy: str, t0: int, lateness_ms: int):
    """applyInPandasWithState function: the windows that became final in this micro-batch, in order."""
    from tefq.spark.operator import batch_frame, batch_metrics, ingest

    ngroups = len(plan.group_vars)
    w = plan.every_ms

    def op(key, pdfs: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
        bucket = int(key[0])
        st: SimBucketState = (pickle.loads(state.get[0]) if state.exists
                              else SimBucketState(make_strategy(strategy, ngroups)))
        st.batches += 1
        out: list[tuple[str, int, bytes]] = []
        metrics = batch_metrics()
        pdf = batch_frame(pdfs)
        flush = False
        if pdf is not None:
            flush, ev = ingest(pdf, st, bucket, ngroups, metrics, out,
                               f"ignored for fact {plan.fact}: windows up to {{}} were already closed")
            if len(ev):
                st.pending.append(ev)
        if st.gmax is not None and not st.flushed:
            first = tick_at_or_after(st.gmin, t0, w)
            start = first if st.last_tick is None else st.last_tick + w
            upto = (tick_at_or_after(st.gmax, t0, w) if flush
                    else tick_at_or_before(st.gmax - lateness_ms - 1, t0, w))
            if upto >= start:
                pend = Events.concat(st.pending) if st.pending else None
                if pend is not None:
                    d = pend.distinct()  # a stream is a set
                    metrics["duplicates"] = len(pend) - len(d)
                    pend = d.take(np.argsort(d.ts, kind="stable"))
                bounds = (np.searchsorted(pend.ts, np.arange(start - w, upto + 1, w), side="right")
                          if pend is not None else None)
                rows = []
                for k, tau in enumerate(range(start, upto + 1, w)):
                    ev = pend.take(np.arange(bounds[k], bounds[k + 1])) if pend is not None else None
                    r = simulate_window(st.strategy, plan, tau, w, ev, metrics)
                    if r is not None and len(r):
                        rows.append(r)
                if rows:
                    nr = NumericRows.concat(rows, ngroups, list(rows[0].values))
                    metrics["rows_out"] = len(nr)
                    out.append(rows_record(nr))
                    used = np.unique(nr.groups)
                    out.append(terms_record({c: st.terms[c] for c in used.tolist() if c in st.terms}))
                if bucket == 0:
                    metrics["ticks"] = (upto - start) // w + 1
                st.last_tick = upto
                if pend is not None:
                    rest = pend.take(np.nonzero(pend.ts > upto)[0])
                    st.pending = [rest] if len(rest) else []
            if flush:
                st.flushed = True
                metrics["intermediate_bindings"] = int(st.strategy.bindings)
        blob = pickle.dumps(st, protocol=5)
        metrics["state_bytes"] = len(blob)
        metrics["open_facts"] = len(st.strategy.restore())
        metrics["batch"] = st.batches
        state.update((blob,))
        out.append(json_record("metric", st.gmax if st.gmax is not None else 0, metrics))
        yield pd.DataFrame(out, columns=["kind", "tick", "payload"])

    return op


def simulation_fallback(strategy: str, window_ms: int):
    """Other shapes (UC3): the oracle-side simulation (`tefq.simulate.run`) evaluates, on one bucket
    holding every element read, the windows that became final in each micro-batch. O(input) per
    micro-batch: correct, not scalable. Its bindings are those of the run at the flush."""
    def evaluate(doc: Document, elements, background, t0: int):
        from tefq.simulate import run as simulate_run

        return simulate_run(doc, elements, strategy, window_ms, background, t0)

    return evaluate


# ---------------------------------------------------------------- the driver
def plans_for(doc: Document, window_ms: int | None, buckets: int) -> tuple[Document, list]:
    """The document with every aggregate query's EVERY replaced by the window, and its Spark plans."""
    if window_ms is not None:
        doc = replace(doc, queries=tuple(replace(q, every_ms=window_ms) if isinstance(q, AggregateQuery) else q
                                         for q in doc.queries))
    return doc, plan_document(doc, buckets, fact_aggregates=False)


def explain_simulated(doc: Document, strategy: str, window_ms: int | None = None, buckets: int = 8) -> str:
    doc, plans = plans_for(doc, window_ms, buckets)
    out = []
    for p in plans:
        if isinstance(p, CurrentAggregatePlan):
            head = (f"SimulatedFacts {strategy} on Spark (vectorised, per bucket): windows ({p.every_ms} ms) in order;"
                    f" each restores the facts from the carried {_FORM[strategy]}, applies its events, reports at"
                    " tau, carries on")
            body = p.explain().replace("FactOperator", "SimulationOperator (replaces the fact operator)")
        else:
            head = (f"SimulatedFacts {strategy} on Spark (single bucket, oracle-side simulation tefq.simulate per"
                    " micro-batch: not scalable)")
            body = p.explain().replace("the oracle reports the ticks", "tefq.simulate runs the windows")
        out.append(head + "\n" + body)
    return "\n\n".join(out) + "\n"


_FORM = {"refresh": "refresh bindings (identity, start)", "refresh-group": "per-group packs",
         "sequence": "state-event sequence"}


def run(doc: Document, stream_paths: list[str], strategy: str, window_ms: int | None = None, background=None, *,
        t0: int = 0,
        lateness_ms: int = 0, master: str | None = None, max_files_per_trigger: int | None = None,
        bad_rows: str | None = None, progress: bool = True, buckets: int | None = None, spark=None) -> RunResult:
    """Run every aggregate query of `doc` on Spark with facts simulated by `strategy`."""
    from tefq.spark.engine import _background_triples, _metrics, run_plan, stage_streams
    from tefq.spark.sources import file_ranks
    from tefq.spark.fallback import make_fallback_operator
    from tefq.spark.session import get_session

    started = time.time()
    if strategy not in STRATEGIES:
        raise TefqError(f"unknown simulation '{strategy}' (expected one of {', '.join(STRATEGIES)})", file="--simulate")
    if window_ms is not None and window_ms <= 0:
        raise TefqError(f"--window must be a positive duration, got {window_ms} ms", file="--window")
    if not stream_paths:
        raise TefqError("no --stream given")
    if not any(isinstance(q, AggregateQuery) for q in doc.queries):
        raise TefqError("--simulate needs an aggregate (TEF) query: windowed queries are not simulated",
                        file=doc.source)
    from tefq.simulate.window import check_supported

    check_supported(doc, [q for q in doc.queries if isinstance(q, AggregateQuery)])
    spark = spark or get_session(master)
    nb = buckets or max(1, int(spark.conf.get("spark.sql.shuffle.partitions")))
    sim_doc, plans = plans_for(doc, window_ms, nb)
    plans = [p for p in plans if p.query in {q.name for q in sim_doc.queries if isinstance(q, AggregateQuery)}]

    def operator(plan):
        if isinstance(plan, FallbackPlan):
            return make_fallback_operator(sim_doc, plan.query_index, plan.every_ms, t0, lateness_ms, triples,
                                          evaluate=simulation_fallback(strategy, plan.every_ms))
        return make_simulation_operator(plan, strategy, t0, lateness_ms)

    triples = _background_triples(background)
    workdir = tempfile.mkdtemp(prefix="tefq-spark-sim-")
    try:
        _, stream_paths = stage_streams(stream_paths, workdir)
        ranks = file_ranks(spark, stream_paths)
        results, metrics = [], Metrics()
        windows_seen: set[int] = set()
        paths: dict[str, str] = {}
        for i, plan in enumerate(plans):
            qr, m, warns = run_plan(spark, sim_doc, plan, stream_paths, workdir, t0=t0, lateness_ms=lateness_ms,
                                    max_files_per_trigger=max_files_per_trigger, bad_rows=bad_rows,
                                    progress=progress, background=triples, ranks=ranks, operator=operator)
            for wmsg in warns:
                print(f"warning: {wmsg}", file=sys.stderr)
            results.append(qr)
            paths[plan.query] = "vectorised" if isinstance(plan, CurrentAggregatePlan) else "oracle-simulation fallback"
            if i == 0:
                _metrics(m, metrics)
                metrics.ticks = 0  # counted per window size below
            # Queries with the same window would share one simulated state (as in tefq.simulate): count it once.
            if plan.every_ms not in windows_seen:
                windows_seen.add(plan.every_ms)
                metrics.intermediate_bindings += int(m.get("intermediate_bindings", 0))
                metrics.ticks += int(m.get("ticks", 0))
            metrics.rows_out += len(qr.rows)
        metrics.wall_seconds = time.time() - started
        metrics.extra.update(engine="spark", strategy=strategy, window_ms=window_ms, spark_path=paths)
        return RunResult(results, metrics)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
