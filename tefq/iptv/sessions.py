"""Sessions (fact intervals) from join/quit-style events, and the refresh-binding counts of spec §7.

Input is integer-coded: an identity per event (e.g. user*C + channel), its timestamp and whether
it opens (join/start) or closes (quit/finish). Events are in stream order (sorted by time, ties in
file order). The semantics are spec §3.1: an open on an open identity does nothing, a close
without an open fact does nothing, and a reopen at the very millisecond of a close coalesces.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

OPEN_END = np.iinfo(np.int64).max


@dataclass
class Sessions:
    ident: np.ndarray   # identity of each interval
    start: np.ndarray   # ms
    end: np.ndarray     # ms, OPEN_END while still open
    unmatched_closes: int

    def __len__(self) -> int:
        return len(self.start)


def sessions(ident: np.ndarray, ts: np.ndarray, opens: np.ndarray) -> Sessions:
    """Maximal intervals per identity. Vectorised when every identity alternates open, close,
    open, ... with no close and reopen in one millisecond (what the generator writes); otherwise
    a plain sequential pass."""
    n = len(ts)
    order = np.lexsort((np.arange(n), ts, ident))
    i, t, o = ident[order], ts[order], opens[order]
    first = np.ones(n, dtype=bool)
    first[1:] = i[1:] != i[:-1]
    # position of each event within its identity's run
    run_start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    pos = np.arange(n) - run_start
    alternating = np.array_equal(o, (pos % 2) == 0)
    if alternating and n:
        closes = ~o
        # a close followed, in the same identity and millisecond, by a reopen would coalesce
        same = np.zeros(n, dtype=bool)
        same[:-1] = closes[:-1] & ~first[1:] & (t[1:] == t[:-1])
        alternating = not same.any()
    if not alternating:
        return _sequential(ident, ts, opens)
    starts = np.flatnonzero(o)
    has_close = np.zeros(len(starts), dtype=bool)
    nxt = starts + 1
    ok = nxt < n
    has_close[ok] = ~first[nxt[ok]]
    end = np.full(len(starts), OPEN_END, dtype=np.int64)
    end[has_close] = t[nxt[has_close]]
    return Sessions(i[starts], t[starts].astype(np.int64), end, 0)


def _sequential(ident: np.ndarray, ts: np.ndarray, opens: np.ndarray) -> Sessions:
    open_at: dict[int, int] = {}
    closed_at: dict[int, tuple[int, int]] = {}  # identity -> (index in out, close time)
    out_i: list[int] = []
    out_s: list[int] = []
    out_e: list[int] = []
    unmatched = 0
    for k, t, op in zip(ident.tolist(), ts.tolist(), opens.tolist()):
        if op:
            if k in open_at:
                continue
            prev = closed_at.get(k)
            if prev is not None and prev[1] == t:   # meets itself: coalesce
                out_e[prev[0]] = OPEN_END
                open_at[k] = prev[0]
                continue
            open_at[k] = len(out_s)
            out_i.append(k)
            out_s.append(t)
            out_e.append(OPEN_END)
        else:
            j = open_at.pop(k, None)
            if j is None:
                unmatched += 1
                continue
            out_e[j] = t
            closed_at[k] = (j, t)
    return Sessions(np.array(out_i, dtype=np.int64), np.array(out_s, dtype=np.int64),
                    np.array(out_e, dtype=np.int64), unmatched)


def tick_range(first_ts: int, last_ts: int, window_ms: int) -> tuple[int, int]:
    """Indexes k of the ticks k*window (spec §4.1): the first at or after the first event to the
    first at or after the last event."""
    return -(-first_ts // window_ms), -(-last_ts // window_ms)


def _tick_spans(s: Sessions, k0: int, k1: int, window_ms: int) -> tuple[np.ndarray, np.ndarray]:
    """For each interval, the tick indexes [a, b] with start <= k*w < end, clipped to [k0, k1]."""
    a = np.maximum(-(-s.start // window_ms), k0)
    b_end = np.where(s.end == OPEN_END, k1, -(-s.end // window_ms) - 1)
    b = np.minimum(b_end, k1)
    return a, b


def refresh_per_fact(s: Sessions, first_ts: int, last_ts: int, window_ms: int) -> int:
    """Sum over ticks tau of |{facts with start <= tau < end}| (spec §7, per-fact refresh)."""
    k0, k1 = tick_range(first_ts, last_ts, window_ms)
    a, b = _tick_spans(s, k0, k1, window_ms)
    return int(np.maximum(b - a + 1, 0).sum())


def refresh_per_group(s: Sessions, group: np.ndarray, first_ts: int, last_ts: int, window_ms: int) -> int:
    """Sum over ticks tau of the number of groups with at least one fact valid at tau."""
    k0, k1 = tick_range(first_ts, last_ts, window_ms)
    a, b = _tick_spans(s, k0, k1, window_ms)
    keep = b >= a
    if not keep.any():
        return 0
    a, b, g = a[keep], b[keep] + 1, group[keep].astype(np.int64)
    # Union of [a, b) per group: shift groups apart so one running maximum serves all of them.
    width = (k1 - k0 + 2)
    a2, b2 = (a - k0) + g * width, (b - k0) + g * width
    order = np.argsort(a2, kind="stable")
    a2, b2 = a2[order], b2[order]
    reach = np.maximum.accumulate(b2)
    covered_before = np.concatenate([[np.iinfo(np.int64).min], reach[:-1]])
    return int(np.maximum(b2 - np.maximum(a2, covered_before), 0).sum())


def concurrency(s: Sessions, first_ts: int, last_ts: int) -> tuple[float, int]:
    """Time-weighted mean and maximum number of open intervals over [first_ts, last_ts]."""
    if last_ts <= first_ts or len(s) == 0:
        return 0.0, int(len(s))
    end = np.minimum(s.end, last_ts)
    times = np.concatenate([s.start, end])
    delta = np.concatenate([np.ones(len(s), np.int64), -np.ones(len(s), np.int64)])
    order = np.lexsort((delta, times))   # closes before opens at the same ms
    times, level = times[order], np.cumsum(delta[order])
    dt = np.diff(np.append(times, last_ts))
    mean = float((level * dt).sum()) / (last_ts - first_ts)
    return mean, int(level.max())
