"""The Spark physical planner: which logical shapes run on Spark, and how they are partitioned.

Supported today: aggregate queries whose WHERE is one `CURRENT` pattern over one event-driven
fact whose clauses are single triple patterns, grouped by identity variables, with COUNT /
COUNT DISTINCT of an identity variable, COUNT(*), SUM / AVG of DURATION(?S, ?E) of the interval,
and projections with `+ - * /` (bucketed by the group key). Derived facts, fact patterns without
CURRENT and WHILE go to `tefq.spark.derived_plan`; any other aggregate query to the fallback.
"""
from __future__ import annotations

from dataclasses import dataclass

from tefq.errors import TefqError
from tefq.plan.logical import (AggregateQuery, Call, Document, EventFact, Expr, Pattern, Term, Var,
                               WindowedQuery)

POSITIONS = ("s", "p", "o")


@dataclass(frozen=True)
class ClausePlan:
    """One SINCE/UNTIL trigger as column conditions: `consts` are (column, N-Triples term) that
    must match, `same` pairs of columns that must be equal (a repeated variable), and `binds`
    the column of each identity variable."""

    kind: int  # 0 SINCE, 1 UNTIL
    consts: tuple[tuple[str, str], ...]
    same: tuple[tuple[str, str], ...]
    binds: tuple[str, ...]  # per identity variable


@dataclass(frozen=True)
class AggPlan:
    alias: str
    op: str  # count | sum_duration | avg_duration


@dataclass(frozen=True)
class CurrentAggregatePlan:
    """A per-tick CURRENT aggregate over one event fact, evaluated inside the fact operator.

    Partitioning: buckets by the hash of the group key, so every fact of a group lives in one
    bucket and each bucket reports its own groups without a second shuffle. Without GROUP BY the
    whole fact set is one group: one bucket."""

    query: str
    columns: tuple[str, ...]
    fact: str
    identity: tuple[str, ...]
    clauses: tuple[ClausePlan, ...]
    group_vars: tuple[str, ...]
    aggregates: tuple[AggPlan, ...]
    projections: tuple[tuple[str, Expr], ...]
    every_ms: int
    buckets: int

    def explain(self) -> str:
        lines = [f"SparkQuery {self.query}: CURRENT aggregate every {self.every_ms} ms"]
        lines.append("  Sink: parquet file sink (exactly once with --checkpoint) -> rows decoded on the driver")
        lines.append(f"  FactOperator {self.fact}: applyInPandasWithState, one columnar state blob per bucket,"
                     " ticks from event time (heartbeats), explicit end-of-input flush")
        lines.append(f"    aggregates: {', '.join(f'{a.alias}={a.op}' for a in self.aggregates)}")
        lines.append(f"    output: {', '.join(self.columns)}")
        key = ", ".join("?" + v for v in self.group_vars) or "(none: single bucket)"
        lines.append(f"  Exchange hashpartitioning(bucket = xxhash64({key}) mod {self.buckets})")
        lines.append("  MapInArrow: per-partition heartbeats (min/max event time, counts) to every bucket")
        lines.append(f"  Project: identity ({', '.join('?' + v for v in self.identity)}) -> xxhash64 int64;"
                     " group terms kept for decoding")
        for c in self.clauses:
            kind = "SINCE" if c.kind == 0 else "UNTIL"
            cond = " AND ".join([f"{col} = {t}" for col, t in c.consts] + [f"{a} = {b}" for a, b in c.same]) or "true"
            lines.append(f"    {kind}: {cond}; binds {', '.join(f'?{v}<-{col}' for v, col in zip(self.identity, c.binds))}")
        lines.append("  FileStreamSource (ts, s, p, o) [maxFilesPerTrigger]")
        return "\n".join(lines)


class Unsupported(TefqError):
    """A shape the vectorised operator does not handle (aggregate queries then use the fallback)."""


def _unsupported(what: str, span=None) -> TefqError:
    line = getattr(span, "line", 0) if span is not None else 0
    col = getattr(span, "column", 0) if span is not None else 0
    return Unsupported(f"{what} is not yet supported on Spark (try --engine oracle)", line=line, column=col)


