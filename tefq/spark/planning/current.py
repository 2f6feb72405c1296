"""The current-aggregate planner: aggregate queries whose WHERE is one `CURRENT` pattern over one
event fact whose clauses are single triple patterns, grouped by identity variables, with COUNT /
COUNT DISTINCT of an identity variable, COUNT(*), SUM / AVG of DURATION(?S, ?E) of the interval,
and projections with `+ - * /` (bucketed by the group key). Run by `tefq.spark.operators.current`.
"""
from __future__ import annotations

from dataclasses import dataclass

from tefq.plan.logical import AggregateQuery, Document, EventFact, Expr, Var
from tefq.spark.planning.common import (SINCE, UNTIL, AggPlan, ClausePlan, Refusal, clause_plan, groups_and_aggregates,
                                        having, is_duration_of, projections, unify)
from tefq.spark.planning.literals import distinct_codes_refusal
from tefq.spark.planning.nodes import END_OF_INPUT, SINK, SOURCE


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
    operator: str = "FactOperator"  # the simulations name theirs
    having: tuple[Expr, ...] = ()  # spec §4, group variables as in `projections`

    @property
    def identity_is_element(self) -> bool:
        """(clause, identity) is the element: one clause per kind, each fixing s, p and o. Its
        hash then serves as the element's (a stream is a set: duplicates are equal elements)."""
        one_per_kind = len({c.kind for c in self.clauses}) == len(self.clauses)
        return one_per_kind and all(c.determines_element for c in self.clauses)

    def explain(self) -> str:
        key = ", ".join("?" + v for v in self.group_vars) or "(none: single bucket)"
        return "\n".join([
            f"SparkQuery {self.query}: CURRENT aggregate every {self.every_ms} ms",
            SINK,
            f"  {self.operator} {self.fact}: applyInPandasWithState, one columnar state blob per bucket,"
            " ticks from event time (heartbeats), " + END_OF_INPUT,
            f"    aggregates: {', '.join(f'{a.alias}={a.op}' for a in self.aggregates)}",
            f"    output: {', '.join(self.columns)}",
            f"  Exchange hashpartitioning(bucket = xxhash64({key}) mod {self.buckets})",
            "  MapInArrow: per-partition heartbeats (min/max event time, counts) to every bucket",
            f"  Project: identity ({', '.join('?' + v for v in self.identity)}) -> xxhash64 int64;"
            " group terms kept for decoding",
            *("    " + c.explain(self.identity) for c in self.clauses),
            SOURCE])


def shape_refusal(doc: Document, q: AggregateQuery) -> Refusal | None:
    """Whether the query's WHERE is one CURRENT pattern over one event fact with plain clauses."""
    if q.while_ is not None:
        return Refusal.at(f"WHILE in query {q.name}", q.span)
    if q.filters:
        return Refusal.at(f"FILTER in query {q.name}", q.span)
    if len(q.where) != 1 or q.where[0].kind != "current" or len(q.where[0].facts) != 1:
        return Refusal.at(f"WHERE other than a single CURRENT fact pattern in query {q.name}", q.span)
    fact = doc.fact(q.where[0].facts[0])
    if not isinstance(fact, EventFact):
        return Refusal.at(f"derived fact {fact.name}", fact.span)
    if any(c.background or c.filters for c in fact.since + fact.until):
        return Refusal.at(f"background patterns or FILTER in a SINCE/UNTIL clause of {fact.name}", fact.span)
    return None


def plan_aggregates(q: AggregateQuery, rename: dict[str, str], identity: tuple[str, ...]) -> list[AggPlan] | Refusal:
    covered = {rename[g.name] for g in q.group_by}
    aggs: list[AggPlan] = []
    for a in q.aggregates:
        if a.func == "COUNT" and (a.arg is None or (isinstance(a.arg, Var) and a.arg.name in rename)):
            if a.distinct and a.arg is not None and not set(identity) <= covered | {rename[a.arg.name]}:
                return Refusal.at("COUNT DISTINCT over a variable that does not complete the identity", q.span)
            if a.distinct and a.arg is None:
                return Refusal.at("COUNT(DISTINCT *)", q.span)
            aggs.append(AggPlan(a.alias, "count"))
        elif a.func in ("SUM", "AVG") and not a.distinct and is_duration_of(a.arg, q.where[0].interval):
            aggs.append(AggPlan(a.alias, "sum_duration" if a.func == "SUM" else "avg_duration"))
        else:
            return Refusal.at(f"aggregate {a.func} of this argument", q.span)
    return aggs


def plan_current_aggregate(doc: Document, q: AggregateQuery, buckets: int = 8) -> CurrentAggregatePlan | Refusal:
    refusal = shape_refusal(doc, q)
    if refusal is not None:
        return refusal
    wp = q.where[0]
    fact = doc.fact(wp.facts[0])
    identity = tuple(v.name for v in fact.identity)
    # Unify the WHERE pattern with the template: each WHERE variable names a template variable.
    rename = unify(wp.pattern, fact.template, "a CURRENT pattern", strict=False)
    if isinstance(rename, Refusal):
        return rename
    aggs = groups_and_aggregates(q, rename, identity, "the fact", plan_aggregates)
    if isinstance(aggs, Refusal):
        return aggs
    counted = [identity.index(rename[a.arg.name]) for a in q.aggregates if a.distinct and isinstance(a.arg, Var)]
    refusal = distinct_codes_refusal(doc, fact.name, counted, q.span)
    if refusal is not None:
        return refusal
    group_vars = tuple(rename[g.name] for g in q.group_by)
    return CurrentAggregatePlan(
        query=q.name, columns=tuple(p.name for p in q.select), fact=fact.name, identity=identity,
        clauses=tuple(clause_plan(SINCE, c.trigger, identity) for c in fact.since)
        + tuple(clause_plan(UNTIL, c.trigger, identity) for c in fact.until),
        group_vars=group_vars, aggregates=tuple(aggs),
        projections=projections(q, {g.name: rename[g.name] for g in q.group_by}),
        having=having(q, {g.name: rename[g.name] for g in q.group_by}),
        every_ms=q.every_ms, buckets=buckets if group_vars else 1)
