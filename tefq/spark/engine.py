"""Run a planned document on Spark Structured Streaming and collect its rows and metrics.

Pipeline per plan (`tefq.spark.runtime.pipelines`): file source ∪ control source -> Spark SQL
projection (clause matching, xxhash64 identity and group codes, bucket) -> mapInArrow (the one
mapper, runtime/mappers.py: keeps the rows the operator needs, ends each input partition with the
heartbeats and flush of `tefq.spark.protocol`) -> groupBy(bucket).applyInPandasWithState (the plan's
operator, `tefq.spark.operators`) -> parquet file sink, decoded by `runtime/sink.collect`. A bounded
input runs with availableNow; its end is a flush row in the control source, written before the run
when every file is read in one micro-batch (no --max-files-per-trigger), else after it (the query
then runs once more to report the last ticks). `run_bounded` is the one driver loop: every plan,
windowed (C-SPARQL) ones included, runs through it, for `run` and for the simulations
(`tefq.spark.simulate`, another operator factory).
"""
from __future__ import annotations

import shutil
import sys
import tempfile
import time
from dataclasses import replace
from typing import Callable, Iterator

from pyspark.sql import SparkSession

from tefq import cleanup
from tefq.errors import TefqError
from tefq.io.bad_rows import BadRowLog
from tefq.io.paths import path_in
from tefq.io.redis_stream import is_redis_url
from tefq.io.staging import Staging, predicates_present, stage_streams
from tefq.plan.absent import warn_absent
from tefq.plan.logical import Document, WindowedQuery
from tefq.results import Metrics, QueryResult, RunResult
from tefq.spark.operators.base import DEFAULT_IDLE_MS, StreamLimits
from tefq.spark.operators.fallback import rdflib_triples
from tefq.spark.planning import WindowedPlan, plan_document
from tefq.spark.runtime.checkpoint import mark_finished, resume
from tefq.spark.runtime.ingest import INGEST_CHOICES, choose_ingest, recorded_ingest
from tefq.spark.runtime.input_files import input_files, record_redis_ends
from tefq.spark.runtime.inputs import BATCH_EVENTS, files_per_trigger, pinned_inputs, stream_limits
from tefq.spark.runtime.listing import listed_inputs
from tefq.spark.runtime.pipelines import RunOptions, build_plan
from tefq.progress import plural
from tefq.spark.runtime.progress import ours, run_until_done, say
from tefq.spark.runtime.session import get_session
from tefq.spark.runtime.session_source import starting_line
from tefq.spark.runtime.sink import collect
from tefq.spark.runtime.ranks import file_ranks
from tefq.spark.runtime.sources import write_flush
from tefq.vocabulary import DEFAULT_MAX_TICKS


def run_plan(spark: SparkSession, doc: Document, plan, stream_paths: list[str], workdir: str, run: RunOptions, *,
             ranks: dict[int, int] | None = None, operator: Callable | None = None,
             sources: list[str] | None = None, ingest: str = "rows") -> tuple[list[QueryResult], dict, list[str]]:
    """A bounded run: every file available now, then a flush for the last ticks. `sources`: the
    user's stream paths, where an error found in Spark is located (default: `stream_paths`).
    `ingest`: columnar | direct | rows (runtime/ingest.choose_ingest)."""
    start, out, ctl, pr = build_plan(spark, doc, plan, stream_paths, workdir, run, ranks=ranks, operator=operator,
                                     ingest=ingest)
    one_batch = run.max_files_per_trigger is None  # the flush can ride in the data's micro-batch
    try:
        if one_batch:
            write_flush(ctl)
        run_until_done(start(availableNow=True), pr)
        if not one_batch:
            write_flush(ctl)
            run_until_done(start(availableNow=True), pr)
    except Exception as e:  # noqa: BLE001 - Spark wraps worker errors; find ours
        err = ours(e, plan.query, sources or stream_paths)
        if err is e:
            raise
        raise err from None
    collect_started = time.perf_counter()
    qrs, m, warns = collect(plan, out)
    m["collect_seconds"] = time.perf_counter() - collect_started
    m["micro_batches"] = pr.batches
    m["ingest"] = ingest
    return qrs, m, warns


