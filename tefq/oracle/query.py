"""Aggregate queries (spec §4): solutions, their lifetimes over ticks, groups, rows.

The definition: at tick `tau`, match the WHERE patterns against the facts cut at `tau`, the events
in the period (or WHILE scope) and the background; group; aggregate; project. Since what a fact or
event matches only depends on `tau` through simple inequalities, every solution of the WHERE join
is present at the ticks of a set of intervals of `tau` (its *activity*):

- `CURRENT` fact `[s, e)`:        `s <= tau < e`
- fact `[s, e)` in the period:     `s <= tau < e + d`        (overlaps `(tau - d, tau]`)
- event at `t` in the period:      `t <= tau < t + d`
- background triple:               always
- under WHILE, per scope fact `[ws, we)` of the solution's group (reported while
  `ws <= tau < we + d`): a fact must overlap `[ws, we)` and counts from `max(s, ws)`; an event
  must lie in `[ws, we)`; the solution's activity is the union over the scope facts.

The solutions are joined once over the whole history, then a sweep over the ticks adds and
removes them from their groups; a group's row is recomputed only when its solutions changed or
when they bind a fact's end `?E` (which is `tau` while the fact is open at `tau`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from bisect import bisect_left, insort
from functools import lru_cache
from typing import Any, Iterable, Iterator

from tefq.errors import TefqError
from tefq import progress
from tefq.semantics.expressions import EvalError, aggregate, compile_expr, evaluate, filters_pass, to_double
from tefq.oracle.facts import INF, Binding, FactStore, TripleIndex, coalesce, unify
from tefq.semantics.values import DateTime, datetime_term, is_numeric, to_term, to_value
from tefq.plan.logical import AggregateQuery, Call, Expr, Var, WherePattern
from tefq.plan.ticks import tick_index_at_or_after, tick_range
from tefq.results import QueryResult, Row, order_key
from tefq.vocabulary import DEFAULT_MAX_TICKS



class TooManyTicks(TefqError):
    """A query would report rows at more than `max_ticks` ticks: the events span an absurd time
    range (a stray timestamp) or the bound is too small. `tefq.oracle.run` names the row."""

    def __init__(self, query: str, max_ticks: int, every_ms: int, first_t: int, last_t: int) -> None:
        span = (last_t - first_t) // every_ms + 1
        super().__init__(f"query {query} would report rows at more than {max_ticks:,} ticks (--max-ticks): its "
                         f"events span {span:,} ticks of {every_ms} ms, from {first_t} to {last_t} ms")
        self.query, self.max_ticks = query, max_ticks

def bound_ticks(query: str, count: int, max_ticks: int, every_ms: int, first_t: int, last_t: int) -> None:
    """For runs that visit every tick, with rows or not (windowed queries: every window closes;
    simulations: every window re-sends its facts): more than `max_ticks` (0: no bound) raises
    TooManyTicks before the first is visited."""
    if count > max_ticks > 0:
        raise TooManyTicks(query, max_ticks, every_ms, first_t, last_t)


_ERROR = object()
_DT_SUFFIX = "^^<http://www.w3.org/2001/XMLSchema#dateTime>"  # an aggregate argument that raised: skipped


@lru_cache(maxsize=1 << 16)
def cell_key(cell: str | None) -> tuple:
    """`tefq.results.order_key`, memoised: result cells repeat from tick to tick."""
    return order_key(cell)


def expr_vars(e: Expr | None) -> set[str]:
    if e is None:
        return set()
    if isinstance(e, Var):
        return {e.name}
    if isinstance(e, Call):
        out: set[str] = set()
        for a in e.args:
            out |= expr_vars(a)
        return out
    return set()


@dataclass
class Solution:
    binding: Binding  # pattern variables and interval starts, as N-Triples terms
    ends: tuple[tuple[str, float], ...]  # interval end variables: (name, fact end); ?E = min(end, tau)
    items: list[tuple[str, int, float]]  # (kind, start, end) of each matched fact/event (event: t, t)
    activity: list[tuple[float, float]] = field(default_factory=list)
    cache: tuple | None = None  # (aggregate args or None if filtered out,) once no ?E can change
    last_end: float = -INF  # the latest end bound by an ?E: from then on the solution is settled
    _env: dict | None = None

    def env(self, tau: int, tau_dt: DateTime | None = None) -> dict[str, Any]:
        """The variables at tau. With ends, one dict per solution is reused from tick to tick
        (its ?E entries are overwritten): callers must not keep it."""
        if not self.ends:
            return self.binding
        env = self._env
        if env is None:
            env = self._env = {k: to_value(v) if v.__class__ is str and v.endswith(_DT_SUFFIX) else v
                               for k, v in self.binding.items()}
        if tau_dt is None:
            tau_dt = DateTime(tau)
        for name, end in self.ends:
            env[name] = tau_dt if end > tau else DateTime(int(end))
        return env

    def settled(self, tau: int) -> bool:
        return self.last_end <= tau


def covered_ticks(changes: dict[int, list[tuple[int, "Solution"]]], k_last: int) -> int:
    """How many ticks up to `k_last` have at least one solution active, from the change schedule
    (tick index -> joins +1 and leaves -1): the ticks the sweep visits with a group, counted
    without visiting them."""
    covered, active, since = 0, 0, 0
    for k in sorted(changes):
        if active > 0:
            covered += k - since
        active += sum(sign for sign, _ in changes[k])
        since = k
    return covered + (k_last + 1 - since if active > 0 else 0)


class _ShownRows:
    """The rows reported at the current tick, kept in output order (spec §5) as groups change:
    `ordered` holds (sort key, group number, cells), `shown` each group's entry in it."""

    def __init__(self) -> None:
        self.shown: dict[tuple, tuple] = {}
        self.ordered: list[tuple] = []
        self.numbers: dict[tuple, int] = {}

    def update(self, key: tuple, row: tuple | None) -> None:
        """Group `key` now has `row` ((sort key, cells)), or none."""
        old = self.shown.pop(key, None)
        if old is not None:
            i = bisect_left(self.ordered, old)
            if i < len(self.ordered) and self.ordered[i] is old:
                del self.ordered[i]
            else:  # a NaN in the key defeats bisection: find it by identity
                self.ordered.remove(old)
        if row is not None:
            entry = (row[0], self.numbers.setdefault(key, len(self.numbers)), row[1])
            insort(self.ordered, entry)
            self.shown[key] = entry


