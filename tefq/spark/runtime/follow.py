"""`--follow`: keep watching the stream directories and process files as they arrive.

Every query of the document runs at once as an unbounded streaming query (a 100 ms
processing-time trigger: a micro-batch starts as soon as new input is there and the last one is
done). Inputs are stream directories and Redis streams (`redis://HOST:PORT/KEY`: read from its
first entry, or with --checkpoint from where the last run stopped; no waiting for files). After
each committed micro-batch, the rows of the ticks it reported are handed to `on_rows` (the CLI
appends them to --out), so a tick's rows appear once the event time has passed it (spec §4.1: tick `tau` is final once the event time, minus --lateness, is past `tau`). There is
no end of input, hence no final flush: ticks after the last event time are never reported. A run
asked for the fact table (`RunOptions.facts`) also hands each poll's fact records to `on_facts`
(`tefq.facts.live`).

Stopping: SIGINT or SIGTERM (or `stop()` turning true) lets the micro-batch in progress finish,
hands over its rows and returns; a second signal stops at once. A followed Redis stream admits no
new entry once the run is stopping (the `tefq-stopping` gate file), so a stream fed without a pause
does not start micro-batch after micro-batch, and the queries stop between micro-batches. With --checkpoint a later run
resumes where this one stopped. New RDF files (nq, trig, stream) are staged as they arrive.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from dataclasses import replace
from typing import Callable

from pyspark.sql import SparkSession

from tefq.io.bad_rows import BadRowLog
from tefq.io.staging import stage_streams, wait_for_files
from tefq.plan.logical import Document
from tefq.results import QueryResult
from tefq.spark.fact_output import FactCollector, is_fact_record
from tefq.spark.output import SIZE_FIGURES, TERMS
from tefq.spark.shapes import collector_of
from tefq.spark.runtime.input_files import check_inputs
from tefq.spark.runtime.ingest import ingest_choices
from tefq.spark.runtime.inputs import pinned_inputs, stream_settings
from tefq.spark.runtime.pipelines import RunOptions, build_plan
from tefq.spark.runtime.progress import ours
from tefq.spark.runtime.sink import committed_since, read_sink_files, reading_sink
from tefq.spark.runtime.ranks import row_path_ranks
from tefq.stopping import raise_later

POLL_S = 0.1  # the loop's pass: new text files staged, committed rows handed on, the queries checked
GLANCE_S = 0.02  # between passes: a followed text directory or a sink log that changed starts one at once
STOPPING = "tefq-stopping"  # in the run's work directory while it stops (sources.StreamInput.gate)
TRIGGER = "100 milliseconds"  # a live micro-batch starts this soon after the last (250 ms: p99 0.02-0.13 s later, docs/live.md)


class SinkTail:
    """Reads the records a query's sink committed since the last call. The rows are handed on, not
    kept (unless `keep`: without `on_rows` they are the run's result): driver memory grows with
    the sink's committed file names, not with the rows emitted. A windowed plan's sink holds the
    rows of each of its queries."""

    def __init__(self, plan, out: str, keep: bool = False,
                 on_facts: Callable[[FactCollector], None] | None = None) -> None:
        self.plan, self.out, self.keep, self.on_facts = plan, out, keep, on_facts
        self.seen: set[str] = set()
        self.last_entry = -1  # the sink log's last entry read
        self.kept = {r.name: r for r in query_heads(plan)} if keep else {}  # per query, every row
        self.rows_out = 0
        self.metrics: dict = {}  # the run's so far (the collector's `folded`)
        self.sizes: dict[int, dict] = {}  # the operator's call (batch) -> its state's size figures, over buckets

    def poll(self) -> tuple[list[QueryResult], list[str]]:
        """The rows committed since the last call, per query of the plan, and the warnings."""
        named, self.last_entry = committed_since(self.out, self.last_entry)
        files = [f for f in named if f not in self.seen]
        if not files:
            return [], []
        self.seen.update(files)
        # An operator sends the terms of its rows with them: each poll decodes on its own.
        col = collector_of(self.plan)
        facts = FactCollector.of(self.plan) if self.on_facts is not None else None
        pdf = read_sink_files(files)
        with reading_sink(self.out):
            for kind, tick, payload in zip(pdf["kind"], pdf["tick"], pdf["payload"]):
                if facts is not None and (is_fact_record(kind) or kind == TERMS):  # the fact table's (RunOptions.facts)
                    facts.add(kind, tick, payload)
                if not is_fact_record(kind):
                    col.add(kind, tick, payload)
        if facts is not None and (facts.parts or facts.snapshots):
            self.on_facts(facts)
        results = col.results()
        self.rows_out += sum(len(r.rows) for r in results)
        for r in results:
            if r.name in self.kept:
                self.kept[r.name].rows.extend(r.rows)  # unordered (the head's): results() sorts them
                self.kept[r.name].kinds = r.kinds
        self.metrics = col.folded(self.metrics)
        for d in col.metrics:
            add_sizes(self.sizes, d)
        return results, col.warnings

    def results(self) -> list[QueryResult]:
        """Every row kept (`keep`), per query of the plan, in the result order."""
        out = list(self.kept.values()) or query_heads(self.plan)
        for r in out:
            r.rows = r.sorted_rows()
        return out

    def state_by_batch(self) -> list[dict]:
        """Per operator call: the state's bytes and open facts (or rows) summed over the buckets:
        whether a live run's state stays bounded (bench/live.py)."""
        return [{"batch": b, **figures} for b, figures in sorted(self.sizes.items())]


def add_sizes(sizes: dict[int, dict], record: dict) -> None:
    """Add one bucket's size figures (`output.SIZE_FIGURES`) to those of its operator call."""
    at = sizes.setdefault(int(record.get("batch", 0)), {})
    for k in SIZE_FIGURES:
        if k != "batch" and k in record:
            at[k] = at.get(k, 0) + int(record[k])


class Glance:
    """Between the loop's passes, whether one is due now: a followed directory of text files or a
    query's sink log changed (its modification time: a file arrived, to stage; a micro-batch
    committed, its rows to hand on). Without it a new file waited up to a pass to be staged and
    then for Spark's trigger, and a committed tick up to a pass to reach --out (docs/live.md)."""

    def __init__(self, directories: list[str]) -> None:
        self.directories = directories
        self.seen = self.times()

    def times(self) -> tuple[int | None, ...]:
        out = []
        for d in self.directories:
            try:
                out.append(os.stat(d).st_mtime_ns)
            except OSError:  # a sink log not made yet
                out.append(None)
        return tuple(out)

    def changed(self) -> bool:
        now = self.times()
        changed, self.seen = now != self.seen, now
        return changed

    def wait(self, seconds: float) -> None:
        """Until `seconds` have passed or a directory changed."""
        due = time.monotonic() + seconds
        while time.monotonic() < due and not self.changed():
            time.sleep(GLANCE_S)


class _Signals:
    """SIGINT/SIGTERM set a flag instead of interrupting a py4j call; the second one interrupts."""

    def __init__(self) -> None:
        self.flag = threading.Event()
        self.saved: dict = {}

    def __enter__(self) -> "_Signals":
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.saved[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        if self.flag.is_set():
            if raise_later(signum, frame):
                return
            raise KeyboardInterrupt
        print("tefq: stopping after the current micro-batch (signal again to stop at once)", file=sys.stderr)
        self.flag.set()

    def __exit__(self, *exc) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)


def follow_plans(spark: SparkSession, doc: Document, plans: list, stream_paths: list[str], workdir: str,
                 run: RunOptions, *, on_rows: Callable[[list[QueryResult]], None] | None,
                 stop: Callable[[], bool] | None, log: BadRowLog,
                 on_facts: Callable[[FactCollector], None] | None = None,
                 ingest: str = "auto") -> tuple[list[QueryResult], dict]:
    """Run every plan unbounded until stopped; returns all rows reported and the first query's
    metrics. New text files are staged as they arrive, their bad rows to the run's `log`.
    `on_facts`: receives the fact-table records of each poll's committed micro-batches (a run
    with `RunOptions.facts`: `tefq.facts.live`). `ingest`: auto | direct | rows per plan
    (runtime/ingest.choose_ingest): directories of Parquet files (text ones staged as Parquet)
    are read direct by default, each bucket's operator reading the new files itself."""

    with _Signals() as signals:
        stopping = (lambda: signals.flag.is_set() or stop()) if stop else signals.flag.is_set
        for p in stream_paths:
            if not wait_for_files(p, stopping):
                return [r for pl in plans for r in query_heads(pl)], {}
        recorded = check_inputs(workdir, stream_paths)  # recorded before staging reads them: a file growing
        staging = stage_streams(stream_paths, workdir, log, recorded)  # meanwhile is seen (and one not recorded waits)
        gate = os.path.join(workdir, STOPPING)  # made when stopping: followed Redis streams admit no more
        with contextlib.suppress(FileNotFoundError):
            os.remove(gate)  # an earlier run's, on the same checkpoint
        paths = pinned_inputs(staging.paths, run.bad_rows, follow=True, accept_gaps=run.accept_gaps, gate=gate)
        run = replace(run, settings=stream_settings(paths, run, follow=True))
        choices = ingest_choices(ingest, plans, paths, workdir)
        ranks = row_path_ranks(spark, paths, choices, follow=True)  # the files there at the start, for ties
        running = []
        for plan in plans:
            start, out, _ctl, pr = build_plan(spark, doc, plan, paths, workdir, run, ranks=ranks,
                                              ingest=choices[id(plan)], follow=True)
            running.append((plan, start(processingTime=TRIGGER), SinkTail(plan, out, on_rows is None, on_facts), pr))
        glance = Glance([s.path for s in staging.stagers if os.path.isdir(s.path)]
                        + [os.path.join(tail.out, "_spark_metadata") for _, _, tail, _ in running])
        try:
            while True:
                recorded = check_inputs(workdir, stream_paths)  # a file changed since it was read: exit 2
                staging.sync(recorded)  # only files recorded before they are read (runtime/input_files)
                _hand_over(running, on_rows)
                if stopping():
                    open(gate, "w").close()
                    _finish_current_batches([q for _, q, _, _ in running])
                    break
                for _, query, _, _ in running:
                    if not query.isActive:
                        exc = query.exception()
                        raise RuntimeError(f"the streaming query {query.name} stopped: {exc}")
                glance.wait(POLL_S)
        except Exception as e:  # noqa: BLE001 - a bad row inside a micro-batch is the user's input
            err = ours(e)
            _stop_all([q for _, q, _, _ in running])
            if err is e:
                raise
            raise err from None
        _stop_all([q for _, q, _, _ in running])
        _hand_over(running, on_rows)
    return [r for _, _, tail, _ in running for r in tail.results()], followed_metrics(running)


def followed_metrics(running: list) -> dict:
    """The first query's metrics (every query reads the same input), with every query's ticks and rows."""
    metrics = dict(running[0][2].metrics)
    metrics["ticks"] = sum(int(tail.metrics.get("ticks", 0)) for _, _, tail, _ in running)
    metrics["rows_out"] = sum(tail.rows_out for _, _, tail, _ in running)  # every query's rows handed on
    metrics["micro_batches"] = running[0][3].batches
    metrics["state_by_batch"] = running[0][2].state_by_batch()
    return metrics


def query_heads(plan) -> list[QueryResult]:
    """An empty result per query the plan runs (a windowed plan runs every windowed query)."""
    return [QueryResult(r.name, r.columns, []) for r in collector_of(plan).results()]


def _hand_over(running: list, on_rows: Callable[[list[QueryResult]], None] | None) -> None:
    """New committed rows of every query: progress lines, warnings, then `on_rows` (every query
    of the run, each with its new rows, in the result order)."""
    fresh = []
    for plan, query, tail, pr in running:
        pr.report(query)
        polled, warnings = tail.poll()
        for w in warnings:
            print(f"warning: {w}", file=sys.stderr)
        got = {r.name: r for r in polled}
        fresh.extend(got.get(head.name, head) for head in query_heads(plan))
    if on_rows is not None and any(r.rows for r in fresh):
        on_rows(fresh)


def _finish_current_batches(queries: list, timeout_s: float = 300.0) -> None:
    """Wait until the micro-batch each query was running when asked to stop has finished (its
    progress reported), so stopping loses no work in progress. Not until no micro-batch runs at
    all: a stream fed without a pause starts the next one at once, and that wait never ended. Nor
    while a trigger only looks for new data: on a loaded machine a Redis source's look took longer
    than the trigger's interval, the triggers ran back to back and the wait lasted its 300 s."""
    deadline = time.time() + timeout_s
    running = {q: _last_batch(q) for q in queries if _processing(q)}
    while running and time.time() < deadline:
        time.sleep(0.1)
        running = {q: b for q, b in running.items() if _processing(q) and _last_batch(q) == b}


def _processing(query) -> bool:
    """Whether the query is running a micro-batch of new data (not only looking for some)."""
    status = query.status
    return query.isActive and bool(status.get("isTriggerActive")) and bool(status.get("isDataAvailable"))


def _last_batch(query) -> int:
    """The id of the query's last finished micro-batch (-1: none yet)."""
    progress = query.lastProgress
    return int(progress["batchId"]) if progress else -1


def _stop_all(queries: list) -> None:
    for q in queries:
        try:
            q.stop()
        except Exception:  # noqa: BLE001 - stopping a failed query may raise its error again
            pass
