"""A run's stream inputs as tefq's readers read them (stdin, format overrides, in-memory events).

`--stream -` (standard input), `--stream PATH --stream-format FMT` (a file or directory whose
extension does not say its format) and the Python API's in-memory events become one
`RunInputs`: stdin is copied to a file in a working directory, overridden files are linked
under a name with the right extension, in-memory events stay in memory as an Arrow table. The
readers (tefq.io.readers) then check every row by the rules of tefq.io.validate — a table's rows
as a Parquet file's — and an error names the original input (`<stdin>`, the user's file,
`<events>` row N), not the staged copy. Bad rows go to the one `BadRowLog` the caller passes for
the whole run. For an engine that reads files by their extension (Spark), staging
(tefq.io.staging.as_parquet) stages these inputs again as Parquet, with the same log.
"""
from __future__ import annotations

import itertools
import os
import shutil
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tefq.errors import TefqError
from tefq.io.arrival import Arrival
from tefq.io.bad_rows import STRICT, BadRowLog, IgnoreBadRows
from tefq.io.readers import STREAM_FORMATS, locate_ts, read_stream, read_stream_file, read_table, stream_files
from tefq.io.redis_stream import RedisStream, is_redis_url, read_elements
from tefq.io.validate import HEADER
from tefq.vocabulary import Element

if TYPE_CHECKING:
    import pyarrow as pa

STDIN = "-"
EVENTS = "<events>"  # the name in-memory events are reported under


@dataclass
class RunInputs:
    """Stream paths for the readers (each reported under the name in `shown`, if staged) and
    in-memory event tables (read after the paths: a front door gives one or the other)."""

    paths: list[str] = field(default_factory=list)
    shown: dict[str, str] = field(default_factory=dict)
    tables: list["pa.Table"] = field(default_factory=list)

    @property
    def staged(self) -> bool:
        return bool(self.shown)

    def streams(self, bad_rows: BadRowLog = STRICT) -> Iterator[tuple[str, Iterator[Iterator[Element]]]]:
        """Per stream (a path, then each table): its label and its arrival batches (one per file; a
        Redis stream: its entries up to its head now, in one batch)."""
        for path in self.paths:
            if is_redis_url(path):
                stream = RedisStream.parse(path)
                yield stream.url, iter([read_elements(stream, bad_rows)])
                continue
            yield self.shown.get(path, path), (read_stream_file(f, bad_rows) for f in stream_files(path))
        for table in self.tables:
            yield EVENTS, iter([read_table(table, EVENTS, bad_rows)])

    def read_all(self, bad_rows: BadRowLog = STRICT) -> tuple[list[Element], Arrival]:
        """Every element in arrival order and how it arrived (spec §6.1): round k holds the k-th
        file of each stream that has one, as Spark reads one file per trigger and source. A
        reader's error names the original input."""
        labels: list[str] = []
        per_stream: list[list[list[Element]]] = []
        try:
            for label, batches in self.streams(bad_rows):
                labels.append(label)
                per_stream.append([list(b) for b in batches])
        except TefqError as e:
            raise self.relabel(e) from None
        elements: list[Element] = []
        rounds = []
        for k in range(max((len(b) for b in per_stream), default=0)):
            arrived = [(s, b[k]) for s, b in enumerate(per_stream) if k < len(b)]
            for _, batch in arrived:
                elements.extend(batch)
            rounds.append(tuple((s, len(batch)) for s, batch in arrived))
        return elements, Arrival(tuple(rounds), tuple(labels))

    def elements(self, bad_rows: BadRowLog = STRICT) -> Iterator[Element]:
        """All elements, path after path; a reader's error names the original input."""
        for path in self.paths:
            try:
                yield from read_stream(path, bad_rows)
            except TefqError as e:
                raise self.relabel(e) from None
        for table in self.tables:
            yield from read_table(table, EVENTS, bad_rows)

    def names(self) -> list[str]:
        """Each stream's name as the user gave it (`streams`' labels), paths then tables: what
        `tefq.io.staging.as_parquet` stages for Spark, in its order."""
        return [self.shown.get(p, p) for p in self.paths] + [EVENTS] * len(self.tables)

    def locate(self, ts: int) -> tuple[str, int]:
        """(file, line) of the first row at `ts`, under the name the user gave (an error path);
        in-memory events: (`<events>`, row)."""
        file, line = locate_ts([p for p in self.paths if not is_redis_url(p)], ts)
        if line or not self.tables:
            return self.shown.get(file, file), line
        rows = itertools.chain.from_iterable(read_table(t, EVENTS, IgnoreBadRows()) for t in self.tables)
        return EVENTS, next((i for i, e in enumerate(rows, 1) if e[0] == ts), 0)

    def relabel(self, error: TefqError) -> TefqError:
        error.file = self.shown.get(error.file or "", error.file)
        return error

    def part(self, path: str) -> "RunInputs":
        """The staging of one of `paths` (empty `shown` if it was passed through)."""
        return RunInputs([path], {k: v for k, v in self.shown.items()
                                      if k == path or k.startswith(path + os.sep)})


def check_format(fmt: str | None) -> None:
    if fmt is not None and fmt not in STREAM_FORMATS:
        raise TefqError(f"unknown stream format {fmt!r}: expected one of {', '.join(STREAM_FORMATS)}",
                        file="--stream-format")


