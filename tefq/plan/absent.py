"""A pattern whose predicate appears in no input and no background can never match (spec §4.2):
the run says so once per predicate, at the pattern, instead of answering nothing in silence (a
background pattern run without --background becomes an event pattern that matches nothing)."""
from __future__ import annotations

from collections.abc import Collection

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


__all__ = ["absent_predicates", "warn_absent"]
