"""The rules every stream row must pass, on both engines: one table of named kinds of bad row.

A text row goes through three steps, each of which may find a `Fault` (a kind, a 0-based offset
and a message): `decode_line` (UTF-8), `check_text` (no raw control characters), then splitting
(`split_tsv` / `split_csv`) and `RowChecker.element` (four cells -> one element). The oracle's
readers (`tefq.io.readers`) call these functions for every row; an engine that splits rows itself
(Spark's CSV reader) calls `classify_cells(ts, s, p, o)` on the four cells it read, or
`classify_line(line, fmt)` on the raw text, and gets the same verdict. The kinds are listed in
docs/formats.md ("Bad rows").
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from tefq.io.limits import max_term_chars
from tefq.io.ntriples import TermError, check_position, normalise_term
from tefq.io.timestamps import parse_ts
from tefq.vocabulary import TIME_MAX, TIME_MIN
from tefq.vocabulary import Element


HEADER = ("ts", "s", "p", "o")
ROLES = ("ts", "s", "p", "o")
TS_MIN, TS_MAX = TIME_MIN, TIME_MAX  # the instants tefq computes with (tefq.vocabulary)
RANGE_HINT = "outside tefq's time range (-2^61 to 2^61 - 1 ms, about 73 million years either side of 1970)"

# Every kind of bad row, with what it means (docs/formats.md lists the same table).
KINDS: dict[str, str] = {
    "invalid-utf8": "bytes that are not UTF-8 (a binary file, another encoding)",
    "nul-byte": "a raw NUL character (binary data; Spark's TSV reader uses NUL as its quote): write \\u0000",
    "bad-header": "a TSV/CSV file whose first line is not the header ts, s, p, o (in any order)",
    "column-count": "not exactly 4 columns (a missing or a fifth column)",
    "csv-quoting": "malformed CSV quoting (an unterminated quote, text after a closing quote)",
    "empty-cell": "an empty ts, s, p or o cell (a null column)",
    "bad-timestamp": "ts is neither integer milliseconds nor an ISO-8601 date-time",
    "timestamp-range": "ts lies outside tefq's time range, -2^61 to 2^61 - 1 ms (about 73 million years either side of 1970)",
    "bad-escape": "a backslash escape N-Triples does not define (\\q, \\u12)",
    "bad-term": "a cell or statement part that is not an N-Triples term",
    "term-position": "a literal as subject or graph name, or a predicate that is not an IRI",
    "bad-statement": "an N-Quads / YABench line that is not `s p o [x] .`",
    "line-too-long": "a text line longer than TEFQ_MAX_LINE_BYTES (default 1 MiB; skipped in bounded memory)",
    "term-too-long": "an s, p or o longer than TEFQ_MAX_TERM_CHARS characters (default 65,536)",
}

_BAD_ESCAPE = re.compile(r'\\(?![tbnrf"\'\\]|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8})')
_INT = re.compile(r"[+-]?[0-9]+")


class Fault(ValueError):
    """One bad row: its kind (a key of KINDS), the 0-based offset of the problem in the text that
    was checked (a line, or a cell for `RowChecker`) and a message."""

    def __init__(self, kind: str, offset: int, message: str, cell: int = -1) -> None:
        super().__init__(message)
        assert kind in KINDS, kind
        self.kind, self.offset, self.message, self.cell = kind, offset, message, cell


def decode_line(raw: bytes) -> str:
    """UTF-8 bytes -> text; Fault("invalid-utf8") at the first bad byte (offset in characters)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        before = raw[:e.start].decode("utf-8", "replace")
        raise Fault("invalid-utf8", len(before), f"invalid UTF-8 (byte {e.start + 1} of the line: "
                    f"0x{raw[e.start]:02x})") from None


def check_text(line: str) -> None:
    """A raw NUL means binary data, never a stream row (a literal may hold it escaped: \\u0000)."""
    at = line.find("\x00")
    if at >= 0:
        raise Fault("nul-byte", at, "a NUL byte in the row (a binary file? write \\u0000 in a literal)")


