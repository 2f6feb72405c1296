"""Triple patterns over coded triple columns, and the relations the WHERE join works on.

Every table is a `tefq.spark.kernels.joins.Relation`: named int64 columns (term codes, or times in
ms for interval starts and the hidden `#s<i>` / `#e<i>` item columns) and an activity `[start, end)`
in ms. A background row or a clause binding has the whole time line, `[NEVER, ALWAYS)`, so the one
`interval_join` serves every join: on shared names, activities intersected.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from tefq.plan.logical import Node, Pattern, Term, Var
from tefq.spark.kernels.general.coding import encode_one
from tefq.spark.kernels.intervals import OPEN
from tefq.spark.kernels.joins import Relation, expand, interval_join, key_ranks

NEVER = np.int64(-(2**62))  # activity bounds of what holds at every time (background, clause bindings)
ALWAYS = np.int64(2**62 + 2**61)  # above any fact end (OPEN = 2^62) plus a period


@lru_cache(maxsize=4096)
def code_of(term: str) -> int:
    return encode_one(term)


def node_columns(nodes: tuple[Node, Node, Node], columns: dict[str, np.ndarray], n: int) -> np.ndarray:
    """(n, 3) codes of a template: a variable's column, a constant's code."""
    out = np.empty((n, 3), np.int64)
    for i, node in enumerate(nodes):
        out[:, i] = columns[node.name] if isinstance(node, Var) else code_of(node.nt)
    return out


def match(pattern: Pattern, spo: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Rows of `spo` that `pattern` matches (constants equal, a repeated variable equal) and the
    pattern variables' columns over those rows."""
    nodes = (pattern.s, pattern.p, pattern.o)
    keep = np.ones(len(spo), bool)
    first: dict[str, int] = {}
    for i, node in enumerate(nodes):
        if isinstance(node, Term):
            keep &= spo[:, i] == code_of(node.nt)
        elif node.name in first:
            keep &= spo[:, i] == spo[:, first[node.name]]
        else:
            first[node.name] = i
    rows = np.nonzero(keep)[0]
    return rows, {name: spo[rows, i] for name, i in first.items()}


def relation(columns: dict[str, np.ndarray], start: np.ndarray | None = None, end: np.ndarray | None = None,
             n: int | None = None) -> Relation:
    """A Relation from named columns (activity: the whole time line unless given)."""
    names = tuple(columns)
    if n is None:
        n = len(next(iter(columns.values()))) if columns else (0 if start is None else len(start))
    codes = np.column_stack([columns[k] for k in names]).astype(np.int64) if names else np.zeros((n, 0), np.int64)
    s = np.full(n, NEVER, np.int64) if start is None else np.asarray(start, np.int64)
    e = np.full(n, ALWAYS, np.int64) if end is None else np.asarray(end, np.int64)
    return Relation(names, codes.reshape(n, len(names)), s, e)


def column(r: Relation, name: str) -> np.ndarray:
    return r.codes[:, r.vars.index(name)]


def with_columns(r: Relation, extra: dict[str, np.ndarray]) -> Relation:
    names = r.vars + tuple(k for k in extra if k not in r.vars)
    cols = {k: column(r, k) for k in r.vars}
    cols.update(extra)
    return Relation(names, np.column_stack([cols[k] for k in names]).reshape(len(r), len(names)).astype(np.int64)
                    if names else np.zeros((len(r), 0), np.int64), r.start, r.end)


def select_rows(r: Relation, keep: np.ndarray) -> Relation:
    return r if keep.all() else r.take(np.nonzero(keep)[0])


def union(parts: list[Relation], names: tuple[str, ...]) -> Relation:
    parts = [p for p in parts if len(p)]
    return Relation.concat(parts) if parts else Relation.empty(names)


def is_open(end: np.ndarray) -> np.ndarray:
    return end >= OPEN


def timeless(r: Relation) -> bool:
    """Every row holds at every time (background, clause bindings)."""
    return bool(len(r)) and bool((r.start == NEVER).all() and (r.end == ALWAYS).all())


def join(a: Relation, b: Relation) -> Relation:
    """Rows of `a` and `b` agreeing on their shared variables, activities intersected: a hash join
    when one side holds at every time (no time sweep needed), else `interval_join`."""
    if not (timeless(a) or timeless(b)) or not len(a) or not len(b):
        return interval_join(a, b)
    shared = tuple(v for v in a.vars if v in b.vars)
    ka, kb = key_ranks(a.columns(shared), b.columns(shared))
    order = np.argsort(kb, kind="stable")
    sorted_kb = kb[order]
    ia, pos = expand(np.searchsorted(sorted_kb, ka, "left"), np.searchsorted(sorted_kb, ka, "right"))
    ib = order[pos]
    extra = [b.vars.index(v) for v in b.vars if v not in a.vars]
    names = a.vars + tuple(v for v in b.vars if v not in a.vars)
    codes = np.concatenate([a.codes[ia], b.codes[ib][:, extra]], axis=1)
    return Relation(names, codes, np.maximum(a.start[ia], b.start[ib]), np.minimum(a.end[ia], b.end[ib]))
