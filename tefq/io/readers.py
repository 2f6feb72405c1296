"""Stream and background readers: files of every supported format -> `(ts, s, p, o)` elements.

`read_stream` checks the path and lists the files at call time (so a missing path fails at once),
then returns an iterator: text formats and Parquet are read lazily in constant memory; TriG is
parsed whole with rdflib. Every malformed input raises `TefqError` with the file, the line (the row
for Parquet) and, where known, the column: nothing is skipped silently. See docs/formats.md.
"""
from __future__ import annotations

import csv
import gzip
import itertools
import os
import zlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from tefq import terms
from tefq.errors import TefqError
from tefq.io.elements import TIME_PREDICATES, Element  # noqa: F401 (TIME_PREDICATES: public here too)
from tefq.io.elements import statement as _statement, timestamp_graphs as _timestamp_graphs
from tefq.io.ntriples import TermError, check_position, normalise_term
from tefq.io.timestamps import literal_ms, parse_ts

if TYPE_CHECKING:
    import rdflib

STREAM_FORMATS = ("tsv", "csv", "parquet", "nq", "trig", "stream")
TEXT_FORMATS = ("tsv", "csv", "nq", "trig", "stream")
_HEADER = ("ts", "s", "p", "o")


# ---------------------------------------------------------------------------------------------
# Paths and formats

def stream_format(path: str) -> tuple[str, bool]:
    """`x.tsv.gz` -> ("tsv", True). Raises TefqError for an extension tefq does not read."""
    name = os.path.basename(path).lower()
    gz = name.endswith(".gz")
    if gz:
        name = name[:-3]
    ext = name.rsplit(".", 1)[-1] if "." in name else ""
    if ext not in STREAM_FORMATS or (gz and ext not in TEXT_FORMATS):
        known = ", ".join("." + f for f in STREAM_FORMATS)
        raise TefqError(f"unknown stream file type {os.path.basename(path)!r}: expected {known} "
                        "(text formats may be .gz)", path)
    return ext, gz


def _ignored(name: str) -> bool:
    """Hidden files and Spark/Hadoop bookkeeping (`_SUCCESS`, `_spark_metadata/`, `.x.crc`)."""
    return name.startswith(".") or name.startswith("_") or name.endswith(".crc")


def stream_files(path: str) -> list[str]:
    """The files a stream path stands for: the file itself, or a directory's files in the order of
    their relative paths (recursively)."""
    if not os.path.exists(path):
        raise TefqError("no such stream file or directory", path)
    if not os.path.isdir(path):
        stream_format(path)
        return [path]
    found: list[tuple[str, str]] = []
    for root, dirs, files in os.walk(path, followlinks=True):  # a linked folder is part of the stream
        dirs[:] = [d for d in dirs if not _ignored(d)]
        for name in files:
            if not _ignored(name):
                full = os.path.join(root, name)
                found.append((os.path.relpath(full, path).replace(os.sep, "/"), full))
    if not found:
        raise TefqError("the stream directory holds no stream files", path)
    found.sort()
    for _, full in found:
        stream_format(full)
    return [full for _, full in found]


def read_stream(path: str) -> Iterator[Element]:
    """All elements of a stream file or directory, in file order (see the module doc)."""
    # chain keeps the per-element path in C: Parquet batches are handed over as whole zips.
    return itertools.chain.from_iterable(map(read_stream_file, stream_files(path)))


def read_stream_file(path: str) -> Iterator[Element]:
    fmt, gz = stream_format(path)
    if fmt == "parquet":
        return itertools.chain.from_iterable(_parquet_batches(path))
    if fmt == "trig":
        return _read_trig(path, gz)
    if fmt in ("tsv", "csv"):
        return _read_table(path, gz, fmt)
    return _read_quads(path, gz, fmt)


# ---------------------------------------------------------------------------------------------
# Text helpers

