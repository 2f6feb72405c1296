"""The Spark engine's own code without Spark, for differential tests: a bounded run over Parquet
stream files as the engine runs it with direct ingestion (`tefq.spark.engine.run_to_end`: the plans
of `plan_document`, `stream_settings`, each bucket's operator reading the micro-batch's files with
its own mapper, `reading_operator`), the records decoded by the driver's collectors. Only what
Spark itself does is played here: handing every bucket the micro-batch's (path, flush) rows, and
the state store (an object holding each bucket's state between calls)."""
from __future__ import annotations

import os
from dataclasses import replace

import pandas as pd

from tefq.io.rdf import as_background
from tefq.io.staging import files_in_stream_order
from tefq.results import QueryResult
from tefq.spark.runtime.columnar import FileOrder
from tefq.spark.runtime.inputs import pinned_inputs, stream_settings
from tefq.spark.runtime.pipelines import RunOptions, bound, reading_operator
from tefq.spark.shapes import collector_of, plan_document, shape_of
from tefq.vocabulary import RunSettings


class BucketState:
    """Spark's GroupState as the operators use it: `exists`, `get`, `update`."""

    def __init__(self) -> None:
        self.exists, self.get = False, None

    def update(self, value) -> None:
        self.exists, self.get = True, value


def micro_batches(streams: list[str], files_per_trigger: int | None) -> list[list[str]]:
    """Per micro-batch, the files every source takes (`maxFilesPerTrigger` files of each stream,
    in the file source's order, which is the streams' file order here)."""
    files = [files_in_stream_order([s]) for s in streams]
    if not files_per_trigger:
        return [[f for fs in files for f in fs]]
    rounds = max(-(-len(fs) // files_per_trigger) for fs in files)
    return [[f for fs in files for f in fs[k * files_per_trigger:(k + 1) * files_per_trigger]] for k in range(rounds)]


def run_local(doc, streams: list[str], background: str | None = None, *, buckets: int = 2, t0: int = 0,
              files_per_trigger: int | None = None, max_ticks: int = 0,
              lateness_ms: int = 0) -> tuple[list[QueryResult], list[dict]]:
    """Every query's results (document order) and each plan's metrics, over the Parquet stream
    paths `streams` (one per --stream), `files_per_trigger` files of each a micro-batch (None: one)."""
    run = RunOptions(RunSettings(t0, lateness_ms, max_ticks), files_per_trigger, None, False, as_background(background))
    inputs = pinned_inputs(streams, None, follow=False)
    run = replace(run, settings=stream_settings(inputs, run, follow=False))
    batches = micro_batches(streams, files_per_trigger)
    results: list[QueryResult] = []
    metrics: list[dict] = []
    for plan in plan_document(doc, buckets, background=background is not None):
        func = shape_of(plan).operator(doc, plan, run)
        op = reading_operator(func, bound(plan, run), None, FileOrder.of(inputs))
        states = [BucketState() for _ in range(plan.buckets)]
        collector = collector_of(plan)
        rounds = [[(f, False) for f in b] for b in batches]
        if files_per_trigger:
            rounds.append([(None, True)])  # the flush, once the data is read (engine.run_plan)
        else:
            rounds[-1].append((None, True))  # the flush rides in the data's micro-batch
        for rows in rounds:
            frame = pd.DataFrame({"path": ["file://" + os.path.abspath(p) if p else None for p, _ in rows],
                                  "flush": [flush for _, flush in rows]})
            for b, state in enumerate(states):
                for out in op((b,), iter([frame]), state):
                    for kind, tick, payload in out.itertuples(index=False):
                        collector.add(kind, tick, payload)
        results.extend(collector.results())
        metrics.append(collector.run_metrics())
    order = {q.name: i for i, q in enumerate(doc.queries)}
    return sorted(results, key=lambda r: order.get(r.name, len(order))), metrics
