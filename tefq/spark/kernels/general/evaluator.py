"""One bucket's evaluation of one aggregate query, batch by batch: `ingest` coded elements,
`advance` to the ticks that became final (rows out), and the state keeps only what later ticks
can still see (`state.GeneralState`). A Spark bucket operator calls it once per micro-batch; the
tests and the bench call it directly.

Per `advance(ticks)`, with `T` the last reported tick and `U = ticks[-1]`:
1. the pending elements with `t <= U` become final (time order; a repeated element once);
2. the facts (`facts.FactSide`): clause events applied to the open intervals, derived facts
   re-derived from their bodies' intervals and coalesced with their open intervals cut at `T`;
3. the WHERE (`where.solutions`) over those facts (plus, under WHILE, the retained closed ones),
   the final elements and the background; contributions, cells, rows (`contributions`,
   `aggregates`, `rows`);
4. the state keeps the open facts, the pending elements and — under WHILE — what an open scope
   fact still overlaps; the dictionary keeps the codes the state holds.
"""
from __future__ import annotations

from collections import Counter
from typing import Mapping

import numpy as np

from tefq.plan.logical import EventFact, Term
from tefq.spark.kernels.general.aggregates import CellAggregator
from tefq.spark.kernels.general.coding import ChainedTerms, Elements, TermDictionary, encode
from tefq.spark.kernels.general.contributions import contributions
from tefq.spark.kernels.general.facts import CodedBackground, FactSide, keep_open
from tefq.spark.kernels.general.query import CompiledQuery
from tefq.spark.kernels.general.rows import BucketRows, concat, empty_implicit
from tefq.spark.kernels.general.state import GeneralState
from tefq.spark.kernels.general.tables import column, match, relation, union
from tefq.spark.kernels.general.where import scope_relation, solutions
from tefq.spark.kernels.general.retention import retain
from tefq.spark.kernels.intervals import OPEN
from tefq.spark.kernels.joins import Relation, interval_join


def template_constants(cq: CompiledQuery) -> TermDictionary:
    """The constants of the facts' templates: a pattern variable can bind one (`?a ?rel ?b` over
    `?user :watching ?channel` binds ?rel to :watching), so their terms must be known."""
    terms = sorted({n.nt for f in cq.facts for n in (f.template.s, f.template.p, f.template.o) if isinstance(n, Term)})
    out = TermDictionary()
    out.add(encode(terms), terms)
    return out


STEP_ELEMENTS = 50_000  # final elements one advance step applies (about; a tick's are never split)
STEP_TICKS = 512  # ticks one advance step reports at most


