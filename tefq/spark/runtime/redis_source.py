"""`tefq-redis`: a Redis stream as a Spark source (PySpark's Python Data Source API), streaming or batch.

    from tefq.spark.runtime.redis_source import register
    register(spark)
    events = (spark.readStream.format("tefq-redis").option("maxEntriesPerTrigger", 10000)
              .load("redis://localhost:6379/events"))          # ts, s, p, o, file, row
    rows = tefq.spark.apply(query, events)

Exactly once: an offset is a `tefq.io.redis_stream.Position` ({"id": "ms-seq", "n": entries}) in
Spark's checkpoint. A micro-batch reads the entries after its start ID up to its end ID (XRANGE with
an exclusive start), so a restarted query replays a planned batch with exactly its entries and then
goes on after the last committed one; with an idempotent sink (Spark's file sink, tefq's) every
entry counts once. `maxEntriesPerTrigger` bounds a micro-batch (admission control). With
`Trigger.AvailableNow`, and in a batch read (`spark.read.format("tefq-redis")`), the query reads
the entries up to the stream's last ID when it starts: the bounded read an oracle run compares with.

Rows: `ts` (long ms), `s`, `p`, `o` (checked by the file rows' rules, in normal N-Triples form),
`file` (the stream's `redis://` URL) and `row` (the entry's number in the stream, 1 for its first).
`redis_stream_frame` adds `fh` and gives the columns of `sources.read_stream`, the engine's input.
With the `ranges` option a micro-batch's rows are its ID ranges instead (`path`: `range_uri`,
`flush`: false; `redis_ranges_frame`), which the engine's columnar and direct paths read
themselves (`range_entries`), as they read Parquet files by path (runtime/columnar.py).

Bad entries: with the `badRows` option each is recorded there (`tefq.io.bad_rows`' format; a
replayed micro-batch rewrites its own record file, so each is recorded once) and skipped; without
it the first fails the query with a bad_entry record (tefq.errors.WorkerFailure) that `bad_entry_error` turns into the
oracle's located error on the driver.

Where the code runs: `initialOffset`, `latestOffset` and `partitions` in the driver's Python
process (one Redis connection, kept); `read` in a Python worker per partition (its own connection).
Spark wraps what they raise in its own error and Python traceback: a TefqError there (Redis
stopped or unreachable, a refused command) leaves as a worker refusal (`refusing`), which the
command line prints as its one sentence naming the URL, exit 2.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from tefq.errors import BAD_ENTRY, REDIS_GAP, REFUSAL, TefqError, WorkerFailure
from tefq.io.bad_rows import BadRow, BadRowLog, IgnoreBadRows
from tefq.io.redis_stream import (Position, RedisStream, advance, entry_columns, head, is_redis_url, range_of,
                                  range_uri, split_range, unread_gap)
from tefq.io.validate import Fault
from tefq.spark.runtime.ranks import file_hash

FORMAT = "tefq-redis"
SCHEMA = "ts long, s string, p string, o string, file string, row long"
ARROW_SCHEMA = pa.schema([("ts", pa.int64()), ("s", pa.string()), ("p", pa.string()), ("o", pa.string()),
                          ("file", pa.string()), ("row", pa.int64())])
RANGES_SCHEMA = "path string, flush boolean"  # the `ranges` option's rows
RANGES_ARROW_SCHEMA = pa.schema([("path", pa.string()), ("flush", pa.bool_())])
STARTS = ("earliest", "latest")
ENGINE_PARTITIONS: int | None = None  # the engine's micro-batches: split in this many ranges (None: one per core)
# A smaller range is not worth a task of its own: live micro-batches of 50,000 entries read in one
# task were 0.1-0.2 s faster than in two (counting each range's entries, a second Python worker;
# docs/live.md), and a bounded read of a long stream still splits.
LEAST_PER_PARTITION = 100_000


@dataclass(frozen=True)
class SourceOptions:
    """The source's options (names as Spark users spell them, any case):
    `path` (what `load(URL)` sets) or `url`: redis://HOST:PORT/KEY; `maxEntriesPerTrigger`: at most
    this many entries per micro-batch; `badRows`: a directory for bad entries (else the first
    fails the query); `startingPosition`: `earliest` (default: every entry) or `latest` (entries
    added after the query first starts); `endingOffset`: a position as JSON (`Position.to_offset`)
    after which nothing is read (a bounded run pins the stream's head once for all its queries);
    `partitions`: a micro-batch's entries in up to this many ID ranges, one task each (default 1);
    `acceptGaps`: `true` reads on after entries removed from the stream before they were read
    (default: the query stops, `unread_gap`); `stopFile`: while this file exists no new entry is
    admitted (a stopping run: the micro-batch in progress ends and no other starts, so the query
    stops between micro-batches); `ranges`: `true` gives a micro-batch's ID ranges (`range_uri`),
    not its entries; `leastPerPartition`: the fewest entries a range of its own holds on average
    (default LEAST_PER_PARTITION)."""

    stream: RedisStream
    max_entries: int | None = None
    bad_rows: str | None = None
    start: str = "earliest"
    end: Position | None = None
    partitions: int = 1
    accept_gaps: bool = False
    stop_file: str | None = None
    ranges: bool = False
    least: int = LEAST_PER_PARTITION

    @classmethod
    def of(cls, options: Mapping[str, str]) -> "SourceOptions":
        given = {k.lower(): v for k, v in options.items()}
        url = given.get("url") or given.get("path")
        if not url or not is_redis_url(url):
            raise TefqError(f"the {FORMAT} source needs a stream address: .load('redis://HOST:PORT/KEY') or "
                            ".option('url', 'redis://HOST:PORT/KEY')", FORMAT)
        start = given.get("startingposition", "earliest").lower()
        if start not in STARTS:
            raise TefqError(f"startingPosition must be earliest or latest, got {start!r}", FORMAT)
        return cls(RedisStream.parse(url), positive_option("maxEntriesPerTrigger", given.get("maxentriespertrigger")),
                   given.get("badrows") or None, start, ending_offset_option(given.get("endingoffset")),
                   positive_option("partitions", given.get("partitions")) or 1,
                   given.get("acceptgaps", "false").lower() == "true", given.get("stopfile") or None,
                   given.get("ranges", "false").lower() == "true",
                   positive_option("leastPerPartition", given.get("leastperpartition")) or LEAST_PER_PARTITION)


def positive_option(name: str, text: str | None) -> int | None:
    if text is None:
        return None
    if not text.strip().isdigit() or int(text) < 1:
        raise TefqError(f"{name} must be a positive integer, got {text!r}", FORMAT)
    return int(text)


def ending_offset_option(text: str | None) -> Position | None:
    if not text:
        return None
    try:
        return Position.of_offset(json.loads(text))
    except (ValueError, KeyError, TypeError):
        raise TefqError(f'endingOffset must be a position as JSON ({{"id": "ms-seq", "n": N}}), got {text!r}',
                        FORMAT) from None


class EntryRange(InputPartition):
    """One partition: the entries with `after` < ID <= `until`; the first is the stream's entry
    `first_row` + 1; its micro-batch's first is entry `batch_first` + 1 (the tie keys of a range
    read by path count from there: runtime/columnar.range_batches)."""

    def __init__(self, after: str, until: str, first_row: int, batch_first: int = 0) -> None:
        super().__init__((after, until, first_row, batch_first))
        self.after, self.until, self.first_row, self.batch_first = after, until, first_row, batch_first


class RedisStreamSource(DataSource):
    """The data source Spark instantiates for `format("tefq-redis")`."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return RANGES_SCHEMA if SourceOptions.of(self.options).ranges else SCHEMA

    def streamReader(self, schema) -> "RedisStreamReader":
        return RedisStreamReader(SourceOptions.of(self.options))

    def reader(self, schema) -> "RedisBatchReader":
        return RedisBatchReader(SourceOptions.of(self.options))


