"""`tefq publish PATH --to DIR|redis://HOST:PORT/KEY`: feed a live stream from stream files at a
fixed rate, as YABench's feeder feeds an engine under test.

The elements of PATH (any stream format, read with tefq's readers, checked) go out in stream order,
`rate * interval` per interval (the fractions carried over, so the long-run rate is exact): into a
directory one file per interval (`part-NNNNNNNN.<fmt>`, written as a hidden `.name.tmp` and then
renamed, so a `--follow` run never reads half a file), or into a Redis stream (XADD, one MULTI/EXEC
per interval, so a reader never sees half an interval either). Interval k goes out when k + 1
intervals have passed since the start (with `--phase D`: at the wall-clock multiples of the
interval plus D, so a delay measurement has a known phase against the ticks); a publisher that
falls behind sends at once and says how far behind it is. Without `--rate` everything goes out as
fast as possible, in chunks.

`--restamp` gives live timestamps: `now` stamps the elements of each interval with the wall-clock
times it covers (spread evenly over the interval, each interval after the one before, none after the
moment it is sent): what a live test measuring delay needs. `shift` moves every timestamp by one
offset (the first element gets the wall clock), keeping the gaps and the order between elements
(a programme guide published ahead stays ahead). `keep` (default) leaves them.
"""
from __future__ import annotations

import argparse
import itertools
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from tefq.analysis.durations import duration_ms
from tefq.errors import TefqError
from tefq.io.element_tables import TableQueue, elements_of, stream_tables, write_tables, write_tsv_table
from tefq.io.redis_stream import RedisStream, add_elements, is_redis_url
from tefq.io.stream_writers import write_stream
from tefq.vocabulary import Element

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

DIR_FORMATS = ("tsv", "csv", "parquet")
RESTAMPS = ("keep", "now", "shift")
UNTHROTTLED_CHUNK = 100_000  # elements per file / pipeline batch without --rate
PROGRESS_EVERY_S = 5.0
PART = re.compile(r"part-(\d+)\.")


class Clock:
    """Time as the publisher sees it (tests pass their own): a monotonic clock for the schedule,
    sleeping, and the wall clock for `--restamp`."""

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class Pace:
    """`rate` elements per second (0: as fast as possible) in intervals of `interval_ms`."""

    rate: int = 0
    interval_ms: int = 1000
    phase_ms: int | None = None  # intervals end at wall-clock multiples of interval_ms plus this

    def start(self, clock: "Clock") -> float:
        """The schedule's origin (monotonic seconds): now, or with `phase_ms` placed so that every
        interval ends `phase_ms` after a multiple of the interval on the wall clock (the first,
        then, is shorter): a delay measurement's phase against the ticks, fixed instead of random."""
        now = clock.monotonic()
        if self.phase_ms is None or not self.rate:
            return now
        wall = clock.wall_ms()
        first_end = wall + (self.phase_ms - wall) % self.interval_ms or self.interval_ms
        return now + (first_end - wall - self.interval_ms) / 1000

    def sizes(self) -> Iterator[int]:
        """Elements per interval: rate * interval, the fractions carried over."""
        if not self.rate:
            yield from itertools.repeat(UNTHROTTLED_CHUNK)
            return
        for k in itertools.count():
            yield (self.rate * self.interval_ms * (k + 1)) // 1000 - (self.rate * self.interval_ms * k) // 1000

    def due(self, start: float, index: int) -> float | None:
        """When interval `index` goes out (monotonic seconds); None: at once."""
        return start + (index + 1) * self.interval_ms / 1000 if self.rate else None


@dataclass(frozen=True)
class Sent:
    """One interval as it went out: how many elements, when it was due and when it was sent
    (monotonic seconds), and its first and last timestamps (after restamping)."""

    index: int
    events: int
    due: float | None
    sent: float
    first_ts: int
    last_ts: int

    @property
    def behind(self) -> float:
        return max(0.0, self.sent - self.due) if self.due is not None else 0.0


@dataclass
class PublishReport:
    target: str
    intervals: list[Sent] = field(default_factory=list)

    @property
    def events(self) -> int:
        return sum(s.events for s in self.intervals)

    @property
    def behind(self) -> float:
        return max((s.behind for s in self.intervals), default=0.0)


