"""What one input may make tefq hold at once: a line, a term, a gzip file's expansion.

Every reader enforces these while it reads, so no input exhausts memory (a 2 GiB file without a
newline, `/dev/zero` piped in, a gzip bomb) and no error message repeats more than `EXCERPT`
characters of it (docs/formats.md, "Limits"):

- `TEFQ_MAX_LINE_BYTES` (default 1 MiB): a longer line of a text stream is a bad row
  (`line-too-long`), reported with its first characters and skipped in bounded memory;
- `TEFQ_MAX_TERM_CHARS` (default 64 Ki characters): a longer s, p or o (any format, Parquet too)
  is a bad row (`term-too-long`);
- `TEFQ_MAX_GZIP_RATIO` (default 100): a `.gz` stream or background that decompresses to more
  than this many times its size (and more than `GZIP_FLOOR_BYTES`, 64 MiB) stops the run with
  exit 2 naming the file.

Each is read from the environment when it applies (a test lowers one for a small input).
"""
from __future__ import annotations

import gzip
import io
import os

from tefq.errors import TefqError

EXCERPT = 120  # characters of an offending row an error shows
GZIP_FLOOR_BYTES = 64 << 20  # any gzip file may decompress to this much


def setting(name: str, default: int) -> int:
    """A positive integer from the environment (`default` if unset); exit 2 if it is not one."""
    text = os.environ.get(name)
    if text is None:
        return default
    if not text.strip().isdigit() or int(text) <= 0:
        raise TefqError(f"{name} must be a positive whole number, not {text[:40]!r}", name)
    return int(text)


def max_line_bytes() -> int:
    return setting("TEFQ_MAX_LINE_BYTES", 1 << 20)


def max_term_chars() -> int:
    return setting("TEFQ_MAX_TERM_CHARS", 1 << 16)


def excerpt(text: str, limit: int = EXCERPT) -> str:
    """The start of `text`, marked as cut when it was longer."""
    return text if len(text) <= limit else text[:limit] + f"… ({len(text):,} characters)"


class CappedGzip(io.RawIOBase):
    """A gzip file's decompressed bytes that stop with exit 2 past the ratio cap (module doc)."""

    def __init__(self, path: str) -> None:
        ratio = setting("TEFQ_MAX_GZIP_RATIO", 100)
        self.path, self.ratio = path, ratio
        self.limit = max(GZIP_FLOOR_BYTES, ratio * os.path.getsize(path))
        self.read_bytes = 0
        self.gz = gzip.open(path, "rb")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self.gz.readinto(buffer)
        self.read_bytes += n
        if self.read_bytes > self.limit:
            raise TefqError(f"this gzip file decompresses to more than {self.limit:,} bytes ({self.ratio} times its "
                            f"size, TEFQ_MAX_GZIP_RATIO): refused as a likely gzip bomb; raise "
                            "TEFQ_MAX_GZIP_RATIO if it is real data", self.path)
        return n

    def close(self) -> None:
        self.gz.close()
        super().close()


def open_input(path: str, gz: bool) -> io.BufferedReader:
    """`path` opened for reading bytes; a `.gz` one decompressed under the ratio cap."""
    if gz:
        return io.BufferedReader(CappedGzip(path))
    return open(path, "rb")


def skip_line(f: io.BufferedReader) -> None:
    """Read past the end of the current line, in pieces (bounded memory)."""
    while True:
        rest = f.readline(1 << 16)
        if not rest or rest.endswith(b"\n"):
            return
