"""Stream and background readers: files of every supported format -> `(ts, s, p, o)` elements.

`read_stream` checks the path and lists the files at call time (so a missing path fails at once),
then returns an iterator: text formats and Parquet are read lazily in constant memory; TriG is
parsed whole with rdflib. Every malformed input raises `TefqError` with the file, the line (the row
for Parquet) and, where known, the column: nothing is skipped silently. See docs/formats.md.
"""
from __future__ import annotations

import itertools
import os
import re
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from tefq.errors import TefqError
from tefq.io.bad_rows import STRICT, BadRowLog, IgnoreBadRows
from tefq.io.limits import EXCERPT, max_line_bytes, max_term_chars, open_input, skip_line
from tefq.io.elements import TIME_PREDICATES, parse_statement, time_literal, timestamp_graphs  # noqa: F401
from tefq.io.ntriples import (BNODE_FAST, IRI_FAST, LIT_FAST, XSD_STRING_SUFFIX, TermError, check_position,
                              normalise_term)
from tefq.io.sniff import HEAD_BYTES, refuse_binary, refuse_special
from tefq.io.validate import (HEADER, RANGE_HINT, TS_MAX, TS_MIN, Fault, RowChecker, check_term, check_text,
                              decode_line, element_of_line, header_order, split_csv)
from tefq.vocabulary import Element

if TYPE_CHECKING:
    import pyarrow as pa
    import rdflib

STREAM_FORMATS = ("tsv", "csv", "parquet", "nq", "trig", "stream")
TEXT_FORMATS = ("tsv", "csv", "nq", "trig", "stream")


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
    """Hidden files, Spark/Hadoop bookkeeping (`_SUCCESS`, `_spark_metadata/`, `.x.crc`) and files
    still being written (`x.tsv.tmp`, renamed when complete: a followed directory grows so)."""
    return name.startswith(".") or name.startswith("_") or name.endswith((".crc", ".tmp"))


def stream_files(path: str) -> list[str]:
    """The files a stream path stands for: the file itself, or a directory's files in the order of
    their relative paths (recursively)."""
    if not os.path.exists(path):
        raise TefqError("no such stream file or directory", path)
    if not os.path.isdir(path):
        refuse_special(path, "stream file")
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
        refuse_special(full, "stream file")
        stream_format(full)
    return [full for _, full in found]


def read_stream(path: str, bad_rows: BadRowLog = STRICT) -> Iterator[Element]:
    """All elements of a stream file or directory, in file order (see the module doc). A bad row
    raises a located BadRow (exit 2), or with a recording `bad_rows` log is recorded and skipped."""
    files = stream_files(path)
    # chain keeps the per-element path in C: Parquet batches are handed over as whole zips.
    return itertools.chain.from_iterable(read_stream_file(f, bad_rows) for f in files)


def read_stream_file(path: str, bad_rows: BadRowLog = STRICT, where: list[int] | None = None) -> Iterator[Element]:
    """One file's elements; `where[0]`, if given, follows the line (Parquet: row) being read."""
    fmt, gz = stream_format(path)
    if fmt == "parquet":
        return itertools.chain.from_iterable(_parquet_batches(path, bad_rows, where))
    if fmt == "trig":
        return _read_trig(path, gz)
    if fmt in ("tsv", "csv"):
        return _read_table(path, gz, fmt, bad_rows, where)
    return _read_quads(path, gz, fmt, bad_rows, where)


def locate_ts(paths: Iterable[str], ts: int) -> tuple[str, int]:
    """(file, line) of the first row with timestamp `ts` in the streams (line 0: not found, or
    TriG); for naming a row in an error found after reading (an absurd time range)."""
    for path in paths:
        for f in stream_files(path):
            where = [0]
            for i, e in enumerate(read_stream_file(f, IgnoreBadRows(), where)):
                if e[0] == ts:
                    return f, where[0] or i + 1
    return "", 0