class Restamper:
    """`--restamp` (see the module doc); keeps what it needs between intervals."""

    def __init__(self, mode: str, interval_ms: int) -> None:
        if mode not in RESTAMPS:
            raise TefqError(f"--restamp must be one of {', '.join(RESTAMPS)}, got {mode!r}", "--restamp")
        self.mode, self.interval_ms = mode, interval_ms
        self.offset: int | None = None  # shift
        self.last: int | None = None  # now: the last stamp given

    def __call__(self, chunk: list[Element], wall_ms: int) -> list[Element]:
        """The elements of one interval, restamped."""
        import numpy as np

        if self.mode == "keep" or not chunk:
            return chunk
        stamps = self.stamps(np.fromiter((e[0] for e in chunk), np.int64, len(chunk)), wall_ms).tolist()
        return [(t, s, p, o) for t, (_, s, p, o) in zip(stamps, chunk)]

    def table(self, chunk: "pa.Table", wall_ms: int) -> "pa.Table":
        """The same for an interval's table of elements (tefq.io.element_tables)."""
        import pyarrow as pa

        if self.mode == "keep" or not chunk.num_rows:
            return chunk
        ts = self.stamps(chunk["ts"].to_numpy(), wall_ms)
        return chunk.set_column(0, "ts", pa.array(ts, pa.int64()))

    def stamps(self, ts: "np.ndarray", wall_ms: int) -> "np.ndarray":
        """New timestamps for one interval's (`ts`: not empty)."""
        import numpy as np

        if self.mode == "shift":
            if self.offset is None:
                self.offset = wall_ms - int(ts[0])
            return ts + self.offset
        low = wall_ms - self.interval_ms if self.last is None else min(max(self.last, wall_ms - self.interval_ms),
                                                                      wall_ms)
        span, n = wall_ms - low, len(ts)
        # Stamps in (low, wall_ms]: with more elements than milliseconds, none ties with the last
        # stamp of the interval before (a tie across files is ordered by the files' arrival, which
        # two files written in the same millisecond do not settle: docs/live.md, "Ties between files").
        out = low + 1 + ((span - 1) * np.arange(1, n + 1, dtype=np.int64)) // n
        self.last = int(out[-1])
        return out


# ---------------------------------------------------------------------------------------------
# Where the elements go

class Sink(Protocol):
    def write(self, chunk: "pa.Table") -> None: ...

    def close(self) -> None: ...


class DirectorySink:
    """One file per interval, `part-NNNNNNNN.<fmt>`, numbered on after the parts already there
    (a publisher started again adds to the stream); written hidden, then renamed."""

    def __init__(self, directory: str, fmt: str) -> None:
        if os.path.exists(directory) and not os.path.isdir(directory):
            raise TefqError("--to names a file: give a directory or redis://HOST:PORT/KEY", directory)
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as e:
            raise TefqError(f"cannot create the directory: {e.strerror or e}", directory) from None
        self.directory, self.fmt = directory, fmt
        taken = [int(m.group(1)) for name in os.listdir(directory) if (m := PART.match(name))]
        self.next = max(taken, default=-1) + 1

    def write(self, chunk: "pa.Table") -> None:
        name = f"part-{self.next:08d}.{self.fmt}"
        tmp = os.path.join(self.directory, f".{name}.tmp")
        try:
            if self.fmt == "parquet":  # the elements come from tefq's readers, checked: no second check
                write_tables([chunk], tmp)
            elif self.fmt == "tsv":
                write_tsv_table(chunk, tmp)
            else:
                write_stream(elements_of(chunk), tmp, self.fmt)
            os.replace(tmp, os.path.join(self.directory, name))
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        self.next += 1

    def close(self) -> None:
        pass


class RedisSink:
    """XADD into a Redis stream, in pipelines."""

    def __init__(self, url: str) -> None:
        self.stream = RedisStream.parse(url)
        self.client = self.stream.connect()

    def write(self, chunk: "pa.Table") -> None:
        add_elements(self.client, self.stream, elements_of(chunk))

    def close(self) -> None:
        self.client.close()


def open_sink(target: str, fmt: str | None) -> Sink:
    if is_redis_url(target):
        if fmt:
            raise TefqError("--format is for a directory target (a Redis stream holds entries)", "--format")
        return RedisSink(target)
    return DirectorySink(target, fmt or "tsv")


# ---------------------------------------------------------------------------------------------
# Publishing

