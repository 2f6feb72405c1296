"""The fact table's records on Spark (spec §12): a second output of the fact operator.

When asked for facts (`RunOptions.facts`), the fact operator emits each fact's intervals as they
close — one `facts` record per fact and micro-batch, numpy arrays: the identity term codes, start
and end — and the intervals still open at the end of a bounded input (end `OPEN`), with the
`code -> term` pairs they use (`output.terms_record`). The driver decodes them here into the
oracle's `FactStore`, from which `tefq.facts.table.store_rows` makes the table, so both engines
write it in one order and one format. The result collector (`output.Collector`) never sees them:
`runtime/sink.collect` leaves them out.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass, field

import numpy as np

from tefq.spark.kernels.intervals import OPEN
from tefq.spark.output import TERMS

FACTS = "facts"  # sink record kind: intervals of one fact (payload: npz of fact, codes, start, end)


def facts_record(fact: int, codes: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[str, int, bytes]:
    """Intervals of fact number `fact` (its place in the plan's facts) as one binary record; the
    tick is the last end among them that is closed (0: none is)."""
    buf = io.BytesIO()
    np.savez(buf, fact=np.array([fact], np.int64), codes=np.asarray(codes, np.int64),
             start=np.asarray(start, np.int64), end=np.asarray(end, np.int64))
    closed = end[end != OPEN]
    return FACTS, int(closed.max()) if len(closed) else 0, buf.getvalue()


def is_fact_record(kind: str) -> bool:
    return kind == FACTS


@dataclass
class FactCollector:
    """Gathers the `facts` and `terms` records of one plan's sink: per fact number its intervals,
    identities as term tuples (the plan's `names[i]` is fact number i's name)."""

    names: tuple[str, ...]
    parts: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = field(default_factory=dict)
    terms: dict[int, str] = field(default_factory=dict)

    def add(self, kind: str, tick: int, payload: bytes) -> None:
        if kind == FACTS:
            with np.load(io.BytesIO(payload)) as z:
                self.parts.setdefault(int(z["fact"][0]), []).append((z["codes"], z["start"], z["end"]))
        elif kind == TERMS:
            self.terms.update((int(k), v) for k, v in json.loads(payload))

    def intervals(self) -> dict[str, dict[tuple[str, ...], list[tuple[int, float]]]]:
        """Per fact name: identity terms -> its intervals sorted by start (an open end: +inf)."""
        out: dict[str, dict[tuple[str, ...], list[tuple[int, float]]]] = {n: {} for n in self.names}
        for i, parts in self.parts.items():
            table = out[self.names[i]]
            for codes, start, end in parts:
                for row, s, e in zip(codes.tolist(), start.tolist(), end.tolist()):
                    ident = tuple(self.terms[c] for c in row)
                    table.setdefault(ident, []).append((s, float("inf") if e == OPEN else e))
        for table in out.values():
            for ivs in table.values():
                ivs.sort()
        return out


__all__ = ["FACTS", "facts_record", "is_fact_record", "FactCollector"]
