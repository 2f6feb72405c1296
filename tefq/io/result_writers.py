"""Result tables (spec §5) in the SPARQL 1.1 Query Results formats and a few more, and the metrics file.

Decisions (docs/formats.md): every format is one table with `tick` first (after `query` when several
queries share one output). CSV lines end with CRLF as SPARQL 1.1 CSV requires; TSV lines end with
LF and its header names are `?`-prefixed as SPARQL 1.1 TSV requires; `json` is ONE SPARQL 1.1
Query Results JSON document and `xml` one SPARQL Query Results XML document; `jsonl` is one
results document per (query, tick) and line with a top-level `"tick"` (tefq's former `json`);
`text` is an aligned table for people; `parquet` / `arrow` hold `tick` as a UTC timestamp and the
cells as N-Triples strings, or with `--terms typed` typed columns (tefq.results.typed_column:
counts long, sums and averages double, IRIs without brackets, literals of one datatype by their
type, mixed terms N-Triples). Every file is written atomically (tefq.io.atomic).
"""
from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import os
import re
import sys
from collections.abc import Iterator
from functools import lru_cache
from typing import IO, TYPE_CHECKING

from tefq import progress, terms
from tefq.errors import TefqError
from tefq.io.atomic import atomic_open, atomic_path
from tefq.io.output_format import BINARY_FORMATS
from tefq.io.paths import path_in
from tefq.io.records import append_records
from tefq.io.timestamps import format_iso_ms
from tefq.results import (BOOLEAN, DOUBLE, LONG, NTRIPLES, STRING, TERM, TIMESTAMP, Cell, Metrics, QueryResult,
                          check_term_form, typed_column)

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

FORMATS = ("csv", "tsv", "json", "jsonl", "xml", "text", "parquet", "arrow")
APPENDABLE_FORMATS = ("csv", "tsv", "jsonl")  # one header (or none) and then rows: --follow appends these
TICK_FORMATS = ("ms", "iso")
EXTENSIONS = {"text": "txt"}  # file extension per format where it is not the format's name
SPARQL_RESULTS_NS = "http://www.w3.org/2005/sparql-results#"
# Turtle's abbreviated numbers: a TSV cell may be bare only if reading it back gives the same term.
_BARE = {
    terms.XSD_INTEGER: re.compile(r"[+-]?[0-9]+"),
    terms.XSD_DECIMAL: re.compile(r"[+-]?[0-9]*\.[0-9]+"),
    terms.XSD_DOUBLE: re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.?[0-9]+)[eE][+-]?[0-9]+"),
}

# Characters some line splitters break on besides LF/CR: written as \u escapes (TSV, JSON lines).
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _names(result: QueryResult) -> list[str]:
    return [c[1:] if c.startswith(("?", "$")) else c for c in result.columns]


# ---------------------------------------------------------------------------------------------
# Cells

@lru_cache(maxsize=1 << 16)  # the same terms recur in every tick's rows
def csv_cell(cell: Cell) -> str:
    """SPARQL CSV: IRIs without brackets, literals as their lexical form, `_:b` for blank nodes."""
    if cell is None:
        return ""
    if terms.is_iri(cell):
        return terms.iri_value(cell)
    if terms.is_literal(cell):
        lexical = plain_lexical(cell)
        return terms.split_literal(cell)[0] if lexical is None else lexical
    return cell


def plain_lexical(cell: str) -> str | None:
    """The lexical form of a literal without escapes, `"lex"` or `"lex"^^<dt>`, found without the
    literal regex (a column of millions of distinct sums); None for any other literal."""
    if "\\" in cell:
        return None
    end = cell.find('"', 1)
    rest = cell[end + 1:]
    if end > 0 and (not rest or (rest.startswith("^^<") and rest.endswith(">") and ">" not in rest[3:-1])):
        return cell[1:end]
    return None


def tsv_cell(cell: Cell) -> str:
    """SPARQL TSV: terms in N-Triples/Turtle syntax; numbers bare when that reads back the same."""
    if cell is None:
        return ""
    if terms.is_literal(cell) and cell.endswith(">"):
        lex, dt, _ = terms.split_literal(cell)
        bare = _BARE.get(dt or "")
        if bare is not None and bare.fullmatch(lex):
            return lex
    return cell.translate(_LINE_BREAKS) if terms.is_literal(cell) else cell


