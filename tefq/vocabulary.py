"""The names every layer of tefq shares: a stream element, the run's limits, time in milliseconds.

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


@dataclass(frozen=True)
class RunLimits:
    """Bounds a run is given and hands down to whatever evaluates it (never a global)."""

    max_ticks: int = DEFAULT_MAX_TICKS  # 0: no bound


def format_ms(ms: int) -> str:
    """`10000` -> `10s`, `60000` -> `1m`, `1500` -> `1500ms` (the shortest exact unit)."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


__all__ = ["Element", "Triple", "DEFAULT_MAX_TICKS", "RunLimits", "format_ms"]
