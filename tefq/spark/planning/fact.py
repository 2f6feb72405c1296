"""The fact-aggregate planner: fact aggregates beyond one CURRENT event fact — derived facts (spec
§3.2), fact patterns without CURRENT and WHILE scopes (§4.2-4.3) — run by `tefq.spark.operators.fact`.

Recognised shape (any names): the query's WHERE is one fact pattern, with or without CURRENT,
over one fact; that fact and the WHILE fact are event facts (single triple pattern clauses) or
derived facts whose body is a conjunction of fact patterns over such facts; GROUP BY variables of
the pattern; COUNT [DISTINCT] ?v, COUNT(*), SUM / AVG of DURATION(?S, ?E) of the interval;
`+ - * /` in SELECT. Anything else is a `Refusal` (the document planner then uses the fallback).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from tefq.oracle.query import expr_vars
from tefq.plan.logical import AggregateQuery, DerivedFact, Document, EventFact, Expr, Var
from tefq.spark.planning.common import (SINCE, UNTIL, AggPlan, ClausePlan, Refusal, clause_plan,
                                        groups_and_aggregates, having, is_duration_of, projections, unify)
from tefq.spark.planning.literals import distinct_codes_refusal
from tefq.spark.planning.nodes import END_OF_INPUT, SINK, SOURCE


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
class FactRouting:
    """Which bucket holds which facts. The buckets split the values of one group variable `key`
    of the matched fact (bucket = xxhash64 code of the term mod B): each fact is either *split*
    by the identity column bound to `key` (its facts with that value live in that value's bucket
    only) or *replicated* (every bucket holds all its facts). See `choose_routing` for why this
    is exact."""

    key: str
    split: tuple[tuple[str, int], ...]  # (fact, identity column) of the split facts
    replicated: tuple[str, ...]
    # the key is not a group variable but the COUNT DISTINCT one: a group's facts lie in several
    # buckets, each reports its partial aggregates and the driver adds them (output.merge_partials)
    merge: bool = False

    def column(self, fact: str) -> int:
        """The identity column that picks `fact`'s bucket, or -1: replicated to every bucket."""
        return dict(self.split).get(fact, -1)


