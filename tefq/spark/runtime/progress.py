"""A running streaming query on the driver: progress lines, waiting for the end, worker errors."""
from __future__ import annotations

import re
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator, Sequence

from tefq import progress
from tefq.errors import BAD_ENTRY, BAD_ROW, REDIS_GAP, TOO_MANY_TICKS, TefqError, WorkerFailure
from tefq.io.bad_rows import IgnoreBadRows
from tefq.io.paths import local_path
from tefq.io.readers import locate_ts, read_stream_file, stream_files
from tefq.io.timestamps import format_iso_ms
from tefq.oracle.late import outlier
from tefq.oracle.query import TooManyTicks
from tefq.progress import plural
from tefq.spark.runtime.redis_source import bad_entry_error, gap_error


def say(enabled: bool, text: str) -> None:
    """One line of what the engine is doing (stderr, off with --quiet): the user sees the run
    start before the JVM is up."""
    if enabled:
        print(f"[spark] {text}", file=sys.stderr, flush=True)


def as_dict(v) -> dict:
    """An observed metric (a Row) as {name: value}."""
    if v is None:
        return {}
    d = v.asDict() if hasattr(v, "asDict") else dict(v)
    if set(d) == {"values", "schema"} and isinstance(d["schema"], dict):  # over Spark Connect: values and schema
        return {f["name"]: x for f, x in zip(d["schema"].get("fields", []), d["values"])}
    return d


def epoch_ms(timestamp: str | None) -> int | None:
    """A progress record's `timestamp` (the micro-batch's trigger, ISO 8601 in UTC) in ms since 1970:
    bench/live.py places each tick's report against the micro-batches."""
    if not timestamp:
        return None
    from datetime import datetime

    return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000)


STATE_TIMES = ("allUpdatesTimeMs", "commitTimeMs", "rocksdbCommitFlushLatency", "rocksdbCommitCheckpointLatency",
               "rocksdbCommitFileSyncLatencyMs", "rocksdbCommitWriteBatchLatency", "rocksdbCommitCompactLatency",
               "rocksdbCommitPauseLatency", "rocksdbPutLatency", "rocksdbGetLatency", "rocksdbLoadLatencyMs",
               "rocksdbWriterStallLatencyMs", "rocksdbTotalCompactionLatencyMs")
# What the state holds and writes (rows, bytes): whether a run's state grows (issue 24, docs/live.md).
STATE_SIZES = ("numRowsTotal", "numRowsUpdated", "memoryUsedBytes", "rocksdbSstFileSize", "rocksdbTotalBytesWritten",
               "rocksdbTotalBytesWrittenByFlush", "rocksdbPinnedBlocksMemoryUsage", "rocksdbNumReplayChangelogFiles")


def state_figures(operators: list, names: tuple[str, ...] = STATE_TIMES) -> dict[str, int]:
    """A micro-batch's state-store figures `names` (summed over its stateful operators and their
    partitions): its times (ms) say where its fixed cost goes, its sizes whether the state grows."""
    out: dict[str, int] = {}
    for op in operators:
        found = {**dict(op), **dict(op.get("customMetrics") or {})}
        for name in names:
            out[name] = out.get(name, 0) + int(found.get(name) or 0)
    return out


class Progress:
    """A streaming query's micro-batches: their figures for the metrics and the bench, and for a
    person a line per micro-batch (and on a terminal a bar of the events read; tefq.progress)."""

    def __init__(self, enabled: bool, name: str) -> None:
        self.enabled, self.name, self.seen = enabled, name, -1
        self.batches: list[dict] = []  # per micro-batch: id, input rows, ms, state bytes (for the bench)
        self.bar = progress.start(f"[spark {name}] events read") if enabled else None
        self.events_read = 0
        self.ended = 0  # buckets whose operator ended the input (operators/base.step)

    def report(self, query) -> None:
        for p in query.recentProgress:
            if p["batchId"] > self.seen:
                self._one(p)

    def _one(self, p) -> None:
        self.seen = p["batchId"]
        observed = p.get("observedMetrics") or {}
        obs, obs_out = (as_dict(observed.get(name)) for name in ("tefq_in", "tefq_out"))
        self.batches.append({"batch": p["batchId"], "rows": p.get("numInputRows", 0),
                             "ms": p.get("durationMs", {}).get("triggerExecution", 0),
                             "start_ms": epoch_ms(p.get("timestamp")), "event_time": obs.get("event_time"),
                             "durations_ms": dict(p.get("durationMs", {})),
                             "state_bytes": sum(op.get("memoryUsedBytes", 0) for op in p.get("stateOperators", [])),
                             "state_ms": state_figures(p.get("stateOperators", [])),
                             "state_sizes": state_figures(p.get("stateOperators", []), STATE_SIZES)})
        self.events_read += p.get("numInputRows", 0) or 0
        self.ended += int(obs_out.get("ended") or 0)
        if self.bar is not None:
            self.bar.say(self.line(p, obs, obs_out))

    def line(self, p, obs: dict, obs_out: dict) -> str:
        """A micro-batch in a reader's words: what it read (up to which event time), what it reported."""
        t = obs.get("event_time")
        upto = f" (up to {format_iso_ms(int(t))})" if t is not None else ""
        rows = obs_out.get("rows") or 0  # a plan whose records carry rows of their own counts none here
        out = f"{plural(obs_out.get('ticks') or 0, 'tick')}{', ' + plural(rows, 'row') if rows else ''} reported"
        seconds = p.get("durationMs", {}).get("triggerExecution", 0) / 1000
        return (f"[spark {self.name}] micro-batch {p['batchId'] + 1}: {plural(p.get('numInputRows', 0) or 0, 'event')} "
                f"read{upto}, {out}, {seconds:.1f} s")

    def tick(self) -> None:
        """A second went by: the bar shows the events read so far and the time."""
        if self.bar is not None:
            self.bar.advance(self.events_read)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class ColumnarProgress(Progress):
    """Spark counts a columnar batch's input in files; the events read come from the heartbeats
    (the `tefq_in` observation of the mapped rows), so progress lines and the bench's per-batch
    figures still count events."""

    def _one(self, p) -> None:
        observed = as_dict((p.get("observedMetrics") or {}).get("tefq_in"))
        q = dict(p)
        q["numInputRows"] = int(observed.get("n") or 0)
        super()._one(q)


