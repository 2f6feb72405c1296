"""Fact tables as files (spec §12, docs/formats.md): CSV and TSV cells as SPARQL 1.1 results write
them (`tefq.io.result_writers`), `start`/`end` as integer ms (`end` empty while open); JSON Lines
one object per row (identity terms as SPARQL JSON terms); Parquet with the identity as N-Triples
strings and `start`/`end` as UTC timestamps. Files appear whole or not at all."""
from __future__ import annotations

import csv
import io
import json
import os
import sys
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING

from tefq import terms
from tefq.errors import TefqError
from tefq.io.atomic import atomic_open, atomic_path
from tefq.io.paths import path_in
from tefq.io.result_writers import csv_cell, is_directory_target, json_cell, tsv_cell
from tefq.results import Cell

if TYPE_CHECKING:
    from tefq.facts.table import FactRows

FACT_FORMATS = ("csv", "tsv", "jsonl", "parquet")


def format_of(fmt: str | None, out: str | None) -> str:
    """The format asked for, else the one the output's extension names, else CSV."""
    if fmt is None and out and not is_directory_target(out):
        ext = os.path.splitext(out)[1].lstrip(".").lower()
        fmt = ext if ext in FACT_FORMATS else None
    fmt = (fmt or "csv").lower()
    if fmt not in FACT_FORMATS:
        raise TefqError(f"unknown fact table format {fmt!r}: expected one of {', '.join(FACT_FORMATS)}", "--format")
    return fmt


def _ms(ms: int | None) -> Cell:
    return None if ms is None else terms.literal(str(ms), terms.XSD_INTEGER)


def header(table: FactRows) -> list[str]:
    return ["fact", *table.columns, "start", "end"]


def term_rows(table: FactRows) -> Iterator[list[Cell]]:
    """Each row as terms: the fact's label as a string literal, identity terms, ms as integers."""
    for r in table.rows:
        yield [terms.literal(r.fact), *(r.cell(c) for c in table.columns), _ms(r.start), _ms(r.end)]


def _write_text(out: IO[str], table: FactRows, fmt: str, with_header: bool = True) -> None:
    """The table as CSV, TSV (both with their header line unless `with_header` is false: rows
    appended to a file that has it) or JSON Lines (no header)."""
    if fmt == "csv":
        w = csv.writer(out, lineterminator="\r\n")
        if with_header:
            w.writerow(header(table))
        w.writerows([csv_cell(c) for c in row] for row in term_rows(table))
    elif fmt == "tsv":
        if with_header:
            out.write("\t".join("?" + n for n in header(table)) + "\n")
        out.writelines("\t".join(tsv_cell(c) for c in row) + "\n" for row in term_rows(table))
    else:
        for r in table.rows:
            obj = {"fact": r.fact, **{v: json_cell(t) for v, t in r.identity}, "start": r.start, "end": r.end}
            out.write(json.dumps(obj, ensure_ascii=False) + "\n")


def fact_text(table: FactRows, fmt: str, with_header: bool = True) -> str:
    """A text format's bytes of `table` (csv, tsv, jsonl), as one string."""
    buf = io.StringIO(newline="")
    _write_text(buf, table, fmt, with_header)
    return buf.getvalue()


def arrow_facts(table: FactRows):  # -> pa.Table
    import pyarrow as pa

    stamp = pa.timestamp("ms", tz="UTC")
    arrays = [pa.array([r.fact for r in table.rows], type=pa.string())]
    arrays += [pa.array([r.cell(c) for r in table.rows], type=pa.string()) for c in table.columns]
    arrays += [pa.array([r.start for r in table.rows], type=pa.int64()).cast(stamp),
               pa.array([r.end for r in table.rows], type=pa.int64()).cast(stamp)]
    return pa.Table.from_arrays(arrays, names=header(table))


def _write_one(path: str | None, table: FactRows, fmt: str) -> None:
    if fmt == "parquet":
        import pyarrow.parquet as pq

        if path is None:
            raise TefqError("a Parquet fact table needs --out FILE", "--format")
        with atomic_path(path) as tmp:
            pq.write_table(arrow_facts(table), tmp)
    elif path is None:
        _write_text(sys.stdout, table, fmt)
        sys.stdout.flush()
    else:
        with atomic_open(path) as f:
            _write_text(f, table, fmt)


def write_facts(table: FactRows, fmt: str = "csv", out: str | None = None) -> list[str]:
    """Write a fact table to stdout, a file, or (`out` a directory) one file per fact named after
    it; returns the files written."""
    if not is_directory_target(out):
        _write_one(out, table, fmt)
        return [out] if out else []
    assert out is not None
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise TefqError(f"cannot create the output directory: {e.strerror or e}", out) from None
    written = []
    for name, part in table.by_fact().items():
        path = path_in(out, name, fmt)
        _write_one(path, part, fmt)
        written.append(path)
    return written


__all__ = ["FACT_FORMATS", "format_of", "header", "term_rows", "fact_text", "arrow_facts", "write_facts"]