def json_cell(cell: str) -> dict:
    if terms.is_iri(cell):
        return {"type": "uri", "value": terms.iri_value(cell)}
    if terms.is_blank(cell):
        return {"type": "bnode", "value": cell[2:]}
    lex, dt, lang = terms.split_literal(cell)
    out = {"type": "literal", "value": lex}
    if lang:
        out["xml:lang"] = lang
    elif dt:
        out["datatype"] = dt
    return out


# ---------------------------------------------------------------------------------------------
# Tables: one header and rows of terms, whatever the format

Table = tuple[list[str], Iterator[list[Cell]]]


def tick_term(tick: int, tick_format: str = "ms") -> str:
    """The tick as a term: `"10000"^^xsd:integer` (ms) or `"1970-01-01T00:00:10.000Z"^^xsd:dateTime`."""
    if tick_format == "iso":
        return terms.literal(format_iso_ms(tick), terms.XSD_DATETIME)
    return terms.literal(str(tick), terms.XSD_INTEGER)


def table(results: list[QueryResult], tick_format: str = "ms") -> Table:
    """Header and rows of one output. Several queries share it with a leading `query` column (a
    string literal) and the union of their column names, in order of first appearance."""
    with_query = len(results) > 1
    names: list[str] = []
    for r in results:
        names += [n for n in _names(r) if n not in names]

    def rows() -> Iterator[list[Cell]]:
        for r in results:
            lead = [terms.literal(r.name)] if with_query else []
            own = _names(r)
            same = own == names  # one query (or the first): its cells are the table's, in order
            last: tuple[int, str] | None = None  # rows come tick by tick: each tick's term is made once
            for tick, cells in r.sorted_rows():
                if last is None or last[0] != tick:
                    last = (tick, tick_term(tick, tick_format))
                if same:
                    yield lead + [last[1], *cells]
                else:
                    by_name = dict(zip(own, cells))
                    yield lead + [last[1]] + [by_name.get(n) for n in names]

    return (["query"] if with_query else []) + ["tick"] + names, rows()


Column = tuple[list, "np.ndarray"]  # an output column: its distinct cells, each row's index among them


def column_table(results: list[QueryResult], tick_format: str | None = "ms") -> tuple[list[str], list[Column]]:
    """`table` as columns (`QueryResult.as_columns`): the same header, and per output column its
    distinct cells and each row's index. `tick_format` None: the tick column's cells are ms."""
    import numpy as np

    with_query = len(results) > 1
    names: list[str] = []
    for r in results:
        names += [n for n in _names(r) if n not in names]
    head = (["query"] if with_query else []) + ["tick"] + names
    lead = len(head) - len(names)
    parts: list[list[Column]] = [[] for _ in head]  # by position: a column may be named `tick` too
    for r in results:
        frame = r.as_columns()
        n, own = len(frame), _names(r)
        if with_query:
            parts[0].append(([terms.literal(r.name)], np.zeros(n, np.int64)))
        ticks, index = np.unique(frame.ticks, return_inverse=True)
        cells = ticks.tolist() if tick_format is None else [tick_term(t, tick_format) for t in ticks.tolist()]
        parts[lead - 1].append((cells, index.reshape(-1)))
        by_name = dict(zip(own, frame.columns))  # as `table`: a name given twice keeps its last column
        for j, name in enumerate(names):
            column = frame.columns[j] if own == names else by_name.get(name)
            parts[lead + j].append(column if column is not None else ([None], np.zeros(n, np.int64)))
    return head, [_stacked(p) for p in parts]


def _stacked(parts: list[Column]) -> Column:
    """One column of several results' columns, one under the other."""
    import numpy as np

    cells: list = []
    indexes = []
    for c, index in parts:
        indexes.append(index + len(cells))
        cells.extend(c)
    return cells, np.concatenate(indexes) if indexes else np.zeros(0, np.int64)


