"""The oracle's output stream for one query, one stream, one semantics and one t0: S2R (windows.py),
R2R (r2r.py) per report, then R2S (Rstream / Istream / Dstream) and the empty-relation policy."""
from __future__ import annotations

from typing import Sequence

from tefq.oracle.windowed.answers import Binding, Relation, binding
from tefq.oracle.windowed.query import OracleQuery
from tefq.oracle.windowed.r2r import Answer, Evaluator
from tefq.vocabulary import Element
from tefq.oracle.windowed.secret import Semantics
from tefq.oracle.windowed.windows import scopes


class WindowEvaluator:
    """R2R over index ranges of one ordered stream, memoised: a t0 sweep meets the same content
    many times."""

    def __init__(self, query: OracleQuery, elements: Sequence[Element], background=()) -> None:
        self.query = query
        self.elements = elements
        self.ts = [e[0] for e in elements]
        self.evaluator = Evaluator(query.sparql, query.source, background)
        self._cache: dict[tuple[int, int], tuple[frozenset[Binding], dict]] = {}

    def rows(self, lo: int, hi: int) -> tuple[frozenset[Binding], dict]:
        key = (lo, hi)
        hit = self._cache.get(key)
        if hit is None:
            ans: Answer = self.evaluator.evaluate(self.elements[lo:hi])
            shown: dict = {}
            if ans.triples:
                names, cells_list = ("s", "p", "o"), ans.triples
            else:
                names, cells_list = ans.names, ans.rows
            for cells in cells_list:
                b = binding(names, cells)
                shown[b] = {n: c for n, c in zip(names, cells) if c is not None}
            hit = (frozenset(shown), shown)
            self._cache[key] = hit
        return hit


def relations(ev: WindowEvaluator, sem: Semantics, t0: int) -> list[Relation]:
    """The output stream the engine described by `sem` must produce with this t0."""
    q = ev.query
    out: list[Relation] = []
    prev: frozenset[Binding] | None = None
    prev_shown: dict = {}
    for s in scopes(ev.ts, q.range_ms, q.step_ms, sem, t0):
        rel, shown = ev.rows(s.lo, s.hi)
        if sem.r2s == "rstream":
            emit = rel
        elif sem.r2s == "istream":
            emit = rel if prev is None else rel - prev
        else:  # dstream: nothing can have left before the first relation
            emit = frozenset() if prev is None else prev - rel
        readable = prev_shown if sem.r2s == "dstream" else shown
        prev, prev_shown = rel, shown
        if emit or sem.empty_relation:
            out.append(Relation(s.at, emit, (s.open, s.close), s.size, {b: readable.get(b, {}) for b in emit}))
    return out

