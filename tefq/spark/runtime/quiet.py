"""Keep the JVM's start-up notices off stderr.

Spark's launcher always starts the JVM with `--add-modules=jdk.incubator.vector`, and the JVM then
prints "WARNING: Using incubator modules: ..." itself, before any logging is set up: no log4j
setting reaches it. So the driver JVM is started with a pipe as its stderr; a daemon thread
forwards every line to the real stderr except the notices listed here (log4j2.properties silences
the rest). Only the JVM started inside `filtered_jvm_stderr` is affected.
"""
from __future__ import annotations

import contextlib
import os
import threading
from typing import Iterator

NOTICES = (b"WARNING: Using incubator modules:", b"Picked up JAVA_TOOL_OPTIONS:")  # the latter: jvm_scratch.py


def _forward(read_fd: int, write_fd: int) -> None:
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        for line in iter(pipe.readline, b""):
            if not line.startswith(NOTICES):
                os.write(write_fd, line)


@contextlib.contextmanager
def filtered_jvm_stderr() -> Iterator[None]:
    """While inside, fd 2 is a filtering pipe: a process started here (the JVM) keeps it for life."""
    if os.environ.get("TEFQ_SPARK_LOG"):  # debugging: leave stderr alone
        yield
        return
    real = os.dup(2)
    r, w = os.pipe()
    threading.Thread(target=_forward, args=(r, real), name="tefq-jvm-stderr", daemon=True).start()
    os.dup2(w, 2)
    os.close(w)
    try:
        yield
    finally:
        os.dup2(real, 2)  # our own stderr is the real one again; the JVM keeps the pipe