class QueryEvaluator:
    def __init__(self, q: AggregateQuery, store: FactStore, events: TripleIndex,
                 event_times: dict[tuple[str, str, str], list[int]], bg: TripleIndex) -> None:
        self.q = q
        self.store = store
        self.events = events
        self.event_times = event_times
        self.bg = bg
        self.d = q.every_ms
        end_vars = {wp.interval[1].name for wp in q.where if wp.interval}
        self.dynamic_filters = [f for f in q.filters if expr_vars(f) & end_vars]
        self.static_filters = [f for f in q.filters if not expr_vars(f) & end_vars]
        self.group_names = [v.name for v in q.group_by]
        self.select_fns = [compile_expr(p.expr) for p in q.select]
        self.agg_fns = [None if a.arg is None else compile_expr(a.arg) for a in q.aggregates]
        self.regroup = bool(set(self.group_names) & end_vars)  # grouping by an end: keys change with tau
        self.while_vars: tuple[str, str] | None = None
        if q.while_ is not None and q.while_.interval:
            names = {q.while_.interval[0].name, q.while_.interval[1].name}
            used = set().union(*(expr_vars(p.expr) for p in q.select)) if q.select else set()
            if names & used:
                self.while_vars = (q.while_.interval[0].name, q.while_.interval[1].name)

    # ------------------------------------------------------------ the join over all history
    def _candidates(self, wp: WherePattern, b: Binding) -> Iterator[tuple[Binding, str, int, float]]:
        """(binding, kind, start, end) for every item `wp` can match; events give (t, t)."""
        if wp.kind == "background":
            for b2 in self.bg.match(wp.pattern, b):
                yield b2, "background", -INF, INF  # type: ignore[misc]
        elif wp.kind == "event":
            for triple in self.events.lookup(wp.pattern, b):
                b2 = unify(wp.pattern, triple, b)
                if b2 is not None:
                    for t in self.event_times[triple]:
                        yield b2, "event", t, t
        else:
            for name in wp.facts:
                table = self.store.tables[name]
                for triple in table.index().lookup(wp.pattern, b):
                    b2 = unify(wp.pattern, triple, b)
                    if b2 is not None:
                        for s, e in table.by_triple[triple]:
                            yield b2, wp.kind, s, e

    def _plain_activity(self, kind: str, s: float, e: float) -> tuple[float, float]:
        if kind == "current":
            return s, e
        if kind == "fact":
            return s, e + self.d
        if kind == "event":
            return s, s + self.d
        return -INF, INF

    def solutions(self) -> Iterator[Solution]:
        order = self._join_order()
        use_while = self.q.while_ is not None

        def go(i: int, b: Binding, ends: list, items: list, lo: float, hi: float) -> Iterator[Solution]:
            if i == len(order):
                yield Solution(b, tuple(ends), items, [(lo, hi)], None, max((e for _, e in ends), default=-INF))
                return
            wp = order[i]
            for b2, kind, s, e in self._candidates(wp, b):
                if use_while and kind != "current":
                    lo2, hi2 = lo, hi
                else:
                    a, z = self._plain_activity(kind, s, e)
                    lo2, hi2 = max(lo, a), min(hi, z)
                    if lo2 >= hi2:
                        continue
                ends2 = ends
                if wp.interval is not None and kind in ("current", "fact"):
                    sv, ev = wp.interval[0].name, wp.interval[1].name
                    st = datetime_term(int(s))
                    if b2.get(sv, st) != st:
                        continue
                    b2 = dict(b2)
                    b2[sv] = st
                    ends2 = ends + [(ev, e)]
                yield from go(i + 1, b2, ends2, items + [(kind, s, e)], lo2, hi2)

        for sol in go(0, {}, [], [], -INF, INF):
            if not filters_pass(self.static_filters, sol.binding):
                continue
            if use_while:
                sol.activity = self._while_activity(sol)
                if not sol.activity:
                    continue
            yield sol

    def _join_order(self) -> list[WherePattern]:
        """Greedy: next the pattern with the most variables already bound (facts before events)."""
        rest = list(self.q.where)
        bound: set[str] = set()
        out: list[WherePattern] = []
        pref = {"current": 0, "fact": 1, "background": 2, "event": 3}
        while rest:
            best = min(rest, key=lambda wp: (-len({v.name for v in wp.pattern.variables()} & bound),
                                             pref[wp.kind], rest.index(wp)))
            rest.remove(best)
            out.append(best)
            bound |= {v.name for v in best.pattern.variables()}
        return out

    # ------------------------------------------------------------ WHILE scopes
    def _scopes(self) -> dict[tuple, list[tuple[int, float]]]:
        if not hasattr(self, "_scope_cache"):
            wp = self.q.while_
            shared = [n for n in self.group_names if n in {v.name for v in wp.pattern.variables()}]
            self._shared = shared
            scopes: dict[tuple, list[tuple[int, float]]] = {}
            for name in wp.facts:
                table = self.store.tables[name]
                for triple, ivs in table.by_triple.items():
                    b = unify(wp.pattern, triple, {})
                    if b is not None:
                        scopes.setdefault(tuple(b[n] for n in shared), []).extend(ivs)
            self._scope_cache = {k: sorted(set(v)) for k, v in scopes.items()}
        return self._scope_cache

    def _while_activity(self, sol: Solution) -> list[tuple[float, float]]:
        scopes = self._scopes()
        key = tuple(sol.binding.get(n) for n in self._shared)
        out = []
        for ws, we in scopes.get(key, ()):
            lo, hi = ws, we + self.d
            for kind, s, e in sol.items:
                if kind == "current":
                    lo, hi = max(lo, s), min(hi, e)
                elif kind == "fact":
                    if not (s < we and e > ws):
                        hi = lo
                    lo = max(lo, s)
                elif kind == "event":
                    if not (ws <= s < we):
                        hi = lo
                    lo = max(lo, s)
                if lo >= hi:
                    break
            if lo < hi:
                out.append((lo, hi))
        return coalesce(out)

    def _while_bindings(self, key: tuple, tau: int) -> dict[str, Any]:
        """?SS, ?ES of a group at tau: the earliest start and the latest end (cut at tau) of the
        scope facts that make the group reported."""
        scopes = self._scopes()
        wk = tuple(key[self.group_names.index(n)] for n in self._shared)
        live = [(ws, we) for ws, we in scopes.get(wk, ()) if ws <= tau < we + self.d]
        if not live or self.while_vars is None:
            return {}
        return {self.while_vars[0]: DateTime(int(min(ws for ws, _ in live))),
                self.while_vars[1]: DateTime(int(min(max(we for _, we in live), tau)))}

    # ------------------------------------------------------------ groups and rows
    def _group_key(self, sol: Solution, tau: int) -> tuple:
        if not self.regroup:
            return tuple(sol.binding.get(n) for n in self.group_names)
        env = sol.env(tau)
        return tuple(to_term(v) if isinstance(v, DateTime) else v for v in (env.get(n) for n in self.group_names))

    def _args(self, sol: Solution, tau: int, tau_dt: DateTime) -> tuple | None:
        """(aggregate argument values) of one solution at tau, or None if a dynamic filter drops it."""
        cache = sol.cache
        if cache is not None:
            return cache[0]
        env = sol.env(tau, tau_dt)
        result: tuple | None = None
        if not self.dynamic_filters or filters_pass(self.dynamic_filters, env):
            args: list[Any] = []
            for fn in self.agg_fns:
                if fn is None:  # COUNT(*): the solution itself
                    args.append(tuple(sorted((k, to_term(v) if isinstance(v, DateTime) else v)
                                             for k, v in env.items())))
                    continue
                try:
                    args.append(fn(env))
                except EvalError:
                    args.append(_ERROR)
            result = tuple(args)
        if sol.last_end <= tau:  # settled: no ?E changes any more
            sol.cache = (result,)
        return result

    def group_row(self, key: tuple, sols: Iterable[Solution], tau: int) -> tuple | None:
        """(order keys, SELECT cells) of one group at tau, or None if no solution survives the filters
        or the group fails HAVING."""
        tau_dt = DateTime(tau)
        args = self._args
        per_sol = [a for a in [args(s, tau, tau_dt) for s in sols] if a is not None]
        if not per_sol:  # SPARQL: the implicit group is a row even over no solutions
            empty = self._empty_implicit_row() if self.implicit_group() and self.q.while_ is None else None
            return None if empty is None else (tuple(cell_key(c) for c in empty), empty)
        env: dict[str, Any] = {n: k for n, k in zip(self.group_names, key) if k is not None}
        if self.while_vars is not None:
            env.update(self._while_bindings(key, tau))
        for i, agg in enumerate(self.q.aggregates):
            vals = [a[i] for a in per_sol if a[i] is not _ERROR]
            if agg.arg is None:
                value: Any = len(set(vals)) if agg.distinct else len(vals)
            else:
                value = aggregate(agg.func, vals, agg.distinct)
            if value is None:
                env.pop(agg.alias, None)
            else:  # env strings are N-Triples terms: a string value goes in as its term
                env[agg.alias] = to_term(value) if isinstance(value, str) else value
        if self.q.having and not filters_pass(self.q.having, env):  # spec §4: HAVING drops the group
            return None
        cells: list[str | None] = []
        keys: list[tuple] = []
        for p, fn in zip(self.q.select, self.select_fns):
            if isinstance(p.expr, Var) and p.expr.name in self.group_names:
                v = env.get(p.expr.name)  # a group variable keeps its term as matched
                cell = v if isinstance(v, str) or v is None else to_term(v)
                cells.append(cell)
                keys.append(cell_key(cell))
                continue
            try:
                value = fn(env)
            except EvalError:
                cells.append(None)
                keys.append(cell_key(None))
                continue
            cell = to_term(value)
            cells.append(cell)
            # order_key of a canonical number is (3, its value, term): no need to re-parse it
            keys.append((3, to_double(value), cell) if is_numeric(value) else cell_key(cell))
        return tuple(keys), tuple(cells)

    def implicit_group(self) -> bool:
        """No GROUP BY: SPARQL's single implicit group, reported at every tick (COUNT 0 when empty)."""
        return not self.q.group_by

    # ------------------------------------------------------------ the sweep
    def run(self, first_t: int, last_t: int, t0: int, max_ticks: int = DEFAULT_MAX_TICKS) -> tuple[QueryResult, int]:
        """Rows at every tick from the first to the last event. Ticks where no group exists are
        skipped, so the cost follows the ticks that have rows; more than `max_ticks` ticks with a
        group (0: no bound) raise TooManyTicks before the first row is made."""
        q, d = self.q, self.d
        result = QueryResult(q.name, tuple(p.name for p in q.select))
        k_first, k_last = tick_range(first_t, last_t, t0, d)
        changes = self._change_schedule(k_first, k_last, t0)
        implicit_empty = self.implicit_group() and q.while_ is None
        # Counted before the sweep, which holds every reported row: a stray timestamp keeping a
        # fact open would otherwise fill memory with max_ticks x groups rows before the bound trips.
        with_groups = k_last - k_first + 1 if implicit_empty else covered_ticks(changes, k_last)
        if with_groups > max_ticks > 0:
            raise TooManyTicks(q.name, max_ticks, d, first_t, last_t)
        groups: dict[tuple, dict[int, Solution]] = {}
        volatile: dict[tuple, int] = {}  # group -> number of its solutions that bind an end ?E
        rows = _ShownRows()
        active: dict[int, Solution] = {}
        change_ticks = sorted(changes)
        ci = 0
        k = k_first
        shown = progress.start(f"{q.name}: ticks", k_last - k_first + 1)
        while k <= k_last:
            tau = t0 + k * d
            dirty = self._apply(changes.get(k, ()), groups, volatile, active, tau)
            if self.regroup:
                groups = {}
                for sol in active.values():
                    groups.setdefault(self._group_key(sol, tau), {})[id(sol)] = sol
                dirty = set(groups) | set(rows.shown)
            elif self.while_vars is not None:
                dirty = set(groups) | dirty
            else:
                dirty |= volatile.keys()
            for key in dirty:
                members = groups.get(key)
                rows.update(key, self.group_row(key, members.values(), tau) if members else None)
            if rows.ordered:
                result.rows.extend([(tau, e[2]) for e in rows.ordered])
            elif implicit_empty and not groups and (empty := self._empty_implicit_row()) is not None:
                result.rows.append((tau, empty))  # SPARQL: no GROUP BY gives one row even over no solutions
            k += 1
            shown.advance(k - k_first)
            if not groups and not implicit_empty:  # nothing to report until the next change
                while ci < len(change_ticks) and change_ticks[ci] < k:
                    ci += 1
                if ci < len(change_ticks):
                    k = max(k, change_ticks[ci])
                else:
                    break
        shown.close()
        return result, k_last - k_first + 1

    def rows_at(self, instants: Iterable[int]) -> QueryResult:
        """Rows as of each instant `T`, as if `T` were a tick (spec §12): the period `(T - d, T]`,
        CURRENT at `T`, open ends bound to `T`. The history is joined once for all instants."""
        q = self.q
        result = QueryResult(q.name, tuple(p.name for p in q.select))
        solutions = list(self.solutions())
        for tau in sorted(set(instants)):  # ascending: a settled solution's cache stays valid
            groups: dict[tuple, list[Solution]] = {}
            for sol in solutions:
                if any(lo <= tau < hi for lo, hi in sol.activity):
                    groups.setdefault(self._group_key(sol, tau), []).append(sol)
            rows = [r for r in (self.group_row(k, sols, tau) for k, sols in groups.items()) if r is not None]
            result.rows.extend((tau, cells) for _, cells in sorted(rows, key=lambda r: r[0]))
            if not groups and self.implicit_group() and q.while_ is None and (empty := self._empty_implicit_row()):
                result.rows.append((tau, empty))
        return result

    def _change_schedule(self, k_first: int, k_last: int, t0: int) -> dict[int, list[tuple[int, Solution]]]:
        """Tick index -> the solutions that join (+1) or leave (-1) their group there."""
        d = self.d
        changes: dict[int, list[tuple[int, Solution]]] = {}
        for sol in self.solutions():
            for lo, hi in sol.activity:
                ka = k_first if lo == -INF else max(k_first, tick_index_at_or_after(int(lo), t0, d))
                kb = k_last + 1 if hi == INF else min(k_last + 1, tick_index_at_or_after(int(hi), t0, d))
                if ka < kb:
                    changes.setdefault(ka, []).append((1, sol))
                    if kb <= k_last:
                        changes.setdefault(kb, []).append((-1, sol))
        return changes

    def _apply(self, changes: Iterable[tuple[int, Solution]], groups: dict[tuple, dict[int, Solution]],
               volatile: dict[tuple, int], active: dict[int, Solution], tau: int) -> set[tuple]:
        """One tick's changes applied to the groups (to `active` when the groups are rebuilt at
        every tick); returns the groups whose row must be recomputed."""
        dirty: set[tuple] = set()
        for sign, sol in changes:
            if self.regroup:
                if sign > 0:
                    active[id(sol)] = sol
                else:
                    active.pop(id(sol), None)
                continue
            key = self._group_key(sol, tau)
            members = groups.setdefault(key, {})
            if sign > 0:
                members[id(sol)] = sol
            else:
                members.pop(id(sol), None)
            if sol.ends:
                volatile[key] = volatile.get(key, 0) + sign
                if not volatile[key]:
                    del volatile[key]
            dirty.add(key)
            if not members:
                del groups[key]
        return dirty

    def _empty_implicit_row(self) -> tuple | None:
        """The implicit group over no solutions: COUNT/SUM 0, AVG/MIN/MAX unbound (SPARQL 1.1);
        None if it fails HAVING."""
        env: dict[str, Any] = {}
        for agg in self.q.aggregates:
            value = 0 if agg.func in ("COUNT", "SUM") else None
            if value is not None:
                env[agg.alias] = value
        if self.q.having and not filters_pass(self.q.having, env):
            return None
        cells: list[str | None] = []
        for p in self.q.select:
            try:
                cells.append(to_term(evaluate(p.expr, env)))
            except EvalError:
                cells.append(None)
        return tuple(cells)


__all__ = ["QueryEvaluator", "tick_range", "Row", "TooManyTicks", "bound_ticks"]
