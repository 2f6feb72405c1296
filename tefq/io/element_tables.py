"""Checked elements as Arrow tables (ts int64, s, p, o strings), file by file: what the stager
writes as Parquet and what `tefq publish` sends, without a Python tuple per element where the file
allows it (issue 24: both ran in series with a live run's micro-batches, or beside them on the
same two cores).

A file every row of which the row readers (tefq.io.readers) would take unchanged is read
column-wise: a plain TSV file (tefq.io.tsv_columns), a Parquet file with no null, integer ts and
every term already in normal form (`readers.terms_in_normal_form`, the Parquet reader's own
test), batch by batch. Every other file goes through the row readers, so a bad row is found, located and recorded with
`--bad-rows` exactly as before, and the tables are built from their elements in chunks.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from tefq.errors import TefqError
from tefq.io.bad_rows import STRICT, BadRowLog
from tefq.io.readers import batch_elements, read_stream_file, stream_files, stream_format, terms_in_normal_form
from tefq.io.tsv_columns import plain_tsv_table
from tefq.io.validate import HEADER
from tefq.vocabulary import Element

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

COLUMN_WISE = True  # plain files read column-wise; False: every file row by row (a benchmark's baseline)
CHUNK = 1 << 18  # elements per table built from the row readers' tuples


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
    """One file's elements as tables: column-wise where the file allows (module doc), else chunks
    of the row readers' elements (bad rows raised or recorded by `bad_rows`)."""
    tables = column_wise(path, bad_rows) if COLUMN_WISE else None
    return tables if tables is not None else chunked(read_stream_file(path, bad_rows))


def chunked(elements: Iterable[Element]) -> Iterator["pa.Table"]:
    """Elements as tables of at most CHUNK rows."""
    elements = iter(elements)
    while chunk := list(itertools.islice(elements, CHUNK)):
        yield element_table(chunk)


def column_wise(path: str, bad_rows: BadRowLog) -> "Iterator[pa.Table] | None":
    """A plain TSV file or a Parquet file as tables read column-wise; None: the row readers'."""
    fmt = stream_format(path)[0]
    if fmt == "tsv":
        table = plain_tsv_table(path)
        return None if table is None else iter([table])
    return parquet_tables(path, bad_rows) if fmt == "parquet" else None


def parquet_tables(path: str, bad_rows: BadRowLog) -> "Iterator[pa.Table] | None":
    """A Parquet file's elements batch by batch: a batch the Parquet reader would take unchanged (no
    null, every term in normal form) as it is, any other through the reader's own batch check
    (`readers.batch_elements`, the same row numbers); None if its schema is not integer ts and string
    terms (the row reader then says what is wrong, located)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        schema = pf.schema_arrow
        if not all(c in schema.names for c in HEADER):
            return None
        types = [schema.field(c).type for c in HEADER]
    except (OSError, pa.ArrowException):
        return None
    ts, terms = types[0], [t.value_type if pa.types.is_dictionary(t) else t for t in types[1:]]
    if not pa.types.is_integer(ts) or ts == pa.uint64() or not all(pa.types.is_string(t) for t in terms):
        return None
    return _parquet_batches(pf, path, bad_rows)


def _parquet_batches(pf: "pq.ParquetFile", path: str, bad_rows: BadRowLog) -> Iterator["pa.Table"]:
    import pyarrow as pa

    row0 = 0
    try:
        for batch in pf.iter_batches(batch_size=CHUNK, columns=list(HEADER)):
            table = pa.Table.from_batches([batch]).cast(element_schema())  # dictionary terms decoded
            if not any(table[c].null_count for c in HEADER) and terms_in_normal_form(table):
                yield table
            else:
                yield element_table(list(batch_elements(batch, row0, path, bad_rows)))
            row0 += batch.num_rows
    except (OSError, pa.ArrowException) as e:
        raise TefqError(f"cannot read the Parquet file: {e}", path, row0 + 1) from None


def write_tables(tables: Iterable["pa.Table"], target: str, row_group: int = CHUNK) -> int:
    """Tables of checked elements as one Parquet file of (ts long, s, p, o); returns the rows."""
    import pyarrow.parquet as pq

    rows = 0
    with pq.ParquetWriter(target, element_schema()) as out:
        for table in tables:
            out.write_table(table.cast(element_schema()), row_group_size=row_group)
            rows += table.num_rows
    return rows


def write_tsv_table(table: "pa.Table", target: str) -> int:
    """Checked elements as a TSV stream file (what `stream_writers.write_stream` writes: normal-form
    terms hold no raw TAB or newline), line by line in Arrow; returns the rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lines = pc.binary_join_element_wise(table["ts"].cast(pa.string()), table["s"], table["p"], table["o"], "\t")
    with open(target, "w", encoding="utf-8", newline="") as out:
        out.write("\t".join(HEADER) + "\n")
        out.writelines(line + "\n" for line in lines.to_pylist())
    return table.num_rows


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
