"""Aggregates per (tick, group) from contributions, many ticks at once.

Cells are (group, tick) packed per group over the ticks its ranges touch
(`tefq.spark.kernels.tick_aggregates.Layout`), so a contribution over a range of ticks costs two
difference-array entries (dense, or sparse when the ranges are few next to the cells they span):
- COUNT(*), COUNT e: counts of ranges (of those whose argument evaluated);
- DISTINCT: the ranges merged per (group, value) first (`joins.coalesce`), then as without;
- SUM / AVG: exact limb sums of doubles or int64 sums of small integers over ranges; anything else
  (decimals, mixed kinds, negative or tiny doubles) per (cell, value) with `sums.ExactTotal`;
- MIN / MAX: ranks of the values in the oracle's order, the best per cell over every (range, tick)
  pair (the bounded explosion MIN/MAX needs).
With `partial`, SUM/AVG give their `sums.CellSums` (limb or integer sums as arrays, `ExactTotal`s
only for what neither holds) and MIN/MAX their values, for the driver to merge.
"""
from __future__ import annotations

import numpy as np

from tefq.semantics.expressions import distinct_key, order_key
from tefq.plan.logical import Aggregate
from tefq.spark.kernels.exact import age_limbs, ages_fit, range_sums
from tefq.spark.kernels.general.contributions import Aged, Contributions
from tefq.spark.kernels.general.expressions import Values
from tefq.spark.kernels.general.sums import (SMALL_INT, CellSums, ExactTotal, double_limbs, int_range_sums,
                                             numeric_kinds)
from tefq.spark.kernels.joins import Relation, coalesce, expand, key_ranks
from tefq.spark.kernels.tick_aggregates import Layout


def value_ids(v: Values) -> np.ndarray:
    """Per value, an id equal for values the oracle's DISTINCT keeps once ((class, value) equal)."""
    tags = {"int": 0, "double": 1, "dt": 2, "bool": 3}
    if v.kind in tags:
        payload = v.data.astype(np.float64).view(np.int64) if v.kind == "double" else v.data.astype(np.int64)
        if v.kind == "double":
            payload = np.where(v.data == 0, 0, payload)  # -0.0 == 0.0
        return key_ranks(np.column_stack([np.full(len(v), tags[v.kind]), payload]))[0]
    if v.inputs is not None and v.inputs_are_values:
        return v.inputs
    if v.inputs is not None:  # one key per distinct input, not per row
        first = np.zeros(int(v.inputs.max(initial=-1)) + 1, np.int64)
        first[v.inputs[::-1]] = np.arange(len(v) - 1, -1, -1)
        return _object_ids(v.data[first])[v.inputs]
    return _object_ids(v.data)


def _object_ids(data: np.ndarray) -> np.ndarray:
    seen: dict = {}
    return np.fromiter((seen.setdefault(distinct_key(x), len(seen)) for x in data.tolist()), np.int64, len(data))


def distinct(c: Contributions, v: Values) -> tuple[np.ndarray, np.ndarray, np.ndarray, Values]:
    """Ranges merged per (group, distinct value): (group, ka, kb, one value per merged range)."""
    ok = np.nonzero(v.ok)[0]
    ids = value_ids(v.take(ok))
    rep = np.zeros(int(ids.max(initial=-1)) + 1, np.int64)
    rep[ids[::-1]] = ok[::-1]
    g = c.group[ok]
    if len(g) and max(int(g.max()), int(ids.max())) < 2**31:  # one int64 key: a 1-D unique, not a lexsort
        merged = coalesce(Relation(("k",), ((g << 32) | ids).reshape(-1, 1), c.ka[ok], c.kb[ok]))
        key = merged.codes[:, 0]
        return key >> 32, merged.start, merged.end, v.take(rep[key & 0xFFFFFFFF])
    merged = coalesce(Relation(("g", "v"), np.column_stack([g, ids]), c.ka[ok], c.kb[ok]))
    return merged.codes[:, 0], merged.start, merged.end, v.take(rep[merged.codes[:, 1]])


def ranks(v: Values) -> np.ndarray:
    """Ranks of the values in MIN/MAX's order (`order_key`, a total order: equal rank, equal term)."""
    if v.kind in ("int", "double", "dt", "bool"):  # numpy's order is order_key's (NaN last, -0.0 = 0.0)
        return np.unique(v.data, return_inverse=True)[1].reshape(-1).astype(np.int64)
    ids = value_ids(v)
    first = np.zeros(int(ids.max(initial=-1)) + 1, np.int64)
    first[ids[::-1]] = np.arange(len(ids) - 1, -1, -1)
    keys = [order_key(x) for x in v.as_objects().data[first].tolist()]  # one per distinct value
    order = sorted(range(len(keys)), key=keys.__getitem__)
    rank = np.zeros(len(keys), np.int64)
    r = -1
    for pos, i in enumerate(order):
        if pos == 0 or keys[order[pos - 1]] != keys[i]:
            r += 1
        rank[i] = r
    return rank[ids]


