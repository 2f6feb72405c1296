"""Facts about an rdflib SPARQL algebra tree that the relational evaluators act on: its BGPs, whether
row order can change an answer, and copies of expressions with parts replaced."""
from __future__ import annotations


from types import MethodType

from rdflib.plugins.sparql.parserutils import CompValue, Expr
from rdflib.term import Variable

from tefq.syntax.sparql_text import children, walk

# operators whose answer depends on the order of their input rows: ties, "first", adjacency, and
# floating-point sums (rdflib adds in row order; a double's sum is not associative)
_ORDERED = ("Slice", "OrderBy", "Aggregate_GroupConcat", "Aggregate_Sum", "Aggregate_Avg",
            "Aggregate_Min", "Aggregate_Max")


def bgp_nodes(algebra) -> list[CompValue]:
    """The BGPs with at least one pattern, in a fixed order (their ids in join-order records)."""
    return [n for n in walk(algebra) if n.name == "BGP" and n.get("triples")]


def contains(node, names: tuple[str, ...]) -> bool:
    return any(n.name in names for n in walk(node))


def order_sensitive(algebra) -> bool:
    """Whether the order of solutions can change the answer: LIMIT/OFFSET, ties of
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


def substituted(node, replacements: dict):
    """A copy of the expression `node` with the nodes whose id is a key of `replacements` replaced
    (each copied Expr evaluates itself, not the original)."""
    if id(node) in replacements:
        return replacements[id(node)]
    if isinstance(node, CompValue):
        new = Expr(node.name) if isinstance(node, Expr) else CompValue(node.name)
        new.update({k: substituted(v, replacements) for k, v in node.items()})
        new.__dict__.update({k: v for k, v in node.__dict__.items() if k not in ("name", "_evalfn")})
        if isinstance(node, Expr) and node._evalfn is not None:
            new._evalfn = MethodType(node._evalfn.__func__, new)
        return new
    if isinstance(node, (list, tuple)):
        return type(node)(substituted(v, replacements) for v in node)
    return node


__all__ = ["walk", "children", "bgp_nodes", "contains", "order_sensitive", "substituted"]
