"""Fact tables as files (spec §12, docs/formats.md): CSV and TSV cells as SPARQL 1.1 results write
them (`tefq.io.result_writers`), `start`/`end` as integer ms (`end` empty while open); JSON Lines
one object per row (identity terms as SPARQL JSON terms); Parquet with the identity as N-Triples
strings and `start`/`end` as UTC timestamps; `text`, the table a terminal shows, with ISO-8601
times. Files appear whole or not at all. The format follows --out's extension
(tefq.io.output_format), as for every other command."""
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
from tefq.facts.table import arrow_facts
from tefq.io.atomic import atomic_open, atomic_path
from tefq.io.output_format import chosen_format
from tefq.io.paths import path_in
from tefq.io.result_writers import csv_cell, is_directory_target, json_cell, tsv_cell, write_text_table
from tefq.io.timestamps import format_iso_ms
from tefq.results import Cell

if TYPE_CHECKING:
    from tefq.facts.table import FactRows

FACT_FORMATS = ("csv", "tsv", "jsonl", "parquet", "text")
EXTENSIONS = {"text": "txt"}  # file extension per format where it is not the format's name


def format_of(fmt: str | None, out: str | None, follow: bool = False) -> str:
    """The format of `tefq facts`'s output (tefq.io.output_format: --out's extension, else
    --format, else a text table on a terminal and CSV elsewhere; --follow appends, so CSV)."""
    return chosen_format(fmt, out, FACT_FORMATS, "tefq facts", terminal="csv" if follow else "text")


def _ms(ms: int | None) -> Cell:
    return None if ms is None else terms.literal(str(ms), terms.XSD_INTEGER)


def _iso(ms: int | None) -> Cell:
    return None if ms is None else terms.literal(format_iso_ms(ms), terms.XSD_DATETIME)


def header(table: FactRows) -> list[str]:
    return ["fact", *table.columns, "start", "end"]


def term_rows(table: FactRows, time=_ms) -> Iterator[list[Cell]]:
    """Each row as terms: the fact's label as a string literal, identity terms, times as `time`
    makes them (integer ms, or `_iso`'s xsd:dateTime)."""
    for r in table.rows:
        yield [terms.literal(r.fact), *(r.cell(c) for c in table.columns), time(r.start), time(r.end)]


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
    elif fmt == "text":
        write_text_table(out, header(table), term_rows(table, _iso))
    else:
        for r in table.rows:
            obj = {"fact": r.fact, **{v: json_cell(t) for v, t in r.identity}, "start": r.start, "end": r.end}
            out.write(json.dumps(obj, ensure_ascii=False) + "\n")


def fact_text(table: FactRows, fmt: str, with_header: bool = True) -> str:
    """A text format's bytes of `table` (csv, tsv, jsonl), as one string."""
    buf = io.StringIO(newline="")
    _write_text(buf, table, fmt, with_header)
    return buf.getvalue()


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
        path = path_in(out, name, EXTENSIONS.get(fmt, fmt))
        _write_one(path, part, fmt)
        written.append(path)
    return written


__all__ = ["FACT_FORMATS", "format_of", "header", "term_rows", "fact_text", "write_facts"]
