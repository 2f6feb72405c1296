"""Streaming sources: stream files as Spark streaming file sources of (ts long, s, p, o, file,
fh, row), plus a control source the engine uses to flush at the end of input.

Spark reads Parquet files itself. Text streams (TSV, CSV, N-Quads, TriG, YABench `.stream`, also
`.gz`) reach it staged as Parquet by the one stager, tefq.io.staging (checked by tefq's readers on
the driver, bad rows in the run's one log)."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame, SparkSession, functions as F

from tefq.errors import TefqError
from tefq.io.readers import literal_path_pattern, stream_files, stream_format
from tefq.io.redis_stream import is_redis_url
from tefq.spark.runtime.ranks import file_hash
from tefq.spark.runtime.redis_source import redis_ranges_frame, redis_stream_frame

if TYPE_CHECKING:
    from tefq.io.redis_stream import Position

FLUSH_TERM = "<urn:tefq:flush>"
CONTROL_SCHEMA = "ts long, s string, p string, o string"
SPARK_FORMATS = ("parquet",)


def _formats(path: str) -> set[tuple[str, bool]]:
    return {stream_format(f) for f in stream_files(path)}


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
    bounded run reads (`end`: None, follow it) and the --bad-rows directory its source writes to;
    for a file input of a bounded run, the `listing` Spark reads its files from, in stream order
    (runtime/listing.py); for a followed Redis input, the file whose existence tells its source to
    admit nothing more (`gate`: a stopping run)."""

    stream: int = 0
    end: "Position | None" = None
    bad_rows: str | None = None
    accept_gaps: bool = False  # a Redis input: read on after entries removed before they were read
    listing: str | None = None
    gate: str | None = None

    def __new__(cls, path: str, stream: int = 0, end: "Position | None" = None, bad_rows: str | None = None,
                accept_gaps: bool = False, listing: str | None = None, gate: str | None = None) -> "StreamInput":
        made = str.__new__(cls, path)
        made.stream, made.end, made.bad_rows = stream, end, bad_rows
        made.accept_gaps, made.listing, made.gate = accept_gaps, listing, gate
        return made

    def __reduce__(self):
        return StreamInput, (str(self), self.stream, self.end, self.bad_rows, self.accept_gaps,
                             self.listing, self.gate)


def read_stream(spark: SparkSession, path: str, max_files_per_trigger: int | None, stream: int | None = None) -> DataFrame:
    """A streaming DataFrame (ts long or null, s, p, o, file, fh, row) over a Parquet file or
    directory, or a Redis stream (`redis_source.redis_stream_frame`), input `stream` (its --stream
    index; default: a StreamInput's own, else 0). Files are taken in Spark's file-source order
    (modification time), or, for an input with a listing, in its listing's order."""
    if stream is None:
        stream = path.stream if isinstance(path, StreamInput) else 0
    if is_redis_url(path):
        given = path if isinstance(path, StreamInput) else StreamInput(path)
        return redis_stream_frame(spark, str(path), bad_rows=given.bad_rows, end=given.end, stream=stream,
                                  accept_gaps=given.accept_gaps, gate=given.gate)

    stream_format_of(path)  # one format, Parquet (text streams are staged first)
    directory, glob = spark_directory(path, name_glob(*_formats(path).pop()))
    reader = spark.readStream.option("recursiveFileLookup", "true").option("pathGlobFilter", glob)
    if max_files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", int(max_files_per_trigger))
    df = reader.schema("ts long, s string, p string, o string").parquet(directory)
    meta = F.col("_metadata")
    return df.select("ts", "s", "p", "o", meta.file_path.alias("file"),
                     file_hash(meta.file_path, stream, meta.file_modification_time).alias("fh"),
                     (F.col("_metadata.row_index") + 1).alias("row"))  # as the oracle's readers number rows


def spark_directory(path: str, names: str) -> tuple[str, str]:
    """The directory a file source of `path` reads and its pathGlobFilter: an input's listing
    (every file it names; recursiveFileLookup must be on, the files lie outside it), a directory
    with `names` (a name_glob), a file by its own name."""
    if isinstance(path, StreamInput) and path.listing is not None:
        return path.listing, "*"
    if os.path.isdir(path):  # Spark skips `.x` and `_x` itself; the glob also leaves out `x.tmp`
        directory, glob = path, names
    else:  # the file's own name, taken literally (`s[1].tsv` matched s1.tsv)
        directory, glob = os.path.dirname(os.path.abspath(path)), literal_path_pattern(os.path.basename(path))
    return literal_path_pattern(directory), glob  # Spark globs its paths: `d[x]` read `dx` (issue 17)


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


# The columnar and direct paths' sources (runtime/columnar.py): (path, flush) rows


def read_paths(spark, path: str, max_files_per_trigger: int | None):
    """A streaming DataFrame (path, flush=false) of the Parquet files of a stream path, in the
    order `read_stream` takes them (its listing's, else modification time); of a Redis stream,
    its micro-batches' ID ranges (`redis_source.redis_ranges_frame`)."""
    if is_redis_url(path):
        given = path if isinstance(path, StreamInput) else StreamInput(path)
        return redis_ranges_frame(spark, str(path), end=given.end, accept_gaps=given.accept_gaps,
                                  gate=given.gate)
    directory, glob = spark_directory(path, name_glob("parquet", False))
    reader = (spark.readStream.format("binaryFile").option("recursiveFileLookup", "true")
              .option("pathGlobFilter", glob)
              .schema("path string, modificationTime timestamp, length long, content binary"))
    if max_files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", int(max_files_per_trigger))
    return reader.load(directory).select("path", F.lit(False).alias("flush"))


def read_flush(spark, directory: str):
    """The control source (sources.write_flush) as (path=null, flush=true) rows."""
    os.makedirs(directory, exist_ok=True)
    return (spark.readStream.schema(CONTROL_SCHEMA).parquet(directory)
            .select(F.lit(None).cast("string").alias("path"), F.lit(True).alias("flush")))
