"""Stream files that change after they were read are refused, never silently half-read.

A run records every stream file it is about to read (`tefq-input-files`, in the checkpoint or
the run's scratch directory): path, size, modification time and identity (device, inode). The
record is taken before the file is read, so a change while it is read counts as a change. Later,
the follow loop (each poll) and a restart from the checkpoint compare: a recorded file whose size,
modification time or identity differs was appended to, rewritten or replaced after tefq read it,
and the run stops with exit 2 naming it (docs/cli.md, "Changed input files"). Spark's file source
and the stager read a file once; rows appended later would otherwise never be read, and a log
rotation (`mv current.tsv old.tsv`, a new `current.tsv`) would lose the new file's rows.

A recorded file that is gone is fine (consumed files may be deleted: their rows are in the state);
new files are recorded when they first appear.

A Redis stream is not a file: a bounded run reads it up to the entry that was its last when the run
started (its pinned end, runtime/inputs.pinned_inputs). That end is recorded too
(`tefq-redis-ends`), so that a finished bounded checkpoint is refused when entries arrive after it
(`grown_redis_streams`), as it is for new files.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

from tefq.errors import TefqError
from tefq.io.atomic import write_marker
from tefq.io.readers import stream_files
from tefq.io.redis_stream import Position, RedisStream, head, is_redis_url
from tefq.io.staging import has_files

RECORD = "tefq-input-files"
REDIS_ENDS = "tefq-redis-ends"


@dataclass(frozen=True)
class Seen:
    """A stream file as it was when the run recorded it."""

    size: int
    mtime_ns: int
    device: int
    inode: int

    @classmethod
    def of(cls, path: str) -> "Seen | None":
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        return cls(st.st_size, st.st_mtime_ns, st.st_dev, st.st_ino)

    def change_to(self, now: "Seen") -> str | None:
        """How the file changed since, in words (None: it did not)."""
        if (now.device, now.inode) != (self.device, self.inode):
            return "was replaced by another file (log rotation, or written to a new file and renamed)"
        if now.size > self.size:
            return f"grew from {self.size} to {now.size} bytes"
        if now.size < self.size:
            return f"shrank from {self.size} to {now.size} bytes"
        if now.mtime_ns != self.mtime_ns:
            return "was rewritten (same size, new modification time)"
        return None


def read_record(workdir: str) -> dict[str, Seen]:
    path = os.path.join(workdir, RECORD)
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as fh:
            return {f: Seen(**fields) for f, fields in json.load(fh).items()}
    except (OSError, ValueError, TypeError) as e:
        raise TefqError(f"the record of the stream files this checkpoint read is unreadable ({e}): use a fresh "
                        "--checkpoint", path) from None


def write_record(workdir: str, record: dict[str, Seen]) -> None:
    write_marker(os.path.join(workdir, RECORD), json.dumps({f: asdict(s) for f, s in sorted(record.items())}))


def changed_file_error(path: str, how: str, workdir: str) -> TefqError:
    return TefqError(f"this stream file {how} after tefq read it (tefq reads a stream file once: its new content "
                     "would be lost, or read twice). Stream "
                     "files must be complete when they appear and never change after (write a new file, then "
                     "rename it into the directory); to read it as it is now, use a fresh --checkpoint "
                     f"(the record is {os.path.join(workdir, RECORD)})", path)


def check_inputs(workdir: str, stream_paths: list[str]) -> frozenset[str]:
    """Refuse (exit 2) a stream file recorded in `workdir` that changed since; record the ones not
    recorded yet. Called before the files are read: at a checkpoint's resume, and on every poll of
    the follow loop. Returns the recorded files (absolute paths): the only ones a reader may read
    now, since a file that appeared after this call could grow before it is recorded."""
    record = read_record(workdir)
    fresh: dict[str, Seen] = {}
    for path in input_files(stream_paths):
        now = Seen.of(path)
        if now is None:
            continue
        before = record.get(path)
        how = before.change_to(now) if before is not None else None
        if how is not None:
            raise changed_file_error(path, how, workdir)
        if before is None:
            fresh[path] = now
    renamed = {seen: path for path, seen in record.items()}
    for path, now in fresh.items():
        if now in renamed:  # same identity, size and time: a file already read, under a new name
            raise changed_file_error(renamed[now], f"was renamed to {path} (log rotation?)", workdir)
    if fresh:
        write_record(workdir, {**record, **fresh})
    return frozenset(record) | frozenset(fresh)


def input_files(stream_paths: list[str]) -> list[str]:
    """The stream files a run reads, as absolute paths (tefq.io's listing: the oracle's order); a
    directory with no file yet (--follow may start on one) has none, a Redis stream no file."""
    return [os.path.abspath(f) for p in stream_paths
            if not is_redis_url(p) and (not os.path.isdir(p) or has_files(p)) for f in stream_files(p)]


def record_redis_ends(workdir: str, inputs: list) -> None:
    """Record the pinned end (`StreamInput.end`) of each Redis stream a bounded run reads."""
    ends = {RedisStream.parse(p).url: p.end.id for p in inputs
            if is_redis_url(p) and getattr(p, "end", None) is not None}
    if ends:
        write_marker(os.path.join(workdir, REDIS_ENDS), json.dumps(ends, sort_keys=True))


def grown_redis_streams(workdir: str, stream_paths: list[str]) -> list[str]:
    """The Redis streams of `stream_paths` holding entries after the end recorded for them (a
    stream with no recorded end has none: its run did not read it bounded), each in words."""
    path = os.path.join(workdir, REDIS_ENDS)
    if not os.path.exists(path):
        return []
    try:
        with open(path, encoding="utf-8") as fh:
            recorded = json.load(fh)
    except (OSError, ValueError) as e:
        raise TefqError(f"the record of the Redis entries this checkpoint read is unreadable ({e}): use a fresh "
                        "--checkpoint", path) from None
    grown = []
    for p in stream_paths:
        if not is_redis_url(p) or RedisStream.parse(p).url not in recorded:
            continue
        stream = RedisStream.parse(p)
        now, end = head(stream.connect(), stream), recorded[stream.url]
        if Position(end).is_before(now):
            grown.append(f"{stream.url} (entries after {end}, up to {now.id})")
    return grown
