"""The warm engine: `python -m tefq.warm_engine --key K --master M [--idle DURATION] [--warm-up]`
(started by `client.spawn`, detached, its stderr in `<key>.log`), which hands `main` the command
line it runs (`Program`: this package imports no command line of its own).

It starts Spark once (`start_session`), listens on its unix socket (0600, in the user's 0700
directory; a peer of another uid is refused whatever the file modes) and serves, one message per
connection: `ping` (its status), `stop`, and `run` (a command line with the caller's standard
streams), which it forks into a child (`runner.run_command_line`) on a session of its own
(`newSession`: its own SQL settings and streaming queries). While a run lasts its connection
carries the caller's signals to it; when it ends, its exit code goes back, and whatever it left
running in Spark (streaming queries, jobs) is stopped. A run killed outright, a run that fails or
a caller that disappears (its run gets SIGTERM) do not touch the other runs.

It stops by itself after `--idle` without runs (default 10 minutes, `TEFQ_SERVER_IDLE`), when
its JVM dies, or on SIGTERM / `stop`: the socket is removed first, so the next command line
starts a fresh engine.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import selectors
import signal
import socket
import struct
import sys
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from tefq.server import wire
from tefq.server.place import IDLE_VARIABLE, Place, identity, runtime_dir
from tefq.server.runner import job_tag

DEFAULT_IDLE_S = 600.0
STOP_GRACE_S = 30.0  # a run asked to stop (SIGTERM) gets this long before SIGKILL
JVM_CHECK_S = 2.0
WORKERS_IDLE_S = 50.0  # Spark ends a Python worker idle for 60 s (PythonWorkerFactory)


@dataclass
class Run:
    pid: int
    conn: socket.socket
    session: object  # its SparkSession
    argv: list[str]
    started: float = field(default_factory=time.monotonic)
    kill_at: float | None = None  # its caller is gone: SIGKILL then, if still running


def peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


@dataclass(frozen=True)
class Program:
    """What the engine runs, handed over by its launcher (tefq.warm_engine): `command` runs one
    command line (its argv in `sys.argv`) in a run's child; `preload` imports what every run
    imports, while the JVM starts; `workload` is `--warm-up`'s (True: it ran)."""

    command: Callable[[], None]
    preload: Callable[[], None]
    workload: Callable[[], bool]


