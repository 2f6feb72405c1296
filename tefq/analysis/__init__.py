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
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise TefqError(f"cannot read query file: {reason}", path) from None
    return bind(parse(source, path), path, source, extra_prefixes or {}, background_predicates)


__all__ = ["bind", "load", "parse_duration", "summary", "format_ms", "unifies", "TIMESTAMP_FUNCTION"]