def add_windowed_metrics(m: dict, results: list[QueryResult], metrics: Metrics) -> None:
    """The run's metrics from the windowed (C-SPARQL) pipeline's."""
    metrics.rows_out += sum(len(r.rows) for r in results)
    metrics.ticks += m.get("ticks", 0)  # windows evaluated, empty ones included (spec §8)
    metrics.intermediate_bindings += m.get("feedback_triples", 0)  # REGISTER STREAM feedback (spec §7)
    metrics.late_events += m.get("late_events", 0)
    if not metrics.events_in:
        metrics.events_in = m.get("events_in", 0)
    metrics.extra["bad_rows"] = metrics.extra.get("bad_rows", 0) + m.get("bad_rows", 0)
    metrics.extra.setdefault("micro_batches", m.get("micro_batches", []))
    metrics.extra.setdefault("ingest", m.get("ingest", "rows"))
    late = metrics.extra.setdefault("late_by_index", {})
    for i, n in late_by_index(m).items():
        late[i] = late.get(i, 0) + n
    if m.get("join_orders"):  # per micro-batch: the order each BGP ran in and the strategy that chose it
        metrics.extra["join_orders"] = m["join_orders"]


def run_bounded(spark: SparkSession, doc: Document, plans: list, staging: Staging, workdir: str, run: RunOptions, *,
                operator: Callable | None = None,
                ingest: str = "rows") -> Iterator[tuple[object, list[QueryResult], dict]]:
    """The one driver loop of a bounded run over staged streams (`tefq.io.staging.stage_streams`): run
    each plan to the end of its input, yield (plan, its results, its sink metrics).
    `operator(plan)` replaces the plans' stateful operators (the simulations pass theirs).
    `ingest`: auto | columnar | direct | rows (runtime/ingest.choose_ingest, per plan). Spark
    reads each file input in stream order (runtime/listing.py), as the per-stream limits count it."""
    paths = listed_inputs(spark, staging.paths, workdir)
    run = replace(run, limits=stream_limits(paths, run, follow=False))
    if operator is not None and ingest != "rows":
        raise TefqError(f"--ingest {ingest} does not run the simulations", file="--ingest")
    choices = {id(plan): choose_ingest(ingest, plan, paths, recorded_ingest(path_in(workdir, plan.query)))
               for plan in plans}  # auto keeps the path a restarted checkpoint was written by
    # the row path's tie order needs Spark's hashes of the file paths (one small job); columnar ranks by path
    ranks = file_ranks(spark, paths) if "rows" in choices.values() else {}
    say(run.progress, f"{plural(len(input_files(file_inputs(paths))), 'stream file')}, "
                      f"{plural(len(plans), 'query', 'queries')}")
    for plan in plans:
        say(run.progress, f"running {plan.query}")  # how it reads its input: tefq explain --physical
        qrs, m, warns = run_plan(spark, doc, plan, paths, workdir, run, ranks=ranks, operator=operator,
                                 sources=staging.sources, ingest=choices[id(plan)])
        for w in warns:
            print(f"warning: {w}", file=sys.stderr)
        yield plan, qrs, m