@contextmanager
def deferred_signals() -> Iterator[list[int]]:
    """SIGINT/SIGTERM while the driver waits inside a py4j call would raise in the middle of it
    and break the connection (pyspark's SIGINT handler then fails to cancel the jobs: exit 1).
    Inside this block a signal is only noted; the caller stops the query and re-delivers it."""
    pending: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield pending
        return
    kinds = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.signal(s, lambda signum, frame: pending.append(signum)) for s in kinds}
    try:
        yield pending
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def run_until_done(query, progress: Progress) -> None:
    with deferred_signals() as pending:
        try:
            while query.isActive and not pending:
                query.awaitTermination(1.0)
                progress.report(query)
                progress.tick()
        except BaseException:
            stop_quietly(query)
            raise
        finally:
            progress.close()
        if pending:
            stop_quietly(query)
    if pending:  # to the handlers of tefq.cli.main / pyspark: exit 143 or 130
        signal.raise_signal(pending[0])
    progress.report(query)
    exc = query.exception()
    if exc is not None:
        raise exc


def stop_quietly(query) -> None:
    """Stop a streaming query on the way out; the JVM may already be going down."""
    try:
        query.stop()
    except Exception:  # noqa: BLE001 - nothing left to save
        pass


def bad_row_error(failure: WorkerFailure) -> TefqError:
    """A bad row that stopped the run: the readers' located error for its file (read again on the
    driver), else the worker's reason."""
    path = local_path(failure.fields["file"])
    try:  # the readers know the line and column

        for _ in read_stream_file(path):
            pass
    except TefqError as e:
        return e
    except Exception:  # noqa: BLE001 - fall back to Spark's view of the row
        pass
    return TefqError(f"bad stream row: {failure.fields['reason']}", path)


def too_many_ticks_error(failure: WorkerFailure, query: str, paths: Sequence[str]) -> TefqError:
    """The oracle's --max-ticks message (tefq.oracle.query.TooManyTicks), pointing at the row
    whose timestamp stretches the range (read again on the driver: an error path only)."""
    f = failure.fields
    err = TooManyTicks(f.get("query", query), int(f["max_ticks"]), int(f["every"]), int(f["first"]), int(f["last"]))
    times = sorted(e[0] for p in paths for f in stream_files(p) for e in read_stream_file(f, IgnoreBadRows()))
    if times:
        ts, why = outlier(times)
        err.message += f"; {why}: is its timestamp right (0, -1, seconds instead of ms)? Else raise --max-ticks"
        err.file, err.line = locate_ts(paths, ts)
        err.column = 1 if err.line else 0
    return err


# Spark's own file source (the row path) failing on a damaged file: "[FAILED_READ_FILE...] Encountered
# error while reading file file:///PATH."
_FAILED_READ = re.compile(r"\[FAILED_READ_FILE[^\]]*\] Encountered error while reading file (\S+?)\.?\s")


def unread_file_error(text: str) -> TefqError | None:
    """A file Spark's file source could not read: the readers' located error for it (read again
    on the driver, as a worker's bad row is), else one naming it; None if `text` is not that."""
    m = _FAILED_READ.search(text + " ")
    if m is None:
        return None
    return bad_row_error(WorkerFailure(BAD_ROW, {"file": m.group(1), "reason": "Spark could not read it"}))


def ours(e: Exception, query: str = "", paths: Sequence[str] = ()) -> Exception:
    """Spark wraps worker errors: the worker's failure record (tefq.errors.WorkerFailure) becomes
    the user's error — a bad row the reader's located TefqError, a bad Redis entry the oracle's,
    Redis entries trimmed before they were read an exit 2 naming them, a tick range over
    --max-ticks the oracle's message naming the row; anything else (a refusal: the command
    line's) is `e` itself."""
    failure = WorkerFailure.found_in(str(e))
    if failure is None:
        return unread_file_error(str(e)) or e
    if failure.kind == TOO_MANY_TICKS:
        return too_many_ticks_error(failure, query, paths)
    if failure.kind == BAD_ENTRY:
        return bad_entry_error(str(e))
    if failure.kind == REDIS_GAP:
        return gap_error(str(e))
    return bad_row_error(failure) if failure.kind == BAD_ROW else e