def stage(paths: Iterable[str], fmt: str | None, workdir: str, table: "pa.Table | None" = None) -> RunInputs:
    """Every `--stream` argument (`stage_stream`), and in-memory events as a table."""
    staged = RunInputs()
    for path in paths:
        stage_stream(path, fmt, workdir, staged)
    if table is not None:
        staged.tables.append(table)
    return staged


def stage_stream(path: str, fmt: str | None, workdir: str, into: RunInputs) -> None:
    """Add one `--stream` argument: `-` (stdin, TSV unless `fmt` says otherwise), a path read as
    `fmt`, or (no `fmt`) a path read by its extension as is."""
    check_format(fmt)
    if path == STDIN:
        staged = fresh_path(workdir, f"stdin.{fmt or 'tsv'}")
        with open(staged, "wb") as out:
            shutil.copyfileobj(sys.stdin.buffer, out)
        into.paths.append(staged)
        into.shown[staged] = "<stdin>"
    elif fmt is None:
        into.paths.append(path)
    else:
        links = fresh_path(workdir, "as-" + fmt)
        os.makedirs(links)
        into.shown[links] = path  # the stream is named as the user named it, not as staged
        for i, (shown, real) in enumerate(_files(path)):
            gz = ".gz" if real.lower().endswith(".gz") and fmt != "parquet" else ""
            link = os.path.join(links, f"{i:06d}.{fmt}{gz}")
            os.symlink(os.path.abspath(real), link)
            into.shown[link] = real
        into.paths.append(links)


def fresh_path(workdir: str, name: str) -> str:
    """A path in `workdir` no earlier staging used (two `--stream -` or two overrides)."""
    n = 0
    while os.path.exists(candidate := os.path.join(workdir, f"{n}-{name}")):
        n += 1
    return candidate


def _files(path: str) -> list[tuple[str, str]]:
    """The files of a path in reading order (a directory's in relative-path order, skipping
    hidden and `_`-prefixed bookkeeping files as the readers do)."""
    if not os.path.exists(path):
        raise TefqError("no such stream file or directory", path)
    if not os.path.isdir(path):
        return [(path, path)]
    found = []
    for root, dirs, files in os.walk(path, followlinks=True):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        found += [(os.path.relpath(os.path.join(root, f), path), os.path.join(root, f))
                  for f in files if not f.startswith((".", "_")) and not f.endswith(".crc")]
    if not found:
        raise TefqError("the stream directory holds no stream files", path)
    return sorted(found)


# ---------------------------------------------------------------------------------------------
# In-memory events (the Python API)

def is_paths(events: Any) -> bool:
    """Whether `events` names stream files (a path, or a non-empty list of them)."""
    if isinstance(events, (str, os.PathLike)):
        return True
    return isinstance(events, (list, tuple)) and bool(events) and all(isinstance(e, (str, os.PathLike))
                                                                       for e in events)


def events_table(events: Any) -> "pa.Table":
    """A pandas DataFrame, a pyarrow Table or an iterable of (ts, s, p, o) tuples as an Arrow
    table of columns ts, s, p, o (its cells are checked when read: `tefq.io.readers.read_table`).
    A column with no type (all null, or no rows: an empty DataFrame's) takes the type it must
    have, so an empty table gives no rows and null cells are bad rows like a Parquet file's."""
    table = _arrow_events(events)
    missing = [c for c in HEADER if c not in table.column_names]
    if missing:
        raise TefqError(f"the events have no column(s) {', '.join(missing)}: expected ts, s, p, o "
                        f"(found {', '.join(table.column_names) or 'none'})", file=EVENTS)
    return _typed_nulls(table.select(list(HEADER)))


def _typed_nulls(table: "pa.Table") -> "pa.Table":
    import pyarrow as pa

    types = {"ts": pa.int64(), "s": pa.string(), "p": pa.string(), "o": pa.string()}
    for i, name in enumerate(HEADER):
        if pa.types.is_null(table.schema.field(name).type):
            table = table.set_column(i, name, table.column(name).cast(types[name]))
    return table


def _arrow_events(events: Any) -> "pa.Table":
    import pyarrow as pa

    if isinstance(events, pa.Table):
        return events
    if isinstance(events, pa.RecordBatch):
        return pa.Table.from_batches([events])
    if events is None or isinstance(events, (str, bytes, bytearray, Mapping)) or not isinstance(events, Iterable):
        raise TefqError(f"events must be a pandas DataFrame, a pyarrow Table, (ts, s, p, o) tuples or stream "
                        f"paths, not {type(events).__name__}", file=EVENTS)
    if type(events).__module__.startswith("pandas"):
        try:
            return pa.Table.from_pandas(events, preserve_index=False)
        except (pa.ArrowException, ValueError, TypeError) as e:
            raise TefqError(f"cannot read the events DataFrame: {e}", file=EVENTS) from None
    return _tuples_table(events)


def _tuples_table(events: Iterable) -> "pa.Table":
    import pyarrow as pa

    columns: list[list] = [[], [], [], []]
    for i, row in enumerate(events, 1):
        if not isinstance(row, (tuple, list)) or len(row) != 4:
            raise TefqError(f"row {i}: expected a (ts, s, p, o) tuple, found {row!r:.60}", file=EVENTS, line=i)
        for column, value in zip(columns, row):
            column.append(value)
    try:
        return pa.table({name: pa.array(values) for name, values in zip(HEADER, columns)})  # typed by _typed_nulls
    except (pa.ArrowException, ValueError, TypeError) as e:
        raise TefqError(f"cannot read the events: {e}", file=EVENTS) from None
