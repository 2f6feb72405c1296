"""Which buckets an element must reach under a query's split (`query.Split`): the reference for the
mapper of phase 2, which does the same before the shuffle.

An element goes to the bucket of each consumer that holds it in part — an event fact split by an
identity column: the bucket of that column's code in each identity its clauses give (background
joined and FILTER applied, so the mapper needs the background: a broadcast); an event pattern that
binds the split variable: the bucket of that variable's code (of its value: `Split.by_value`) — and to every bucket for a consumer
held whole. An element no consumer matches goes nowhere. A bucket re-checks what it holds
(`FactSide.mine`, the split items in `where.solutions`), so sending more is never wrong, only slower.
"""
from __future__ import annotations

import numpy as np

from tefq.plan.logical import EventFact
from tefq.spark.kernels.general.coding import Elements
from tefq.spark.kernels.general.facts import CodedBackground, clause_rows
from tefq.spark.kernels.general.query import CompiledQuery
from tefq.spark.kernels.general.tables import match


def element_buckets(cq: CompiledQuery, el: Elements, bg: CodedBackground, dictionary, buckets: int) -> np.ndarray:
    """(n, buckets) bool: the buckets each element must reach."""
    to = np.zeros((len(el), buckets), bool)
    splits = dict(cq.split.facts) if cq.split is not None else {}
    for f in cq.facts:
        if not isinstance(f, EventFact):
            continue
        col = splits.get(f.name, -1)
        for _, codes in clause_rows(f, el, bg, dictionary):
            rows = codes[:, 0]
            if col < 0 or buckets == 1:
                to[rows] = True
            else:
                to[rows, cq.split.buckets(codes[:, 1 + col], buckets, dictionary)] = True
    var = cq.split.var if cq.split is not None else None
    for wp in cq.items:
        if wp.kind != "event":
            continue
        rows, cols = match(wp.pattern, el.spo)
        if var in cols and buckets > 1:
            to[rows, cq.split.buckets(cols[var], buckets, dictionary)] = True
        else:
            to[rows] = True
    return to