def run(doc: Document, stream_paths: list[str], background=None, *, t0: int = 0,
        lateness_ms: int = 0, master: str | None = None, checkpoint: str | None = None, follow: bool = False,
        max_files_per_trigger: int | None = None, bad_rows: str | None = None, progress: bool = True,
        max_ticks: int = DEFAULT_MAX_TICKS, buckets: int | None = None, spark: SparkSession | None = None,
        on_rows: Callable[[list[QueryResult]], None] | None = None,
        stop: Callable[[], bool] | None = None, ingest: str = "auto", idle_ms: int = DEFAULT_IDLE_MS,
        join_order: str = "adaptive", bad_row_log: BadRowLog | None = None, accept_gaps: bool = False,
        stream_iris: tuple[str | None, ...] = ()) -> RunResult:
    """Run every query of `doc` on Spark over the stream paths; the rows are the oracle's rows.

    `background`: a file path or an rdflib graph. `follow`: keep watching the stream directories
    (tefq.spark.runtime.follow): `on_rows` receives each micro-batch's new rows, the run ends when
    `stop()` turns true (default: on SIGINT/SIGTERM). `checkpoint`: a directory to resume from
    (refused with exit 2 when another state version wrote it, or when it holds a finished bounded
    run and new files arrived: tefq.spark.runtime.checkpoint). `max_ticks`: as the oracle's
    (0: no bound); a run over it stops with exit 2 naming the row. `ingest`: auto | columnar | direct | rows,
    how a bounded run reads Parquet inputs (tefq.spark.runtime.columnar; --follow reads rows).
    A stream path may be a Redis stream URL (`redis://HOST:PORT/KEY`): a bounded run reads it up
    to its head when the run starts. `idle_ms`: a live input silent that long stops holding the
    event time back (spec §6.1; 0: never). `bad_row_log`: the run's one log of bad rows (tefq.service
    passes its own; default: one for `bad_rows`, the --bad-rows directory). `accept_gaps`: a Redis
    stream that lost entries before they were read goes on (default: exit 2, naming them).
    `stream_iris[i]`: the IRI stream path i is bound to (`--stream IRI=PATH`; windowed FROM STREAM
    <IRI> reads it)."""
    started = time.time()
    check_run(doc, stream_paths, follow, ingest)
    log = bad_row_log if bad_row_log is not None else BadRowLog(bad_rows)
    lock = (resume(checkpoint, stream_paths, follow, doc, background=background, t0=t0,
                   lateness_ms=lateness_ms) if checkpoint is not None else None)
    tmp = None
    try:
        opts = RunOptions(t0, lateness_ms, max_files_per_trigger, log.directory, progress, rdflib_triples(background),
                          StreamLimits(max_ticks, idle_ms=idle_ms, stream_iris=tuple(stream_iris)), join_order,
                          accept_gaps=accept_gaps)
        if spark is None:
            say(progress, starting_line(master))
            spark = get_session(master)
        say(progress, "planning")
        plans = plan_document(doc, buckets or max(1, int(spark.conf.get("spark.sql.shuffle.partitions"))))
        tmp = cleanup.register(tempfile.mkdtemp(prefix="tefq-spark-")) if checkpoint is None else None
        workdir = tmp or checkpoint
        if follow:
            results, metrics = run_followed(spark, doc, plans, stream_paths, workdir, opts, on_rows, stop, log)
        else:
            results, metrics = run_to_end(spark, doc, plans, stream_paths, workdir, opts, ingest, log)
            if checkpoint is not None:
                mark_finished(checkpoint, file_inputs(stream_paths))
        metrics.extra["late_events_by_stream"] = late_by_label(metrics.extra.pop("late_by_index", {}), stream_paths)
        found_in_spark = metrics.extra.get("bad_rows", 0) + redis_bad_entries(stream_paths, log.directory)
        metrics.extra["bad_rows"] = counted(log, found_in_spark)
        return run_result(doc, results, metrics, started)
    finally:
        if bad_row_log is None:
            log.close()
        if lock is not None:
            lock.close()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
            cleanup.unregister(tmp)