def literal_path_pattern(path: str) -> str:
    """A file name as a glob pattern that matches only itself (`[`, `]`, `*`, `?`, `{`, `}`
    escaped): for readers that take patterns (Spark's pathGlobFilter); tefq's own readers take
    every stream path literally."""
    return re.sub(r"([\\\[\]*?{}])", r"\\\1", path)


# ---------------------------------------------------------------------------------------------
# Text helpers

def _lines(path: str, gz: bool, fmt: str, log: BadRowLog, where: list[int] | None = None) -> Iterator[tuple[int, str]]:
    """(line number, decoded line without its end) pairs of a `fmt` text file; a file that starts
    like a binary format is refused as a whole (tefq.io.sniff); a line that is not UTF-8 or holds
    a raw control character is a bad row (tefq.io.validate); read errors are located TefqErrors.
    `where[0]`, if given, follows the current line number (to locate a row later)."""
    try:
        f = open_input(path, gz)
    except OSError as e:
        raise TefqError(f"cannot read the stream file: {e.strerror or e}", path) from None
    lineno, limit = 0, max_line_bytes()
    with f:
        try:
            refuse_binary(f.peek(HEAD_BYTES)[:HEAD_BYTES], path, fmt)
        except (OSError, EOFError, zlib.error) as e:
            raise TefqError(f"cannot read the stream file: {e}", path, 1) from None
        readline = f.readline
        while True:
            try:
                raw = readline(limit + 1)  # a longer line: its first limit + 1 bytes
                if not raw:
                    return
                lineno += 1
                if where is not None:
                    where[0] = lineno
                if len(raw) > limit and not raw.endswith(b"\n"):
                    log.report(Fault("line-too-long", 0, f"the line is longer than the limit of {limit:,} bytes "
                                     "(TEFQ_MAX_LINE_BYTES)"), path, lineno, raw[:EXCERPT].decode("utf-8", "replace"))
                    skip_line(f)  # recorded (--bad-rows): read on after it
                    continue
            except (OSError, EOFError, zlib.error) as e:
                raise TefqError(f"cannot read the stream file: {e}", path, lineno + 1) from None
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 BOM is accepted
                raw = raw[3:]
            raw = raw.rstrip(b"\r\n")
            try:
                line = raw.decode("utf-8")
                if "\x00" in line:
                    check_text(line)
            except (UnicodeDecodeError, Fault):
                try:
                    check_text(decode_line(raw))
                except Fault as fault:
                    log.report(fault, path, lineno, raw.decode("utf-8", "replace"))
                continue
            yield lineno, line


# ---------------------------------------------------------------------------------------------
# TSV / CSV (the row rules are tefq.io.validate's)

def _read_table(path: str, gz: bool, fmt: str, log: BadRowLog, where: list[int] | None = None) -> Iterator[Element]:
    order: tuple[int, ...] | None = None
    checker = RowChecker()
    memo_s, memo_p, memo_o = checker.memo
    sep, default = ("\t" if fmt == "tsv" else ","), (0, 1, 2, 3)
    for lineno, line in _lines(path, gz, fmt, log, where):
        if not line.strip():
            continue  # blank lines carry nothing (typically a trailing newline)
        if order is None:
            # A first line that is not the header is recorded (with --bad-rows) and the rest of
            # the file is read in the default column order.
            order = _header(line, fmt, path, lineno, log) or default
            continue
        # Fast path: four plain cells in the usual order, integer ts, terms the checker has already
        # accepted (its memo); everything else goes through the full check.
        cells = line.split(sep)
        if len(cells) == 4 and order == default and '"' not in cells[0]:
            ts, s, p, o = cells
            s, p, o = memo_s.get(s), memo_p.get(p), memo_o.get(o)
            if s and p and o and ts.isdigit() and ts.isascii() and len(ts) < 19 and (sep == "\t" or '"' not in line):
                yield int(ts), s, p, o
                continue
        try:
            yield element_of_line(checker, line, fmt, order)
        except Fault as fault:
            log.report(fault, path, lineno, line)