class Engine:
    def __init__(self, place: Place, master: str, spark, idle_s: float, command: Callable[[], None]) -> None:
        self.place, self.master, self.spark, self.idle_s, self.command = place, master, spark, idle_s, command
        self.runs: dict[int, Run] = {}
        self.served = 0
        self.started = time.time()
        self.ready_at = time.time()  # reset when it listens: a run begun before then waited for it
        self.last_active = time.monotonic()
        self.stopping = False
        self.selector = selectors.DefaultSelector()
        self.wake_r, self.wake_w = os.pipe()
        self.listener: socket.socket | None = None

    # ------------------------------------------------------------ life
    def serve(self) -> None:
        self.ready_at = time.time()
        self.listener = listen(self.place)
        for fd in (self.wake_r, self.wake_w):
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        for s in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, self.on_signal)
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(self.wake_r, selectors.EVENT_READ, "wake")
        self.write_info()
        log(f"ready: {self.place.socket} ({self.master}, pid {os.getpid()}, idle stop after {self.idle_s:.0f} s)")
        while not (self.stopping and not self.runs):
            for key, _ in self.selector.select(self.timeout()):
                self.dispatch(key)
            self.reap()
            self.housekeeping()
        self.shutdown()

    def timeout(self) -> float:
        return JVM_CHECK_S if self.runs or self.stopping else min(JVM_CHECK_S, self.idle_left())

    def idle_left(self) -> float:
        return max(0.0, self.last_active + self.idle_s - time.monotonic())

    def on_signal(self, signum, frame) -> None:
        if signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            self.begin_stop(f"signal {signum}")

    def housekeeping(self) -> None:
        if not self.runs and not self.stopping and self.idle_left() <= 0:
            self.begin_stop(f"idle for {self.idle_s:.0f} s")
        if not self.jvm_alive():
            log("the JVM is gone: stopping")
            for run in self.runs.values():
                os.kill(run.pid, signal.SIGKILL)
            self.begin_stop("JVM gone")
        now = time.monotonic()
        for run in self.runs.values():
            if run.kill_at is not None and now >= run.kill_at:
                os.kill(run.pid, signal.SIGKILL)
                run.kill_at = None

    def jvm_alive(self) -> bool:
        proc = getattr(self.spark.sparkContext._gateway, "proc", None)  # the JVM pyspark started
        return proc is None or proc.poll() is None

    def begin_stop(self, why: str) -> None:
        """No new runs (the socket goes first: the next command line starts a fresh engine); the
        runs in progress get SIGTERM, and SIGKILL after STOP_GRACE_S."""
        if self.stopping:
            return
        log(f"stopping: {why}")
        self.stopping = True
        self.drop_socket()
        for run in self.runs.values():
            os.kill(run.pid, signal.SIGTERM)
            run.kill_at = time.monotonic() + STOP_GRACE_S

    def drop_socket(self) -> None:
        if self.listener is not None:
            self.selector.unregister(self.listener)
            self.listener.close()
            self.listener = None
        for path in (self.place.socket, str(self.place.info)):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def shutdown(self) -> None:
        log(f"stopped after {self.served} run(s)")
        try:
            self.spark.stop()
        except Exception:  # noqa: BLE001 - a dead JVM: nothing left to stop
            pass

    def write_info(self) -> None:
        info = {"pid": os.getpid(), "master": self.master, "started": self.started, "socket": self.place.socket,
                "log": str(self.place.log), "identity": identity(self.master), "idle_s": self.idle_s}
        tmp = self.place.info.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(info), encoding="utf-8")
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.place.info)

    # ------------------------------------------------------------ messages
    def dispatch(self, key: selectors.SelectorKey) -> None:
        if key.data == "wake":
            try:
                os.read(self.wake_r, 512)
            except BlockingIOError:
                pass
        elif key.data == "accept":
            self.accept()
        else:
            self.from_caller(key.data)

    def accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        conn.settimeout(10.0)
        try:
            if peer_uid(conn) != os.getuid():
                wire.send(conn, {"error": "refused: another user"})
                log("refused a connection from another user")
                conn.close()
                return
            message, fds = wire.receive(conn)
        except (OSError, ValueError) as e:
            log(f"a bad request: {e}")
            conn.close()
            return
        self.answer(conn, message or {}, fds)

    def answer(self, conn: socket.socket, message: dict, fds: list[int]) -> None:
        op = message.get("op")
        if op == "run" and not self.stopping and message.get("key") == self.place.key and len(fds) == 3:
            self.start_run(conn, message, fds)
            return
        for fd in fds:
            os.close(fd)
        reply = {"error": f"cannot {op}"}
        if op == "ping":
            reply = self.status()
        elif op == "stop":
            self.begin_stop("asked to")
            reply = {"stopping": True, "runs": len(self.runs)}
        try:
            wire.send(conn, reply)
        except OSError:
            pass
        conn.close()

    def status(self) -> dict:
        return {"ready": not self.stopping, "pid": os.getpid(), "master": self.master, "runs": len(self.runs),
                "served": self.served, "uptime_s": round(time.time() - self.started, 1),
                "idle_stop_in_s": None if self.runs else round(self.idle_left(), 1), "log": str(self.place.log)}

    def from_caller(self, run: Run) -> None:
        try:
            message, fds = wire.receive(run.conn)
        except (OSError, ValueError):
            message, fds = None, []
        for fd in fds:
            os.close(fd)
        if message is None:  # the caller is gone (killed, or its terminal closed): stop its run
            self.selector.unregister(run.conn)
            if run.kill_at is None:
                os.kill(run.pid, signal.SIGTERM)
                run.kill_at = time.monotonic() + STOP_GRACE_S
        elif message.get("op") == "signal" and message.get("signal") in FORWARDABLE:
            os.kill(run.pid, int(message["signal"]))

    # ------------------------------------------------------------ runs
    def start_run(self, conn: socket.socket, message: dict, fds: list[int]) -> None:
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.server.runner import run_command_line

        try:
            session = self.spark.newSession()
        except Exception as e:  # noqa: BLE001 - the JVM cannot serve: the next command line starts a fresh engine
            log(f"no session for a run ({e}): stopping")
            self.begin_stop("the JVM cannot start a session")
            self.answer(conn, {"op": "refused"}, fds)
            return
        # Spark ends Python workers idle for a minute: the engine's first run, or one after a quiet
        # minute, starts them while it plans (session.warm_workers_soon)
        cold_workers = self.served == 0 or time.monotonic() - self.last_active > WORKERS_IDLE_S
        # a command line that began before this engine was up waited for it: not a warm run
        just_started = isinstance(message.get("began"), (int, float)) and message["began"] < self.ready_at
        sys.stdout.flush()
        sys.stderr.flush()
        gc.freeze()  # the child's collections skip the engine's objects (no copy of their pages)
        with warnings.catch_warnings():  # Python 3.12 warns of fork with threads: py4j's are not the child's
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            closing = [self.wake_r, self.wake_w, self.selector.fileno(), self.listener.fileno(), conn.fileno(),
                       *(r.conn.fileno() for r in self.runs.values())]
            run_command_line(message, fds, session, self.master, closing, self.command, cold_workers,  # never returns
                             just_started)
        for fd in fds:
            os.close(fd)
        run = Run(pid, conn, session, message.get("argv", []))
        self.runs[pid] = run
        self.served += 1
        self.last_active = time.monotonic()
        try:
            wire.send(conn, {"pid": pid})
            conn.settimeout(None)
            self.selector.register(conn, selectors.EVENT_READ, run)
        except OSError:
            os.kill(pid, signal.SIGTERM)
        log(f"run {pid}: tefq {' '.join(run.argv)}")

    def reap(self) -> None:
        while self.runs:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            run = self.runs.pop(pid, None)
            if run is not None:
                self.finished(run, os.waitstatus_to_exitcode(status))

    def finished(self, run: Run, code: int) -> None:
        """Its exit code to its caller (128 + N for a signal), and what it left in Spark stopped."""
        code = 128 - code if code < 0 else code
        try:
            wire.send(run.conn, {"exit": code})
        except OSError:
            pass
        try:
            self.selector.unregister(run.conn)
        except (KeyError, ValueError):
            pass
        run.conn.close()
        left = stop_leftovers(run.session, self.spark, run.pid)
        self.last_active = time.monotonic()
        log(f"run {run.pid}: exit {code} after {time.monotonic() - run.started:.2f} s"
            + (f", stopped {left} streaming quer{'y' if left == 1 else 'ies'} it left" if left else ""))


