"""One plan's streaming query, wired: the projection and stateful operator its shape names
(tefq.spark.shapes), the one mapper between them (runtime/mappers.py), the buckets' shuffle and
the parquet sink (`build_plan`). Every plan, windowed ones included, runs through here."""
from __future__ import annotations

import itertools
import os
import tempfile
from dataclasses import dataclass
from functools import reduce
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from tefq.io.paths import path_in
from tefq.io.rdf import Background
from tefq.plan.logical import Document
from tefq.spark.operators.base import OUTPUT_SCHEMA, STATE_SCHEMA
from tefq.spark.protocol import HB_BAD, HB_ELEMENTS, HB_HI, RowKind
from tefq.spark.runtime.columnar import FileOrder
from tefq.spark.runtime.ingest import claim_ingest
from tefq.spark.runtime.listing import one_source
from tefq.spark.runtime.mappers import make_mapper, map_schema, mapper_maker, wire_schema
from tefq.spark.runtime.partitioning import by_bucket, checkpointed_labels, relabel
from tefq.spark.runtime.progress import ColumnarProgress, Progress
from tefq.spark.runtime.session import on_this_machine
from tefq.spark.runtime.shared_files import SharedFiles
from tefq.spark.runtime.sources import read_control, read_flush, read_paths, read_stream
from tefq.spark.shapes import shape_of
from tefq.vocabulary import RunSettings

_QUERY_NUMBERS = itertools.count(1)  # a streaming query's name is unique in its session, even across threads


@dataclass(frozen=True)
class RunOptions:
    """What every plan of one run shares, handed down to each plan's pipeline (never a global)."""

    settings: RunSettings = RunSettings()  # t0, lateness, max ticks, idle timeout (StreamSettings once the inputs are known)
    max_files_per_trigger: int | None = None
    bad_rows: str | None = None  # the --bad-rows directory; None: a bad row stops the run
    progress: bool = False
    background: Background | None = None  # read once for the run (its triples ship to the operators)
    join_order: str = "adaptive"  # windowed BGPs: static | adaptive (tefq.spark.kernels.windowed.join_order)
    facts: bool = False  # the fact operators also emit the fact table (tefq.spark.fact_output)
    accept_gaps: bool = False  # Redis sources read on after entries removed before they were read
    stream_iris: tuple[str | None, ...] = ()  # per input: the IRI --stream IRI=PATH bound it to (None: unnamed)
    scratch: str | None = None  # the run's temporary directory (direct ingestion's shared parts: runtime/shared_files.py)


SINK = "output"  # a query's parquet sink, under its directory of the run's work directory


def sink_dir(workdir: str, plan) -> str:
    """Where `build_plan` puts the plan's sink in `workdir` (its records are read back from there)."""
    return os.path.join(path_in(workdir, plan.query), SINK)


def map_rows(source: DataFrame, plan, run: RunOptions, ranks: dict[int, int] | None = None, *,
             observed: bool = False) -> DataFrame:
    """The plan's projection of `source` (rows of ts, s, p, o, file, fh, row) and its mapper.
    `ranks`: the files' stream order, for ties; `observed`: the progress lines' event time."""
    df = shape_of(plan).project(source, plan, run)
    if observed:
        df = df.observe("tefq_in", F.max("ts").alias("event_time"), F.count(F.lit(1)).alias("n"))
    return df.mapInArrow(make_mapper(bound(plan, run), run.bad_rows, ranks), map_schema(plan))


def bound(plan, run: RunOptions):
    """The plan with what its mapper and operator need of the run (a general plan: the background)."""
    return shape_of(plan).bind(plan, run)


def map_paths(spark: SparkSession, plan, stream_paths: list[str], ctl: str, run: RunOptions, ingest: str,
              func: Callable, follow: bool = False) -> tuple[DataFrame, Callable]:
    """Spark carries (path, flush) rows (runtime/columnar.py): to a map task that reads each file
    (columnar), or to every bucket, whose operator then reads them all (direct). Returns the
    mapped rows and the operator (direct: `func` fed by its own mapper). `follow`: files that
    arrive later are placed by arrival (runtime/columnar.FileOrder)."""
    plan = bound(plan, run)  # the mappers need what the plan needs of the run (a general plan: the background)
    inputs = stream_paths if follow or run.max_files_per_trigger else one_source(stream_paths)
    sources = [read_paths(spark, p, run.max_files_per_trigger) for p in inputs]
    paths = reduce(DataFrame.unionByName, sources + [read_flush(spark, ctl)])
    files = FileOrder.of(stream_paths, follow)
    if ingest == "direct":  # in Spark SQL, not a Python stage: an empty micro-batch 0.38-0.45 s, not 0.43-0.53 s
        mapped = paths.select("path", "flush", F.explode(F.sequence(F.lit(0), F.lit(plan.buckets - 1))).alias("b"))
        return mapped, reading_operator(func, plan, run.bad_rows, files, shared_root(spark, plan, run))
    mapped = paths.mapInArrow(make_mapper(plan, run.bad_rows, files=files), map_schema(plan))
    beat = F.col("k") == F.lit(int(RowKind.HEARTBEAT))  # events read = the heartbeats' counts (bucket 0's)
    return mapped.observe("tefq_in", F.max(F.when(beat, F.col(HB_HI))).alias("event_time"),
                          F.sum(F.when(beat & (F.col("b") == 0), F.col(HB_ELEMENTS) + F.col(HB_BAD))).alias("n")), func


