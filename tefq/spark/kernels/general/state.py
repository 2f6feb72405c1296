"""What one bucket keeps between batches — only what a later tick can still see — as numpy arrays.

- `pending`: elements after the last reported tick (not final yet; applied when a tick passes them);
- `open`: per fact, its intervals still open at the last reported tick (a closed interval is final,
  and no tick after the last one sees it through CURRENT or through a period: a period
  `(tau - d, tau]` of a later tick starts after the last tick);
- `closed`, `events`: under WHILE only, closed intervals and events that an open scope fact still
  overlaps (its later ticks count them);
- `unmatched`: elements after the last reported tick that nothing matches, as (ts, order, element
  hash) — kept only so that a repeat of one counts as a duplicate (a stream is a set);
- the term dictionary of the codes above; counters.
It is saved and restored as its fields (runtime/codec).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tefq.plan.logical import Fact
from tefq.spark.kernels.general.coding import Elements, TermDictionary
from tefq.spark.kernels.general.facts import empty_open
from tefq.spark.kernels.intervals import Intervals
from tefq.spark.kernels.joins import Relation

COUNTERS = ("late_events", "unmatched_until", "duplicates")


@dataclass
class GeneralState:
    last_tick: int | None
    pending: Elements
    events: Elements
    open: dict[str, Intervals | Relation]
    closed: dict[str, Relation]
    dictionary: TermDictionary = field(default_factory=TermDictionary)
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    unmatched: Elements = field(default_factory=Elements.empty)  # spo: (element hash, 0, 0)

    @staticmethod
    def new(facts: tuple[Fact, ...]) -> "GeneralState":
        return GeneralState(None, Elements.empty(), Elements.empty(), {f.name: empty_open(f) for f in facts},
                            {f.name: Relation.empty(tuple(v.name for v in f.identity)) for f in facts})

    def codes(self) -> np.ndarray:
        """Every term code the state holds (what its dictionary must keep)."""
        parts = [self.pending.spo.ravel(), self.events.spo.ravel()]
        parts += [(iv.groups if isinstance(iv, Intervals) else iv.codes).ravel() for iv in self.open.values()]
        parts += [r.codes.ravel() for r in self.closed.values()]
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)

    def size(self) -> dict[str, int]:
        """Rows held, by kind (what a bucket reports as its state size)."""
        return {"pending": len(self.pending), "unmatched": len(self.unmatched), "events": len(self.events),
                "open_facts": sum(len(v) for v in self.open.values()),
                "closed_facts": sum(len(v) for v in self.closed.values()), "terms": len(self.dictionary)}
