"""Write a file all at once: to a temporary name in the same directory, renamed on success.

A reader (a user's `tail`, a downstream job watching the directory, a second tefq) never sees a
half-written result file, and a run that fails leaves the previous file in place. The temporary
name starts with `.` and ends with `.tmp`, which directory readers skip.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import IO

from tefq.errors import TefqError


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
    """Yield a temporary path next to `path`; on success it replaces `path` in one rename."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    except OSError as e:
        raise TefqError(f"cannot write the output: {e.strerror or e}", path) from None
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would make results private
        os.replace(tmp, path)
    except OSError as e:
        raise TefqError(f"cannot write the output: {e.strerror or e}", path) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)


@contextlib.contextmanager
def atomic_open(path: str, binary: bool = False) -> Iterator[IO]:
    """`open(path, "w")`, but the file appears only once the block has finished without error."""
    with atomic_path(path) as tmp:
        if binary:
            f = open(tmp, "wb")
        else:
            f = open(tmp, "w", encoding="utf-8", newline="")
        with f:
            yield f


def write_marker(path: str, text: str) -> None:
    """A one-line marker file, written atomically (a kill leaves the old state or the new one)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text + "\n")
    os.replace(tmp, path)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
