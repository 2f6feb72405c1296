"""Aggregates at many ticks over fact intervals matched with or without CURRENT, under an optional
WHILE scope (spec §4.2-4.3), vectorised: numpy only, no Spark.

Each interval of the matched fact is one solution. Like the oracle (`tefq.oracle.query`), a
solution is *active* at the ticks of a set of time intervals:

- `CURRENT`, no WHILE:       `s <= tau < e`
- fact pattern, no WHILE:    `s <= tau < e + d`          (overlaps the period `(tau - d, tau]`)
- under WHILE, per scope fact `[ws, we)` with the solution's key:
  `CURRENT`: `max(s, ws) <= tau < min(e, we + d)`;
  fact pattern: `max(s, ws) <= tau < we + d` if the fact overlaps `[ws, we)`;
  the activity is the union over the scope facts.

Activity intervals become tick-index ranges; COUNT and COUNT DISTINCT are difference arrays over
the ranges merged per solution (per distinct value); SUM of `DURATION(?S, ?E)` (`?E` = tau while
open) is summed exactly: each duration double is split into integer limbs (open facts: as ages per
binade segment, `exact.age_limbs`, when the ticks share their instant modulo 125 ms), so the per-(group,
tick) sum is the correctly rounded exact sum — bit for bit the oracle's `math.fsum`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tefq.spark.kernels.exact import added, age_limbs, ages_fit, any_limbs, range_duration_limbs, range_sums, rounded
from tefq.spark.kernels.intervals import group_index
from tefq.spark.kernels.joins import Relation, coalesce, expand, key_ranks
from tefq.spark.output import NumericRows


@dataclass(frozen=True)
class TickSpec:
    current: bool
    every_ms: int
    group_cols: tuple[int, ...]  # columns of the matched relation
    aggregates: tuple[tuple[str, str, int], ...]  # (alias, op, column): count | count_distinct | sum/avg_duration
    scope_cols: tuple[int, ...] | None = None  # WHILE: the matched relation's columns of the scope key
    partial: bool = False  # one bucket's share of each group: sums as exact limbs (output.merge_partials)


def activity(sol: Relation, spec: TickSpec, scope: Relation | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(solution index, lo, hi): the time intervals in which each solution is active."""
    d = spec.every_ms
    s, e = sol.start, sol.end
    if spec.scope_cols is None:
        return np.arange(len(sol), dtype=np.int64), s, (e if spec.current else e + d)
    assert scope is not None
    keys = sol.codes[:, list(spec.scope_cols)].reshape(len(sol), len(spec.scope_cols))
    ks, kw = key_ranks(keys, scope.codes)
    w_order = np.argsort(kw, kind="stable")
    kw = kw[w_order]
    i, j = expand(np.searchsorted(kw, ks, "left"), np.searchsorted(kw, ks, "right"))
    j = w_order[j]
    ws, we = scope.start[j], scope.end[j]
    si, ei = s[i], e[i]
    lo = np.maximum(si, ws)
    if spec.current:
        hi = np.minimum(ei, we + d)
    else:
        hi = np.where((si < we) & (ei > ws), we + d, lo)
    return i, lo, hi


