"""The fact table of a document (spec §12): one row per maximal interval of every fact, event-driven
and derived, computed by the oracle's fact store (`tefq.oracle.facts`), which defines them.

A row is `fact` (the name, or the template text when the fact is unnamed), the identity terms (one
column per identity variable, named without `?`; facts without that variable leave it empty),
`start` and `end` in ms (`end` None while the fact is open at the end of the input).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tefq.io.readers import read_stream, read_table
from tefq.io.run_inputs import events_table, is_paths
from tefq.oracle import prepare
from tefq.oracle.facts import INF, FactStore, background_index, build_store
from tefq.plan.explain import pattern_text
from tefq.plan.logical import Document, Fact
from tefq.results import Cell, order_key, python_value
from tefq.service import stream_paths
from tefq.vocabulary import Element

if TYPE_CHECKING:
    import pyarrow as pa
    import pandas as pd


@dataclass(frozen=True)
class FactRow:
    fact: str
    identity: tuple[tuple[str, str], ...]  # (identity variable, N-Triples term), in template order
    start: int
    end: int | None  # None: still open

    def cell(self, column: str) -> Cell:
        return dict(self.identity).get(column)


@dataclass
class FactRows:
    """A fact table: identity `columns` (first appearance in document order) and its rows, ordered
    by fact (dependency order), then identity terms, then start."""

    columns: tuple[str, ...]
    rows: list[FactRow] = field(default_factory=list)

    def to_pandas(self) -> "pd.DataFrame":
        """`fact`, identity columns (Python values), `start` and `end` as datetime64[ms, UTC]
        (`end` NaT while open)."""
        return facts_frame(self)

    def to_arrow(self) -> "pa.Table":
        """As `tefq facts --format parquet`: identity terms as N-Triples strings, `start`/`end`
        timestamp[ms, UTC] (null while open)."""
        return arrow_facts(self)

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        facts = ", ".join(dict.fromkeys(r.fact for r in self.rows)) or "no fact"
        still = sum(1 for r in self.rows if r.end is None)
        return (f"<tefq FactRows: {len(self.rows):,} intervals of {facts} ({still:,} open); "
                f"identity columns {', '.join(self.columns)}>")

    def by_fact(self) -> dict[str, "FactRows"]:
        """One table per fact (for `--out DIR`), each with its own identity columns."""
        out: dict[str, FactRows] = {}
        for row in self.rows:
            part = out.setdefault(row.fact, FactRows(tuple(v for v, _ in row.identity)))
            part.rows.append(row)
        return out


def fact_label(doc: Document, fact: Fact) -> str:
    """The `fact` column: the fact's name, or its template when it has none (spec §12)."""
    return fact.name if fact.named else pattern_text(doc, fact.template)


def store_rows(doc: Document, store: FactStore) -> FactRows:
    """The rows of a fact store (the oracle's, or one read back from a stored table)."""
    columns = tuple(dict.fromkeys(v.name for f in doc.facts for v in f.identity))
    table = FactRows(columns)
    for fact in doc.facts:
        label = fact_label(doc, fact)
        names = tuple(v.name for v in fact.identity)
        intervals = store.tables[fact.name].intervals
        for ident in sorted(intervals, key=lambda i: tuple(order_key(c) for c in i)):
            for start, end in intervals[ident]:
                table.rows.append(FactRow(label, tuple(zip(names, ident)), int(start),
                                          None if end == INF else int(end)))
    return table


def fact_store(doc: Document, elements: Iterable[Element], background=None) -> FactStore:
    """The oracle's facts of `doc` over `elements` (any order; `background`: any form
    `tefq.io.rdf.background_as_ntriples` takes)."""
    return build_store(doc, prepare(elements), background_index(background))


def fact_table(doc: Document, elements: Iterable[Element], background=None) -> FactRows:
    """The fact table of spec §12 over the whole input, as the oracle defines it."""
    return store_rows(doc, fact_store(doc, elements, background))


def event_elements(events: Any) -> list[Element]:
    """Stream paths or in-memory events as elements; bad rows are TefqErrors naming them."""
    if is_paths(events):
        return [e for path in stream_paths(events) for e in read_stream(path)]
    return list(read_table(events_table(events), "events"))


__all__ = ["FactRow", "FactRows", "fact_label", "store_rows", "event_elements", "fact_store", "fact_table", "arrow_facts",
           "facts_frame"]


def arrow_facts(table: FactRows) -> "pa.Table":
    """The table as Arrow: identity terms as N-Triples strings, `start`/`end` timestamp[ms, UTC]."""
    import pyarrow as pa

    stamp = pa.timestamp("ms", tz="UTC")
    arrays = [pa.array([r.fact for r in table.rows], type=pa.string())]
    arrays += [pa.array([r.cell(c) for r in table.rows], type=pa.string()) for c in table.columns]
    arrays += [pa.array([r.start for r in table.rows], type=pa.int64()).cast(stamp),
               pa.array([r.end for r in table.rows], type=pa.int64()).cast(stamp)]
    return pa.Table.from_arrays(arrays, names=["fact", *table.columns, "start", "end"])


def facts_frame(table: FactRows) -> "pd.DataFrame":
    """`fact`, identity columns (Python values, as `python_value` gives cells), `start` and `end`
    as datetime64[ms, UTC] (`end` NaT while open), the tick type of `Result.to_pandas`."""
    import pandas as pd

    rows = [[r.fact, *(python_value(r.cell(c)) for c in table.columns)] for r in table.rows]
    frame = pd.DataFrame(rows, columns=["fact", *table.columns], dtype=object)
    for name in ("start", "end"):
        ms = pd.array([getattr(r, name) for r in table.rows], dtype="Int64")  # exact ms, <NA> while open
        frame[name] = pd.to_datetime(ms, unit="ms", utc=True).astype("datetime64[ms, UTC]")
    return frame