def header_order(cells: Sequence[str]) -> tuple[int, ...] | None:
    """The positions of ts, s, p, o in a header line's cells, or None if it is not the header."""
    names = [c.strip().strip('"').lower() for c in cells]
    if sorted(names) != sorted(HEADER):
        return None
    return tuple(names.index(n) for n in HEADER)


def split_tsv(line: str, order: tuple[int, ...] = (0, 1, 2, 3)) -> list[str]:
    """TAB-separated cells. A raw TAB inside the object literal is legal N-Triples: when the
    object is the last column and the tail is one term, it is glued back."""
    cells = line.split("\t")
    if len(cells) > 4 and order[3] == 3:
        glued = "\t".join(cells[3:])
        try:
            normalise_term(glued.strip(" "))
            return cells[:3] + [glued]
        except TermError:
            pass
    return cells


_CSV_QUOTED = re.compile(r'"((?:[^"]|"")*)"(?=,|$)')
_CSV_OPEN = re.compile(r'"(?:[^"]|"")*$')


def split_csv(line: str) -> tuple[list[str], list[int]]:
    """RFC 4180 cells of one line and their 0-based offsets. A quoted cell cannot span lines here:
    a raw newline is never valid inside an N-Triples term. As in Python's csv module, spaces before
    an opening quote make the cell unquoted (its quotes are kept)."""
    cells: list[str] = []
    starts: list[int] = []
    pos = 0
    while True:
        starts.append(pos)
        if line.startswith('"', pos):
            m = _CSV_QUOTED.match(line, pos)
            if m is None:
                if _CSV_OPEN.match(line, pos):
                    raise Fault("csv-quoting", pos, f"column {_role(len(cells))}: malformed CSV: unterminated "
                                "quoted cell (a quoted cell cannot span lines)", len(cells))
                raise Fault("csv-quoting", pos, f"column {_role(len(cells))}: malformed CSV: ',' expected "
                            "after the closing quote", len(cells))
            cells.append(m.group(1).replace('""', '"'))
            pos = m.end()
        else:
            end = line.find(",", pos)
            end = len(line) if end < 0 else end
            cells.append(line[pos:end])
            pos = end
        if pos == len(line):
            return cells, starts
        pos += 1  # the comma


def _role(i: int) -> str:
    return ROLES[i] if i < 4 else str(i + 1)


def cell_starts(cells: Sequence[str], sep_width: int = 1) -> list[int]:
    """0-based offsets of TAB-separated cells in their line."""
    out, pos = [], 0
    for c in cells:
        out.append(pos)
        pos += len(c) + sep_width
    return out


def check_column_count(cells: Sequence[str], starts: Sequence[int], line: str, what: str) -> None:
    if len(cells) != 4:
        at = starts[4] if len(cells) > 4 else len(line)
        raise Fault("column-count", at, f"expected 4 {what} columns (ts, s, p, o), found {len(cells)}",
                    min(len(cells), 4))


def parse_timestamp(cell: str) -> int:
    """A ts cell -> ms; Fault (offset in the cell) if it is empty, malformed or out of range."""
    if cell.isascii() and cell.isdigit() and len(cell) < 19:
        return int(cell)
    if not cell.strip():
        raise Fault("empty-cell", 0, "column ts is empty", 0)
    try:
        ts = parse_ts(cell)
    except ValueError as e:
        raise Fault("bad-timestamp", 0, str(e), 0) from None
    if not TS_MIN <= ts <= TS_MAX:
        raise Fault("timestamp-range", 0, f"timestamp {cell.strip()} is {RANGE_HINT}", 0)
    return ts


def term_fault(text: str, role: str, e: TermError, cell: int = -1) -> Fault:
    """The kind of a term the N-Triples parser refused (position errors, escapes, the rest)."""
    if "must be" in str(e):
        return Fault("term-position", e.pos, str(e), cell)
    if text.startswith('"'):
        bad = _BAD_ESCAPE.search(text)
        if bad:
            return Fault("bad-escape", e.pos, f"bad escape {text[bad.start():bad.start() + 2]!r} in a "
                         f"literal: {e}", cell)
    return Fault("bad-term", e.pos, str(e), cell)


