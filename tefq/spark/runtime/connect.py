"""Runs on a Spark Connect server (`--remote sc://HOST:PORT`): this process is a client of the
server's session, with no JVM of its own; the server plans and runs the queries, its Python
workers run tefq's mappers and operators.

What the server must share with the client (docs/spark-usage.md, "Spark Connect"): the paths of
the inputs, `--checkpoint` and the run's work directory (the client lists and stages the inputs
and reads the sink's files itself), and tefq (the same version) in its workers' Python. tefq sets
its Spark SQL settings on the session; the server's own start-up settings stay the server's."""
from __future__ import annotations

import os
import socket
import warnings
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from tefq.errors import TefqError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_PORT = 15002  # pyspark's, for sc://HOST without a port
REACH_TIMEOUT_S = 10.0  # pyspark's client retries an unreachable server for minutes: look first
# A server gone in the middle of a run: pyspark's client retries a call 15 times over 10 minutes;
# 4 (about 4 s: its backoff, from 50 ms times 4) ride out a network blip, then the run says so
# (tefq.errors.failure_message).
GONE_RETRIES = 4


def origin(url: str) -> str:
    """Where the endpoint was named, for messages."""
    return "TEFQ_SPARK_MASTER" if url == os.environ.get("TEFQ_SPARK_MASTER") else "--remote"


def endpoint(url: str) -> tuple[str, int]:
    """(host, port) of sc://HOST[:PORT][/;params]."""
    netloc = url[len("sc://"):].split("/", 1)[0]
    host, _, port = netloc.rpartition(":") if not netloc.endswith("]") else (netloc, "", "")
    if not host:  # no port given
        host, port = netloc, ""
    return host.strip("[]"), int(port) if port else DEFAULT_PORT


def check_reachable(url: str) -> None:
    """Exit 2 naming the endpoint when nothing accepts a connection there."""
    host, port = endpoint(url)
    try:
        socket.create_connection((host, port), timeout=REACH_TIMEOUT_S).close()
    except OSError as e:
        raise TefqError(f"no Spark Connect server answers at {url} ({e.strerror or e}): start one "
                        "(docs/spark-usage.md, \"Spark Connect\") or check the address", file=origin(url)) from None


def remote_session(url: str, settings) -> "SparkSession":
    """The server's session at `url` (`settings`: the user's session.SessionSettings, checked
    here: the caller sets them, with tefq's own)."""
    if settings.driver_memory is not None:
        raise TefqError("--driver-memory is set when the Spark Connect server starts, not by its clients",
                        file="--driver-memory")
    try:  # pyspark's Connect client needs grpcio (the `connect` extra)
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies()
    except ImportError as e:
        raise TefqError(f"--remote needs pyspark's Spark Connect client: pip install 'tefq[connect]' ({e})",
                        file=origin(url)) from None
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.client.retries import DefaultPolicy

    check_reachable(url)
    try:
        spark = SparkSession.builder.remote(url).getOrCreate()
    except Exception as e:  # noqa: BLE001 - pyspark's own error type, kept light to import
        if "SESSION_ALREADY_EXIST" not in str(e):
            raise
        raise TefqError("this Python process already runs a Spark session of its own: a Spark Connect session "
                        "cannot start beside it (use a new process)", file=origin(url)) from None
    spark.client.set_retry_policies([DefaultPolicy(max_retries=GONE_RETRIES)])
    # its "[RETRIES_EXCEEDED]" warning: the run's own error says what happened
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]")
    return spark


def is_connect(spark: "SparkSession") -> bool:
    """Whether `spark` is a Spark Connect client's session (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def connect_file_uris(spark: "SparkSession", files: list[str]) -> list[str]:
    """Each local file's URI as the server's Spark writes it, from its own listing of them (the
    path column of a `binaryFile` read, which opens no file for it)."""
    try:
        rows = spark.read.format("binaryFile").load([os.path.abspath(f) for f in files]).select("path").collect()
    except Exception as e:  # noqa: BLE001 - pyspark's Connect errors come in several types
        if "PATH_NOT_FOUND" not in str(e):
            raise
        raise TefqError(f"the Spark Connect server does not see the inputs at their paths ({str(e).splitlines()[0]}): "
                        "they must be at the same path for the server (docs/spark-usage.md, \"Spark Connect\")",
                        file=files[0]) from None
    by_path = {unquote(urlparse(r.path).path): r.path for r in rows}
    try:
        return [by_path[os.path.abspath(f)] for f in files]
    except KeyError as e:
        raise TefqError(f"the Spark Connect server does not see {e.args[0]} at that path: the inputs must be at "
                        "the same path for the server (docs/spark-usage.md, \"Spark Connect\")",
                        file=e.args[0]) from None