@dataclass(frozen=True)
class FallbackPlan:
    """Any other aggregate query: one bucket, the oracle evaluates the final ticks per micro-batch."""

    query: str
    query_index: int
    columns: tuple[str, ...]
    every_ms: int
    reason: str
    buckets: int = 1

    def explain(self) -> str:
        return "\n".join([
            f"SparkQuery {self.query}: general fallback every {self.every_ms} ms",
            f"  (vectorised operator: {self.reason})",
            "  Sink: parquet file sink (exactly once with --checkpoint) -> rows decoded on the driver",
            "  FallbackOperator: applyInPandasWithState, single bucket holding every element read;"
            " the oracle reports the ticks that became final in each micro-batch (not scalable)",
            "  Exchange SinglePartition (bucket 0)",
            "  MapInArrow: row order for ties, bad-row handling",
            "  FileStreamSource (ts, s, p, o) [maxFilesPerTrigger]",
        ])


def _clause(kind: int, pattern: Pattern, identity: tuple[str, ...]) -> ClausePlan:
    shape = pattern.shape()
    consts = [(POSITIONS[i], term) for i, term in shape.consts]
    same = [(POSITIONS[i], POSITIONS[j]) for i, j in shape.same]
    first = {name: POSITIONS[i] for name, i in shape.first.items()}
    missing = [v for v in identity if v not in first]
    if missing:
        raise TefqError(f"clause does not bind ?{missing[0]}", line=pattern.span.line, column=pattern.span.column)
    return ClausePlan(kind, tuple(consts), tuple(same), tuple(first[v] for v in identity))


def _is_duration_of(e: Expr | None, interval: tuple[Var, Var] | None) -> bool:
    return (isinstance(e, Call) and e.op == "DURATION" and interval is not None
            and tuple(e.args) == tuple(interval))


def plan_query(doc: Document, q, buckets: int = 8) -> CurrentAggregatePlan:
    if isinstance(q, WindowedQuery):
        raise _unsupported(f"windowed query {q.name} (C-SPARQL)", q.span)
    assert isinstance(q, AggregateQuery)
    if q.while_ is not None:
        raise _unsupported(f"WHILE in query {q.name}", q.span)
    if q.filters:
        raise _unsupported(f"FILTER in query {q.name}", q.span)
    if len(q.where) != 1 or q.where[0].kind != "current" or len(q.where[0].facts) != 1:
        raise _unsupported(f"WHERE other than a single CURRENT fact pattern in query {q.name}", q.span)
    wp = q.where[0]
    fact = doc.fact(wp.facts[0])
    if not isinstance(fact, EventFact):
        raise _unsupported(f"derived fact {fact.name}", fact.span)
    for c in fact.since + fact.until:
        if c.background or c.filters:
            raise _unsupported(f"background patterns or FILTER in a SINCE/UNTIL clause of {fact.name}", fact.span)
    identity = tuple(v.name for v in fact.identity)
    # Unify the WHERE pattern with the template: each WHERE variable names a template variable.
    rename: dict[str, str] = {}
    for wn, tn in zip((wp.pattern.s, wp.pattern.p, wp.pattern.o), (fact.template.s, fact.template.p, fact.template.o)):
        if isinstance(wn, Var) and isinstance(tn, Var):
            if wn.name in rename and rename[wn.name] != tn.name:
                raise _unsupported("a repeated variable in a CURRENT pattern", wp.pattern.span)
            rename[wn.name] = tn.name
        elif isinstance(wn, Term) and isinstance(tn, Term) and wn == tn:
            continue
        else:
            raise _unsupported("constants in a CURRENT pattern", wp.pattern.span)
    group_vars = []
    for g in q.group_by:
        if g.name not in rename:
            raise _unsupported(f"GROUP BY ?{g.name} not bound by the fact", q.span)
        group_vars.append(g.name)
    covered = {rename[g] for g in group_vars}
    aggs: list[AggPlan] = []
    for a in q.aggregates:
        if a.func == "COUNT" and (a.arg is None or (isinstance(a.arg, Var) and a.arg.name in rename)):
            if a.distinct and a.arg is not None and not set(identity) <= covered | {rename[a.arg.name]}:
                raise _unsupported("COUNT DISTINCT over a variable that does not complete the identity", q.span)
            if a.distinct and a.arg is None:
                raise _unsupported("COUNT(DISTINCT *)", q.span)
            aggs.append(AggPlan(a.alias, "count"))
        elif a.func in ("SUM", "AVG") and not a.distinct and _is_duration_of(a.arg, wp.interval):
            aggs.append(AggPlan(a.alias, "sum_duration" if a.func == "SUM" else "avg_duration"))
        else:
            raise _unsupported(f"aggregate {a.func} of this argument", q.span)
    names = set(group_vars) | {a.alias for a in aggs}
    for p in q.select:
        _check_expr(p.expr, names, q)
    return CurrentAggregatePlan(
        query=q.name, columns=tuple(p.name for p in q.select), fact=fact.name, identity=identity,
        clauses=tuple(_clause(0, c.trigger, identity) for c in fact.since)
        + tuple(_clause(1, c.trigger, identity) for c in fact.until),
        group_vars=tuple(rename[g] for g in group_vars), aggregates=tuple(aggs),
        projections=tuple((p.name, _rename_expr(p.expr, {g: rename[g] for g in group_vars})) for p in q.select),
        every_ms=q.every_ms, buckets=buckets if group_vars else 1)


