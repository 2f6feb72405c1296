"""The names every layer of tefq shares: a stream element, the run's settings, time in milliseconds.

One home for them, so that a module needing "an element" or "the default tick bound" imports it
from here instead of defining its own copy (issue 22)."""
from __future__ import annotations

from dataclasses import dataclass

Element = tuple[int, str, str, str]
"""A stream element: (t in ms since the epoch, s, p, o as N-Triples terms), spec §1."""

Triple = tuple[str, str, str]
"""A triple (s, p, o) of N-Triples terms: a background triple, or an element without its time."""

DEFAULT_MAX_TICKS = 1_000_000
"""Ticks with rows one query may report before a run stops with exit 2 (`--max-ticks`; 0 = no bound)."""


DEFAULT_IDLE_MS = 10_000
"""A live input silent this long stops holding the event time back (`--idle-timeout`, spec §6.1)."""


@dataclass(frozen=True)
class RunSettings:
    """A run's settings, each in one unit (ms), settled once (`tefq.service.settle`) and handed down
    unopened to whatever evaluates the run: the oracle, the simulations, Spark's driver and each
    bucket's operator (never a global, never taken apart into loose arguments on the way)."""

    t0: int = 0  # the tick grid's origin (spec §4.1)
    lateness_ms: int = 0  # how far behind the event time an element may arrive (spec §6); 0: none
    max_ticks: int = DEFAULT_MAX_TICKS  # ticks with rows one query may report (0: no bound)
    idle_ms: int = DEFAULT_IDLE_MS  # a live input silent that long stops holding the event time (0: never)


TIME_MIN, TIME_MAX = -(1 << 61), (1 << 61) - 1
"""The instants tefq computes with, in ms: about 73 million years either side of 1970. Every
timestamp, `--t0` and `--at` lies within; a tick `t + d` past the last element, an open fact's end
(2^62 on Spark) and a period before the first tick then all fit in a signed 64-bit count of ms
(docs/semantics.md, "Time")."""

MAX_DURATION_MS = 1 << 60
"""The longest EVERY, window, lateness or tolerance, in ms (about 36 million years)."""


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a date of the proleptic Gregorian calendar (year 0 is 1 BCE, as in
    XSD 1.1); any year (H. Hinnant's algorithm)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a count of days since 1970-01-01: `days_from_civil` inverted."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, doy - (153 * mp + 2) // 5 + 1


def utc_ms(year: int, month: int, day: int, hour: int, minute: int, second: int) -> int | None:
    """ms since the epoch of a UTC date and time of any year; None if there is no such date or time
    (`24:00:00` is the next day's midnight, as in XSD)."""
    if not 1 <= month <= 12 or not 0 <= minute <= 59 or not 0 <= second <= 59:
        return None
    first = days_from_civil(year, month, 1)
    following = days_from_civil(year + (month == 12), month % 12 + 1, 1)
    if not 1 <= day <= following - first or not (0 <= hour <= 23 or (hour, minute, second) == (24, 0, 0)):
        return None
    return ((first + day - 1) * 86_400 + hour * 3600 + minute * 60 + second) * 1000


def utc_lexical(ms: int, *, fraction: str = "trimmed") -> str:
    """`YYYY-MM-DDTHH:MM:SS[.fff]Z` of ms since the epoch, UTC, for any year (at least 4 digits,
    `-` before a year below 0). `fraction`: "trimmed" (none for whole seconds, no trailing zeros)
    or "ms" (always 3 digits)."""
    days, rest = divmod(ms, 86_400_000)
    year, month, day = civil_from_days(days)
    secs, milli = divmod(rest, 1000)
    sign = "-" if year < 0 else ""
    text = f"{sign}{abs(year):04d}-{month:02d}-{day:02d}T{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
    if fraction == "ms":
        return f"{text}.{milli:03d}Z"
    return text + ("." + f"{milli:03d}".rstrip("0") if milli else "") + "Z"


def format_ms(ms: int) -> str:
    """`10000` -> `10s`, `60000` -> `1m`, `1500` -> `1500ms` (the shortest exact unit)."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


__all__ = ["Element", "Triple", "DEFAULT_MAX_TICKS", "DEFAULT_IDLE_MS", "RunSettings", "TIME_MIN", "TIME_MAX", "MAX_DURATION_MS",
           "days_from_civil", "civil_from_days", "utc_ms", "utc_lexical", "format_ms"]
