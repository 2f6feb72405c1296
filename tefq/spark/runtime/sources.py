"""Streaming sources: stream files as Spark streaming file sources of (ts long, s, p, o, file,
fh, row), plus a control source the engine uses to flush at the end of input.

Spark reads Parquet files itself. Text streams (TSV, CSV, N-Quads, TriG, YABench `.stream`, also
`.gz`) are staged: the driver reads each new file with tefq.io's readers and writes its good rows
as one Parquet file that Spark's file source then reads. Why: one validation for both engines
(issue 17) — the readers see what Spark's CSV reader cannot (line numbers, headers, NUL bytes,
invalid UTF-8, a fifth column, CSV quoting, escapes), so a bad row is the same bad row with the
same FILE:LINE:COL, recorded in `--bad-rows` the same way; and a graph's time may come after its
statements and TriG is not line-based, so Spark could not split those files anyway. Converting
file by file still streams (follow mode stages files as they arrive)."""
from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from tefq.errors import TefqError
from tefq.io.bad_rows import BadRowLog
from tefq.spark.protocol import file_hash

if TYPE_CHECKING:
    from tefq.io.redis_stream import Position

FLUSH_TERM = "<urn:tefq:flush>"
CONTROL_SCHEMA = "ts long, s string, p string, o string"
SPARK_FORMATS = ("parquet",)
STAGED_FORMATS = ("tsv", "csv", "nq", "trig", "stream")  # read by tefq.io on the driver, staged as Parquet


def _files(path: str) -> list[str]:
    from tefq.io.readers import stream_files

    return stream_files(path)


def _formats(path: str) -> set[tuple[str, bool]]:
    from tefq.io.readers import stream_format

    return {stream_format(f) for f in _files(path)}


def is_staged(path: str) -> bool:
    """True for a stream of text files, which `Stager` turns into Parquet for Spark."""
    return all(fmt in STAGED_FORMATS for fmt, _ in _formats(path))


def stream_format_of(path: str) -> str:
    """The one format of a stream path (Spark reads one format per source)."""
    fmts = _formats(path)
    if len(fmts) != 1:
        raise TefqError("a stream directory must hold files of one format on Spark: found "
                        + ", ".join(sorted(f + (".gz" if gz else "") for f, gz in fmts)), path)
    fmt, _ = fmts.pop()
    if fmt not in SPARK_FORMATS:
        raise TefqError(f"unexpected stream format {fmt} on Spark: a stream path holds Parquet files or text "
                        "files (tsv, csv, nq, trig, stream)", path)
    return fmt


class StreamInput(str):
    """One input as the pipelines pass it to `read_stream`: a stream path or a Redis URL (the str),
    with its --stream index (`stream`, spec §6.1), and for a Redis input the last position a
    bounded run reads (`end`: None, follow it) and the --bad-rows directory its source writes to."""

    stream: int = 0
    end: "Position | None" = None
    bad_rows: str | None = None

    def __new__(cls, path: str, stream: int = 0, end: "Position | None" = None,
                bad_rows: str | None = None) -> "StreamInput":
        made = str.__new__(cls, path)
        made.stream, made.end, made.bad_rows = stream, end, bad_rows
        return made

    def __reduce__(self):
        return StreamInput, (str(self), self.stream, self.end, self.bad_rows)


def read_stream(spark: SparkSession, path: str, max_files_per_trigger: int | None, stream: int | None = None) -> DataFrame:
    """A streaming DataFrame (ts long or null, s, p, o, file, fh, row) over a Parquet file or
    directory, or a Redis stream (`redis_source.redis_stream_frame`), input `stream` (its --stream
    index; default: a StreamInput's own, else 0). Files are taken in Spark's file-source order
    (modification time)."""
    from tefq.io.readers import literal_path_pattern
    from tefq.io.redis_stream import is_redis_url

    if stream is None:
        stream = path.stream if isinstance(path, StreamInput) else 0
    if is_redis_url(path):
        from tefq.spark.runtime.redis_source import redis_stream_frame

        given = path if isinstance(path, StreamInput) else StreamInput(path)
        return redis_stream_frame(spark, str(path), bad_rows=given.bad_rows, end=given.end, stream=stream)

    stream_format_of(path)  # one format, Parquet (text streams are staged first)
    if os.path.isdir(path):  # Spark skips `.x` and `_x` itself; the glob also leaves out `x.tmp`
        directory, glob = path, name_glob(*_formats(path).pop())
    else:  # the file's own name, taken literally (`s[1].tsv` matched s1.tsv)
        directory, glob = os.path.dirname(os.path.abspath(path)), literal_path_pattern(os.path.basename(path))
    directory = literal_path_pattern(directory)  # Spark globs its paths: `d[x]` read `dx` (issue 17)
    reader = spark.readStream.option("recursiveFileLookup", "true").option("pathGlobFilter", glob)
    if max_files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", int(max_files_per_trigger))
    df = reader.schema("ts long, s string, p string, o string").parquet(directory)
    return df.select("ts", "s", "p", "o", F.col("_metadata.file_path").alias("file"),
                     file_hash(F.col("_metadata.file_path"), stream).alias("fh"),
                     (F.col("_metadata.row_index") + 1).alias("row"))  # as the oracle's readers number rows


