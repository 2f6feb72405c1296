"""SUM / AVG of DURATION(?S, ?E) of the fact operator's `tick_rows` against the oracle's arithmetic
(`math.fsum` of each active solution's duration double, brute force per tick): every tick the
same instant modulo 125 ms (ages summed per binade segment, `exact.age_limbs`) and not (one
term per (fact, tick) pair); with and without CURRENT, under a WHILE scope, complete and partial
(limb) rows; starts and ends exactly on ticks, a ms before and after, open facts."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings, strategies as st

from tefq.spark.kernels.exact import rounded
from tefq.spark.kernels.intervals import OPEN
from tefq.spark.kernels.joins import Relation
from tefq.spark.kernels.tick_aggregates import TickSpec, tick_rows

EVERY = [125, 250, 60_000, 333, 1_000]  # the first three: ages; the last two: per (fact, tick) pair


@st.composite
def instants(draw, t_first: int, every: int, nt: int) -> int:
    """An instant on a tick, a ms either side of one, or anywhere near the ticks."""
    k = draw(st.integers(-3, nt + 2))
    near = draw(st.sampled_from([0, 1, -1, None]))
    return t_first + k * every + (near if near is not None else draw(st.integers(0, every - 1)))


@st.composite
def cases(draw):
    every = draw(st.sampled_from(EVERY))
    t_first = draw(st.integers(-10**6, 10**9)) // every * every + draw(st.sampled_from([0, 7]))
    nt = draw(st.integers(1, 12))
    facts = []
    for _ in range(draw(st.integers(1, 14))):
        s = draw(instants(t_first, every, nt))
        e = OPEN if draw(st.booleans()) else max(s + 1, draw(instants(t_first, every, nt)))
        facts.append((draw(st.integers(0, 2)), draw(st.integers(0, 1)), s, int(e)))
    scope = None
    if draw(st.booleans()):
        scope = []
        for _ in range(draw(st.integers(1, 4))):
            ws = draw(instants(t_first, every, nt))
            we = OPEN if draw(st.booleans()) else max(ws + 1, draw(instants(t_first, every, nt)))
            scope.append((draw(st.integers(0, 1)), ws, int(we)))
    return every, t_first, nt, facts, scope, draw(st.booleans()), draw(st.booleans())


def active(s: int, e: int, tau: int, d: int, current: bool, scope) -> bool:
    """The oracle's activity of one solution at tau (tick_aggregates' module docstring)."""
    if scope is None:
        return s <= tau < (e if current else e + d)
    for ws, we in scope:
        if current and max(s, ws) <= tau < min(e, we + d):
            return True
        if not current and s < we and e > ws and max(s, ws) <= tau < we + d:
            return True
    return False


@settings(max_examples=300, deadline=None)
@given(cases())
def test_duration_sums_are_the_oracles_fsum_bit_for_bit(case):
    every, t_first, nt, facts, scope, current, partial = case
    ticks = t_first + every * np.arange(nt, dtype=np.int64)
    sol = Relation(("g", "k"), np.array([[g, k] for g, k, _, _ in facts], np.int64).reshape(-1, 2),
                   np.array([f[2] for f in facts], np.int64), np.array([f[3] for f in facts], np.int64))
    scope_rel = None if scope is None else Relation(
        ("k0",), np.array([[k] for k, _, _ in scope], np.int64), np.array([w[1] for w in scope], np.int64),
        np.array([w[2] for w in scope], np.int64))
    spec = TickSpec(current, every, (0,), (("t", "sum_duration", -1), ("a", "avg_duration", -1)),
                    None if scope is None else (1,), partial)
    rows = tick_rows(sol, spec, scope_rel, ticks)
    got = {(int(t), int(g)): i for i, (t, g) in enumerate(zip(rows.ticks, rows.groups[:, 0]))}
    want = {}
    for tau in ticks.tolist():
        for g in range(3):
            durations = [(min(e, tau) - s) / 1000.0 for gg, k, s, e in facts if gg == g and active(
                s, e, tau, every, current, None if scope is None else [(ws, we) for kk, ws, we in scope if kk == k])]
            if durations:
                want[(tau, g)] = (math.fsum(durations), len(durations))
    assert set(got) == set(want)
    for cell, i in got.items():
        total, n = want[cell]
        if partial:
            limb_sums = np.array([[rows.values[f"t#{j}"][i]] for j in range(3)], np.int64)
            assert rounded(limb_sums)[0] == total and rows.values["a#n"][i] == n
        else:
            assert rows.values["t"][i] == total and rows.values["a"][i] == total / n
