"""User-facing errors: every problem with the user's input is a TefqError (exit code 2).

A TefqError knows where it happened (file, line, column) and renders the contract's message
`FILE:LINE:COL: error: ...` followed, when the source text is known, by the offending line and a
caret under the column.
"""
from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A position in a source file; lines and columns count from 1 (0 = unknown)."""

    line: int = 0
    column: int = 0
    end_line: int = 0
    end_column: int = 0


class TefqError(Exception):
    """Bad user input. The CLI prints `render()` to stderr and exits with code 2."""

    exit_code = 2

    def __init__(self, message: str, file: str | None = None, line: int = 0, column: int = 0,
                 source_line: str | None = None, kind: str = "error") -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.source_line = source_line
        self.kind = kind

    def located(self, file: str | None = None, source: str | None = None) -> "TefqError":
        """Fill in the file name and offending line if they were not known where it was raised."""
        if file and not self.file:
            self.file = file
        if source is not None and self.source_line is None and self.line > 0:
            lines = source.splitlines()
            if self.line <= len(lines):
                self.source_line = lines[self.line - 1]
        return self

    def render(self) -> str:
        where = self.file or "<input>"
        if self.line:
            where += f":{self.line}"
            if self.column:
                where += f":{self.column}"
        message = self.message if len(self.message) <= MAX_MESSAGE else self.message[:MAX_MESSAGE] + "…"
        text = f"{where}: {self.kind}: {message}"
        if self.source_line is not None:
            line, column = window(self.source_line.rstrip("\n"), self.column)
            text += "\n  " + shown(line)
            if column:
                caret_pad = "".join("\t" if c == "\t" else " " for c in shown(line[: column - 1]))
                text += "\n  " + caret_pad + "^"
        return text

    def __str__(self) -> str:
        return self.render()


# Control characters (C0 but TAB, DEL, C1) as escapes: an offending line is shown, never replayed
# to the terminal (binary data, escape sequences).
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), *range(0x0a, 0x20), *range(0x7f, 0xa0))}


MAX_MESSAGE = 600  # characters of a message shown (what a message quotes of the input is cut before)
SHOWN_LINE = 160  # characters of an offending line shown, around its column


def window(line: str, column: int) -> tuple[str, int]:
    """At most SHOWN_LINE characters of `line` around `column` (1-based; 0: none), "…" where cut,
    and the column within them."""
    if len(line) <= SHOWN_LINE:
        return line, column
    start = max(0, min(column - 1 - SHOWN_LINE // 2, len(line) - SHOWN_LINE)) if column else 0
    head = "…" if start else ""
    tail = "…" if start + SHOWN_LINE < len(line) else ""
    return head + line[start:start + SHOWN_LINE] + tail, column - start + len(head) if column else 0


def shown(text: str) -> str:
    """`text` safe to print: control characters escaped (`\\x1b`), TABs kept."""
    return text.translate(_CONTROLS)


def warn(message: str, file: str | None = None, line: int = 0, column: int = 0) -> None:
    """Print a located warning on stderr (the run goes on)."""
    import sys

    print(TefqError(message, file, line, column, kind="warning").render(), file=sys.stderr)


# The Spark engine is an extra (`pip install 'tefq[spark]'`): without pyspark the oracle still runs.
SPARK_MISSING = ("the Spark engine needs pyspark (and Java 17): pip install 'tefq[spark]'; or run on the "
                 "oracle: --engine oracle")


def spark_missing(e: BaseException) -> bool:
    """Whether `e` is pyspark's absence (an oracle-only install)."""
    return isinstance(e, ModuleNotFoundError) and (e.name or "").split(".")[0] in ("pyspark", "py4j")


# ---------------------------------------------------------------- failures that are not the input's
PATH_OPTIONS = ("--checkpoint", "--out", "--bad-rows", "--metrics")  # where a run writes
NEARLY_FULL_BYTES = 64 << 20


WORKER_FAILURE = "TEFQ_WORKER_FAILURE"  # the marker of a worker's failure record in Spark's error text
BAD_ROW, BAD_ENTRY, REDIS_GAP, TOO_MANY_TICKS, REFUSAL = "bad_row", "bad_entry", "redis_gap", "too_many_ticks", "refusal"


@dataclass(frozen=True)
class WorkerFailure:
    """Why a Spark worker stopped the run, carried back to the driver in the one channel Spark gives
    (the text of the exception that fails the task: Spark wraps it in its own dump) as one line,
    the marker then the record as JSON data, and read back by `found_in`, the one decoder. Kinds
    and their fields: bad_row (file, reason), bad_entry (file, line, kind, message, row: a Redis
    entry), redis_gap (url, message: entries trimmed before they were read), too_many_ticks
    (max_ticks, every, first, last), refusal (message: a checkpoint's state the worker will not read). The driver gives each kind its meaning (tefq.spark.runtime.progress.ours,
    and `failure_message` for a refusal)."""

    kind: str
    fields: dict

    def error(self) -> RuntimeError:
        """The exception a worker raises to stop the run with this record."""
        return RuntimeError(f"{WORKER_FAILURE}\t" + json.dumps([self.kind, self.fields]))

    @staticmethod
    def found_in(text: str) -> "WorkerFailure | None":
        """The record in an error's text (None: there is none, or it is not one of ours)."""
        at = text.find(WORKER_FAILURE + "\t")
        if at < 0:
            return None
        try:
            kind, fields = json.loads(text[at + len(WORKER_FAILURE) + 1:].split("\n", 1)[0])
        except ValueError:
            return None
        return WorkerFailure(kind, fields) if isinstance(kind, str) and isinstance(fields, dict) else None


TOO_DEEP = ("the query is nested or chained too deeply to evaluate (Python's recursion limit): split the "
            "expression or pattern (docs/language.md, \"Limits\")")