@contextlib.contextmanager
def refusing() -> Iterator[None]:
    """A TefqError raised inside Spark's source runner or a worker, as a worker refusal (one line)."""
    try:
        yield
    except TefqError as e:
        raise WorkerFailure(REFUSAL, {"message": f"{e.file}: {e.message}" if e.file else e.message}).error() from None


class DriverClient:
    """A Redis connection opened at first use and never pickled (readers travel to the workers)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._client = None

    def client(self):
        if self._client is None:
            self._client = self.options.stream.connect()
        return self._client

    def close(self) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
            self._client = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_client": None}


class RedisStreamReader(DriverClient, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets, admission control and replayable partitions over one Redis stream."""

    def __init__(self, options: SourceOptions) -> None:
        super().__init__(options)
        self.target: Position | None = options.end  # nothing after this (endingOffset, Trigger.AvailableNow)

    def initialOffset(self) -> dict:
        if self.options.start == "latest":
            with refusing():
                return head(self.client(), self.options.stream).to_offset()
        return Position().to_offset()

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.options.max_entries
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        if self.options.stop_file and os.path.exists(self.options.stop_file):
            return start  # the run is stopping: nothing new
        max_entries = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        with refusing():
            latest = self.target or head(self.client(), self.options.stream)
            return advance(self.client(), self.options.stream, Position.of_offset(start), latest,
                           max_entries).to_offset()

    def prepareForTriggerAvailableNow(self) -> None:
        with refusing():
            self.target = self.target or head(self.client(), self.options.stream)

    def partitions(self, start: dict, end: dict) -> list[EntryRange]:
        # Ranges in ID order, each read in entry order: the stream order of ties (equal ts), which
        # the engine's mappers keep by partition, then row (protocol.TieOrder: no file time here).
        first, last = Position.of_offset(start), Position.of_offset(end)
        if not first.is_before(last):
            return []
        with refusing():
            gap = None if self.options.accept_gaps else unread_gap(self.client(), self.options.stream, first)
            if gap is not None:
                raise WorkerFailure(REDIS_GAP, {"url": self.options.stream.url, "message": gap}).error()
            return [EntryRange(*r, first.n) for r in split_range(self.client(), self.options.stream, first, last,
                                                                 self.options.partitions, self.options.least)]

    def read(self, partition: EntryRange) -> Iterator[pa.RecordBatch]:
        return range_row(self.options, partition) if self.options.ranges else read_range(self.options, partition)

    def commit(self, end: dict) -> None:
        """Nothing to release: the entries stay in Redis (trimming them is the producer's call)."""

    def stop(self) -> None:
        self.close()


