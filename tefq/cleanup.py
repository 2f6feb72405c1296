"""Temporary directories a run must not leave behind, however it ends.

A module that makes a scratch directory registers it (`register` or `temporary_directory`); the
command line's `main()` calls `remove_all()` on every way out: success, an error, SIGTERM, SIGINT.
A directory removed by its owner earlier is simply forgotten (`unregister`).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

_registered: list[str] = []


def register(path: str) -> str:
    """Remove `path` (a directory) when the run ends; returns it."""
    if path not in _registered:
        _registered.append(path)
    return path


def unregister(path: str) -> None:
    if path in _registered:
        _registered.remove(path)


def registered() -> list[str]:
    return list(_registered)


def remove_all() -> None:
    """Remove every registered directory (newest first); missing ones are fine."""
    while _registered:
        shutil.rmtree(_registered.pop(), ignore_errors=True)


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
