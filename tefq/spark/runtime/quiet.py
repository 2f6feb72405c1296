"""Keep the JVM's start-up notices (and pyspark's lost-connection tracebacks) off stderr.

Spark's launcher always starts the JVM with `--add-modules=jdk.incubator.vector`, and the JVM then
prints "WARNING: Using incubator modules: ..." itself, before any logging is set up: no log4j
setting reaches it. So the driver JVM is started with a pipe as its stderr; a daemon thread
forwards every line to the real stderr except the notices listed here (log4j2.properties silences
the rest). Only the JVM given `jvm_stderr`'s pipe is affected.
"""
from __future__ import annotations

import contextlib
import os
import threading
from typing import Iterator

NOTICES = (b"WARNING: Using incubator modules:", b"Picked up JAVA_TOOL_OPTIONS:")  # the latter: jvm_scratch.py


# pyspark's daemon prints a traceback on the JVM's stderr when the JVM drops a worker's connection
# (a JVM that died or stopped on a full disk: BrokenPipeError, EOFError). tefq says what happened
# itself (tefq.errors.failure_message); other tracebacks pass.
TRACEBACK = b"Traceback (most recent call last):"
DAEMON_FRAMES = (b"pyspark/daemon.py", b"pyspark/worker.py")
LOST_CONNECTION = (b"BrokenPipeError", b"EOFError", b"ConnectionResetError")
MAX_HELD_LINES = 200


def lost_connection_traceback(block: list[bytes]) -> bool:
    """A traceback of pyspark's daemon or worker ending in a lost connection."""
    return any(f in line for line in block for f in DAEMON_FRAMES) and block[-1].startswith(LOST_CONNECTION)


def forward_lines(read_fd: int, write_fd: int) -> None:
    held: list[bytes] = []  # a traceback being read, shown unless it is a lost connection's
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        for line in iter(pipe.readline, b""):
            if held:
                held.append(line)
                if line[:1].isspace() and len(held) < MAX_HELD_LINES:
                    continue
                if not lost_connection_traceback(held):
                    os.write(write_fd, b"".join(held))
                held = []
            elif line.startswith(TRACEBACK):
                held = [line]
            elif not line.startswith(NOTICES):
                os.write(write_fd, line)
        if held:
            os.write(write_fd, b"".join(held))


@contextlib.contextmanager
def jvm_stderr() -> Iterator[int | None]:
    """While inside, the write end of a filtering pipe to give the JVM as its stderr, which it keeps
    for life (None with TEFQ_SPARK_LOG set: debugging, the JVM's stderr is ours). This process's own
    stderr is left alone."""
    if os.environ.get("TEFQ_SPARK_LOG"):
        yield None
        return
    r, w = os.pipe()
    threading.Thread(target=forward_lines, args=(r, os.dup(2)), name="tefq-jvm-stderr", daemon=True).start()
    try:
        yield w
    finally:
        os.close(w)  # the JVM holds its own copy
