"""Vectorised event-driven facts (spec §3.1) over one key bucket: numpy only, no Spark.

A bucket holds the facts of many identities as columns. `apply_events` applies a batch of SINCE /
UNTIL events to those intervals in one pass (sort, shift, mask) instead of one step per event, and
`current_aggregates` evaluates counts and duration sums at many ticks with difference arrays.
The Spark operator (`tefq.spark.operators`) calls these once per micro-batch per bucket.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tefq.spark.kernels.distinct import distinct
from tefq.spark.kernels.exact import exact_duration_sums

OPEN = np.int64(2**62)  # the end of an open fact (+inf)
SINCE, UNTIL = 0, 1


@dataclass
class Intervals:
    """Fact intervals `[start, end)` of many identities, sorted by (fid, start).

    `fid` is the identity's 64-bit hash; `groups` holds one int64 code column per group variable
    (hashes of the terms, equal for every interval of one identity)."""

    fid: np.ndarray
    start: np.ndarray
    end: np.ndarray
    groups: np.ndarray  # shape (n, number of group variables)

    @staticmethod
    def empty(ngroups: int) -> "Intervals":
        z = np.zeros(0, dtype=np.int64)
        return Intervals(z, z.copy(), z.copy(), np.zeros((0, ngroups), dtype=np.int64))

    def __len__(self) -> int:
        return len(self.fid)

    def take(self, idx: np.ndarray) -> "Intervals":
        return Intervals(self.fid[idx], self.start[idx], self.end[idx], self.groups[idx])

    @staticmethod
    def concat(parts: list["Intervals"]) -> "Intervals":
        return Intervals(np.concatenate([p.fid for p in parts]), np.concatenate([p.start for p in parts]),
                         np.concatenate([p.end for p in parts]), np.concatenate([p.groups for p in parts]))

    def sorted(self) -> "Intervals":
        return self.take(np.lexsort((self.start, self.fid)))


@dataclass
class Events:
    """SINCE/UNTIL events: kind (0 SINCE, 1 UNTIL), ts, an order key for ties, fid, group codes."""

    kind: np.ndarray
    ts: np.ndarray
    order: np.ndarray
    fid: np.ndarray
    groups: np.ndarray
    elem: np.ndarray | None = None  # hash of the element (s, p, o): a stream is a set

    def __len__(self) -> int:
        return len(self.ts)

    def take(self, idx: np.ndarray) -> "Events":
        return Events(self.kind[idx], self.ts[idx], self.order[idx], self.fid[idx], self.groups[idx],
                      None if self.elem is None else self.elem[idx])

    @staticmethod
    def concat(parts: list["Events"]) -> "Events":
        fields = [np.concatenate([getattr(p, f) for p in parts]) for f in ("kind", "ts", "order", "fid", "groups")]
        elem = None if any(p.elem is None for p in parts) else np.concatenate([p.elem for p in parts])
        return Events(*fields, elem)

    def distinct(self) -> "Events":
        """The first (in stream order) of equal elements at equal times; one per clause kind."""
        if self.elem is None or len(self) < 2:
            return self
        idx = np.lexsort((self.order, self.elem, self.kind, self.ts))
        ts, kind, elem = self.ts[idx], self.kind[idx], self.elem[idx]
        keep = np.ones(len(idx), dtype=bool)
        keep[1:] = (ts[1:] != ts[:-1]) | (kind[1:] != kind[:-1]) | (elem[1:] != elem[:-1])
        return self.take(idx[keep])

    def apply_order(self) -> np.ndarray:
        """The permutation that sorts by (fid, ts, order), the order `apply_events` works in.
        One stable sort by fid of the events in (ts, order) order, which is how they usually
        arrive (then no second key): half the time of ranking the fids and sorting the ranks."""
        n = len(self)
        if n < 2:
            return np.arange(n)
        in_time = bool(np.all((self.ts[1:] > self.ts[:-1])
                              | ((self.ts[1:] == self.ts[:-1]) & (self.order[1:] > self.order[:-1]))))
        by_time = np.arange(n) if in_time else np.lexsort((self.order, self.ts))
        return by_time[np.argsort(self.fid[by_time], kind="stable")]

    def sorted_distinct(self) -> "Events":
        """`distinct()`, sorted by (fid, ts, order). Equal elements share their identity, so they
        can only sit in a run of equal (fid, ts): only those (rare) runs get the exact treatment."""
        ev = self.take(self.apply_order())
        if ev.elem is None or len(ev) < 2:
            return ev
        same = (ev.fid[1:] == ev.fid[:-1]) & (ev.ts[1:] == ev.ts[:-1])
        if not same.any():
            return ev
        in_run = np.zeros(len(ev), dtype=bool)
        in_run[1:] |= same
        in_run[:-1] |= same
        cand = np.nonzero(in_run)[0]
        sub = cand[np.lexsort((ev.order[cand], ev.elem[cand], ev.kind[cand], ev.ts[cand], ev.fid[cand]))]
        dup = np.zeros(len(sub), dtype=bool)
        dup[1:] = ((ev.fid[sub[1:]] == ev.fid[sub[:-1]]) & (ev.ts[sub[1:]] == ev.ts[sub[:-1]])
                   & (ev.kind[sub[1:]] == ev.kind[sub[:-1]]) & (ev.elem[sub[1:]] == ev.elem[sub[:-1]]))
        keep = np.ones(len(ev), dtype=bool)
        keep[sub[dup]] = False
        return ev.take(np.nonzero(keep)[0])


@dataclass
class Applied:
    intervals: Intervals
    unmatched_until: int


def apply_events(base: Intervals, ev: Events) -> Applied:
    """Apply `ev` in (ts, order) order to `base` (spec §3.1): a SINCE opens a closed identity, an
    UNTIL closes an open one (else it is unmatched), and a reopening at the very ms of the close
    coalesces with the closed interval."""
    if len(ev) == 0:
        return Applied(base, 0)
    return apply_sorted_events(base, ev.take(ev.apply_order()))


def apply_sorted_events(base: Intervals, ev: Events) -> Applied:
    """`apply_events` for events already sorted by (fid, ts, order) (`Events.apply_order`)."""
    if len(ev) == 0:
        return Applied(base, 0)
    last_of_fid, latest, pos, base_open = latest_status(base, ev)
    effective, unmatched = effective_events(ev, pos, base_open)
    return Applied(rebuild(base, last_of_fid, latest, *effective), unmatched)


def latest_status(base: Intervals, ev: Events):
    """Status before the first event of each identity: the latest interval of that identity in
    base. Returns (base rows that are their fid's latest, those rows, each event's position among
    them, whether the event's identity is open there)."""
    n = len(ev)
    last_of_fid = np.ones(len(base), dtype=bool)
    if len(base):
        last_of_fid[:-1] = base.fid[:-1] != base.fid[1:]
    latest = base.take(np.nonzero(last_of_fid)[0])  # sorted by fid, unique
    pos = np.searchsorted(latest.fid, ev.fid)
    pos_c = np.minimum(pos, max(len(latest) - 1, 0))
    has_base = (pos < len(latest)) & (latest.fid[pos_c] == ev.fid) if len(latest) else np.zeros(n, bool)
    base_open = has_base & (latest.end[pos_c] == OPEN) if len(latest) else np.zeros(n, bool)
    return last_of_fid, latest, pos, base_open


def effective_events(ev: Events, pos: np.ndarray, base_open: np.ndarray):
    """The events that change a status (and are not cancelled by coalescing), as (fid, ts, opens,
    groups, position among the latest base rows), and the number of unmatched UNTILs."""
    n = len(ev)
    first = np.ones(n, dtype=bool)
    first[1:] = ev.fid[1:] != ev.fid[:-1]
    # The status after an event depends only on its kind: open after SINCE, closed after UNTIL.
    prev_open = np.empty(n, dtype=bool)
    prev_open[1:] = ev.kind[:-1] == SINCE
    prev_open[first] = base_open[first]
    eff_open = (ev.kind == SINCE) & ~prev_open
    eff_close = (ev.kind == UNTIL) & prev_open
    unmatched = int(np.count_nonzero((ev.kind == UNTIL) & ~prev_open))
    eff = np.nonzero(eff_open | eff_close)[0]
    e_fid, e_ts, e_open = ev.fid[eff], ev.ts[eff], eff_open[eff]
    keep = np.ones(len(eff), dtype=bool)
    # Coalescing inside the batch: a close at t directly followed by an open at t of the same fid.
    if len(eff) > 1:
        meet = (~e_open[:-1]) & e_open[1:] & (e_fid[:-1] == e_fid[1:]) & (e_ts[:-1] == e_ts[1:])
        keep[:-1] &= ~meet
        keep[1:] &= ~meet
    return tuple(a[keep] for a in (e_fid, e_ts, e_open, ev.groups[eff], pos[eff])), unmatched


def rebuild(base: Intervals, last_of_fid: np.ndarray, latest: Intervals, e_fid: np.ndarray, e_ts: np.ndarray,
            e_open: np.ndarray, e_groups: np.ndarray, e_first_base: np.ndarray) -> Intervals:
    """Base minus its latest rows (replaced by updated copies) plus the intervals the effective
    events create, sorted by (fid, start)."""
    m = len(e_fid)
    e_first = np.ones(m, dtype=bool)
    e_first[1:] = e_fid[1:] != e_fid[:-1]
    # Which base intervals change: an open one closed by the identity's first effective event, or a
    # closed one (ending at t) reopened at t by its first effective event.
    new_start = e_ts.copy()
    drop_latest = np.zeros(len(latest), dtype=bool)
    closes_base = e_first & ~e_open
    latest_end = latest.end.copy()  # closes of a base-open interval: the base interval gets this end
    if closes_base.any():
        latest_end[e_first_base[closes_base]] = e_ts[closes_base]
    if len(latest):
        be = latest.end[np.minimum(e_first_base, len(latest) - 1)]
        bf = latest.fid[np.minimum(e_first_base, len(latest) - 1)]
        reopen = e_first & e_open & (e_first_base < len(latest)) & (bf == e_fid) & (be == e_ts)
    else:
        reopen = np.zeros(m, dtype=bool)
    if reopen.any():
        new_start[reopen] = latest.start[e_first_base[reopen]]
        drop_latest[e_first_base[reopen]] = True
    # Pair each remaining open with the next effective event (a close of the same fid, if any).
    opens = np.nonzero(e_open)[0]
    nxt = opens + 1
    has_close = (nxt < m)
    has_close[has_close] = (e_fid[nxt[has_close]] == e_fid[opens[has_close]])
    ends = np.full(len(opens), OPEN, dtype=np.int64)
    ends[has_close] = e_ts[nxt[has_close]]
    created = Intervals(e_fid[opens], new_start[opens], ends, e_groups[opens])
    base_rest = base.take(np.nonzero(~last_of_fid)[0]) if len(base) else base
    latest_upd = Intervals(latest.fid, latest.start, latest_end, latest.groups).take(np.nonzero(~drop_latest)[0])
    out = Intervals.concat([base_rest, latest_upd, created])
    # Each part is sorted by (fid, start) and, per fid, base_rest < latest < created by start (events
    # come after the base's history): a stable sort by fid alone merges them (timsort finds the runs).
    out = out.take(np.argsort(out.fid, kind="stable"))
    same = out.fid[1:] == out.fid[:-1]
    if np.any(same & (out.start[1:] < out.start[:-1])):  # events older than the base: sort fully
        out = out.sorted()
    return out


@dataclass
class TickAggregates:
    """Per (group, tick) figures of the facts valid at the tick (`start <= tau < end`)."""

    group_codes: np.ndarray  # (ng, number of group variables)
    ticks: np.ndarray  # (nt,)
    count: np.ndarray  # (ng, nt) int64
    duration_ms: np.ndarray  # (ng, nt) int64: sum over valid facts of (tau - start)


def current_aggregates(iv: Intervals, ticks: np.ndarray) -> TickAggregates:
    """Counts and duration sums at every tick, with difference arrays: O(intervals + groups*ticks),
    not O(intervals*ticks). Exact in int64 milliseconds."""
    nt = len(ticks)
    ngv = iv.groups.shape[1]
    if nt == 0 or len(iv) == 0:
        return TickAggregates(np.zeros((0, ngv), np.int64), ticks, np.zeros((0, nt), np.int64),
                              np.zeros((0, nt), np.int64))
    t_first, every = int(ticks[0]), int(ticks[1] - ticks[0]) if nt > 1 else 1
    lo = np.clip(-((t_first - iv.start) // every), 0, nt)  # first tick index with tau >= start
    hi = np.clip(-((t_first - iv.end) // every), 0, nt)  # first tick index with tau >= end
    live = lo < hi
    codes, g = group_index(iv.groups[live])
    lo, hi, rel = lo[live], hi[live], iv.start[live] - t_first
    ng = len(codes)
    width = nt + 1
    cnt = np.zeros(ng * width, dtype=np.int64)
    sst = np.zeros(ng * width, dtype=np.int64)
    np.add.at(cnt, g * width + lo, 1)
    np.add.at(cnt, g * width + hi, -1)
    np.add.at(sst, g * width + lo, rel)
    np.add.at(sst, g * width + hi, -rel)
    count = np.cumsum(cnt.reshape(ng, width), axis=1)[:, :nt]
    sumrel = np.cumsum(sst.reshape(ng, width), axis=1)[:, :nt]
    offs = (ticks - t_first).astype(np.int64)
    return TickAggregates(codes, ticks, count, count * offs[None, :] - sumrel)


def group_index(groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of `groups` (n, k) and each row's index among them. Column by column with
    1-D uniques (a row-wise `np.unique(axis=0)` sorts void views, several times slower)."""
    n, k = groups.shape
    if k == 0:
        return np.zeros((1, 0), np.int64), np.zeros(n, np.int64)
    key = distinct(groups[:, 0])[1]
    for j in range(1, k):
        inv = distinct(groups[:, j])[1]
        key = distinct(key * (int(inv.max(initial=0)) + 1) + inv)[1]
    first = np.zeros(int(key.max(initial=-1)) + 1, dtype=np.int64)
    first[key[::-1]] = np.arange(n - 1, -1, -1)  # any row of each group gives its codes
    return groups[first], key


def durations_exact(iv: Intervals, ticks: np.ndarray) -> bool:
    """True when every duration `tau - start` (ms) is a multiple of 125 ms: then each one is an exact
    double in seconds, and the exact ms sum / 1000 equals the oracle's `math.fsum` of the doubles,
    as long as every sum stays below 2^53 ms (in int64, and exact as a double)."""
    if len(ticks) == 0 or len(iv) == 0:
        return True
    every = int(ticks[1] - ticks[0]) if len(ticks) > 1 else 125
    longest = int(ticks[-1]) - int(iv.start.min())
    return every % 125 == 0 and len(iv) * max(longest, 0) < 2**53 and bool(((iv.start - int(ticks[0])) % 125 == 0).all())


def fsum_durations(iv: Intervals, ticks: np.ndarray, group_codes: np.ndarray,
                   chunk: int = 4_000_000) -> np.ndarray:
    """Per (group, tick): the correctly rounded exact sum of the facts' durations
    `(tau - start) / 1000.0` in seconds — bit for bit the oracle's `math.fsum` — with integer limbs
    (`exact.exact_duration_sums`: as ages per binade segment when the period is a multiple of
    125 ms, else over every (fact, tick) pair, in chunks). `group_codes` are
    `current_aggregates(iv, ticks).group_codes`. Used only when `durations_exact` is False."""
    nt, ng = len(ticks), len(group_codes)
    if nt == 0 or ng == 0 or len(iv) == 0:
        return np.zeros((ng, nt), dtype=np.float64)
    t_first, every = int(ticks[0]), int(ticks[1] - ticks[0]) if nt > 1 else 1
    lo = np.clip(-((t_first - iv.start) // every), 0, nt)  # as in current_aggregates
    hi = np.clip(-((t_first - iv.end) // every), 0, nt)
    live = lo < hi
    codes, g = group_index(iv.groups[live])
    assert np.array_equal(codes, group_codes), "group codes differ from current_aggregates'"
    return exact_duration_sums(g, lo[live], hi[live], iv.start[live] - t_first, every, ng, nt, chunk)


