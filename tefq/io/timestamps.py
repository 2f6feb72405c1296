"""Application timestamps: integer milliseconds since the epoch, from integers or ISO-8601 text."""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from tefq import terms

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MS = timedelta(milliseconds=1)
_INT = re.compile(r"[+-]?[0-9]+")
# xsd:dateTime / ISO-8601 extended form; the fraction may have any number of digits.
_ISO = re.compile(r"(-?\d{4,}-\d{2}-\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})?")
_INTEGER_TYPES = {terms.XSD + t for t in (
    "integer", "long", "int", "short", "byte", "nonNegativeInteger", "positiveInteger",
    "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte", "nonPositiveInteger", "negativeInteger")}


def parse_iso_ms(text: str) -> int:
    """`2024-01-01T00:00:00.5Z` -> ms; no zone means UTC; sub-ms digits are truncated. ValueError."""
    m = _ISO.fullmatch(text.strip())
    if not m:
        raise ValueError(f"not an ISO-8601 date-time: {text!r}")
    date, hh, mm, ss, frac, zone = m.groups()
    hour = int(hh)
    extra_day = hour == 24  # xsd:dateTime allows 24:00:00 = midnight of the next day
    if extra_day:
        if (mm, ss) != ("00", "00") or (frac and frac.strip("0")):
            raise ValueError(f"hour 24 is only allowed as 24:00:00: {text!r}")
        hour = 0
    try:
        dt = datetime.fromisoformat(f"{date}T{hour:02d}:{mm}:{ss}")
    except ValueError as e:
        raise ValueError(f"not a valid date-time: {text!r} ({e})") from None
    if extra_day:
        dt += timedelta(days=1)
    offset = timedelta(0)
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset = sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        if abs(offset) > timedelta(hours=14):
            raise ValueError(f"time zone offset out of range: {text!r}")
    ms = (dt.replace(tzinfo=timezone.utc) - _EPOCH) // _MS - offset // _MS
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
    """ms -> `YYYY-MM-DDTHH:MM:SS.mmmZ` (exact: round-trips through parse_iso_ms)."""
    dt = _EPOCH + timedelta(milliseconds=ms)
    return f"{dt.year:04d}-{dt:%m-%dT%H:%M:%S}.{ms % 1000:03d}Z"  # %Y does not pad years < 1000
