"""The reference oracle: the definition of every query of a document (spec §3-§8).

`run_document(doc, elements, background, ...)` is the whole-document entry every front door uses
(through tefq.service): the document's TEF aggregate queries (`run`, over the whole input sorted by
(t, stream order)) and its windowed REGISTER queries (`tefq.oracle.windowed.run`, spec §8),
results in document order, one set of metrics. Decisions the spec leaves open: docs/semantics.md
(late data: "Lateness"; absurd time ranges: "Ticks").
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Sequence

from tefq.io.arrival import Arrival, in_stream_order
from tefq.oracle.facts import TripleIndex, background_index, build_store
from tefq.oracle.late import MAX_WARNINGS, late_by_stream, outlier
from tefq.oracle.query import QueryEvaluator, TooManyTicks
from tefq.plan.logical import AggregateQuery, Document, WindowedQuery
from tefq.results import Metrics, QueryResult, RunResult
from tefq.vocabulary import DEFAULT_MAX_TICKS, Element, RunSettings


def prepare(elements: Iterable[Element]) -> list[Element]:
    """Sorted stably by t; the same triple twice at the same t is one element (spec §1)."""
    seen: set[Element] = set()
    out: list[Element] = []
    for e in sorted(elements, key=lambda e: e[0]):
        if e not in seen:
            seen.add(e)
            out.append(e)
    return out


def run_document(doc: Document, elements: Iterable[Element], background=None, *,
                 settings: RunSettings = RunSettings(), batch_sizes: Sequence[int] | None = None,
                 arrival: Arrival | None = None, locate: Callable[[int], tuple[str, int]] | None = None,
                 stream_iris: Sequence[str | None] = ()) -> RunResult:
    """Every query of `doc` over `elements` (in arrival order; `background`: any form
    `tefq.io.rdf.background_as_ntriples` takes), with the run's `settings`. Aggregate queries as
    `run` says; with `settings.lateness_ms` 0 every element applies (the definition), with a
    lateness an element at or before a tick already reported is late, as on Spark (arrival
    batches). Windowed queries report every window that closes, their windows counted as ticks and
    their REGISTER STREAM feedback triples as intermediate bindings (spec §7, §8). More ticks than
    `settings.max_ticks` stop the run (TooManyTicks naming the row, via `locate`).
    `stream_iris[i]`: the IRI input i is bound to (`--stream IRI=PATH`: windowed FROM STREAM <IRI>
    reads it, with the unnamed inputs), None or missing: unnamed."""
    arrived, t0 = list(elements), settings.t0
    result = run(doc, arrived, background, t0, max_ticks=settings.max_ticks, lateness_ms=settings.lateness_ms or None,
                 batch_sizes=batch_sizes, arrival=arrival, locate=locate)
    if any(isinstance(q, WindowedQuery) for q in doc.queries):
        streams = by_stream_iri(arrived, arrival, stream_iris)
        if arrival is not None:
            arrived = arrival.in_stream_order(arrived)
        _add_windowed(result, doc, arrived, streams, background, t0, settings.max_ticks, locate)
    return result


def by_stream_iri(arrived: list[Element], arrival: Arrival | None,
                  stream_iris: Sequence[str | None]) -> dict[str | None, list[Element]] | None:
    """The elements by the IRI their input is bound to (None: unnamed inputs), each in stream
    order; None when no input is bound to an IRI."""
    if not any(stream_iris) or arrival is None:
        return None
    indexes = arrival.streams()
    out: dict[str | None, list[Element]] = {None: []}
    for s, e in sorted(zip(indexes, arrived), key=lambda se: se[0]):
        out.setdefault(stream_iris[s] if s < len(stream_iris) else None, []).append(e)
    return out


def _add_windowed(result: RunResult, doc: Document, elements: list[Element],
                  streams: dict[str | None, list[Element]] | None, background, t0: int, max_ticks: int,
                  locate: Callable[[int], tuple[str, int]] | None) -> None:
    from tefq.oracle.windowed import (
        run as windowed_run,  # rdflib: imported only for windowed queries
    )

    try:  # every window closes, empty or not: the bound counts them all (spec §8)
        windowed = windowed_run(doc, elements if streams is None else streams, background, t0=t0,
                                max_ticks=max_ticks)
    except TooManyTicks as e:
        raise name_the_row(e, sorted(el[0] for el in elements if el[0] >= t0), locate) from None
    result.results.extend(windowed)
    if not any(isinstance(q, AggregateQuery) for q in doc.queries):
        # windowed queries only: an element before t0 lies in no window and is no element of the run
        # (docs/semantics.md), as Spark's windowed plan counts them
        result.metrics.events_in -= len({e for e in elements if e[0] < t0})
    result.metrics.ticks += windowed.ticks
    result.metrics.intermediate_bindings += windowed.intermediate_bindings
    order = {q.name: i for i, q in enumerate(doc.queries)}
    result.results.sort(key=lambda r: order.get(r.name, len(order)))


def run(doc: Document, elements: Iterable[Element], background=None, t0: int = 0, *,
        max_ticks: int = DEFAULT_MAX_TICKS, lateness_ms: int | None = None, batch_sizes: Sequence[int] | None = None,
        arrival: Arrival | None = None, locate: Callable[[int], tuple[str, int]] | None = None) -> RunResult:
    """`elements` in arrival order: as `arrival` says (streams and rounds, spec §6.1), else one
    stream in batches of `batch_sizes` (default: one batch). Without `lateness_ms` every element is
    applied; with it an element at or before a tick already reported is late, as on Spark: counted
    (per stream too), warned, not applied. Elements apply in (t, stream order, arrival).
    `locate(ts) -> (file, line)` names the row an absurd time range comes from."""
    started = time.perf_counter()
    arrived = list(elements)
    if arrival is None:
        arrival = Arrival.single(batch_sizes or [len(arrived)])
    bg = background_index(background)
    queries = [q for q in doc.queries if isinstance(q, AggregateQuery)]
    by_every: dict[int | None, list[AggregateQuery]] = {}
    for q in queries:  # late events depend on the ticks: queries of one EVERY see the same input
        by_every.setdefault(None if lateness_ms is None else q.every_ms, []).append(q)
    metrics: Metrics | None = None
    results: dict[str, QueryResult] = {}
    for every, group in by_every.items() or [(None, [])]:
        if every is None:
            applied, late = arrival.in_stream_order(arrived), []
        else:
            kept, late = late_by_stream(arrived, arrival, lateness_ms or 0, every, t0)
            applied = in_stream_order(kept)
        warn_late(late, group)
        m = _evaluate(doc, group, prepare(applied), bg, t0, max_ticks, locate, results)
        m.late_events = len(late)
        if metrics is None:  # as on Spark: the counts of the first query's input
            metrics = m
            metrics.extra["late_events_by_stream"] = late_counts(late, arrival.labels)
        else:
            metrics.ticks += m.ticks
            metrics.rows_out += m.rows_out
    assert metrics is not None
    metrics.wall_seconds = time.perf_counter() - started
    return RunResult([results[q.name] for q in queries], metrics)


def warn_late(late: list[tuple[int, int, int]], group: list[AggregateQuery]) -> None:
    for ts, last, _ in late[:MAX_WARNINGS]:
        print(f"warning: late event at {ts} ms ignored for queries {', '.join(q.name for q in group)}: "
              f"ticks up to {last} were already reported", file=sys.stderr)


def late_counts(late: list[tuple[int, int, int]], labels: Sequence[str]) -> dict[str, int]:
    """`late_events_by_stream`: every stream's label -> its late elements (0 included)."""
    counts = dict.fromkeys(labels, 0)
    for _, _, s in late:
        counts[labels[s]] += 1
    return counts


