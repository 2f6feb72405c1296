"""The physical plan of fact aggregates beyond one CURRENT event fact: derived facts (spec §3.2),
fact patterns without CURRENT and WHILE scopes (§4.2-4.3), run by `tefq.spark.operators.fact`.

Recognised shape (any names): the query's WHERE is one fact pattern, with or without CURRENT,
over one fact; that fact and the WHILE fact are event facts (single triple pattern clauses) or
derived facts whose body is a conjunction of fact patterns over such facts; GROUP BY variables of
the pattern; COUNT [DISTINCT] ?v, COUNT(*), SUM / AVG of DURATION(?S, ?E) of the interval;
`+ - * /` in SELECT. Anything else raises `Unsupported` (the planner then uses the fallback).
"""
from __future__ import annotations

from dataclasses import dataclass

from tefq.plan.logical import AggregateQuery, DerivedFact, Document, EventFact, Expr, Pattern, Term, Var
from tefq.spark.physical import (AggPlan, ClausePlan, _check_expr, _clause, _is_duration_of, _rename_expr,
                                 _unsupported)


@dataclass(frozen=True)
class EventFactPlan:
    name: str
    identity: tuple[str, ...]  # template variables, identity order
    clauses: tuple[ClausePlan, ...]  # UNTIL clauses first: within one element closes come first (§3.1)
    terms: tuple[int, ...]  # identity positions whose terms the output needs


@dataclass(frozen=True)
class BodyPlan:
    fact: str
    names: tuple[str, ...]  # per identity variable of `fact`: the body variable it binds


@dataclass(frozen=True)
class DerivedFactPlan:
    name: str
    identity: tuple[str, ...]
    body: tuple[BodyPlan, ...]


@dataclass(frozen=True)
class ScopePlan:
    """WHILE: the scope fact and, per shared group variable, its column there and in the matched fact."""

    fact: str
    key: tuple[int, ...]
    query_key: tuple[int, ...]
    shared: tuple[str, ...]


@dataclass(frozen=True)
class FactAggregatePlan:
    """Aggregates at ticks over one fact pattern (CURRENT or not) of an event or derived fact,
    optionally under WHILE. One bucket: see `partitioning`."""

    query: str
    columns: tuple[str, ...]
    facts: tuple[EventFactPlan | DerivedFactPlan, ...]  # dependency order
    fact: str  # the matched fact
    current: bool
    group_vars: tuple[str, ...]  # the matched fact's template variables
    group_cols: tuple[int, ...]
    aggregates: tuple[AggPlan, ...]
    distinct_cols: tuple[int, ...]  # per aggregate: the COUNT DISTINCT column, else -1
    projections: tuple[tuple[str, Expr], ...]
    while_: ScopePlan | None
    every_ms: int
    partitioning: str
    buckets: int = 1

    @property
    def event_facts(self) -> tuple[EventFactPlan, ...]:
        return tuple(f for f in self.facts if isinstance(f, EventFactPlan))

    def explain(self) -> str:
        what = "CURRENT pattern" if self.current else "fact pattern"
        lines = [f"SparkQuery {self.query}: fact aggregate ({what} over {self.fact}"
                 f"{', WHILE' if self.while_ else ''}) every {self.every_ms} ms",
                 "  Sink: parquet file sink (exactly once with --checkpoint) -> rows decoded on the driver",
                 "  FactAggregateOperator: applyInPandasWithState, one columnar state blob, numpy per micro-batch;"
                 " ticks from event time (heartbeats), explicit end-of-input flush",
                 "    state: open facts of every fact below"
                 + (f"; closed {self.fact} facts that a live WHILE scope still overlaps"
                    if self.while_ and not self.current else "") + "; events after the last reported tick"]
        scope = ("the WHILE scope" if self.while_ else "the period (tau - d, tau]") if not self.current else "tau"
        lines.append(f"    match: {self.fact} {'valid at' if self.current else 'overlapping'} {scope};"
                     f" GROUP BY {', '.join('?' + v for v in self.group_vars) or '(none)'}")
        if self.while_:
            w = self.while_
            lines.append(f"    WHILE {w.fact} keyed by {', '.join('?' + v for v in w.shared) or '(nothing)'}:"
                         " scope = union of its facts' intervals cut at tau, reported while valid or ended in"
                         " (tau - d, tau]")
        aggs = []
        for a, c in zip(self.aggregates, self.distinct_cols):
            aggs.append(f"{a.alias}={a.op}" + (f"(?{self._identity(self.fact)[c]})" if c >= 0 else ""))
        lines.append(f"    aggregates: {', '.join(aggs)} (activity ranges per tick; exact duration sums)")
        lines.append(f"    output: {', '.join(self.columns)}")
        for f in reversed(self.facts):
            if isinstance(f, DerivedFactPlan):
                body = " JOIN ".join(f"{b.fact}({', '.join('?' + n for n in b.names)})" for b in f.body)
                lines.append(f"  DerivedFact {f.name}({', '.join('?' + v for v in f.identity)}) = {body}:"
                             " interval join (sort + searchsorted), coalesced per identity")
        lines.append(f"  Exchange SinglePartition (bucket 0): {self.partitioning}")
        lines.append("  MapInArrow: row order for ties, bad rows diverted, one heartbeat (min/max event time, counts)")
        lines.append("  Project: clause matching; per fact row: fact number, identity xxhash64, one xxhash64 code"
                     " per identity variable; output terms on SINCE rows only")
        for f in self.event_facts:
            for c in f.clauses:
                kind = "SINCE" if c.kind == 0 else "UNTIL"
                cond = " AND ".join([f"{col} = {t}" for col, t in c.consts]
                                    + [f"{a} = {b}" for a, b in c.same]) or "true"
                binds = ", ".join(f"?{v}<-{col}" for v, col in zip(f.identity, c.binds))
                lines.append(f"    {f.name} {kind}: {cond}; binds {binds}")
        lines.append("  FileStreamSource (ts, s, p, o) [maxFilesPerTrigger]")
        return "\n".join(lines)

    def _identity(self, name: str) -> tuple[str, ...]:
        return next(f.identity for f in self.facts if f.name == name)


