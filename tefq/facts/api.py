"""The fact table from Python (`Query.facts(events)`, `Result.facts`): the events as `Query.run`
takes them (stream paths, a pandas DataFrame, a pyarrow Table, (ts, s, p, o) tuples), the table as
`FactRows` or a pandas DataFrame."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tefq.facts.table import FactRows, fact_table, facts_frame
from tefq.vocabulary import Element

if TYPE_CHECKING:
    from tefq.run import DocumentSource


def event_elements(events: Any) -> list[Element]:
    """Stream paths or in-memory events as elements; bad rows are TefqErrors naming them."""
    from tefq.io.readers import read_stream, read_table
    from tefq.io.staging import events_table, is_paths
    from tefq.run import stream_paths

    if is_paths(events):
        return [e for path in stream_paths(events) for e in read_stream(path)]
    return list(read_table(events_table(events), "events"))


def facts_of(query: "DocumentSource", events: Any, background: Any = None) -> FactRows:
    """The fact table of spec §12 (oracle) of `query`'s document over `events`."""
    from tefq.run import bind, read_background

    bg = read_background(background)
    doc = bind(query, bg)
    return fact_table(doc, event_elements(events), None if bg is None else bg.triples)


__all__ = ["event_elements", "facts_of", "facts_frame"]
