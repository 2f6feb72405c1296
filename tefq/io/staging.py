"""Staging: a run's stream inputs as Parquet files, for an engine that picks its reader by
extension (Spark), checked on the way by tefq's readers with the run's one `BadRowLog`.

Why stage at all: one validation for both engines (issue 17). tefq's readers see what Spark's CSV
reader cannot (line numbers, headers, NUL bytes, invalid UTF-8, a fifth column, CSV quoting,
escapes), so a bad row is the same bad row with the same FILE:LINE:COL on both engines, recorded in
`--bad-rows` the same way and counted once, in the run's log; and a graph's time may come after its
statements and TriG is not line-based, so Spark could not split those files anyway.

A `Stager` turns the text files of one stream path into Parquet files in a directory, file by
file, so staging still streams: `--follow` stages files as they arrive (`Staging.sync`). The run
service's inputs staged for its readers (standard input, `--stream-format`: tefq.io.run_inputs) and
in-memory tables take one pass of the same stager (`as_parquet`) before the engine starts; the
engine stages the text streams it is given (`stage_streams`) into its checkpoint, so that a restart
finds what it staged before. Parquet files and Redis streams are read as they are.
"""
from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Collection, Container, Iterable, Mapping
from dataclasses import dataclass, field

from tefq.errors import TefqError
from tefq.io.bad_rows import STRICT, BadRowLog
from tefq.io.readers import parquet_file, parquet_read, read_table, stream_files, stream_format
from tefq.io.redis_stream import is_redis_url
from tefq.io.run_inputs import EVENTS, RunInputs, fresh_path
from tefq.io.element_tables import chunked, file_tables, write_tables
from tefq.vocabulary import Element

STAGED_FORMATS = ("tsv", "csv", "nq", "trig", "stream")  # read by tefq.io's readers, staged as Parquet
STAGE_INDEX = "_stage_order"  # a staged directory's source order (ignored by Spark: leading _)


def is_staged(path: str) -> bool:
    """True for a stream of text files, which `Stager` turns into Parquet."""
    return all(fmt in STAGED_FORMATS for fmt, _ in {stream_format(f) for f in stream_files(path)})


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
    while not is_redis_url(path) and os.path.isdir(path) and not has_files(path):
        if stop():
            return False
        time.sleep(0.2)
    return True


def files_in_stream_order(paths: list[str]) -> list[str]:
    """The files of the (staged) stream paths in the oracle's order: the paths in turn, each
    directory's files by relative path; a staged directory's files in their sources' order."""
    return [f for p in paths if not is_redis_url(p)
            for f in (staged_in_order(p) if os.path.isdir(p) and is_stage_dir(p) else stream_files(p))]


