"""The fact table's records on Spark (spec §12): a second output of the fact operator.

When asked for facts (`RunOptions.facts`), the fact operator emits each fact's intervals as they
close — one `facts` record per fact and micro-batch, numpy arrays: the identity term codes, start
and end — and the intervals still open at the end of a bounded input (end `OPEN`), with the
`code -> term` pairs they use (`output.terms_record`). The driver decodes them here into the
oracle's `FactStore`, from which `tefq.facts.table.store_rows` makes the table, so both engines
write it in one order and one format. The result collector (`output.Collector`) never sees them:
`runtime/sink.collect` leaves them out.

In a live run (`--follow`) the operator also emits, at each batch of ticks it reports, the
snapshot of the intervals still open at the last of them: one `open_facts` record per bucket
(`open_facts_record`), which replaces that bucket's previous snapshot on the driver
(`FactCollector.open_snapshots`, `OpenFacts`): closed facts are appended as they close and the
open ones rewritten (`tefq.facts.live`).
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass, field

import numpy as np

from tefq.spark.kernels.intervals import OPEN
from tefq.spark.operators.base import StreamSettings
from tefq.spark.output import TERMS
from tefq.vocabulary import RunSettings

FACTS = "facts"  # sink record kind: intervals of one fact (payload: npz of fact, codes, start, end)
OPEN_FACTS = "open_facts"  # a bucket's facts open at its last reported tick (payload: npz, see below)

Intervals = dict[str, dict[tuple[str, ...], list[tuple[int, float]]]]  # fact name -> identity -> (start, end)


def facts_record(fact: int, codes: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[str, int, bytes]:
    """Intervals of fact number `fact` (its place in the plan's facts) as one binary record; the
    tick is the last end among them that is closed (0: none is)."""
    buf = io.BytesIO()
    np.savez(buf, fact=np.array([fact], np.int64), codes=np.asarray(codes, np.int64),
             start=np.asarray(start, np.int64), end=np.asarray(end, np.int64))
    closed = end[end != OPEN]
    return FACTS, int(closed.max()) if len(closed) else 0, buf.getvalue()


def open_facts_record(bucket: int, upto: int,
                      parts: list[tuple[int, np.ndarray, np.ndarray]]) -> tuple[str, int, bytes]:
    """Bucket `bucket`'s snapshot at its last reported tick `upto`: per fact number `i` in
    `parts`, the identity codes `c{i}` and starts `s{i}` of its open intervals (none: an empty
    snapshot, which still replaces the previous one)."""
    buf = io.BytesIO()
    arrays = {"bucket": np.array([bucket], np.int64), "facts": np.array([i for i, _, _ in parts], np.int64)}
    for i, codes, start in parts:
        arrays[f"c{i}"], arrays[f"s{i}"] = np.asarray(codes, np.int64), np.asarray(start, np.int64)
    np.savez(buf, **arrays)
    return OPEN_FACTS, int(upto), buf.getvalue()


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
    snapshots: dict[int, tuple[int, bytes]] = field(default_factory=dict)  # bucket -> (tick, payload): the latest

    @classmethod
    def of(cls, plan) -> "FactCollector":
        """The collector of a plan holding the document's facts (`plan.facts`)."""
        return cls(tuple(f.name for f in plan.facts))

    def add(self, kind: str, tick: int, payload: bytes) -> None:
        if kind == FACTS:
            with np.load(io.BytesIO(payload)) as z:
                self.parts.setdefault(int(z["fact"][0]), []).append((z["codes"], z["start"], z["end"]))
        elif kind == OPEN_FACTS:
            with np.load(io.BytesIO(payload)) as z:
                bucket = int(z["bucket"][0])
            if bucket not in self.snapshots or self.snapshots[bucket][0] <= tick:
                self.snapshots[bucket] = (int(tick), payload)
        elif kind == TERMS:
            self.terms.update((int(k), v) for k, v in json.loads(payload))

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
        for bucket, (_, payload) in self.snapshots.items():
            table: Intervals = {n: {} for n in self.names}
            with np.load(io.BytesIO(payload)) as z:
                for i in z["facts"].tolist():
                    start = z[f"s{i}"]
                    _decoded(table[self.names[i]], z[f"c{i}"], start, np.full(len(start), OPEN), self.terms)
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


__all__ = ["FACTS", "OPEN_FACTS", "Intervals", "facts_record", "open_facts_record", "is_fact_record",
           "wants_open_snapshots", "FactCollector", "sorted_intervals", "OpenFacts"]