LINES_PER_CHUNK = 1 << 16  # rows laid out at once: a few MB of text (a million: +140 MB peak, no faster)


def _write_lines(out: IO[str], columns: list[Column], sep: str, end: str) -> None:
    """Rows as lines of text: `columns` hold each distinct cell already as its text; a line is
    its row's texts joined by `sep` and ended by `end`, laid out by Arrow a chunk at a time."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    text = pa.large_string()  # offsets of 64 bits: long cells times a chunk of rows may pass 2 GB
    texts = [pa.array(cells, text) for cells, _ in columns]
    texts[-1] = pc.binary_join_element_wise(texts[-1], pa.scalar(end, text), pa.scalar("", text))
    n = len(columns[-1][1])
    with progress.bar("writing rows", n) as shown:
        for lo in range(0, n, LINES_PER_CHUNK):
            cols = [t.take(pa.array(index[lo:lo + LINES_PER_CHUNK])) for t, (_, index) in zip(texts, columns)]
            lines = pc.binary_join_element_wise(*cols, pa.scalar(sep, text)) if len(cols) > 1 else cols[0]
            offsets = np.frombuffer(lines.buffers()[1], np.int64, len(lines) + 1, lines.offset * 8)
            write_checked(out, lines.buffers()[2][int(offsets[0]):int(offsets[-1])])
            shown.advance(min(n, lo + LINES_PER_CHUNK))


def write_checked(out: IO[str], text: "str | pa.Buffer") -> None:
    """`text` (a str, or UTF-8 bytes) onto `out`, a large write checked to its last byte: a
    TextIOWrapper drops the count its buffer returns, and a BufferedWriter returns a short one
    when a large write fills the disk (measured on a full tmpfs: standard output cut at the limit,
    exit 0); writing the rest raises the disk's error."""
    buffer = getattr(out, "buffer", None)
    if buffer is None or (out.encoding or "").lower().replace("-", "") != "utf8":
        out.write(text if isinstance(text, str) else memoryview(text).tobytes().decode("utf-8"))
        return
    out.flush()
    write_all(buffer, text.encode("utf-8") if isinstance(text, str) else text)


def write_all(buffer: IO[bytes], data) -> None:
    """Every byte of `data` onto a binary stream, or the stream's error (`write_checked`)."""
    view = memoryview(data)
    while view:
        written = buffer.write(view)
        if not written:
            raise OSError(errno.EIO, "the output took no bytes")
        view = view[written:]


def csv_field(text: str) -> str:
    """One CSV field as Python's csv module writes it (QUOTE_MINIMAL, `,`, CRLF lines): quoted
    when it holds a comma, a quote or a line break, its quotes doubled."""
    if any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _write_csv(out: IO[str], head: list[str], columns: list[Column]) -> None:
    csv.writer(out, lineterminator="\r\n").writerow(head)
    _write_lines(out, [([csv_field(csv_cell(c)) for c in cells], index) for cells, index in columns], ",", "\r\n")


def _write_tsv(out: IO[str], head: list[str], columns: list[Column]) -> None:
    out.write("\t".join("?" + n for n in head) + "\n")
    _write_lines(out, [([tsv_cell(c) for c in cells], index) for cells, index in columns], "\t", "\n")


def _write_sparql_json(out: IO[str], head: list[str], rows: Iterator[list[Cell]]) -> None:
    """One SPARQL 1.1 Query Results JSON document; bindings written as they come."""
    out.write(json.dumps({"head": {"vars": head}})[:-1] + ', "results": {"bindings": [')
    for i, row in enumerate(rows):
        binding = {n: json_cell(c) for n, c in zip(head, row) if c is not None}
        out.write(("," if i else "") + "\n" + json.dumps(binding, ensure_ascii=False))
    out.write("\n]}}\n")


