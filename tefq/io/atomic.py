"""Write an output file all at once, and write only what tefq owns.

A regular file (or a path that does not exist yet) is written to a temporary name in the same
directory and renamed over it on success: a reader (a user's `tail`, a downstream job watching
the directory, a second tefq) never sees a half-written result file, and a run that fails leaves
the previous file in place. The temporary name starts with `.` and ends with `.tmp`, which
directory readers skip.

What tefq did not create is never replaced: a symbolic link is followed, and its target is what
gets replaced (the link stays); a character or block device, a FIFO or a socket (`--out
/dev/stdout`, `/dev/null`, a named pipe a reader waits on) is written in place, as a shell
redirection would write it — not atomically, since it is not a file that can be renamed. A
directory is refused. `check_writable` tells, before a run starts, whether an output path can be
written at all (docs/cli.md, "Trust boundary").
"""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from typing import IO

from tefq.errors import TefqError


def special_file(path: str) -> bool:
    """Whether `path` is (or links to) something other than a regular file or a directory: a
    device, a FIFO, a socket. Those are written in place."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    except OSError as e:
        raise TefqError(f"cannot write the output: {e.strerror or e}", path) from None
    if stat.S_ISDIR(mode):
        raise TefqError("cannot write the output: it is a directory", path)
    return not stat.S_ISREG(mode)


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
    """Yield the path to write `path`'s new content to: a temporary file next to the file (the
    target of a link), which replaces it in one rename on success; `path` itself for a device,
    FIFO or socket (module doc)."""
    if special_file(path):
        try:
            yield path
        except OSError as e:
            raise TefqError(f"cannot write the output: {e.strerror or e}", path) from None
        return
    target = os.path.realpath(path)  # a link's target (an existing one, or the one it would create)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()  # mkstemp's 0600 would make results private
    directory = os.path.dirname(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory)
    except OSError as e:
        raise TefqError(f"cannot write the output: {e.strerror or e}", path) from None
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as e:
        raise TefqError(f"cannot write the output: {e.strerror or e}", path) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)


@contextlib.contextmanager
def atomic_open(path: str, binary: bool = False) -> Iterator[IO]:
    """`open(path, "w")`, but a file appears only once the block has finished without error."""
    with atomic_path(path) as tmp:
        if binary:
            f = open(tmp, "wb")
        else:
            f = open(tmp, "w", encoding="utf-8", newline="")
        with f:
            yield f


def check_writable(path: str | None, option: str, directory_target: bool = False) -> None:
    """Exit 2 now, naming `option`, if the output `path` could not be written at the end of the
    run: its directory missing or read-only (a temporary file is made there and removed, as the
    write will), a directory where a file is expected, a device or FIFO without write
    permission. `directory_target`: `path` is a directory to put files in (made if missing: its
    nearest existing ancestor must take files). None and `-` (standard output) always can."""
    if path is None or path == "-":
        return
    if directory_target:
        if os.path.exists(path) and not os.path.isdir(path):  # found at the first bad row, else
            raise TefqError(f"{option} names a directory to write files in; this is a file", path)
        directory = os.path.realpath(path)
        while not os.path.isdir(directory) and os.path.dirname(directory) != directory:
            directory = os.path.dirname(directory)
    elif special_file(path):
        if not os.access(path, os.W_OK):
            raise TefqError(f"cannot write {option} here: permission denied", path)
        return
    else:
        directory = os.path.dirname(os.path.realpath(path))
    try:
        fd, probe = tempfile.mkstemp(prefix=".tefq-probe.", suffix=".tmp", dir=directory)
    except OSError as e:
        raise TefqError(f"cannot write {option} here: {e.strerror or e} ({directory})", path) from None
    os.close(fd)
    os.remove(probe)


def write_marker(path: str, text: str) -> None:
    """A one-line marker file in a directory tefq owns, written atomically (a kill leaves the old
    state or the new one)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text + "\n")
    os.replace(tmp, path)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
