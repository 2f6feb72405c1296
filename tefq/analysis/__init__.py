"""The bind step: syntax tree -> logical plan (`tefq.plan.logical`), with every semantic error
located; plus duration parsing and the one-line statement summaries of `tefq parse`.

A document's text comes from one reader (`read_query_file`: UTF-8, an invalid byte located) and
is bound by one function (`bind_text`), whether it comes from a file (`load`, the command line)
or from a string (`tefq.compile`)."""
from __future__ import annotations

from collections.abc import Mapping

from tefq.analysis.bind import TIMESTAMP_FUNCTION, bind, unifies
from tefq.analysis.durations import parse_duration
from tefq.analysis.summary import summary
from tefq.errors import TefqError
from tefq.plan.logical import Document
from tefq.syntax import parse
from tefq.syntax.nesting import deep_recursion


def load(path: str, extra_prefixes: Mapping[str, str] | None = None,
         background_predicates: frozenset[str] = frozenset()) -> Document:
    """Read, parse and bind a .tef file; an unreadable file is a TefqError naming it."""
    return bind_text(read_query_file(path), path, extra_prefixes, background_predicates)


def bind_text(source: str, name: str, extra_prefixes: Mapping[str, str] | None = None,
              background_predicates: frozenset[str] = frozenset()) -> Document:
    """Parse and bind a document's text; errors are located in `name` (a path, or `<string>`).
    The background's predicates take part in binding: a pattern on one of them is a background
    pattern, not an event pattern."""
    document = parse(source, name)  # nested at most MAX_NESTING deep
    with deep_recursion():
        return bind(document, name, source, dict(extra_prefixes or {}), background_predicates)


def read_query_file(path: str) -> str:
    """The text of a .tef file; an unreadable file or one that is not UTF-8 is a located TefqError."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise TefqError(f"cannot read query file: {e.strerror or e}", path) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _invalid_utf8(path, data, e) from None


def _invalid_utf8(path: str, data: bytes, e: UnicodeDecodeError) -> TefqError:
    """Where the first invalid byte is, as a line and a column in characters (the valid text
    before it decodes), not a byte offset."""
    line_start = data.rfind(b"\n", 0, e.start) + 1
    line = data.count(b"\n", 0, e.start) + 1
    column = len(data[line_start:e.start].decode("utf-8", errors="replace")) + 1
    err = TefqError(f"invalid UTF-8: byte 0x{data[e.start]:02x} (save the query as UTF-8)", path, line, column)
    return err.located(path, data.decode("utf-8", errors="replace"))


__all__ = ["bind", "bind_text", "load", "read_query_file", "parse_duration", "summary", "unifies",
           "TIMESTAMP_FUNCTION"]
