"""A Redis page read as columns (`redis_stream.page_batch`: cells checked column-wise, the unusual
ones by the row checker) gives what checking its entries one by one gives: the same elements, in
normal form, or nothing (the page is then read entry by entry, where a bad entry is named)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tefq.io.redis_stream import EntryChecker, page_batch
from tefq.io.validate import Fault, RowChecker
from tests.support.term_streams import NODES, NUMBERS, OTHER_LITERALS

SUBJECTS = NODES + ["<http://x/\\u00e9>", " <http://x/s>", "_:b "]  # spaces around a term carry nothing
PREDICATES = [n for n in SUBJECTS if n.startswith("<")] + ["<http://x/p> "]
OBJECTS = SUBJECTS + NUMBERS + OTHER_LITERALS + ['"x"^^xsd:string', '"5"^^xsd:int', '"X"@EN', "42", "1.5e3", "true"]
BAD_TERMS = ["", "<rel>", "<http://x/a b>", '"open', "x\ny", "<http://x/\x00>",
             "_:", "<http://x/a><http://x/b>", '"x"^^nope:t']
BAD_CELLS = (  # per column: what no entry may hold there
    ["", "abc", "99999999999999999999", "1 2", "1\n2", "+"],
    BAD_TERMS + ['"a literal subject"'],
    BAD_TERMS + ["_:b", '"a literal predicate"'],
    BAD_TERMS + ['"a\x00b"', '"a\nb"'])
TIMES = ["0", "1383523200000", "999999999999999999", "+5", "2024-01-01T00:00:00Z", "-5"]

times = st.sampled_from(TIMES).map(str.encode)
subjects, predicates, objects = (st.sampled_from(t).map(str.encode) for t in (SUBJECTS, PREDICATES, OBJECTS))


@st.composite
def pages(draw) -> list[list[bytes]]:
    """Entries as (ts, s, p, o) cells, good ones in and out of normal form; half of the pages with
    one bad cell (not UTF-8, or what the column may not hold) anywhere."""
    rows = draw(st.lists(st.tuples(times, subjects, predicates, objects).map(list), min_size=1, max_size=30))
    if draw(st.booleans()):
        row, cell = draw(st.integers(0, len(rows) - 1)), draw(st.integers(0, 3))
        rows[row][cell] = draw(st.one_of(st.sampled_from(BAD_CELLS[cell]).map(str.encode),
                                         st.just(b"<http://x/\xff>")))
    return rows


def one_by_one(rows: list[list[bytes]]) -> list | None:
    """Each entry checked on its own (`EntryChecker`), None if one is bad."""
    checker = EntryChecker()
    try:
        return [checker.element(b"1-%d" % i, [b"ts", ts, b"s", s, b"p", p, b"o", o])
                for i, (ts, s, p, o) in enumerate(rows)]
    except Fault:
        return None


@settings(max_examples=1000, deadline=None)
@given(pages(), st.integers(0, 10**9))
def test_a_page_as_columns_is_its_entries_checked_one_by_one(rows, first_row) -> None:
    joined = [b"\n".join(r[i] for r in rows) for i in range(4)]
    batch = page_batch(joined, len(rows), first_row, RowChecker())
    want = one_by_one(rows)
    if want is None:
        assert batch is None
        return
    assert batch is not None
    got = batch.to_pydict()
    assert list(zip(got["ts"], got["s"], got["p"], got["o"])) == want
    assert got["row"] == list(range(first_row + 1, first_row + len(rows) + 1))


@pytest.mark.parametrize("column,cell", [(c, bad.encode()) for c, cells in enumerate(BAD_CELLS) for bad in cells]
                         + [(c, b"<http://x/\xff>") for c in range(1, 4)])
def test_every_bad_cell_sends_its_page_entry_by_entry(column, cell) -> None:
    rows = [[b"5", b"<http://x/s>", b"<http://x/p>", b"<http://x/o>"] for _ in range(3)]
    rows[1][column] = cell
    assert one_by_one(rows) is None
    assert page_batch([b"\n".join(r[i] for r in rows) for i in range(4)], 3, 0, RowChecker()) is None


def test_a_term_over_the_length_limit_sends_its_page_entry_by_entry(monkeypatch) -> None:
    monkeypatch.setenv("TEFQ_MAX_TERM_CHARS", "20")
    rows = [[b"1", b"<http://x/s>", b"<http://x/p>", b"<http://x/" + b"a" * 30 + b">"]]
    assert one_by_one(rows) is None
    assert page_batch(rows[0], 1, 0, RowChecker()) is None
