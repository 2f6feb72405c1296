"""Writing streams in every format `read_stream` reads (tests, format conversion, `tefq gen`).

Elements are written in the order given; `read_stream` gives them back in that order (TriG
excepted for blank-node labels, which rdflib renames). A `.gz` path is gzip-compressed.
"""
from __future__ import annotations

import csv
import gzip
import io
import os
import re
from collections.abc import Iterable
from typing import IO

from tefq import terms
from tefq.errors import TefqError
from tefq.io.ntriples import TermError, check_position, normalise_term
from tefq.io.readers import read_stream
from tefq.io.timestamps import format_iso_ms
from tefq.vocabulary import Element

FORMATS = ("tsv", "csv", "parquet", "nq", "trig")
GRAPH_PREFIX = "urn:tefq:t:"  # graph per timestamp: <urn:tefq:t:1000>
_GENERATED_AT = terms.iri(terms.PROV + "generatedAtTime")
_PARQUET_CHUNK = 1 << 18


def _checked(elements: Iterable[Element]) -> Iterable[Element]:
    """Terms must already be in normal N-Triples form (what every reader yields)."""
    for n, (ts, s, p, o) in enumerate(elements, 1):
        try:
            for term, role in ((s, "s"), (p, "p"), (o, "o")):
                if normalise_term(term) != term:
                    raise TermError(f"term {term} is not in normal N-Triples form", 0)
                check_position(term, role)
        except TermError as e:
            raise TefqError(f"element {n} cannot be written: {e}") from None
        if not isinstance(ts, int) or isinstance(ts, bool):
            raise TefqError(f"element {n} has a non-integer timestamp {ts!r}")
        yield ts, s, p, o


def format_of(path: str) -> str:
    name = os.path.basename(path).lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return name.rsplit(".", 1)[-1]


def write_stream(elements: Iterable[Element], path: str, fmt: str | None = None) -> int:
    """Write `elements` to `path` as `fmt` (default: from the extension); returns the count."""
    fmt = (fmt or format_of(path)).lower()
    if fmt not in FORMATS:
        raise TefqError(f"cannot write stream format {fmt!r}: expected one of {', '.join(FORMATS)}", path)
    gz = path.lower().endswith(".gz")
    if fmt == "parquet":
        if gz:
            raise TefqError("Parquet is compressed internally: do not add .gz", path)
        return _write_parquet(_checked(elements), path)
    try:
        raw = gzip.open(path, "wb") if gz else open(path, "wb")
    except OSError as e:
        raise TefqError(f"cannot write the stream file: {e.strerror or e}", path) from None
    with raw, io.TextIOWrapper(raw, encoding="utf-8", newline="") as out:
        return {"tsv": _write_tsv, "csv": _write_csv, "nq": _write_nq, "trig": _write_trig}[fmt](
            _checked(elements), out)


def _write_tsv(elements: Iterable[Element], out: IO[str]) -> int:
    out.write("ts\ts\tp\to\n")
    n = 0
    for ts, s, p, o in elements:
        out.write(f"{ts}\t{s}\t{p}\t{o}\n")  # normal-form terms never hold a raw TAB or newline
        n += 1
    return n


def _write_csv(elements: Iterable[Element], out: IO[str]) -> int:
    w = csv.writer(out, lineterminator="\n")
    w.writerow(("ts", "s", "p", "o"))
    n = 0
    for el in elements:
        w.writerow(el)
        n += 1
    return n


def graph_name(ts: int) -> str:
    return terms.iri(f"{GRAPH_PREFIX}{ts}")


def _time_literal(ts: int) -> str:
    return terms.literal(format_iso_ms(ts), terms.XSD_DATETIME)


def _write_nq(elements: Iterable[Element], out: IO[str]) -> int:
    declared: set[int] = set()
    n = 0
    for ts, s, p, o in elements:
        g = graph_name(ts)
        if ts not in declared:  # the time comes first, so readers never have to wait for it
            declared.add(ts)
            out.write(f"{g} {_GENERATED_AT} {_time_literal(ts)} .\n")
        out.write(f"{s} {p} {o} {g} .\n")
        n += 1
    return n


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _escape_controls(term: str) -> str:
    """rdflib's Turtle/TriG parser rejects raw control characters in strings: use \\u escapes."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04X}", term) if term.startswith('"') else term


def _write_trig(elements: Iterable[Element], out: IO[str]) -> int:
    declared: set[int] = set()
    current: int | None = None
    n = 0
    for ts, s, p, o in elements:
        if ts != current:
            if current is not None:
                out.write("}\n")
            if ts not in declared:
                declared.add(ts)
                out.write(f"{graph_name(ts)} {_GENERATED_AT} {_time_literal(ts)} .\n")
            out.write(f"{graph_name(ts)} {{\n")
            current = ts
        out.write(f"  {s} {p} {_escape_controls(o)} .\n")
        n += 1
    if current is not None:
        out.write("}\n")
    return n


def _write_parquet(elements: Iterable[Element], path: str) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("ts", pa.int64()), ("s", pa.string()), ("p", pa.string()), ("o", pa.string())])
    n = 0
    try:
        with pq.ParquetWriter(path, schema) as w:
            chunk: list[Element] = []
            for el in elements:
                chunk.append(el)
                if len(chunk) == _PARQUET_CHUNK:
                    w.write_table(_table(chunk, schema))
                    n += len(chunk)
                    chunk = []
            if chunk or n == 0:
                w.write_table(_table(chunk, schema))
                n += len(chunk)
    except OSError as e:
        raise TefqError(f"cannot write the stream file: {e}", path) from None
    return n


def _table(chunk: list[Element], schema):
    import pyarrow as pa

    cols = list(zip(*chunk)) if chunk else [[], [], [], []]
    return pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, schema)], schema=schema)


def convert_stream(src: str, dst: str, fmt: str | None = None) -> int:
    """Read any stream path (file or directory) and write it as one file in normal form, e.g. an
    N-Quads or TriG stream as Parquet for an engine that reads only tabular formats."""
    return write_stream(read_stream(src), dst, fmt)
