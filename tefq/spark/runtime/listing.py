"""A bounded run hands Spark each input's files in stream order (spec §1 and §6.1).

Spark's file source takes a directory's files by modification time, and files written within one
millisecond (`split`, a generator, a copy) in whatever order its listing gives; the oracle's
arrival model and the operators' per-stream limits (`inputs.stream_limits`) count a stream's files
in stream order (each directory's files by relative path). When the two differ, a micro-batch may
read a stream's last file first, its event time jumps to the end, and the files before it come
late (issue 40: UC3 over a log split by `split`, 3,636 events late). So a bounded run reads each
file input through a listing: a directory of the run's own that holds only a file-sink log
(`_spark_metadata/0`, what Spark's file sink writes and its file source reads back instead of
listing a directory), naming the input's files with their rank as their time. Spark then takes
them in that order, `--max-files-per-trigger` at a time. The rows keep their file's own path and
modification time (`_metadata`, read from the file itself), so tie ranks, file hashes and error
locations are those of a directory read.
"""
from __future__ import annotations

import json
import os

from pyspark.sql import SparkSession

from tefq.io.redis_stream import is_redis_url
from tefq.io.staging import files_in_stream_order
from tefq.spark.runtime.ranks import spark_uris
from tefq.spark.runtime.sources import StreamInput

LOG_DIR = "_spark_metadata"  # Spark's FileStreamSink.metadataDir
LOG_VERSION = "v1"  # FileStreamSinkLog.VERSION
BLOCK_SIZE = 32 << 20  # a local file's block size as Hadoop reports it (unused by the reader)


def listing_entries(uris: list[str], sizes: list[int]) -> list[str]:
    """The log's lines: its version, then one file per line, its rank as modification time."""
    return [LOG_VERSION] + [json.dumps({"path": uri, "size": size, "isDir": False, "modificationTime": rank,
                                        "blockReplication": 1, "blockSize": BLOCK_SIZE, "action": "add"})
                            for rank, (uri, size) in enumerate(zip(uris, sizes))]


def write_listing(directory: str, uris: list[str], sizes: list[int]) -> None:
    """Write (or rewrite, on a restart) the listing of one input: batch 0 of a file-sink log."""
    log = os.path.join(directory, LOG_DIR)
    os.makedirs(log, exist_ok=True)
    tmp = os.path.join(log, ".0.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write("\n".join(listing_entries(uris, sizes)))
    os.replace(tmp, os.path.join(log, "0"))


def listed_inputs(spark: SparkSession, inputs: list[StreamInput], workdir: str) -> list[StreamInput]:
    """The bounded run's inputs, each file input with its listing under `workdir/staged/`
    (beside the staged text streams; `sources.read_stream` and `columnar.read_paths` read it)."""
    out = []
    for i, p in enumerate(inputs):
        given = p if isinstance(p, StreamInput) else StreamInput(p, i)
        if is_redis_url(p):
            out.append(given)
            continue
        files = files_in_stream_order([p])
        directory = os.path.join(workdir, "staged", f"listed-{given.stream}")
        write_listing(directory, spark_uris(spark, files), [os.path.getsize(f) for f in files])
        out.append(StreamInput(p, given.stream, given.end, given.bad_rows, given.accept_gaps, listing=directory))
    return out


def one_source(inputs: list[StreamInput]) -> list[StreamInput]:
    """A bounded run that reads its files by path (columnar and direct ingestion) with every file
    input listed: those inputs as one input whose listing names all their files, in stream order
    (input by input), so Spark plans one file source instead of one per input. The tasks place
    each file by its path (columnar.FileOrder), not by its source, so the rows are the same; a
    source costs every micro-batch its planning (the W3C suite's 459 streams: one source each took
    most of a 100 s run). Redis inputs stay sources of their own."""
    listed = [p for p in inputs if isinstance(p, StreamInput) and p.listing is not None]
    others = [p for p in inputs if not (isinstance(p, StreamInput) and p.listing is not None)]
    entries = []
    for p in listed:
        with open(os.path.join(p.listing, LOG_DIR, "0"), encoding="utf-8") as fh:
            entries += [json.loads(line) for line in fh.read().splitlines()[1:]]
    paths = [e["path"] for e in entries]
    if len(listed) < 2 or len(set(paths)) < len(paths):  # one file in two inputs: one source would read it once
        return inputs
    directory = os.path.join(os.path.dirname(listed[0].listing), "listed-together")
    write_listing(directory, paths, [e["size"] for e in entries])
    first = listed[0]
    return [StreamInput(first, first.stream, first.end, first.bad_rows, first.accept_gaps, listing=directory), *others]