def check_run(doc: Document, stream_paths: list[str], follow: bool, ingest: str) -> None:
    """Refuse (exit 2) what a run cannot do, before Spark starts."""
    if not stream_paths:
        raise TefqError("no --stream given")
    if follow and any(isinstance(q, WindowedQuery) for q in doc.queries):
        raise TefqError("--follow is not yet supported for windowed (REGISTER QUERY) queries on Spark; "
                        "run them bounded", file="--follow")
    refuse_colons(file_inputs(stream_paths))
    if ingest not in INGEST_CHOICES:
        raise TefqError(f"unknown --ingest {ingest!r}: expected auto, columnar, direct or rows",
                        file="--ingest")
    if follow and ingest in ("columnar", "direct"):
        raise TefqError(f"--ingest {ingest} is for bounded runs (--follow reads rows)", file="--ingest")
    if ingest in ("columnar", "direct") and len(file_inputs(stream_paths)) < len(stream_paths):
        raise TefqError(f"--ingest {ingest} reads Parquet files: a Redis stream is read as rows", file="--ingest")


def file_inputs(stream_paths: list[str]) -> list[str]:
    """The stream paths that are files or directories (not Redis streams)."""
    return [p for p in stream_paths if not is_redis_url(p)]


def late_by_label(by_index: dict[int, int], labels: list[str]) -> dict[str, int]:
    """`late_events_by_stream`: each input's label -> its late elements (0 included)."""
    out = dict.fromkeys(labels, 0)
    for i, n in by_index.items():
        if 0 <= i < len(labels):
            out[labels[i]] += n
    return out


def counted(log: BadRowLog, found_in_spark: int) -> int:
    """The run's bad rows, each counted once, in its one log: those staging recorded there, and
    those Spark's tasks and the Redis sources recorded in the same --bad-rows directory."""
    log.count += found_in_spark
    return log.count


def redis_bad_entries(stream_paths: list[str], bad_rows: str | None) -> int:
    """Bad entries the Redis sources recorded in --bad-rows (one file per entry range, written
    exactly once: `redis_source.partition_bad_rows`), counted by their lines."""
    import glob
    import os

    if bad_rows is None or len(file_inputs(stream_paths)) == len(stream_paths):
        return 0
    total = 0
    for f in glob.glob(os.path.join(bad_rows, "bad-redis-*.tsv")):
        with open(f, encoding="utf-8") as fh:
            total += sum(1 for line in fh if line.strip())
    return total


def run_to_end(spark: SparkSession, doc: Document, plans: list, stream_paths: list[str], workdir: str,
               run: RunOptions, ingest: str, log: BadRowLog) -> tuple[list[QueryResult], Metrics]:
    """A bounded run: the streams staged (bad rows to the run's `log`), every plan through `run_bounded`."""
    staging = stage_streams(stream_paths, workdir, log)
    warn_absent_predicates(doc, staging.paths)
    staging.paths = pinned_inputs(staging.paths, run.bad_rows, follow=False, accept_gaps=run.accept_gaps)
    record_redis_ends(workdir, staging.paths)  # a finished checkpoint refuses entries past these
    if run.max_files_per_trigger is None:  # memory follows the micro-batch, not the input
        run = replace(run, max_files_per_trigger=files_per_trigger(staging.paths))
        if run.max_files_per_trigger:
            say(run.progress, f"micro-batches of {plural(run.max_files_per_trigger, 'file')} per stream "
                              f"(about {BATCH_EVENTS:,} events; --max-files-per-trigger N to change)")
    if len(file_inputs(stream_paths)) < len(stream_paths):
        ingest = "rows"  # a Redis stream is read as rows (check_run refused columnar and direct)
    return bounded_results(run_bounded(spark, doc, plans, staging, workdir, run, ingest=ingest))


def warn_absent_predicates(doc: Document, paths: list[str]) -> None:
    """Warn about the patterns no input can match (tefq.plan.absent), from the staged files' p
    column (not for Redis streams: their content is not known before the run)."""
    wanted = [p for p, _ in doc.input_predicates]
    present = predicates_present(paths, wanted) if wanted else None
    if present is not None:
        warn_absent(doc, present)


