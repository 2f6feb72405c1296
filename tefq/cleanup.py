"""Temporary directories a run must not leave behind, however it ends.

A module that makes a scratch directory registers it (`register` or `temporary_directory`); the
command line's `main()` calls `remove_all()` on every way out: success, an error, SIGTERM, SIGINT.
A directory removed by its owner earlier is simply forgotten (`unregister`).

A run killed outright (SIGKILL, the kernel's out-of-memory killer) cannot remove anything: its
staged inputs, its checkpoint and sink, its JVM's scratch (15 MB and up) stay. So a registered
directory holds an owner lock (`OWNER_LOCK`) while it is registered, which the kernel drops with
the process, and the first registration of each run removes the temporary directory's `tefq-*`
directories of its user whose lock nobody holds (`sweep_dead`). Directories without the lock (an
older tefq's) and locks younger than MIN_AGE_S are left alone.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

OWNER_LOCK = ".tefq-owner.lock"  # hidden: the readers and Spark's file source skip it
MIN_AGE_S = 60  # a lock this young may be one its owner is about to take
_registered: list[str] = []
_held: list[tuple[str, int]] = []  # (directory, its owner lock's descriptor) while it is registered
_swept: list[bool] = []


def register(path: str) -> str:
    """Remove `path` (a directory this run made) when the run ends; returns it."""
    if not _swept:
        _swept.append(True)
        sweep_dead(tempfile.gettempdir())
    if path not in _registered:
        _registered.append(path)
        with_owner(path)
    return path


def with_owner(path: str) -> None:
    """Hold `path`'s owner lock while it is registered (not where the directory takes no file)."""
    try:
        fd = os.open(os.path.join(path, OWNER_LOCK), os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return
    _held.append((path, fd))


def _release(path: str) -> None:
    for held in [h for h in _held if h[0] == path]:
        _held.remove(held)
        os.close(held[1])


def sweep_dead(directory: str) -> list[str]:
    """Remove the `tefq-*` directories in `directory` that are this user's, hold an owner lock
    older than MIN_AGE_S and whose owner is gone (the lock is free); returns them."""
    removed = []
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        path = os.path.join(directory, name)
        try:
            st = os.lstat(path)
            if not name.startswith("tefq-") or not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
                continue
            lock = os.path.join(path, OWNER_LOCK)
            if time.time() - os.lstat(lock).st_mtime < MIN_AGE_S:
                continue
            fd = os.open(lock, os.O_RDWR | os.O_NOFOLLOW)
        except OSError:
            continue  # not a directory of ours, no lock (an older tefq's), or gone meanwhile
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # its owner is alive
        finally:
            os.close(fd)
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def unregister(path: str) -> None:
    if path in _registered:
        _registered.remove(path)
    _release(path)


def registered() -> list[str]:
    return list(_registered)


def remove_all() -> None:
    """Remove every registered directory (newest first); missing ones are fine."""
    while _registered:
        path = _registered.pop()
        shutil.rmtree(path, ignore_errors=True)
        _release(path)


@contextmanager
def temporary_directory(prefix: str = "tefq-") -> Iterator[str]:
    """A registered scratch directory, removed when the block ends (or by `remove_all` if a
    signal cuts the block short)."""
    path = register(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):  # else (out of memory mid-removal) remove_all tries again later
            unregister(path)