def _unify(pattern: Pattern, template: Pattern, what: str) -> dict[str, str]:
    """pattern variable -> template variable, for a pattern that matches the template position by position."""
    rename: dict[str, str] = {}
    for wn, tn in zip((pattern.s, pattern.p, pattern.o), (template.s, template.p, template.o)):
        if isinstance(wn, Var) and isinstance(tn, Var):
            if rename.get(wn.name, tn.name) != tn.name or tn.name in {v for k, v in rename.items() if k != wn.name}:
                raise _unsupported(f"a repeated variable in {what}", pattern.span)
            rename[wn.name] = tn.name
        elif not (isinstance(wn, Term) and isinstance(tn, Term) and wn == tn):
            raise _unsupported(f"constants in {what}", pattern.span)
    return rename


def _single_fact(doc: Document, facts: tuple[str, ...], span, what: str):
    if len(facts) != 1:
        raise _unsupported(f"{what} matching several fact definitions", span)
    return doc.fact(facts[0])


def _fact_closure(doc: Document, roots: list[str]) -> list[str]:
    need: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in need:
            continue
        need.add(name)
        f = doc.fact(name)
        if isinstance(f, DerivedFact):
            for wp in f.body:
                if wp.kind != "fact":
                    raise _unsupported(f"{wp.kind} patterns in the body of derived fact {f.name}", f.span)
                todo.append(_single_fact(doc, wp.facts, wp.pattern.span, "a derived-fact body pattern").name)
    return [f.name for f in doc.facts if f.name in need]


