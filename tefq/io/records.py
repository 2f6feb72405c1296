"""Files that grow by whole records: a write that fails (disk full, file too large) is cut back.

`--bad-rows` files and follow mode's `--out` are appended to while a run goes on, so they cannot be
written atomically like bounded results (tefq.io.atomic). Instead every record (one bad row, one
micro-batch's rows) is written whole or not at all: if the file system refuses part of it, the
file is truncated back to the end of the last complete record and the run stops with a sentence
naming the path (exit 2), never `OSError` and never a cut-off last line.
"""
from __future__ import annotations

import contextlib
import os

from tefq.errors import TefqError


class RecordFile:
    """A file opened for records; `what` names its content in errors ("bad rows", "the output")."""

    def __init__(self, path: str, what: str, *, append: bool = False) -> None:
        self.path, self.what = path, what
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
        try:
            self.fd: int | None = os.open(path, flags, 0o666)
            self.size = os.fstat(self.fd).st_size  # the end of the last complete record
        except OSError as e:
            raise self.error(e) from None

    def write(self, text: str) -> None:
        """Append `text` (whole records) or, if that fails, leave the file as it was."""
        if self.fd is None:
            raise ValueError("write to a closed RecordFile")
        encoded = text.encode("utf-8")
        data = memoryview(encoded)
        try:
            while data:
                data = data[os.write(self.fd, data):]
        except BaseException as e:  # also a signal between two partial writes
            with contextlib.suppress(OSError):  # shrinking a file needs no space
                os.ftruncate(self.fd, self.size)
            if isinstance(e, OSError):
                raise self.error(e) from None
            raise
        self.size += len(encoded)

    def error(self, e: OSError) -> TefqError:
        kept = " (the records before it are complete)" if getattr(self, "size", 0) else ""
        return TefqError(f"cannot write {self.what}: {e.strerror or e}{kept}", self.path)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def append_records(path: str, text: str, what: str, *, append: bool = True) -> None:
    """Write `text` (whole records) at the end of `path` (or over it, `append=False`), all of it
    or nothing."""
    out = RecordFile(path, what, append=append)
    try:
        out.write(text)
    finally:
        out.close()


__all__ = ["RecordFile", "append_records"]
