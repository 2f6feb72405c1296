"""The reference oracle: the definition of every TEF aggregate query (spec §3-§7).

`run(doc, elements, background, t0)` evaluates the document's `AggregateQuery`s over the whole
input sorted by (t, stream order). `WindowedQuery`s are left to `tefq.oracle.windowed.run`, which
the caller appends (see `tefq.api.run_oracle`). Decisions the spec leaves open: docs/semantics.md.
"""
from __future__ import annotations

import time
from typing import Iterable

from tefq.oracle.facts import TripleIndex, background_index, build_store
from tefq.oracle.query import QueryEvaluator
from tefq.plan.logical import AggregateQuery, Document
from tefq.results import Metrics, QueryResult, RunResult

Element = tuple[int, str, str, str]


def prepare(elements: Iterable[Element]) -> list[Element]:
    """Sorted stably by t; the same triple twice at the same t is one element (spec §1)."""
    seen: set[Element] = set()
    out: list[Element] = []
    for e in sorted(elements, key=lambda e: e[0]):
        if e not in seen:
            seen.add(e)
            out.append(e)
    return out


def run(doc: Document, elements: Iterable[Element], background=None, t0: int = 0) -> RunResult:
    started = time.perf_counter()
    events = prepare(elements)
    bg = background_index(background)
    store = build_store(doc, events, bg)
    event_times: dict[tuple[str, str, str], list[int]] = {}
    for t, s, p, o in events:
        event_times.setdefault((s, p, o), []).append(t)
    event_index = TripleIndex(event_times)
    metrics = Metrics(events_in=len(events))
    metrics.facts_created, metrics.facts_closed = store.counts()
    metrics.unmatched_until = store.unmatched_until
    metrics.intermediate_bindings = metrics.facts_created
    results: list[QueryResult] = []
    for q in doc.queries:
        if not isinstance(q, AggregateQuery):
            continue  # WindowedQuery: tefq.oracle.windowed
        if not events:
            results.append(QueryResult(q.name, tuple(p.name for p in q.select)))
            continue
        result, n_ticks = QueryEvaluator(q, store, event_index, event_times, bg).run(events[0][0], events[-1][0], t0)
        metrics.ticks += n_ticks
        metrics.rows_out += len(result.rows)
        results.append(result)
    metrics.wall_seconds = time.perf_counter() - started
    return RunResult(results, metrics)


__all__ = ["run", "prepare"]
