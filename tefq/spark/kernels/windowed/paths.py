"""SPARQL 1.1 property paths (§9.3) over many windows' triples at once: a path is a table of
(window, s, o) pairs, built by relational operators.

* an IRI: its triples; `^p`: the pairs swapped; `p/q`: a join on the middle node; `p|q`: both
  (sequences and alternatives are bags, as SPARQL's translation into joins and unions makes them);
* `!(a|b|^c)`: the triples whose predicate is none of a, b (and, swapped, none of c);
* `p*`, `p+`, `p?`: sets of pairs; `+` is a fixed point (the pairs reached by one more step,
  joined on the frontier only, until no new pair appears), `*` and `?` add the zero-length pairs
  (x, x) of every node of the window's graph — and of a constant end (`:a :p* ?x` holds :a even
  when :a is in no triple: `with_constant_ends`).
"""
from __future__ import annotations

from typing import Callable

import pandas as pd
from rdflib import URIRef
from rdflib.paths import AlternativePath, InvPath, MulPath, NegatedPath, Path, SequencePath

from tefq.oracle.windowed.r2r import to_nt

PAIR = ["s", "o"]


def pairs(path, triples: pd.DataFrame, keys: list[str], nodes: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """The (keys..., s, o) pairs `path` connects in `triples` (keys..., s, p, o); `nodes()`: every
    node of each window's graph as (keys..., s)."""
    if isinstance(path, URIRef):
        return triples.loc[triples["p"] == to_nt(path), keys + PAIR].reset_index(drop=True)
    if isinstance(path, InvPath):
        return _swapped(pairs(path.arg, triples, keys, nodes), keys)
    if isinstance(path, SequencePath):
        out = pairs(path.args[0], triples, keys, nodes)
        for step in path.args[1:]:
            nxt = pairs(step, triples, keys, nodes)
            out = out.rename(columns={"o": "\x00m"}).merge(nxt.rename(columns={"s": "\x00m"}), on=keys + ["\x00m"])
            out = out[keys + PAIR]
        return out.reset_index(drop=True)
    if isinstance(path, AlternativePath):
        return pd.concat([pairs(a, triples, keys, nodes) for a in path.args], ignore_index=True)
    if isinstance(path, NegatedPath):
        return _negated(path, triples, keys)
    if isinstance(path, MulPath):
        base = pairs(path.path, triples, keys, nodes).drop_duplicates(ignore_index=True)
        out = closure(base, keys) if path.more else base
        if path.zero:
            out = pd.concat([out, nodes().assign(o=lambda d: d["s"])[keys + PAIR]], ignore_index=True)
        return out.drop_duplicates(ignore_index=True)
    raise TypeError(f"not a property path: {path!r}")


def _swapped(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    return df.rename(columns={"s": "o", "o": "s"})[keys + PAIR]


def _negated(path: NegatedPath, triples: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """`!(a|^b)`: forward triples whose predicate is not a, inverse ones whose predicate is not b
    (rdflib keeps the inverse members as InvPath; without any, only forward triples)."""
    forward = [to_nt(a) for a in path.args if isinstance(a, URIRef)]
    inverse = [to_nt(a.arg) for a in path.args if isinstance(a, InvPath)]
    parts = []
    if forward or not inverse:
        parts.append(triples.loc[~triples["p"].isin(forward), keys + PAIR])
    if inverse:
        parts.append(_swapped(triples.loc[~triples["p"].isin(inverse), keys + PAIR], keys))
    return pd.concat(parts, ignore_index=True)


def closure(base: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """`base+`: every pair reached by one or more steps of `base` (distinct pairs), a fixed point
    extended from the newest pairs only."""
    reached = base
    frontier = base
    step = base.rename(columns={"s": "\x00m", "o": "\x00n"})
    while len(frontier):
        nxt = frontier.rename(columns={"o": "\x00m"}).merge(step, on=keys + ["\x00m"])
        nxt = nxt.rename(columns={"\x00n": "o"})[keys + PAIR].drop_duplicates()
        new = nxt.merge(reached, on=keys + PAIR, how="left", indicator=True)
        frontier = new.loc[new["_merge"] == "left_only", keys + PAIR].reset_index(drop=True)
        reached = pd.concat([reached, frontier], ignore_index=True)
    return reached


def nullable(path) -> bool:
    """Whether `path` connects a node to itself by a zero-length path."""
    if isinstance(path, MulPath):
        return path.zero or nullable(path.path)
    if isinstance(path, SequencePath):
        return all(nullable(a) for a in path.args)
    if isinstance(path, AlternativePath):
        return any(nullable(a) for a in path.args)
    if isinstance(path, InvPath):
        return nullable(path.arg)
    return False


def with_constant_ends(found: pd.DataFrame, path, ends: list[str], windows: pd.DataFrame,
                       keys: list[str]) -> pd.DataFrame:
    """A nullable path's (c, c) pair for a constant end `c` in every window (SPARQL's zero-length
    path of a term that need not be in the graph)."""
    if not nullable(path) or not ends:
        return found
    extra = pd.concat([windows.assign(s=c, o=c) for c in ends], ignore_index=True)[keys + PAIR]
    return pd.concat([found, extra], ignore_index=True).drop_duplicates(ignore_index=True)


def is_path(x) -> bool:
    return isinstance(x, Path) and not isinstance(x, URIRef)


__all__ = ["pairs", "closure", "nullable", "with_constant_ends", "is_path"]
