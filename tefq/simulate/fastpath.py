"""A compiled evaluation for the common query shape, so that simulations stay O(bindings).

The use-cases' queries (UC1, UC2 and their kin) are one `CURRENT` pattern over facts, grouped by
variables of that pattern, with aggregates over pattern variables, interval variables or
`DURATION(?S, ?E)`. For that shape a tick's rows are one pass over the facts valid at `tau`:
no binding dictionaries, no generic expression calls per fact. The aggregate values and the
cells still go through the oracle's set functions and canonicaliser, so rows are identical to the
generic path's (tests check both against the oracle). Anything else returns None: generic path.
"""
from __future__ import annotations

import math
from typing import Any, Callable

from tefq.semantics.expressions import EvalError, aggregate, evaluate
from tefq.semantics.values import DateTime, datetime_term, to_term, to_value
from tefq.plan.logical import AggregateQuery, Call, Document, Pattern, Term, Var
from tefq.results import order_key

Identity = tuple


class FactMatcher:
    """A pattern compiled against one fact template: which identities match, and what each
    pattern variable is bound to (an identity position or a template constant)."""

    def __init__(self, pattern: Pattern, template: Pattern, identity: tuple[Var, ...]) -> None:
        pos = {v.name: i for i, v in enumerate(identity)}
        self.never = False
        self.checks: list[tuple[int, str]] = []  # identity[i] must equal a constant
        self.same: list[tuple[int, int]] = []  # identity[i] == identity[j] (a variable used twice)
        self.binds: dict[str, tuple[str, Any]] = {}  # var -> ("id", i) | ("const", term)
        for pn, tn in zip((pattern.s, pattern.p, pattern.o), (template.s, template.p, template.o)):
            if isinstance(tn, Term):
                if isinstance(pn, Term):
                    self.never |= pn.nt != tn.nt
                else:
                    self._bind(pn.name, ("const", tn.nt))
            else:
                i = pos[tn.name]
                if isinstance(pn, Term):
                    self.checks.append((i, pn.nt))
                else:
                    self._bind(pn.name, ("id", i))

    def _bind(self, name: str, how: tuple[str, Any]) -> None:
        have = self.binds.get(name)
        if have is None:
            self.binds[name] = how
        elif have[0] == "id" and how[0] == "id":
            self.same.append((have[1], how[1]))
        elif have != how:
            self.never = True if have[0] == how[0] == "const" else self.never
            if have[0] != how[0]:  # an identity position must equal a constant
                i, c = (have[1], how[1]) if have[0] == "id" else (how[1], have[1])
                self.checks.append((i, c))

    def matches(self, ident: Identity) -> bool:
        if self.never:
            return False
        for i, c in self.checks:
            if ident[i] != c:
                return False
        for i, j in self.same:
            if ident[i] != ident[j]:
                return False
        return True

    def getter(self, name: str) -> Callable[[Identity], str] | None:
        how = self.binds.get(name)
        if how is None:
            return None
        if how[0] == "const":
            c = how[1]
            return lambda ident: c
        i = how[1]
        return lambda ident: ident[i]