def _check_expr(e: Expr, names: set[str], q) -> None:
    if isinstance(e, Var):
        if e.name not in names:
            raise _unsupported(f"projecting ?{e.name} (neither a group variable nor an aggregate)", q.span)
    elif isinstance(e, Call):
        if e.op not in ("+", "-", "*", "/", "neg"):
            raise _unsupported(f"the function {e.op} in a SELECT expression", q.span)
        for a in e.args:
            _check_expr(a, names, q)


def _rename_expr(e: Expr, rename: dict[str, str]) -> Expr:
    # Group variables are carried under their template names; aggregate aliases keep theirs.
    if isinstance(e, Var):
        return Var("group:" + rename[e.name]) if e.name in rename else e
    if isinstance(e, Call):
        return Call(e.op, tuple(_rename_expr(a, rename) for a in e.args))
    return e


def plan_document(doc: Document, buckets: int = 8, fallback: bool = True, fact_aggregates: bool = True) -> list:
    """One plan per query (windowed queries share one). `fact_aggregates=False` sends what the
    fact-aggregate operator would run to the fallback instead (the simulations have no
    simulated form of that operator)."""
    plans: list = []
    from tefq.spark.derived_plan import plan_fact_query

    for i, q in enumerate(doc.queries):
        if isinstance(q, WindowedQuery):  # all of them run in one operator (tefq.spark.windowed)
            if not any(getattr(p, "query", None) == "windowed" for p in plans):
                from tefq.spark.windowed import plan_windowed

                plans.append(plan_windowed(doc))
            continue
        try:
            plans.append(plan_query(doc, q, buckets))
            continue
        except Unsupported:
            if not isinstance(q, AggregateQuery):
                raise
        try:  # derived facts, fact patterns without CURRENT, WHILE: the fact-aggregate operator
            if not fact_aggregates:
                raise Unsupported("derived facts, fact patterns and WHILE in a simulation")
            plans.append(plan_fact_query(doc, q, buckets))
        except Unsupported as e:
            if not fallback:
                raise
            plans.append(FallbackPlan(q.name, i, tuple(p.name for p in q.select), q.every_ms,
                                      e.message.replace(" is not yet supported on Spark (try --engine oracle)",
                                                        " not supported")))
    return plans


def explain_physical(doc: Document, buckets: int = 8) -> str:
    return "\n\n".join(p.explain() for p in plan_document(doc, buckets)) + "\n"