_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml(text: str) -> str:
    """Escape for XML 1.0; characters XML 1.0 cannot hold at all are an error, not dropped."""
    if _XML_BAD.search(text):
        raise TefqError(f"a result cell holds a control character XML 1.0 cannot represent: {text[:40]!r} "
                        "(use --format json, csv or tsv)")
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def xml_cell(cell: str) -> str:
    if terms.is_iri(cell):
        return f"<uri>{_xml(terms.iri_value(cell))}</uri>"
    if terms.is_blank(cell):
        return f"<bnode>{_xml(cell[2:])}</bnode>"
    lex, dt, lang = terms.split_literal(cell)
    attr = f' xml:lang="{_xml(lang)}"' if lang else (f' datatype="{_xml(dt)}"' if dt else "")
    return f"<literal{attr}>{_xml(lex)}</literal>"


def _write_xml(out: IO[str], head: list[str], rows: Iterator[list[Cell]]) -> None:
    out.write(f'<?xml version="1.0" encoding="utf-8"?>\n<sparql xmlns="{SPARQL_RESULTS_NS}">\n  <head>\n')
    out.write("".join(f'    <variable name="{_xml(n)}"/>\n' for n in head) + "  </head>\n  <results>\n")
    for row in rows:
        out.write("    <result>" + "".join(f'<binding name="{_xml(n)}">{xml_cell(c)}</binding>'
                                          for n, c in zip(head, row) if c is not None) + "</result>\n")
    out.write("  </results>\n</sparql>\n")


def write_text_table(out: IO[str], head: list[str], rows: Iterator[list[Cell]]) -> None:
    """An aligned table for people: cells as in CSV, numbers right-aligned, unbound empty."""
    body = [[csv_cell(c).translate(_SHOW_CONTROLS) for c in row] for row in rows]
    numeric = [all(_is_number(row[i]) for row in body if row[i]) for i in range(len(head))]
    widths = [max([len(h)] + [len(row[i]) for row in body]) for i, h in enumerate(head)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric)).rstrip()

    out.write(line(head) + "\n" + "  ".join("-" * w for w in widths) + "\n")
    out.write("".join(line(row) + "\n" for row in body))
    out.write(f"({len(body)} row{'s' if len(body) != 1 else ''})\n")


_SHOW_CONTROLS = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t"})
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _is_number(text: str) -> bool:
    return bool(_NUMBER.fullmatch(text))


_TABLE_WRITERS = {"json": _write_sparql_json, "xml": _write_xml, "text": write_text_table}
_COLUMN_WRITERS = {"csv": _write_csv, "tsv": _write_tsv}  # rows laid out as arrays


# ---------------------------------------------------------------------------------------------
# JSON Lines (tefq's former `json`): one SPARQL results document per (query, tick)

def _json_line(doc: dict) -> str:
    """One document per line: escape the characters other tools also take as line breaks."""
    return json.dumps(doc, ensure_ascii=False).translate(_LINE_BREAKS) + "\n"


def _write_jsonl(out: IO[str], results: list[QueryResult], tick_format: str) -> None:
    with_query = len(results) > 1
    for result in results:
        names = _names(result)
        doc: dict | None = None
        for tick, cells in result.sorted_rows():
            shown = format_iso_ms(tick) if tick_format == "iso" else tick
            if doc is None or doc["tick"] != shown:
                if doc is not None:
                    out.write(_json_line(doc))
                doc = ({"query": result.name} if with_query else {}) | {
                    "tick": shown, "head": {"vars": names}, "results": {"bindings": []}}
            doc["results"]["bindings"].append(
                {n: json_cell(c) for n, c in zip(names, cells) if c is not None})
        if doc is not None:
            out.write(_json_line(doc))


# ---------------------------------------------------------------------------------------------
# Arrow and Parquet

