"""The shared windowed executor of the simulated-fact baselines (spec §7).

Time is cut into tumbling windows `(tau - w, tau]` at the ticks of spec §4.1. A window sees only
(1) the state its strategy hands over from the previous window — refresh bindings or the state-event
sequence, never a fact table — and (2) its own events, applied in stream order. From those it
rebuilds the facts that matter inside the window, evaluates the aggregate queries at `tau` and
hands the facts still valid at `tau` back to the strategy, which carries them on in its own form
and counts what that costs.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Protocol

from tefq.errors import TefqError
from tefq.oracle.facts import unify
from tefq.oracle.query import bound_ticks
from tefq.plan.logical import AggregateQuery, DerivedFact, Document, Fact, Var, WherePattern
from tefq.plan.ticks import run_ticks
from tefq.results import Metrics, QueryResult, order_key
from tefq.semantics.expressions import EvalError, aggregate, evaluate, filters_pass
from tefq.semantics.values import DateTime, to_term
from tefq.simulate.fastpath import compile_simple, start_terms
from tefq.simulate.matching import BackgroundIndex, ClauseIndex, instantiate, passes
from tefq.vocabulary import Element, Triple

Identity = tuple
Closed = tuple[Identity, int, int]  # identity, start, end


@dataclass
class WindowState:
    """What a window starts from: per fact, the facts valid at its open (identity -> start), and the
    closed facts a WHILE scope may still need."""

    open: dict[str, dict[Identity, int]]
    closed: dict[str, list[Closed]] = field(default_factory=dict)


@dataclass
class StateChange:
    """One change of a fact's status while a window is applied (the sequence simulation's event)."""

    fact: str
    identity: Identity
    opens: bool
    ts: int
    start: int


class Strategy(Protocol):
    name: str
    bindings: int

    def restore(self) -> WindowState: ...

    def carry(self, tau: int, state: WindowState, changes: list[StateChange]) -> None: ...


def prepare(elements) -> list[Element]:
    """Sort by time, keep stream order among ties, drop repeated elements (a stream is a set)."""
    seen: set[Element] = set()
    out: list[Element] = []
    for e in sorted(elements, key=lambda e: e[0]):
        e = (int(e[0]), e[1], e[2], e[3])
        if e not in seen:
            seen.add(e)
            out.append(e)
    return out


def check_supported(doc: Document, queries: list[AggregateQuery]) -> None:
    for q in queries:
        if q.while_ is not None and any(wp.kind == "event" for wp in q.where):
            raise TefqError(f"query {q.name}: simulating a WHILE scope over event patterns is not supported "
                            f"(the simulation would have to carry raw events across windows)",
                            file=doc.source, line=q.span.line, column=q.span.column)


class WindowedExecutor:
    def __init__(self, doc: Document, queries: list[AggregateQuery], background: BackgroundIndex,
                 strategy: Strategy, w: int) -> None:
        self.doc, self.queries, self.bg, self.strategy, self.w = doc, queries, background, strategy, w
        self.clauses = ClauseIndex(doc.facts)
        self.facts: list[Fact] = list(doc.facts)
        self.results = {q.name: QueryResult(q.name, tuple(p.name for p in q.select)) for q in queries}
        self.metrics = Metrics()
        # closed facts of these definitions may be needed by a WHILE scope in a later window
        self.while_needs = _while_needs(queries)
        self.plans = {q.name: compile_simple(doc, q) for q in queries}
        self.start_term = start_terms()

    # ------------------------------------------------------------ the loop
    def run(self, elements: list[Element], t0: int, max_ticks: int = 0) -> None:
        """Window by window; more than `max_ticks` windows (0: no bound) raise TooManyTicks first."""
        m = self.metrics
        m.events_in = len(elements)
        if not elements:
            return
        times = [e[0] for e in elements]
        ticks = run_ticks(times[0], times[-1], t0, self.w)
        bound_ticks(", ".join(q.name for q in self.queries), len(ticks), max_ticks, self.w, times[0], times[-1])
        lo = 0
        for tau in ticks:
            hi = bisect.bisect_right(times, tau, lo)
            self.window(tau, elements[lo:hi])
            lo = hi
            m.ticks += 1

    def window(self, tau: int, events: list[Element]) -> None:
        state = self.strategy.restore()
        opened = tau - self.w
        if getattr(self.strategy, "shares_state", False):  # native facts: the table itself
            live = state.open
            for f in self.facts:
                live.setdefault(f.name, {})
        else:  # a simulation: the carried bindings are re-emitted into this window
            live = {f.name: dict(state.open.get(f.name, {})) for f in self.facts}
        closed: dict[str, list[Closed]] = {f.name: [] for f in self.facts}
        changes: list[StateChange] = []
        self.apply_events(events, live, closed, changes)
        for f in self.facts:
            if isinstance(f, DerivedFact):
                self.derive(f, opened, state.open.get(f.name, {}), live, closed, changes)
        for q in self.queries:
            plan = self.plans[q.name]
            if plan is not None:
                self.results[q.name].rows.extend((tau, cells) for cells in plan.rows(tau, live))
            else:
                self.evaluate_query(q, tau, events, live, closed, state.closed)
        needed = self.needed_closed(tau, live, closed, state.closed)
        self.strategy.carry(tau, WindowState(live, needed), changes)

    # ------------------------------------------------------------ facts inside one window
    def apply_events(self, events: list[Element], live: dict[str, dict[Identity, int]],
                     closed: dict[str, list[Closed]], changes: list[StateChange]) -> None:
        """Apply the window's events in order (spec §3.1, as the oracle does: an element's closes
        before its opens; `[t, t)` is no fact; a rejoin at the quit's instant coalesces)."""
        m = self.metrics
        last_close: dict[tuple[str, Identity], int] = {}  # -> position in closed[name]
        for ts, s, p, o in events:
            for cf in self.clauses.lookup(p):
                closes, opens = cf.changes(s, p, o, self.bg)
                if not closes and not opens:
                    continue
                name = cf.fact.name
                facts, done = live[name], closed[name]
                for ident in closes:
                    start = facts.pop(ident, None)
                    if start is None:
                        m.unmatched_until += 1
                        continue
                    changes.append(StateChange(name, ident, False, ts, start))
                    if start < ts:
                        last_close[(name, ident)] = len(done)
                        done.append((ident, start, ts))
                        m.facts_closed += 1
                    else:  # opened and closed at the same instant: no fact at all
                        m.facts_created -= 1
                for ident in opens:
                    if ident in facts:
                        continue
                    pos = last_close.get((name, ident))
                    if pos is not None and done[pos] is not None and done[pos][2] == ts:
                        facts[ident] = done[pos][1]  # the fact meets itself: coalesce
                        done[pos] = None  # type: ignore[call-overload]
                        m.facts_closed -= 1
                    else:
                        facts[ident] = ts
                        m.facts_created += 1
                    changes.append(StateChange(name, ident, True, ts, facts[ident]))
        for name in closed:
            if any(c is None for c in closed[name]):
                closed[name] = [c for c in closed[name] if c is not None]

    def derive(self, f: DerivedFact, opened: int, carried: dict[Identity, int], live: dict[str, dict[Identity, int]],
               closed: dict[str, list[Closed]], changes: list[StateChange]) -> None:
        """Derivations inside the window: intersections of body facts' intervals, coalesced."""
        sols: list[tuple[dict, int, int | None]] = [({}, -(1 << 62), None)]
        for wp in f.body:
            nxt: list[tuple[dict, int, int | None]] = []
            if wp.kind == "background":
                for b, a, e in sols:
                    nxt.extend((nb, a, e) for nb in self.bg.match(wp.pattern, b))
            else:
                for b, a, e in sols:
                    for name in wp.facts:
                        fd = self.doc.fact(name)
                        for ident, s0, e0 in _intervals(live[name], closed[name]):
                            ns, ne = max(a, s0), _min_end(e, e0)
                            if ne is not None and ns >= ne:
                                continue
                            t = instantiate(fd.template, fd.identity, ident)
                            nb = unify(wp.pattern, t, b)
                            if nb is not None:
                                nxt.append((nb, ns, ne))
            sols = nxt
        by_id: dict[Identity, list[tuple[int, int | None]]] = {}
        for b, a, e in sols:
            if f.filters and not passes(f.filters, b):
                continue
            ident = tuple(b[v.name] for v in f.identity)
            by_id.setdefault(ident, []).append((a, e))
        m = self.metrics
        out_live: dict[Identity, int] = {}  # rebuilt: a derived fact holds only while its body does
        live[f.name] = out_live
        out_closed = closed[f.name]
        for ident, ivs in by_id.items():
            for a, e in _coalesce(ivs):
                continuing = a <= opened and ident in carried
                if continuing:
                    a = carried[ident]
                else:
                    m.facts_created += 1
                    changes.append(StateChange(f.name, ident, True, a, a))
                if e is None:
                    out_live[ident] = a
                else:
                    out_closed.append((ident, a, e))
                    m.facts_closed += 1
                    changes.append(StateChange(f.name, ident, False, e, a))

    def needed_closed(self, tau: int, live: dict[str, dict[Identity, int]], closed: dict[str, list[Closed]],
                      carried: dict[str, list[Closed]]) -> dict[str, list[Closed]]:
        """Closed facts a WHILE scope still open at `tau` overlaps: they must survive the window."""
        out: dict[str, list[Closed]] = {}
        for q, where_facts in self.while_needs:
            wp = q.while_
            assert wp is not None
            keys: dict[tuple, int] = {}  # shared binding -> earliest start of an open WHILE fact
            shared = [v.name for v in wp.pattern.variables() if any(v.name == x.name for pat in q.where
                                                                   for x in pat.pattern.variables())]
            for name in wp.facts:
                fd = self.doc.fact(name)
                for ident, start in live[name].items():
                    b = unify(wp.pattern, instantiate(fd.template, fd.identity, ident), {})
                    if b is not None:
                        k = tuple(b.get(v) for v in shared)
                        keys[k] = min(start, keys.get(k, start))
            for wpat, name in where_facts:
                fd = self.doc.fact(name)
                keep = out.setdefault(name, [])
                for c in list(carried.get(name, [])) + closed[name]:
                    b = unify(wpat.pattern, instantiate(fd.template, fd.identity, c[0]), {})
                    if b is None:
                        continue
                    k = tuple(b.get(v) for v in shared)
                    if k in keys and keys[k] < c[2] and c not in keep:
                        keep.append(c)
        return out

    # ------------------------------------------------------------ the query at tau
    def evaluate_query(self, q: AggregateQuery, tau: int, events: list[Element], live: dict[str, dict[Identity, int]],
                       closed: dict[str, list[Closed]], carried_closed: dict[str, list[Closed]]) -> None:
        opened = tau - self.w
        scopes = self.while_scopes(q, tau, live, closed) if q.while_ is not None else None
        # a solution: (binding, intervals of the non-CURRENT fact matches, for the WHILE scope test)
        sols: list[tuple[dict, tuple]] = [({}, ())]
        for wp in q.where:
            sols = self.join(wp, sols, tau, opened, events, live, closed, carried_closed, scopes is not None)
            if not sols:
                break
        if q.filters:
            sols = [s for s in sols if passes(q.filters, s[0])]
        group_vars = [v.name for v in q.group_by]
        groups: dict[tuple, list[dict]] = {}
        while_env: dict[tuple, dict] = {}
        if scopes is not None:
            shared, per_key = scopes
            for b, ivs in sols:
                key = tuple(b.get(v) for v in shared)
                scope = per_key.get(key)
                if scope is None or not all(_overlaps(iv, scope) for iv in ivs):
                    continue
                gkey = tuple(b.get(v) for v in group_vars)
                groups.setdefault(gkey, []).append(b)
                if q.while_.interval and gkey not in while_env:  # type: ignore[union-attr]
                    ss, es = q.while_.interval  # type: ignore[union-attr]
                    while_env[gkey] = {ss.name: DateTime(min(a for a, _, _ in scope)),
                                       es.name: DateTime(min(max(e for _, e, _ in scope), tau))}
        else:
            for b, _ in sols:
                groups.setdefault(tuple(b.get(v) for v in group_vars), []).append(b)
        if not groups and not group_vars and scopes is None:
            groups[()] = []  # SPARQL: no GROUP BY gives one row even over no solutions
        tick_rows = []
        for key, envs in groups.items():
            env: dict = {v: x for v, x in zip(group_vars, key) if x is not None}
            env.update(while_env.get(key, {}))
            for agg in q.aggregates:
                value = _aggregate(agg, envs)
                if value is None:
                    env.pop(agg.alias, None)
                else:
                    env[agg.alias] = value
            if q.having and not filters_pass(q.having, env):  # spec §4: HAVING drops the group
                continue
            cells: list[str | None] = []
            for p in q.select:
                if isinstance(p.expr, Var) and p.expr.name in group_vars:
                    v = env.get(p.expr.name)  # a group variable keeps its term as matched
                    cells.append(v if isinstance(v, str) or v is None else to_term(v))
                    continue
                try:
                    cells.append(to_term(evaluate(p.expr, env)))
                except EvalError:
                    cells.append(None)
            tick_rows.append(tuple(cells))
        tick_rows.sort(key=lambda cells: tuple(order_key(c) for c in cells))
        self.results[q.name].rows.extend((tau, cells) for cells in tick_rows)

    def join(self, wp: WherePattern, sols: list[tuple[dict, tuple]], tau: int, opened: int, events: list[Element],
             live: dict[str, dict[Identity, int]], closed: dict[str, list[Closed]],
             carried_closed: dict[str, list[Closed]], in_while: bool) -> list[tuple[dict, tuple]]:
        out: list[tuple[dict, tuple]] = []
        pat = wp.pattern
        if wp.kind == "background":
            for b, ivs in sols:
                out.extend((nb, ivs) for nb in self.bg.match(pat, b))
            return out
        if wp.kind == "event":
            for b, ivs in sols:
                for _, s, p, o in events:
                    nb = unify(pat, (s, p, o), b)
                    if nb is not None:
                        out.append((nb, ivs))
            return out
        sv, ev = (wp.interval[0].name, wp.interval[1].name) if wp.interval else (None, None)
        cands: list[tuple[Triple, int, int | None]] = []
        for name in wp.facts:
            fd = self.doc.fact(name)
            for ident, start in live[name].items():
                cands.append((instantiate(fd.template, fd.identity, ident), start, None))
            if wp.kind == "fact":
                extra = carried_closed.get(name, []) if in_while else []
                for ident, start, end in list(closed[name]) + list(extra):
                    if in_while or end > opened:
                        cands.append((instantiate(fd.template, fd.identity, ident), start, end))
        tau_dt = DateTime(tau)
        for b, ivs in sols:
            for t, start, end in cands:
                nb = unify(pat, t, b)
                if nb is None:
                    continue
                if sv is not None:
                    # as the oracle binds them: the start as a dateTime term, the end as a value
                    s_term = self.start_term(start)
                    e_dt = DateTime(end) if end is not None and end <= tau else tau_dt
                    if nb.get(sv, s_term) != s_term:
                        continue
                    nb[sv], nb[ev] = s_term, e_dt
                out.append((nb, ivs + ((start, end),) if wp.kind == "fact" else ivs))
        return out

    def while_scopes(self, q: AggregateQuery, tau: int, live: dict[str, dict[Identity, int]],
                     closed: dict[str, list[Closed]]) -> tuple[list[str], dict[tuple, list[tuple[int, int, bool]]]]:
        """Per WHILE binding of the group's variables: its scope, intervals `(a, b, b_inclusive)`."""
        wp = q.while_
        assert wp is not None
        group = {v.name for v in q.group_by}
        shared = [v.name for v in wp.pattern.variables() if v.name in group]
        opened = tau - self.w
        scopes: dict[tuple, list[tuple[int, int, bool]]] = {}
        for name in wp.facts:
            fd = self.doc.fact(name)
            items = [(ident, start, None) for ident, start in live[name].items()]
            items += [c for c in closed[name] if opened < c[2] <= tau]
            for ident, start, end in items:
                b = unify(wp.pattern, instantiate(fd.template, fd.identity, ident), {})
                if b is None:
                    continue
                iv = (start, tau, True) if end is None else (start, end, False)
                scopes.setdefault(tuple(b.get(v) for v in shared), []).append(iv)
        return shared, scopes


