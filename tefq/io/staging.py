"""Inputs that are not files named by their format, made readable by tefq's readers.

`--stream -` (standard input), `--stream-format FMT` (a file or directory whose extension does
not say its format) and the Python API's in-memory events are staged into a working directory:
stdin is copied to a file, overridden files are linked under a name with the right extension,
tables are written as Parquet. The readers in tefq.io.readers then check them exactly as they
check any stream file; their errors name the original input, not the staged copy.
"""
from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tefq.errors import TefqError
from tefq.io.bad_rows import STRICT, BadRowLog
from tefq.io.readers import STREAM_FORMATS, read_stream
from tefq.vocabulary import Element

STDIN = "-"


@dataclass
class StagedStreams:
    """Stream paths for the readers, and the name each staged path is reported under."""

    paths: list[str] = field(default_factory=list)
    shown: dict[str, str] = field(default_factory=dict)

    @property
    def staged(self) -> bool:
        return bool(self.shown)

    def elements(self, bad_rows: BadRowLog = STRICT) -> Iterator[Element]:
        """All elements, path after path; a reader's error names the original input; bad rows
        raise, or go to `bad_rows`."""
        for path in self.paths:
            try:
                yield from read_stream(path, bad_rows)
            except TefqError as e:
                raise self.relabel(e) from None

    def locate(self, ts: int) -> tuple[str, int]:
        """(file, line) of the first row at `ts`, under the name the user gave (an error path)."""
        from tefq.io.readers import locate_ts

        file, line = locate_ts(self.paths, ts)
        return self.shown.get(file, file), line

    def relabel(self, error: TefqError) -> TefqError:
        error.file = self.shown.get(error.file or "", error.file)
        return error

    def part(self, path: str) -> "StagedStreams":
        """The staging of one of `paths` (empty `shown` if it was passed through)."""
        return StagedStreams([path], {k: v for k, v in self.shown.items()
                                      if k == path or k.startswith(path + os.sep)})


def check_format(fmt: str | None) -> None:
    if fmt is not None and fmt not in STREAM_FORMATS:
        raise TefqError(f"unknown stream format {fmt!r}: expected one of {', '.join(STREAM_FORMATS)}",
                        file="--stream-format")


def stage_stream(path: str, fmt: str | None, workdir: str, into: StagedStreams) -> None:
    """Add one `--stream` argument: `-` (stdin, TSV unless `fmt` says otherwise), a path read as
    `fmt`, or (no `fmt`) a path read by its extension as is."""
    check_format(fmt)
    if path == STDIN:
        staged = _fresh(workdir, f"stdin.{fmt or 'tsv'}")
        with open(staged, "wb") as out:
            shutil.copyfileobj(sys.stdin.buffer, out)
        into.paths.append(staged)
        into.shown[staged] = "<stdin>"
    elif fmt is None:
        into.paths.append(path)
    else:
        links = _fresh(workdir, "as-" + fmt)
        os.makedirs(links)
        for i, (shown, real) in enumerate(_files(path)):
            gz = ".gz" if real.lower().endswith(".gz") and fmt != "parquet" else ""
            link = os.path.join(links, f"{i:06d}.{fmt}{gz}")
            os.symlink(os.path.abspath(real), link)
            into.shown[link] = real
        into.paths.append(links)


def _fresh(workdir: str, name: str) -> str:
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


def as_parquet(streams: StagedStreams, workdir: str, bad_rows: BadRowLog = STRICT) -> list[str]:
    """Paths an engine that picks its reader by extension can read: staged inputs are converted
    to one Parquet file each (checked by tefq's readers on the way, bad rows raised or sent to
    `bad_rows`), others are passed through."""
    from tefq.io.stream_writers import write_stream

    out = []
    for path in streams.paths:
        one = streams.part(path)
        if not one.staged:
            out.append(path)
            continue
        target = _fresh(workdir, "staged.parquet")
        write_stream(one.elements(bad_rows), target, "parquet")
        out.append(target)
    return out


def table_to_parquet(events: Any, workdir: str) -> str:
    """A pandas DataFrame, a pyarrow Table or an iterable of (ts, s, p, o) tuples as a Parquet
    file with columns ts, s, p, o (not checked here: the Parquet reader checks every cell)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = _arrow_events(events)
    missing = [c for c in ("ts", "s", "p", "o") if c not in table.column_names]
    if missing:
        raise TefqError(f"the events have no column(s) {', '.join(missing)}: expected ts, s, p, o "
                        f"(found {', '.join(table.column_names) or 'none'})", file="<events>")
    target = _fresh(workdir, "events.parquet")
    try:
        pq.write_table(table.select(["ts", "s", "p", "o"]), target)
    except pa.ArrowException as e:
        raise TefqError(f"cannot store the events: {e}", file="<events>") from None
    return target


def _arrow_events(events: Any):
    import pyarrow as pa

    if isinstance(events, pa.Table):
        return events
    if type(events).__module__.startswith("pandas"):
        try:
            return pa.Table.from_pandas(events, preserve_index=False)
        except (pa.ArrowException, ValueError, TypeError) as e:
            raise TefqError(f"cannot read the events DataFrame: {e}", file="<events>") from None
    return _tuples_table(events)


def _tuples_table(events: Iterable) -> Any:
    import pyarrow as pa

    empty_types = {"ts": pa.int64(), "s": pa.string(), "p": pa.string(), "o": pa.string()}
    columns: list[list] = [[], [], [], []]
    for i, row in enumerate(events, 1):
        if not isinstance(row, (tuple, list)) or len(row) != 4:
            raise TefqError(f"row {i}: expected a (ts, s, p, o) tuple, found {row!r:.60}", file="<events>",
                            line=i)
        for column, value in zip(columns, row):
            column.append(value)
    try:
        return pa.table({name: pa.array(values, type=None if values else empty)
                         for (name, empty), values in zip(empty_types.items(), columns)})
    except (pa.ArrowException, ValueError, TypeError) as e:
        raise TefqError(f"cannot read the events: {e}", file="<events>") from None
