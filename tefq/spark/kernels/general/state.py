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
`to_arrays` / `from_arrays` give it as a flat dict of arrays (npz, or one Arrow table per bucket).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tefq.plan.logical import EventFact, Fact
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

    def to_arrays(self) -> dict[str, np.ndarray]:
        out = {"last_tick": np.array([-1 if self.last_tick is None else self.last_tick, self.last_tick is None],
                                     np.int64),
               "counters": np.array([self.counters[k] for k in COUNTERS], np.int64)}
        for name, el in (("pending", self.pending), ("events", self.events), ("unmatched", self.unmatched)):
            out.update({f"{name}.ts": el.ts, f"{name}.order": el.order, f"{name}.spo": el.spo})
        for name, iv in self.open.items():
            if isinstance(iv, Intervals):
                out.update({f"open.{name}.fid": iv.fid, f"open.{name}.start": iv.start,
                            f"open.{name}.end": iv.end, f"open.{name}.codes": iv.groups})
            else:
                out.update({f"open.{name}.start": iv.start, f"open.{name}.end": iv.end, f"open.{name}.codes": iv.codes})
        for name, r in self.closed.items():
            out.update({f"closed.{name}.start": r.start, f"closed.{name}.end": r.end, f"closed.{name}.codes": r.codes})
        out.update(self.dictionary.to_arrays("terms."))
        return out

    @staticmethod
    def from_arrays(a: dict[str, np.ndarray], facts: tuple[Fact, ...]) -> "GeneralState":
        last, none = a["last_tick"].tolist()
        st = GeneralState(None if none else last, _elements(a, "pending"), _elements(a, "events"), {}, {},
                          TermDictionary.from_arrays(a, "terms."), dict(zip(COUNTERS, a["counters"].tolist())),
                          _elements(a, "unmatched") if "unmatched.ts" in a else Elements.empty())
        for f in facts:
            ident = tuple(v.name for v in f.identity)
            p = f"open.{f.name}."
            if isinstance(f, EventFact):
                st.open[f.name] = Intervals(a[p + "fid"], a[p + "start"], a[p + "end"], a[p + "codes"])
            else:
                st.open[f.name] = Relation(ident, a[p + "codes"], a[p + "start"], a[p + "end"])
            c = f"closed.{f.name}."
            st.closed[f.name] = Relation(ident, a[c + "codes"], a[c + "start"], a[c + "end"])
        return st


def _elements(a: dict[str, np.ndarray], name: str) -> Elements:
    return Elements(a[f"{name}.ts"], a[f"{name}.order"], a[f"{name}.spo"].reshape(-1, 3))