def plan_fact_query(doc: Document, q, buckets: int = 8) -> FactAggregatePlan:
    if not isinstance(q, AggregateQuery):
        raise _unsupported(f"query {q.name}", q.span)
    if q.filters:
        raise _unsupported(f"FILTER in query {q.name}", q.span)
    if len(q.where) != 1 or q.where[0].kind not in ("current", "fact"):
        raise _unsupported(f"WHERE other than a single fact pattern in query {q.name}", q.span)
    wp = q.where[0]
    fact = _single_fact(doc, wp.facts, wp.pattern.span, "a WHERE pattern")
    rename = _unify(wp.pattern, fact.template, "a WHERE fact pattern")
    identity = tuple(v.name for v in fact.identity)
    if not q.group_by and q.while_ is None:
        raise _unsupported(f"an aggregate without GROUP BY or WHILE in query {q.name}", q.span)
    group_vars: list[str] = []
    for g in q.group_by:
        if g.name not in rename:
            raise _unsupported(f"GROUP BY ?{g.name} not bound by the fact pattern", q.span)
        group_vars.append(rename[g.name])
    aggs: list[AggPlan] = []
    distinct: list[int] = []
    for a in q.aggregates:
        col = -1
        if a.func == "COUNT" and not a.distinct and (a.arg is None or (isinstance(a.arg, Var) and a.arg.name in rename)):
            op = "count"
        elif a.func == "COUNT" and a.distinct and isinstance(a.arg, Var) and a.arg.name in rename:
            op, col = "count_distinct", identity.index(rename[a.arg.name])
        elif a.func in ("SUM", "AVG") and not a.distinct and _is_duration_of(a.arg, wp.interval):
            op = "sum_duration" if a.func == "SUM" else "avg_duration"
        else:
            raise _unsupported(f"aggregate {a.func} of this argument", q.span)
        aggs.append(AggPlan(a.alias, op))
        distinct.append(col)
    names = {g.name for g in q.group_by} | {a.alias for a in aggs}
    for p in q.select:
        _check_expr(p.expr, names, q)
    scope = None
    roots = [fact.name]
    if q.while_ is not None:
        w = q.while_
        wfact = _single_fact(doc, w.facts, w.pattern.span, "a WHILE pattern")
        wrename = _unify(w.pattern, wfact.template, "a WHILE pattern")
        if w.interval and {w.interval[0].name, w.interval[1].name} & _select_vars(q):
            raise _unsupported("the WHILE interval variables in SELECT", q.span)
        widentity = tuple(v.name for v in wfact.identity)
        shared = tuple(g.name for g in q.group_by if g.name in wrename)
        scope = ScopePlan(wfact.name, tuple(widentity.index(wrename[g]) for g in shared),
                          tuple(identity.index(rename[g]) for g in shared), shared)
        roots.append(wfact.name)
    order = _fact_closure(doc, roots)
    needed: dict[str, set[str]] = {name: set() for name in order}
    needed[fact.name] |= set(group_vars)
    plans: dict[str, EventFactPlan | DerivedFactPlan] = {}
    for name in reversed(order):  # consumers first: which terms the output needs flows to the event facts
        f = doc.fact(name)
        if isinstance(f, EventFact):
            for c in f.since + f.until:
                if c.background or c.filters:
                    raise _unsupported(f"background patterns or FILTER in a SINCE/UNTIL clause of {f.name}", f.span)
            ident = tuple(v.name for v in f.identity)
            plans[name] = EventFactPlan(
                name, ident, tuple(_clause(1, c.trigger, ident) for c in f.until)
                + tuple(_clause(0, c.trigger, ident) for c in f.since),
                tuple(i for i, v in enumerate(ident) if v in needed[name]))
            continue
        if f.filters:
            raise _unsupported(f"FILTER in derived fact {f.name}", f.span)
        body: list[BodyPlan] = []
        for b in f.body:
            bf = doc.fact(b.facts[0])
            brename = _unify(b.pattern, bf.template, f"the body of {f.name}")
            inverse = {t: v for v, t in brename.items()}
            names_ = tuple(inverse[v.name] for v in bf.identity)
            body.append(BodyPlan(bf.name, names_))
            for tv, bv in zip((v.name for v in bf.identity), names_):
                if bv in needed[name]:
                    needed[bf.name].add(tv)
        ident = tuple(v.name for v in f.identity)
        bound = {n for b in body for n in b.names}
        if not set(ident) <= bound:
            raise _unsupported(f"derived fact {f.name} whose identity is not bound by its body", f.span)
        plans[name] = DerivedFactPlan(name, ident, tuple(body))
    return FactAggregatePlan(
        query=q.name, columns=tuple(p.name for p in q.select), facts=tuple(plans[n] for n in order),
        fact=fact.name, current=wp.kind == "current", group_vars=tuple(group_vars),
        group_cols=tuple(identity.index(g) for g in group_vars), aggregates=tuple(aggs),
        distinct_cols=tuple(distinct),
        projections=tuple((p.name, _rename_expr(p.expr, {g.name: rename[g.name] for g in q.group_by}))
                          for p in q.select),
        while_=scope, every_ms=q.every_ms, partitioning=_partitioning(plans, order, group_vars))


def _select_vars(q: AggregateQuery) -> set[str]:
    from tefq.oracle.query import expr_vars

    return set().union(*(expr_vars(p.expr) for p in q.select)) if q.select else set()


def _partitioning(plans: dict, order: list[str], group_vars: list[str]) -> str:
    """Why one bucket: name the join keys of the derived facts next to the group key."""
    joins = []
    for name in order:
        f = plans[name]
        if isinstance(f, DerivedFactPlan):
            seen: set[str] = set()
            keys: set[str] = set()
            for b in f.body:
                keys |= seen & set(b.names)
                seen |= set(b.names)
            joins.append(f"{f.name} joins on {', '.join('?' + k for k in sorted(keys)) or 'nothing'}")
    group = ", ".join("?" + g for g in group_vars) or "nothing"
    if joins:
        return (f"{'; '.join(joins)} but the aggregate groups by {group}: no key co-partitions both,"
                " so one bucket holds what crosses micro-batches (open facts, scoped closed facts)")
    return f"facts and WHILE scopes of a group {group} may come from any key: one bucket holds the open state"
