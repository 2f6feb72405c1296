"""The driver's merge of the general plan's partial rows (kernels/general/rows.merge_partials), without
Spark: each bucket's SUM/AVG partials travel as `sums.CellSums` in whichever form its numbers allowed
(limb sums of durations, int64 sums of small integers, ExactTotals for anything else); concatenated
and added per group they give the oracle's SUM and AVG of all the buckets' values, whatever mix of
forms the buckets sent; MIN/MAX candidates merge to the oracle's MIN/MAX."""
from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
from hypothesis import given, settings, strategies as st

from tefq.semantics.expressions import aggregate
from tefq.spark.kernels.exact import cell_sums, limbs
from tefq.spark.kernels.general.expressions import Values
from tefq.spark.kernels.general.rows import merged_extremes
from tefq.spark.kernels.general.sums import CellSums, ExactTotal

CELLS = 3
durations = st.lists(st.integers(0, 10**9).map(lambda ms: ms / 1000), max_size=4)  # limbs
small_ints = st.lists(st.integers(-10**6, 10**6), max_size=4)  # int64 sums
anything = st.lists(st.one_of(st.integers(-10**20, 10**20), st.decimals(allow_nan=False, allow_infinity=False,
                                                                      places=2), st.floats(-1e9, 1e9), st.just("x")),
                    max_size=4)  # ExactTotals


def bucket(cells: list[list], form: str) -> CellSums:
    """One bucket's partial sums of its cells' values, in `form`."""
    nums = [[v for v in c if type(v) in (int, float, Decimal)] for c in cells]
    n = np.array([len(c) for c in nums], np.int64)
    if form == "limbs":
        flat = np.array([v for c in nums for v in c], np.float64)
        return CellSums(n, limbs=cell_sums(np.repeat(np.arange(len(cells)), n), limbs(flat), len(cells)))
    if form == "ints":
        return CellSums(n, ints=np.array([sum(c) for c in nums], np.int64))
    return CellSums(n, totals=[ExactTotal.of(c) for c in cells])


def cell(v: Values, i: int):
    if not v.ok[i]:
        return None
    return {"double": float, "int": int}.get(v.kind, lambda x: x)(v.data[i])


def same(a, b) -> bool:
    return type(a) is type(b) and (a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b)))


@st.composite
def buckets(draw) -> list[tuple[str, list[list]]]:
    out = []
    for _ in range(draw(st.integers(1, 4))):
        form = draw(st.sampled_from(["limbs", "ints", "totals"]))
        values = {"limbs": durations, "ints": small_ints, "totals": anything}[form]
        out.append((form, [draw(values) for _ in range(CELLS)]))
    return out


@settings(max_examples=200, deadline=None)
@given(buckets())
def test_partial_sums_in_any_form_merge_to_the_oracles_sum_and_average(parts):
    col = CellSums.concat([bucket([[Decimal(v) if isinstance(v, Decimal) else v for v in c] for c in cells], form)
                           for form, cells in parts])
    group = np.tile(np.arange(CELLS), len(parts))  # rows bucket after bucket, one per cell
    order = np.argsort(group, kind="stable")
    merged = col.added(order, np.arange(CELLS) * len(parts))
    for func in ("SUM", "AVG"):
        got = merged.final(func)
        for i in range(CELLS):
            values = [v for _, cells in parts for v in cells[i]]
            want = aggregate(func, values, False)
            assert (want is None and cell(got, i) is None) or same(cell(got, i), want), (func, values)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.one_of(st.none(), st.integers(-5, 5), st.floats(-5, 5, allow_nan=False)),
                         min_size=1, max_size=4), min_size=1, max_size=4))
def test_min_max_candidates_merge_to_the_oracles_min_and_max(groups):
    values = [v for g in groups for v in g]
    data = np.empty(len(values), dtype=object)
    data[:] = values
    col = Values("object", data, np.array([v is not None for v in values], dtype=bool))
    starts = np.cumsum([0] + [len(g) for g in groups[:-1]])
    for func in ("MIN", "MAX"):
        got = merged_extremes(col, starts, func)
        for i, g in enumerate(groups):
            want = aggregate(func, [v for v in g if v is not None], False)
            assert (want is None and not got.ok[i]) or same(got.data[i], want), (func, g)
