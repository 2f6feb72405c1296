"""The tick rule of spec §4.1, defined once: ticks are `t0 + k*d`; a run reports from the first
tick at or after its first event to the first tick at or after its last event. The oracle, the
simulations and the Spark operators all import it from here."""
from __future__ import annotations

import numpy as np


def tick_index_at_or_after(t: int, t0: int, every: int) -> int:
    """k of the first tick `t0 + k*every` at or after `t` (ceil((t - t0) / every))."""
    return -((t0 - t) // every)


def tick_at_or_after(t: int, t0: int, every: int) -> int:
    return t0 + tick_index_at_or_after(t, t0, every) * every


def tick_at_or_before(t: int, t0: int, every: int) -> int:
    return t0 + ((t - t0) // every) * every


def tick_range(first_t: int, last_t: int, t0: int, every: int) -> tuple[int, int]:
    """Indices k of the first and last ticks of a run whose events span [first_t, last_t]."""
    return tick_index_at_or_after(first_t, t0, every), tick_index_at_or_after(last_t, t0, every)


def run_ticks(first_t: int, last_t: int, t0: int, every: int) -> range:
    """The ticks of a run whose events span [first_t, last_t]."""
    k_first, k_last = tick_range(first_t, last_t, t0, every)
    return range(t0 + k_first * every, t0 + k_last * every + 1, every)


def tick_array(start: int, upto: int, every: int) -> np.ndarray:
    """The ticks `start, start + every, ...` up to `upto` (inclusive) as int64, counted in integers
    (np.arange counts its elements in doubles: near 2^61 ms it dropped the last tick)."""
    n = (upto - start) // every + 1 if upto >= start else 0
    return start + np.arange(n, dtype=np.int64) * np.int64(every)