def _header(line: str, fmt: str, path: str, lineno: int, log: BadRowLog) -> tuple[int, ...] | None:
    """The column order a header line gives; a first line that is not the header is a bad row
    (`bad-header`), never silently taken as the header nor silently lost."""
    try:
        cells = split_csv(line)[0] if fmt == "csv" else line.split("\t")
    except Fault:
        cells = []
    order = header_order(cells)
    if order is None:
        want = ("," if fmt == "csv" else "\t").join(HEADER).replace("\t", "<TAB>")
        log.report(Fault("bad-header", 0, f"expected the header {want!r} (in any order) as the first line, "
                         f"found {line.strip()[:60]!r}"), path, lineno, line)
    return order


# ---------------------------------------------------------------------------------------------
# N-Quads and YABench .stream (line-based)


class _FastStatements:
    """Splits the common `s p o [x] .` line without the tokenizer: subjects and predicates hold
    no spaces, so the line splits on spaces; each distinct cell is checked once (memo). Anything
    unusual (TABs, comments, spaces inside literals that do not split cleanly) returns None and
    goes through `parse_statement`, whose fault is reported located."""

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


def _read_quads(path: str, gz: bool, fmt: str, log: BadRowLog, where: list[int] | None) -> Iterator[Element]:
    fourth = "time" if fmt == "stream" else "graph"
    fast = _FastStatements(fourth)

    def statements() -> Iterator[tuple[int, str, str, str, str | None, str]]:
        for lineno, line in _lines(path, gz, fmt, log, where):
            try:
                st = fast(line.rstrip()) or parse_statement(line, fourth)
                if st is not None and fourth == "time":
                    if st[3] is None:
                        raise Fault("bad-statement", len(line.rstrip()),
                                    "expected `<s> <p> <o> \"timestamp\" .` (YABench stream)")
                    st = (*st[:3], str(time_literal(st[3], line.rfind(st[3]))))
            except Fault as fault:
                log.report(fault, path, lineno, line)
                continue
            if st is not None:
                yield (lineno, *st, line)

    if fourth == "graph":
        yield from timestamp_graphs(statements(), path, None, log)
        return
    for lineno, s, p, o, t, line in statements():
        yield int(t), s, p, o


# ---------------------------------------------------------------------------------------------
# rdflib-based readers live in tefq.io.rdf (imported on use: rdflib is slow to import)

def _read_trig(path: str, gz: bool) -> Iterator[Element]:
    # deferred: rdflib takes ~1.9 s to import; only a run with RDF needs it
    from tefq.io.rdf import read_trig

    return read_trig(path, gz)


def read_background(path: str) -> "rdflib.Graph":
    """A static background graph (Turtle, N-Triples, TriG, N-Quads; `.gz` too): see tefq.io.rdf."""
    # deferred: rdflib takes ~1.9 s to import; only a run with RDF needs it
    from tefq.io.rdf import read_background as read

    return read(path)


# ---------------------------------------------------------------------------------------------
# Parquet (vectorised: terms already in normal form are checked by one regex pass per column)

def parquet_file(path: str):
    """`pyarrow.parquet.ParquetFile(path)`; a damaged file is exit 2 naming it (`parquet_read`)."""
    import pyarrow.parquet as pq

    with parquet_read(path):
        return pq.ParquetFile(path)


@contextmanager
def parquet_read(path: str, line: int = 0) -> Iterator[None]:
    """Reading the Parquet file `path` (at row `line`, if known): pyarrow's error on a damaged file
    is a located bad-input error, not an internal one."""
    import pyarrow as pa

    try:
        yield
    except (OSError, pa.ArrowException) as e:
        raise TefqError(f"cannot read the Parquet file: {e}", path, line) from None