def _lines(path: str, gz: bool, keep_ends: bool = False) -> Iterator[tuple[int, str]]:
    """(line number, decoded line) pairs; read and decoding errors become located TefqErrors."""
    try:
        f = gzip.open(path, "rb") if gz else open(path, "rb")
    except OSError as e:
        raise TefqError(f"cannot read the stream file: {e.strerror or e}", path) from None
    lineno = 0
    with f:
        it = iter(f)
        while True:
            try:
                raw = next(it)
            except StopIteration:
                return
            except (OSError, EOFError, zlib.error) as e:
                raise TefqError(f"cannot read the stream file: {e}", path, lineno + 1) from None
            lineno += 1
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise TefqError(f"invalid UTF-8 (byte {e.start + 1} of the line)", path, lineno) from None
            if lineno == 1 and line.startswith("\ufeff"):
                line = line[1:]
            yield lineno, (line if keep_ends else line.rstrip("\r\n"))


def _term(text: str, role: str, path: str, lineno: int, col: int, where: str = "") -> str:
    """Normalise one cell; `col` is the 1-based column of the cell (0 if unknown)."""
    try:
        term = normalise_term(text)
        check_position(term, role)
        return term
    except TermError as e:
        column = col + e.pos if col else 0
        raise TefqError(f"{where}{e}", path, lineno, column) from None


# ---------------------------------------------------------------------------------------------
# TSV / CSV

def _header_index(cells: list[str], path: str, lineno: int, line: str, sep: str) -> tuple[int, ...]:
    names = [c.strip().lower() for c in cells]
    if sorted(names) != sorted(_HEADER):
        want = sep.join(_HEADER).replace("\t", "<TAB>")
        raise TefqError(f"expected the header {want!r} (in any order), found {line.strip()[:60]!r}",
                        path, lineno, 1, source_line=line)
    return tuple(names.index(n) for n in _HEADER)


def _read_table(path: str, gz: bool, fmt: str) -> Iterator[Element]:
    if fmt == "csv":
        yield from _read_csv(path, gz)
        return
    idx: tuple[int, ...] | None = None
    memo_s, memo_p, memo_o, memo = _memo(path)
    for lineno, line in _lines(path, gz):
        if not line.strip():
            continue  # blank lines carry nothing (typically a trailing newline)
        cells = line.split("\t")
        if idx is None:
            idx = _header_index(cells, path, lineno, line, "\t")
            continue
        if len(cells) > 4 and idx[3] == 3:
            # A raw TAB inside the object literal is legal N-Triples: glue the tail back.
            glued = cells[:3] + ["\t".join(cells[3:])]
            try:
                normalise_term(glued[3])
                cells = glued
            except TermError:
                pass
        if len(cells) != 4:
            raise TefqError(f"expected 4 TAB-separated columns (ts, s, p, o), found {len(cells)}",
                            path, lineno, source_line=line)
        its, is_, ip, io = idx
        cell = cells[its]
        try:
            ts = int(cell) if cell.isascii() and cell.isdigit() else parse_ts(cell)
            k = is_
            s = memo_s.get(cells[is_]) or memo(memo_s, cells[is_], "s", lineno)
            k = ip
            p = memo_p.get(cells[ip]) or memo(memo_p, cells[ip], "p", lineno)
            k = io
            o = memo_o.get(cells[io]) or memo(memo_o, cells[io], "o", lineno)
        except (ValueError, TefqError) as e:
            start = sum(len(c) + 1 for c in cells[:k if isinstance(e, TefqError) else its])
            if isinstance(e, TefqError):
                e.column += start
                e.source_line = line
                raise
            raise TefqError(str(e), path, lineno, start + 1, source_line=line) from None
        yield ts, s, p, o


def _memo(path: str, column: bool = True) -> tuple[dict, dict, dict, Callable[..., str]]:
    """Per-file memo of normalised cells by role (streams repeat their terms; checking each
    distinct cell once makes the text readers several times faster)."""

    def memo(table: dict, text: str, role: str, lineno: int, where: str = "") -> str:
        body = text.strip(" ")  # `1, <s>, ...`: spaces around a term carry nothing
        lead = len(text) - len(text.lstrip(" "))
        term = _term(body, role, path, lineno, 1 + lead if column else 0, where)
        if len(table) >= 1 << 16:
            table.clear()
        table[text] = term
        return term

    return {}, {}, {}, memo


