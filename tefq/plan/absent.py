"""A pattern whose predicate appears in no input and no background can never match (spec §4.2):
the run says so once per predicate, at the pattern, instead of answering nothing in silence (a
background pattern run without --background becomes an event pattern that matches nothing).
When the inputs hold no events at all, that is what the run says instead: every predicate is
missing then, and "did you forget --background?" would point the wrong way."""
from __future__ import annotations

import sys
from collections.abc import Collection, Sequence

from tefq.errors import warn
from tefq.plan.logical import Document


def absent_predicates(doc: Document, present: Collection[str]) -> list[str]:
    """The predicates of `doc.input_predicates` not in `present` (the inputs' predicates)."""
    return [p for p, _ in doc.input_predicates if p not in present]


def warn_absent(doc: Document, present: Collection[str]) -> list[str]:
    """Warn once per predicate no input holds, at its first pattern; returns them."""
    absent = absent_predicates(doc, present)
    spans = dict(doc.input_predicates)
    for p in absent:
        warn(f"predicate {p} appears in no input and no background: this pattern can never match "
             "(did you forget --background?)", doc.source, spans[p].line, spans[p].column)
    return absent


def warn_inputs(doc: Document, present: Collection[str], events: Sequence[tuple[str, int]]) -> list[str]:
    """`events`: each input's name and how many events it holds (both engines count them). No
    events in any input: one warning naming the inputs; else `warn_absent`. Returns the absent
    predicates (none are named when the inputs are empty)."""
    if events and not any(n for _, n in events):
        names = [name for name, _ in events]
        shown = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
        print(f"tefq: warning: {shown} {'hold' if len(names) > 1 else 'holds'} no events", file=sys.stderr)
        return []
    return warn_absent(doc, present)


def events_per_input(labels: Sequence[str], rounds: Sequence[Sequence[tuple[int, int]]]) -> list[tuple[str, int]]:
    """Each input's name and event count from how the oracle's elements arrived (`Arrival`)."""
    counts = [0] * len(labels)
    for batches in rounds:
        for stream, n in batches:
            counts[stream] += n
    return list(zip(labels, counts))


__all__ = ["absent_predicates", "events_per_input", "warn_absent", "warn_inputs"]