def too_deep(e: BaseException) -> bool:
    """Whether `e` is a RecursionError, raised here or in a Spark worker (its text)."""
    return isinstance(e, RecursionError) or "RecursionError: maximum recursion depth" in str(e)


def is_refusal(e: BaseException) -> bool:
    """Whether `e` carries a worker's refusal of what it read (exit 2, like any bad input)."""
    failure = WorkerFailure.found_in(str(e))
    return failure is not None and failure.kind == REFUSAL


def failure_message(e: BaseException, argv: Sequence[str] = ()) -> str:
    """An internal failure (exit 1) in one sentence: a worker's refusal, a full disk (naming the
    option and path that ran out of space), a Spark JVM that died, else the exception's first line
    (never a Spark plan dump or a Java stack)."""
    text = str(e)
    if is_refusal(e):
        return "tefq: error: " + shown(str(WorkerFailure.found_in(text).fields.get("message", "")).splitlines()[0])
    if full_disk(e, text):
        return full_disk_message(e, argv)
    if "Wrong basePath" in text:  # a checkpoint older than its identity record, moved (checkpoint_identity)
        return ("tefq: error: this checkpoint was moved or copied from where it was written (Spark's logs in it "
                "name files by absolute path): move it back, or use a fresh --checkpoint")
    if "JAVA_GATEWAY_EXITED" in text:  # pyspark's launcher: the JVM ended before it gave its port
        return ("tefq: error: the Spark JVM stopped while starting (it was killed, ran out of memory, or Java "
                "refused its options: see its messages above, `java -version` and JAVA_HOME)")
    resume = " (with --checkpoint, run the same command again: it resumes from the last micro-batch)"
    if connect_gone(e, text):
        return ("tefq: error: the Spark Connect server stopped answering during the run (it was stopped or "
                "restarted, or the network is down)" + resume)
    if jvm_gone(e, text):
        return ("tefq: error: the Spark JVM stopped during the run (it was killed, or ran out of memory: see "
                "`dmesg`; --driver-memory 4g, or TEFQ_SPARK_DRIVER_MEMORY, sets its heap)" + resume)
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return f"tefq: internal error: {type(e).__name__}: {shown(first[:500])}"


def full_disk(e: BaseException, text: str) -> bool:
    import errno

    return (isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)) or "No space left on device" in text \
        or "Disk quota exceeded" in text


def full_disk_message(e: BaseException, argv: Sequence[str]) -> str:
    """Which of the run's output paths (or the temporary directory) is on the full device."""
    import tempfile

    candidates = [(option, path) for option, path in option_paths(argv)] + [("TMPDIR", tempfile.gettempdir())]
    fullest = min(((free_bytes(path), option, path) for option, path in candidates), default=None)
    if fullest is not None and fullest[0] < NEARLY_FULL_BYTES:
        _, option, path = fullest
        where = f"{path}: error: the device holding {option} {path} is full"
    else:
        where = f"{getattr(e, 'filename', None) or '<output>'}: error: a device the run writes to is full"
    return (f"{where} (No space left on device): free some space and run again; with --checkpoint the run "
            "resumes from its last committed micro-batch")


def option_paths(argv: Sequence[str]) -> list[tuple[str, str]]:
    """The (option, path) pairs of PATH_OPTIONS in a command line (`--out X` or `--out=X`)."""
    found = []
    for i, arg in enumerate(argv):
        option, eq, value = arg.partition("=")
        if option in PATH_OPTIONS:
            if not eq:
                value = argv[i + 1] if i + 1 < len(argv) else ""
            if value and value != "-":
                found.append((option, value))
    return found


def free_bytes(path: str) -> int:
    """Free bytes on the device holding `path` (or its nearest existing parent)."""
    import os

    path = os.path.abspath(path)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    try:
        st = os.statvfs(path)
    except OSError:
        return 1 << 62
    return st.f_bavail * st.f_frsize


# py4j's answer to a call whose connection broke: it logs the network error and raises this bare
# line, with no Java trace (a Java exception always carries one).
NO_ANSWER = re.compile(r"An error occurred while calling \S+")


def jvm_gone(e: BaseException, text: str) -> bool:
    """py4j lost its connection to the JVM (pyspark's EOFError, a refused or reset connection, a call
    left without an answer), or the gateway's JVM process has exited."""
    errors = chain(e)
    names = {type(x).__name__ for x in errors}
    return bool(names & {"Py4JNetworkError", "EOFError", "ConnectionRefusedError", "ConnectionResetError",
                         "BrokenPipeError"}) or "Answer from Java side is empty" in text \
        or any(type(x).__name__ == "Py4JError" and NO_ANSWER.fullmatch(str(x).strip()) for x in errors) \
        or gateway_exited()


def connect_gone(e: BaseException, text: str) -> bool:
    """A Spark Connect server (`--remote`) that no longer answers: gRPC's UNAVAILABLE after the
    client's retries."""
    return any(type(x).__name__ == "SparkConnectGrpcException" for x in chain(e)) and "StatusCode.UNAVAILABLE" in text


def gateway_exited() -> bool:
    """Whether this process started a Spark JVM that is no longer running (pyspark keeps the
    launched process as `SparkContext._gateway.proc`)."""
    import sys

    pyspark = sys.modules.get("pyspark")  # never import Spark to explain a failure
    gateway = getattr(getattr(pyspark, "SparkContext", None), "_gateway", None)
    proc = getattr(gateway, "proc", None)
    return proc is not None and proc.poll() is not None


def chain(e: BaseException) -> list[BaseException]:
    """`e` and its causes and contexts."""
    seen: list[BaseException] = []
    while e is not None and e not in seen:
        seen.append(e)
        e = e.__cause__ or e.__context__
    return seen
