"""The stager's column-wise TSV path (tefq.io.tsv_columns): a plain file stages to the same Parquet
file as the row reader's; any file the row reader would change or complain about goes to it."""
from __future__ import annotations

import pyarrow.parquet as pq
import pytest

import tefq.io.element_tables as element_tables
import tefq.io.staging as staging
from tefq.errors import TefqError
from tefq.io.bad_rows import STRICT
from tefq.io.tsv_columns import plain_tsv_table

X = "http://x/"
PLAIN = ("ts\ts\tp\to\n"
         f"1000\t<{X}u1>\t<{X}join>\t<{X}a>\n"
         "\n"
         f"0001001\t_:b1\t<{X}p>\t\"caf\u00e9\"@fr\n"
         f"1002\t<{X}u2>\t<{X}q>\t\"7\"^^<http://www.w3.org/2001/XMLSchema#integer>\n")


def staged(tmp_path, text: bytes, column_wise: bool, monkeypatch) -> object:
    src = tmp_path / "in"
    src.mkdir(exist_ok=True)
    (src / "part-0.tsv").write_bytes(text)
    monkeypatch.setattr(element_tables, "COLUMN_WISE", column_wise)
    out = tmp_path / f"staged-{column_wise}"
    s = staging.Stager(str(src), str(out), STRICT)
    s.stage_file(str(src / "part-0.tsv"), str(out / "x.parquet"))
    return pq.read_table(out / "x.parquet")


def test_a_plain_file_stages_column_wise_to_what_the_row_reader_writes(tmp_path, monkeypatch):
    assert plain_tsv_table(_write(tmp_path, PLAIN.encode())) is not None
    fast = staged(tmp_path, PLAIN.encode(), True, monkeypatch)
    rows = staged(tmp_path, PLAIN.encode(), False, monkeypatch)
    assert fast.equals(rows) and fast.schema == rows.schema
    assert fast["ts"].to_pylist() == [1000, 1001, 1002]


@pytest.mark.parametrize("text", [
    PLAIN.replace("ts\ts\tp\to", "s\tts\tp\to"),  # another column order
    "\ufeff" + PLAIN,  # a BOM
    PLAIN.replace("\n", "\r\n"),  # CRLF
    PLAIN.replace("1002", "-5"),  # a negative ts (the row reader parses it)
    PLAIN.replace("1002", "2026-01-01T00:00:00Z"),  # an ISO ts
    PLAIN + f"5\t<{X}u>\t<{X}p>\t\"s\"^^<http://www.w3.org/2001/XMLSchema#string>\n",  # rewritten
    PLAIN + f"5\t <{X}u>\t<{X}p>\t<{X}o>\n",  # a space around a term
    PLAIN + f"5\t<{X}u>\t<{X}p>\t\"a\tb\"\n",  # a TAB inside a literal (glued by split_tsv)
    PLAIN + f"5\t<{X}u>\t<{X}p>\n",  # three columns: a bad row
    PLAIN + f"5\t<{X}u>\t\"lit\"\t<{X}o>\n",  # a literal predicate: a bad row
    PLAIN + "5\t<u>\t<p>\t\x00\n",  # NUL
])
def test_anything_not_plain_goes_to_the_row_reader(tmp_path, monkeypatch, text):
    data = text.encode("utf-8")
    assert plain_tsv_table(_write(tmp_path, data)) is None
    try:
        want = staged(tmp_path, data, False, monkeypatch)
    except TefqError as e:
        with pytest.raises(TefqError) as got:
            staged(tmp_path, data, True, monkeypatch)
        assert str(got.value) == str(e)
        return
    assert staged(tmp_path, data, True, monkeypatch).equals(want)


def test_invalid_utf8_goes_to_the_row_reader(tmp_path):
    assert plain_tsv_table(_write(tmp_path, PLAIN.encode() + f"5\t<{X}u>\t<{X}p>\t\"".encode() + b"\xff\"\n")) is None


def _write(tmp_path, data: bytes) -> str:
    path = tmp_path / "probe.tsv"
    path.write_bytes(data)
    return str(path)


def _parquet(tmp_path, rows: list[tuple]) -> str:
    import pyarrow as pa

    path = tmp_path / "part-0.parquet"
    pq.write_table(pa.table({"ts": pa.array([r[0] for r in rows], pa.int64()),
                             **{c: pa.array([r[i] for r in rows], pa.string()) for i, c in enumerate("spo", 1)}}),
                   path)
    return str(path)


@pytest.mark.parametrize("odd", [
    (5, f"<{X}u>", f"<{X}p>", "\"s\"^^<http://www.w3.org/2001/XMLSchema#string>"),  # rewritten by the reader
    (5, f"<{X}u>", f"<{X}p>", None),  # a null cell: a bad row
    (5, f"<{X}u>", "\"lit\"", f"<{X}o>"),  # a literal predicate: a bad row
])
def test_parquet_tables_are_the_parquet_readers_elements(tmp_path, monkeypatch, odd):
    from tefq.io.element_tables import elements_of, stream_tables
    from tefq.io.readers import read_stream

    monkeypatch.setattr(element_tables, "CHUNK", 2)  # batches of two rows: one plain, one not
    path = _parquet(tmp_path, [(1, f"<{X}a>", f"<{X}p>", f"<{X}b>"), (2, f"<{X}a>", f"<{X}p>", "\"x\""),
                               (3, f"<{X}c>", f"<{X}p>", f"<{X}d>"), odd])
    try:
        want = list(read_stream(path))
    except TefqError as e:
        with pytest.raises(TefqError) as got:
            [elements_of(t) for t in stream_tables(path)]
        assert str(got.value) == str(e)
        return
    assert [e for t in stream_tables(path) for e in elements_of(t)] == want


def test_a_published_tsv_table_is_what_write_stream_writes(tmp_path):
    from tefq.io.element_tables import element_table, write_tsv_table
    from tefq.io.stream_writers import write_stream

    rows = [(1, f"<{X}a>", f"<{X}p>", "\"x, \\\"y\\\"\"@en"), (-2, "_:b", f"<{X}p>", f"<{X}o>")]
    write_tsv_table(element_table(rows), str(tmp_path / "a.tsv"))
    write_stream(rows, str(tmp_path / "b.tsv"))
    assert (tmp_path / "a.tsv").read_bytes() == (tmp_path / "b.tsv").read_bytes()
