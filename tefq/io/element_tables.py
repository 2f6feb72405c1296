"""Checked elements as Arrow tables (ts int64, s, p, o strings), file by file: what the stager
writes as Parquet and what `tefq publish` sends, without a Python tuple per element where the file
allows it (issue 24: both ran in series with a live run's micro-batches, or beside them on the
same two cores).

A file every row of which the row readers (tefq.io.readers) would take unchanged is read
column-wise: a plain TSV file (tefq.io.tsv_columns), a Parquet file with no null, integer ts and
every term already in normal form (`readers.in_normal_form`, the Parquet reader's own test).
Every other file goes through the row readers, so a bad row is found, located and recorded with
`--bad-rows` exactly as before, and the tables are built from their elements in chunks.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from tefq.io.bad_rows import STRICT, BadRowLog
from tefq.io.readers import in_normal_form, read_stream_file, stream_files, stream_format
from tefq.io.tsv_columns import plain_tsv_table
from tefq.io.validate import HEADER
from tefq.vocabulary import Element

if TYPE_CHECKING:
    import pyarrow as pa

COLUMN_WISE = True  # plain files read column-wise; False: every file row by row (a benchmark's baseline)
CHUNK = 1 << 18  # elements per table built from the row readers' tuples
MAX_PARQUET_ROWS = 1 << 22  # a larger Parquet file goes through the row reader (its batches: bounded memory)


def element_schema() -> "pa.Schema":
    import pyarrow as pa

    return pa.schema([("ts", pa.int64()), ("s", pa.string()), ("p", pa.string()), ("o", pa.string())])


def element_table(elements: list[Element]) -> "pa.Table":
    import pyarrow as pa

    return pa.table(dict(zip(HEADER, zip(*elements))) if elements else {c: [] for c in HEADER}, element_schema())


def elements_of(table: "pa.Table") -> list[Element]:
    """A table's rows as element tuples (for a writer that takes them)."""
    return list(zip(*(table[c].to_pylist() for c in HEADER)))


def stream_tables(path: str, bad_rows: BadRowLog = STRICT) -> Iterator["pa.Table"]:
    """The elements of a stream file or directory, in stream order, as tables (`file_tables`)."""
    for f in stream_files(path):
        yield from file_tables(f, bad_rows)


def file_tables(path: str, bad_rows: BadRowLog = STRICT) -> Iterator["pa.Table"]:
    """One file's elements as tables: one table if the file is plain (module doc), else chunks of
    the row readers' elements (bad rows raised or recorded by `bad_rows`)."""
    plain = plain_table(path) if COLUMN_WISE else None
    if plain is not None:
        yield plain
        return
    elements = read_stream_file(path, bad_rows)
    while chunk := list(itertools.islice(elements, CHUNK)):
        yield element_table(chunk)


def plain_table(path: str) -> "pa.Table | None":
    fmt, gz = stream_format(path)
    if fmt == "tsv":
        return plain_tsv_table(path)
    return plain_parquet_table(path) if fmt == "parquet" else None


def plain_parquet_table(path: str) -> "pa.Table | None":
    """A Parquet file's elements if the Parquet reader would take every row unchanged, else None."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        if pf.metadata.num_rows > MAX_PARQUET_ROWS or not all(c in pf.schema_arrow.names for c in HEADER):
            return None
        table = pf.read(columns=list(HEADER))
    except (OSError, pa.ArrowException):
        return None  # the row reader says what is wrong, located
    ts = table.schema.field("ts").type
    if not pa.types.is_integer(ts) or ts == pa.uint64() or any(table[c].null_count for c in HEADER):
        return None
    try:
        table = table.cast(element_schema())  # dictionary-encoded terms decoded
    except (pa.ArrowException, ValueError):
        return None
    if not all(pc.all(in_normal_form(pc.unique(table[c]), c)).as_py() is not False for c in "spo"):
        return None
    return table


def write_tables(tables: Iterable["pa.Table"], target: str, row_group: int = CHUNK) -> int:
    """Tables of checked elements as one Parquet file of (ts long, s, p, o); returns the rows."""
    import pyarrow.parquet as pq

    rows = 0
    with pq.ParquetWriter(target, element_schema()) as out:
        for table in tables:
            out.write_table(table.cast(element_schema()), row_group_size=row_group)
            rows += table.num_rows
    return rows


class TableQueue:
    """Tables taken `n` rows at a time, whatever their own sizes (a publisher's intervals)."""

    def __init__(self, tables: Iterator["pa.Table"]) -> None:
        self.tables, self.held, self.count = tables, [], 0

    def take(self, n: int) -> "pa.Table":
        """The next `n` rows (fewer at the end of the input)."""
        import pyarrow as pa

        while self.count < n and (table := next(self.tables, None)) is not None:
            self.held.append(table)
            self.count += table.num_rows
        joined = pa.concat_tables(self.held) if self.held else element_table([])
        head, rest = joined.slice(0, n), joined.slice(n)
        self.held, self.count = ([rest] if rest.num_rows else []), rest.num_rows
        return head
