"""Windowed (C-SPARQL / RSP-QL, spec §8) queries: every windowed query of a document in one plan,
split by a join key or by its windows over the buckets (planning/windowed.py,
operators/windowed.py, kernels/windowed/). Bounded and `--follow` runs (each window reported once its
close has passed the run's event time); `tefq.spark.apply` refuses it (its capabilities)."""
from __future__ import annotations

from dataclasses import replace

from tefq.plan.logical import WindowedQuery
from tefq.results import Metrics, QueryResult
from tefq.spark.operators.base import coded_frames
from tefq.spark.operators.windowed import WINDOWED_EVENTS, make_windowed_operator
from tefq.spark.planning.windowed import WindowedPlan, plan_windowed, small_window
from tefq.spark.run_metrics import applied_events, late_by_index
from tefq.spark.runtime.normal_cells import NormalCells
from tefq.spark.runtime.routing import RowRouting
from tefq.spark.runtime.windowed_rows import WindowedRows
from tefq.spark.shapes.shape import Capabilities, Shape
from tefq.spark.windowed_output import WindowedCollector


def plan(doc, i: int, options, refused) -> WindowedPlan:
    """Every windowed query of the document (they run in one operator), whichever `i` asks."""
    return plan_windowed(doc, options.buckets, background=options.background)


def project(df, plan: WindowedPlan, run):
    from tefq.spark.runtime.columns import project_windowed  # deferred: planning and EXPLAIN import no pyspark

    return project_windowed(df, plan, run.settings.t0)


def add_windowed_metrics(m: dict, results: list[QueryResult], metrics: Metrics) -> None:
    """The run's metrics from the windowed pipeline's."""
    metrics.rows_out += sum(len(r.rows) for r in results)
    metrics.ticks += m.get("ticks", 0)  # windows evaluated, empty ones included (spec §8)
    metrics.intermediate_bindings += m.get("feedback_triples", 0)  # REGISTER STREAM feedback (spec §7)
    metrics.late_events += m.get("late_events", 0)
    if not metrics.events_in:
        metrics.events_in = applied_events(m)
        metrics.extra["duplicates"] = m.get("duplicates", 0)
    metrics.extra["bad_rows"] = metrics.extra.get("bad_rows", 0) + m.get("bad_rows", 0)
    metrics.extra.setdefault("micro_batches", m.get("micro_batches", []))
    metrics.extra.setdefault("ingest", m.get("ingest", "rows"))
    late = metrics.extra.setdefault("late_by_index", {})
    for i, n in late_by_index(m).items():
        late[i] = late.get(i, 0) + n
    if m.get("join_orders"):  # per micro-batch: the order each BGP ran in and the strategy that chose it
        metrics.extra["join_orders"] = m["join_orders"]


WINDOWED = Shape(
    "windowed", WindowedPlan, plan, project, WindowedRows,
    operator=lambda doc, plan, run: make_windowed_operator(
        doc, run.settings, small_window(), run.join_order, plan.slabs,
        run.background.triples if run.background is not None else ()),
    collector=lambda plan: WindowedCollector(plan.queries, plan.query_columns, plan.window_order),
    capabilities=Capabilities(
        columnar=lambda plan: True,
        dataframe="tefq.spark.apply does not run windowed (REGISTER QUERY) queries yet: use tefq run --engine spark "
                  "or Query.run"),
    query_type=WindowedQuery,
    routing=lambda plan, only: RowRouting(plan.buckets, only, windows=plan if plan.slabs is not None else None),
    cells=lambda plan: NormalCells(plan).fix,  # its cells decide buckets
    since=lambda plan: plan.t0,
    bind=lambda plan, run: replace(plan, t0=run.settings.t0),
    frames=coded_frames, events_metric=WINDOWED_EVENTS,
    query_names=lambda plan: plan.queries,
    run_metrics=add_windowed_metrics)
