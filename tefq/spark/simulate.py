"""Simulated-fact baselines on Spark (spec §7): `tefq run Q.tef --simulate S [--window W]`.

The same streaming pipeline as the native engine (projection, heartbeats, buckets by group key,
applyInPandasWithState, parquet sink), with a different stateful operator: the simulation operator
(`tefq.spark.operators.simulated`) replaces the current-aggregate one. Query shapes that operator
does not cover (UC3: derived facts, WHILE) run on one bucket with the oracle-side simulation
(`tefq.simulate`) per micro-batch — see `simulation_fallback`.
"""
from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import replace

from tefq.errors import TefqError
from tefq.io.bad_rows import BadRowLog
from tefq.plan.logical import AggregateQuery, Document
from tefq.results import Metrics, RunResult
from tefq.simulate.names import STRATEGIES
from tefq.spark.operators.fallback import make_fallback_operator, rdflib_triples
from tefq.spark.operators.simulated import make_simulation_operator
from tefq.spark.planning import CurrentAggregatePlan, FallbackPlan, plan_document
from tefq.vocabulary import DEFAULT_MAX_TICKS, RunLimits


def simulation_fallback(strategy: str, window_ms: int):
    """Other shapes (UC3): the oracle-side simulation (`tefq.simulate.run`) evaluates, on one bucket
    holding every element read, the windows that became final in each micro-batch. O(input) per
    micro-batch: correct, not scalable. Its bindings are those of the run at the flush."""
    def evaluate(doc: Document, elements, background, t0: int):
        from tefq.simulate import run as simulate_run

        return simulate_run(doc, elements, strategy, window_ms, background, t0)

    return evaluate


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
        if isinstance(p, CurrentAggregatePlan):
            head = (f"SimulatedFacts {strategy} on Spark (vectorised, per bucket): windows ({p.every_ms} ms) in order;"
                    f" each restores the facts from the carried {_FORM[strategy]}, applies its events, reports at"
                    " tau, carries on")
            body = replace(p, operator="SimulationOperator (replaces the fact operator)").explain()
        else:
            head = (f"SimulatedFacts {strategy} on Spark (single bucket, oracle-side simulation tefq.simulate per"
                    " micro-batch: not scalable)")
            body = (replace(p, evaluator="tefq.simulate runs the windows") if isinstance(p, FallbackPlan) else p).explain()
        out.append(head + "\n" + body)
    return "\n\n".join(out) + "\n"


_FORM = {"refresh": "refresh bindings (identity, start)", "refresh-group": "per-group packs",
         "sequence": "state-event sequence"}


def run(doc: Document, stream_paths: list[str], strategy: str, window_ms: int | None = None, background=None, *,
        t0: int = 0,
        lateness_ms: int = 0, master: str | None = None, max_files_per_trigger: int | None = None,
        bad_rows: str | None = None, progress: bool = True, buckets: int | None = None, spark=None,
        max_ticks: int = DEFAULT_MAX_TICKS, bad_row_log: BadRowLog | None = None) -> RunResult:
    """Run every aggregate query of `doc` on Spark with facts simulated by `strategy`: the engine's
    driver loop (`tefq.spark.engine.run_bounded`) with the simulation operators. `bad_row_log`:
    the run's one log of bad rows (as `engine.run`'s)."""
    from tefq.io.staging import stage_streams
    from tefq.spark.engine import counted, run_bounded, warn_absent_predicates
    from tefq.spark.runtime.pipelines import RunOptions
    from tefq.spark.runtime.session import get_session

    started = time.time()
    check_simulation(doc, stream_paths, strategy, window_ms)
    log = bad_row_log if bad_row_log is not None else BadRowLog(bad_rows)
    spark = spark or get_session(master)
    nb = buckets or max(1, int(spark.conf.get("spark.sql.shuffle.partitions")))
    sim_doc, plans = plans_for(doc, window_ms, nb)
    plans = [p for p in plans if p.query in {q.name for q in sim_doc.queries if isinstance(q, AggregateQuery)}]
    opts = RunOptions(t0, lateness_ms, max_files_per_trigger, log.directory, progress, rdflib_triples(background),
                      RunLimits(max_ticks))  # as engine.run: the bucket loop bounds the windows it reports

    def operator(plan):
        if isinstance(plan, FallbackPlan):
            return make_fallback_operator(sim_doc, plan.query_index, plan.every_ms, t0, lateness_ms, opts.background,
                                          evaluate=simulation_fallback(strategy, plan.every_ms), limits=opts.limits)
        return make_simulation_operator(plan, strategy, t0, lateness_ms, opts.limits)

    workdir = tempfile.mkdtemp(prefix="tefq-spark-sim-")
    try:
        staging = stage_streams(stream_paths, workdir, log)
        warn_absent_predicates(doc, staging.paths)
        runs = run_bounded(spark, sim_doc, plans, staging, workdir, opts, operator=operator)
        results, metrics, paths = simulated_results(runs)
        metrics.extra["bad_rows"] = counted(log, metrics.extra.get("bad_rows", 0))
        metrics.wall_seconds = time.time() - started
        metrics.extra.update(engine="spark", strategy=strategy, window_ms=window_ms, spark_path=paths)
        return RunResult(results, metrics)
    finally:
        if bad_row_log is None:
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
    from tefq.simulate.window import check_supported

    check_supported(doc, [q for q in doc.queries if isinstance(q, AggregateQuery)])


def simulated_results(runs) -> tuple[list, Metrics, dict[str, str]]:
    """Every plan's results, the run's metrics and which path ran each query."""
    from tefq.spark.engine import fill_metrics

    results, metrics = [], Metrics()
    windows_seen: set[int] = set()
    paths: dict[str, str] = {}
    for i, (plan, qrs, m) in enumerate(runs):
        results.extend(qrs)
        paths[plan.query] = "vectorised" if isinstance(plan, CurrentAggregatePlan) else "oracle-simulation fallback"
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
