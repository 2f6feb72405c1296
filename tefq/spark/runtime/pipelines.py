"""From plan type to pipeline: the projection, mapper and stateful operator of each plan (a table,
not an isinstance chain), and `build_plan`, which wires one plan's streaming query."""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import reduce
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from tefq.io.paths import path_in
from tefq.plan.logical import Document
from tefq.spark.operators.base import OUTPUT_SCHEMA, STATE_SCHEMA
from tefq.spark.operators.current import make_operator
from tefq.spark.operators.fact import make_fact_operator
from tefq.spark.operators.fallback import make_fallback_operator
from tefq.spark.planning import CurrentAggregatePlan, FactAggregatePlan, FallbackPlan
from tefq.spark.runtime import fact_rows
from tefq.spark.runtime.fact_buckets import routed_mapper
from tefq.spark.operators.base import RowKind
from tefq.spark.runtime.columnar import (ColumnarProgress, columnar_mapper, path_ranks, read_flush, read_paths,
                                         reading_operator)
from tefq.spark.runtime.ingest import claim_ingest
from tefq.spark.runtime.columns import project_all, project_current
from tefq.spark.runtime.mappers import FALLBACK_MAP_SCHEMA, current_map_schema, make_fallback_mapper, make_mapper
from tefq.spark.runtime.partitioning import by_bucket, checkpointed_labels
from tefq.spark.runtime.progress import Progress
from tefq.spark.runtime.sources import read_control, read_stream


@dataclass(frozen=True)
class Pipeline:
    """How one plan type runs: Spark SQL projection, mapper (with its output schema), operator."""

    project: Callable  # (DataFrame, plan) -> DataFrame
    mapper: Callable  # (plan, bad_rows, ranks) -> mapInArrow function
    schema: Callable  # plan -> the mapper's DDL schema
    operator: Callable  # (doc, plan, t0, lateness_ms, background) -> applyInPandasWithState function


PIPELINES: dict[type, Pipeline] = {
    CurrentAggregatePlan: Pipeline(
        project_current, make_mapper, current_map_schema,
        lambda doc, plan, t0, lateness, background: make_operator(plan, t0, lateness)),
    FactAggregatePlan: Pipeline(  # derived facts, fact patterns, WHILE
        fact_rows.project_facts, lambda plan, *a: routed_mapper(plan, fact_rows.make_fact_mapper(plan, *a)), fact_rows.map_schema,
        lambda doc, plan, t0, lateness, background: make_fact_operator(plan, t0, lateness)),
    FallbackPlan: Pipeline(
        lambda df, plan: project_all(df), lambda plan, bad_rows, ranks: make_fallback_mapper(bad_rows, ranks),
        lambda plan: FALLBACK_MAP_SCHEMA,
        lambda doc, plan, t0, lateness, background: make_fallback_operator(doc, plan.query_index, plan.every_ms, t0,
                                                                           lateness, background)),
}


def build_plan(spark: SparkSession, doc: Document, plan, stream_paths: list[str], workdir: str, *,
               t0: int, lateness_ms: int, max_files_per_trigger: int | None, bad_rows: str | None,
               progress: bool, background: list | None = None, ranks: dict[int, int] | None = None,
               operator=None, ingest: str = "rows"):
    """The streaming query of one plan, not started: (start(**trigger), sink dir, control dir, progress).
    `ranks`: the stream order of the files (tefq.spark.runtime.sources.file_ranks), for ties.
    `ingest`: "rows" (Spark reads the rows, runtime/columns.py projects them), "columnar" or
    "direct" (runtime/columnar.py; resolved by ingest.choose_ingest, recorded beside the checkpoint).
    `operator(plan)`, if given, replaces the plan's stateful operator (the simulations use it)."""
    qdir = path_in(workdir, plan.query)  # a REGISTER QUERY name never escapes the checkpoint
    ctl, out, ck = (os.path.join(qdir, d) for d in ("control", "output", "checkpoint"))
    os.makedirs(ctl, exist_ok=True)
    claim_ingest(qdir, ingest)
    pipe = PIPELINES[type(plan)]
    func = operator(plan) if operator is not None else pipe.operator(doc, plan, t0, lateness_ms, background)
    if ingest in ("columnar", "direct"):  # runtime/columnar.py: Spark carries (path, flush) rows
        sources = [read_paths(spark, p, max_files_per_trigger) for p in stream_paths]
        paths = reduce(DataFrame.unionByName, sources + [read_flush(spark, ctl)])
        path_order = path_ranks(stream_paths)
    if ingest == "direct":  # every bucket gets every path, its operator reads the files
        # in Spark SQL, not a Python stage: an empty micro-batch 0.38-0.45 s instead of 0.43-0.53 s
        mapped = paths.select("path", "flush", F.explode(F.sequence(F.lit(0), F.lit(plan.buckets - 1))).alias("b"))
        func = reading_operator(func, plan, bad_rows, path_order)
    elif ingest == "columnar":  # a map task reads each file, its rows go to their buckets
        mapped = paths.mapInArrow(columnar_mapper(plan, bad_rows, path_order), pipe.schema(plan))
        beat = F.col("k") == F.lit(int(RowKind.HEARTBEAT))  # events read = the heartbeats' counts (bucket 0's)
        mapped = mapped.observe("tefq_in", F.max(F.when(beat, F.col("o"))).alias("event_time"),
                                F.sum(F.when(beat & (F.col("b") == 0), F.col("f") + F.col("n"))).alias("n"))
    else:
        sources = [read_stream(spark, p, max_files_per_trigger) for p in stream_paths]
        sources.append(read_control(spark, ctl))
        df = pipe.project(reduce(DataFrame.unionByName, sources), plan).observe(
            "tefq_in", F.max("ts").alias("event_time"), F.count(F.lit(1)).alias("n"))
        mapped = df.mapInArrow(pipe.mapper(plan, bad_rows, ranks), pipe.schema(plan))
    # One bucket per shuffle partition (tefq.spark.runtime.partitioning): group by each bucket's label.
    labels = checkpointed_labels(qdir, ck, plan.buckets, int(spark.conf.get("spark.sql.shuffle.partitions")))
    mapped = mapped.withColumn("b", F.element_at(F.array(*[F.lit(v) for v in labels]), F.col("b") + 1))
    result = mapped.groupBy("b").applyInPandasWithState(
        by_bucket(func, labels), OUTPUT_SCHEMA, STATE_SCHEMA, "append", GroupStateTimeout.NoTimeout)

    def metric(name: str) -> "F.Column":  # summed over the micro-batch's metric records
        value = F.get_json_object(F.col("payload").cast("string"), f"$.{name}").cast("long")
        return F.sum(F.when(F.col("kind") == "metric", value))

    result = result.observe("tefq_out", metric("rows_out").alias("rows"), metric("partial_rows").alias("partial"),
                            metric("ticks").alias("ticks"))
    if ingest == "direct":  # events read: bucket 0's count of its heartbeats (operators/base.see_time)
        result = result.observe("tefq_in", F.max(F.when(F.col("kind") == "metric", F.col("tick"))).alias("event_time"),
                                (metric("events_in") + metric("bad_rows")).alias("n"))
    pr = (ColumnarProgress if ingest != "rows" else Progress)(progress, plan.query)

    def start(**trigger):
        return (result.writeStream.format("parquet").option("path", out).option("checkpointLocation", ck)
                .outputMode("append").trigger(**trigger).queryName(f"tefq_{plan.query}_{os.getpid()}").start())

    return start, out, ctl, pr