def _parquet_batches(path: str, log: BadRowLog, where: list[int] | None) -> Iterator[Iterator[Element]]:
    pf = parquet_file(path)
    schema = pf.schema_arrow
    missing = [c for c in HEADER if c not in schema.names]
    if missing:
        raise TefqError(f"missing Parquet column(s) {', '.join(missing)}: expected ts (int64 ms), s, p, o "
                        f"(strings); found {', '.join(schema.names)}", path)
    check_event_types(schema, path)
    row0 = 0
    batches = pf.iter_batches(batch_size=1 << 16, columns=list(HEADER))
    while True:
        with parquet_read(path, row0 + 1):
            batch = next(batches, None)
        if batch is None:
            return
        rows = batch_elements(batch, row0, path, log)
        if where is not None:
            where[0] = row0  # the elements of this batch are rows row0 + 1, ...
        row0 += batch.num_rows
        yield rows


def read_table(table: "pa.Table", name: str, bad_rows: BadRowLog = STRICT) -> Iterator[Element]:
    """In-memory events (an Arrow table with columns ts, s, p, o) checked by the Parquet reader's
    rules, row by row as a Parquet file's: a bad row is `name`, row N (1-based), column c."""
    check_event_types(table.schema, name)

    def batches() -> Iterator[Iterator[Element]]:
        row0 = 0
        for batch in table.select(list(HEADER)).to_batches(max_chunksize=1 << 16):
            yield batch_elements(batch, row0, name, bad_rows)
            row0 += batch.num_rows

    return itertools.chain.from_iterable(batches())


def check_event_types(schema: "pa.Schema", where: str) -> None:
    """ts integer milliseconds or a timestamp; s, p, o strings (dictionary-encoded or not)."""
    import pyarrow as pa

    ts_type = schema.field("ts").type
    if not (pa.types.is_integer(ts_type) or pa.types.is_timestamp(ts_type)):
        raise TefqError(f"column ts must be int64 milliseconds (or a timestamp), found {ts_type}", where)
    for c in "spo":
        t = schema.field(c).type
        if pa.types.is_dictionary(t):
            t = t.value_type
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            raise TefqError(f"column {c} must hold N-Triples terms as strings, found {t}", where)


