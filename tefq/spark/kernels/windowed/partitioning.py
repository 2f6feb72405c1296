"""Whether a document's windowed query can be split by a join key: each element sent to one of
several independent evaluators by one of its terms, every window's rows the union of theirs.

A variable `?v` is a **join key** when every solution of every window, and every group, is made
of elements that agree on the term at `?v`:
* the document has one windowed query: a SELECT that neither registers nor reads a stream (a
  feedback cycle orders windows across all terms);
* every triple pattern has a constant predicate and `?v` as its subject or object, in the same
  position for every pattern of one predicate (so an element's key term is found by its predicate);
* the algebra has only BGP, Join, LeftJoin, Union, Minus, Filter, Extend, Project, Distinct,
  Group and AggregateJoin (no LIMIT/OFFSET, ORDER BY, REDUCED, sub-SELECT or VALUES, which see
  rows across keys); every GROUP BY holds `?v`, and there is no aggregate without GROUP BY (its
  empty group reports a row in each window, once per evaluator);
* DISTINCT and RSP-QL's ISTREAM/DSTREAM compare whole rows: `?v` must be projected.
Joins, OPTIONAL and MINUS then only combine solutions with the same `?v` term; SUM/AVG of doubles
still add in the same row order (a group lives in one evaluator, its rows in their order).

Without a join key, a query is split by its **windows** (`WindowSlabs`) when no window's report
depends on another's: the document has one windowed query, with one window, reporting RSTREAM
(ISTREAM/DSTREAM compare a window with the one before), that neither registers nor reads a
stream. Windows are cut into slabs of consecutive ids, slab j evaluated by evaluator j mod B; an
element goes to the evaluators of the windows it falls in (one, or two at a slab's edge). Each
window is then evaluated whole, by one evaluator, on the same elements in the same order.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rdflib.term import URIRef, Variable

from tefq.spark.kernels.windowed.algebra import bgp_nodes, walk

PATTERN_OPERATORS = {"SelectQuery", "ConstructQuery", "AskQuery", "DescribeQuery", "Project", "Distinct",
                     "Reduced", "Slice", "OrderBy", "Extend", "Filter", "Join", "LeftJoin", "Union", "Minus",
                     "Graph", "BGP", "Group", "AggregateJoin", "ToMultiSet", "values", "ServiceGraphPattern",
                     "SubSelect"}
SPLITTABLE = {"SelectQuery", "Project", "Distinct", "Extend", "Filter", "Join", "LeftJoin", "Union", "Minus", "BGP",
              "Group", "AggregateJoin"}


@dataclass(frozen=True)
class JoinKey:
    """`?variable`, and where each predicate's elements hold its term (the subject or the object)."""

    variable: str
    subject_predicates: tuple[str, ...]  # N-Triples IRIs: the key is the subject
    object_predicates: tuple[str, ...]  # the key is the object

    def describe(self) -> str:
        where = "subject" if not self.object_predicates else "object" if not self.subject_predicates else \
            "subject or object"
        return f"by join key ?{self.variable} ({where} of every pattern)"


def join_key(query, algebra) -> JoinKey | None:
    """The query's join key (see the module's doc), or None."""
    if query.form != "select" or query.registers_stream:
        return None
    nodes = [n for n in walk(algebra)]
    if any(n.name in PATTERN_OPERATORS and n.name not in SPLITTABLE for n in nodes):
        return None
    triples = [t for b in bgp_nodes(algebra) for t in b.triples]
    if not triples or any(not isinstance(t[1], URIRef) for t in triples):
        return None
    projected = {str(v) for v in (getattr(algebra, "PV", None) or [])}
    needs_projection = query.r2s != "rstream" or any(n.name == "Distinct" for n in nodes)
    groups = [n for n in nodes if n.name == "Group"]
    aggregates = any(n.name == "AggregateJoin" for n in nodes)
    for v in sorted(set.intersection(*[{str(x) for x in (t[0], t[2]) if isinstance(x, Variable)} for t in triples])):
        if needs_projection and v not in projected:
            continue
        if aggregates and (not groups or any(Variable(v) not in (g.expr or []) for g in groups)):
            continue
        key = _positions(v, triples)
        if key is not None:
            return key
    return None


def _positions(v: str, triples: list) -> JoinKey | None:
    """Where `?v` is in each predicate's patterns, if the same everywhere for that predicate."""
    where: dict[str, str] = {}
    for s, p, o in triples:
        pos = "s" if isinstance(s, Variable) and str(s) == v else "o"
        if where.setdefault(p.n3(), pos) != pos:
            return None
    return JoinKey(v, tuple(sorted(p for p, w in where.items() if w == "s")),
                   tuple(sorted(p for p, w in where.items() if w == "o")))


SLAB_RANGES = 4  # a slab spans this many RANGEs of windows: an element is in two slabs about 1/4 of the time


@dataclass(frozen=True)
class WindowSlabs:
    """Window k (close `t0 + k·STEP + RANGE`, `t0` the run's) belongs to slab `k // per_slab`,
    slab j to bucket j mod `buckets`."""

    range_ms: int
    step_ms: int
    per_slab: int
    buckets: int

    def describe(self) -> str:
        return (f"by window: {self.per_slab} consecutive windows a slab, slab j to bucket j mod {self.buckets} "
                "(an element at a slab's edge to both)")

    def bucket_of_windows(self, k: np.ndarray) -> np.ndarray:
        return ((np.maximum(k, 0) // self.per_slab) % self.buckets).astype(np.int64)

    def bucket_of_closes(self, closes: np.ndarray, t0: int) -> np.ndarray:
        """The bucket that evaluates each window closing at `closes`."""
        return self.bucket_of_windows((np.asarray(closes, np.int64) - t0 - self.range_ms) // self.step_ms)

    def element_buckets(self, ts: np.ndarray, t0: int) -> tuple[np.ndarray, np.ndarray]:
        """Per element time: the bucket of its first window and of its last (equal unless the
        element sits at a slab's edge). Windows are taken closed at both ends, whatever the
        report semantics: an element at a close goes where that window is evaluated."""
        rel = np.asarray(ts, np.int64) - t0
        first = -((self.range_ms - rel) // self.step_ms)  # ceil((t - t0 - RANGE) / STEP)
        last = rel // self.step_ms
        return self.bucket_of_windows(first), self.bucket_of_windows(np.maximum(last, first))


def window_slabs(queries, buckets: int) -> WindowSlabs | None:
    """How the document's windowed queries split by windows (see the module's doc), or None."""
    if buckets <= 1 or len(queries) != 1:
        return None
    q = queries[0]
    if q.r2s != "rstream" or q.registers_stream or len(q.windows) != 1:
        return None
    w = q.windows[0]
    per_range = -(-w.range_ms // w.step_ms)
    return WindowSlabs(w.range_ms, w.step_ms, SLAB_RANGES * per_range, buckets)


__all__ = ["JoinKey", "join_key", "SPLITTABLE", "WindowSlabs", "window_slabs"]