def predicates_present(paths: list[str], wanted: Collection[str]) -> set[str] | None:
    """Which of the predicates `wanted` the Parquet stream files of `paths` (staged ones included)
    hold in column p, reading that column only and stopping once all are found; None when it
    cannot be known (a Redis stream)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if any(is_redis_url(p) for p in paths):
        return None
    missing, found = set(wanted), set()
    for f in files_in_stream_order(paths):
        if not missing:
            break
        with parquet_read(f):  # the footer and every page read: a damaged one is the readers' error
            for batch in pq.ParquetFile(f).iter_batches(columns=["p"]):
                column = batch.column(0)
                column = column.dictionary_decode() if hasattr(column, "dictionary") else column
                values = set(pc.utf8_trim_whitespace(pc.unique(column)).to_pylist())
                found |= missing & values
                missing -= values
    return found


def events_in(paths: list[str]) -> list[int] | None:
    """How many events each of the (staged) Parquet stream paths holds, from the files' footers;
    None when it cannot be known (a Redis stream)."""
    if any(is_redis_url(p) for p in paths):
        return None
    return [sum(parquet_file(f).metadata.num_rows for f in files_in_stream_order([p])) for p in paths]


def is_stage_dir(path: str) -> bool:
    return os.path.exists(os.path.join(path, STAGE_INDEX))


def staged_in_order(directory: str) -> list[str]:
    """The staged files in their sources' order. A line may name a file a kill kept from being
    staged (the line is written first), or appear twice (staged again on restart)."""
    with open(os.path.join(directory, STAGE_INDEX), encoding="utf-8") as fh:
        names = sorted({tuple(line.rstrip("\n").split("\t")) for line in fh if line.strip()})
    return [os.path.join(directory, target) for _, target in names
            if os.path.exists(os.path.join(directory, target))]


def write_parquet(elements: Iterable[Element], target: str) -> None:
    """`elements` as a Parquet file of (ts long, s, p, o), written in chunks (a file may not fit in
    memory as tuples)."""
    write_tables(chunked(elements), target)


@dataclass
class Stager:
    """Stages the files of one stream path as Parquet files in `directory`; bad rows go to `log`
    (raised, or recorded and counted with --bad-rows). A file staged for the readers
    (tefq.io.run_inputs) is named in errors as `shown` says (`<stdin>`, the user's file).

    A staged file keeps its source's modification time (Spark's file source takes files in that
    order) and a name made from the source's relative path, so a restart from a checkpoint finds
    the files it staged before and Spark skips the ones it already read (their bad rows were
    recorded by the run that staged them)."""

    path: str
    directory: str
    log: BadRowLog
    shown: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        os.makedirs(self.directory, exist_ok=True)

    def relative(self, source: str) -> str:
        return os.path.relpath(source, self.path) if os.path.isdir(self.path) else os.path.basename(source)

    def sync(self, only: Container[str] | None = None) -> int:
        """Stage the files not staged yet, in name order; returns how many. A malformed file raises
        the reader's TefqError (file, line, column) before Spark sees any of it. `only`: the
        absolute paths that may be staged now (--follow: those whose size was recorded first)."""
        if os.path.isdir(self.path) and not has_files(self.path):
            return 0
        staged = 0
        for source in stream_files(self.path):
            if only is not None and os.path.abspath(source) not in only:
                continue  # not recorded yet: staged at the next poll, once it is
            target = os.path.join(self.directory, self.relative(source).replace(os.sep, "__") + ".parquet")
            if not os.path.exists(target):
                self.stage_file(source, target)
                staged += 1
        return staged

    def stage_file(self, source: str, target: str) -> None:
        tmp = os.path.join(self.directory, "." + os.path.basename(target) + ".tmp")
        try:
            write_tables(file_tables(source, self.log), tmp)  # a plain file column-wise
        except TefqError as e:
            e.file = self.shown.get(e.file or "", e.file)
            raise
        st = os.stat(source)
        os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
        with open(os.path.join(self.directory, STAGE_INDEX), "a", encoding="utf-8") as fh:
            fh.write(f"{self.relative(source) if os.path.isdir(self.path) else ''}\t{os.path.basename(target)}\n")
        os.replace(tmp, target)  # atomic: Spark never lists a half-written file


@dataclass
class Staging:
    """The stream paths as Spark reads them: `sources` (the user's) -> `paths` (text streams
    replaced by their staged Parquet directories)."""

    sources: list[str]
    paths: list[str]
    stagers: list[Stager]

    def sync(self, only: Container[str] | None = None) -> int:
        """Stage the files that arrived since (follow mode; `only` as `Stager.sync`); returns how many."""
        return sum(s.sync(only) for s in self.stagers)


def stage_streams(stream_paths: list[str], workdir: str, log: BadRowLog,
                  only: Container[str] | None = None) -> Staging:
    """Text streams become staged Parquet directories under `workdir/staged` (`Stager`), checked
    on the way, bad rows to the run's `log`; Parquet streams and Redis streams stay. `only`: as
    `Stager.sync`."""
    stagers, paths = [], []
    for p in stream_paths:
        if not is_redis_url(p) and is_staged(p):
            key = hashlib.sha1(os.path.abspath(p).encode("utf-8")).hexdigest()[:12]
            stager = Stager(p, os.path.join(workdir, "staged", key), log)
            stager.sync(only)
            stagers.append(stager)
            paths.append(stager.directory)
        else:
            paths.append(p)
    return Staging(list(stream_paths), paths, stagers)


def as_parquet(streams: RunInputs, workdir: str, log: BadRowLog = STRICT) -> list[str]:
    """Paths an engine that picks its reader by extension can read: the inputs staged for the
    readers (standard input, --stream-format) staged again by `Stager` as Parquet, each table
    written as one Parquet file (both checked by tefq's readers on the way, bad rows raised or
    sent to `log`); other paths are passed through (`stage_streams` stages the engine's)."""
    out = []
    for path in streams.paths:
        one = streams.part(path)
        if not one.staged:
            out.append(path)
            continue
        stager = Stager(path, fresh_path(workdir, "staged.parquet"), log, one.shown)
        stager.sync()
        out.append(stager.directory)
    for table in streams.tables:
        target = fresh_path(workdir, "events.parquet")
        write_parquet(read_table(table, EVENTS, log), target)
        out.append(target)
    return out
