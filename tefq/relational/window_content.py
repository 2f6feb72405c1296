"""Many windows' contents as one table: each element assigned to every window it falls in.

A window is named by its report instant `c` (its close, spec §8): the window of a FROM clause with
range R holds the elements of its stream with `max(c - R, t0) <= ts < c` (`<= c` with closed
bounds, YABench's `[o, c]`), as the windowed oracle's `_Stream.between` takes them. An element
with timestamp t is therefore in the windows closing in `(t, t + R]` (`[t, t + R]`): two
binary searches in the sorted report instants, then one `np.repeat`.

A window's content is a *set* of triples (an RDF graph): repeats inside a window are dropped,
keeping the first in the oracle's order (by timestamp, then FROM clause, external elements
before fed-back ones, then stream order), so every window's rows come out in the order the
one-window evaluator gives them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from tefq.oracle.windowed.r2r import to_nt, to_rdflib

WINDOW = "\x00w"  # the window-id column of every solution table (not a SPARQL variable)
COLUMNS = ["ts", "s", "p", "o"]


@dataclass
class Batch:
    """The distinct triples of each window (`WINDOW`, s, p, o: N-Triples terms as rdflib prints
    them), every window id evaluated (empty windows included), and per window the latest
    timestamp of each triple when the query calls `timestamp()`."""

    triples: pd.DataFrame
    windows: np.ndarray
    stamps: dict[int, dict] | None = None


@dataclass(frozen=True)
class Part:
    """One FROM clause's share of a batch: its stream's elements (`COLUMNS`, sorted by ts,
    stable) and its range."""

    elements: pd.DataFrame
    range_ms: int


def windows_of(ts: np.ndarray, instants: np.ndarray, range_ms: int, closed: bool) -> tuple[np.ndarray, np.ndarray]:
    """For timestamps `ts`, the index range [lo, hi) of the sorted `instants` whose windows hold them."""
    lo = np.searchsorted(instants, ts, side="left" if closed else "right")
    hi = np.searchsorted(instants, ts + range_ms, side="right")
    return lo, np.maximum(lo, hi)


def contents_size(parts: Sequence[Part], instants: np.ndarray, t0: int, closed: bool = False) -> np.ndarray:
    """How many elements each window holds (before de-duplication), without assigning them."""
    out = np.zeros(len(instants), np.int64)
    for part in parts:
        ts = part.elements["ts"].to_numpy(np.int64)
        start = np.maximum(instants - part.range_ms, t0)
        lo = np.searchsorted(ts, start, side="left")
        hi = np.searchsorted(ts, instants, side="right" if closed else "left")
        out += np.maximum(hi - lo, 0)
    return out


def _explode(parts: Sequence[Part], instants: np.ndarray, t0: int, closed: bool) -> pd.DataFrame:
    """(window, ts, s, p, o) for every (element, window holding it), in the oracle's order."""
    frames = []
    for part in parts:
        els = part.elements
        ts = els["ts"].to_numpy(np.int64)
        keep = ts >= t0
        lo, hi = windows_of(ts, instants, part.range_ms, closed)
        n = np.where(keep, hi - lo, 0)
        rows = np.repeat(np.arange(len(els)), n)
        first = np.repeat(np.cumsum(n) - n, n)
        which = np.repeat(lo, n) + (np.arange(len(rows)) - first)
        frame = els.iloc[rows].reset_index(drop=True)
        frame.insert(0, WINDOW, instants[which])
        frames.append(frame)
    if not frames:
        return pd.DataFrame({WINDOW: pd.Series([], dtype=np.int64), **{c: [] for c in COLUMNS}})
    out = pd.concat(frames, ignore_index=True)
    order = np.lexsort((out["ts"].to_numpy(np.int64), out[WINDOW].to_numpy(np.int64)))  # stable
    return out.iloc[order].reset_index(drop=True)


def normal_terms(col: pd.Series) -> pd.Series:
    """rdflib's view of each term (one conversion per distinct literal; IRIs and blank nodes
    come back unchanged)."""
    codes, uniques = pd.factorize(col, use_na_sentinel=False)
    fixed = np.array([to_nt(to_rdflib(t)) if t.startswith('"') else t for t in uniques.tolist()], dtype=object)
    return pd.Series(fixed[codes] if len(fixed) else np.array([], dtype=object), index=col.index, dtype=object)


def _stamps(exploded: pd.DataFrame) -> dict[int, dict]:
    """Per window, the latest timestamp of each triple, keyed as `timestamp()` looks it up."""
    latest = exploded.groupby([WINDOW, "s", "p", "o"], sort=False)["ts"].max()
    out: dict[int, dict] = {}
    for (w, s, p, o), t in latest.items():
        out.setdefault(int(w), {})[(to_rdflib(s), to_rdflib(p), to_rdflib(o))] = int(t)
    return out


def batch(parts: Sequence[Part], instants: np.ndarray, t0: int = 0, predicates: frozenset[str] | None = None,
          with_stamps: bool = False, closed: bool = False) -> Batch:
    """The windows closing at `instants` (sorted), their content drawn from `parts`."""
    instants = np.asarray(instants, dtype=np.int64)
    if predicates is not None:
        parts = [Part(p.elements[p.elements["p"].isin(predicates)], p.range_ms) for p in parts]
    exploded = _explode(parts, instants, t0, closed)
    for c in ("s", "p", "o"):
        exploded[c] = normal_terms(exploded[c])
    stamps = _stamps(exploded) if with_stamps and len(exploded) else ({} if with_stamps else None)
    triples = exploded.drop(columns="ts").drop_duplicates(ignore_index=True)
    return Batch(triples, instants, stamps)


__all__ = ["WINDOW", "COLUMNS", "Batch", "Part", "batch", "contents_size", "windows_of", "normal_terms"]
