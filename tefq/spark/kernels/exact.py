"""Exact sums of durations in seconds, bit for bit the oracle's `math.fsum`: each duration double
is split into integer limbs, limbs are summed per cell, and the total is rounded once. Numpy only.

Sums over tick ranges are difference arrays (`range_sums`); the ages of open facts (`tau - start`
at every tick of a range) sum per binade segment when every tick is the same instant modulo
125 ms (`age_limbs`: O(ranges + cells)), else one term per (fact, tick) pair
(`range_duration_limbs`)."""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from tefq.semantics.expressions import round_to_double

LIMB = 32  # bits per limb: bincount sums limbs in float64, exact below 2^53 ...
MAX_TERMS = 1 << 21  # ... for up to 2^21 terms per call
SCALE = 62  # a duration of whole ms, as a double, is an integer multiple of 2^-62 s
WIDE = 5  # limbs of the wide form: any duration of tefq's time range (below 2^53 s), 2^21 at a time
FAST_RANGE_MS = (1 << 34) * 1000  # durations below this fit the 3 limbs of the fast form (2^34 s: 544 years)


def members(lo: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The positions `lo_i, lo_i + 1, ..., lo_i + n_i - 1` of every range, concatenated."""
    first = np.cumsum(n) - n
    return np.arange(int(n.sum()), dtype=np.int64) + np.repeat(lo - first, n)


def expand(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ranges `[lo_i, hi_i)`: (owner i, position) of every member, owners in order."""
    n = np.maximum(hi - lo, 0)
    owner = np.repeat(np.arange(len(lo), dtype=np.int64), n)
    return owner, members(lo, n)



def limbs(x: np.ndarray) -> np.ndarray:
    """(3, n) int64: the 32-bit limbs of `x * 2^SCALE`, an integer below 2^96 for every
    non-negative double that is a multiple of 2^-SCALE below 2^34 (durations of whole ms)."""
    mant, exp = np.frexp(x)
    m = (mant * 2.0**53).astype(np.uint64)  # x = m * 2^(exp - 53), m < 2^53
    shift = np.where(m == 0, 0, exp.astype(np.int64) - 53 + SCALE)  # x * 2^SCALE = m << shift
    if len(x) and (shift.min() < 0 or shift.max() > 3 * LIMB - 53):
        raise ValueError("a duration outside the exact range (1 ms to 2^34 s)")
    shift = shift.astype(np.uint64)
    low = m << shift  # the low 64 bits (wraps)
    high = (m >> np.uint64(1)) >> (np.uint64(63) - shift)  # the bits above 64
    mask = np.uint64((1 << LIMB) - 1)
    return np.stack([(low & mask).view(np.int64), (low >> np.uint64(LIMB)).view(np.int64), high.view(np.int64)])



def wide_limbs(x: np.ndarray) -> np.ndarray:
    """(WIDE, n) int64: the 32-bit limbs of `x * 2^SCALE` for any non-negative double of whole ms
    in seconds, however large (the wide form: Python integers, for what `limbs` cannot hold)."""
    out = np.zeros((WIDE, len(x)), np.int64)
    for i, v in enumerate(x.tolist()):
        scaled = Fraction(v) * (1 << SCALE)
        if v < 0 or scaled.denominator != 1:
            raise ValueError("a duration that is not whole milliseconds")
        n = int(scaled)
        for j in range(WIDE):
            out[j, i] = (n >> (LIMB * j)) & ((1 << LIMB) - 1)
    return out


def any_limbs(x: np.ndarray) -> np.ndarray:
    """`limbs(x)`, or the wide form when some value is beyond its range."""
    try:
        return limbs(x)
    except ValueError:
        return wide_limbs(x)


def widened(a: np.ndarray, rows: int) -> np.ndarray:
    """Limb sums with zero rows added up to `rows` (the fast form as the wide one)."""
    return a if len(a) >= rows else np.concatenate([a, np.zeros((rows - len(a), a.shape[1]), a.dtype)])


def added(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The sum of two limb-sum arrays of either form."""
    rows = max(len(a), len(b))
    return widened(a, rows) + widened(b, rows)


def cell_sums(cell: np.ndarray, lim: np.ndarray, ncells: int) -> np.ndarray:
    """(limbs, ncells) int64: per cell, the sums of the limbs (float64 sums of 32-bit values: exact)."""
    out = np.zeros((len(lim), ncells), dtype=np.int64)
    for lo in range(0, len(cell), MAX_TERMS):
        part = slice(lo, lo + MAX_TERMS)
        for j in range(len(lim)):
            out[j] += np.bincount(cell[part], weights=lim[j, part].astype(np.float64), minlength=ncells).astype(np.int64)
    return out



def limb_sums(cell: np.ndarray, x: np.ndarray, ncells: int) -> np.ndarray:
    return cell_sums(cell, any_limbs(x), ncells)



def rounded(sums: np.ndarray) -> np.ndarray:
    """The correctly rounded double of each column's exact total `sum_j sums[j] * 2^(32 j - SCALE)`.
    After carrying, total = hi * 2^43 + lo with hi < 2^53 and lo < 2^43 both exact doubles, and one
    IEEE addition rounds their exact sum correctly. The wide form is rounded exactly in Python."""
    if len(sums) > 3:
        return np.array([round_to_double(Fraction(sum(int(v) << (LIMB * j) for j, v in enumerate(col)), 1 << SCALE))
                         for col in sums.T.tolist()], np.float64)
    mask = (1 << LIMB) - 1
    n = sums.copy()
    for j in range(2):
        n[j + 1] += n[j] >> LIMB
        n[j] &= mask
    if len(n[2]) and int(n[2].max()) >= 1 << 32:
        raise ValueError("a duration sum outside the exact range")
    hi = ((n[2] << 21) | (n[1] >> 11)).astype(np.float64) * 2.0**43
    lo = (((n[1] & ((1 << 11) - 1)) << LIMB) | n[0]).astype(np.float64)
    return (hi + lo) * 2.0**-SCALE


def range_duration_limbs(cell_base: np.ndarray, lo: np.ndarray, n: np.ndarray, rel: np.ndarray, every: int,
                         ncells: int, chunk: int = 4_000_000) -> np.ndarray:
    """(3, ncells) limb sums of `(t_first + k * every - start) / 1000.0` over every fact `i` (`rel =
    start - t_first`) and tick index `lo_i <= k < lo_i + n_i`, into cell `cell_base_i + k`: one
    (fact, tick) pair at a time, in chunks of whole facts of about `chunk` pairs (memory)."""
    total = np.zeros((3, ncells), dtype=np.int64)
    ends = np.cumsum(n)
    first = 0
    while first < len(lo):
        last = max(first + 1, int(np.searchsorted(ends, (ends[first - 1] if first else 0) + chunk, "right")))
        part = slice(first, last)
        k = members(lo[part], n[part])  # tick index of every (fact, tick) pair
        x = (np.repeat(-rel[part], n[part]) + k * every) / 1000.0
        total = added(total, limb_sums(np.repeat(cell_base[part], n[part]) + k, x, ncells))
        first = last
    return total


def ages_fit(first_tick: int, last_tick: int, start: np.ndarray) -> bool:
    """Whether `age_limbs` can sum the ages `tau - start` at these ticks: each below FAST_RANGE_MS
    (the fast limbs hold it) and its int64 sums of ticks and starts (`len(start)` times the largest
    offset from `first_tick`) below 2^62; else the ages go per (fact, tick) pair in the wide form."""
    if not len(start):
        return True
    lo, hi = int(start.min()), int(start.max())
    offset = max(last_tick - first_tick, abs(lo - first_tick), abs(hi - first_tick)) + 125
    return last_tick - lo < FAST_RANGE_MS and len(start) * offset < 1 << 62


def exact_duration_sums(g: np.ndarray, lo: np.ndarray, hi: np.ndarray, rel: np.ndarray, every: int, ng: int,
                        nt: int, chunk: int = 4_000_000) -> np.ndarray:
    """(ng, nt): per (group, tick index), the correctly rounded exact sum of `(tau - start) / 1000.0`
    over the facts of group `g` valid at ticks `lo <= k < hi` (`tau = t_first + k * every`, `rel =
    start - t_first`). Ticks the same instant modulo 125 ms: as ages (`age_limbs`), not per pair."""
    if every % 125 == 0 and ages_fit(0, (nt - 1) * every, rel):
        cells = np.arange(ng * nt, dtype=np.int64)
        sums = age_limbs(lambda gi, k: gi * nt + k, g, lo, hi, rel, 0, every, cells, cells % nt, ng * nt)
    else:
        sums = range_duration_limbs(g * nt, lo, hi - lo, rel, every, ng * nt, chunk)
    return rounded(sums).reshape(ng, nt)


def range_sums(cells_lo: np.ndarray, cells_hi: np.ndarray, values: np.ndarray, at: np.ndarray,
               size: int | None = None) -> np.ndarray:
    """(k, len(at)): per cell of `at` (sorted), the sums of `values` (k, n) int64 over the ranges
    [cells_lo, cells_hi) that cover it, exactly. Dense difference arrays over the `size` cells
    when they are few next to the ranges, else sparse ones (sorted boundaries, running sums, a
    search per cell): the cost follows the ranges."""
    n = len(cells_lo)
    if not n:
        return np.zeros((len(values), len(at)), np.int64)
    if size is not None and size <= 8 * n:
        step = 2**53 // max(int(np.abs(values).max(initial=0)), 1)  # ranges whose float sums stay exact
        if step >= min(n, 1 << 16):
            return dense_range_sums(cells_lo, cells_hi, values, size, step)[:, at]
    pos = np.concatenate([cells_lo, cells_hi])
    order = np.argsort(pos, kind="stable")
    run = np.cumsum(np.concatenate([values, -values], axis=1)[:, order], axis=1)
    idx = np.searchsorted(pos[order], at, side="right") - 1
    return np.where(idx >= 0, run[:, np.maximum(idx, 0)], 0)


def dense_range_sums(cells_lo: np.ndarray, cells_hi: np.ndarray, values: np.ndarray, size: int,
                     step: int) -> np.ndarray:
    """(k, size): `range_sums` at every cell, by bincount over `step` ranges at a time (float64
    sums of at most 2^53 in magnitude: exact), added up in int64."""
    diff = np.zeros((len(values), size + 1), np.int64)
    for first in range(0, len(cells_lo), step):
        part = slice(first, first + step)
        lo, hi = cells_lo[part], cells_hi[part]
        for j, w in enumerate(values[:, part].astype(np.float64)):
            diff[j] += (np.bincount(lo, w, minlength=size + 1) - np.bincount(hi, w, minlength=size + 1)).astype(np.int64)
    return np.cumsum(diff[:, :size], axis=1)


# ---------------------------------------------------------------- ages of open facts, exactly
# An age of m ms is the double fl(m / 1000). In its binade j (2^j <= m/1000 < 2^(j+1), -10 <= j < 50)
# that double times 2^62 (the limbs' scale) is exactly 2^59 * floor(m / 125) + V[j, m mod 125]
# (no ties: 125 is odd). When every tick is the same instant modulo 125 ms, m mod 125 is one
# number per open fact, so a range of ticks sums as: 2^59 * (count * tau - sum of u) / 125 with
# u = start + (m mod 125), plus V per binade segment — difference arrays, no (fact, tick) pairs.
LOWEST_BINADE = -10
BINADE_BOUNDS = np.array([-(-1000 * 2**j // 1) if j >= 0 else -(-1000 // 2**-j)
                          for j in range(LOWEST_BINADE, 51)], np.int64)  # ceil(1000 * 2^j)
BINADE_VALUES = np.array([[(((r << (50 - j)) + 125) // 250) << (j + 10) for r in range(125)]
                          for j in range(LOWEST_BINADE, 50)], np.int64)


def binade(m: np.ndarray) -> np.ndarray:
    """Row of BINADE_VALUES for ages of m ms (m = 0: the lowest; its value is 0 anyway)."""
    return np.maximum(np.searchsorted(BINADE_BOUNDS, m, side="right") - 1, 0)


def age_limbs(cell_of, g: np.ndarray, ka: np.ndarray, kb: np.ndarray, start: np.ndarray, t_first: int,
              every: int, at: np.ndarray, at_tick: np.ndarray, size: int | None = None) -> np.ndarray:
    """(3, len(at)) limb sums, per cell `at` (tick index `at_tick`), of the ages `(tau - start) / 1000`
    of open ranges (group g, ticks [ka, kb), tau = t_first + k * every); `cell_of(g, k)` gives a cell.
    Requires `every % 125 == 0`."""
    rho = (t_first - start) % 125
    u_rel = start + rho - t_first  # (tau - u) / 125 = floor(age / 125)
    lo, hi = cell_of(g, ka), cell_of(g, kb)
    cnt, su = range_sums(lo, hi, np.stack([np.ones(len(ka), np.int64), u_rel]), at, size)
    a = (cnt * (at_tick * every) - su) // 125
    first = binade(t_first + ka * every - start)
    last = binade(t_first + (kb - 1) * every - start)
    r, j = expand(first, last + 1)
    k1 = np.where(j == first[r], ka[r], np.clip(-((t_first - start[r] - BINADE_BOUNDS[j]) // every), ka[r], kb[r]))
    k2 = np.where(j == last[r], kb[r], np.clip(-((t_first - start[r] - BINADE_BOUNDS[j + 1]) // every), ka[r], kb[r]))
    seg = k1 < k2
    r, j, k1, k2 = r[seg], j[seg], k1[seg], k2[seg]
    v = BINADE_VALUES[j, rho[r]]
    total = np.zeros((3, len(at)), np.int64)
    total[:2] = range_sums(cell_of(g[r], k1), cell_of(g[r], k2), np.stack([v & 0xFFFFFFFF, v >> 32]), at, size)
    total[1] += (a & 31) << 27
    total[2] += a >> 5
    return total
