"""Simulated-fact baselines (spec §7): run a TEF document the way C-SPARQL and EP-SPARQL must.

`run(doc, elements, "refresh" | "refresh-group" | "sequence", window_ms)` really executes the
simulated computation window by window (see `window.py`); its rows equal the native run's rows
with `EVERY window_ms`, and its metrics count the simulation's intermediate bindings.
"""
from __future__ import annotations

import time
from typing import Callable, Iterable

from tefq.errors import TefqError
from tefq.oracle import name_the_row
from tefq.oracle.query import TooManyTicks
from tefq.plan.logical import AggregateQuery, Document
from tefq.results import Metrics, RunResult
from tefq.simulate.matching import BackgroundIndex
from tefq.simulate.names import STRATEGIES
from tefq.simulate.native import NativeFacts
from tefq.simulate.refresh import RefreshPerFact
from tefq.simulate.refresh_group import RefreshPerGroup
from tefq.simulate.sequence import Sequence
from tefq.simulate.window import WindowedExecutor, check_supported, prepare
from tefq.vocabulary import Element


def _strategy(name: str, doc: Document, queries: list[AggregateQuery]):
    if name == "refresh":
        return RefreshPerFact()
    if name == "refresh-group":
        return RefreshPerGroup(doc, queries)
    if name == "sequence":
        return Sequence()
    if name == "tef":
        return NativeFacts()
    raise ValueError(name)


def run(doc: Document, elements: Iterable[Element], strategy: str, window_ms: int | None = None,
        background=None, t0: int = 0, *, max_ticks: int = 0,
        locate: Callable[[int], tuple[str, int]] | None = None) -> RunResult:
    """Run every aggregate query of `doc` under a simulation strategy.

    `window_ms` replaces each query's EVERY period (default: the query's own period). Queries that
    share a window share one simulated state. Windowed (C-SPARQL) queries are not simulated.
    More than `max_ticks` windows (0: no bound) stop the run first (TooManyTicks, the stray row
    named through `locate(ts) -> (file, line)`, as in `tefq.oracle.run`).
    """
    if strategy not in STRATEGIES:
        raise TefqError(f"unknown simulation '{strategy}' (expected one of {', '.join(STRATEGIES)})",
                        file="--simulate")
    elements = list(elements)
    try:
        return _run(doc, elements, strategy, window_ms, background, t0, max_ticks)
    except TooManyTicks as e:
        raise name_the_row(e, sorted(el[0] for el in elements), locate) from None


def run_native(doc: Document, elements: Iterable[Element], window_ms: int | None = None,
               background=None, t0: int = 0) -> RunResult:
    """TEF with native facts in the same windowed executor (the `tef` side of `tefq compare`)."""
    return _run(doc, elements, "tef", window_ms, background, t0, 0)


def _run(doc: Document, elements: Iterable[Element], strategy: str, window_ms: int | None,
         background, t0: int, max_ticks: int) -> RunResult:
    started = time.perf_counter()
    if window_ms is not None and window_ms <= 0:
        raise TefqError(f"--window must be a positive duration, got {window_ms} ms", file="--window")
    queries = [q for q in doc.queries if isinstance(q, AggregateQuery)]
    check_supported(doc, queries)
    bg = BackgroundIndex.of(background)
    events = prepare(elements)

    by_window: dict[int, list[AggregateQuery]] = {}
    for q in queries:
        by_window.setdefault(window_ms or q.every_ms, []).append(q)

    metrics = Metrics(events_in=len(events))
    results = {}
    extra: dict = {"strategy": strategy, "window_ms": window_ms}
    for i, (w, qs) in enumerate(by_window.items()):
        sim = _strategy(strategy, doc, qs)
        ex = WindowedExecutor(doc, qs, bg, sim, w)
        ex.run(events, t0, max_ticks)
        results.update(ex.results)  # rows are appended tick by tick, each tick's rows in order
        m = ex.metrics
        if i == 0:  # the facts are the same whatever the window
            metrics.facts_created, metrics.facts_closed = m.facts_created, m.facts_closed
            metrics.unmatched_until = m.unmatched_until
        metrics.ticks += m.ticks
        metrics.intermediate_bindings += m.facts_created if strategy == "tef" else sim.bindings
        if getattr(sim, "closed_bindings", 0):
            extra["closed_fact_bindings"] = extra.get("closed_fact_bindings", 0) + sim.closed_bindings
    ordered = [results[q.name] for q in queries]
    metrics.rows_out = sum(len(r.rows) for r in ordered)
    metrics.wall_seconds = round(time.perf_counter() - started, 3)
    metrics.extra = extra
    return RunResult(ordered, metrics)