def run_followed(spark: SparkSession, doc: Document, plans: list, stream_paths: list[str], workdir: str,
                 run: RunOptions, on_rows: Callable[[list[QueryResult]], None] | None,
                 stop: Callable[[], bool] | None, log: BadRowLog) -> tuple[list[QueryResult], Metrics]:
    """--follow: every plan unbounded until stopped (tefq.spark.runtime.follow)."""
    from tefq.spark.runtime.follow import follow_plans

    results, m = follow_plans(spark, doc, plans, stream_paths, workdir, run, on_rows=on_rows, stop=stop, log=log)
    metrics = fill_metrics(m, Metrics())
    metrics.rows_out = int(m.get("rows_out", 0))  # handed to on_rows, not kept
    return results, metrics


def run_result(doc: Document, results: list[QueryResult], metrics: Metrics, started: float) -> RunResult:
    """The results in document order, with the run's metrics."""
    metrics.intermediate_bindings += metrics.facts_created
    order = {q.name: i for i, q in enumerate(doc.queries)}
    results.sort(key=lambda r: order.get(r.name, len(order)))
    metrics.wall_seconds = time.time() - started
    metrics.extra["engine"] = "spark"
    return RunResult(results, metrics)


def refuse_colons(stream_paths: list[str]) -> None:
    """Hadoop paths cannot hold a ':' in a file name (Spark fails to read it): exit 2, not exit 1."""
    for f in input_files(stream_paths):
        if ":" in f:
            raise TefqError("Spark's file source cannot read a path with ':' in a file or directory name "
                            "(a Hadoop limit): rename it, or use --engine oracle", f)


def bounded_results(runs: Iterator[tuple[object, list[QueryResult], dict]]) -> tuple[list[QueryResult], Metrics]:
    """Every plan's results, and the run's metrics: those of the first fact query (every query reads
    the same input and the facts are shared), its `ticks` summed over the aggregate queries
    (docs/semantics.md, as the oracle counts them), plus the windowed pipeline's."""
    results, metrics, first = [], Metrics(), True
    for plan, qrs, m in runs:
        results.extend(qrs)
        if isinstance(plan, WindowedPlan):
            add_windowed_metrics(m, qrs, metrics)
            continue
        if first:
            fill_metrics(m, metrics)
            first = False
        else:
            metrics.ticks += int(m.get("ticks", 0))
        metrics.rows_out += sum(len(r.rows) for r in qrs)
    return results, metrics


def fill_metrics(m: dict, metrics: Metrics) -> Metrics:
    """The run's metrics (filled in) from the first fact query's sink metrics."""
    m["events_in"] = m.get("events_in", 0) - m.get("duplicates", 0)  # a stream is a set
    for k in ("events_in", "facts_created", "facts_closed", "unmatched_until", "late_events", "ticks"):
        setattr(metrics, k, int(m.get(k, 0)))
    metrics.extra["bad_rows"] = int(m.get("bad_rows", 0))
    metrics.extra["duplicates"] = int(m.get("duplicates", 0))  # equal elements at one time, applied once
    metrics.extra["micro_batches"] = m.get("micro_batches", [])
    if "state_by_batch" in m:  # a follow run's state size per micro-batch (runtime/follow.SinkTail)
        metrics.extra["state_by_batch"] = m["state_by_batch"]
    metrics.extra["collect_seconds"] = m.get("collect_seconds")
    metrics.extra["ingest"] = m.get("ingest", "rows")
    metrics.extra["state_bytes_per_open_fact"] = m.get("state_bytes_per_open_fact")
    metrics.extra["late_by_index"] = late_by_index(m)
    return metrics


def late_by_index(m: dict) -> dict[int, int]:
    """Late elements per input stream index, from a sink's `late_stream.<i>` metrics."""
    return {int(k.split(".", 1)[1]): int(v) for k, v in m.items() if k.startswith("late_stream.")}