class CellAggregator:
    """The cells of one batch (`nt` ticks) and the aggregates over them."""

    def __init__(self, c: Contributions, ticks: np.ndarray, every: int, implicit: bool) -> None:
        nt = len(ticks)
        self.c, self.nt, self.t_first, self.every = c, nt, int(ticks[0]), every
        ng = max(len(c.group_codes), 1 if implicit else 0)
        every_group = np.arange(ng, dtype=np.int64)  # a group whose solutions all left still has a cell
        g, ka, kb = (np.concatenate([c.group, every_group]), np.concatenate([c.ka, 0 * every_group]),
                     np.concatenate([c.kb, 0 * every_group]))
        if implicit:  # SPARQL's single group is reported at every tick, solutions or not
            g, ka, kb = np.append(g, 0), np.append(ka, 0), np.append(kb, nt)
        self.lay = Layout.of(g, ka, kb, ng)
        self.present_all = self.lay.counts(c.group, c.ka, c.kb)
        gi, ki = self.lay.cells()
        report = (self.present_all > 0) | (implicit & (ki < nt))
        self.report = np.nonzero(report)[0]
        self.gi, self.ki = gi[self.report], ki[self.report]

    def counts(self, g: np.ndarray, ka: np.ndarray, kb: np.ndarray) -> np.ndarray:
        return self.lay.counts(g, ka, kb)[self.report]

    def column(self, a: Aggregate, v: Values | None, partial: bool, aged: Aged | None = None) -> Values | CellSums:
        c = self.c
        if v is None:
            return Values("int", self.present_all[self.report], np.ones(len(self.report), bool))
        if a.distinct or a.func in ("MIN", "MAX"):
            g, ka, kb, v = distinct(c, v)
        else:
            keep = np.nonzero(v.ok)[0]
            g, ka, kb, v = c.group[keep], c.ka[keep], c.kb[keep], v.take(keep)
        if a.func == "COUNT":
            return Values("int", self.counts(g, ka, kb), np.ones(len(self.report), bool))
        if a.func in ("MIN", "MAX"):
            return self.extreme(a.func, g, ka, kb, v)
        sums = self.sums(g, ka, kb, v) if aged is None else self.aged_sums(g, ka, kb, v, aged)
        return sums if partial else sums.final(a.func)

    def aged_sums(self, g, ka, kb, v: Values, aged: Aged) -> CellSums:
        """Durations: the settled ones as limbs of their doubles, the open ones as ages (beyond the
        limbs' range, every (duration, tick) pair as an exact total)."""
        lim = double_limbs(v, np.full(len(v), 2))
        last = self.t_first + (self.nt - 1) * self.every
        if lim is None or not ages_fit(self.t_first, last, aged.start):
            return CellSums(self.counts(g, ka, kb) + self.counts(aged.group, aged.ka, aged.kb),
                            totals=self.exact_totals(g, ka, kb, v, aged))
        total = range_sums(self.lay.cell(g, ka), self.lay.cell(g, kb), lim, self.report, self.lay.size)
        total += age_limbs(self.lay.cell, aged.group, aged.ka, aged.kb, aged.start, self.t_first, self.every,
                           self.report, self.ki, self.lay.size)
        n = self.counts(g, ka, kb) + self.counts(aged.group, aged.ka, aged.kb)
        return CellSums(n, limbs=total)

    def sums(self, g, ka, kb, v: Values) -> CellSums:
        """The numbers' sums per reported cell, by the cheapest exact path."""
        kinds = numeric_kinds(v)
        num = np.nonzero(kinds >= 0)[0]
        g, ka, kb, v, kinds = g[num], ka[num], kb[num], v.take(num), kinds[num]
        n = self.counts(g, ka, kb)
        lo, hi = self.lay.cell(g, ka), self.lay.cell(g, kb)
        if len(kinds) and (kinds == 2).all():
            lim = double_limbs(v, kinds)
            if lim is not None:
                return CellSums(n, limbs=range_sums(lo, hi, lim, self.report, self.lay.size))
        if v.kind == "int" and (np.abs(v.data) < SMALL_INT).all():
            return CellSums(n, ints=int_range_sums(lo, hi, v.data, self.report, self.lay.size))
        return CellSums(n, totals=self.exact_totals(g, ka, kb, v))

    def exact_totals(self, g, ka, kb, v: Values, aged: Aged | None = None) -> list[ExactTotal]:
        """Per reported cell, the ExactTotal of its values (one (range, tick) pair at a time), and of
        the `aged` open durations `(tau - start) / 1000` at each of their ticks."""
        owner, k = expand(ka, kb)
        where = np.searchsorted(self.report, self.lay.cell(g[owner], k))
        totals = [ExactTotal() for _ in range(len(self.report))]
        objs = v.as_objects().data
        for w, o in zip(where.tolist(), owner.tolist()):
            totals[w].add_value(objs[o])
        if aged is not None:
            owner, k = expand(aged.ka, aged.kb)
            where = np.searchsorted(self.report, self.lay.cell(aged.group[owner], k))
            ages = (self.t_first + k * self.every - aged.start[owner]) / 1000.0  # as the oracle's DURATION
            for w, x in zip(where.tolist(), ages.tolist()):
                totals[w].add_value(x)
        return totals

    def extreme(self, func: str, g, ka, kb, v: Values) -> Values:
        r = ranks(v)
        owner, k = expand(ka, kb)
        cell = np.searchsorted(self.report, self.lay.cell(g[owner], k))
        best = np.full(len(self.report), -1 if func == "MAX" else np.iinfo(np.int64).max, np.int64)
        (np.maximum if func == "MAX" else np.minimum).at(best, cell, r[owner])
        has = (best >= 0) & (best < np.iinfo(np.int64).max)
        pick = np.zeros(int(r.max(initial=-1)) + 1, np.int64)
        pick[r] = np.arange(len(r))
        chosen = v.take(pick[np.where(has, best, 0)]) if len(r) else Values("object", np.full(len(best), None), has)
        return Values(chosen.kind, chosen.data, has)
