"""Run a planned document on Spark Structured Streaming and collect its rows and metrics.

Pipeline per plan (`tefq.spark.runtime.pipelines`): file source ∪ control source -> Spark SQL
projection (clause matching, xxhash64 identity and group codes, bucket) -> mapInArrow (the one
mapper, runtime/mappers.py: keeps the rows the operator needs, ends each input partition with the
heartbeats and flush of `tefq.spark.protocol`) -> groupBy(bucket).applyInPandasWithState (the plan's
operator, `tefq.spark.operators`) -> parquet file sink, decoded by `runtime/sink.collect`. A bounded
input runs with availableNow; its end is a flush row in the control source, written before the run
when every file is read in one micro-batch (no --max-files-per-trigger). Over several micro-batches
the operators end the input themselves in the last one (they know how many each input takes,
`StreamSettings.ended`) and say so in the query's observed metrics; only when some did not (a
restart that found nothing left to read) is the flush written after the run, which then runs once
more. `run_bounded` is the one driver loop: every plan, windowed (C-SPARQL) ones included, runs
through it, for `run` and for the simulations (`tefq.spark.simulate`, another operator factory).
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Iterator, Sequence

from pyspark import SparkContext
from pyspark.sql import SparkSession

from tefq import cleanup
from tefq.errors import TefqError, warn
from tefq.io.bad_rows import BadRowLog
from tefq.io.rdf import Background, as_background
from tefq.io.redis_stream import is_redis_url
from tefq.io.staging import Staging, events_in, predicates_present, stage_streams
from tefq.plan.absent import warn_inputs
from tefq.plan.logical import Document
from tefq.results import Metrics, QueryResult, RunResult
from tefq.spark.fact_output import FactCollector
from tefq.spark.planning.fact import plan_fact_table
from tefq.spark.run_metrics import fill_metrics
from tefq.spark.runtime.checkpoint import mark_finished, resume
from tefq.spark.runtime.ingest import INGEST_CHOICES, ingest_choices
from tefq.spark.runtime.input_files import input_files, record_redis_ends
from tefq.spark.runtime.follow import follow_plans
from tefq.spark.runtime.inputs import BATCH_EVENTS, files_per_trigger, pinned_inputs, stream_settings
from tefq.spark.runtime.listing import listed_inputs
from tefq.spark.runtime.pipelines import RunOptions, build_plan, sink_dir
from tefq.progress import plural
from tefq.spark.runtime.progress import ours, run_until_done, say
from tefq.spark.runtime.session import archive_note, get_session, on_this_machine, warm_workers_soon
from tefq.spark.runtime.session_source import SESSION_SOURCE, starting_line
from tefq.spark.runtime.sink import collect, collect_facts
from tefq.spark.runtime.ranks import row_path_ranks
from tefq.spark.runtime.sources import write_flush
from tefq.spark.shapes import follow_refusal, plan_document, shape_of
from tefq.vocabulary import RunSettings


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
        if not one_batch and not read_to_end(pr, plan):
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




def read_to_end(pr, plan) -> bool:
    """Every bucket's operator ended the input in this run (its last micro-batch was the last of
    every bounded input: `StreamSettings.ended`); else a flush row must follow, in one more
    micro-batch (a restart that found nothing left to read, an operator without the inputs' counts)."""
    return pr.ended >= plan.buckets


def run_bounded(spark: SparkSession, doc: Document, plans: list, staging: Staging, workdir: str, run: RunOptions, *,
                operator: Callable | None = None,
                ingest: str = "rows") -> Iterator[tuple[object, list[QueryResult], dict]]:
    """The one driver loop of a bounded run over staged streams (`tefq.io.staging.stage_streams`): run
    each plan to the end of its input, yield (plan, its results, its sink metrics).
    `operator(plan, run)` replaces the plans' stateful operators (the simulations pass theirs).
    `ingest`: auto | columnar | direct | rows (runtime/ingest.choose_ingest, per plan). Spark
    reads each file input in stream order (runtime/listing.py), as the per-stream limits count it."""
    paths = listed_inputs(spark, staging.paths, workdir)
    run = replace(run, settings=stream_settings(paths, run, follow=False))
    if operator is not None and ingest != "rows":
        raise TefqError(f"--ingest {ingest} does not run the simulations", file="--ingest")
    choices = ingest_choices(ingest, plans, paths, workdir)
    ranks = row_path_ranks(spark, paths, choices)
    say(run.progress, f"{plural(len(input_files(file_inputs(paths))), 'stream file')}, "
                      f"{plural(len(plans), 'query', 'queries')}")
    for plan in plans:
        say(run.progress, f"running {plan.query}")  # how it reads its input: tefq explain --physical
        qrs, m, warns = run_plan(spark, doc, plan, paths, workdir, run, ranks=ranks, operator=operator,
                                 sources=staging.sources, ingest=choices[id(plan)])
        for w in warns:
            print(f"warning: {w}", file=sys.stderr)
        yield plan, qrs, m


SETTINGS = tuple(f.name for f in fields(RunSettings))


@dataclass(frozen=True)
class SparkRun:
    """What a Spark run is asked (`run`). `settings`: the run's t0, lateness, tick bound and idle
    timeout (tefq.vocabulary.RunSettings), handed down unopened to the operators. `background`:
    read once (tefq.io.rdf.as_background). `follow`: keep watching the stream directories
    (tefq.spark.runtime.follow): `on_rows` receives each micro-batch's new rows, the run ends when
    `stop()` turns true (default: on SIGINT/SIGTERM). `checkpoint`: a directory to resume from
    (refused with exit 2 when another state version wrote it, or when it holds a finished bounded
    run and new files arrived: tefq.spark.runtime.checkpoint). `ingest`: auto | columnar | direct |
    rows, how a run reads its inputs (tefq.spark.runtime.columnar: Parquet files, or Redis streams alone).
    A stream path may be a Redis stream URL (`redis://HOST:PORT/KEY`): a bounded run reads it up to
    its head when the run starts. `bad_row_log`: the run's one log of bad rows (tefq.service passes
    its own; default: one for `bad_rows`, the --bad-rows directory). `accept_gaps`: a Redis stream
    that lost entries before they were read goes on (default: exit 2, naming them).
    `stream_iris[i]`: the IRI stream path i is bound to (`--stream IRI=PATH`; windowed FROM STREAM
    <IRI> reads it). `stream_names[i]`: how warnings name stream path i (the user's name of a
    staged input: `<stdin>`; default: the path)."""

    doc: Document
    stream_paths: tuple[str, ...]
    background: Background | None = None
    settings: RunSettings = RunSettings()
    master: str | None = None
    spark: SparkSession | None = None
    buckets: int | None = None  # default: the session's shuffle partitions
    checkpoint: str | None = None
    follow: bool = False
    on_rows: Callable[[list[QueryResult]], None] | None = None
    stop: Callable[[], bool] | None = None
    ingest: str = "auto"
    max_files_per_trigger: int | None = None
    join_order: str = "adaptive"
    bad_rows: str | None = None
    bad_row_log: BadRowLog | None = None
    progress: bool = True
    accept_gaps: bool = False
    stream_iris: tuple[str | None, ...] = ()
    stream_names: tuple[str, ...] = ()

    @staticmethod
    def of(doc: Document, stream_paths: list[str], background: Any = None, **options: Any) -> "SparkRun":
        """A request from keyword options, as `tefq.spark.run` takes them: t0, lateness_ms,
        max_ticks and idle_ms make its RunSettings; `background` (a file, an rdflib graph or a
        Background) is read here, once."""
        settings = RunSettings(**{k: options.pop(k) for k in SETTINGS if k in options})
        return SparkRun(doc, tuple(stream_paths), as_background(background), settings, **options)

    def options(self, log: BadRowLog) -> RunOptions:
        """What every plan of the run shares."""
        return RunOptions(self.settings, self.max_files_per_trigger, log.directory, self.progress, self.background,
                          self.join_order, accept_gaps=self.accept_gaps, stream_iris=tuple(self.stream_iris))


@dataclass(frozen=True)
class Prepared:
    """A run made ready (`prepared`): its session, work directory, shared options and bad-row log."""

    spark: SparkSession
    workdir: str
    options: RunOptions
    log: BadRowLog

    def buckets(self, request: SparkRun) -> int:
        return request.buckets or max(1, int(self.spark.conf.get("spark.sql.shuffle.partitions")))


@contextmanager
def prepared(r: SparkRun) -> Iterator[Prepared]:
    """What every Spark run does before and after its plans run: refuse what it cannot do (before
    Spark starts), open the checkpoint (or a temporary work directory), start or take the session,
    and at the end close the log and the checkpoint's lock and remove the temporary directory."""
    paths = list(r.stream_paths)
    check_run(r.doc, paths, r.follow, r.ingest)
    log = r.bad_row_log if r.bad_row_log is not None else BadRowLog(r.bad_rows)
    lock = (resume(r.checkpoint, paths, r.follow, r.doc, background=r.background, settings=r.settings)
            if r.checkpoint is not None else None)
    tmp = None
    try:
        spark = r.spark if r.spark is not None else started_session(r.master, r.progress)
        tmp = cleanup.register(tempfile.mkdtemp(prefix="tefq-spark-"))  # the work directory without a checkpoint
        yield Prepared(spark, r.checkpoint or tmp, replace(r.options(log), scratch=tmp), log)
    finally:
        if r.bad_row_log is None:
            log.close()
        if lock is not None:
            lock.close()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
            cleanup.unregister(tmp)


def run(request: SparkRun) -> RunResult:
    """Run every query of the request's document on Spark over its streams; the rows are the
    oracle's rows."""
    started, r, paths = time.time(), request, list(request.stream_paths)
    with prepared(r) as p:
        say(r.progress, "planning")
        plans = plan_document(r.doc, p.buckets(r), background=r.background is not None)
        if r.follow:
            results, metrics = run_followed(p.spark, r.doc, plans, paths, p.workdir, p.options, r.on_rows, r.stop,
                                            p.log, r.ingest)
        else:
            results, metrics = run_to_end(p.spark, r.doc, plans, paths, p.workdir, p.options, r.ingest, p.log,
                                          r.stream_names)
            if r.checkpoint is not None:
                mark_finished(r.checkpoint, file_inputs(paths))
        metrics.extra["late_events_by_stream"] = late_by_label(metrics.extra.pop("late_by_index", {}), paths)
        found_in_spark = metrics.extra.get("bad_rows", 0) + redis_bad_entries(paths, p.log.directory)
        metrics.extra["bad_rows"] = counted(p.log, found_in_spark)
        return run_result(r.doc, results, metrics, started)


def run_fact_table(request: SparkRun, every_ms: int,
                   on_facts: Callable[[FactCollector], None] | None = None) -> FactCollector | dict:
    """The fact table of the request's document on Spark (`planning.fact.plan_fact_table`, its
    intervals final every `every_ms` of event time), through the same preparation and drivers as
    `run`: bounded, the table's records decoded (a FactCollector); with `follow`, each poll's
    records handed to `on_facts` until stopped (returns the metrics). The caller checked that the
    fact operator runs the document's facts (a plan, not a refusal)."""
    r, paths = request, list(request.stream_paths)
    with prepared(r) as p:
        plan, table = plan_fact_table(r.doc, p.buckets(r), every_ms), replace(p.options, facts=True)
        if r.follow:
            return follow_plans(p.spark, r.doc, [plan], paths, p.workdir, table, on_rows=None, stop=r.stop,
                                log=p.log, on_facts=on_facts, ingest=r.ingest)[1]
        run_to_end(p.spark, r.doc, [plan], paths, p.workdir, table, r.ingest, p.log, r.stream_names)
        return collect_facts(plan, sink_dir(p.workdir, plan))


def started_session(master: str | None, progress: bool) -> SparkSession:
    """The run's session. One started here for it (a Python caller's first run: no session source,
    no session yet) starts its Python workers beside the run's planning, as a command line's
    early session does (docs/spark.md "Start-up")."""
    say(progress, starting_line(master))
    fresh = SESSION_SOURCE.get() is None and SparkContext._active_spark_context is None
    spark = get_session(master)
    note = None if getattr(SESSION_SOURCE.get(), "warm", False) else archive_note()  # a warm engine's runs: none
    if note is not None:
        say(progress, note)
    if fresh and on_this_machine(spark):
        warm_workers_soon(spark)
    return spark


def check_run(doc: Document, stream_paths: list[str], follow: bool, ingest: str) -> None:
    """Refuse (exit 2) what a run cannot do, before Spark starts."""
    if not stream_paths:
        raise TefqError("no --stream given")
    refusal = follow_refusal(doc) if follow else None
    if refusal is not None:
        raise TefqError(refusal, file="--follow")
    for path in file_inputs(stream_paths) if follow else ():
        if os.path.isfile(path):  # files arrive in a directory; a file that grows stops the run
            warn("--follow watches for new files, and a stream file is read once: nothing new will come from this "
                 "one (follow the directory new files arrive in)", path)
    refuse_colons(file_inputs(stream_paths))
    if ingest not in INGEST_CHOICES:
        raise TefqError(f"unknown --ingest {ingest!r}: expected auto, columnar, direct or rows",
                        file="--ingest")


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
               run: RunOptions, ingest: str, log: BadRowLog,
               names: Sequence[str] = ()) -> tuple[list[QueryResult], Metrics]:
    """A bounded run: the streams staged (bad rows to the run's `log`), every plan through
    `run_bounded`. `names`: the streams as warnings name them (default: their paths)."""
    staging = stage_streams(stream_paths, workdir, log)
    warn_absent_predicates(doc, staging.paths, names)
    staging.paths = pinned_inputs(staging.paths, run.bad_rows, follow=False, accept_gaps=run.accept_gaps)
    record_redis_ends(workdir, staging.paths)  # a finished checkpoint refuses entries past these
    if run.max_files_per_trigger is None:  # memory follows the micro-batch, not the input
        run = replace(run, max_files_per_trigger=files_per_trigger(staging.paths))
        if run.max_files_per_trigger:
            say(run.progress, f"micro-batches of {plural(run.max_files_per_trigger, 'file')} per stream "
                              f"(about {BATCH_EVENTS:,} events; --max-files-per-trigger N to change)")
    return bounded_results(run_bounded(spark, doc, plans, staging, workdir, run, ingest=ingest))


