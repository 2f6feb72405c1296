"""Solution sequences as pandas tables, and SPARQL's joins over them (no Spark, no rdflib algebra).

A solution sequence is a DataFrame: one column per variable, N-Triples terms as cells, None for
unbound. A column whose name starts with NUL is not a variable but a key the caller carries
along (the window id of `tefq.spark.kernels.windowed.multiwindow`): always bound, it joins like a variable.

These are the primitives of tefq.spark.kernels.windowed.sparql's one-window evaluator, made window-agnostic
(phase 2 of issue 23: sparql.py imports them from here instead of keeping its own copies).
"""
from __future__ import annotations

from typing import Iterable, Iterator

import numpy as np
import pandas as pd

ROW = "\x00row"  # a left row's number, while an OPTIONAL or MINUS finds its matches


def normalised(df: pd.DataFrame) -> pd.DataFrame:
    """Object columns with None for unbound (merges and concats bring NaN)."""
    if len(df.columns) and df.isna().to_numpy().any():
        df = df.astype(object).where(df.notna(), None)
    return df


def empty(columns: Iterable[str] = ()) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype=object) for c in columns})


def by_mask(df: pd.DataFrame, shared: list[str]) -> Iterator[tuple[set[str], pd.DataFrame]]:
    """The rows of `df` split by which of the `shared` variables they bind."""
    if not len(df):
        return
    bound = df[shared].notna().to_numpy()
    masks, inv = np.unique(bound, axis=0, return_inverse=True)
    for i, m in enumerate(masks):
        yield {c for c, b in zip(shared, m) if b}, df[inv.reshape(-1) == i]


def join(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """SPARQL's join: compatible solutions merged; an unbound variable is compatible with any value.
    Rows come out in (left row, right row) order, as pandas' merge gives them."""
    if not len(a.columns):
        return b.loc[b.index.repeat(len(a))].reset_index(drop=True) if len(a) else empty(b.columns)
    if not len(b.columns):
        return a.loc[a.index.repeat(len(b))].reset_index(drop=True) if len(b) else empty(a.columns)
    shared = [c for c in a.columns if c in b.columns and c != ROW]
    if not len(a) or not len(b):
        return empty(list(a.columns) + [c for c in b.columns if c not in a.columns])
    if not shared:
        return a.merge(b, how="cross")
    if not a[shared].isna().to_numpy().any() and not b[shared].isna().to_numpy().any():
        return a.merge(b, on=shared)
    return _join_by_masks(a, b, shared)


def _join_by_masks(a: pd.DataFrame, b: pd.DataFrame, shared: list[str]) -> pd.DataFrame:
    """Join sides that leave some shared variables unbound: each pair of parts joins on the
    variables both bind; the others take whichever side binds them."""
    parts = []
    for am, asub in by_mask(a, shared):
        for bm, bsub in by_mask(b, shared):
            on = [c for c in shared if c in am and c in bm]
            left = asub.rename(columns={c: c + "\0a" for c in shared if c not in on})
            right = bsub.rename(columns={c: c + "\0b" for c in shared if c not in on})
            m = left.merge(right, on=on) if on else left.merge(right, how="cross")
            for c in shared:
                if c not in on:
                    m[c] = m[c + "\0a"].where(m[c + "\0a"].notna(), m[c + "\0b"])
                    m = m.drop(columns=[c + "\0a", c + "\0b"])
            parts.append(m)
    cols = list(a.columns) + [c for c in b.columns if c not in a.columns]
    return normalised(pd.concat(parts, ignore_index=True)[cols]) if parts else empty(cols)


def left_join(a: pd.DataFrame, b: pd.DataFrame, keep) -> pd.DataFrame:
    """OPTIONAL: every left row joined with its compatible right rows that `keep(joined)` (a
    boolean mask, or None for all) accepts; a left row with none stays as it is, after them."""
    a = a.reset_index(drop=True)
    j = join(a.assign(**{ROW: np.arange(len(a))}), b)
    if len(j) and keep is not None:
        j = j[keep(j)]
    rest = a[~np.isin(np.arange(len(a)), j[ROW].to_numpy())]
    return normalised(pd.concat([j.drop(columns=ROW), rest], ignore_index=True))


def minus(a: pd.DataFrame, b: pd.DataFrame, shared: list[str], keys: list[str]) -> pd.DataFrame:
    """MINUS: the rows of `a` without a compatible row of `b` that shares a bound variable of
    `shared`; `keys` (always bound, e.g. the window id) must match too but share no variable."""
    a = a.reset_index(drop=True)
    if not shared or not len(a) or not len(b):
        return a
    removed = np.zeros(len(a), bool)
    a_id = a[keys + shared].assign(**{ROW: np.arange(len(a))})
    for am, asub in by_mask(a_id, shared):
        for bm, bsub in by_mask(b[keys + shared], shared):
            on = [c for c in shared if c in am and c in bm]
            if on:  # compatible and sharing a bound variable: removed
                hit = asub[keys + on + [ROW]].merge(bsub[keys + on].drop_duplicates(), on=keys + on)
                removed[hit[ROW].to_numpy()] = True
    return a[~removed].reset_index(drop=True)


def group_codes(columns: list[np.ndarray]) -> np.ndarray:
    """Each row's group (rows equal on every column, None a value like any other), numbered in
    order of first appearance, as pandas' `groupby(sort=False).ngroup()` numbers them."""
    combined = np.zeros(len(columns[0]) if columns else 0, np.int64)
    radix = 1
    for col in columns:
        codes, uniques = pd.factorize(col, use_na_sentinel=False)
        if radix * max(1, len(uniques)) >= 2 ** 62:  # too many combinations for one int64: renumber first
            combined, radix = pd.factorize(combined)[0].astype(np.int64), int(combined.max(initial=0)) + 1
        combined = combined * max(1, len(uniques)) + codes
        radix *= max(1, len(uniques))
    return pd.factorize(combined)[0].astype(np.int64)


def first_rows(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(codes, return_index=True)` for `group_codes`' codes (numbered as they first
    appear, so a row starts a group exactly when its code exceeds every code before it): one
    pass instead of a sort of millions of rows."""
    if not len(codes):
        return codes[:0], np.zeros(0, np.int64)
    new = np.empty(len(codes), bool)
    new[0] = True
    new[1:] = codes[1:] > np.maximum.accumulate(codes)[:-1]
    first = np.flatnonzero(new)
    return codes[first], first


__all__ = ["ROW", "first_rows", "group_codes", "normalised", "empty", "by_mask", "join", "left_join", "minus"]
