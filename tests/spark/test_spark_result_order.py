"""The driver's result rows come out of the collectors in the result order, so the writers do not
sort them again (`QueryResult.ordered`): numbers as canonical terms written without `to_term` per
value, numeric columns ranked by value, the CSV cells of plain literals read without the regex.
Pure Python (no Spark)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tefq.io.result_writers import csv_cell, plain_lexical
from tefq.semantics.values import to_term
from tefq.plan.logical import Call, Var
from tefq.results import QueryResult, order_key
from tefq.spark.kernels.general.rows import value_cells
from tefq.spark.kernels.general.expressions import Values
from tefq.spark.output import NumericRows, _Column, distinct, format_rows, in_value_order, number_terms
from tefq.spark.output import result_order as rows_order
from tefq.terms import split_literal

DOUBLES = [0.0, -0.0, 1.0, -1.0, 0.1, 123.0, 113.711, 1e16, 1e-5, 1.5e300, -2.5e-300, 2**53 + 0.0, 1e15 + 0.5,
           math.inf, -math.inf, math.nan, 5e-324]
INTS = [0, 1, -1, 2**53, -(2**53), 2**62, -(2**63), 42]


def result_order(rows):
    return QueryResult("q", ("a",), rows).sorted_rows()


@pytest.mark.parametrize("values", [np.array(DOUBLES), np.array(INTS, np.int64),
                                    np.random.default_rng(1).normal(0, 1e6, 2000).round(3),
                                    np.random.default_rng(2).integers(-10**6, 10**6, 2000),
                                    np.random.default_rng(4).random(5000) * 10.0 ** np.arange(-10, 25).repeat(143)[:5000],
                                    np.random.default_rng(5).integers(-2**63, 2**63 - 1, 2000, dtype=np.int64)])
def test_number_terms_are_to_term(values):
    uniq = np.unique(values)
    conv = int if uniq.dtype.kind == "i" else float
    assert number_terms(uniq) == [to_term(conv(v)) for v in uniq.tolist()]


def test_value_order_is_order_key_order_where_claimed():
    for values in (np.array([x for x in DOUBLES if not math.isnan(x)]), np.array([3, -7, 2**52], np.int64)):
        uniq = np.unique(values)
        assert in_value_order(uniq)
        keys = [order_key(t) for t in number_terms(uniq)]
        assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert not in_value_order(np.unique(np.array([1.0, math.nan])))
    assert not in_value_order(np.array([1, 2**53], np.int64))


def test_format_rows_in_result_order():
    rng = np.random.default_rng(3)
    n = 3000
    ticks = rng.integers(0, 5, n) * 1000
    groups = rng.integers(0, 40, (n, 1))
    sums = np.where(rng.random(n) < 0.1, -0.0, rng.normal(0, 100, n).round(2))
    counts = rng.integers(-3, 30, n)
    terms = {c: f"<http://x/ch{c}>" for c in range(40)}
    projections = (("C", Var("group:c")), ("T", Var("t")), ("N", Var("n")),
                   ("R", Call("/", (Var("t"), Var("n")))))
    rows = NumericRows(ticks, groups, {"t": sums, "n": counts})
    got = format_rows(rows, terms, ("c",), projections, ordered=True)
    assert got == result_order(format_rows(rows, terms, ("c",), projections))
    assert any(cells[3] is None for _, cells in got)  # a division by zero: unbound, ordered first


def test_general_value_cells_rank_as_order_keys():
    data = np.array([2.5, -1.0, 2.5, 0.0, 7.25, -0.0, 1e20])
    ok = np.array([True, True, True, False, True, True, True])
    cells, ranks = value_cells(Values("double", data, ok))
    assert list(cells) == [None if not k else to_term(float(x)) for x, k in zip(data, ok)]
    keys = [order_key(c) for c in cells]
    assert all((ranks[i] < ranks[j]) == (keys[i] < keys[j]) for i in range(len(data)) for j in range(len(data)))
    assert value_cells(Values("double", np.array([1.0, math.nan]), np.ones(2, bool)))[1] is None


@pytest.mark.parametrize("cell", ['"113.711"^^<http://www.w3.org/2001/XMLSchema#double>', '"plain"', '""',
                                  '"a,b"@en', '"x\\"y"', '"tab\\t"^^<http://x/dt>', '"a"^^<http://x/d"t>',
                                  '"a\nb"', '"42"^^<http://www.w3.org/2001/XMLSchema#integer>'])
def test_csv_cell_of_literals(cell):
    lexical = plain_lexical(cell)
    assert lexical is None or lexical == split_literal(cell)[0]
    assert csv_cell(cell) == split_literal(cell)[0]


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.lists(st.sampled_from(DOUBLES) | st.floats(), max_size=60).map(lambda v: np.array(v, np.float64)),
                 st.lists(st.sampled_from(INTS) | st.integers(-(2**63), 2**63 - 1), max_size=60)
                 .map(lambda v: np.array(v, np.int64))))
def test_distinct_is_np_unique(values):
    """A column's distinct values by hashing (`distinct`) are np.unique's: sorted, NaN once and
    last, 0.0 and -0.0 one value (both written "0"), each row's index among them."""
    want, want_index = np.unique(values, return_inverse=True)
    got, index = distinct(values)
    assert got.dtype == want.dtype and index.dtype == np.int64
    assert [to_term(v) for v in got.tolist()] == [to_term(v) for v in want.tolist()]
    assert index.tolist() == want_index.reshape(-1).tolist()


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_rows_order_is_lexsorts(data):
    """The result order packed into one int64 sort (`result_order`) is `np.lexsort`'s of tick,
    then each column's rank; past 2^63 distinct combinations it is lexsort itself."""
    n = data.draw(st.integers(0, 120))
    ticks = np.array(data.draw(st.lists(st.sampled_from([-(2**62), -5, 0, 7, 10**12, 2**62]), min_size=n, max_size=n)),
                     np.int64)
    columns = []
    for size in data.draw(st.lists(st.sampled_from([1, 3, 70_000, 2**21]), max_size=4)):
        index = np.array(data.draw(st.lists(st.integers(0, size - 1), min_size=n, max_size=n)), np.int64)
        columns.append(_Column([None] * size, index, in_order=True))
    want = np.lexsort(tuple(c.index for c in reversed(columns)) + (ticks,)) if n else np.zeros(0, np.int64)
    assert rows_order(ticks, columns).tolist() == want.tolist()
