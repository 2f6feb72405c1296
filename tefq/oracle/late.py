"""Arrival order on the oracle: late events (`--lateness`, spec §6.1) and the row behind an absurd
time range.

Late events follow the Spark engine's rule (docs/spark.md, "Event time and ticks") with one stream
file per micro-batch and source: each stream has its own event time (the latest `t` read from it),
the run's event time is the minimum over the streams not yet ended; after each round of batches
every tick before `event time - lateness` is reported; an element of a later round at or before the
last reported tick is late (counted per stream, warned, not applied); the others are applied in
(t, stream order).
"""
from __future__ import annotations

from collections.abc import Sequence

from tefq.io.arrival import Arrival
from tefq.plan.ticks import tick_at_or_after, tick_at_or_before
from tefq.vocabulary import Element

MAX_WARNINGS = 20  # late-event warnings per query group (as on Spark)


class EventTime:
    """Per stream the largest `t` read (`T[s]`), which streams ended, and the run's event time:
    the minimum over the active streams' `T[s]` (None while an active stream has read nothing),
    the maximum over all once none is active (spec §6.1, rules 1-3; no idleness in a replay)."""

    def __init__(self, nstreams: int) -> None:
        self.latest: dict[int, int] = {}
        self.active = set(range(nstreams))

    def see(self, stream: int, times: Sequence[int]) -> None:
        if times:
            top = max(times)
            self.latest[stream] = max(self.latest.get(stream, top), top)

    def end(self, stream: int) -> None:
        self.active.discard(stream)

    def value(self) -> int | None:
        if not self.active:
            return max(self.latest.values()) if self.latest else None
        if any(s not in self.latest for s in self.active):
            return None
        return min(self.latest[s] for s in self.active)


def late_by_stream(arrived: Sequence[Element], arrival: Arrival, lateness_ms: int, every_ms: int,
                   t0: int) -> tuple[list[tuple[int, Element]], list[tuple[int, int, int]]]:
    """Round by round: an element at or before the last reported tick is late, every other is kept;
    then the streams' event times advance and the ticks up to `event time - lateness` are reported.
    Returns ((stream, element) kept, in arrival order; (ts, last reported tick, stream) of each late one)."""
    kept: list[tuple[int, Element]] = []
    late: list[tuple[int, int, int]] = []
    clock = EventTime(len(arrival.labels))
    ends = arrival.last_rounds()
    for s in set(range(len(arrival.labels))) - set(ends):
        clock.end(s)
    last: int | None = None
    first: int | None = None
    i = 0
    for k, batches in enumerate(arrival.rounds):
        for s, n in batches:
            batch, i = arrived[i:i + n], i + n
            for e in batch:
                if last is not None and e[0] <= last:
                    late.append((e[0], last, s))
                else:
                    kept.append((s, e))
            times = [e[0] for e in batch]  # the batch's event-time range counts its late rows too
            clock.see(s, times)
            if times:
                first = min(times) if first is None else min(first, min(times))
            if ends[s] == k:
                clock.end(s)
        now = clock.value()
        if now is None or first is None:
            continue
        start = tick_at_or_after(first, t0, every_ms) if last is None else last + every_ms
        upto = tick_at_or_before(now - lateness_ms - 1, t0, every_ms)
        if upto >= start:
            last = upto
    kept.extend((0, e) for e in arrived[i:])  # elements beyond the rounds given: never late
    return kept, late


def drop_late(arrived: Sequence[Element], batch_sizes: Sequence[int], lateness_ms: int, every_ms: int,
              t0: int) -> tuple[list[Element], list[tuple[int, int]]]:
    """One stream in batches of `batch_sizes`: (the elements applied, (ts, last reported tick) of
    each late one)."""
    kept, late = late_by_stream(arrived, Arrival.single(batch_sizes), lateness_ms, every_ms, t0)
    return [e for _, e in kept], [(ts, last) for ts, last, _ in late]


def outlier(times: Sequence[int]) -> tuple[int, str]:
    """The timestamp that stretches a sorted list of event times, and why: beside the largest gap,
    on the side with fewer events (a stray row at 0 or near 2^63); if no gap dominates, the last."""
    if len(times) < 2:
        return times[0], f"the only event is at {times[0]} ms"
    i = max(range(len(times) - 1), key=lambda j: times[j + 1] - times[j])
    gap, span = times[i + 1] - times[i], times[-1] - times[0]
    if 2 * gap < span:
        return times[-1], f"the events are spread over the whole range; the last is at {times[-1]} ms"
    before, after = i + 1, len(times) - i - 1
    if before <= after:
        return times[i], (f"the row at {times[i]} ms lies {gap:,} ms before the next event "
                          f"({before:,} event(s) before that gap, {after:,} after)")
    return times[i + 1], (f"the row at {times[i + 1]} ms lies {gap:,} ms after the previous event "
                          f"({before:,} event(s) before that gap, {after:,} after)")
