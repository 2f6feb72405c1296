"""The general planner (issue 27): whether the general vectorised kernels
(`tefq.spark.kernels.general`) run an aggregate query, and how its work is cut into buckets.

`plan_general(doc, q, buckets)` answers a `GeneralPlan` or a `Refusal` naming the construct the
kernels do not run. What they run: any WHERE of spec §4.2 (CURRENT and fact patterns over event or
derived facts, event patterns, background patterns, FILTERs over pattern and interval variables),
WHILE (§4.3, its ?SS/?ES as group variables too), every aggregate of §4 but COUNT(DISTINCT *), any
SELECT expression, and on the facts side SINCE/UNTIL clauses with background patterns and FILTERs
(§3.1) and derived facts with background patterns and FILTERs (§3.2).

The split (`tefq.spark.kernels.general.query.Split`): a variable `?k` of the WHERE; the items
binding `?k` keep, in bucket b, only their rows whose `?k` lies in b; the others are whole in every
bucket. Each solution then lives in exactly one bucket (that of its `?k`), so the buckets' rows add
up to the query's rows:
- `?k` a group variable: a group's solutions are all in one bucket, which reports complete rows;
- `?k` another variable (`merge`): a group spans buckets; each reports partial aggregates per
  (tick, group) — counts, exact sums, MIN/MAX candidates — and the driver adds them. Exact for
  every aggregate but DISTINCT ones, unless the DISTINCT argument is `?k` itself (its values are
  disjoint across buckets: where `?k` may bind a literal, its buckets are those of its values, so
  that two spellings of one value share one; `Split.by_value`).
Under WHILE without merge, the scope facts are split by `?k` when the WHILE pattern shares it, else
whole; with merge they are whole. On the input side a fact is held in part (only its identities
whose column bound to `?k` lies in the bucket) when every consumer asks for it split by the same
column (derived facts pass the request to the body facts that bind the variable), else whole.
Choice: the variable that leaves the fewest event-driven inputs whole (every bucket reading them),
then a merging one (UC3's measurement: splitting by the counted entity balances best), then the
first in the WHERE.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tefq.plan.logical import AggregateQuery, DerivedFact, Document, EventFact, Fact, Pattern, Term, Var, WherePattern
from tefq.spark.kernels.general.query import CompiledQuery, Split
from tefq.spark.planning.common import Refusal
from tefq.spark.planning.literals import literal_free
from tefq.spark.planning.nodes import END_OF_INPUT, SINK, SOURCE


@dataclass(frozen=True)
class GeneralPlan:
    """One aggregate query on the general kernels, cut into `buckets` by `split` (None: one bucket)."""

    query: str
    query_index: int
    columns: tuple[str, ...]
    every_ms: int
    facts: tuple[str, ...]  # dependency order
    split: Split | None
    buckets: int
    whole: tuple[str, ...]  # event-driven inputs every bucket reads whole
    partitioning: str
    operators: tuple[str, ...] = ()  # the operator's lines of EXPLAIN (WHERE, FILTER, WHILE, aggregates)
    # The query and its facts, so that the workers and the driver's collector compile it without the document.
    definition: tuple[AggregateQuery, tuple[Fact, ...]] | None = field(default=None, compare=False, repr=False)
    # The background as N-Triples triples, bound at run time (shapes/general.bind): the mapper routes
    # SINCE/UNTIL clauses joined with it, every bucket joins it (a broadcast, shipped in the closures).
    background: tuple[tuple[str, str, str], ...] = field(default=(), compare=False, repr=False)

    def compiled(self, doc: Document | None = None) -> CompiledQuery:
        if doc is None and self.definition is not None:
            q, facts = self.definition
        else:
            q, facts = doc.queries[self.query_index], tuple(doc.fact(n) for n in self.facts)
        return CompiledQuery(q, facts, self.split if self.buckets > 1 else None)

    def relevant_predicates(self) -> frozenset[str] | None:
        """The predicates of the patterns an element can match to matter (SINCE/UNTIL triggers,
        event patterns); None when one of them has a variable predicate (every element may)."""
        cq = self.compiled()
        patterns = [c.trigger for f in cq.facts if isinstance(f, EventFact) for c in f.since + f.until]
        patterns += [wp.pattern for wp in cq.items if wp.kind == "event"]
        if any(not isinstance(p.p, Term) for p in patterns):
            return None
        return frozenset(p.p.nt for p in patterns)

    def explain(self) -> str:
        state = f"pending elements, open facts of {', '.join(self.facts)}" if self.facts else "pending elements"
        return "\n".join([
            f"SparkQuery {self.query}: general aggregate every {self.every_ms} ms", SINK,
            "  GeneralOperator: applyInPandasWithState, one bucket state of numpy arrays per micro-batch"
            " (tefq.spark.kernels.general), ticks from event time, " + END_OF_INPUT,
            f"    state: {state} (under WHILE also the closed facts and events an open scope fact overlaps)",
            *("    " + line for line in self.operators),
            f"    output: {', '.join(self.columns)}",
            f"  Exchange {self._exchange()}: {self.partitioning}",
            "  MapInArrow: term codes, elements routed to the buckets of their consumers (SINCE/UNTIL clauses"
            " matched against the broadcast background), row order for ties, heartbeats",
            SOURCE])

    def _exchange(self) -> str:
        if self.split is None or self.buckets == 1:
            return "SinglePartition (bucket 0)"
        code = "value_code" if self.split.by_value else "code"
        return f"hashpartitioning(bucket = {code}(?{self.split.var}) mod {self.buckets})"


def operator_lines(doc: Document, q: AggregateQuery) -> tuple[str, ...]:
    """What the operator evaluates, one line per step (IRIs abbreviated with the document's prefixes)."""
    def node(n) -> str:
        if isinstance(n, Var):
            return "?" + n.name
        for prefix, ns in sorted(doc.prefixes, key=lambda p: -len(p[1])):
            if n.nt.startswith("<" + ns) and n.nt[len(ns) + 1:-1].replace("_", "").isalnum():
                return f"{prefix}:{n.nt[len(ns) + 1:-1]}"
        return n.nt

    def item(wp: WherePattern) -> str:
        p = wp.pattern
        interval = f" [?{wp.interval[0].name}, ?{wp.interval[1].name}]" if wp.interval else ""
        facts = f" ({', '.join(wp.facts)})" if wp.facts else ""
        return f"{wp.kind} {node(p.s)} {node(p.p)} {node(p.o)}{interval}{facts}"

    cq = CompiledQuery(q, ())
    lines = ["WHERE: " + " JOIN ".join(item(wp) for wp in q.where) + " (hash joins on shared variables,"
             " activities intersected)"]
    if q.filters:
        lines.append(f"FILTER: {len(cq.static_filters)} over bound variables (applied in the join),"
                     f" {len(cq.dynamic_filters)} reading an open interval end (per tick while open)")
    if q.while_ is not None:
        lines.append(f"WHILE {item(q.while_)}: scope keyed by {', '.join('?' + k for k in cq.while_key) or '(nothing)'}")
    aggs = ", ".join(f"{a.alias}={a.func}{' DISTINCT' if a.distinct else ''}" for a in q.aggregates)
    lines.append(f"aggregates per (tick, group) by difference arrays: {aggs}"
                 f"; GROUP BY {', '.join('?' + g.name for g in q.group_by) or '(none)'}")
    return tuple(lines)


# ---------------------------------------------------------------- what the kernels do not run
def interval_refusal(q: AggregateQuery) -> Refusal | None:
    """Interval variables the oracle reads in ways the kernels do not model."""
    triple_vars = {v.name for wp in q.where for v in wp.pattern.variables()}
    starts = [wp.interval[0].name for wp in q.where if wp.interval]
    ends = [wp.interval[1].name for wp in q.where if wp.interval]
    if q.while_ is not None:
        triple_vars |= {v.name for v in q.while_.pattern.variables()}
        if q.while_.interval and {v.name for v in q.while_.interval} & (set(starts) | set(ends) | triple_vars):
            return Refusal.at("a WHILE interval variable also bound in the WHERE", q.span)
    if (set(starts) | set(ends)) & triple_vars:
        return Refusal.at("an interval variable also bound by a triple pattern", q.span)
    if len(set(ends)) < len(ends) or set(starts) & set(ends):
        return Refusal.at("an interval end variable bound twice", q.span)
    if {g.name for g in q.group_by} & set(ends):
        return Refusal.at("GROUP BY an interval end (its value is tau while the fact is open)", q.span)
    return None


def query_refusal(q) -> Refusal | None:
    if not isinstance(q, AggregateQuery):
        return Refusal.at(f"query {q.name}", q.span)
    refusal = interval_refusal(q)
    if refusal is not None:
        return refusal
    where_vars = {v.name for wp in q.where for v in wp.pattern.variables()} | \
        {v.name for wp in q.where if wp.interval for v in wp.interval}
    w_interval = {v.name for v in q.while_.interval} if q.while_ is not None and q.while_.interval else set()
    unbound = next((g.name for g in q.group_by if g.name not in where_vars | w_interval), None)
    if unbound is not None:
        return Refusal.at(f"GROUP BY ?{unbound}, bound by the WHILE pattern only", q.span)
    if any(a.func == "COUNT" and a.arg is None and a.distinct for a in q.aggregates):
        return Refusal.at("COUNT(DISTINCT *)", q.span)
    return None


def fact_closure(doc: Document, q: AggregateQuery) -> list[str]:
    """The facts the query reads, with every fact they build on, in dependency order."""
    need: set[str] = set()
    todo = [n for wp in q.where for n in wp.facts] + (list(q.while_.facts) if q.while_ is not None else [])
    while todo:
        name = todo.pop()
        if name not in need:
            need.add(name)
            f = doc.fact(name)
            if isinstance(f, DerivedFact):
                todo.extend(n for wp in f.body for n in wp.facts)
    return [f.name for f in doc.facts if f.name in need]


# ---------------------------------------------------------------- the split
def template_column(pattern: Pattern, template: Pattern, identity: tuple[str, ...], var: str) -> int:
    """The identity column a pattern's variable `var` reads in a fact's template (-1: none)."""
    for node, tnode in zip((pattern.s, pattern.p, pattern.o), (template.s, template.p, template.o)):
        if isinstance(node, Var) and node.name == var and isinstance(tnode, Var):
            return identity.index(tnode.name)
    return -1


def binds(wp: WherePattern, var: str) -> bool:
    return var in {v.name for v in wp.pattern.variables()}


def fact_splits(doc: Document, q: AggregateQuery, order: list[str], var: str, merge: bool) -> dict[str, int]:
    """Per fact, the identity column that splits it (-1: whole), consumers before their bodies."""
    asks: dict[str, set[int]] = {n: set() for n in order}

    def ask(wp: WherePattern, name: str, v: str | None) -> None:
        f = doc.fact(name)
        ident = tuple(x.name for x in f.identity)
        asks[name].add(template_column(wp.pattern, f.template, ident, v) if v and binds(wp, v) else -1)

    for wp in q.where:
        for name in wp.facts:
            ask(wp, name, var)
    if q.while_ is not None:
        shared = {v.name for v in q.while_.pattern.variables()} & {g.name for g in q.group_by}
        for name in q.while_.facts:
            ask(q.while_, name, var if not merge and var in shared else None)
    for name in reversed(order):
        f = doc.fact(name)
        col = next(iter(asks[name])) if len(asks[name]) == 1 else -1
        if isinstance(f, DerivedFact):
            v = f.identity[col].name if col >= 0 else None
            for wp in f.body:
                for body in wp.facts:
                    ask(wp, body, v)
    return {n: (next(iter(a)) if len(a) == 1 else -1) for n, a in asks.items()}


def mergeable(q: AggregateQuery, var: str) -> bool:
    """Partial aggregates of disjoint solution sets add up: all but DISTINCT ones not over `var`."""
    return all(not a.distinct or a.func in ("MIN", "MAX") or a.arg == Var(var) for a in q.aggregates)


def by_value(doc: Document, q: AggregateQuery, var: str) -> bool:
    """A merging split by `var` puts `var`'s values in buckets, not its terms: a DISTINCT counts
    `var`'s values and `var` may bind a literal, two spellings of whose value must share a bucket
    (planning/literals.py)."""
    counted = any(a.distinct and a.func not in ("MIN", "MAX") and a.arg == Var(var) for a in q.aggregates)
    return counted and not literal_free(doc, q.where, var)


def candidate(doc: Document, q: AggregateQuery, order: list[str], var: str) -> tuple[tuple, Split, tuple] | None:
    merge = var not in {g.name for g in q.group_by}
    if merge and not mergeable(q, var):
        return None
    if not any(wp.kind != "background" and binds(wp, var) for wp in q.where):
        return None
    splits = fact_splits(doc, q, order, var, merge)
    whole = [n for n in order if splits[n] < 0 and isinstance(doc.fact(n), EventFact)]
    whole += [f"event pattern {i + 1}" for i, wp in enumerate(q.where) if wp.kind == "event" and not binds(wp, var)]
    split = Split(var, merge, tuple((n, c) for n, c in splits.items() if c >= 0), merge and by_value(doc, q, var))
    return (len(whole), not merge), split, tuple(whole)


def choose_split(doc: Document, q: AggregateQuery, order: list[str]) -> tuple[Split | None, tuple[str, ...], str]:
    names = list(dict.fromkeys(v.name for wp in q.where if wp.kind != "background" for v in wp.pattern.variables()))
    found = [c for c in (candidate(doc, q, order, v) for v in names) if c is not None]
    if not found:
        return None, tuple(order), ("no WHERE variable splits the solutions (a DISTINCT aggregate over a variable"
                                    " that is not the split one, or no fact or event binds one): one bucket")
    _, split, whole = min(found, key=lambda c: c[0])
    how = ("a group's solutions lie in the bucket of its ?" + split.var) if not split.merge else \
        (f"each bucket reports partial aggregates of the solutions with its ?{split.var}"
         f"{' (by value: two spellings of one literal share a bucket)' if split.by_value else ''}; the driver adds them")
    parts = "; ".join(f"{n} split by ?{doc.fact(n).identity[c].name}" for n, c in split.facts) or "no fact split"
    whole_text = ", ".join(whole) or "no event-driven input"
    return split, whole, f"{parts}; whole in every bucket: {whole_text}, background (broadcast); exact: {how}"


def plan_general(doc: Document, q, buckets: int = 8) -> GeneralPlan | Refusal:
    refusal = query_refusal(q)
    if refusal is not None:
        return refusal
    order = fact_closure(doc, q)
    split, whole, why = choose_split(doc, q, order) if buckets > 1 else (None, (), "one bucket offered")
    return GeneralPlan(q.name, doc.queries.index(q), tuple(p.name for p in q.select), q.every_ms, tuple(order),
                       split, buckets if split is not None else 1, whole, why, operator_lines(doc, q),
                       (q, tuple(doc.fact(n) for n in order)))
