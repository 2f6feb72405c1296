"""Application timestamps: integer milliseconds since the epoch, from integers or ISO-8601 text."""
from __future__ import annotations

import re

from tefq import terms
from tefq.vocabulary import utc_lexical, utc_ms

_INT = re.compile(r"[+-]?[0-9]+")
# xsd:dateTime / ISO-8601 extended form; the fraction may have any number of digits.
_ISO = re.compile(r"(-?\d{4,}-\d{2}-\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})?")
_INTEGER_TYPES = {terms.XSD + t for t in (
    "integer", "long", "int", "short", "byte", "nonNegativeInteger", "positiveInteger",
    "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte", "nonPositiveInteger", "negativeInteger")}


def parse_iso_ms(text: str) -> int:
    """`2024-01-01T00:00:00.5Z` -> ms; no zone means UTC; sub-ms digits are truncated; any year
    (proleptic Gregorian). ValueError."""
    m = _ISO.fullmatch(text.strip())
    if not m:
        raise ValueError(f"not an ISO-8601 date-time: {text!r}")
    date, hh, mm, ss, frac, zone = m.groups()
    year, month, day = (int(x) for x in re.fullmatch(r"(-?\d+)-(\d+)-(\d+)", date).groups())
    if int(hh) == 24 and frac and frac.strip("0"):
        raise ValueError(f"hour 24 is only allowed as 24:00:00: {text!r}")
    ms = utc_ms(year, month, day, int(hh), int(mm), int(ss))
    if ms is None:
        if int(hh) == 24:
            raise ValueError(f"hour 24 is only allowed as 24:00:00: {text!r}")
        raise ValueError(f"not a valid date-time: {text!r}")
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset_min = int(digits[:2]) * 60 + int(digits[2:])
        if offset_min > 14 * 60:
            raise ValueError(f"time zone offset out of range: {text!r}")
        ms -= sign * offset_min * 60_000
    if frac:
        ms += int((frac + "00")[:3])
    return ms


def parse_ts(text: str) -> int:
    """A `ts` cell: integer milliseconds or an ISO-8601 date-time. ValueError if neither."""
    text = text.strip()
    if _INT.fullmatch(text):
        return int(text)
    try:
        return parse_iso_ms(text)
    except ValueError:
        raise ValueError(f"bad timestamp {text!r}: expected integer milliseconds or an ISO-8601 "
                         "date-time such as 2024-01-01T00:00:00Z") from None


def literal_ms(term: str) -> int:
    """A timestamp literal (`"N"^^xsd:long`, `"..."^^xsd:dateTime`, or a plain one) -> ms."""
    lex, dt, lang = terms.split_literal(term)
    if lang is None and (dt is None or dt in _INTEGER_TYPES) and _INT.fullmatch(lex.strip()):
        return int(lex)
    if lang is None and dt in (None, terms.XSD_DATETIME, terms.XSD + "dateTimeStamp"):
        return parse_iso_ms(lex)
    raise ValueError(f"a timestamp must be an integer (ms) or an xsd:dateTime literal, found {term}")


def format_iso_ms(ms: int) -> str:
    """ms -> `YYYY-MM-DDTHH:MM:SS.mmmZ`, any year (exact: round-trips through parse_iso_ms)."""
    return utc_lexical(ms, fraction="ms")
