"""A progress bar for a person at a terminal, for the steps of a run that take long.

A front door turns bars on for the duration of a run (`showing(True)`: the command line does unless
--quiet); the code that does the work asks for a bar where it loops (`bar("q1: ticks", total)`)
and advances it. A bar is drawn on stderr only when stderr is a terminal and the step has taken
more than `DELAY` seconds (a short run stays as quiet as before; a pipe never sees one), redrawn
at most ten times a second, and erased when the step ends. Without `showing`, or piped, every
call is a no-op, so the oracle and the writers need no flag of their own.
"""
from __future__ import annotations

import contextlib
import contextvars
import sys
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

DELAY = 2.0  # seconds before a step earns a bar
WIDTH = 24  # the bar's cells
T = TypeVar("T")

_enabled: contextvars.ContextVar[bool] = contextvars.ContextVar("tefq_progress", default=False)
_open: list["Bar"] = []  # bars drawn and not yet closed: `showing` erases them however the block ends


@contextlib.contextmanager
def showing(enabled: bool) -> Iterator[None]:
    """Bars inside the block when `enabled` and stderr is a terminal; any still drawn when it ends
    (an error cut a step short) are erased, so the message that follows starts its own line."""
    token = _enabled.set(enabled and sys.stderr.isatty())
    try:
        yield
    finally:
        _enabled.reset(token)
        while _open:
            _open.pop().close()


def active() -> bool:
    return _enabled.get()


class Bar:
    """One step's bar: `advance(done)` of `total` (None: a count and the time so far only)."""

    def __init__(self, label: str, total: int | None = None) -> None:
        self.label, self.total = label, total
        self.started = time.monotonic()
        self.drawn_at = 0.0
        self.shown = False
        self.done = 0

    def advance(self, done: int, note: str = "") -> None:
        self.done = done
        now = time.monotonic()
        if now - self.started < DELAY or now - self.drawn_at < 0.1:
            return
        if not self.shown:
            _open.append(self)
        self.drawn_at, self.shown = now, True
        sys.stderr.write("\r\x1b[K" + self.line(now, note))
        sys.stderr.flush()

    def line(self, now: float, note: str = "") -> str:
        seconds = f"{now - self.started:.0f} s"
        if not self.total:
            return f"{self.label}: {self.done:,} {note}".rstrip() + f", {seconds}"
        part = min(1.0, self.done / self.total)
        filled = round(part * WIDTH)
        return (f"{self.label} ▕{'█' * filled}{' ' * (WIDTH - filled)}▏ {part:4.0%} "
                f"({self.done:,} / {self.total:,}{' ' + note if note else ''}), {seconds}")

    def say(self, text: str) -> None:
        """A line that stays (a micro-batch's figures), printed above the bar."""
        sys.stderr.write(("\r\x1b[K" if self.shown else "") + text + "\n")
        self.drawn_at = 0.0
        sys.stderr.flush()

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self.shown = False
            if self in _open:
                _open.remove(self)


class _NoBar(Bar):
    def advance(self, done: int, note: str = "") -> None:
        pass

    def say(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)


def start(label: str, total: int | None = None) -> Bar:
    """A bar for a step (a no-op one unless `showing` is on and stderr a terminal); `close()` it
    at the step's end."""
    return Bar(label, total) if active() else _NoBar(label, total)


@contextlib.contextmanager
def bar(label: str, total: int | None = None) -> Iterator[Bar]:
    """`start`'s bar for the block, closed at its end."""
    b = start(label, total)
    try:
        yield b
    finally:
        b.close()


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 row`, `2 rows`, `1,470,445 rows` (`many`: an irregular plural)."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def counted(items: Iterable[T], label: str, total: int | None = None, every: int = 10_000) -> Iterator[T]:
    """`items`, advancing a bar every `every` items (writing a million rows)."""
    if not active():
        yield from items
        return
    with bar(label, total) as b:
        for i, item in enumerate(items, 1):
            if i % every == 0:
                b.advance(i)
            yield item


__all__ = ["showing", "active", "start", "bar", "counted", "plural", "Bar", "DELAY"]
