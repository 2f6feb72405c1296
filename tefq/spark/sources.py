"""Streaming sources: stream files (Parquet, TSV, CSV) as Spark streaming file sources of
(ts long, s, p, o, file), plus a control source the engine uses to flush at the end of input."""
from __future__ import annotations

import gzip
import os

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from tefq.errors import TefqError

FLUSH_TERM = "<urn:tefq:flush>"
CONTROL_SCHEMA = "ts long, s string, p string, o string"
SPARK_FORMATS = ("parquet", "tsv", "csv")


def _files(path: str) -> list[str]:
    from tefq.io.readers import stream_files

    return stream_files(path)


def stream_format_of(path: str) -> str:
    """The one format of a stream path (Spark reads one format per source)."""
    from tefq.io.readers import stream_format

    fmts = {stream_format(f) for f in _files(path)}
    if len(fmts) != 1:
        raise TefqError("a stream directory must hold files of one format on Spark: found "
                        + ", ".join(sorted(f + (".gz" if gz else "") for f, gz in fmts)), path)
    fmt, _ = fmts.pop()
    if fmt not in SPARK_FORMATS:
        raise TefqError(f"{fmt} streams are not yet supported on Spark (use parquet, tsv or csv, "
                        "or --engine oracle)", path)
    return fmt


def _header(path: str, fmt: str) -> list[str]:
    first = _files(path)[0]
    opener = gzip.open if first.endswith(".gz") else open
    with opener(first, "rt", encoding="utf-8") as fh:
        line = fh.readline().rstrip("\r\n")
    cells = [c.strip().strip('"') for c in line.split("\t" if fmt == "tsv" else ",")]
    if sorted(cells) != ["o", "p", "s", "ts"]:
        raise TefqError(f"expected a header with the columns ts, s, p, o; found {line!r}", first, 1)
    return cells


def read_stream(spark: SparkSession, path: str, max_files_per_trigger: int | None) -> DataFrame:
    """A streaming DataFrame (ts long or null, s, p, o, file) over a stream file or directory.
    Files are taken in Spark's file-source order (modification time)."""
    fmt = stream_format_of(path)
    if os.path.isdir(path):
        directory, glob = path, None
    else:
        directory, glob = os.path.dirname(os.path.abspath(path)), os.path.basename(path)
    reader = spark.readStream.option("recursiveFileLookup", "true")
    if glob:
        reader = reader.option("pathGlobFilter", glob)
    if max_files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", int(max_files_per_trigger))
    if fmt == "parquet":
        df = reader.schema("ts long, s string, p string, o string").parquet(directory)
        ts = F.col("ts")
        raw = F.col("ts").cast("string")
    else:
        cols = _header(path, fmt)
        reader = reader.option("header", "true").schema(", ".join(f"`{c}` string" for c in cols))
        if fmt == "tsv":
            reader = reader.option("sep", "\t").option("quote", "\u0000")
        else:
            reader = reader.option("sep", ",").option("quote", '"').option("escape", '"')
        df = reader.option("mode", "PERMISSIVE").csv(directory)
        raw = F.trim(F.col("ts"))
        # try_*: a malformed time gives null, which the engine reports as a bad row with its line
        ts = (F.when(raw.rlike("^-?[0-9]+$"), raw.try_cast("long"))
              .otherwise(F.unix_millis(F.try_to_timestamp(raw))))
    return df.select(ts.alias("ts"), "s", "p", "o", F.col("_metadata.file_path").alias("file"),
                     raw.alias("ts_text"))


def read_control(spark: SparkSession, directory: str) -> DataFrame:
    os.makedirs(directory, exist_ok=True)
    df = spark.readStream.schema(CONTROL_SCHEMA).parquet(directory)
    return df.select("ts", "s", "p", "o", F.lit(None).cast("string").alias("file"),
                     F.lit(None).cast("string").alias("ts_text"))


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