@dataclass(frozen=True)
class FactAggregatePlan:
    """Aggregates at ticks over one fact pattern (CURRENT or not) of an event or derived fact,
    optionally under WHILE. Bucketed by `routing` when one exists, else one bucket (`partitioning`
    says why)."""

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
    routing: FactRouting | None = None
    having: tuple[Expr, ...] = ()  # spec §4, group variables as in `projections`

    @property
    def event_facts(self) -> tuple[EventFactPlan, ...]:
        return tuple(f for f in self.facts if isinstance(f, EventFactPlan))

    @property
    def event_routes(self) -> tuple[int, ...]:
        """Per event fact: the identity column whose code picks a row's bucket, or -1 (every bucket)."""
        return tuple(self.routing.column(f.name) if self.routing else 0 for f in self.event_facts)

    @property
    def widths(self) -> tuple[int, int]:
        """(identity code columns, output term columns) of a row (`tefq.spark.protocol.fact_wire`)."""
        facts = self.event_facts
        return max(len(f.identity) for f in facts), max([len(f.terms) for f in facts] + [0])

    @property
    def replicated(self) -> frozenset[str]:
        """The facts every bucket holds in full (their counts are taken in bucket 0 only)."""
        return frozenset(self.routing.replicated) if self.routing else frozenset()

    def explain(self) -> str:
        what = "CURRENT pattern" if self.current else "fact pattern"
        lines = [f"SparkQuery {self.query}: fact aggregate ({what} over {self.fact}"
                 f"{', WHILE' if self.while_ else ''}) every {self.every_ms} ms",
                 SINK,
                 "  FactAggregateOperator: applyInPandasWithState, one columnar state blob, numpy per micro-batch;"
                 " ticks from event time (heartbeats), " + END_OF_INPUT,
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
        lines.extend(self._exchange())
        lines.append("  MapInArrow: row order for ties, bad rows diverted, one heartbeat (min/max event time, counts)")
        lines.append("  Project: clause matching; per fact row: fact number, identity xxhash64, one xxhash64 code"
                     " per identity variable; output terms on SINCE rows only")
        lines.extend(f"    {f.name} {c.explain(f.identity)}" for f in self.event_facts for c in f.clauses)
        lines.append(SOURCE)
        return "\n".join(lines)

    def _exchange(self) -> list[str]:
        if self.routing is None:
            return [f"  Exchange SinglePartition (bucket 0): {self.partitioning}"]
        r = self.routing
        split = "; ".join(f"{f} split by ?{self._identity(f)[c]}" for f, c in r.split)
        copies = (f"; replicated to every bucket ({self.buckets} copies of each row): {', '.join(r.replicated)}"
                  if r.replicated else "; nothing replicated")
        lines = [f"  Exchange hashpartitioning(bucket = xxhash64(?{r.key}) mod {self.buckets}): {split}{copies};"
                 " heartbeats and flush to every bucket"]
        if r.merge:
            return lines + [f"    exact: every {self.fact} fact and its derivations and coalescing lie in the bucket of"
                            f" its ?{r.key}; each bucket reports its partial aggregates per group, the driver adds"
                            f" them (COUNT DISTINCT ?{r.key} over disjoint values, exact duration sums as limbs)"
                            " and then projects"]
        return lines + [f"    exact: every {self.fact} fact, its derivations, coalescing and WHILE scope of a group lie"
                        f" in the bucket of its ?{r.key}"]

    def _identity(self, name: str) -> tuple[str, ...]:
        return next(f.identity for f in self.facts if f.name == name)


def single_fact(doc: Document, facts: tuple[str, ...], span, what: str):
    """The one fact definition a pattern matches (several: a Refusal)."""
    if len(facts) != 1:
        return Refusal.at(f"{what} matching several fact definitions", span)
    return doc.fact(facts[0])


def matched_fact(doc: Document, wp, what: str, unify_what: str):
    """(the one fact a pattern matches, pattern variable -> template variable), or a Refusal."""
    fact = single_fact(doc, wp.facts, wp.pattern.span, what)
    if isinstance(fact, Refusal):
        return fact
    rename = unify(wp.pattern, fact.template, unify_what)
    return rename if isinstance(rename, Refusal) else (fact, rename)


def fact_closure(doc: Document, roots: list[str]) -> list[str] | Refusal:
    """The facts `roots` depend on, in document (dependency) order."""
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
                    return Refusal.at(f"{wp.kind} patterns in the body of derived fact {f.name}", f.span)
                body_fact = single_fact(doc, wp.facts, wp.pattern.span, "a derived-fact body pattern")
                if isinstance(body_fact, Refusal):
                    return body_fact
                todo.append(body_fact.name)
    return [f.name for f in doc.facts if f.name in need]


def plan_aggregates(q: AggregateQuery, rename: dict[str, str], identity: tuple[str, ...]):
    """(aggregates, COUNT DISTINCT column per aggregate or -1), or a Refusal."""
    aggs: list[AggPlan] = []
    distinct: list[int] = []
    for a in q.aggregates:
        col = -1
        bound = isinstance(a.arg, Var) and a.arg.name in rename
        if a.func == "COUNT" and not a.distinct and (a.arg is None or bound):
            op = "count"
        elif a.func == "COUNT" and a.distinct and bound:
            op, col = "count_distinct", identity.index(rename[a.arg.name])
        elif a.func in ("SUM", "AVG") and not a.distinct and is_duration_of(a.arg, q.where[0].interval):
            op = "sum_duration" if a.func == "SUM" else "avg_duration"
        else:
            return Refusal.at(f"aggregate {a.func} of this argument", q.span)
        aggs.append(AggPlan(a.alias, op))
        distinct.append(col)
    return aggs, distinct


def plan_scope(doc: Document, q: AggregateQuery, rename: dict[str, str],
               identity: tuple[str, ...]) -> ScopePlan | Refusal:
    """WHILE: the scope fact and the group variables it shares with the matched fact."""
    w = q.while_
    matched = matched_fact(doc, w, "a WHILE pattern", "a WHILE pattern")
    if isinstance(matched, Refusal):
        return matched
    wfact, wrename = matched
    if w.interval and {w.interval[0].name, w.interval[1].name} & select_vars(q):
        return Refusal.at("the WHILE interval variables in SELECT", q.span)
    widentity = tuple(v.name for v in wfact.identity)
    shared = tuple(g.name for g in q.group_by if g.name in wrename)
    return ScopePlan(wfact.name, tuple(widentity.index(wrename[g]) for g in shared),
                     tuple(identity.index(rename[g]) for g in shared), shared)


def query_refusal(q) -> Refusal | None:
    if not isinstance(q, AggregateQuery):
        return Refusal.at(f"query {q.name}", q.span)
    if q.filters:
        return Refusal.at(f"FILTER in query {q.name}", q.span)
    if len(q.where) != 1 or q.where[0].kind not in ("current", "fact"):
        return Refusal.at(f"WHERE other than a single fact pattern in query {q.name}", q.span)
    return None


def plan_fact_aggregate(doc: Document, q, buckets: int = 8, merge_partials: bool = True) -> FactAggregatePlan | Refusal:
    """`merge_partials=False`: no routing whose buckets report partial aggregates (a caller that
    formats each bucket's rows on its own: tefq.spark.apply)."""
    refusal = query_refusal(q)
    if refusal is not None:
        return refusal
    wp = q.where[0]
    matched = matched_fact(doc, wp, "a WHERE pattern", "a WHERE fact pattern")
    if isinstance(matched, Refusal):
        return matched
    fact, rename = matched
    identity = tuple(v.name for v in fact.identity)
    if not q.group_by and q.while_ is None:
        return Refusal.at(f"an aggregate without GROUP BY or WHILE in query {q.name}", q.span)
    planned = groups_and_aggregates(q, rename, identity, "the fact pattern", plan_aggregates)
    if isinstance(planned, Refusal):
        return planned
    group_vars = [rename[g.name] for g in q.group_by]
    scope = plan_scope(doc, q, rename, identity) if q.while_ is not None else None
    if isinstance(scope, Refusal):
        return scope
    order = fact_closure(doc, [fact.name] + ([scope.fact] if scope else []))
    if isinstance(order, Refusal):
        return order
    plans = plan_facts(doc, order, {fact.name: set(group_vars)})
    if isinstance(plans, Refusal):
        return plans
    aggs, distinct = planned
    refusal = distinct_codes_refusal(doc, fact.name, [c for c in distinct if c >= 0], q.span)
    if refusal is not None:
        return refusal
    merge_keys = counted_keys(distinct, identity, group_vars) if merge_partials else []
    routing = choose_routing(plans, order, fact.name, group_vars, scope, merge_keys) if buckets > 1 else None
    return FactAggregatePlan(
        query=q.name, columns=tuple(p.name for p in q.select), facts=tuple(plans[n] for n in order),
        fact=fact.name, current=wp.kind == "current", group_vars=tuple(group_vars),
        group_cols=tuple(identity.index(g) for g in group_vars), aggregates=tuple(aggs),
        distinct_cols=tuple(distinct), projections=projections(q, {g.name: rename[g.name] for g in q.group_by}),
        while_=scope, every_ms=q.every_ms, partitioning=partitioning(plans, order, group_vars),
        buckets=fact_buckets(routing, buckets), routing=routing,
        having=having(q, {g.name: rename[g.name] for g in q.group_by}))


def plan_facts(doc: Document, order: list[str], needed: dict[str, set[str]]) -> dict | Refusal:
    """Each fact's plan; `needed` (fact -> variables whose terms the output needs) flows from the
    consumers down to the event facts."""
    plans: dict[str, EventFactPlan | DerivedFactPlan] = {}
    for name in reversed(order):  # consumers first
        f = doc.fact(name)
        mine = needed.setdefault(name, set())
        plan = plan_event_fact(f, mine) if isinstance(f, EventFact) else plan_derived_fact(doc, f, mine, needed)
        if isinstance(plan, Refusal):
            return plan
        plans[name] = plan
    return plans


def plan_event_fact(f: EventFact, needed: set[str]) -> EventFactPlan | Refusal:
    if any(c.background or c.filters for c in f.since + f.until):
        return Refusal.at(f"background patterns or FILTER in a SINCE/UNTIL clause of {f.name}", f.span)
    ident = tuple(v.name for v in f.identity)
    return EventFactPlan(f.name, ident, tuple(clause_plan(UNTIL, c.trigger, ident) for c in f.until)
                         + tuple(clause_plan(SINCE, c.trigger, ident) for c in f.since),
                         tuple(i for i, v in enumerate(ident) if v in needed))


def plan_derived_fact(doc: Document, f: DerivedFact, needed: set[str],
                      all_needed: dict[str, set[str]]) -> DerivedFactPlan | Refusal:
    if f.filters:
        return Refusal.at(f"FILTER in derived fact {f.name}", f.span)
    body: list[BodyPlan] = []
    for b in f.body:
        bf = doc.fact(b.facts[0])
        brename = unify(b.pattern, bf.template, f"the body of {f.name}")
        if isinstance(brename, Refusal):
            return brename
        inverse = {t: v for v, t in brename.items()}
        names = tuple(inverse[v.name] for v in bf.identity)
        body.append(BodyPlan(bf.name, names))
        for tv, bv in zip((v.name for v in bf.identity), names):
            if bv in needed:
                all_needed.setdefault(bf.name, set()).add(tv)
    ident = tuple(v.name for v in f.identity)
    if not set(ident) <= {n for b in body for n in b.names}:
        return Refusal.at(f"derived fact {f.name} whose identity is not bound by its body", f.span)
    return DerivedFactPlan(f.name, ident, tuple(body))


def select_vars(q: AggregateQuery) -> set[str]:
    return set().union(*(expr_vars(p.expr) for p in q.select)) if q.select else set()


def partitioning(plans: dict, order: list[str], group_vars: list[str]) -> str:
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


def fact_buckets(routing: FactRouting | None, offered: int) -> int:
    """How many buckets a routing uses of the `offered` ones (the session's shuffle partitions, one
    per core): all of them, or one when no key routes the facts. (With two partitions per core a
    replicating routing took half: measured on UC3 2M, 4 buckets on 2 cores were slower than 2.)"""
    return 1 if routing is None else offered


def counted_keys(distinct: list[int], identity: tuple[str, ...], group_vars: list[str]) -> list[str]:
    """The keys whose buckets' partial aggregates add up to the whole: the variable every COUNT
    DISTINCT counts, if it is not a group variable (split by it, a value's facts are in one bucket,
    so per-bucket distinct counts add; COUNT and duration sums add whatever the split)."""
    cols = {c for c in distinct if c >= 0}
    return [identity[c] for c in cols if identity[c] not in group_vars] if len(cols) == 1 else []


def choose_routing(plans: dict, order: list[str], matched: str, group_vars: list[str],
                   scope: ScopePlan | None, merge_keys: list[str] = ()) -> FactRouting | None:
    """The exact routing that replicates the fewest event facts, over the group variables as keys
    and the `merge_keys` (partial aggregates added on the driver); None when there is none (then
    one bucket). When both kinds replicate as many event facts, the merging one wins: it
    replicates the facts of the groups (UC3: programmes) instead of the facts of the counted
    entity (UC3: every user's viewing, ~99% of the rows), so each bucket builds only its share —
    measured on UC3 2M (docs/spark.md, "UC3 partitioning")."""
    def cost(r: FactRouting) -> tuple[int, bool]:
        copied = sum(isinstance(plans[n], EventFactPlan) for n in r.replicated)
        return copied, (r.merge if copied == 0 else not r.merge)

    found = [r for r in (routing_for(plans, order, matched, key, scope) for key in group_vars) if r is not None]
    found += [replace(r, merge=True) for r in (routing_for(plans, order, matched, key, scope) for key in merge_keys)
              if r is not None]
    return min(found, key=cost) if found else None


def routing_for(plans: dict, order: list[str], matched: str, key: str, scope: ScopePlan | None) -> FactRouting | None:
    """Split the matched fact by its column `key`, and push that down. Exact because a bucket then
    holds, for its key values, everything a group's rows depend on:
    - the matched fact is split by a group column: a reported group's facts are in one bucket, so
      COUNT DISTINCT, sums and the group's rows need nothing from another bucket;
    - a WHILE scope keyed by `key` is split by its key column (the group's scope is complete in
      its bucket); keyed otherwise it is replicated;
    - a split derived fact's body facts that bind the split variable are split by it (a derivation
      with that value only joins their rows with that value), the others are replicated (complete);
      the derived identity contains the value, so all derivations of one identity, and its
      coalescing, are in the bucket; a replicated fact's body is replicated.
    A fact asked for in two ways (split by different columns, or split and replicated): None."""
    need: dict[str, int] = {}

    def require(fact: str, column: int) -> bool:
        return need.setdefault(fact, column) == column

    ok = require(matched, plans[matched].identity.index(key))
    if scope is not None:
        col = plans[matched].identity.index(key)
        ok &= require(scope.fact, scope.key[scope.query_key.index(col)] if col in scope.query_key else -1)
    for name in reversed(order):  # consumers before their bodies
        f = plans[name]
        if not isinstance(f, DerivedFactPlan) or name not in need:
            continue
        var = f.identity[need[name]] if need[name] >= 0 else None
        for b in f.body:
            ok &= require(b.fact, b.names.index(var) if var in b.names else -1)
    if not ok or set(need) != set(order):
        return None
    return FactRouting(key, tuple((n, need[n]) for n in order if need[n] >= 0), tuple(n for n in order if need[n] < 0))


FACT_TABLE = "facts"  # the fact table's streaming query (its directory under the run's work directory)


def plan_fact_table(doc: Document, buckets: int = 1, every_ms: int = 3_600_000) -> FactAggregatePlan | Refusal | None:
    """The fact-aggregate plan of every fact of `doc`, every identity term shipped, no output
    (None: `doc` has no fact); over `buckets` when the last fact's closure is every fact and one
    of its identity variables routes them exactly (planning/fact.choose_routing, as for a query
    grouping by it), else one. `every_ms`: the grid on which intervals become final."""
    if not doc.facts:
        return None
    order = fact_closure(doc, [f.name for f in doc.facts])
    if isinstance(order, Refusal):
        return order
    plans = plan_facts(doc, order, {f.name: {v.name for v in f.identity} for f in doc.facts})
    if isinstance(plans, Refusal):
        return plans
    last = order[-1]
    keys = list(plans[last].identity)
    routing = choose_routing(plans, order, last, keys, None) if buckets > 1 else None
    return FactAggregatePlan(
        query=FACT_TABLE, columns=(), facts=tuple(plans[n] for n in order), fact=last, current=True,
        group_vars=(), group_cols=(), aggregates=(), distinct_cols=(), projections=(), while_=None,
        every_ms=every_ms, partitioning="the fact table: no identity variable routes every fact exactly",
        buckets=fact_buckets(routing, buckets), routing=routing)
