"""Arrival order on the oracle: late events (`--lateness`) and the row behind an absurd time range.

Late events follow the Spark engine's rule (docs/spark.md, "Event time and ticks") with one stream
file per micro-batch: after each batch, every tick before `max event time - lateness` is reported;
an event of a later batch at or before the last reported tick is late (counted, warned, not
applied); events within the lateness are applied in time order.
"""
from __future__ import annotations

from collections.abc import Sequence

from tefq.plan.ticks import tick_at_or_after, tick_at_or_before
from tefq.vocabulary import Element

MAX_WARNINGS = 20  # late-event warnings per query group (as on Spark)


def drop_late(arrived: Sequence[Element], batch_sizes: Sequence[int], lateness_ms: int, every_ms: int,
              t0: int) -> tuple[list[Element], list[tuple[int, int]]]:
    """(the elements applied, (ts, last reported tick) of each late one), batch by batch."""
    kept: list[Element] = []
    late: list[tuple[int, int]] = []
    last: int | None = None
    gmin = gmax = None
    i = 0
    for n in batch_sizes:
        batch, i = arrived[i:i + n], i + n
        if not batch:
            continue
        for e in batch:
            if last is not None and e[0] <= last:
                late.append((e[0], last))
            else:
                kept.append(e)
        times = [e[0] for e in batch]  # the batch's event-time range counts its late rows too
        gmin = min(times) if gmin is None else min(gmin, min(times))
        gmax = max(times) if gmax is None else max(gmax, max(times))
        start = tick_at_or_after(gmin, t0, every_ms) if last is None else last + every_ms
        upto = tick_at_or_before(gmax - lateness_ms - 1, t0, every_ms)
        if upto >= start:
            last = upto
    kept.extend(arrived[i:])  # elements beyond the batches given: one last batch, never late
    return kept, late


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
