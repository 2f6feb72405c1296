"""The files' stream order for ties (spec §1: equal timestamps apply in file order), keyed as
Spark's rows carry it (`fh`: `file_hash` of `_metadata.file_path` and the input stream),
computed on the driver without a Spark job: each file's URI as Spark writes it (Hadoop's own
Path qualification, through the JVM gateway), hashed by Spark's xxhash64 in Python
(runtime/spark_hash.py). The job sources.file_ranks ran for this (createDataFrame + collect) was
the session's first: 6-11 s of a run (JVM warm-up and the Python worker daemon's start)."""
from __future__ import annotations

import os

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from tefq.errors import TefqError
from tefq.io.staging import files_in_stream_order
from tefq.spark.protocol import MAX_STREAMS, MTIME_MASK, MTIME_SHIFT, PATH_HASH_MASK, STREAM_SHIFT
from tefq.spark.runtime.connect import connect_file_uris, is_connect
from tefq.spark.runtime.spark_hash import xxhash64

MAX_RANKED = 1 << 19  # as many files as sources.file_ranks ranks


def spark_file_uris(spark: SparkSession, paths: list[str]) -> list[tuple[str, int, int]]:
    """(URI as `_metadata.file_path` reports it, input stream, modification time in ms as
    `_metadata.file_modification_time` reports it: Hadoop's, whole ms) of every file of `paths`,
    in the oracle's order (the --stream paths in turn, each directory's files by relative path)."""
    uris: list[tuple[str, int, int]] = []
    for stream, p in enumerate(paths):
        files = files_in_stream_order([p])
        for f, uri in zip(files, spark_uris(spark, files)):
            uris.append((uri, stream, os.stat(f).st_mtime_ns // 1_000_000))  # ms, as java.io.File truncates
    return uris


def file_hash(path: "F.Column", stream: "int | F.Column", mtime: "F.Column | None" = None) -> "F.Column":
    """Column `fh`: the input stream in the top bits (STREAM_SHIFT), the file's modification time
    (`mtime`, a timestamp: `_metadata.file_modification_time`; none: 0) and its path's xxhash64."""
    if isinstance(stream, int):
        if not 0 <= stream <= MAX_STREAMS:
            raise TefqError(f"at most {MAX_STREAMS + 1} --stream inputs on Spark", file="--stream")
        stream = F.lit(stream)
    top = F.shiftleft(stream.cast("long"), STREAM_SHIFT)
    fh = F.xxhash64(path).bitwiseAND(F.lit(PATH_HASH_MASK)).bitwiseOR(top)
    if mtime is None:
        return fh
    return fh.bitwiseOR(F.shiftleft(F.unix_millis(mtime).bitwiseAND(F.lit(MTIME_MASK)), MTIME_SHIFT))


def spark_uris(spark: SparkSession, files: list[str]) -> list[str]:
    """Each local file's URI as Spark writes it (Hadoop's own qualification, through the JVM)."""
    if not files:
        return []
    if is_connect(spark):  # no JVM here: the server's Spark lists them
        return connect_file_uris(spark, files)
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    fs = jvm.org.apache.hadoop.fs.Path(os.path.abspath(files[0])).getFileSystem(conf)
    out = []
    for f in files:
        uri = fs.makeQualified(jvm.org.apache.hadoop.fs.Path(os.path.abspath(f))).toUri().toString()
        out.append("file:/" + uri[8:] if uri.startswith("file:///") else uri)  # as Spark writes it
    return out


def path_hash(uri: str, stream: int, mtime_ms: int = 0) -> int:
    """`file_hash` of one file, as Spark SQL computes it."""
    return ((xxhash64(uri.encode("utf-8")) & PATH_HASH_MASK) | ((mtime_ms & MTIME_MASK) << MTIME_SHIFT)
            | (stream << STREAM_SHIFT))


def is_ranked(files: int, follow: bool) -> bool:
    """Whether a run ranks the `files` there at its start: two or more (the rows of one file are in
    order by partition and row), and in a follow run one too: ranks are what key the files that
    arrive later by arrival (protocol.TieOrder), whatever partition Spark packs them in."""
    return files >= (1 if follow else 2)


def file_ranks(spark: SparkSession, paths: list[str], follow: bool = False) -> dict[int, int]:
    """sources.file_ranks without a Spark job: the hash of each file's path (`fh`) -> its rank in
    the oracle's order; {} when `is_ranked` says no. Files that arrive later (follow mode) are not
    ranked: their ties go by arrival (protocol.TieOrder)."""
    uris = spark_file_uris(spark, paths)
    if not is_ranked(len(uris), follow):
        return {}
    return {path_hash(u, s, m): r for r, (u, s, m) in enumerate(uris[:MAX_RANKED])}


def row_path_ranks(spark: SparkSession, paths: list[str], choices: dict[int, str],
                   follow: bool = False) -> dict[int, int]:
    """`file_ranks` when a plan of the run reads rows (`choices`: runtime/ingest.ingest_choices): their
    ties need the files' hashes as Spark's rows carry them. {} otherwise: the columnar and direct
    paths rank by path (runtime/columnar.FileOrder)."""
    return file_ranks(spark, paths, follow) if "rows" in choices.values() else {}