def _read_csv(path: str, gz: bool) -> Iterator[Element]:
    state = {"line": 0}

    def tracked() -> Iterator[str]:
        for lineno, line in _lines(path, gz, keep_ends=True):
            state["line"] = lineno
            yield line

    reader = csv.reader(tracked(), strict=True)
    memo_s, memo_p, memo_o, memo = _memo(path, column=False)
    idx: tuple[int, ...] | None = None
    start = 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise TefqError(f"malformed CSV: {e}", path, state["line"] or 1) from None
        lineno, start = start, state["line"] + 1  # a quoted field may span lines: report the first
        if not cells or (len(cells) == 1 and not cells[0].strip()):
            continue
        if idx is None:
            idx = _header_index(cells, path, lineno, ",".join(cells), ",")
            continue
        if len(cells) != 4:
            raise TefqError(f"expected 4 comma-separated columns (ts, s, p, o), found {len(cells)}",
                            path, lineno)
        its, is_, ip, io = idx
        cell = cells[its]
        try:
            ts = int(cell) if cell.isascii() and cell.isdigit() else parse_ts(cell)
        except ValueError as e:
            raise TefqError(f"column ts: {e}", path, lineno) from None
        s, p, o = cells[is_], cells[ip], cells[io]
        yield (ts, memo_s.get(s) or memo(memo_s, s, "s", lineno, "column s: "),
               memo_p.get(p) or memo(memo_p, p, "p", lineno, "column p: "),
               memo_o.get(o) or memo(memo_o, o, "o", lineno, "column o: "))


# ---------------------------------------------------------------------------------------------
# N-Quads and YABench .stream (line-based)


class _FastStatements:
    """Splits the common `s p o [x] .` line without the tokenizer: subjects and predicates hold
    no spaces, so the line splits on spaces; each distinct cell is checked once (memo). Anything
    unusual (TABs, comments, spaces inside literals that do not split cleanly) returns None and
    goes through `_statement`, which also produces the located error."""

    def __init__(self, fourth: str) -> None:
        self.roles = {"s": {}, "p": {}, "o": {}, "x": {}}
        self.x_role = "g" if fourth == "graph" else "o"

    def term(self, text: str, role: str) -> str | None:
        table = self.roles[role]
        term = table.get(text)
        if term is None:
            try:
                term = normalise_term(text)
                check_position(term, self.x_role if role == "x" else role)
            except TermError:
                return None
            if len(table) >= 1 << 16:
                table.clear()
            table[text] = term
        return term

    def __call__(self, line: str) -> tuple[str, str, str, str | None] | None:
        if "\t" in line or not line.endswith(" ."):
            return None
        parts = line[:-2].split(" ", 2)
        if len(parts) != 3:
            return None
        s, p = self.term(parts[0], "s"), self.term(parts[1], "p")
        if s is None or p is None:
            return None
        rest = parts[2]
        o_text, sep, x_text = rest.rpartition(" ")
        if sep:
            o, x = self.term(o_text, "o"), self.term(x_text, "x")
            if o is not None and x is not None:
                return s, p, o, x
        o = self.term(rest, "o")
        return None if o is None else (s, p, o, None)


def _read_quads(path: str, gz: bool, fmt: str) -> Iterator[Element]:
    fourth = "time" if fmt == "stream" else "graph"
    fast = _FastStatements(fourth)

    def statements() -> Iterator[tuple[int, str, str, str, str | None, str]]:
        for lineno, line in _lines(path, gz):
            st = fast(line.rstrip()) or _statement(line, path, lineno, fourth)
            if st is not None:
                yield (lineno, *st, line)

    if fourth == "graph":
        yield from _timestamp_graphs(statements(), path, None)
        return
    for lineno, s, p, o, t, line in statements():
        if t is None:
            raise TefqError("expected `<s> <p> <o> \"timestamp\" .` (YABench stream)", path, lineno,
                            source_line=line)
        try:
            ts = literal_ms(t)
        except ValueError as e:
            raise TefqError(str(e), path, lineno, line.rfind(t) + 1, source_line=line) from None
        yield ts, s, p, o