# ---------------------------------------------------------------- helpers
def _aggregate(agg, envs: list[dict]):
    """One aggregate over a group's solutions, with the oracle's set functions (None: no value)."""
    if agg.arg is None:  # COUNT(*): the solutions themselves
        if not agg.distinct:
            return len(envs)
        return len({tuple(sorted((k, to_term(v) if isinstance(v, DateTime) else v) for k, v in e.items()))
                    for e in envs})
    vals = []
    for env in envs:
        try:
            vals.append(evaluate(agg.arg, env))
        except EvalError:
            continue
    return aggregate(agg.func, vals, agg.distinct)


def _while_needs(queries: list[AggregateQuery]) -> list[tuple[AggregateQuery, list[tuple[WherePattern, str]]]]:
    out = []
    for q in queries:
        if q.while_ is None:
            continue
        needs = [(wp, name) for wp in q.where if wp.kind == "fact" for name in wp.facts]
        if needs:
            out.append((q, needs))
    return out


def _intervals(open_: dict[Identity, int], closed: list[Closed]):
    for ident, start in open_.items():
        yield ident, start, None
    yield from closed


def _min_end(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _coalesce(ivs: list[tuple[int, int | None]]) -> list[tuple[int, int | None]]:
    """Union of intervals `[a, e)` (e None = open): overlapping or meeting intervals merge."""
    ivs = sorted(ivs, key=lambda x: x[0])
    out: list[tuple[int, int | None]] = []
    for a, e in ivs:
        if out and (out[-1][1] is None or a <= out[-1][1]):
            pa, pe = out[-1]
            out[-1] = (pa, None if pe is None or e is None else max(pe, e))
        else:
            out.append((a, e))
    return out


def _overlaps(iv: tuple[int, int | None], scope: list[tuple[int, int, bool]]) -> bool:
    """Does the fact interval `[s, e)` meet one of the scope's intervals?"""
    s, e = iv
    for a, b, inclusive in scope:
        if (s <= b if inclusive else s < b) and (e is None or e > a):
            return True
    return False