class SimplePlan:
    """UC1/UC2-shaped query: rows at `tau` from the facts valid at `tau` in one pass."""

    def __init__(self, q: AggregateQuery, matchers: dict[str, FactMatcher], keyers: dict[str, Callable],
                 args: list[tuple[str, Any]]) -> None:
        self.q, self.matchers, self.keyers, self.args = q, matchers, keyers, args
        self.group_vars = [v.name for v in q.group_by]
        # rows differ in their group key: once a prefix of the SELECT holds every group variable,
        # ordering by that prefix alone is the full spec §5 order (no ties remain)
        self.sort_prefix = len(q.select)
        seen: set[str] = set()
        for i, p in enumerate(q.select):
            if not (isinstance(p.expr, Var) and p.expr.name in self.group_vars):
                break
            seen.add(p.expr.name)
            if seen == set(self.group_vars):
                self.sort_prefix = i + 1
                break
        self.order_keys: dict[str | None, tuple] = {}
        self.int_terms: dict[int, str] = {}
        self.cells = [("group", p.expr.name) if isinstance(p.expr, Var) and p.expr.name in self.group_vars
                      else ("value", p.expr.name) if isinstance(p.expr, Var) else ("expr", p.expr)
                      for p in q.select]

    def rows(self, tau: int, live: dict[str, dict[Identity, int]]) -> list[tuple]:
        q = self.q
        # one pass: the starts of each group's facts (everything else derives from them)
        groups: dict[tuple, list[tuple[Identity, int]]] = {}
        for name, m in self.matchers.items():
            if m.never:
                continue
            keyer = self.keyers[name]
            plain = not (m.checks or m.same)
            for item in live.get(name, {}).items():
                if not plain and not m.matches(item[0]):
                    continue
                key = keyer(item[0])
                members = groups.get(key)
                if members is None:
                    groups[key] = [item]
                else:
                    members.append(item)
        if not groups and not self.group_vars:
            groups[()] = []
        out = []
        for key, members in groups.items():
            env: dict[str, Any] = {v: k for v, k in zip(self.group_vars, key)}
            for agg, (kind, x) in zip(q.aggregates, self.args):
                value = self._aggregate(agg, kind, x, members, tau)
                if value is None:
                    env.pop(agg.alias, None)
                else:
                    env[agg.alias] = value
            cells: list[str | None] = []
            for kind, x in self.cells:
                if kind == "group":
                    cells.append(env.get(x))
                elif kind == "value" and x in env:
                    cells.append(self._term(env[x]))
                else:
                    try:
                        cells.append(self._term(evaluate(x if kind == "expr" else Var(x), env)))
                    except EvalError:
                        cells.append(None)
            out.append(tuple(cells))
        if len(out) > 1:
            out.sort(key=self._sort_key)
        return out

    def _term(self, v: Any) -> str:
        if type(v) is int:  # counts: few distinct values, written over and over
            t = self.int_terms.get(v)
            if t is None:
                t = self.int_terms[v] = to_term(v)
            return t
        return to_term(v)

    def _sort_key(self, cells: tuple) -> tuple:
        keys = self.order_keys
        out = []
        for c in cells[:self.sort_prefix]:
            k = keys.get(c)
            if k is None:
                k = order_key(c)
                if len(keys) < 1 << 20:
                    keys[c] = k
            out.append(k)
        return tuple(out)

    @staticmethod
    def _aggregate(agg, kind: str, x: Any, members: list[tuple[Identity, int]], tau: int) -> Any:
        if kind == "count":
            return len(members)
        if kind == "duration":
            values: list[Any] = [(tau - start) / 1000.0 for _, start in members]
            if agg.func == "SUM" and not agg.distinct:
                return math.fsum(values)  # what the oracle's exact sum of doubles is
        elif kind == "var":
            values = [to_value(x(ident)) for ident, _ in members]
        elif kind == "start":
            values = [DateTime(start) for _, start in members]
        else:
            values = [DateTime(tau)] * len(members)
        return aggregate(agg.func, values, agg.distinct)


def compile_simple(doc: Document, q: AggregateQuery) -> SimplePlan | None:
    if q.while_ is not None or q.filters or q.having or len(q.where) != 1 or q.where[0].kind != "current":
        return None
    wp = q.where[0]
    sv, ev = (wp.interval[0].name, wp.interval[1].name) if wp.interval else (None, None)
    pattern_vars = {v.name for v in wp.pattern.variables()}
    if sv in pattern_vars or ev in pattern_vars or (sv is not None and sv == ev):
        return None
    matchers: dict[str, FactMatcher] = {}
    keyers: dict[str, Callable] = {}
    group = [v.name for v in q.group_by]
    for name in wp.facts:
        fd = doc.fact(name)
        m = FactMatcher(wp.pattern, fd.template, fd.identity)
        getters = [m.getter(g) for g in group]
        if any(g is None for g in getters):
            return None
        matchers[name] = m
        keyers[name] = _keyer(getters)  # type: ignore[arg-type]
    args: list[tuple[str, Any]] = []
    for agg in q.aggregates:
        a = agg.arg
        if a is None:
            if agg.distinct:
                return None
            args.append(("count", None))
        elif isinstance(a, Var) and a.name in pattern_vars:
            if agg.func == "COUNT" and not agg.distinct:
                args.append(("count", None))
                continue
            if len(matchers) != 1:  # one getter per fact definition: not worth it
                return None
            args.append(("var", next(iter(matchers.values())).getter(a.name)))
        elif isinstance(a, Var) and a.name in (sv, ev):
            args.append(("start" if a.name == sv else "end", None))
        elif (isinstance(a, Call) and a.op == "DURATION" and len(a.args) == 2 and a.args[0] == Var(sv or "")
              and a.args[1] == Var(ev or "") and sv is not None):
            args.append(("duration", None))
        else:
            return None
    return SimplePlan(q, matchers, keyers, args)


def _keyer(getters: list[Callable[[Identity], str]]) -> Callable[[Identity], tuple]:
    if len(getters) == 1:
        g = getters[0]
        return lambda ident: (g(ident),)
    return lambda ident: tuple(g(ident) for g in getters)


def start_terms() -> Callable[[int], str]:
    """A memo of `datetime_term`: a fact's start is rebound at every tick it is valid."""
    cache: dict[int, str] = {}

    def term(ms: int) -> str:
        t = cache.get(ms)
        if t is None:
            t = cache[ms] = datetime_term(ms)
        return t
    return term
