"""Vectorised derived facts (spec §3.2) over columns of intervals: numpy only, no Spark.

A `Relation` holds intervals `[start, end)` of solutions over named variables, each variable an
int64 term code. `interval_join` joins two relations on their shared variables and intersects the
intervals (only overlapping pairs are produced: a sort and two searchsorted sweeps, no nested
loop); `coalesce` unions the intervals of equal keys into maximal intervals (touching ones merge:
`[a, b)` and `[b, c)` are one fact). `derive` is the whole of §3.2: the body joined left to right,
projected on the identity, coalesced. The Spark operator (`tefq.spark.operators.fact`) calls it
once per micro-batch.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tefq.spark.kernels.exact import expand
from tefq.spark.kernels.intervals import OPEN


@dataclass
class Relation:
    """Intervals of solutions: `codes[:, i]` is the term code of `vars[i]`."""

    vars: tuple[str, ...]
    codes: np.ndarray  # (n, len(vars)) int64
    start: np.ndarray
    end: np.ndarray

    def __len__(self) -> int:
        return len(self.start)

    @staticmethod
    def empty(names: tuple[str, ...]) -> "Relation":
        z = np.zeros(0, np.int64)
        return Relation(names, np.zeros((0, len(names)), np.int64), z, z.copy())

    def take(self, idx: np.ndarray) -> "Relation":
        return Relation(self.vars, self.codes[idx], self.start[idx], self.end[idx])

    def columns(self, names: tuple[str, ...]) -> np.ndarray:
        return self.codes[:, [self.vars.index(v) for v in names]].reshape(len(self), len(names))

    def project(self, names: tuple[str, ...]) -> "Relation":
        return Relation(names, self.columns(names), self.start, self.end)

    def nonempty(self) -> "Relation":
        keep = self.start < self.end
        return self if keep.all() else self.take(np.nonzero(keep)[0])

    @staticmethod
    def concat(parts: list["Relation"]) -> "Relation":
        names = parts[0].vars
        parts = [p.project(names) for p in parts]
        return Relation(names, np.concatenate([p.codes for p in parts]), np.concatenate([p.start for p in parts]),
                        np.concatenate([p.end for p in parts]))


def key_ranks(*keys: np.ndarray) -> list[np.ndarray]:
    """Dense ranks of the rows of several (n_i, k) code arrays in one shared numbering."""
    sizes = [len(k) for k in keys]
    allk = np.concatenate(keys)
    n, k = allk.shape
    if k == 0 or n == 0:
        return [np.zeros(m, np.int64) for m in sizes]
    if k == 1:
        _, inv = np.unique(allk[:, 0], return_inverse=True)
        inv = inv.reshape(-1).astype(np.int64)
    else:  # one lexsort, then a new rank wherever the sorted row changes
        order = np.lexsort(allk.T[::-1])
        srt = allk[order]
        new = np.ones(n, dtype=np.int64)
        new[1:] = (srt[1:] != srt[:-1]).any(axis=1)
        inv = np.empty(n, dtype=np.int64)
        inv[order] = np.cumsum(new) - 1
    return np.split(inv, np.cumsum(sizes)[:-1])


def dense_key(codes: np.ndarray) -> np.ndarray:
    """An int64 key per row below 2^31, equal for equal rows, in the rows' order: one column
    already in [0, 2^31) (row numbers, ranks) is its own key; else `key_ranks`."""
    if codes.shape[1] == 1 and len(codes) and int(codes.min()) >= 0 and int(codes.max()) < 1 << 31:
        return codes[:, 0].astype(np.int64)
    return key_ranks(codes)[0]


@dataclass
class TimeRanks:
    """Order-preserving ranks below 2^31 of instants, to pack with a key into one int64, and back.
    Instants fall into bands of 2^61 ms (`v >> 61`): the finite times, open ends near OPEN (and
    OPEN plus a period), "always" starts near -OPEN. Each band's ranks are offsets from its least
    instant, the bands one after the other: no sort needed. When the bands together span 2^31 ms
    or more (about 25 days), the ranks index a sorted vocabulary of the instants instead."""

    band_lo: np.ndarray  # per band (8 of them, by `v >> 61`): its least instant
    band_offset: np.ndarray  # per band: the rank of its least instant
    vocabulary: np.ndarray | None = None

    @staticmethod
    def of(*arrays: np.ndarray) -> tuple["TimeRanks", list[np.ndarray]]:
        allv = np.concatenate(arrays)
        band = (allv >> 61) + 4  # 0..7
        lo = np.zeros(8, np.int64)
        span = np.zeros(8, np.int64)
        for b in np.nonzero(np.bincount(band, minlength=8))[0]:
            vals = allv[band == b]
            lo[b], span[b] = vals.min(), int(vals.max()) - int(vals.min()) + 1
        if int(span.sum()) < 1 << 31:
            offset = np.cumsum(span) - span
            tr = TimeRanks(lo, offset)
            return tr, [a - lo[(a >> 61) + 4] + offset[(a >> 61) + 4] for a in arrays]
        times = np.unique(allv)
        return TimeRanks(lo, span, times), [np.searchsorted(times, a) for a in arrays]

    def times(self, ranks: np.ndarray) -> np.ndarray:
        if self.vocabulary is not None:
            return self.vocabulary[ranks]
        band = np.searchsorted(self.band_offset, ranks, side="right") - 1
        return ranks - self.band_offset[band] + self.band_lo[band]


def interval_join(a: Relation, b: Relation) -> Relation:
    """Pairs of `a` and `b` rows that agree on the shared variables and whose intervals overlap,
    with the intersection. Every overlapping pair is found exactly once: either b starts inside a
    (`a.start <= b.start < a.end`) or a starts strictly inside b (`b.start < a.start < b.end`)."""
    a, b = a.nonempty(), b.nonempty()
    shared = tuple(v for v in a.vars if v in b.vars)
    names = a.vars + tuple(v for v in b.vars if v not in a.vars)
    if not len(a) or not len(b):
        return Relation.empty(names)
    ka, kb = key_ranks(a.columns(shared), b.columns(shared))
    # Times as order-preserving ranks, so that (key, time) packs into one int64 sort key.
    _, (a_start, a_end, b_start, b_end) = TimeRanks.of(a.start, a.end, b.start, b.end)
    a_keys, b_keys = (ka << 32) | a_start, (kb << 32) | b_start
    a_order = np.argsort(a_keys, kind="stable")
    b_order = np.argsort(b_keys, kind="stable")
    a, a_keys, a_ends = a.take(a_order), a_keys[a_order], ((ka << 32) | a_end)[a_order]
    b, b_keys, b_ends = b.take(b_order), b_keys[b_order], ((kb << 32) | b_end)[b_order]
    # b starting in [a.start, a.end)
    o1, p1 = expand(np.searchsorted(b_keys, a_keys, "left"), np.searchsorted(b_keys, a_ends, "left"))
    # a starting in (b.start, b.end)
    o2, p2 = expand(np.searchsorted(a_keys, b_keys, "right"), np.searchsorted(a_keys, b_ends, "left"))
    ia = np.concatenate([o1, p2])
    ib = np.concatenate([p1, o2])
    extra = [b.vars.index(v) for v in b.vars if v not in a.vars]
    codes = np.concatenate([a.codes[ia], b.codes[ib][:, extra]], axis=1)
    return Relation(names, codes, np.maximum(a.start[ia], b.start[ib]), np.minimum(a.end[ia], b.end[ib]))


def coalesce(r: Relation) -> Relation:
    """Per distinct code row, the union of its intervals as sorted maximal intervals (spec §3.2:
    derivations of one identity coalesce; touching intervals merge). Empty intervals vanish."""
    r = r.nonempty()
    if len(r) < 2:
        return r
    key = dense_key(r.codes)
    times, (srank, erank) = TimeRanks.of(r.start, r.end)
    order = np.argsort((key << 32) | srank, kind="stable")
    key, srank, erank = key[order], srank[order], erank[order]
    reach = np.maximum.accumulate((key << 32) | erank)  # running max end within a key (keys ascend)
    new = np.ones(len(order), dtype=bool)
    new[1:] = (key[1:] != key[:-1]) | (srank[1:] > (reach[:-1] & 0xFFFFFFFF))
    firsts = np.nonzero(new)[0]
    ends = np.maximum.reduceat(erank, firsts)
    pick = order[firsts]
    return Relation(r.vars, r.codes[pick], r.start[pick], times.times(ends))


def derive(bodies: list[Relation], identity: tuple[str, ...], carried: Relation | None = None) -> Relation:
    """Spec §3.2: the body relations joined (intervals intersected), projected on the identity,
    coalesced together with `carried` (earlier intervals of the same fact)."""
    joined = bodies[0]
    for b in bodies[1:]:
        joined = interval_join(joined, b)
    parts = [joined.nonempty().project(identity)]
    if carried is not None and len(carried):
        parts.append(carried.project(identity))
    return coalesce(Relation.concat(parts))


def cut(r: Relation, at: int) -> Relation:
    """The relation as seen at `at`: open intervals end there (they continue in later pieces)."""
    return Relation(r.vars, r.codes, r.start, np.where(r.end == OPEN, np.int64(at), r.end))