class RedisBatchReader(DriverClient, DataSourceReader):
    """A bounded read: every entry up to the stream's last ID when the query is planned."""

    def partitions(self) -> list[EntryRange]:
        with refusing():
            end = self.options.end or head(self.client(), self.options.stream)
        self.close()
        return [EntryRange(Position().id, end.id, 0)]

    def read(self, partition: EntryRange) -> Iterator[pa.RecordBatch]:
        return range_row(self.options, partition) if self.options.ranges else read_range(self.options, partition)


def read_range(options: SourceOptions, part: EntryRange) -> Iterator[pa.RecordBatch]:
    """The checked entries of one partition as Arrow batches of the source's schema."""
    url = options.stream.url
    for batch in checked_entries(options, part, record=True):
        yield pa.RecordBatch.from_arrays(
            [*batch.columns[:4], pa.array([url] * batch.num_rows, pa.string()), batch.column(4)], schema=ARROW_SCHEMA)


def range_row(options: SourceOptions, part: EntryRange) -> Iterator[pa.RecordBatch]:
    """The `ranges` option's row for one partition: its ID range, read later by whoever takes it."""
    uri = range_uri(options.stream.url, part.after, part.until, part.first_row, part.batch_first)
    yield pa.RecordBatch.from_arrays([pa.array([uri]), pa.array([False])],
                                     schema=RANGES_ARROW_SCHEMA)


def range_entries(uri: str, bad_rows: str | None,
                  record: bool) -> tuple[EntryRange, str, Iterator[pa.RecordBatch]]:
    """A `range_uri`'s range, stream URL and checked entries (`entry_columns`' batches: ts, s, p,
    o, row), for a task that reads the range itself. Several tasks may read one range (direct
    ingestion without shared reading: every bucket): the one that `record`s writes its bad
    entries as `read_range` does; the others skip them. Without `bad_rows` a bad entry fails each."""
    url, *fields = range_of(uri)
    part = EntryRange(*fields)
    return part, url, checked_entries(SourceOptions(RedisStream.parse(url), bad_rows=bad_rows), part, record)


def checked_entries(options: SourceOptions, part: EntryRange, record: bool) -> Iterator[pa.RecordBatch]:
    """A range's entries as `entry_columns` checks them; bad ones recorded (`partition_bad_rows`)
    when `record`, else skipped, and raised without --bad-rows either way."""
    client = options.stream.connect()
    bad_entries = (partition_bad_rows(options, part) if record or options.bad_rows is None
                   else contextlib.nullcontext(IgnoreBadRows()))
    with refusing(), bad_entries as log:
        try:
            yield from entry_columns(client, options.stream, part.after, part.until, part.first_row, log)
        finally:
            client.close()


# ---------------------------------------------------------------------------------------------
# Bad entries

class RaisingLog(BadRowLog):
    """Without --bad-rows: the first bad entry fails the task with its bad_entry record."""

    def report(self, fault: Fault, file: str, line: int, row: str | None, column_base: int = 1) -> None:
        raise WorkerFailure(BAD_ENTRY, dict(file=file, line=line, kind=fault.kind, message=fault.message,
                                            row=row or "")).error()