def batch_elements(batch: "pa.RecordBatch", row0: int, path: str, log: BadRowLog) -> Iterator[Element]:
    """One batch's good rows (rows row0 + 1, ...); its bad rows are reported now, in row order."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cols, lists, bad = {}, [], set()
    for c in HEADER:
        col = batch.column(c)
        if pa.types.is_dictionary(col.type):
            col = col.dictionary_decode()
        if c == "ts" and pa.types.is_timestamp(col.type):
            col = pc.floor_temporal(col, unit="millisecond").cast(pa.timestamp("ms", col.type.tz)) \
                .view(pa.int64())
        cols[c] = col
        lists.append(col.to_pylist())
        if col.null_count:
            bad.update(pc.indices_nonzero(pc.is_null(col)).to_pylist())
    beyond = set(ts_out_of_range(cols["ts"])) - bad
    for i in sorted(bad | beyond):  # report in row order
        c = next((c for j, c in enumerate(HEADER) if lists[j][i] is None), "ts")
        fault = _ts_range(row0 + i + 1, lists[0][i]) if i in beyond else _null_cell(row0 + i + 1, c)
        _parquet_bad(fault, lists, i, row0, path, log)
    bad |= beyond
    _check_terms(cols, lists, bad, row0, path, log)
    rows = zip(*lists)
    if bad:
        rows = (r for i, r in enumerate(rows) if i not in bad)
    return rows


def _check_terms(cols: dict, lists: list[list], bad: set[int], row0: int, path: str, log: BadRowLog) -> None:
    """Check the distinct values of s, p, o only (streams repeat their terms): one regex pass per
    column finds the values not already in normal form; those go through the term parser, which
    normalises them in `lists` or reports the row (added to `bad`)."""
    import pyarrow.compute as pc

    for j, c in enumerate("spo", 1):
        values = pc.unique(cols[c])
        ok = in_normal_form(values, c)
        if pc.all(ok).as_py():
            continue
        badv = pc.filter(values, pc.invert(ok))
        for i in pc.indices_nonzero(pc.is_in(cols[c], value_set=badv)).to_pylist():
            if i in bad:
                continue
            try:
                lists[j][i] = check_term(lists[j][i], c, j)
            except Fault as fault:
                _parquet_bad(_at_cell(fault, row0 + i + 1, c), lists, i, row0, path, log)
                bad.add(i)


def in_normal_form(values: "pa.Array", role: str) -> "pa.Array":
    """Per string in `values`, whether it is an `role` term (s, p or o) the checker would take
    unchanged (`fast_term_patterns`; an object ending in ^^xsd:string is rewritten: False)."""
    import pyarrow.compute as pc

    ok = pc.match_substring_regex(values, fast_term_patterns()[role])
    ok = pc.and_(ok, pc.less_equal(pc.utf8_length(values), max_term_chars()))  # longer: check_term refuses it
    if role == "o":
        ok = pc.and_(ok, pc.invert(pc.ends_with(values, XSD_STRING_SUFFIX)))
    return ok


def terms_in_normal_form(table: "pa.Table") -> bool:
    """Whether every s, p and o of `table` (string columns) is in normal form (`in_normal_form`)."""
    import pyarrow.compute as pc

    return all(pc.all(in_normal_form(pc.unique(table[c]), c)).as_py() is not False for c in "spo")


def fast_term_patterns() -> dict[str, str]:
    """Per role, the cells a Parquet reader takes unchanged (already in normal form; except an
    object ending in ^^xsd:string, which is rewritten): the rest go through `check_term`."""
    return {"s": f"^(?:{IRI_FAST}|{BNODE_FAST})$", "p": f"^{IRI_FAST}$",
            "o": f"^(?:{IRI_FAST}|{BNODE_FAST}|{LIT_FAST})$"}


def parquet_row_fault(ts: int | None, s: str | None, p: str | None, o: str | None, *, row: int) -> Fault | None:
    """The Parquet reader's verdict on one row (1-based `row`; 0: not known, a DataFrame's), for an
    engine that reads the rows itself (Spark): the first null column, else the first bad term in
    s, p, o order, else None."""
    cells = dict(zip(HEADER, (ts, s, p, o)))
    for c in HEADER:
        if cells[c] is None:
            return _null_cell(row, c)
    if not TS_MIN <= ts <= TS_MAX:  # type: ignore[operator]
        return _ts_range(row, ts)  # type: ignore[arg-type]
    for j, c in enumerate("spo", 1):
        try:
            check_term(cells[c], c, j)
        except Fault as fault:
            return _at_cell(fault, row, c)
    return None


def ts_out_of_range(ts: "pa.Array") -> list[int]:
    """Rows of an integer ts column outside tefq's time range (`validate.TS_MIN`..`TS_MAX`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_integer(ts.type):
        return []
    low = pc.less(ts, pa.scalar(TS_MIN, pa.int64())) if pa.types.is_signed_integer(ts.type) else None
    beyond = pc.greater(ts, pa.scalar(TS_MAX, pa.uint64() if pa.types.is_unsigned_integer(ts.type) else pa.int64()))
    out = beyond if low is None else pc.or_(low, beyond)
    return pc.indices_nonzero(pc.fill_null(out, False)).to_pylist()


def _ts_range(row: int, ts: int) -> Fault:
    return Fault("timestamp-range", 0, (f"row {row}, " if row else "") + f"column ts: timestamp {ts} is {RANGE_HINT}")


def _null_cell(row: int, column: str) -> Fault:
    return Fault("empty-cell", 0, (f"row {row}: " if row else "") + f"column {column} is null")


def _at_cell(fault: Fault, row: int, column: str) -> Fault:
    fault.message = (f"row {row}, " if row else "") + f"column {column}: {fault.message}"
    return fault


def _parquet_bad(fault: Fault, lists: list[list], i: int, row0: int, path: str, log: BadRowLog) -> None:
    row = "\t".join("" if col[i] is None else str(col[i]) for col in lists)
    log.report(fault, path, row0 + i + 1, row, 0)