def warn_absent_predicates(doc: Document, paths: list[str], names: Sequence[str] = ()) -> None:
    """Warn about the patterns no input can match, or about inputs that hold no events at all
    (tefq.plan.absent, as the oracle does), from the staged files' p column and row counts (not
    for Redis streams: their content is not known before the run). `names[i]`: path i's name."""
    wanted = [p for p, _ in doc.input_predicates]
    present = predicates_present(paths, wanted)  # stops reading once every one is found
    if present is None or (wanted and present >= set(wanted)):  # nothing to say: no count needed
        return
    counts = events_in(paths) or []  # every file's footer: read only when a warning is due
    warn_inputs(doc, present, list(zip(list(names) or paths, counts)))


def run_followed(spark: SparkSession, doc: Document, plans: list, stream_paths: list[str], workdir: str,
                 run: RunOptions, on_rows: Callable[[list[QueryResult]], None] | None,
                 stop: Callable[[], bool] | None, log: BadRowLog,
                 ingest: str = "auto") -> tuple[list[QueryResult], Metrics]:
    """--follow: every plan unbounded until stopped (tefq.spark.runtime.follow)."""
    results, m = follow_plans(spark, doc, plans, stream_paths, workdir, run, on_rows=on_rows, stop=stop, log=log,
                              ingest=ingest)
    metrics = fill_metrics(m, Metrics())
    metrics.rows_out = int(m.get("rows_out", 0))  # handed to on_rows, not kept
    metrics.intermediate_bindings += int(m.get("feedback_triples", 0))  # a windowed plan's (spec §7)
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
    (docs/semantics.md, as the oracle counts them), plus those a shape adds itself (the windowed plan's)."""
    results, metrics, first = [], Metrics(), True
    for plan, qrs, m in runs:
        results.extend(qrs)
        own = shape_of(plan).run_metrics
        if own is not None:  # a shape that adds its sink metrics itself (the windowed plan's)
            own(m, qrs, metrics)
            continue
        if first:
            fill_metrics(m, metrics)
            first = False
        else:
            metrics.ticks += int(m.get("ticks", 0))
        metrics.rows_out += sum(r.row_count() for r in qrs)
    return results, metrics
