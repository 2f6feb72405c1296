"""S2R: which windows report, when, and over which part of the stream (SECRET's scope, content,
report and tick functions) for one window definition over one time-ordered stream.

Conventions (docs/windowed-oracle.md): windows are `[o, c)` (or `[o, c]`) with
`o = t0 + k*STEP`, `c = o + RANGE`, k >= 0 (k < 0 too when partial first windows are on: their
scope is clipped to t0); elements before t0 belong to no window (the query did not exist yet).
Windows are enumerated from the first that can hold the first element to the last opening at or
before the last element.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Sequence

from tefq.oracle.windowed.secret import Semantics


@dataclass(frozen=True)
class Scope:
    """One report: the active window's scope `[open, close)` (or `]`), the report instant `at`,
    what triggered it, and the content as the index range `[lo, hi)` of the ordered stream."""

    open: int
    close: int
    at: int
    trigger: str  # close | change | periodic
    lo: int
    hi: int

    @property
    def size(self) -> int:
        return self.hi - self.lo


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def _k_min(range_ms: int, step_ms: int, sem: Semantics) -> int:
    # partial windows: every k whose window still ends after t0
    return (-range_ms // step_ms + 1) if sem.partial_first else 0


def _active_k(t: int, t0: int, range_ms: int, step_ms: int, sem: Semantics, k_min: int) -> int:
    """The earliest window still open at `t` (its close is after `t`, or at `t` when closed)."""
    k = _ceil_div(t - t0 - range_ms, step_ms) if sem.closed_right else (t - t0 - range_ms) // step_ms + 1
    return max(k, k_min)


def scopes(ts: Sequence[int], range_ms: int, step_ms: int, sem: Semantics, t0: int = 0) -> list[Scope]:
    """The reports of one window over a stream whose timestamps `ts` are sorted ascending."""
    first = bisect_left(ts, t0)
    if first == len(ts):
        return []
    t_first, t_last = ts[first], ts[-1]
    k_min = _k_min(range_ms, step_ms, sem)

    def content(o: int, upto: int, inclusive: bool) -> tuple[int, int]:
        lo = bisect_left(ts, max(o, t0))
        hi = bisect_right(ts, upto) if inclusive else bisect_left(ts, upto)
        return lo, max(lo, hi)

    out: list[Scope] = []
    if sem.window_close:
        k = _active_k(t_first, t0, range_ms, step_ms, sem, k_min)
        while t0 + k * step_ms <= t_last:
            o = t0 + k * step_ms
            c = o + range_ms
            lo, hi = content(o, c, sem.closed_right)
            out.append(Scope(max(o, t0), c, c, "close", lo, hi))
            k += 1
    if sem.periodic_ms:
        p = t0 + ((t_first - t0) // sem.periodic_ms + 1) * sem.periodic_ms
        while True:
            o = t0 + _active_k(p, t0, range_ms, step_ms, sem, k_min) * step_ms
            lo, hi = content(o, p, sem.closed_right)
            out.append(Scope(max(o, t0), p, p, "periodic", lo, hi))
            if p >= t_last:
                break
            p += sem.periodic_ms
    if sem.content_change:
        i = first
        while i < len(ts):
            t = ts[i]
            j = bisect_right(ts, t) if sem.tick == "time" else i + 1
            o = t0 + _active_k(t, t0, range_ms, step_ms, sem, k_min) * step_ms
            lo = bisect_left(ts, max(o, t0))
            out.append(Scope(max(o, t0), t, t, "change", lo, j))
            i = j
    if sem.window_close + bool(sem.periodic_ms) + sem.content_change > 1:
        # one timeline: at one instant a closing window reports before a periodic report and
        # before the next window's content-change report; a periodic report that repeats a
        # close (same instant, same content) is the same report
        order = {"close": 0, "periodic": 1, "change": 2}
        closes = {(s.at, s.lo, s.hi) for s in out if s.trigger == "close"}
        out = sorted((s for s in out if s.trigger != "periodic" or (s.at, s.lo, s.hi) not in closes),
                     key=lambda s: (s.at, order[s.trigger], s.hi))
    if sem.non_empty:
        out = [s for s in out if s.hi > s.lo]
    return out


def count_close_instants(t_first: int, t_last: int, range_ms: int, step_ms: int, t0: int = 0) -> int:
    """len(close_instants(...)), without enumerating them (a stray timestamp makes them billions)."""
    k = max(0, (t_first - t0 - range_ms) // step_ms + 1)
    return max(0, (t_last - t0) // step_ms - k + 1)


def close_instants(t_first: int, t_last: int, range_ms: int, step_ms: int, t0: int = 0) -> list[int]:
    """Spec §8 default report instants (window close, k >= 0) of windows that can hold data in
    `[t_first, t_last]`."""
    k = max(0, (t_first - t0 - range_ms) // step_ms + 1)
    out = []
    while t0 + k * step_ms <= t_last:
        out.append(t0 + k * step_ms + range_ms)
        k += 1
    return out
