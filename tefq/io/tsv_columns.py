"""A plain TSV stream file read column-wise (Arrow's CSV reader, then one regex pass per column):
the stager's fast path (issue 24: staging a followed TSV file row by row took 0.67 s per 50,000
rows on the driver, in series with the micro-batches).

Only a file every row of which the row reader (tefq.io.readers) would take unchanged is read so:
the exact header `ts<TAB>s<TAB>p<TAB>o`, no BOM, no CR, no NUL, UTF-8, four cells per row, every ts
plain digits (at most 18), every term already in normal form (`readers.fast_term_patterns`, the
Parquet reader's test, `readers.in_normal_form`). Anything else gives None and the row reader reads the file, so a bad row
is found, located and recorded exactly as before.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from tefq.io.readers import stream_format, terms_in_normal_form
from tefq.io.validate import HEADER

if TYPE_CHECKING:
    import pyarrow as pa

PLAIN_HEADER = "\t".join(HEADER).encode("ascii")
PLAIN_TS = r"^[0-9]{1,18}$"  # what the row reader's fast path turns into an int as it is
MAX_BYTES = 1 << 30  # a larger file is read row by row (in chunks, bounded memory)


def plain_tsv_table(path: str) -> "pa.Table | None":
    """The elements of the TSV file `path` as a table (ts int64, s, p, o strings), or None if any
    row needs the row reader (see the module doc)."""
    fmt, gz = stream_format(path)
    if fmt != "tsv" or gz or os.path.getsize(path) > MAX_BYTES:
        return None
    with open(path, "rb") as fh:
        data = fh.read()
    first = data.split(b"\n", 1)[0]
    if first != PLAIN_HEADER or b"\r" in data or b"\x00" in data:
        return None
    table = _cells(data)
    if table is None or not _plain(table):
        return None
    return _typed(table)


def _cells(data: bytes) -> "pa.Table | None":
    """Four string columns, or None when Arrow refuses a row (a column count, invalid UTF-8)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    read = pcsv.ReadOptions(use_threads=False, block_size=max(1 << 20, len(data) + 1))
    parse = pcsv.ParseOptions(delimiter="\t", quote_char=False, escape_char=False, double_quote=False,
                              newlines_in_values=False, ignore_empty_lines=True)
    convert = pcsv.ConvertOptions(column_types={c: pa.string() for c in HEADER}, strings_can_be_null=False,
                                  null_values=[], check_utf8=True)
    try:
        return pcsv.read_csv(pa.py_buffer(data), read, parse, convert)
    except pa.ArrowException:  # ArrowInvalid included
        return None


def _plain(table: "pa.Table") -> bool:
    """Every ts plain digits and every distinct term already in normal form."""
    import pyarrow.compute as pc

    if table.column_names != list(HEADER):
        return False
    if pc.all(pc.match_substring_regex(table["ts"], PLAIN_TS)).as_py() is False:
        return False
    return terms_in_normal_form(table)


def _typed(table: "pa.Table") -> "pa.Table":
    import pyarrow as pa

    return table.set_column(0, "ts", table["ts"].cast(pa.int64()))
