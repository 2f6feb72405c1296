"""The exact sums of the general kernels (tefq.spark.kernels.general.sums, kernels.exact) against the oracle's
`aggregate`: SUM and AVG of any mix of numbers and non-numbers, split into partial totals and
added back (the driver's merge); the age identity that sums open durations without a (fact, tick)
pair; dense and sparse difference arrays alike."""
from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
from hypothesis import given, settings, strategies as st

from tefq.semantics.expressions import aggregate
from tefq.spark.kernels.exact import BINADE_VALUES, age_limbs, binade, limbs, range_sums
from tefq.spark.kernels.general.sums import ExactTotal
from tefq.spark.kernels.tick_aggregates import Layout

# (doubles near the largest overflow the oracle's own fsum: left out)
numbers = st.one_of(st.integers(-10**20, 10**20), st.decimals(allow_nan=False, allow_infinity=False, places=3),
                    st.floats(-1e300, 1e300), st.sampled_from(["x", True]))


def same(a, b) -> bool:
    return type(a) is type(b) and (a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b)))


@settings(max_examples=300, deadline=None)
@given(st.lists(numbers, max_size=8), st.integers(0, 8))
def test_exact_totals_are_the_oracles_sum_and_average_even_when_split(values, cut):
    values = [Decimal(v) if isinstance(v, Decimal) else v for v in values]
    whole = ExactTotal.of(values)
    parts = ExactTotal.of(values[:cut]) + ExactTotal.of(values[cut:])
    want_sum = aggregate("SUM", values, False)
    want_avg = aggregate("AVG", values, False)
    for t in (whole, parts):
        assert same(t.total(), want_sum)
        assert (t.average() is None and want_avg is None) or same(t.average(), want_avg)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**40))
def test_an_age_as_limbs_is_2_59_times_its_125ths_plus_its_binade_constant(m):
    lim = limbs(np.array([m / 1000.0]))
    exact = int(lim[0, 0]) + (int(lim[1, 0]) << 32) + (int(lim[2, 0]) << 64)
    assert exact == ((m // 125) << 59) + int(BINADE_VALUES[binade(np.array([m]))[0], m % 125])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 6), st.integers(0, 6), st.integers(-10**6, 10**6)),
                min_size=1, max_size=12), st.sampled_from([250, 60_000]), st.integers(-10**6, 10**6))
def test_ages_summed_per_tick_equal_the_limbs_of_every_age(ranges, every, t_first):
    t_first -= t_first % 125  # ticks on the same instant modulo 125 ms
    g = np.unique([r[0] for r in ranges], return_inverse=True)[1].reshape(-1).astype(np.int64)
    ka = np.array([min(r[1], r[2]) for r in ranges], np.int64)
    kb = np.array([max(r[1], r[2]) + 1 for r in ranges], np.int64)
    start = np.array([t_first - abs(r[3]) for r in ranges], np.int64)  # started at or before the first tick
    lay = Layout.of(g, ka, kb, int(g.max()) + 1)
    cell_g, cell_k = lay.cells()
    at = np.arange(lay.size, dtype=np.int64)
    got = age_limbs(lay.cell, g, ka, kb, start, t_first, every, at, cell_k)
    want = np.zeros((3, lay.size), np.int64)
    for i in range(len(ranges)):
        for k in range(ka[i], kb[i]):
            want[:, lay.cell(g[i:i + 1], np.array([k]))[0]] += limbs(np.array([(t_first + k * every - start[i]) / 1000.0]))[:, 0]
    total = lambda x: [int(a) + (int(b) << 32) + (int(c) << 64) for a, b, c in x.T]  # noqa: E731
    assert total(got) == total(want)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(-2**31, 2**31)), max_size=20))
def test_dense_and_sparse_difference_arrays_agree(ranges):
    lo = np.array([min(a, b) for a, b, _ in ranges], np.int64)
    hi = np.array([max(a, b) for a, b, _ in ranges], np.int64)
    values = np.array([[v for _, _, v in ranges]], np.int64).reshape(1, -1)
    at = np.arange(32, dtype=np.int64)
    want = np.array([sum(int(v) for a, b, v in zip(lo, hi, values[0]) if a <= c < b) for c in at])
    assert range_sums(lo, hi, values, at).tolist() == [want.tolist()]
    assert range_sums(lo, hi, values, at, size=32).tolist() == [want.tolist()]