FORWARDABLE = (int(signal.SIGINT), int(signal.SIGTERM), int(signal.SIGHUP), int(signal.SIGQUIT))


def stop_leftovers(session, spark, pid: int) -> int:
    """Stop the streaming queries a finished run left active (killed, or failed mid-way) and cancel
    its jobs; the number of queries stopped."""
    left = 0
    try:
        for query in session.streams.active:
            query.stop()
            left += 1
        spark.sparkContext.cancelJobsWithTag(job_tag(pid))
    except Exception as e:  # noqa: BLE001 - a JVM in trouble: the JVM check stops the engine
        log(f"run {pid}: cleaning up failed: {e}")
    return left


def listen(place: Place) -> socket.socket:
    """The engine's socket, 0600 from its creation (umask), bound beside and renamed into place:
    a command line never finds a half-made one."""
    tmp = f"{place.socket}.{os.getpid()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(tmp)
    finally:
        os.umask(old)
    os.chmod(tmp, 0o600)
    sock.listen(16)
    sock.setblocking(False)
    os.replace(tmp, place.socket)
    return sock


def log(text: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} tefq server: {text}", file=sys.stderr, flush=True)


def main(argv: list[str], program: Program) -> None:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.analysis.durations import duration_ms
    from tefq.spark.runtime.session import start_session

    p = argparse.ArgumentParser(prog="python -m tefq.warm_engine")
    p.add_argument("--key", required=True)
    p.add_argument("--master", required=True)
    p.add_argument("--idle", default=os.environ.get(IDLE_VARIABLE))
    p.add_argument("--warm-up", action="store_true")
    args = p.parse_args(argv)
    idle_s = duration_ms(args.idle, "--idle") / 1000 if args.idle else DEFAULT_IDLE_S
    place = Place(runtime_dir(), args.key)
    loading = threading.Thread(target=program.preload, name="tefq-preload")
    loading.start()  # while the JVM starts: the imports wait on no one
    spark = start_session(args.master)
    loading.join()  # before any fork: no thread of ours is left running
    if args.warm_up:
        warm_up(spark, args.master, program.workload)
    Engine(place, args.master, spark, idle_s, program.command).serve()


def warm_up(spark, master: str, workload: Callable[[], bool]) -> None:
    """`tefq server start`: run a small workload once, so that the first real run finds the JIT
    and the Python workers warm (the launcher's: tefq.jvm_archive_setup's UC1 and a sliding count)."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.server.runner import WarmSource
    from tefq.spark.runtime.session_source import SESSION_SOURCE

    started = time.monotonic()
    token = SESSION_SOURCE.set(WarmSource(spark, master))
    try:
        worked = workload()
    finally:
        SESSION_SOURCE.reset(token)
    log(f"warm-up {'done' if worked else 'failed'} in {time.monotonic() - started:.1f} s")
