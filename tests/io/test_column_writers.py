"""CSV, TSV, Parquet and Arrow lay the rows out as arrays (`column_table`, `ResultColumns`): the
same bytes and tables as the row-by-row writers they replaced, which are kept here as the
reference, with or without a collector's frame (whose distinct cells may repeat)."""
from __future__ import annotations

import csv
import io
import os
import tempfile

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tefq import terms
from tefq.io.result_writers import (arrow_table, csv_cell, planned_kind, results_text, table, tsv_cell, typed_array,
                                    write_results)
from tefq.results import QueryResult, ResultColumns
from tests.support.result_cells import cells

_control = st.sampled_from(["", ",", '"', "\r", "\n", "\r\n", "\x00", "\t", "a,\"b\"", " x ", "é€😀", "\x85\u2028"])
any_cells = st.one_of(cells, _control.map(terms.literal), _control.map(lambda t: terms.literal(t, lang="en")))
NAMES = ["a", "b", "tick", "query", "?c", "$a"]


@st.composite
def results(draw) -> list[QueryResult]:
    out = []
    for q in range(draw(st.integers(1, 3))):
        names = tuple(draw(st.lists(st.sampled_from(NAMES), max_size=3)))
        width = len(names)
        rows = draw(st.lists(st.tuples(st.integers(-10**13, 10**13) | st.sampled_from([0, 5000]),
                                       st.tuples(*[any_cells] * width)), max_size=8))
        out.append(QueryResult(f"q{q}", names, rows))
    return out


def with_redundant_frame(r: QueryResult) -> QueryResult:
    """`r` with a frame as a collector makes one: each distinct cell twice and an unused None."""
    plain = r.as_columns()
    columns = []
    for cells_, index in plain.columns:
        twice = [None, *cells_, *cells_]
        columns.append((twice, index + 1 + len(cells_) * (np.arange(len(index)) % 2)))
    frame = ResultColumns(plain.ticks, tuple(columns))
    assert frame.rows() == r.sorted_rows()
    return QueryResult(r.name, r.columns, frame.rows(), ordered=True, frame=frame)


def reference_text(rs: list[QueryResult], fmt: str, tick_format: str) -> str:
    """The row-by-row writers the column ones replaced."""
    head, rows = table(rs, tick_format)
    buf = io.StringIO(newline="")
    if fmt == "csv":
        w = csv.writer(buf, lineterminator="\r\n")
        w.writerow(head)
        w.writerows([csv_cell(c) for c in row] for row in rows)
    else:
        buf.write("\t".join("?" + n for n in head) + "\n")
        for row in rows:
            buf.write("\t".join(tsv_cell(c) for c in row) + "\n")
    return buf.getvalue()


def reference_arrow(rs: list[QueryResult], term_form: str) -> pa.Table:
    head, rows = table(rs)
    columns = list(zip(*rows)) or [()] * len(head)
    arrays = []
    for j, (name, values) in enumerate(zip(head, columns)):
        if j == head.index("tick"):
            ms = [int(terms.split_literal(v)[0]) for v in values]
            arrays.append(pa.array(ms, type=pa.int64()).cast(pa.timestamp("ms", tz="UTC")))
        elif j == 0 and len(rs) > 1:
            arrays.append(pa.array([terms.split_literal(v)[0] for v in values], type=pa.string()))
        elif term_form == "typed":
            arrays.append(typed_array(list(values), planned_kind(rs, name)))
        else:
            arrays.append(pa.array(values, type=pa.string()))
    return pa.Table.from_arrays(arrays, names=head)


@settings(max_examples=300, deadline=None)
@given(rs=results(), fmt=st.sampled_from(["csv", "tsv"]), tick_format=st.sampled_from(["ms", "iso"]),
       framed=st.booleans())
def test_text_columns_equal_the_row_writers(rs, fmt, tick_format, framed) -> None:
    expected = reference_text(rs, fmt, tick_format)
    shown = [with_redundant_frame(r) for r in rs] if framed else rs
    assert results_text(shown, fmt, tick_format) == expected
    with tempfile.TemporaryDirectory() as d:  # a file: the UTF-8 bytes go straight to its buffer
        path = os.path.join(d, f"out.{fmt}")
        write_results(shown, fmt, path, tick_format)
        with open(path, encoding="utf-8", newline="") as f:
            assert f.read() == expected


@settings(max_examples=200, deadline=None)
@given(rs=results(), framed=st.booleans())
def test_arrow_columns_equal_the_row_table(rs, framed) -> None:
    shown = [with_redundant_frame(r) for r in rs] if framed else rs
    assert arrow_table(shown).equals(reference_arrow(rs, "ntriples"))
    try:
        expected = reference_arrow(rs, "typed")
    except ValueError:  # a typed column the cells do not fit: refused the same way
        return
    assert arrow_table(shown, "typed").equals(expected)


@given(rows=st.lists(st.tuples(st.integers(-10**6, 10**6), st.tuples(any_cells, any_cells)), max_size=20))
def test_rows_through_columns_and_back(rows) -> None:
    assert ResultColumns.of_rows(rows, 2).rows() == rows
    assert ResultColumns.of_rows([(t, ()) for t, _ in rows], 0).rows() == [(t, ()) for t, _ in rows]


def test_a_million_rows_span_chunks(tmp_path, monkeypatch) -> None:
    """Rows laid out a chunk at a time join up with nothing lost or doubled at the seams."""
    import tefq.io.result_writers as writers

    monkeypatch.setattr(writers, "LINES_PER_CHUNK", 7)
    rows = [(t * 10, (f'"{t % 3}"', None if t % 4 else "<http://e/x>")) for t in range(100)]
    r = QueryResult("q", ("a", "b"), rows)
    assert results_text([r], "csv") == reference_text([r], "csv", "ms")
    assert results_text([r], "tsv", "iso") == reference_text([r], "tsv", "iso")
