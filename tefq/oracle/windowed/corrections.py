"""Where rdflib 7's SPARQL evaluation departs from SPARQL 1.1, corrected (the W3C's query-evaluation
tests are the check: docs/windowed-oracle.md lists each correction with the tests that show it).

The windowed oracle evaluates each window with rdflib (r2r.py), and the vectorised evaluator
(tefq.spark.kernels.windowed) calls rdflib's expression code for what it does not vectorise: a
correction made here holds on both engines. Two kinds:
* algebra operators, through rdflib's `CUSTOM_EVALS` hook (`install`, once per process);
* expressions: `corrected(algebra)` swaps the evaluation function rdflib's parser attached to an
  expression node for a correct one, in the algebra of every query an evaluator prepares.
"""
from __future__ import annotations

import collections
import logging
import warnings
from typing import Any

from types import MethodType

from rdflib import URIRef
from rdflib.plugins.sparql.aggregates import Aggregator
from rdflib.plugins.sparql.parserutils import CompValue, Expr
from rdflib.plugins.sparql.sparql import FrozenBindings, SPARQLError

from tefq.syntax.sparql_text import walk
from tefq.oracle.windowed import sparql_values as values


def _aggregate_join(ctx, part):
    """GROUP BY over no solution has no group, so no solution (rdflib yields one empty solution);
    without GROUP BY the one implicit group exists even when empty (COUNT 0), as rdflib has it."""
    if part.name != "AggregateJoin":
        raise NotImplementedError()
    from rdflib.plugins.sparql.evaluate import _eval, evalPart

    groups: dict[Any, Aggregator] = collections.defaultdict(lambda: Aggregator(aggregations=part.A))
    keys = part.p.expr
    if keys is None:
        groups[True]  # noqa: B018 - the implicit group, created even when empty
    for row in evalPart(ctx, part.p):
        groups[True if keys is None else tuple(_eval(e, row, False) for e in keys)].update(row)
    return (FrozenBindings(ctx, g.get_bindings()) for g in groups.values())


def _independent(node: Any) -> bool:
    """Whether `node` holds a sub-SELECT (or a grouping): SPARQL evaluates it bottom-up, on its
    own, and rdflib's evaluation of a join's right side under the left side's bindings would
    then leak variables the sub-SELECT does not project."""
    if isinstance(node, CompValue):
        return node.name in ("Project", "AggregateJoin", "Slice", "Distinct", "Reduced", "OrderBy") or \
            any(_independent(v) for k, v in node.items() if k != "_vars")
    if isinstance(node, (list, tuple)):
        return any(_independent(v) for v in node)
    return False


def _compatible_merge(a: FrozenBindings, b: FrozenBindings) -> FrozenBindings | None:
    if all(a[k] == v for k, v in b.items() if k in a):
        return a.merge(b)
    return None


def _join(ctx, part):
    """A join of two solution bags (rdflib reads a non-lazy join's right side as a set, and a
    lazy one under the left side's bindings: wrong when the right side is a sub-SELECT)."""
    if part.name != "Join" or (part.get("lazy") and not part.get("_tefq_bottom_up")):
        raise NotImplementedError()
    from rdflib.plugins.sparql.evaluate import evalPart

    right = list(evalPart(ctx, part.p2))
    return (m for a in evalPart(ctx, part.p1) for b in right if (m := _compatible_merge(a, b)) is not None)


def _left_join(ctx, part):
    """OPTIONAL whose right side is a sub-SELECT: evaluated on its own, then matched."""
    if part.name != "LeftJoin" or not part.get("_tefq_bottom_up"):
        raise NotImplementedError()
    return _optional(ctx, part)


def _optional(ctx, part):
    from rdflib.plugins.sparql.evaluate import _ebv, evalPart

    right = list(evalPart(ctx, part.p2))
    for a in evalPart(ctx, part.p1):
        matched = False
        for b in right:
            m = _compatible_merge(a, b)
            if m is not None and (part.expr is None or _ebv(part.expr, m)):
                matched = True
                yield m
        if not matched:
            yield a


def _reduced(ctx, part):
    """REDUCED may drop any duplicates; tefq drops them all, as DISTINCT does, so that the answer
    does not depend on the order an engine meets the solutions in (rdflib drops a solution equal to
    the one just before it)."""
    if part.name != "Reduced":
        raise NotImplementedError()
    from rdflib.plugins.sparql.evaluate import evalDistinct

    return evalDistinct(ctx, part)


