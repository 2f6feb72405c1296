"""Durations as users write them: `10s`, `500ms`, `1m`, `1h`, `2d`, ISO 8601 `PT10S`, `P1D`,
`PT0.5S`, and the paper's `P10S` (read as 10 s with a warning). Result: integer milliseconds."""
from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from tefq.errors import TefqError, warn
from tefq.vocabulary import MAX_DURATION_MS

_UNIT_MS = {"ms": 1, "s": 1000, "sec": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_SHORT = re.compile(r"^(\d+(?:\.\d+)?)\s*(ms|sec|s|min|m|h|d)$", re.I)
_NUM = r"(\d+(?:\.\d+)?)"
_ISO = re.compile(rf"^P(?:{_NUM}W)?(?:{_NUM}D)?(?:T(?:{_NUM}H)?(?:{_NUM}M)?(?:{_NUM}S)?)?$", re.I)
_PAPER = re.compile(rf"^P{_NUM}([HS])$", re.I)  # `P10S`: the paper's spelling of PT10S
_CALENDAR = re.compile(rf"^P(?:{_NUM}Y)?(?:{_NUM}M)?", re.I)

HINT = "write e.g. 10s, 500ms, 1m, 1h, 2d or an ISO duration like PT10S, PT1M, P1D"


def _ms(amount: str, unit_ms: int, text: str, where: tuple[str | None, int, int]) -> int:
    try:
        value = Decimal(amount) * unit_ms
    except InvalidOperation:  # pragma: no cover - the regexes only pass numbers
        raise TefqError(f"bad duration '{text}': {HINT}", *where) from None
    if value != value.to_integral_value():
        raise TefqError(f"duration '{text}' is not a whole number of milliseconds", *where)
    return int(value)


def parse_duration(text: str, file: str | None = None, line: int = 0, column: int = 0) -> int:
    """Milliseconds in `text`; a bad duration (or one longer than `MAX_DURATION_MS`) is a TefqError
    located at (file, line, column)."""
    ms = _parse(text, (file, line, column))
    if ms > MAX_DURATION_MS:
        raise TefqError(f"duration '{text.strip()}' is longer than tefq's longest, 2^60 ms (about 36 million years): "
                        "ticks and windows would leave the 64-bit time range", file, line, column)
    return ms


def _parse(text: str, where: tuple[str | None, int, int]) -> int:
    file, line, column = where
    t = text.strip()
    if t == "0":
        return 0
    m = _SHORT.match(t)
    if m:
        return _ms(m.group(1), _UNIT_MS[m.group(2).lower()], t, where)
    m = _PAPER.match(t)
    if m:
        unit = m.group(2).upper()
        warn(f"duration '{t}' read as {m.group(1)} {'seconds' if unit == 'S' else 'hours'}; "
             f"the ISO 8601 form is 'PT{m.group(1)}{unit}'", file, line, column)
        return _ms(m.group(1), 1000 if unit == "S" else 3_600_000, t, where)
    m = _ISO.match(t)
    if m and any(m.groups()) and not t.upper().endswith("T"):
        weeks, days, hours, minutes, seconds = m.groups()
        total = 0
        for amount, unit_ms in ((weeks, 7 * 86_400_000), (days, 86_400_000), (hours, 3_600_000),
                                (minutes, 60_000), (seconds, 1000)):
            if amount:
                total += _ms(amount, unit_ms, t, where)
        return total
    c = _CALENDAR.match(t)
    if c and any(c.groups()):
        raise TefqError(f"duration '{t}' uses years or months, which have no fixed length"
                        f" (for minutes write PT{c.group(2) or '1'}M)", *where)
    raise TefqError(f"bad duration '{t}': {HINT}", *where)


def duration_ms(value: int | str | None, option: str) -> int:
    """A duration given as an option or argument (`--lateness 5s`, `lateness=5000`) in ms; None is
    0. A bad one is a TefqError naming the option."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TefqError(f"expected a duration (e.g. 5s) or milliseconds, got {type(value).__name__}",
                        file=option)
    if isinstance(value, int):
        if value < 0:
            raise TefqError(f"a duration cannot be negative, got {value}", file=option)
        value = str(value) + "ms"  # checked as any other duration
    try:
        return parse_duration(value)
    except TefqError as e:  # located at the option, not at a query position
        raise TefqError(e.message, file=option) from None
