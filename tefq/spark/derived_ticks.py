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
open) is summed exactly: each duration double is split into integer limbs, so the per-(group,
tick) sum is the correctly rounded exact sum — bit for bit the oracle's `math.fsum`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tefq.spark.derived import Relation, coalesce, expand, key_ranks
from tefq.spark.output import NumericRows

LIMB = 24  # bits per limb: bincount sums limbs in float64, exact below 2^53
SCALE = 62  # a duration of whole ms, as a double, is an integer multiple of 2^-62 s


@dataclass(frozen=True)
class TickSpec:
    current: bool
    every_ms: int
    group_cols: tuple[int, ...]  # columns of the matched relation
    aggregates: tuple[tuple[str, str, int], ...]  # (alias, op, column): count | count_distinct | sum/avg_duration
    scope_cols: tuple[int, ...] | None = None  # WHILE: the matched relation's columns of the scope key


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


def _counts(cell_group: np.ndarray, ka: np.ndarray, kb: np.ndarray, ng: int, nt: int) -> np.ndarray:
    """(ng, nt) number of ranges covering each tick (difference arrays)."""
    width = nt + 1
    diff = np.bincount(cell_group * width + ka, minlength=ng * width) - np.bincount(cell_group * width + kb,
                                                                                      minlength=ng * width)
    return np.cumsum(diff.reshape(ng, width), axis=1)[:, :nt]


def _merged(keys: np.ndarray, ka: np.ndarray, kb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tick ranges united per key row: (key rows, ka, kb), disjoint per key."""
    r = coalesce(Relation(tuple(f"k{i}" for i in range(keys.shape[1])), keys, ka, kb))
    return r.codes, r.start, r.end


def limb_sums(cell: np.ndarray, x: np.ndarray, ncells: int) -> np.ndarray:
    """(4, ncells) int64: per cell, the sums of the 24-bit limbs of `x * 2^SCALE` (an integer for
    every non-negative double that is a multiple of 2^-SCALE). Sums of limbs are exact."""
    mant, exp = np.frexp(x)
    m = (mant * 2.0**53).astype(np.int64)  # x = m * 2^(exp - 53), m < 2^53
    shift = np.where(m == 0, 0, exp.astype(np.int64) - 53 + SCALE)  # x * 2^SCALE = m << shift
    if len(x) and (shift.min() < 0 or shift.max() > 4 * LIMB - 53):
        raise ValueError("a duration outside the exact range (1 ms to 2^34 s)")
    mask = (1 << LIMB) - 1
    out = np.zeros((4, ncells), dtype=np.int64)
    for j in range(4):
        lb = LIMB * j
        right = (m >> np.clip(lb - shift, 0, 63)) & mask
        left = (m << np.clip(shift - lb, 0, 63)) & mask
        limb = np.where(shift <= lb, right, left)
        out[j] = np.bincount(cell, weights=limb.astype(np.float64), minlength=ncells).astype(np.int64)
    return out


def rounded(limbs: np.ndarray) -> np.ndarray:
    """The correctly rounded double of each column's exact total (Python's int / int is)."""
    cols = limbs.T.tolist()
    return np.array([((a + (b << LIMB) + (c << 2 * LIMB) + (e << 3 * LIMB)) / (1 << SCALE)) for a, b, c, e in cols],
                    dtype=np.float64)


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
    sid, ka, kb = _merged(idx.reshape(-1, 1), ka, kb)
    sid = sid[:, 0]
    gcodes = sol.codes[:, list(spec.group_cols)].reshape(len(sol), ngv)
    if ngv:
        codes, g = np.unique(gcodes[sid], axis=0, return_inverse=True)
        g = g.reshape(-1).astype(np.int64)
    else:
        codes, g = np.zeros((1, 0), np.int64), np.zeros(len(sid), np.int64)
    ng = len(codes)
    count = _counts(g, ka, kb, ng, nt)
    gi, ki = np.nonzero(count > 0)
    values: dict[str, np.ndarray] = {}
    sums = None
    for alias, op, col in spec.aggregates:
        if op == "count":
            values[alias] = count[gi, ki]
        elif op == "count_distinct":
            keys = np.concatenate([g.reshape(-1, 1), sol.codes[sid, col].reshape(-1, 1)], axis=1)
            mk, ma, mb = _merged(keys, ka, kb)
            values[alias] = _counts(mk[:, 0], ma, mb, ng, nt)[gi, ki]
        else:
            if sums is None:
                sums = _duration_sums(sol, sid, g, ka, kb, ticks, gi * nt + ki)
            values[alias] = sums if op == "sum_duration" else sums / count[gi, ki]
    return NumericRows(ticks[ki], codes[gi], values)


def _duration_sums(sol: Relation, sid: np.ndarray, g: np.ndarray, ka: np.ndarray, kb: np.ndarray,
                   ticks: np.ndarray, cells: np.ndarray, chunk: int = 4_000_000) -> np.ndarray:
    """For the given (group * nt + tick) cells: the exact sum of `DURATION(?S, ?E)` in seconds over
    the active solutions, `?E` = tau while the fact is open at tau."""
    nt = len(ticks)
    ncells = int(g.max() + 1) * nt if len(g) else 0
    limbs = np.zeros((4, ncells), dtype=np.int64)
    # Chunks of whole ranges, so that the (solution, tick) pairs of one chunk stay bounded.
    ends = np.cumsum(kb - ka)
    lo = 0
    while lo < len(sid):
        hi = max(lo + 1, int(np.searchsorted(ends, (ends[lo - 1] if lo else 0) + chunk, "right")))
        r = slice(lo, hi)
        owner, k = expand(ka[r], kb[r])
        s = sid[r][owner]
        x = (np.minimum(sol.end[s], ticks[k]) - sol.start[s]) / 1000.0
        limbs += limb_sums(g[r][owner] * nt + k, x, ncells)
        lo = hi
    return rounded(limbs[:, cells])
