"""The fact table's records on Spark (spec §12): a second output of the fact operator.

When asked for facts (`RunOptions.facts`), the fact operator emits each fact's intervals as they
close — one `facts` record per fact and micro-batch (`FactIntervals`: the identity term codes,
start and end) — and the intervals still open at the end of a bounded input (end `OPEN`), with the
`code -> term` pairs they use (`output.terms_record`). The driver decodes them here into the
oracle's `FactStore`, from which `tefq.facts.table.store_rows` makes the table, so both engines
write it in one order and one format. The result collector (`output.Collector`) never sees them:
`runtime/sink.collect` leaves them out.

In a live run (`--follow`) the operator also emits, at each batch of ticks it reports, the
snapshot of the intervals still open at the last of them: one `open_facts` record per bucket
(`open_facts_record`, an `OpenSnapshot`), which replaces that bucket's previous snapshot on the driver
(`FactCollector.open_snapshots`, `OpenFacts`): closed facts are appended as they close and the
open ones rewritten (`tefq.facts.live`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tefq.spark.kernels.intervals import OPEN
from tefq.spark.operators.base import StreamSettings
from tefq.spark.output import TERMS, data_record, read_record
from tefq.vocabulary import RunSettings

FACTS = "facts"  # sink record kind: intervals of one fact (a FactIntervals)
OPEN_FACTS = "open_facts"  # a bucket's facts open at its last reported tick (an OpenSnapshot)

Intervals = dict[str, dict[tuple[str, ...], list[tuple[int, float]]]]  # fact name -> identity -> (start, end)


@dataclass
class FactIntervals:
    """Intervals of fact number `fact` (its place in the plan's facts): per interval its identity
    term codes (a row of `codes`), start and end (`OPEN`: still open)."""

    fact: int
    codes: np.ndarray
    start: np.ndarray
    end: np.ndarray


@dataclass
class OpenSnapshot:
    """Bucket `bucket`'s open intervals at its last reported tick: per fact number, the identity
    codes and starts (no fact: an empty snapshot, which still replaces the previous one)."""

    bucket: int
    facts: dict[int, tuple[np.ndarray, np.ndarray]]


def facts_record(fact: int, codes: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[str, int, bytes]:
    """Intervals of fact number `fact` as one record; the tick is the last end among them that is
    closed (0: none is)."""
    closed = end[end != OPEN]
    return data_record(FACTS, int(closed.max()) if len(closed) else 0,
                       FactIntervals(int(fact), np.asarray(codes, np.int64), np.asarray(start, np.int64),
                                     np.asarray(end, np.int64)), FactIntervals)


def open_facts_record(bucket: int, upto: int,
                      parts: list[tuple[int, np.ndarray, np.ndarray]]) -> tuple[str, int, bytes]:
    """Bucket `bucket`'s snapshot at its last reported tick `upto`: per fact number `i` in
    `parts`, the identity codes and starts of its open intervals."""
    facts = {int(i): (np.asarray(codes, np.int64), np.asarray(start, np.int64)) for i, codes, start in parts}
    return data_record(OPEN_FACTS, upto, OpenSnapshot(int(bucket), facts), OpenSnapshot)


def is_fact_record(kind: str) -> bool:
    return kind in (FACTS, OPEN_FACTS)


def wants_open_snapshots(facts: bool, settings: RunSettings) -> bool:
    """Open snapshots are for a live run's fact table: facts asked for, and an input without an
    end (`StreamSettings.batches` None: `runtime/inputs.stream_settings` under --follow). A bounded
    run emits its open facts once, at the end."""
    return facts and isinstance(settings, StreamSettings) and any(n is None for n in settings.batches)


def _decoded(table: dict, codes: np.ndarray, start: np.ndarray, end: np.ndarray, terms: dict[int, str]) -> None:
    """Add intervals (identity codes, start, end) to `table`, identities as term tuples."""
    for row, s, e in zip(codes.tolist(), start.tolist(), end.tolist()):
        table.setdefault(tuple(terms[c] for c in row), []).append((s, float("inf") if e == OPEN else e))


@dataclass
class FactCollector:
    """Gathers the `facts` and `terms` records of one plan's sink: per fact number its intervals,
    identities as term tuples (the plan's `names[i]` is fact number i's name)."""

    names: tuple[str, ...]
    parts: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = field(default_factory=dict)
    terms: dict[int, str] = field(default_factory=dict)
    snapshots: dict[int, tuple[int, OpenSnapshot]] = field(default_factory=dict)  # bucket -> (tick, the latest)

    @classmethod
    def of(cls, plan) -> "FactCollector":
        """The collector of a plan holding the document's facts (`plan.facts`)."""
        return cls(tuple(f.name for f in plan.facts))

    def add(self, kind: str, tick: int, payload: bytes) -> None:
        if kind == FACTS:
            iv = read_record(kind, payload, FactIntervals)
            self.parts.setdefault(iv.fact, []).append((iv.codes, iv.start, iv.end))
        elif kind == OPEN_FACTS:
            snapshot = read_record(kind, payload, OpenSnapshot)
            if snapshot.bucket not in self.snapshots or self.snapshots[snapshot.bucket][0] <= tick:
                self.snapshots[snapshot.bucket] = (int(tick), snapshot)
        elif kind == TERMS:
            self.terms.update(read_record(kind, payload, dict[int, str]))

    def intervals(self) -> Intervals:
        """Per fact name: identity terms -> its intervals sorted by start (an open end: +inf)."""
        out: Intervals = {n: {} for n in self.names}
        for i, parts in self.parts.items():
            for codes, start, end in parts:
                _decoded(out[self.names[i]], codes, start, end, self.terms)
        return sorted_intervals(out)

    def open_snapshots(self) -> dict[int, Intervals]:
        """Per bucket that sent one, its latest snapshot of open facts, decoded (ends +inf)."""
        out: dict[int, Intervals] = {}
        for bucket, (_, snapshot) in self.snapshots.items():
            table: Intervals = {n: {} for n in self.names}
            for i, (codes, start) in snapshot.facts.items():
                _decoded(table[self.names[i]], codes, start, np.full(len(start), OPEN), self.terms)
            out[bucket] = table
        return out


def sorted_intervals(out: Intervals) -> Intervals:
    for table in out.values():
        for ivs in table.values():
            ivs.sort()
    return out


@dataclass
class OpenFacts:
    """The driver's view of the facts open in a live run: each bucket's latest snapshot, kept
    across micro-batches (a bucket that reported no tick since keeps its previous one)."""

    names: tuple[str, ...]
    by_bucket: dict[int, Intervals] = field(default_factory=dict)

    def update(self, facts: FactCollector) -> bool:
        """Take the snapshots `facts` gathered; True if there was one."""
        fresh = facts.open_snapshots()
        self.by_bucket.update(fresh)
        return bool(fresh)

    def intervals(self) -> Intervals:
        """Every bucket's open intervals together (a fact is emitted by one bucket only)."""
        out: Intervals = {n: {} for n in self.names}
        for table in self.by_bucket.values():
            for name, idents in table.items():
                for ident, ivs in idents.items():
                    out[name].setdefault(ident, []).extend(ivs)
        return sorted_intervals(out)


__all__ = ["FACTS", "OPEN_FACTS", "Intervals", "FactIntervals", "OpenSnapshot", "facts_record", "open_facts_record", "is_fact_record",
           "wants_open_snapshots", "FactCollector", "sorted_intervals", "OpenFacts"]
