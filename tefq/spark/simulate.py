"""Simulated-fact baselines on Spark (spec §7): `tefq run Q.tef --simulate S [--window W]`.

The same streaming pipeline as the native engine (projection, heartbeats, buckets by group key,
applyInPandasWithState, parquet sink), with a different stateful operator: the simulation operator
(`tefq.spark.operators.simulated`) replaces the current-aggregate one. Query shapes that operator
does not cover (UC3: derived facts, WHILE) run on one bucket with the oracle-side simulation
(`tefq.simulate`) per micro-batch — see `shapes/fallback.simulation_fallback`.
"""
from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from tefq.errors import TefqError
from tefq.io.bad_rows import BadRowLog
from tefq.plan.logical import AggregateQuery, Document
from tefq.results import Metrics, RunResult
from tefq.simulate.names import STRATEGIES
from tefq.simulate.window import check_supported
from tefq.spark.run_metrics import fill_metrics
from tefq.spark.shapes import plan_document, shape_of

if TYPE_CHECKING:
    from tefq.spark.engine import SparkRun


# ---------------------------------------------------------------- the driver
def plans_for(doc: Document, window_ms: int | None, buckets: int) -> tuple[Document, list]:
    """The document with every aggregate query's EVERY replaced by the window, and its Spark plans."""
    if window_ms is not None:
        doc = replace(doc, queries=tuple(replace(q, every_ms=window_ms) if isinstance(q, AggregateQuery) else q
                                         for q in doc.queries))
    return doc, plan_document(doc, buckets, fact_aggregates=False)


def explain_simulated(doc: Document, strategy: str, window_ms: int | None = None, buckets: int = 8) -> str:
    doc, plans = plans_for(doc, window_ms, buckets)
    out = []
    for p in plans:
        simulation = shape_of(p).simulation
        if simulation is not None:
            out.append(simulation.explain(p, strategy))
        else:  # a plan the simulations do not run (a windowed query beside them)
            out.append(f"SimulatedFacts {strategy} on Spark (single bucket, oracle-side simulation tefq.simulate per"
                       " micro-batch: not scalable)\n" + p.explain())
    return "\n\n".join(out) + "\n"


def run(request: "SparkRun", strategy: str, window_ms: int | None = None) -> RunResult:
    """Run every aggregate query of the request's document on Spark with facts simulated by
    `strategy`: the engine's driver loop (`tefq.spark.engine.run_bounded`) with the simulation
    operators (each plan's shape names its simulated operator)."""
    # deferred: `tefq explain --simulate` imports this module, and the engine brings pyspark (about 2 s)
    from tefq.io.staging import stage_streams
    from tefq.spark.engine import counted, run_bounded, warn_absent_predicates
    from tefq.spark.runtime.session import get_session

    started, r = time.time(), request
    check_simulation(r.doc, list(r.stream_paths), strategy, window_ms)
    log = r.bad_row_log if r.bad_row_log is not None else BadRowLog(r.bad_rows)
    spark = r.spark or get_session(r.master)
    sim_doc, plans = plans_for(r.doc, window_ms, r.buckets or max(1, int(spark.conf.get("spark.sql.shuffle.partitions"))))
    plans = [p for p in plans if p.query in {q.name for q in sim_doc.queries if isinstance(q, AggregateQuery)}]
    opts = r.options(log)  # as engine.run: the bucket loop bounds the windows it reports

    def operator(plan, run):  # `run`: opts with the inputs' StreamSettings (engine.run_bounded)
        return shape_of(plan).simulation.operator(sim_doc, plan, strategy, run)

    workdir = tempfile.mkdtemp(prefix="tefq-spark-sim-")
    try:
        staging = stage_streams(list(r.stream_paths), workdir, log)
        warn_absent_predicates(r.doc, staging.paths, r.stream_names)
        runs = run_bounded(spark, sim_doc, plans, staging, workdir, opts, operator=operator)
        results, metrics, paths = simulated_results(runs)
        metrics.extra["bad_rows"] = counted(log, metrics.extra.get("bad_rows", 0))
        metrics.wall_seconds = time.time() - started
        metrics.extra.update(engine="spark", strategy=strategy, window_ms=window_ms, spark_path=paths)
        return RunResult(results, metrics)
    finally:
        if r.bad_row_log is None:
            log.close()
        shutil.rmtree(workdir, ignore_errors=True)


def check_simulation(doc: Document, stream_paths: list[str], strategy: str, window_ms: int | None) -> None:
    if strategy not in STRATEGIES:
        raise TefqError(f"unknown simulation '{strategy}' (expected one of {', '.join(STRATEGIES)})", file="--simulate")
    if window_ms is not None and window_ms <= 0:
        raise TefqError(f"--window must be a positive duration, got {window_ms} ms", file="--window")
    if not stream_paths:
        raise TefqError("no --stream given")
    if not any(isinstance(q, AggregateQuery) for q in doc.queries):
        raise TefqError("--simulate needs an aggregate (TEF) query: windowed queries are not simulated",
                        file=doc.source)

    check_supported(doc, [q for q in doc.queries if isinstance(q, AggregateQuery)])


def simulated_results(runs) -> tuple[list, Metrics, dict[str, str]]:
    """Every plan's results, the run's metrics and which path ran each query."""
    results, metrics = [], Metrics()
    windows_seen: set[int] = set()
    paths: dict[str, str] = {}
    for i, (plan, qrs, m) in enumerate(runs):
        results.extend(qrs)
        paths[plan.query] = shape_of(plan).simulation.path
        if i == 0:
            fill_metrics(m, metrics)
            metrics.ticks = 0  # counted per window size below
        # Queries with the same window would share one simulated state (as in tefq.simulate): count it once.
        if plan.every_ms not in windows_seen:
            windows_seen.add(plan.every_ms)
            metrics.intermediate_bindings += int(m.get("intermediate_bindings", 0))
            metrics.ticks += int(m.get("ticks", 0))
        metrics.rows_out += sum(len(r.rows) for r in qrs)
    return results, metrics, paths
