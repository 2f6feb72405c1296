"""A BGP's joins on int64 term codes, its tables plain numpy columns (no DataFrame).

`Batch.coded_triples` gives every window's triples as codes into one array of terms (a term has
one code in every position). A pattern's solutions are then integer columns, the joins hash
integers instead of strings, and no pandas block is built, copied or consolidated per join: on
the 9-pattern sensor query that bookkeeping cost more than the joins. The rows come out in
exactly the order `pandas.merge` gives them (the same join indexers), so every window's rows,
and whatever an order-sensitive operator makes of them, are the string path's.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd
from pandas.core.reshape.merge import get_join_indexers

from tefq.oracle.windowed.r2r import to_nt

Columns = dict[str, np.ndarray]  # one column per variable (and the window key), equal lengths


def size(table: Columns) -> int:
    return len(next(iter(table.values()))) if table else 0


def rows(table: Columns, index: np.ndarray) -> Columns:
    return {c: v[index] for c, v in table.items()}


def match(triples: Columns, t, keys: list[str], code: Callable[[str], int],
          variable: Callable[[object], str | None]) -> Columns:
    """The coded triples matching pattern `t` (constants by `code`), as solutions (`keys` kept)."""
    keep = np.ones(size(triples), bool)
    names: dict[str, str] = {}
    for col, x in (("s", t[0]), ("p", t[1]), ("o", t[2])):
        n = variable(x)
        if n is None:
            keep &= triples[col] == code(to_nt(x))
        elif n in names.values():  # a repeated variable: the positions must be equal
            keep &= triples[col] == triples[next(c for c, v in names.items() if v == n)]
        else:
            names[col] = n
    index = np.flatnonzero(keep)
    return {**{k: triples[k][index] for k in keys}, **{n: triples[c][index] for c, n in names.items()}}


def join(a: Columns, b: Columns) -> Columns:
    """The inner join on the shared columns (all bound: BGP solutions), rows in pandas.merge's order."""
    shared = [c for c in a if c in b]
    left, right = get_join_indexers([a[c] for c in shared], [b[c] for c in shared], sort=False, how="inner")
    left = np.arange(size(a)) if left is None else left
    right = np.arange(size(b)) if right is None else right
    return {**rows(a, left), **{c: v[right] for c, v in b.items() if c not in a}}


def decoded(table: Columns, columns: list[str], terms: np.ndarray, keys: set[str]) -> pd.DataFrame:
    """The solutions with their terms in place of the codes (`keys` stay as they are)."""
    return pd.DataFrame({c: table[c] if c in keys else terms[table[c]] for c in columns})


__all__ = ["Columns", "decoded", "join", "match", "rows", "size"]
