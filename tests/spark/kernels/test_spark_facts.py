"""The vectorised fact kernels of the Spark engine against a sequential, one-event-at-a-time model."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from tefq.plan.ticks import tick_at_or_after, tick_at_or_before
from tefq.spark.kernels.intervals import OPEN, SINCE, UNTIL, Events, Intervals, apply_events, current_aggregates


def sequential(base: list[tuple[int, int, int]], events: list[tuple[int, int, int, int]]):
    """base: (fid, start, end); events: (ts, order, kind, fid). Spec §3.1 step by step."""
    ivs = [list(x) for x in base]
    unmatched = 0
    for ts, _, kind, fid in sorted(events, key=lambda e: (e[0], e[1])):
        mine = [iv for iv in ivs if iv[0] == fid]
        latest = max(mine, key=lambda iv: iv[1]) if mine else None
        is_open = latest is not None and latest[2] == OPEN
        if kind == SINCE and not is_open:
            if latest is not None and latest[2] == ts:
                latest[2] = OPEN  # meets itself: coalesce
            else:
                ivs.append([fid, ts, OPEN])
        elif kind == UNTIL:
            if is_open:
                latest[2] = ts
            else:
                unmatched += 1
    return sorted(tuple(iv) for iv in ivs), unmatched


def to_intervals(base):
    base = sorted(base)
    a = np.array(base, dtype=np.int64).reshape(-1, 3)
    return Intervals(a[:, 0].copy(), a[:, 1].copy(), a[:, 2].copy(), (a[:, 0] % 3).reshape(-1, 1)).sorted()


def to_events(events):
    a = np.array(events, dtype=np.int64).reshape(-1, 4)
    return Events(a[:, 2].copy(), a[:, 0].copy(), a[:, 1].copy(), a[:, 3].copy(), (a[:, 3] % 3).reshape(-1, 1))


@st.composite
def scenario(draw):
    nfid = draw(st.integers(1, 4))
    base = []
    for fid in range(nfid):
        state = draw(st.sampled_from(["none", "open", "closed"]))
        if state == "open":
            base.append((fid, draw(st.integers(-5, 0)), int(OPEN)))
        elif state == "closed":
            s = draw(st.integers(-8, -3))
            base.append((fid, s, draw(st.integers(s, 2))))
    evs = draw(st.lists(st.tuples(st.integers(0, 6), st.sampled_from([SINCE, UNTIL]),
                                  st.integers(0, nfid - 1)), max_size=25))
    events = [(ts, i, kind, fid) for i, (ts, kind, fid) in enumerate(evs)]
    return base, events


@settings(max_examples=400, deadline=None)
@given(scenario())
def test_apply_events_matches_sequential_model(sc):
    base, events = sc
    want, want_unmatched = sequential(base, events)
    got = apply_events(to_intervals(base), to_events(events))
    got_list = sorted(zip(got.intervals.fid.tolist(), got.intervals.start.tolist(), got.intervals.end.tolist()))
    assert got_list == want
    assert got.unmatched_until == want_unmatched
    assert (got.intervals.groups[:, 0] == got.intervals.fid % 3).all()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-20, 40), st.integers(0, 30) | st.just(int(OPEN))),
                max_size=20), st.integers(-10, 30), st.integers(1, 7), st.integers(1, 6))
def test_current_aggregates_matches_brute_force(raw, first, every, nt):
    ivs = [(g, s, e if e == int(OPEN) else s + e) for g, s, e in raw]
    iv = Intervals(np.array([x[0] for x in ivs], np.int64), np.array([x[1] for x in ivs], np.int64),
                   np.array([x[2] for x in ivs], np.int64),
                   np.array([[x[0] * 7] for x in ivs], np.int64).reshape(-1, 1))
    ticks = first + every * np.arange(nt, dtype=np.int64)
    agg = current_aggregates(iv, ticks)
    got = {}
    for gi, code in enumerate(agg.group_codes[:, 0].tolist()):
        for k, tau in enumerate(ticks.tolist()):
            if agg.count[gi, k]:
                got[(code, tau)] = (int(agg.count[gi, k]), int(agg.duration_ms[gi, k]))
    want = {}
    for g, s, e in ivs:
        for tau in ticks.tolist():
            if s <= tau < e:
                c, d = want.get((g * 7, tau), (0, 0))
                want[(g * 7, tau)] = (c + 1, d + tau - s)
    assert got == want


def test_tick_rounding():
    assert tick_at_or_after(1, 0, 5000) == 5000
    assert tick_at_or_after(5000, 0, 5000) == 5000
    assert tick_at_or_after(-1, 0, 5000) == 0
    assert tick_at_or_before(9999, 0, 5000) == 5000
    assert tick_at_or_after(7, 3, 5) == 8


@st.composite
def event_lists(draw):
    n = draw(st.integers(0, 30))
    rows = [(draw(st.integers(0, 5)), draw(st.sampled_from([SINCE, UNTIL])), draw(st.integers(0, 3)))
            for _ in range(n)]  # (ts, kind, fid); the element is (fid, kind), so equal ones are duplicates
    in_time = draw(st.booleans())
    if in_time:
        rows.sort(key=lambda r: r[0])
    return rows


def _events_of(rows) -> Events:
    a = np.array(rows, dtype=np.int64).reshape(-1, 3)
    return Events(a[:, 1].copy(), a[:, 0].copy(), np.arange(len(a), dtype=np.int64), a[:, 2].copy(),
                  (a[:, 2] % 2).reshape(-1, 1), a[:, 2] * 2 + a[:, 1])


@settings(max_examples=100, deadline=None)
@given(event_lists())
def test_apply_order_and_sorted_distinct_match_lexsort_and_distinct(rows):
    ev = _events_of(rows)
    assert ev.apply_order().tolist() == np.lexsort((ev.order, ev.ts, ev.fid)).tolist()
    got = ev.sorted_distinct()
    want = ev.distinct()
    key = lambda e: sorted(zip(e.fid.tolist(), e.ts.tolist(), e.order.tolist(), e.kind.tolist()))  # noqa: E731
    assert key(got) == key(want)
    in_order = list(zip(got.fid.tolist(), got.ts.tolist(), got.order.tolist()))
    assert in_order == sorted(in_order)  # apply order: (fid, ts, order)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(-2**62, 2**62)), max_size=25))
def test_group_index_matches_unique_rows(rows):
    from tefq.spark.kernels.intervals import group_index

    groups = np.array(rows, dtype=np.int64).reshape(-1, 2)
    codes, g = group_index(groups)
    assert len({tuple(r) for r in codes.tolist()}) == len(codes) == len({tuple(r) for r in groups.tolist()})
    assert (codes[g] == groups).all()


def test_fsum_durations_is_the_oracles_fsum_bit_for_bit() -> None:
    """The limb sum over (fact, tick) pairs equals math.fsum of the oracle's doubles, on
    millisecond starts (inexact doubles), open and closed facts, 0 to 2 group columns."""
    import math

    from tefq.spark.kernels.intervals import current_aggregates, fsum_durations

    rng = np.random.default_rng(7)
    for _ in range(25):
        n, ngv = int(rng.integers(1, 200)), int(rng.integers(0, 3))
        start = rng.integers(0, 100_000, n)
        end = np.where(rng.random(n) < 0.3, OPEN, start + rng.integers(1, 100_000, n))
        groups = rng.integers(0, 5, (n, ngv))
        iv = Intervals(np.arange(n), start, end, groups)
        every = int(rng.choice([333, 777, 1000, 6000]))
        ticks = np.arange(0, int(start.max()) + 5 * every, every)
        agg = current_aggregates(iv, ticks)
        got = fsum_durations(iv, ticks, agg.group_codes, chunk=50)  # several chunks
        for gi, codes in enumerate(agg.group_codes.tolist()):
            member = np.all(groups == np.array(codes, dtype=np.int64), axis=1)
            for k, tau in enumerate(ticks.tolist()):
                valid = (start <= tau) & (end > tau) & member
                assert got[gi, k] == math.fsum(((tau - start[valid]) / 1000.0).tolist())
