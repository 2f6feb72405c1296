"""How a run's elements arrived (spec §6.1): in rounds of batches, each batch from one stream. The
input layer (tefq.io.run_inputs) describes it, the oracle's lateness rule (tefq.oracle.late) reads it."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tefq.vocabulary import Element


@dataclass(frozen=True)
class Arrival:
    """How a run's elements arrived (spec §6.1): `rounds` in arrival order, each the batches that
    arrived together as (stream index, batch size) — the elements, in this order, are the run's
    `elements` list; `labels[i]`: stream i's name (IRI, path or URL) for `late_events_by_stream`.
    Bounded files arrive round-robin: round k holds the k-th file of each stream that has one (what
    Spark reads per micro-batch with one file per trigger and source); a stream whose last batch
    has arrived has ended."""

    rounds: tuple[tuple[tuple[int, int], ...], ...]
    labels: tuple[str, ...]

    @staticmethod
    def single(batch_sizes: Sequence[int], label: str = "") -> "Arrival":
        """One stream arriving in batches of `batch_sizes`."""
        return Arrival(tuple(((0, n),) for n in batch_sizes), (label,))

    def streams(self) -> list[int]:
        """The stream index of each element, in order."""
        return [s for batches in self.rounds for s, n in batches for _ in range(n)]

    def in_stream_order(self, elements: Sequence[Element]) -> list[Element]:
        """`elements` (in arrival order) stream by stream, each stream's in arrival order (elements
        beyond the rounds: stream 0's)."""
        streams = self.streams()
        return in_stream_order([(streams[i] if i < len(streams) else 0, e) for i, e in enumerate(elements)])

    def last_rounds(self) -> dict[int, int]:
        """Per stream, the round of its last batch (a stream with none has ended from the start)."""
        return {s: k for k, batches in enumerate(self.rounds) for s, _ in batches}


def in_stream_order(kept: list[tuple[int, Element]]) -> list[Element]:
    """(stream, element) pairs stream by stream, each in arrival order: a stable sort by t then
    applies them in (t, stream order, arrival) (spec §6.1)."""
    return [e for _, e in sorted(kept, key=lambda se: se[0])]