def arrow_table(results: list[QueryResult], term_form: str = "ntriples") -> "pa.Table":
    """`tick` as timestamp[ms, UTC], every other column N-Triples terms as strings (null =
    unbound); `term_form` "typed": each column typed (tefq.results.typed_column). Each distinct
    cell is converted once (`column_table`)."""
    import pyarrow as pa

    check_term_form(term_form)
    head, columns = column_table(results, tick_format=None)
    arrays, tick = [], head.index("tick")
    for j, (name, (cells, index)) in enumerate(zip(head, columns)):
        if j == tick:
            distinct = pa.array(cells, type=pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
        elif j == 0 and len(results) > 1:  # the query column
            distinct = pa.array([terms.split_literal(v)[0] for v in cells], type=pa.string())
        elif term_form == "typed":
            distinct = typed_array(cells, planned_kind(results, name))
        else:
            distinct = pa.array(cells, type=pa.string())
        arrays.append(distinct.take(pa.array(index, type=pa.int64())))
    return pa.Table.from_arrays(arrays, names=head)


def typed_array(cells: list[Cell], planned: str) -> "pa.Array":
    """A typed column (tefq.results.typed_column) as an Arrow array."""
    import pyarrow as pa

    kind, values = typed_column(cells, planned)
    if kind == TIMESTAMP:
        return pa.array(values, type=pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
    arrow_types = {LONG: pa.int64(), DOUBLE: pa.float64(), BOOLEAN: pa.bool_(), STRING: pa.string(),
                   NTRIPLES: pa.string(), TERM: pa.string()}
    return pa.array(values, type=arrow_types[kind])


def planned_kind(results: list[QueryResult], name: str) -> str:
    """The kind the plans give column `name` (tefq.results.column_kinds, kept on each result by
    the run service): the one every query with that column gives it, else TERM (from the rows)."""
    kinds = {r.kinds.get(name, TERM) for r in results if name in _names(r)}
    return kinds.pop() if len(kinds) == 1 else TERM


def _write_binary(path: str | None, results: list[QueryResult], fmt: str, term_form: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = arrow_table(results, term_form)
    sink = pa.BufferOutputStream() if path is None else pa.OSFile(path, "wb")
    with sink:
        if fmt == "parquet":
            pq.write_table(data, sink)
        else:
            with pa.ipc.new_file(sink, data.schema) as w:
                w.write_table(data)
        if path is None:
            write_all(sys.stdout.buffer, sink.getvalue())
            sys.stdout.buffer.flush()


# ---------------------------------------------------------------------------------------------
# Entry points

def check_term_output(fmt: str, term_form: str) -> None:
    """`--terms typed` types Parquet and Arrow columns; the text formats write terms as their
    standards say (CSV: lexical forms, TSV/JSON/XML: terms), so it is refused there, not dropped."""
    if check_term_form(term_form) == "typed" and fmt not in BINARY_FORMATS:
        raise TefqError(f"--terms typed applies to --format {' and '.join(BINARY_FORMATS)}: {fmt} writes "
                        "terms as its standard says", file="--terms")


def _check(fmt: str, tick_format: str) -> str:
    fmt = fmt.lower()
    if fmt not in FORMATS:
        raise TefqError(f"unknown result format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if tick_format not in TICK_FORMATS:
        raise TefqError(f"unknown tick format {tick_format!r}: expected ms or iso")
    return fmt


def _write_one(out: IO[str], results: list[QueryResult], fmt: str, tick_format: str) -> None:
    if fmt == "jsonl":
        _write_jsonl(out, results, tick_format)
        return
    if fmt in _COLUMN_WRITERS:
        _COLUMN_WRITERS[fmt](out, *column_table(results, tick_format))
        return
    head, rows = table(results, tick_format)
    _TABLE_WRITERS[fmt](out, head, progress.counted(rows, "writing rows", sum(r.row_count() for r in results)))


def is_directory_target(out: str | None) -> bool:
    """`--out DIR/` or an existing directory: one file per query."""
    return out is not None and (out.endswith(("/", os.sep)) or os.path.isdir(out))


def result_path(directory: str, query_name: str, fmt: str) -> str:
    """Where `--out DIR/` puts a query's results: DIR/<safe query name>.<extension>."""
    return path_in(directory, query_name, EXTENSIONS.get(fmt, fmt))


def _write_file(path: str | None, results: list[QueryResult], fmt: str, tick_format: str,
                term_form: str = "ntriples") -> None:
    if fmt in BINARY_FORMATS:
        if path is None:
            with to_stdout():
                _write_binary(None, results, fmt, term_form)
        else:
            with atomic_path(path) as tmp:
                _write_binary(tmp, results, fmt, term_form)
    elif path is None:
        with to_stdout():
            _write_one(sys.stdout, results, fmt, tick_format)
            sys.stdout.flush()
    else:
        with atomic_open(path) as f:
            _write_one(f, results, fmt, tick_format)


def write_results(results: list[QueryResult], fmt: str = "csv", out: str | None = None,
                  tick_format: str = "ms", term_form: str = "ntriples") -> list[str]:
    """Write the results as spec §5 says; returns the files written (empty for stdout).
    `term_form` "typed": parquet / arrow columns typed (`arrow_table`); refused for text formats.

    `out` None -> stdout; a directory (existing, or a path ending in `/`) -> one file per query,
    named by `result_path`; otherwise one file (several queries share it with a leading `query`
    column). Files appear complete or not at all (written to a temporary name, then renamed)."""
    fmt = _check(fmt, tick_format)
    check_term_output(fmt, term_form)
    if is_directory_target(out):
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as e:
            raise TefqError(f"cannot create the output directory: {e.strerror or e}", out) from None
        written = []
        for r in results:
            path = result_path(out, r.name, fmt)
            _write_file(path, [r], fmt, tick_format, term_form)
            written.append(path)
        return written
    if not results:
        return []
    _write_file(out, results, fmt, tick_format, term_form)
    return [out] if out else []


def results_text(results: list[QueryResult], fmt: str = "csv", tick_format: str = "ms") -> str:
    """What write_results would print for a text format (for tests, follow mode and the REPL)."""
    fmt = _check(fmt, tick_format)
    if fmt in BINARY_FORMATS:
        raise TefqError(f"{fmt} is a binary format")
    if not results:
        return ""
    buf = io.StringIO(newline="")
    _write_one(buf, results, fmt, tick_format)
    return buf.getvalue()


def write_metrics(metrics: Metrics, path: str | None) -> None:
    """The metrics JSON object (spec §7), indented; `path` None means no metrics file."""
    if path is None:
        return
    with atomic_open(path) as f:
        json.dump(metrics.to_json(), f, indent=2)
        f.write("\n")


class ResultAppender:
    """Follow mode's output: each micro-batch's new rows are appended to `out` (or stdout) and
    flushed, in the format a bounded run writes (one header, at the top). The file is rewritten
    from the start of the run: a run resumed from a checkpoint hands over every committed tick
    again, so the file always holds each reported tick once."""

    def __init__(self, fmt: str, out: str | None, tick_format: str = "ms") -> None:
        self.fmt, self.out, self.tick_format = fmt, out, tick_format
        self.per_query = is_directory_target(out)
        self.started: set[str] = set()
        if out is not None and not self.per_query:  # no stale rows from an earlier run
            append_records(out, "", "the output", append=False)

    def __call__(self, results: list[QueryResult]) -> None:
        if self.per_query:
            for r in results:
                if r.rows:
                    self._append(result_path(self.out, r.name, self.fmt), [r])  # type: ignore[arg-type]
        else:
            self._append(self.out, results)

    def _append(self, path: str | None, results: list[QueryResult]) -> None:
        """One micro-batch's rows, written whole or not at all (tefq.io.records): a full disk
        never leaves --out ending in half a row."""
        text = results_text(results, self.fmt, self.tick_format)
        key = path or "-"
        if key in self.started and self.fmt != "jsonl":
            text = text.split("\n", 1)[1] if "\n" in text else ""  # the header is written once
        if path is None:
            with to_stdout():
                write_checked(sys.stdout, text)
                sys.stdout.flush()
        else:
            if self.per_query:
                try:
                    os.makedirs(self.out, exist_ok=True)  # type: ignore[arg-type]
                except OSError as e:
                    raise TefqError(f"cannot create the output directory: {e.strerror or e}", self.out) from None
            append_records(path, text, "the output", append=key in self.started)
        self.started.add(key)


@contextlib.contextmanager
def to_stdout() -> Iterator[None]:
    """Writing to standard output: a full disk or a closed descriptor is a sentence (a closed
    pipe stays BrokenPipeError: the command line exits quietly, as `head` expects)."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as e:
        raise TefqError(f"cannot write the results: {e.strerror or e}", "<stdout>") from None
