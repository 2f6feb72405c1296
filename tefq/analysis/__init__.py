"""The bind step: syntax tree -> logical plan (`tefq.plan.logical`), with every semantic error
located; plus duration parsing and the one-line statement summaries of `tefq parse`."""
from __future__ import annotations

from tefq.analysis.bind import TIMESTAMP_FUNCTION, bind, unifies
from tefq.analysis.durations import parse_duration
from tefq.analysis.summary import format_ms, summary
from tefq.errors import TefqError
from tefq.plan.logical import Document


def load(path: str, extra_prefixes: dict[str, str] | None = None,
         background_predicates: frozenset[str] = frozenset()) -> Document:
    """Read, parse and bind a .tef file; an unreadable file is a TefqError naming it."""
    from tefq.syntax import parse

    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise TefqError(f"cannot read query file: {e.strerror or e}", path) from None
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _invalid_utf8(path, data, e) from None
    return bind(parse(source, path), path, source, extra_prefixes or {}, background_predicates)


def _invalid_utf8(path: str, data: bytes, e: UnicodeDecodeError) -> TefqError:
    """Where the first invalid byte is, as a line and a column in characters (the valid text
    before it decodes), not a byte offset."""
    line_start = data.rfind(b"\n", 0, e.start) + 1
    line = data.count(b"\n", 0, e.start) + 1
    column = len(data[line_start:e.start].decode("utf-8", errors="replace")) + 1
    err = TefqError(f"invalid UTF-8: byte 0x{data[e.start]:02x} (save the query as UTF-8)", path, line, column)
    return err.located(path, data.decode("utf-8", errors="replace"))


__all__ = ["bind", "load", "parse_duration", "summary", "format_ms", "unifies", "TIMESTAMP_FUNCTION"]
