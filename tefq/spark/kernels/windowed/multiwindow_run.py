"""A document's windowed queries over whole streams, many windows per vectorised pass: the windowed
oracle's `run()` (tefq.oracle.windowed.runner: same agenda, windows, R2S, feedback and rows),
evaluated by tefq.spark.kernels.windowed.multiwindow in rounds and batches (tefq.spark.kernels.windowed.window_batches)
instead of window by window.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from tefq.errors import TefqError
from tefq.oracle.windowed.query import from_windowed
from tefq.oracle.windowed.runner import WindowedResults, canonical_cell, report_instants, result_columns
from tefq.oracle.windowed.secret import DEFAULT, Semantics
from tefq.plan.logical import WindowedQuery
from tefq.results import QueryResult
from tefq.spark.kernels.windowed.multiwindow import MultiWindowEvaluator
from tefq.spark.kernels.windowed.window_batches import DEFAULT_BATCH_ROWS, Source, WindowBatches, element_table


class BatchedResults(WindowedResults):
    """`WindowedResults` plus the batching's own figures: `rounds`, `batches` (evaluator passes),
    `batch_log` (per batch: query, first and last window close, windows, seconds) and
    `join_orders` (per batch and BGP: the order and the strategy chosen)."""

    rounds: int = 0
    batches: int = 0
    batch_log: list
    join_orders: list


def _from_t0(df: pd.DataFrame, t0: int) -> pd.DataFrame:
    ts = df["ts"].to_numpy(np.int64)
    return df if not len(ts) or ts[0] >= t0 else df.iloc[np.searchsorted(ts, t0, "left"):].reset_index(drop=True)


def agenda(batches: WindowBatches, max_ticks: int) -> list[np.ndarray]:
    """Each query's report instants (sorted), as the oracle's run() enumerates them."""
    ext = [s.table for s in batches.streams.values() if len(s.table)]
    if not ext or not batches.queries:
        return [np.zeros(0, np.int64) for _ in batches.queries]
    first = min(int(t["ts"].iloc[0]) for t in ext)
    last = max(int(t["ts"].iloc[-1]) for t in ext)
    return [np.array(ins, dtype=np.int64) for ins in
            report_instants(batches.queries, first, last, batches.t0, batches.sem, max_ticks, batches.source_name)]


def run_batched(doc, elements, background: Sequence[tuple[str, str, str]] = (), t0: int = 0,
                semantics: Semantics | None = None, join_order: str = "adaptive",
                batch_rows: int = DEFAULT_BATCH_ROWS, max_ticks: int = 0,
                interval_s: float | None = None) -> BatchedResults:
    """Every WindowedQuery of `doc` over `elements` (a table or iterable of (ts, s, p, o), or a
    mapping IRI -> those, None for the default stream), as the oracle's `run()` answers them.
    `interval_s`: the trigger interval of the adaptive join order's decision maker (default: each
    query's STEP)."""
    sem = semantics or DEFAULT
    if sem.content_change or sem.periodic_ms or not sem.window_close:
        raise TefqError("tefq run reports at window close only; use `tefq oracle check` for the other "
                        "report policies", "--engine oracle")
    queries = [from_windowed(q) for q in doc.queries if isinstance(q, WindowedQuery)]
    evaluators = [MultiWindowEvaluator(q.sparql, doc.source, background, join_order=join_order,
                                       interval_s=interval_s or q.step_ms / 1000) for q in queries]
    batches = WindowBatches(queries, evaluators, t0, sem, batch_rows, doc.source)
    given = dict(elements) if isinstance(elements, Mapping) else {None: elements}
    batches.streams = {iri: Source(_from_t0(element_table(els), t0)) for iri, els in given.items()}
    batches.feeds = {q.name: Source(element_table([])) for q in queries if q.registers_stream}
    return _collect(batches, agenda(batches, max_ticks))


def _collect(batches: WindowBatches, instants: list[np.ndarray]) -> BatchedResults:
    out = BatchedResults()
    out.events_in = sum(len(s.table) for s in batches.streams.values())
    results = [QueryResult(q.name, result_columns(q), window_order=q.ordered) for q in batches.queries]
    previous: list[dict | None] = [None] * len(batches.queries)
    canonical = lru_cache(maxsize=1 << 16)(canonical_cell)
    for c, i, ans in batches.due(instants):
        out.ticks += 1
        if ans is None:  # an empty window under non-empty reporting
            continue
        rows, previous[i], fed = batches.r2s(c, i, ans, previous[i])
        out.feedback_triples += len(fed)
        results[i].rows.extend([(c, tuple(map(canonical, r))) for r in rows])
    out.rounds, out.batches, out.batch_log = batches.rounds_run, batches.batches, batches.batch_log
    out.join_orders = [{"query": q.name, **r.to_json()} for q, ev in zip(batches.queries, batches.evaluators)
                       for r in ev.orders.records]
    out.extend(results)
    return out


__all__ = ["run_batched", "agenda", "BatchedResults", "element_table", "DEFAULT_BATCH_ROWS"]