def check_term(text: str, role: str, cell: int = -1) -> str:
    """One s, p or o cell (spaces around it carry nothing) -> its normal N-Triples form, or Fault."""
    body = text.strip(" ")
    lead = len(text) - len(text.lstrip(" "))
    if not body:
        raise Fault("empty-cell", 0, f"column {role} is empty", cell)
    if len(body) > max_term_chars():
        raise Fault("term-too-long", lead, f"this term is {len(body):,} characters long, more than the limit "
                    f"of {max_term_chars():,} (TEFQ_MAX_TERM_CHARS)", cell)
    try:
        term = normalise_term(body)
        check_position(term, role)
        return term
    except TermError as e:
        f = term_fault(body, role, e, cell)
        f.offset += lead
        raise f from None


class RowChecker:
    """Four cells in ts, s, p, o order -> an element. Keeps a memo of the terms it checked
    (streams repeat their terms: checking each distinct cell once makes reading several times
    faster)."""

    def __init__(self) -> None:
        self.memo: tuple[dict[str, str], ...] = ({}, {}, {})

    def element(self, ts: str, s: str, p: str, o: str) -> Element:
        """Raises Fault with `cell` (0..3) and the offset inside that cell."""
        t = parse_timestamp(ts)
        ms, mp, mo = self.memo
        return (t, ms.get(s) or self._term(ms, s, 1), mp.get(p) or self._term(mp, p, 2),
                mo.get(o) or self._term(mo, o, 3))

    @staticmethod
    def _term(table: dict[str, str], text: str, cell: int) -> str:
        term = check_term(text, ROLES[cell], cell)
        if len(table) >= 1 << 16:
            table.clear()
        table[text] = term
        return term


_CHECKER = RowChecker()


def classify_cells(ts: str | None, s: str | None, p: str | None, o: str | None) -> tuple[str, int, str] | None:
    """For an engine that split the row itself: (kind, cell 1..4, message) of a bad row, or None.
    A missing cell (None) is `empty-cell`."""
    cells = (ts, s, p, o)
    for i, c in enumerate(cells):
        if c is None:
            return "empty-cell", i + 1, f"column {ROLES[i]} is missing"
    try:
        for i, c in enumerate(cells):
            try:
                check_text(c)  # type: ignore[arg-type]
            except Fault as f:
                f.cell = i
                raise
        _CHECKER.element(ts, s, p, o)  # type: ignore[arg-type]
    except Fault as f:
        return f.kind, (f.cell if f.cell >= 0 else 0) + 1, f.message
    return None


def classify_line(line: str | bytes, fmt: str, order: tuple[int, ...] = (0, 1, 2, 3)) -> Fault | None:
    """The whole check of one data line of a `tsv` or `csv` file (columns in `order`, as given by
    `header_order`): None if it is a good row, else the Fault (offset = 0-based column in the line)."""
    try:
        element_of_line(_CHECKER, line, fmt, order)
    except Fault as f:
        return f
    return None


def element_of_line(checker: RowChecker, line: str | bytes, fmt: str, order: tuple[int, ...]) -> Element:
    """One data line -> an element, or Fault with its offset in the line."""
    text = decode_line(line) if isinstance(line, bytes) else line
    check_text(text)
    if fmt == "csv":
        cells, starts = split_csv(text)
        what = "comma-separated"
    else:
        cells = split_tsv(text, order)
        starts = cell_starts(cells)
        what = "TAB-separated"
    check_column_count(cells, starts, text, what)
    its, is_, ip, io = order
    try:
        return checker.element(cells[its], cells[is_], cells[ip], cells[io])
    except Fault as f:
        column = order[f.cell]
        if fmt == "csv":  # a quoted cell's text is not the line's: point at the cell
            f.offset = starts[column]
            if not f.message.startswith("column"):
                f.message = f"column {ROLES[f.cell]}: {f.message}"
        else:
            f.offset += starts[column]
        raise
