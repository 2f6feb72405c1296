"""One command line inside the warm engine, in a child forked from it: the caller's standard
streams, working directory, umask and environment, default signal handlers, a connection of its
own to the JVM, and the engine's session as its Spark (`WarmSource`). Then the command line runs
as `tefq` would run it (the engine's `Program.command`: tefq.cli's), and the child exits with its code."""
from __future__ import annotations

import gc
import io
import os
import random
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from typing import NoReturn

from tefq import cleanup
from tefq.errors import TefqError
from tefq.spark.runtime.session_source import SESSION_SOURCE


def job_tag(pid: int) -> str:
    """The Spark job tag of the run in child `pid` (set here; the engine cancels what is left)."""
    return f"tefq-run-{pid}"


class WarmSource:
    """`get_session` inside the warm engine: its session, for the master it runs, with the run's
    Spark SQL settings (`--conf spark.sql.…`) set on it (the run's own `newSession`)."""

    warm = True  # session_source.is_warm: `--engine auto` knows Spark is up

    def __init__(self, session, master: str, just_started: bool = False) -> None:
        # just_started: the engine started for this run (session_source.warm_label: not "warm")
        self.session, self.master, self.just_started = session, master, just_started

    def __call__(self, master: str, settings=None):
        own = "TEFQ_SERVER=0 starts Spark in the command's own process"
        if master != self.master:
            raise TefqError(f"this run asks for Spark master {master}; the warm engine runs {self.master} ({own})",
                            file="--master")
        if settings is not None and settings.driver_memory is not None:
            raise TefqError(f"--driver-memory is set when Spark starts: the warm engine's is set ({own})",
                            file="--driver-memory")
        # deferred: the engine has pyspark loaded; the command line's client never imports this
        from tefq.spark.runtime.session import set_runtime_settings

        if settings is not None:
            set_runtime_settings(self.session, settings, f"Spark starts: the warm engine's is set ({own})")
        return self.session


def run_command_line(request: dict, fds: list[int], session, master: str, closing: list[int],
                     command: Callable[[], None], cold_workers: bool = False, just_started: bool = False) -> NoReturn:
    """The child's whole life (see the module doc): `command` runs the request's argv; never returns.
    `cold_workers`: Spark's Python workers may be gone (the engine's first run, or one after an idle
    minute): started beside the command (session.warm_workers_soon)."""
    code, client = 1, None
    try:
        for fd in closing:
            try:
                os.close(fd)
            except OSError:
                pass
        adopt_streams(fds, request.get("encoding") or "utf-8")
        adopt_process(request)
        client = own_gateway_connection(session)
        session.sparkContext.addJobTag(job_tag(os.getpid()))
        if cold_workers:
            # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
            from tefq.spark.runtime.session import warm_workers_soon

            warm_workers_soon(session)
        SESSION_SOURCE.set(WarmSource(session, master, just_started))
        sys.argv = ["tefq", *request["argv"]]
        command()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - the child must reach os._exit whatever happens
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed pipe
                pass
        try:
            release_objects(client)
        except Exception:  # noqa: BLE001
            pass
        os._exit(code)


def adopt_streams(fds: list[int], encoding: str) -> None:
    """The caller's descriptors become 0, 1, 2, wrapped as Python would wrap them at start-up."""
    for target, fd in enumerate(fds):
        if fd != target:
            os.dup2(fd, target)
            os.close(fd)
    sys.stdin = io.TextIOWrapper(io.open(0, "rb", closefd=False), encoding=encoding, errors="strict")
    sys.stdout = io.TextIOWrapper(io.open(1, "wb", closefd=False), encoding=encoding, errors="strict",
                                  line_buffering=os.isatty(1))
    sys.stderr = io.TextIOWrapper(io.open(2, "wb", closefd=False), encoding=encoding,
                                  errors="backslashreplace", line_buffering=True)


def adopt_process(request: dict) -> None:
    """The caller's working directory, umask, environment and signals (the engine's handlers,
    wake-up descriptor and temporary directories stay the engine's)."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for s in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(s, signal.SIG_DFL)
    os.chdir(request["cwd"])
    os.umask(int(request["umask"]))
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()
    tempfile.tempdir = None  # gettempdir() cached the engine's; the caller's TMPDIR decides
    random.seed()
    for path in cleanup.registered():  # the engine's own (its JVM's scratch): not this run's to remove
        cleanup.unregister(path)


def own_gateway_connection(session):
    """py4j's client as forked is the engine's: its thread connection (a socket the engine uses)
    and its pool are replaced by new ones, and this child tells the JVM to free only the objects
    it made itself (the inherited ones are the engine's). Returns the client."""
    from py4j.clientserver import FinalizerWorker
    from py4j.finalizer import ThreadSafeFinalizer
    from py4j.protocol import smart_decode

    client = session.sparkContext._gateway._gateway_client
    prefix = smart_decode(client.address) + smart_decode(client.port)
    inherited = {k[len(prefix):] for k in list(ThreadSafeFinalizer.finalizers)}
    for connection in {*client.deque, client.get_thread_connection()} - {None}:
        let_go(connection)
    client.thread_connection = threading.local()
    client.deque = deque()
    free = client.garbage_collect_object

    def free_own(target_id, enqueue=True):
        if target_id not in inherited:
            free(target_id, enqueue)

    client.garbage_collect_object = free_own
    client.finalizer_deque.clear()  # the engine's pending frees are the engine's to send
    worker = FinalizerWorker(client.finalizer_deque)
    worker.daemon = True
    worker.start()
    return client


def let_go(connection) -> None:
    """Close this child's copy of an inherited py4j connection without shutting its socket down:
    the engine holds the same socket, and a shutdown (py4j's `close`, also run when the dropped
    connection is collected) would end the engine's own connection to the JVM (seen: the next
    run's `newSession` failed with "connection reset", and the engine stopped its runs)."""
    stream, sock = connection.stream, connection.socket
    connection.stream = connection.socket = None  # py4j's close() and __del__ then do nothing
    for closable in (stream, sock):
        if closable is not None:
            try:
                closable.close()  # this process's descriptor only: the engine's stays open
            except OSError:
                pass


def release_objects(client) -> None:
    """Before exit: the JVM objects this run made and no longer holds are freed now, not leaked
    into the engine's JVM."""
    if client is None:
        return
    gc.collect()
    while True:
        try:
            task = client.finalizer_deque.pop()
        except IndexError:
            return
        if isinstance(task, tuple):
            java_client, target_id = task
            java_client.garbage_collect_object(target_id, False)