def _order_by(ctx, part):
    """ORDER BY in SPARQL's order of terms (`sparql_values.order_key`, total: rdflib's sort fails
    on NaN against a decimal, or on a key that is an error)."""
    if part.name != "OrderBy":
        raise NotImplementedError()
    from rdflib.plugins.sparql.evaluate import evalPart, value

    rows = list(evalPart(ctx, part.p))
    for cond in reversed(part.expr):  # stable sorts from the last key to the first
        rows.sort(key=lambda r: values.order_key(value(r, cond.expr, variables=True)),
                  reverse=bool(cond.order and cond.order == "DESC"))
    return rows


_OPERATORS = {"tefq_aggregate_join": _aggregate_join, "tefq_join": _join, "tefq_left_join": _left_join,
              "tefq_reduced": _reduced, "tefq_order_by": _order_by}


def install() -> None:
    """Put the operator, cast and aggregate corrections into rdflib (idempotent)."""
    from rdflib.plugins.sparql import CUSTOM_EVALS
    from rdflib.plugins.sparql.operators import register_custom_function

    quiet_ill_typed_literals()

    for name, fn in _OPERATORS.items():
        CUSTOM_EVALS[name] = fn
    for target in values.CASTS:
        register_custom_function(URIRef(target), values.cast, raw=True, override=True)
    Aggregator.accumulator_classes["Aggregate_Avg"] = values.Average
    Aggregator.accumulator_classes["Aggregate_Sum"] = values.Sum
    Aggregator.accumulator_classes["Aggregate_Min"] = values.Minimum
    Aggregator.accumulator_classes["Aggregate_Max"] = values.Maximum


def quiet_ill_typed_literals() -> None:
    """An ill-typed literal (`"yes"^^xsd:boolean`, `"abc"^^xsd:integer`) is legal RDF, and SPARQL
    makes its value an error where an expression uses it. rdflib also says so on stderr, a warning
    ("Parsing weird boolean") or a logged traceback ("Failed to convert Literal lexical form"; a
    Spark worker has no logging handler, so Python printed it): not for a tefq user to read."""
    warnings.filterwarnings("ignore", message="(Parsing|Serializing) weird ", category=UserWarning)
    terms = logging.getLogger("rdflib.term")
    if not any(isinstance(h, logging.NullHandler) for h in terms.handlers):
        terms.addHandler(logging.NullHandler())  # handled: no last-resort printing; the root's own handlers still see it


def _errors_as_sparql(self: Expr, ctx: Any) -> Any:
    """An expression's own evaluation (`_tefq_evalfn`, called on this node), where a Python error
    raised by a function over its arguments (YEAR of a dateTime rdflib could not read, an
    overflow, ...) is a SPARQL error, as a SPARQLError already is: the value is an error (unbound,
    false in a FILTER), not a failed run."""
    try:
        return self._tefq_evalfn(self, ctx)
    except (ArithmeticError, AttributeError, TypeError, ValueError) as e:
        raise SPARQLError(f"{type(e).__name__}: {e}") from None


def _guarded(node: Expr) -> None:
    """`node` evaluated through `_errors_as_sparql` (once; a copy made by
    tefq.spark.kernels.windowed.algebra.substituted keeps the guard and the function it guards)."""
    fn = node._evalfn.__func__
    if fn is not _errors_as_sparql:
        node._tefq_evalfn = fn
        node._evalfn = MethodType(_errors_as_sparql, node)


def _translated_exists(node: Expr) -> None:
    """rdflib translates an EXISTS's pattern into algebra in FILTERs only; elsewhere (a SELECT or
    BIND expression) it keeps the parse tree and fails on it. Translate it the same way."""
    from rdflib.plugins.sparql.algebra import translateGroupGraphPattern, translatePath, traverse

    graph = node.graph
    if isinstance(graph, CompValue) and graph.name == "GroupGraphPatternSub":
        node.graph = translateGroupGraphPattern(traverse(graph, visitPost=translatePath))


def corrected(algebra: Any) -> Any:
    """`algebra` with rdflib's departures corrected in place: expression functions replaced (and
    every expression's Python errors made SPARQL errors), EXISTS patterns translated, sub-SELECT
    joins marked to be evaluated on their own, repeats of `*` paths dropped."""
    for node in walk(algebra):  # parents first: an EXISTS is translated before its pattern is walked
        if isinstance(node, Expr):
            if node.name in values.EXPRESSIONS:
                node._evalfn = MethodType(values.EXPRESSIONS[node.name], node)
            elif node.name in ("Builtin_EXISTS", "Builtin_NOTEXISTS"):
                _translated_exists(node)
            if node._evalfn is not None:
                _guarded(node)
        elif node.name in ("Join", "LeftJoin") and _independent(node.p2):
            node["_tefq_bottom_up"] = True  # the join evaluates its right side on its own
        elif node.name == "BGP" and node.get("triples"):
            node["triples"] = [tuple(values.distinct_paths(x) for x in t) for t in node["triples"]]
    return algebra


__all__ = ["install", "corrected"]