def shared_root(spark: SparkSession, plan, run: RunOptions) -> str | None:
    """Where the buckets of a direct-ingestion plan share the coding of its files: a directory of
    the run's scratch when every task sees it (a local master) and there are buckets to share with."""
    if run.scratch is None or plan.buckets < 2 or not on_this_machine(spark):
        return None
    return tempfile.mkdtemp(prefix="parts-", dir=run.scratch)


def reading_operator(func: Callable, plan, bad_rows: str | None, files: FileOrder,
                     shared: str | None = None) -> Callable:
    """Direct ingestion: the operator `func` fed by its bucket's own mapper over the (path, flush)
    rows it receives — the wire rows the Exchange would deliver, made in the operator's process.
    `shared`: a directory through which the buckets code each file once (runtime/shared_files.py)."""
    import pyarrow as pa

    frames, mapper_of = shape_of(plan).frames, mapper_maker(plan, bad_rows, files=files)
    if shared is not None:
        mapper_of = SharedFiles(shared, plan.buckets, mapper_of, files, wire_schema(plan))

    def op(key, pdfs, state):
        mapper = mapper_of(int(key[0]))
        batches = (pa.RecordBatch.from_pandas(pdf[["path", "flush"]], preserve_index=False) for pdf in pdfs)
        return func(key, frames(mapper(batches)), state)

    return op


def sink_metric(name: str) -> "F.Column":
    """A metric summed over a micro-batch's metric records (the operators' `batch_metrics`)."""
    value = F.get_json_object(F.col("payload").cast("string"), f"$.{name}").cast("long")
    return F.sum(F.when(F.col("kind") == "metric", value))


def build_plan(spark: SparkSession, doc: Document, plan, stream_paths: list[str], workdir: str, run: RunOptions, *,
               ranks: dict[int, int] | None = None, operator: Callable | None = None, ingest: str = "rows",
               follow: bool = False):
    """The streaming query of one plan, not started: (start(**trigger), sink dir, control dir, progress).
    `ranks`: the stream order of the files (tefq.spark.runtime.ranks.file_ranks), for ties.
    `ingest`: "rows" (Spark reads the rows, the plan's projection matches them), "columnar" or
    "direct" (runtime/columnar.py; resolved by ingest.choose_ingest, recorded beside the checkpoint).
    `follow`: the query runs unbounded (files arriving later are tied by arrival).
    `operator(plan, run)`, if given, replaces the plan's stateful operator (the simulations use it)."""
    qdir = path_in(workdir, plan.query)  # a REGISTER QUERY name never escapes the checkpoint
    ctl, out, ck = (os.path.join(qdir, d) for d in ("control", SINK, "checkpoint"))
    os.makedirs(ctl, exist_ok=True)
    claim_ingest(qdir, ingest)
    func = operator(plan, run) if operator is not None else shape_of(plan).operator(doc, plan, run)
    if ingest == "rows":
        sources = [read_stream(spark, p, run.max_files_per_trigger) for p in stream_paths]
        mapped = map_rows(reduce(DataFrame.unionByName, sources + [read_control(spark, ctl)]), plan, run, ranks,
                          observed=True)
    else:
        mapped, func = map_paths(spark, plan, stream_paths, ctl, run, ingest, func, follow)
    # One bucket per shuffle partition (tefq.spark.runtime.partitioning): group by each bucket's label.
    labels = checkpointed_labels(qdir, ck, plan.buckets, int(spark.conf.get("spark.sql.shuffle.partitions")))
    result = relabel(mapped, labels).groupBy("b").applyInPandasWithState(
        by_bucket(func, labels), OUTPUT_SCHEMA, STATE_SCHEMA, "append", GroupStateTimeout.NoTimeout)
    result = result.observe("tefq_out", sink_metric("rows_out").alias("rows"),
                            sink_metric("partial_rows").alias("partial"), sink_metric("ticks").alias("ticks"),
                            sink_metric("ended").alias("ended"))
    if ingest == "direct":  # events read: bucket 0's count of its heartbeats (operators/base.see_time)
        events = sink_metric(shape_of(plan).events_metric)
        result = result.observe("tefq_in", F.max(F.when(F.col("kind") == "metric", F.col("tick"))).alias("event_time"),
                                (events + sink_metric("bad_rows")).alias("n"))
    pr = (ColumnarProgress if ingest != "rows" else Progress)(run.progress, plan.query)
    name = f"tefq_{plan.query}_{os.getpid()}_{next(_QUERY_NUMBERS)}"

    def start(**trigger):
        return (result.writeStream.format("parquet").option("path", out).option("checkpointLocation", ck)
                .outputMode("append").trigger(**trigger).queryName(name).start())

    return start, out, ctl, pr