@contextlib.contextmanager
def partition_bad_rows(options: SourceOptions, part: EntryRange) -> Iterator[BadRowLog]:
    """The log of one partition's bad entries. With a directory, they are written under a private
    name and moved to `bad-redis-<digest of the range>.tsv` once the partition is read: a replay of
    the same micro-batch (a retried task, a restarted query) replaces that file, never adds one."""
    if options.bad_rows is None:
        yield RaisingLog()
        return
    digest = hashlib.sha1(f"{options.stream.url}\n{part.after}\n{part.until}".encode()).hexdigest()[:16]
    work = os.path.join(options.bad_rows, f".redis-{digest}.tmp")
    shutil.rmtree(work, ignore_errors=True)  # an earlier attempt's, cut short
    log = BadRowLog(work)
    try:
        yield log
    finally:
        log.close()
    written = [os.path.join(work, f) for f in os.listdir(work)] if os.path.isdir(work) else []
    for path in written:  # one file per log
        os.replace(path, os.path.join(options.bad_rows, f"bad-redis-{digest}.tsv"))
    shutil.rmtree(work, ignore_errors=True)


def bad_entry_error(text: str) -> TefqError | None:
    """The located error of a bad entry that failed a query (`text`: Spark's error text, holding a
    worker's bad_entry record), as the oracle raises it for the same entry; None if there is none."""
    failure = WorkerFailure.found_in(text)
    if failure is None or failure.kind != BAD_ENTRY:
        return None
    f = failure.fields
    return BadRow(Fault(f["kind"], 0, f["message"]), f["file"], int(f["line"]), f["row"], 0)


def gap_error(text: str) -> TefqError | None:
    """The located error (exit 2) of entries removed before they were read (`text`: Spark's error
    text, holding the source's redis_gap record); None if there is none."""
    failure = WorkerFailure.found_in(text)
    if failure is None or failure.kind != REDIS_GAP:
        return None
    return TefqError(failure.fields["message"], failure.fields["url"])


# ---------------------------------------------------------------------------------------------
# For the engine and for tefq.spark.apply users

def register(spark: SparkSession) -> None:
    """Make `format("tefq-redis")` known to this session (registering again is harmless)."""
    spark.dataSource.register(RedisStreamSource)


def redis_stream_frame(spark: SparkSession, url: str, *, max_entries: int | None = None,
                       bad_rows: str | None = None, start: str = "earliest", end: Position | None = None,
                       stream: int = 0, accept_gaps: bool = False, gate: str | None = None) -> DataFrame:
    """A streaming DataFrame of a Redis stream in the columns of `sources.read_stream` (ts, s, p,
    o, file, fh, row): what the engine's pipelines read. `end`: read nothing after it (a bounded
    run: `tefq.io.redis_stream.head` taken once, before its queries start). `stream`: its --stream
    index (spec §6.1), carried in `fh` (`ranks.file_hash`). `gate`: the `stopFile` option."""
    reader = stream_reader(spark, url, max_entries=max_entries, start=start, end=end, accept_gaps=accept_gaps,
                           gate=gate)
    if bad_rows:
        reader = reader.option("badRows", os.path.abspath(bad_rows))
    return reader.load().select("ts", "s", "p", "o", "file", file_hash(F.col("file"), stream).alias("fh"), "row")


def redis_ranges_frame(spark: SparkSession, url: str, *, max_entries: int | None = None, start: str = "earliest",
                       end: Position | None = None, accept_gaps: bool = False, gate: str | None = None) -> DataFrame:
    """`redis_stream_frame`'s micro-batches as (path, flush) rows: each an ID range (`range_uri`),
    its entries read by the task that takes it (`range_entries`)."""
    reader = stream_reader(spark, url, max_entries=max_entries, start=start, end=end, accept_gaps=accept_gaps,
                           gate=gate)
    return reader.option("ranges", "true").load().select("path", "flush")


def stream_reader(spark: SparkSession, url: str, *, max_entries: int | None, start: str, end: Position | None,
                  accept_gaps: bool, gate: str | None):
    """The `tefq-redis` streaming reader of `url` with the engine's options."""
    SourceOptions.of({"url": url, "startingPosition": start})  # a bad address fails here, on the driver
    register(spark)
    reader = spark.readStream.format(FORMAT).option("url", url).option("startingPosition", start)
    if end is not None:
        reader = reader.option("endingOffset", json.dumps(end.to_offset()))
    if max_entries:
        reader = reader.option("maxEntriesPerTrigger", str(max_entries))
    if accept_gaps:
        reader = reader.option("acceptGaps", "true")
    if gate:
        reader = reader.option("stopFile", os.path.abspath(gate))
    return (reader.option("partitions", str(ENGINE_PARTITIONS or os.cpu_count() or 1))
            .option("leastPerPartition", str(LEAST_PER_PARTITION)))