def _evaluate(doc: Document, queries: list[AggregateQuery], events: list[Element], bg: TripleIndex, t0: int,
              max_ticks: int, locate: Callable[[int], tuple[str, int]] | None,
              results: dict[str, QueryResult]) -> Metrics:
    store = build_store(doc, events, bg)
    event_times: dict[tuple[str, str, str], list[int]] = {}
    for t, s, p, o in events:
        event_times.setdefault((s, p, o), []).append(t)
    event_index = TripleIndex(event_times)
    metrics = Metrics(events_in=len(events))
    metrics.facts_created, metrics.facts_closed = store.counts()
    metrics.unmatched_until = store.unmatched_until
    metrics.intermediate_bindings = metrics.facts_created
    for q in queries:
        if not events:
            results[q.name] = QueryResult(q.name, tuple(p.name for p in q.select))
            continue
        try:
            result, n_ticks = QueryEvaluator(q, store, event_index, event_times, bg).run(
                events[0][0], events[-1][0], t0, max_ticks)
        except TooManyTicks as e:
            raise name_the_row(e, [ev[0] for ev in events], locate) from None
        metrics.ticks += n_ticks
        metrics.rows_out += len(result.rows)
        results[q.name] = result
    return metrics


def name_the_row(e: TooManyTicks, times: list[int], locate: Callable[[int], tuple[str, int]] | None) -> TooManyTicks:
    """Point the error at the row whose timestamp stretches the range (see `late.outlier`)."""
    ts, why = outlier(times)
    e.message += f"; {why}: is its timestamp right (0, -1, seconds instead of ms)? Else raise --max-ticks"
    if locate is not None:
        e.file, e.line = locate(ts)
        e.column = 1 if e.line else 0
    return e


__all__ = ["run_document", "run", "prepare", "name_the_row", "Arrival"]