def tick_ranges(lo: np.ndarray, hi: np.ndarray, t_first: int, d: int, nt: int) -> tuple[np.ndarray, np.ndarray]:
    """Tick indices `[ka, kb)` of the ticks `t_first + k*d` in `[lo, hi)`, clipped to `[0, nt]`."""
    ka = np.clip(-((t_first - lo) // d), 0, nt)
    kb = np.clip(-((t_first - hi) // d), 0, nt)
    return ka, kb


@dataclass
class Layout:
    """Cells (group, tick) packed per group over the ticks its ranges can touch: group `g` owns
    `[lo_g, hi_g]` (one spare cell past its last range end), so that difference arrays over the
    flat cells cumsum to each group's counts without an (all groups x all ticks) grid."""

    lo: np.ndarray
    base: np.ndarray
    size: int

    @staticmethod
    def of(g: np.ndarray, ka: np.ndarray, kb: np.ndarray, ng: int) -> "Layout":
        lo = np.full(ng, np.iinfo(np.int64).max, dtype=np.int64)
        hi = np.zeros(ng, dtype=np.int64)
        np.minimum.at(lo, g, ka)
        np.maximum.at(hi, g, kb)
        width = hi - lo + 1
        return Layout(lo, np.cumsum(width) - width, int(width.sum()))

    def cell(self, g: np.ndarray, k: np.ndarray) -> np.ndarray:
        return self.base[g] + (k - self.lo[g])

    def cells(self) -> tuple[np.ndarray, np.ndarray]:
        """(group, tick index) of every cell."""
        width = np.diff(np.append(self.base, self.size))
        g = np.repeat(np.arange(len(self.base), dtype=np.int64), width)
        return g, self.lo[g] + (np.arange(self.size, dtype=np.int64) - self.base[g])

    def counts(self, g: np.ndarray, ka: np.ndarray, kb: np.ndarray) -> np.ndarray:
        """Per cell, the number of ranges `[ka, kb)` of group `g` that cover it."""
        return np.cumsum(np.bincount(self.cell(g, ka), minlength=self.size)
                         - np.bincount(self.cell(g, kb), minlength=self.size))


def _merged(keys: np.ndarray, ka: np.ndarray, kb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tick ranges united per key row: (key rows, ka, kb), disjoint per key."""
    r = coalesce(Relation(tuple(f"k{i}" for i in range(keys.shape[1])), keys, ka, kb))
    return r.codes, r.start, r.end


def tick_rows(sol: Relation, spec: TickSpec, scope: Relation | None, ticks: np.ndarray) -> NumericRows:
    """The rows (one per group with an active solution, per tick) at `ticks` (evenly spaced)."""
    nt, d = len(ticks), spec.every_ms
    ngv = len(spec.group_cols)
    aliases = [a for a, _, _ in spec.aggregates]
    empty = NumericRows.concat([], ngv, aliases)
    if nt == 0 or len(sol) == 0:
        return empty
    t_first = int(ticks[0])
    idx, lo, hi = activity(sol, spec, scope)
    ka, kb = tick_ranges(lo, hi, t_first, d, nt)
    live = ka < kb
    idx, ka, kb = idx[live], ka[live], kb[live]
    if not len(idx):
        return empty
    # One range set per solution (a solution under several scope facts counts once per tick).
    if len(idx) > 1 and not (np.diff(idx) > 0).all():
        sid, ka, kb = _merged(idx.reshape(-1, 1), ka, kb)
        sid = sid[:, 0]
    else:
        sid = idx
    gcodes = sol.codes[:, list(spec.group_cols)].reshape(len(sol), ngv)
    codes, g = group_index(gcodes[sid])  # groups in the order of their codes, as np.unique(axis=0)
    ng = len(codes)
    lay = Layout.of(g, ka, kb, ng)
    count = lay.counts(g, ka, kb)
    report = np.nonzero(count > 0)[0]
    gi, ki = (c[report] for c in lay.cells())
    values: dict[str, np.ndarray] = {}
    sums = total = None
    for alias, op, col in spec.aggregates:
        if op == "count":
            values[alias] = count[report]
        elif op == "count_distinct":
            keys = np.concatenate([g.reshape(-1, 1), sol.codes[sid, col].reshape(-1, 1)], axis=1)
            mk, ma, mb = _merged(keys, ka, kb)
            values[alias] = lay.counts(mk[:, 0], ma, mb)[report]
        else:
            if sums is None:
                sums = _duration_sums(sol, sid, g, ka, kb, ticks, d, lay, report, ki)
            if spec.partial:
                values.update(partial_sum(alias, op, sums, count[report]))
                continue
            if total is None:
                total = rounded(sums)  # once for SUM and AVG alike
            values[alias] = total if op == "sum_duration" else total / count[report]
    return NumericRows(ticks[ki], codes[gi], values)


def partial_sum(alias: str, op: str, sums: np.ndarray, count: np.ndarray) -> dict[str, np.ndarray]:
    """A bucket's share of a duration SUM / AVG per row: the exact limb sums (`alias#0..2`, to
    `alias#4` in the wide form), and for AVG the number of solutions (`alias#n`);
    `output.merge_partials` adds and rounds them."""
    out = {f"{alias}#{j}": sums[j] for j in range(len(sums))}
    if op == "avg_duration":
        out[f"{alias}#n"] = count
    return out


def _duration_sums(sol: Relation, sid: np.ndarray, g: np.ndarray, ka: np.ndarray, kb: np.ndarray,
                   ticks: np.ndarray, d: int, lay: Layout, report: np.ndarray, report_k: np.ndarray) -> np.ndarray:
    """(3, len(report)) limb sums of `DURATION(?S, ?E)` in seconds over the active solutions per
    reported cell (tick index `report_k`), `?E` = tau while the fact is open at tau. Ticks at or
    after the fact's end add the constant `(e - s) / 1000` (difference arrays of limbs); earlier
    ticks add the age `(tau - s) / 1000`: when every tick is the same instant modulo 125 ms, as
    ages summed per binade segment (`exact.age_limbs`: O(facts + cells)), else per (fact, tick) pair."""
    s, e, t_first = sol.start[sid], sol.end[sid], int(ticks[0])
    kc = np.clip(-((t_first - e) // d), ka, kb)  # first tick index at or after the end
    closed = kc < kb
    gc = g[closed]
    total = range_sums(lay.cell(gc, kc[closed]), lay.cell(gc, kb[closed]),
                       any_limbs((e[closed] - s[closed]) / 1000.0), report, lay.size)
    opened = kc > ka
    if d % 125 == 0 and ages_fit(t_first, int(ticks[-1]), s[opened]):
        return added(total, age_limbs(lay.cell, g[opened], ka[opened], kc[opened], s[opened], t_first, d, report,
                                      report_k, lay.size))
    return added(total, range_duration_limbs((lay.base - lay.lo)[g[opened]], ka[opened], (kc - ka)[opened],
                                             s[opened] - t_first, d, lay.size)[:, report])