def publish(path: str, target: str, pace: Pace = Pace(), *, restamp: str = "keep", fmt: str | None = None,
            limit: int | None = None, clock: Clock | None = None,
            progress: Callable[[str], None] | None = None) -> PublishReport:
    """Send the elements of the stream `path` to `target` at `pace` (the module doc); `limit`:
    at most this many elements; `progress`: called with a line now and then and at the end."""
    clock = clock or Clock()
    elements, left = TableQueue(stream_tables(path)), limit  # checked, column-wise where a file allows
    sink, stamp = open_sink(target, fmt), Restamper(restamp, pace.interval_ms)
    report, start = PublishReport(target), pace.start(clock)
    began = told = clock.monotonic()
    try:
        for index, size in enumerate(pace.sizes()):
            chunk = elements.take(size if left is None else min(size, left))
            if size and not chunk.num_rows:
                break
            left = None if left is None else left - chunk.num_rows
            due = pace.due(start, index)
            if due is not None and due > clock.monotonic():
                clock.sleep(due - clock.monotonic())
            chunk = stamp.table(chunk, clock.wall_ms())
            if chunk.num_rows:
                sink.write(chunk)
            ts = chunk["ts"]
            report.intervals.append(Sent(index, chunk.num_rows, due, clock.monotonic(),
                                         ts[0].as_py() if len(ts) else 0, ts[-1].as_py() if len(ts) else 0))
            if progress and clock.monotonic() - told >= PROGRESS_EVERY_S:
                told = clock.monotonic()
                progress(progress_line(report, pace, told - began))
    finally:
        sink.close()
    if progress:
        progress(progress_line(report, pace, clock.monotonic() - began, done=True))
    return report


def progress_line(report: PublishReport, pace: Pace, seconds: float, done: bool = False) -> str:
    asked = f"{pace.rate:,}/s asked" if pace.rate else "unthrottled"
    late = f", at most {report.behind:.2f} s behind schedule" if report.behind else ""
    return (f"tefq publish: {'done: ' if done else ''}{report.events:,} events in {len(report.intervals)} "
            f"intervals to {report.target} in {seconds:.1f} s ({asked}, "
            f"{report.events / max(seconds, 1e-9):,.0f}/s sent){late}")


# ---------------------------------------------------------------------------------------------
# Command line

def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `tefq publish` to tefq's parser (func=cmd_publish)."""
    p = subparsers.add_parser("publish", help="feed a live stream from files at a fixed rate",
                              description="Sends the elements of PATH, in stream order, to a directory (one "
                                          "file per interval, written hidden then renamed) or a Redis stream "
                                          "(entries with fields ts, s, p, o).")
    p.add_argument("path", metavar="PATH", help="a stream file or directory (any stream format)")
    p.add_argument("--to", required=True, metavar="DIR|redis://HOST:PORT/KEY", help="where the stream goes")
    p.add_argument("--rate", type=int, default=0, metavar="N", help="elements per second (default: as fast as "
                   "possible)")
    p.add_argument("--interval", default="1s", metavar="DURATION", help="one file or batch per interval")
    p.add_argument("--restamp", choices=RESTAMPS, default="keep",
                   help="timestamps: keep them, stamp each interval with the wall clock (now), or move them all "
                        "by one offset so the first is now (shift)")
    p.add_argument("--format", choices=DIR_FORMATS, default=None, help="file format in a directory (default tsv)")
    p.add_argument("--phase", default=None, metavar="DURATION",
                   help="end every interval this long after a wall-clock multiple of --interval (with --rate; "
                        "default: intervals count from the start)")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="send at most N elements")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_publish)


def cmd_publish(args: argparse.Namespace) -> int:
    interval = duration_ms(args.interval, "--interval")
    if interval <= 0:
        raise TefqError("--interval must be longer than 0", "--interval")
    for option, value in (("--rate", args.rate), ("--limit", args.limit)):
        if value is not None and value < 0:
            raise TefqError(f"{option} cannot be negative, got {value}", option)
    phase = None if args.phase is None else duration_ms(args.phase, "--phase")
    if phase is not None and not 0 <= phase < interval:
        raise TefqError(f"--phase must be at least 0 and shorter than --interval, got {args.phase}", "--phase")
    say = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    publish(args.path, args.to, Pace(args.rate, interval, phase), restamp=args.restamp, fmt=args.format,
            limit=args.limit, progress=say)
    return 0
