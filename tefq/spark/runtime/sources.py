"""Streaming sources: stream files (Parquet, TSV, CSV) as Spark streaming file sources of
(ts long, s, p, o, file), plus a control source the engine uses to flush at the end of input.

RDF streams (N-Quads, TriG, YABench `.stream`, also `.gz`) are staged: the driver reads each new
file with tefq.io's readers (the oracle's readers: same graph times, same terms, same errors with
file and line) and writes it as one Parquet file that Spark's file source then reads. Why: a
graph's time may come after its statements and TriG is not line-based, so Spark cannot split these
files itself; converting file by file keeps the oracle's semantics and still streams (follow mode
stages files as they arrive)."""
from __future__ import annotations

import gzip
import os
import time
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from tefq.errors import TefqError

FLUSH_TERM = "<urn:tefq:flush>"
CONTROL_SCHEMA = "ts long, s string, p string, o string"
SPARK_FORMATS = ("parquet", "tsv", "csv")
STAGED_FORMATS = ("nq", "trig", "stream")  # read by tefq.io on the driver, staged as Parquet


def _files(path: str) -> list[str]:
    from tefq.io.readers import stream_files

    return stream_files(path)


def _formats(path: str) -> set[tuple[str, bool]]:
    from tefq.io.readers import stream_format

    return {stream_format(f) for f in _files(path)}


def is_staged(path: str) -> bool:
    """True for a stream of RDF files, which `Stager` turns into Parquet for Spark."""
    return all(fmt in STAGED_FORMATS for fmt, _ in _formats(path))


def stream_format_of(path: str) -> str:
    """The one format of a stream path (Spark reads one format per source)."""
    fmts = _formats(path)
    if len(fmts) != 1:
        raise TefqError("a stream directory must hold files of one format on Spark: found "
                        + ", ".join(sorted(f + (".gz" if gz else "") for f, gz in fmts)), path)
    fmt, _ = fmts.pop()
    if fmt not in SPARK_FORMATS:
        raise TefqError(f"unexpected stream format {fmt} on Spark: a stream path holds RDF files (nq, trig, "
                        "stream) or files of one of parquet, tsv, csv", path)
    return fmt


def _header(path: str, fmt: str) -> list[str]:
    """The column order of the stream's files. Spark skips every file's first line and reads the
    columns by position, so each file's header is checked here (a file without one would lose its
    first row silently) and all must agree (issue 17)."""
    order: list[str] | None = None
    for f in _files(path):
        opener = gzip.open if f.endswith(".gz") else open
        with opener(f, "rt", encoding="utf-8-sig") as fh:
            line = fh.readline().rstrip("\r\n")
        cells = [c.strip().strip('"') for c in line.split("\t" if fmt == "tsv" else ",")]
        if sorted(cells) != ["o", "p", "s", "ts"]:
            raise TefqError(f"bad-header: expected a header with the columns ts, s, p, o; found {line!r}", f, 1)
        if order is not None and cells != order:
            raise TefqError(f"bad-header: Spark reads one column order per stream: {', '.join(order)} in the "
                            f"first file, {', '.join(cells)} here (reorder the columns or use --engine oracle)", f, 1)
        order = cells
    assert order is not None  # stream_files refuses an empty directory
    return order


def read_stream(spark: SparkSession, path: str, max_files_per_trigger: int | None) -> DataFrame:
    """A streaming DataFrame (ts long or null, s, p, o, file) over a stream file or directory.
    Files are taken in Spark's file-source order (modification time)."""
    from tefq.io.readers import literal_path_pattern

    fmt = stream_format_of(path)
    if os.path.isdir(path):  # Spark skips `.x` and `_x` itself; the glob also leaves out `x.tmp`
        directory, glob = path, name_glob(*_formats(path).pop())
    else:  # the file's own name, taken literally (`s[1].tsv` matched s1.tsv)
        directory, glob = os.path.dirname(os.path.abspath(path)), literal_path_pattern(os.path.basename(path))
    directory = literal_path_pattern(directory)  # Spark globs its paths: `d[x]` read `dx` (issue 17)
    reader = spark.readStream.option("recursiveFileLookup", "true").option("pathGlobFilter", glob)
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
                     F.xxhash64(F.col("_metadata.file_path")).alias("fh"),
                     raw.alias("ts_text"))


def name_glob(fmt: str, gz: bool) -> str:
    """Spark's pathGlobFilter for a directory's stream files: the extension, in any case."""
    ext = fmt + (".gz" if gz else "")
    return "*." + "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in ext)