# ---------------------------------------------------------------------------------------------
# rdflib-based readers live in tefq.io.rdf (imported on use: rdflib is slow to import)

def _read_trig(path: str, gz: bool) -> Iterator[Element]:
    from tefq.io.rdf import read_trig

    return read_trig(path, gz)


def read_background(path: str) -> "rdflib.Graph":
    """A static background graph (Turtle, N-Triples, TriG, N-Quads; `.gz` too): see tefq.io.rdf."""
    from tefq.io.rdf import read_background as read

    return read(path)


def background_triples(graph: "rdflib.Graph") -> Iterator[tuple[str, str, str]]:
    """The background's triples in N-Triples form, sorted: see tefq.io.rdf."""
    from tefq.io.rdf import background_triples as triples

    return triples(graph)


# ---------------------------------------------------------------------------------------------
# Parquet (vectorised: terms already in normal form are checked by one regex pass per column)

def _parquet_batches(path: str) -> Iterator[Iterator[Element]]:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from tefq.io.ntriples import BNODE_FAST, IRI_FAST, LIT_FAST

    try:
        pf = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as e:
        raise TefqError(f"cannot read the Parquet file: {e}", path) from None
    schema = pf.schema_arrow
    missing = [c for c in _HEADER if c not in schema.names]
    if missing:
        raise TefqError(f"missing Parquet column(s) {', '.join(missing)}: expected ts (int64 ms), s, p, o "
                        f"(strings); found {', '.join(schema.names)}", path)
    ts_type = schema.field("ts").type
    if not (pa.types.is_integer(ts_type) or pa.types.is_timestamp(ts_type)):
        raise TefqError(f"column ts must be int64 milliseconds (or a timestamp), found {ts_type}", path)
    for c in "spo":
        t = schema.field(c).type
        if pa.types.is_dictionary(t):
            t = t.value_type
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            raise TefqError(f"column {c} must hold N-Triples terms as strings, found {t}", path)
    patterns = {"s": f"^(?:{IRI_FAST}|{BNODE_FAST})$", "p": f"^{IRI_FAST}$",
                "o": f"^(?:{IRI_FAST}|{BNODE_FAST}|{LIT_FAST})$"}
    row0 = 0
    batches = pf.iter_batches(batch_size=1 << 16, columns=list(_HEADER))
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except (OSError, pa.ArrowException) as e:
            raise TefqError(f"cannot read the Parquet file: {e}", path, row0 + 1) from None
        cols = {}
        for c in _HEADER:
            col = batch.column(c)
            if col.null_count:
                first = pc.index(pc.is_null(col), True).as_py()
                raise TefqError(f"row {row0 + first + 1}: column {c} is null", path, row0 + first + 1)
            if pa.types.is_dictionary(col.type):
                col = col.dictionary_decode()
            if c == "ts" and pa.types.is_timestamp(col.type):
                col = pc.floor_temporal(col, unit="millisecond").cast(pa.timestamp("ms", col.type.tz)) \
                    .view(pa.int64())
            cols[c] = col
        lists = [cols[c].to_pylist() for c in _HEADER]
        for j, c in enumerate("spo", 1):
            # Check distinct values only (streams repeat their terms); fix up rows whose term is
            # not already in normal form (or raise, with the row).
            values = pc.unique(cols[c])
            ok = pc.match_substring_regex(values, patterns[c])
            if c == "o":
                ok = pc.and_(ok, pc.invert(pc.ends_with(values, "^^<" + terms.XSD_STRING + ">")))
            if pc.all(ok).as_py():
                continue
            bad = pc.filter(values, pc.invert(ok))
            for i in pc.indices_nonzero(pc.is_in(cols[c], value_set=bad)).to_pylist():
                row = row0 + i + 1
                lists[j][i] = _term(lists[j][i], c, path, row, 0, f"row {row}, column {c}: ")
        row0 += batch.num_rows
        yield zip(*lists)
