"""Queries as of given instants (spec §12, `--at T[,T...]`): each aggregate query reports only at
the instants, as if they were its ticks. Over a stream the facts come from replaying its events;
over a stored fact table (`--facts FILE`) they are read back and no event is replayed, so an event
pattern there is a bind error naming it."""
from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence

from tefq.errors import TefqError
from tefq.facts.reader import read_fact_store
from tefq.facts.spark import spark_fact_store
from tefq.facts.table import event_elements
from tefq.io.timestamps import format_iso_ms, parse_ts
from tefq.io.validate import RANGE_HINT, TS_MAX, TS_MIN
from tefq.oracle import prepare
from tefq.oracle.facts import (INF, FactStore, FactTable, TripleIndex, background_index, build_store, event_times,
                               store_metrics)
from tefq.oracle.query import QueryEvaluator
from tefq.plan.explain import pattern_text
from tefq.plan.logical import AggregateQuery, Document, WherePattern
from tefq.results import RunResult
from tefq.vocabulary import Element


def parse_instants(text: str, option: str = "--at") -> list[int]:
    """`T[,T...]`, each integer ms or an xsd:dateTime (ISO 8601; no zone is UTC)."""
    out: list[int] = []
    for part in text.split(","):
        try:
            out.append(parse_ts(part))
        except ValueError as e:
            raise TefqError(str(e), option) from None
        if not TS_MIN <= out[-1] <= TS_MAX:
            raise TefqError(f"{part.strip()} is {RANGE_HINT}", option)
    return out


def aggregate_queries(doc: Document) -> list[AggregateQuery]:
    """The queries `--at` reports; a windowed query has windows, not instants: refused."""
    for q in doc.queries:
        if not isinstance(q, AggregateQuery):
            raise TefqError(f"--at reports aggregate queries as of an instant; query {q.name} is windowed "
                            "(it reports when its windows close)", doc.source, q.span.line, q.span.column)
    return list(doc.queries)  # type: ignore[arg-type]


def event_patterns(doc: Document) -> Iterator[tuple[AggregateQuery, WherePattern]]:
    """The event patterns of the aggregate queries (matched against events, not facts)."""
    for q in aggregate_queries(doc):
        for wp in q.where + ((q.while_,) if q.while_ is not None else ()):
            if wp.kind == "event":
                yield q, wp


def check_fact_only(doc: Document) -> None:
    """Over a stored fact table only fact and background patterns can match: an event pattern is a
    bind error located at it."""
    for q, wp in event_patterns(doc):
        raise TefqError(f"query {q.name}: the event pattern '{pattern_text(doc, wp.pattern)}' cannot "
                        "match a stored fact table (--facts holds facts, not events): run it over "
                        "--stream", doc.source, wp.pattern.span.line, wp.pattern.span.column)


MAX_SPANS = 64  # more instants than this: one span from the first to the last (a coarser filter)


def visible_spans(doc: Document, instants: Sequence[int]) -> list[tuple[int | None, int | None]]:
    """Spans `(lo, hi)` such that every fact interval a query can see at an instant starts at or
    before `hi` and ends after `lo` for one of them: per instant `T`, `(T - d, T)` with the largest
    EVERY `d`; `(None, T)` when a WHILE scope may reach back to the start of a show."""
    queries = aggregate_queries(doc)
    if not instants or not queries:
        return []
    ts = sorted(set(instants))
    if any(q.while_ is not None for q in queries):
        return [(None, ts[-1])]
    d = max(q.every_ms for q in queries)
    if len(ts) > MAX_SPANS:
        return [(ts[0] - d, ts[-1])]
    return [(t - d, t) for t in ts]


def visible_text(doc: Document, instants: Sequence[int]) -> str:
    """What `visible_spans` keeps, in words (the summary line of `run --at --facts`)."""
    spans = visible_spans(doc, instants)
    if not spans:
        return "all of them"
    if spans == [(None, max(instants))]:  # a WHILE scope may reach back to the start of a show
        return f"those started by {format_iso_ms(max(instants))}"
    lo, hi = spans[0]
    if len(spans) == 1 and len(set(instants)) > 1:  # the coarse span of many instants
        return f"those valid between {format_iso_ms(lo)} and {format_iso_ms(hi)}"  # type: ignore[arg-type]
    d = f"{(hi - lo) / 1000:g} s"  # type: ignore[operator]
    when = format_iso_ms(hi) if len(spans) == 1 else "one of the instants"  # type: ignore[arg-type]
    return f"those valid in the {d} up to {when}"


def visible_store(store: FactStore, q: AggregateQuery, instants: Sequence[int]) -> FactStore:
    """`store` without the intervals `q` cannot see at any instant: a pattern matches an interval
    `[s, e)` at `T` only if `s <= T`, and (without WHILE) `T < e + d` (spec §4.2)."""
    ts = sorted(set(instants))
    reach = INF if q.while_ is not None else q.every_ms

    def seen(s: float, e: float) -> bool:
        i = bisect_left(ts, s)
        return i < len(ts) and ts[i] < e + reach

    tables = {}
    for name, table in store.tables.items():
        kept = FactTable(table.name, table.template, table.identity)
        for ident, ivs in table.intervals.items():
            mine = [iv for iv in ivs if seen(*iv)]
            if mine:
                kept.intervals[ident] = mine
        tables[name] = kept
    return FactStore(tables, store.unmatched_until)


def _evaluate(doc: Document, store: FactStore, events: list[Element], bg: TripleIndex,
              instants: Sequence[int], started: float) -> RunResult:
    times = event_times(events)
    event_index = TripleIndex(times)
    metrics = store_metrics(store, len(events))
    results = []
    for q in aggregate_queries(doc):
        result = QueryEvaluator(q, visible_store(store, q, instants), event_index, times, bg).rows_at(instants)
        metrics.ticks += len(set(instants))
        metrics.rows_out += len(result.rows)
        results.append(result)
    metrics.wall_seconds = time.perf_counter() - started
    return RunResult(results, metrics)


def as_of_stream(doc: Document, elements: Iterable[Element], instants: Sequence[int], background=None) -> RunResult:
    """The rows a run over `elements` would report at ticks `instants` (spec §12)."""
    started = time.perf_counter()
    aggregate_queries(doc)
    events = prepare(elements)
    bg = background_index(background)
    return _evaluate(doc, build_store(doc, events, bg), events, bg, instants, started)


def as_of_spark(doc: Document, stream_paths: list[str], instants: Sequence[int], background=None,
                **options) -> RunResult:
    """The same rows with the facts from Spark's fact table (`tefq.facts.spark`; `options`: its
    `spark_fact_store`'s), evaluated as over a stored table; the events are read only when a
    query has an event pattern."""
    started = time.perf_counter()
    aggregate_queries(doc)
    store, engine = spark_fact_store(doc, stream_paths, background, **options)
    events = prepare(event_elements(stream_paths)) if any(event_patterns(doc)) else []
    run = _evaluate(doc, store, events, background_index(background), instants, started)
    run.metrics.extra["engine"] = engine
    return run


def as_of_facts(doc: Document, facts_path: str, instants: Sequence[int], background=None) -> RunResult:
    """The same rows from a stored fact table, without events (spec §12)."""
    started = time.perf_counter()
    check_fact_only(doc)
    store = read_fact_store(facts_path, doc, visible_spans(doc, instants))
    return _evaluate(doc, store, [], background_index(background), instants, started)


__all__ = ["parse_instants", "aggregate_queries", "event_patterns", "check_fact_only", "visible_spans", "visible_text",
           "visible_store",
           "as_of_stream", "as_of_spark", "as_of_facts"]
