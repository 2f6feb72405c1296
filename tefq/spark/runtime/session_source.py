"""Where this process's SparkSession comes from, light enough for the command line's first
milliseconds (no pyspark import): started here (the default), started early in a thread (a
command line that names Spark and runs here, tefq.entry.EarlySession), a warm engine's (a run
inside `tefq server`, tefq.server.runner), or handed over (a command line whose Spark run the warm
engine takes, tefq.entry). `tefq.spark.runtime.session.get_session` asks `SESSION_SOURCE` first."""
from __future__ import annotations

import os
import re
import sys
from contextvars import ContextVar
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# A context variable, not a module global: set and reset by the one who owns the context (the
# warm engine's run, the command line's entry), never seen by a stranger's thread.
# Called with the master and the user's settings (`session.SessionSettings`: --conf, --driver-memory).
SESSION_SOURCE: ContextVar[Callable[[str, object], "SparkSession"] | None] = ContextVar(
    "tefq_session_source", default=None)


class HandOver(BaseException):
    """A command line's run is about to start Spark on `master`: the warm engine runs the command
    line instead (tefq.entry catches this). A BaseException, so that no `except Exception` on the
    way up swallows it."""

    def __init__(self, master: str) -> None:
        super().__init__(master)
        self.master = master


def default_master(master: str | None = None) -> str:
    """`--master`, else `TEFQ_SPARK_MASTER`, else an embedded `local[*]`."""
    return master or os.environ.get("TEFQ_SPARK_MASTER") or "local[*]"


# The master URLs Spark parses (SparkContext.createTaskScheduler) and the cluster managers pyspark
# ships; anything else would start a JVM only to have it fail with a stack trace.
_LOCAL_URL = re.compile(r"local(\[(\*|\d+)(\s*,\s*\d+)?\])?")
_MASTER_URL = re.compile(rf"{_LOCAL_URL.pattern}|local-cluster\[\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\]|spark://\S+|yarn"
                         r"|k8s://\S+")
# A Spark Connect endpoint (`--remote`): sc://HOST[:PORT][/;param=value...], pyspark's form.
_REMOTE_URL = re.compile(r"sc://(\[[0-9A-Fa-f:.]+\]|[^\s/:;\[\]]+)(:\d{1,5})?(/(;[^\s;=]+=[^\s;]*)*)?")


def checked_master(master: str | None = None) -> str:
    """`default_master(master)`, refused (exit 2, naming where it came from) unless Spark can parse it."""
    m = default_master(master)
    if not (_MASTER_URL.fullmatch(m) or is_remote(m)):
        # deferred: this module stays light for the command line's first milliseconds
        from tefq.errors import TefqError

        origin = "TEFQ_SPARK_MASTER" if m == os.environ.get("TEFQ_SPARK_MASTER") else "--master"
        raise TefqError(f"'{m}' is not a Spark master URL: expected local, local[N], local[*], spark://HOST:PORT, "
                        "yarn, k8s://URL or a Spark Connect endpoint sc://HOST:PORT", file=origin)
    return m


REMOTE_HELP = ("a Spark Connect server to run on, sc://HOST[:PORT] (instead of --master; its workers need tefq, "
               "and it must see the inputs at the same paths: docs/spark-usage.md)")


def named_master(master: str | None, remote: str | None) -> str | None:
    """The place a command line names to run Spark: `--remote URL` (a Spark Connect endpoint), else
    its `--master` (None: neither)."""
    if remote is None:
        return master
    # deferred: this module stays light for the command line's first milliseconds
    from tefq.errors import TefqError

    if master is not None:
        raise TefqError("--remote and --master name two places to run Spark: give one", file="--remote")
    if not is_remote(remote):
        raise TefqError(f"'{remote}' is not a Spark Connect endpoint: expected sc://HOST[:PORT] (pyspark's form, "
                        "e.g. sc://localhost:15002)", file="--remote")
    return remote


def is_remote(master: str) -> bool:
    """A Spark Connect endpoint (`--remote sc://HOST:PORT`): the session is a client of that
    server, no JVM here (tefq.spark.runtime.connect)."""
    return _REMOTE_URL.fullmatch(master) is not None


def runtime_key(key: str) -> bool:
    """A `--conf` key a running session can take per run (Spark SQL's settings; the others shape
    the JVM or the context when Spark starts)."""
    return key.startswith("spark.sql.")


def is_local(master: str) -> bool:
    """An embedded master (`local`, `local[N]`, `local[N,F]`, `local[*]`): what a warm engine runs."""
    return _LOCAL_URL.fullmatch(master) is not None


def starting_line(master: str | None) -> str:
    """What a run says before it takes its session (progress lines); a master Spark cannot parse is
    refused first (`checked_master`), not announced."""
    m, source = checked_master(master), SESSION_SOURCE.get()
    if getattr(source, "warm", False) and getattr(source, "just_started", False):
        return f"Spark is up ({m}, the warm engine, started for this run)"
    if getattr(source, "warm", False):
        return f"Spark is warm ({m}, the warm engine)"
    if getattr(source, "starts_engine", False):
        return f"starting the warm engine ({m}): later runs use it; `tefq server stop` stops it…"
    return f"starting Spark ({m})…"


def warm_label() -> str:
    """How the summary line names Spark's state when the run began: `warm` (up already: a warm
    engine's, or a session in this process), `warm engine just started` (the engine started for
    this run, which waited for it), or empty (this command starts Spark). Only a label: `--engine
    auto` chooses by `is_warm`."""
    source = SESSION_SOURCE.get()
    if getattr(source, "warm", False):
        return "warm engine just started" if getattr(source, "just_started", False) else "warm"
    if source is not None:  # EarlySession, HandOverSource: Spark starts for this command
        return ""
    return "warm" if is_warm() else ""


def is_warm() -> bool:
    """Whether a Spark run here would find Spark started: inside a warm engine, or a session already
    up in this process (a Python user's, a test module's). Never imports pyspark."""
    if getattr(SESSION_SOURCE.get(), "warm", False):
        return True
    if "pyspark.sql" not in sys.modules:
        return False
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession() is not None
