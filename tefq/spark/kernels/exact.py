"""Exact sums of durations in seconds, bit for bit the oracle's `math.fsum`: each duration double
is split into integer limbs, limbs are summed per cell, and the total is rounded once. Numpy only."""
from __future__ import annotations

import numpy as np

LIMB = 32  # bits per limb: bincount sums limbs in float64, exact below 2^53 ...
MAX_TERMS = 1 << 21  # ... for up to 2^21 terms per call
SCALE = 62  # a duration of whole ms, as a double, is an integer multiple of 2^-62 s


def members(lo: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The positions `lo_i, lo_i + 1, ..., lo_i + n_i - 1` of every range, concatenated."""
    first = np.cumsum(n) - n
    return np.arange(int(n.sum()), dtype=np.int64) + np.repeat(lo - first, n)



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



def cell_sums(cell: np.ndarray, lim: np.ndarray, ncells: int) -> np.ndarray:
    """(3, ncells) int64: per cell, the sums of the limbs (float64 sums of 32-bit values: exact)."""
    out = np.zeros((3, ncells), dtype=np.int64)
    for lo in range(0, len(cell), MAX_TERMS):
        part = slice(lo, lo + MAX_TERMS)
        for j in range(3):
            out[j] += np.bincount(cell[part], weights=lim[j, part].astype(np.float64), minlength=ncells).astype(np.int64)
    return out



def limb_sums(cell: np.ndarray, x: np.ndarray, ncells: int) -> np.ndarray:
    return cell_sums(cell, limbs(x), ncells)



def rounded(sums: np.ndarray) -> np.ndarray:
    """The correctly rounded double of each column's exact total `sum_j sums[j] * 2^(32 j - SCALE)`.
    After carrying, total = hi * 2^43 + lo with hi < 2^53 and lo < 2^43 both exact doubles, and one
    IEEE addition rounds their exact sum correctly."""
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
        total += limb_sums(np.repeat(cell_base[part], n[part]) + k, x, ncells)
        first = last
    return total


def exact_duration_sums(g: np.ndarray, lo: np.ndarray, hi: np.ndarray, rel: np.ndarray, every: int, ng: int,
                        nt: int, chunk: int = 4_000_000) -> np.ndarray:
    """(ng, nt): per (group, tick index), the correctly rounded exact sum of `(tau - start) / 1000.0`
    over the facts of group `g` valid at ticks `lo <= k < hi` (`tau = t_first + k * every`, `rel =
    start - t_first`)."""
    return rounded(range_duration_limbs(g * nt, lo, hi - lo, rel, every, ng * nt, chunk)).reshape(ng, nt)