def read_control(spark: SparkSession, directory: str) -> DataFrame:
    os.makedirs(directory, exist_ok=True)
    df = spark.readStream.schema(CONTROL_SCHEMA).parquet(directory)
    return df.select("ts", "s", "p", "o", F.lit(None).cast("string").alias("file"), F.lit(0).cast("long").alias("fh"),
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


def file_ranks(spark: SparkSession, paths: list[str]) -> dict[int, int]:
    """Stream order for ties (spec §1: equal timestamps apply in file order): xxhash64 of the path
    Spark reports for each file (`_metadata.file_path`) -> the file's rank in the oracle's order
    (the --stream paths in turn, each directory's files by relative path). Needed because Spark
    packs the files of a micro-batch into partitions by size, not by name. Files that arrive
    later (follow mode) are not ranked: their ties go by partition, then row."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    uris: list[str] = []
    for p in paths:
        for f in (_staged_in_order(p) if os.path.isdir(p) and _is_stage_dir(p) else _files(p)):
            hp = jvm.org.apache.hadoop.fs.Path(os.path.abspath(f))
            uri = hp.getFileSystem(conf).makeQualified(hp).toUri().toString()
            uris.append("file:/" + uri[8:] if uri.startswith("file:///") else uri)  # as Spark writes it
    if len(uris) < 2:
        return {}
    rows = spark.createDataFrame([(u, i) for i, u in enumerate(uris[:1 << 19])], "u string, r long")
    return {h: r for h, r in rows.select(F.xxhash64("u"), "r").collect()}


STAGE_INDEX = "_stage_order"  # a staged directory's source order (ignored by Spark: leading _)


def _is_stage_dir(path: str) -> bool:
    return os.path.exists(os.path.join(path, STAGE_INDEX))


def _staged_in_order(directory: str) -> list[str]:
    with open(os.path.join(directory, STAGE_INDEX), encoding="utf-8") as fh:
        names = sorted(line.rstrip("\n").split("\t") for line in fh if line.strip())
    return [os.path.join(directory, target) for _, target in names]


class Stager:
    """Stages the RDF files of one stream path as Parquet files in `directory` (see the module doc).

    A staged file keeps its source's modification time (Spark's file source takes files in that
    order) and a name made from the source's relative path, so a restart from a checkpoint finds
    the files it staged before and Spark skips the ones it already read."""

    def __init__(self, path: str, directory: str) -> None:
        self.path, self.directory = path, directory
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

        if os.path.isdir(self.path) and not has_files(self.path):
            return 0
        staged = 0
        for source in stream_files(self.path):
            target = self._target(source)
            if os.path.exists(target):
                continue
            rows = list(read_stream_file(source))
            ts, s, p, o = zip(*rows) if rows else ((), (), (), ())
            tmp = os.path.join(self.directory, "." + os.path.basename(target) + ".tmp")
            pq.write_table(pa.table({"ts": pa.array(ts, pa.int64()), "s": pa.array(s, pa.string()),
                                     "p": pa.array(p, pa.string()), "o": pa.array(o, pa.string())}), tmp)
            st = os.stat(source)
            os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
            os.replace(tmp, target)  # atomic: Spark never lists a half-written file
            with open(os.path.join(self.directory, STAGE_INDEX), "a", encoding="utf-8") as fh:
                fh.write(f"{os.path.relpath(source, self.path) if os.path.isdir(self.path) else ''}\t"
                         f"{os.path.basename(target)}\n")
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
    """Follow mode may start on an empty directory: wait for its first file (the format and, for
    CSV/TSV, the header come from it). False if `stop()` turns true first."""
    while os.path.isdir(path) and not has_files(path):
        if stop():
            return False
        time.sleep(0.2)
    return True


def stage_streams(stream_paths: list[str], workdir: str) -> tuple[list[Stager], list[str]]:
    """RDF streams become staged Parquet directories (tefq.spark.runtime.sources.Stager); others stay."""
    import hashlib

    stagers, paths = [], []
    for p in stream_paths:
        if is_staged(p):
            key = hashlib.sha1(os.path.abspath(p).encode("utf-8")).hexdigest()[:12]
            stager = Stager(p, os.path.join(workdir, "staged", key))
            stager.sync()
            stagers.append(stager)
            paths.append(stager.directory)
        else:
            paths.append(p)
    return stagers, paths
