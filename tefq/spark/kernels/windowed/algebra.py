"""Facts about an rdflib SPARQL algebra tree that the relational evaluators act on: its BGPs, whether
row order can change an answer, and rdflib's per-solution evaluation of correlated sub-SELECTs."""
from __future__ import annotations

from typing import Iterator

from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.term import Variable

# operators whose answer depends on the order of their input rows: ties, "first", adjacency, and
# floating-point sums (rdflib adds in row order; a double's sum is not associative)
_ORDERED = ("Slice", "Reduced", "OrderBy", "Aggregate_GroupConcat", "Aggregate_Sum", "Aggregate_Avg",
            "Aggregate_Min", "Aggregate_Max")


def walk(node, seen: set | None = None) -> Iterator[CompValue]:
    """Every algebra node below `node` (itself included), each once, parents first."""
    seen = set() if seen is None else seen
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, CompValue):
        yield node
        for k, v in node.items():
            if k != "_vars":
                yield from walk(v, seen)
    elif isinstance(node, (list, tuple)):
        for v in node:
            yield from walk(v, seen)


def bgp_nodes(algebra) -> list[CompValue]:
    """The BGPs with at least one pattern, in a fixed order (their ids in join-order records)."""
    return [n for n in walk(algebra) if n.name == "BGP" and n.get("triples")]


def contains(node, names: tuple[str, ...]) -> bool:
    return any(n.name in names for n in walk(node))


def order_sensitive(algebra) -> bool:
    """Whether the order of solutions can change the answer: LIMIT/OFFSET, REDUCED, ties of
    ORDER BY, GROUP_CONCAT, SUM and AVG (of doubles), MIN and MAX (ties between equal values
    of different datatypes), SAMPLE of a variable that is not a group key."""
    for n in walk(algebra):
        if n.name in _ORDERED:
            return True
        if n.name == "AggregateJoin":
            keys = {str(e) for e in (n.p.expr or []) if isinstance(e, Variable)}
            if any(a.name == "Aggregate_Sample" and str(a.vars) not in keys for a in n.A):
                return True
    return False


def correlated_aggregate(node, error) -> bool:
    """rdflib evaluates the right side of a lazy Join and of a LeftJoin under each left solution's
    bindings. For patterns that is the SPARQL join; for a subquery with aggregates or LIMIT it is
    not. The one such shape evaluated here (and answered True): the right side is a sub-SELECT
    whose GROUP BY holds every shared variable (per left row, rdflib gets that row's group, or the
    empty "no group" solution). Other correlated shapes raise: they would give another answer."""
    shared = {str(v) for v in (node.p1._vars or ())} & {str(v) for v in (node.p2._vars or ())}
    if not shared:
        return False
    inner = node.p2
    while getattr(inner, "name", None) in ("ToMultiSet", "Project", "Extend"):
        inner = inner.p
    if not contains(node.p2, ("AggregateJoin", "Slice")):
        return False
    grouped = {str(e) for e in (inner.p.expr or []) if isinstance(e, Variable)} \
        if getattr(inner, "name", None) == "AggregateJoin" else set()
    projected = {str(v) for v in node.p2.p.PV} if getattr(node.p2, "name", None) == "ToMultiSet" and \
        getattr(node.p2.p, "name", None) == "Project" else None
    visible = shared if projected is None else shared & projected
    if getattr(inner, "name", None) == "AggregateJoin" and visible <= grouped \
            and not contains(inner.p.p, ("AggregateJoin", "Slice")):
        return True
    raise error("a sub-SELECT with aggregates or LIMIT correlated with the pattern before it (rdflib evaluates "
                "it once per solution)")


__all__ = ["walk", "bgp_nodes", "contains", "order_sensitive", "correlated_aggregate"]