def tick_steps(pending_ts: np.ndarray, ticks: np.ndarray) -> list[np.ndarray]:
    """`ticks` cut into consecutive runs, each making final about STEP_ELEMENTS of the pending
    elements (at times `pending_ts`, ascending) and at most STEP_TICKS ticks."""
    final_by = np.searchsorted(pending_ts, ticks, side="right")  # pending_ts sorted (`Elements.by_time`)  # elements final at each tick
    key = np.column_stack([final_by // STEP_ELEMENTS, np.arange(len(ticks)) // STEP_TICKS])
    cuts = np.nonzero((key[1:] != key[:-1]).any(axis=1))[0] + 1
    return np.split(ticks, cuts)


class GeneralEvaluator:
    def __init__(self, cq: CompiledQuery, background: CodedBackground, background_terms: TermDictionary | None = None,
                 bucket: int = 0, buckets: int = 1) -> None:
        self.cq, self.bg, self.bucket, self.buckets = cq, background, bucket, buckets
        self.bg_terms = background_terms or TermDictionary()
        self.constants = template_constants(cq)
        self.facts = FactSide(cq.facts, background, cq.split, bucket, buckets)
        self.templates = {f.name: f.template for f in cq.facts}
        triggers = [c.trigger for f in cq.facts if isinstance(f, EventFact) for c in f.since + f.until]
        self.event_patterns = [wp.pattern for wp in cq.items if wp.kind == "event"]
        self.relevant_patterns = triggers + self.event_patterns
        self.partial = cq.split is not None and cq.split.merge and buckets > 1
        self.closed_in_step: dict[str, int] = {}  # per fact, the intervals the last `advance` closed
        self.unmatched_in_step: dict[str, int] = {}  # per event fact, its UNTILs the last `advance` matched to nothing

    def new_state(self) -> GeneralState:
        return GeneralState.new(self.cq.facts)

    def relevant(self, el: Elements, patterns) -> np.ndarray:
        """Elements some clause trigger or event pattern matches (the others never matter)."""
        keep = np.zeros(len(el), bool)
        for p in patterns:
            keep[match(p, el.spo)[0]] = True
        return keep

    def ingest(self, st: GeneralState, el: Elements, terms: Mapping[int, str]) -> None:
        """New elements (any order); those at or before the last reported tick are late: counted, not applied."""
        if st.last_tick is not None:
            late = el.ts <= st.last_tick
            st.counters["late_events"] += int(late.sum())
            el = el.take(np.nonzero(~late)[0])
        el = el.take(np.nonzero(self.relevant(el, self.relevant_patterns))[0])
        st.pending = Elements.concat([st.pending, el])
        st.dictionary.add_mapping({c: t for c, t in terms.items()})

    def ingest_unmatched(self, st: GeneralState, ts: np.ndarray, order: np.ndarray, hashes: np.ndarray) -> None:
        """Elements nothing matches (their hash only, `coding.row_hash` of their codes), kept until
        their tick so that a repeat counts as a duplicate; late ones are dropped (never applied)."""
        spo = np.zeros((len(ts), 3), np.int64)
        spo[:, 0] = hashes
        el = Elements(np.asarray(ts, np.int64), np.asarray(order, np.int64), spo)
        if st.last_tick is not None:
            el = el.take(np.nonzero(el.ts > st.last_tick)[0])
        st.unmatched = Elements.concat([st.unmatched, el])

    def count_unmatched_duplicates(self, st: GeneralState, upto: int) -> None:
        done = st.unmatched.ts <= upto
        final = st.unmatched.take(np.nonzero(done)[0])
        st.counters["duplicates"] += len(final) - len(final.in_time_order())
        st.unmatched = st.unmatched.take(np.nonzero(~done)[0])

    def advance(self, st: GeneralState, ticks: np.ndarray) -> BucketRows:
        """Rows at `ticks` (evenly spaced by the query's period, after the last reported tick), in
        steps of `tick_steps`: what one step materialises (solutions, per-tick contributions) is
        bounded by a step's elements and ticks, not by the micro-batch (a whole input in one)."""
        parts, closed, unmatched = [], Counter(), Counter()
        st.pending = st.pending.by_time()  # each step's final elements: a prefix (a view, not a copy)
        for step in tick_steps(st.pending.ts, ticks):
            parts.append(self.advance_step(st, step))
            closed.update(self.closed_in_step)
            unmatched.update(self.unmatched_in_step)
        self.closed_in_step, self.unmatched_in_step = dict(closed), dict(unmatched)
        st.dictionary.keep(st.codes())  # once per advance: the steps only read it
        return parts[0] if len(parts) == 1 else concat(parts, self.cq)

    def advance_step(self, st: GeneralState, ticks: np.ndarray) -> BucketRows:
        upto = int(ticks[-1])
        final, st.pending = st.pending.split(int(np.searchsorted(st.pending.ts, upto, side="right")))
        n = len(final)
        final = final.in_time_order()
        st.counters["duplicates"] += n - len(final)
        self.count_unmatched_duplicates(st, upto)
        terms = ChainedTerms(st.dictionary, self.bg_terms, self.constants)
        now, self.unmatched_in_step = self.facts.step(st.open, final, st.last_tick, terms)
        st.counters["unmatched_until"] += sum(self.unmatched_in_step.values())
        self.closed_in_step = {name: int((r.end < OPEN).sum()) for name, r in now.items()}  # final, dropped below
        view = {name: union([r, st.closed[name]], r.vars) for name, r in now.items()}
        events = Elements.concat([st.events, final.take(np.nonzero(self.relevant(final, self.event_patterns))[0])])
        sol = solutions(self.cq, view, events, self.bg, self.templates, terms, self.bucket, self.buckets)
        rows = self.rows(sol, ticks, view, terms)
        retain(self.cq, st, view, events, upto, self.templates)
        keep_open(st.open)
        st.last_tick = upto
        return rows

    def rows(self, sol: Relation, ticks: np.ndarray, view: dict[str, Relation], terms: ChainedTerms) -> BucketRows:
        cq = self.cq
        c = contributions(cq, sol, ticks, terms)
        agg = CellAggregator(c, ticks, cq.every, not cq.group_names and cq.q.while_ is None)
        cols = {a.alias: agg.column(a, v, self.partial, c.aged.get(i))
                for i, (a, v) in enumerate(zip(cq.q.aggregates, c.args))}
        codes = c.group_codes if len(c.group_codes) else np.zeros((1, len(cq.group_names)), np.int64)
        groups = codes[agg.gi].copy()
        tau = ticks[agg.ki]
        if any(cq.group_kind(g).startswith("while_") for g in cq.group_names):
            self.while_columns(groups, tau, scope_relation(cq, view, self.templates))
        term_cols = [j for j, g in enumerate(cq.group_names) if cq.group_kind(g) == "term"]
        mapping = terms.mapping(groups[:, term_cols].ravel().tolist()) if term_cols else {}
        out = BucketRows(tau, groups, agg.present_all[agg.report], cols, mapping, self.partial)
        return out if self.partial else empty_implicit(cq, out)

    def while_columns(self, groups: np.ndarray, tau: np.ndarray, scope: Relation) -> None:
        """The WHILE's ?SS / ?ES group columns at each row: the earliest start and the latest end
        (cut at tau) of the group's scope facts reported at tau (the oracle's `_while_bindings`)."""
        cq = self.cq
        key = cq.while_key
        cols = {k: groups[:, cq.group_names.index(k)] for k in key}
        cols["#r"] = np.arange(len(tau), dtype=np.int64)
        pairs = interval_join(relation(cols, tau, tau + 1, n=len(tau)), scope)
        r = column(pairs, "#r")
        ss = np.full(len(tau), np.iinfo(np.int64).max, np.int64)
        es = np.full(len(tau), np.iinfo(np.int64).min, np.int64)
        np.minimum.at(ss, r, column(pairs, "#ws"))
        np.maximum.at(es, r, column(pairs, "#we"))
        for j, g in enumerate(cq.group_names):
            kind = cq.group_kind(g)
            if kind == "while_start":
                groups[:, j] = ss
            elif kind == "while_end":
                groups[:, j] = np.minimum(es, tau)