def name_glob(fmt: str, gz: bool) -> str:
    """Spark's pathGlobFilter for a directory's stream files: the extension, in any case."""
    ext = fmt + (".gz" if gz else "")
    return "*." + "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in ext)


def read_control(spark: SparkSession, directory: str) -> DataFrame:
    os.makedirs(directory, exist_ok=True)
    df = spark.readStream.schema(CONTROL_SCHEMA).parquet(directory)
    return df.select("ts", "s", "p", "o", F.lit(None).cast("string").alias("file"), F.lit(0).cast("long").alias("fh"),
                     F.lit(0).cast("long").alias("row"))


def write_flush(directory: str) -> None:
    """Ask the running plan to report every remaining tick: one control row, written atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    target = os.path.join(directory, "flush.parquet")
    if os.path.exists(target):
        return
    tmp = os.path.join(directory, ".flush.parquet.tmp")
    pq.write_table(pa.table({"ts": pa.array([0], pa.int64()), "s": [FLUSH_TERM], "p": [FLUSH_TERM],
                             "o": [FLUSH_TERM]}), tmp)
    os.replace(tmp, target)


def file_ranks(spark: SparkSession, paths: list[str]) -> dict[int, int]:
    """Stream order for ties (spec §1: equal timestamps apply in file order): xxhash64 of the path
    Spark reports for each file (`_metadata.file_path`) -> the file's rank in the oracle's order
    (the --stream paths in turn, each directory's files by relative path). Needed because Spark
    packs the files of a micro-batch into partitions by size, not by name. Files that arrive
    later (follow mode) are not ranked: their ties go by partition, then row."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    uris: list[tuple[str, int]] = []
    for stream, p in enumerate(paths):
        for f in files_in_stream_order([p]):
            hp = jvm.org.apache.hadoop.fs.Path(os.path.abspath(f))
            uri = hp.getFileSystem(conf).makeQualified(hp).toUri().toString()
            uris.append(("file:/" + uri[8:] if uri.startswith("file:///") else uri, stream))  # as Spark writes it
    if len(uris) < 2:
        return {}
    rows = spark.createDataFrame([(u, s, i) for i, (u, s) in enumerate(uris[:1 << 19])], "u string, s int, r long")
    return {h: r for h, r in rows.select(file_hash(F.col("u"), F.col("s")), "r").collect()}


STAGE_CHUNK = 1 << 18  # elements per Parquet write while staging
STAGE_INDEX = "_stage_order"  # a staged directory's source order (ignored by Spark: leading _)


def files_in_stream_order(paths: list[str]) -> list[str]:
    """The files of the (staged) stream paths in the oracle's order: the paths in turn, each
    directory's files by relative path; a staged directory's files in their sources' order."""
    from tefq.io.redis_stream import is_redis_url

    return [f for p in paths if not is_redis_url(p)
            for f in (_staged_in_order(p) if os.path.isdir(p) and _is_stage_dir(p) else _files(p))]


def _is_stage_dir(path: str) -> bool:
    return os.path.exists(os.path.join(path, STAGE_INDEX))


def _staged_in_order(directory: str) -> list[str]:
    """The staged files in their sources' order. A line may name a file a kill kept from being
    staged (the line is written first), or appear twice (staged again on restart)."""
    with open(os.path.join(directory, STAGE_INDEX), encoding="utf-8") as fh:
        names = sorted({tuple(line.rstrip("\n").split("\t")) for line in fh if line.strip()})
    return [os.path.join(directory, target) for _, target in names
            if os.path.exists(os.path.join(directory, target))]


class Stager:
    """Stages the text files of one stream path as Parquet files in `directory` (see the module
    doc); bad rows go to `log` (raised, or recorded and counted with --bad-rows), as on the oracle.

    A staged file keeps its source's modification time (Spark's file source takes files in that
    order) and a name made from the source's relative path, so a restart from a checkpoint finds
    the files it staged before and Spark skips the ones it already read (their bad rows were
    recorded by the run that staged them)."""

    def __init__(self, path: str, directory: str, log: BadRowLog) -> None:
        self.path, self.directory, self.log = path, directory, log
        os.makedirs(directory, exist_ok=True)

    def _target(self, source: str) -> str:
        rel = os.path.relpath(source, self.path) if os.path.isdir(self.path) else os.path.basename(source)
        return os.path.join(self.directory, rel.replace(os.sep, "__") + ".parquet")

    def sync(self) -> int:
        """Stage the files not staged yet, in name order; returns how many. A malformed file raises
        the reader's TefqError (file, line, column) before Spark sees any of it."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        from tefq.io.readers import read_stream_file, stream_files

        schema = pa.schema([("ts", pa.int64()), ("s", pa.string()), ("p", pa.string()), ("o", pa.string())])

        if os.path.isdir(self.path) and not has_files(self.path):
            return 0
        staged = 0
        for source in stream_files(self.path):
            target = self._target(source)
            if os.path.exists(target):
                continue
            tmp = os.path.join(self.directory, "." + os.path.basename(target) + ".tmp")
            with pq.ParquetWriter(tmp, schema) as out:  # in chunks: a file may not fit in memory as tuples
                elements = read_stream_file(source, self.log)
                while chunk := list(itertools.islice(elements, STAGE_CHUNK)):
                    out.write_table(pa.table(dict(zip(schema.names, zip(*chunk))), schema))
            st = os.stat(source)
            os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
            with open(os.path.join(self.directory, STAGE_INDEX), "a", encoding="utf-8") as fh:
                fh.write(f"{os.path.relpath(source, self.path) if os.path.isdir(self.path) else ''}\t"
                         f"{os.path.basename(target)}\n")
            os.replace(tmp, target)  # atomic: Spark never lists a half-written file
            staged += 1
        return staged


def has_files(directory: str) -> bool:
    """Whether a directory holds a stream file yet (names Spark and tefq skip do not count)."""
    for _root, dirs, files in os.walk(directory, followlinks=True):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        if any(not f.startswith((".", "_")) and not f.endswith(".crc") for f in files):
            return True
    return False


def wait_for_files(path: str, stop: Callable[[], bool]) -> bool:
    """Follow mode may start on an empty directory: wait for its first file (the format comes
    from it). False if `stop()` turns true first."""
    from tefq.io.redis_stream import is_redis_url

    while not is_redis_url(path) and os.path.isdir(path) and not has_files(path):
        if stop():
            return False
        time.sleep(0.2)
    return True


@dataclass
class Staging:
    """The stream paths as Spark reads them: `sources` (the user's) -> `paths` (text streams
    replaced by their staged Parquet directories). `log` holds the staged files' bad rows."""

    sources: list[str]
    paths: list[str]
    stagers: list[Stager]
    log: BadRowLog

    def sync(self) -> int:
        """Stage the files that arrived since (follow mode); returns how many."""
        return sum(s.sync() for s in self.stagers)

    @property
    def bad_rows(self) -> int:
        return self.log.count

    def close(self) -> None:
        self.log.close()


def stage_streams(stream_paths: list[str], workdir: str, bad_rows: str | None = None) -> Staging:
    """Text streams become staged Parquet directories (`Stager`), checked on the way (`bad_rows`:
    the --bad-rows directory, None to stop at the first bad row); Parquet streams and Redis
    streams stay."""
    import hashlib

    from tefq.io.redis_stream import is_redis_url

    log = BadRowLog(bad_rows)
    stagers, paths = [], []
    for p in stream_paths:
        if not is_redis_url(p) and is_staged(p):
            key = hashlib.sha1(os.path.abspath(p).encode("utf-8")).hexdigest()[:12]
            stager = Stager(p, os.path.join(workdir, "staged", key), log)
            stager.sync()
            stagers.append(stager)
            paths.append(stager.directory)
        else:
            paths.append(p)
    return Staging(list(stream_paths), paths, stagers, log)
