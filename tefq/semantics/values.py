"""RDF terms <-> Python values, and the canonical form of computed result cells.

`to_value` looks inside an N-Triples term so expressions can compute with it; `to_term` writes a
computed value back as the one canonical N-Triples term every engine emits (docs/semantics.md,
"Result cells"), so that the oracle's and Spark's rows compare with `==`:

- xsd:integer  `"5"^^<...#integer>`
- xsd:decimal  shortest exact decimal, no exponent, no trailing zeros: `"2.5"`, `"18"`
- xsd:double   the shortest decimal that round-trips, written positionally: `"2.5"`, `"18"`,
               `"0.0000001"`; `"NaN"`, `"INF"`, `"-INF"`; negative zero is `"0"`
- xsd:boolean  `"true"` / `"false"`
- xsd:dateTime `YYYY-MM-DDTHH:MM:SS[.fff]Z` (UTC, trailing zeros of the fraction trimmed)
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Union

from tefq.vocabulary import TIME_MAX, TIME_MIN, utc_lexical, utc_ms
from tefq.terms import (XSD, XSD_BOOLEAN, XSD_DATETIME, XSD_DECIMAL, XSD_DOUBLE, XSD_INTEGER, XSD_STRING,
                        literal, split_literal)


@dataclass(frozen=True)
class IRI:
    value: str  # without angle brackets


@dataclass(frozen=True)
class BNode:
    id: str  # without `_:`


@dataclass(frozen=True)
class LangString:
    lex: str
    lang: str


class DateTime:
    """An xsd:dateTime as milliseconds since the epoch, UTC (no time zone means UTC, spec §1).
    (A plain slotted class: the oracle makes millions of these.)"""

    __slots__ = ("ms",)
    ms: int

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DateTime) and other.ms == self.ms

    def __hash__(self) -> int:
        return hash(("dateTime", self.ms))

    def __repr__(self) -> str:
        return f"DateTime({self.ms})"


@dataclass(frozen=True)
class Typed:
    """A literal of a datatype we do not compute with (or an ill-typed one): kept as written."""

    lex: str
    datatype: str


Value = Union[int, Decimal, float, bool, str, IRI, BNode, LangString, DateTime, Typed]

_INTEGER_TYPES = {XSD + n for n in (
    "integer", "int", "long", "short", "byte", "nonNegativeInteger", "positiveInteger", "negativeInteger",
    "nonPositiveInteger", "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte")}
_INTEGER_RE = re.compile(r"^[+-]?[0-9]+$")
_DECIMAL_RE = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)$")
_DOUBLE_RE = re.compile(r"^([+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?INF|NaN)$")
_DATETIME_RE = re.compile(
    r"^(-?\d{4,})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)?$")


def is_numeric(v: object) -> bool:
    return isinstance(v, (int, Decimal, float)) and not isinstance(v, bool)


@lru_cache(maxsize=1 << 16)
def to_value(nt: str) -> Value:
    """An N-Triples term as a Python value. Ill-typed literals become `Typed` (never raises for a
    well-formed term)."""
    if nt.startswith("<"):
        return IRI(nt[1:-1])
    if nt.startswith("_:"):
        return BNode(nt[2:])
    lex, dt, lang = split_literal(nt)
    if lang:
        return LangString(lex, lang.lower())
    if dt is None or dt == XSD_STRING:
        return lex
    s = lex.strip()
    if dt in _INTEGER_TYPES:
        if _INTEGER_RE.match(s):
            return int(s)
    elif dt == XSD_DECIMAL:
        if _DECIMAL_RE.match(s):
            return Decimal(s)
    elif dt in (XSD_DOUBLE, XSD + "float"):
        if _DOUBLE_RE.match(s):
            return float(s.replace("INF", "inf"))
    elif dt == XSD_BOOLEAN:
        if s in ("true", "1"):
            return True
        if s in ("false", "0"):
            return False
    elif dt == XSD_DATETIME:
        ms = parse_datetime_ms(s)
        if ms is not None:
            return DateTime(ms)
    return Typed(lex, dt)


def parse_datetime_ms(text: str) -> int | None:
    """`2024-01-01T10:00:00.5+02:00` -> ms since the epoch (UTC); digits below the millisecond are
    truncated; no time zone means UTC; any year of tefq's time range. None if it is not an
    xsd:dateTime, or one outside that range (it stays a literal, as an ill-typed one does)."""
    m = _DATETIME_RE.match(text)
    if not m:
        return None
    base = utc_ms(*(int(g) for g in m.groups()[:6]))
    if base is None:
        return None
    frac, tz = m.group(7), m.group(8)
    ms = base + (int((frac[1:] + "00")[:3]) if frac else 0)
    if tz and tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        ms -= sign * (int(tz[1:3]) * 60 + int(tz[4:6])) * 60_000
    return ms if TIME_MIN <= ms <= TIME_MAX else None  # beyond tefq's time range: not computed with


def datetime_lexical(ms: int) -> str:
    """ms since the epoch -> `YYYY-MM-DDTHH:MM:SS[.fff]Z` (any year: `10000-...`, `-0001-...`)."""
    return utc_lexical(ms)


def decimal_lexical(d: Decimal) -> str:
    """Shortest exact positional form, every digit kept: 2.50 -> 2.5, 18.0 -> 18, 1E+2 -> 100, -0 -> 0."""
    if d.is_nan():
        return "NaN"
    if d.is_infinite():
        return "INF" if d > 0 else "-INF"
    if d == 0:
        return "0"
    text = format(d, "f")  # exact (normalize() would round to the context's 28 digits)
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def double_lexical(x: float) -> str:
    """The shortest decimal that reads back as `x` (Python's repr digits), written without an
    exponent and without a trailing `.0`."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "INF" if x > 0 else "-INF"
    if x == 0:
        return "0"
    r = repr(x)
    if "e" not in r:  # already positional: only drop a trailing ".0"
        return r[:-2] if r.endswith(".0") else r
    return decimal_lexical(Decimal(r))


def datetime_term(ms: int) -> str:
    return literal(datetime_lexical(ms), XSD_DATETIME)


def to_term(value: Value) -> str:
    """A computed value as its canonical N-Triples term (see the module docstring)."""
    if isinstance(value, bool):
        return f'"{"true" if value else "false"}"^^<{XSD_BOOLEAN}>'
    if isinstance(value, int):
        return f'"{value}"^^<{XSD_INTEGER}>'
    if isinstance(value, float):
        return f'"{double_lexical(value)}"^^<{XSD_DOUBLE}>'
    if isinstance(value, Decimal):
        return f'"{decimal_lexical(value)}"^^<{XSD_DECIMAL}>'
    if isinstance(value, str):
        return literal(value)
    if isinstance(value, DateTime):
        return datetime_term(value.ms)
    if isinstance(value, IRI):
        return f"<{value.value}>"
    if isinstance(value, BNode):
        return f"_:{value.id}"
    if isinstance(value, LangString):
        return literal(value.lex, lang=value.lang)
    if isinstance(value, Typed):
        return literal(value.lex, value.datatype)
    raise TypeError(f"not an RDF value: {value!r}")


@lru_cache(maxsize=1 << 16)
def value_term(nt: str) -> str:
    """The one term of `nt`'s value (`to_term(to_value(nt))`): two terms DISTINCT keeps once
    (`expressions.distinct_key`) have one value term."""
    return to_term(to_value(nt))


def decimal_of(text: str) -> Decimal | None:
    try:
        return Decimal(text)
    except InvalidOperation:
        return None
