"""The `tefq` command's entry point: the warm engine first (tefq.server), else this process.

A command line a warm engine can run (`client.eligible_master`) goes to the engine of its
identity when one is up. Otherwise it runs here, and if it is about to start Spark on that
embedded master (`session_source.HandOver`) it starts the engine and runs there instead: the
first Spark run pays Spark's start-up once, the runs after it do not; one that names Spark starts
the engine at once, while it reads and checks its input. `TEFQ_SERVER=0` keeps every
run in its own process, where one that names Spark starts its session at once (`EarlySession`).
A command that reads standard input runs here when no engine is up (what it read cannot be read
again)."""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tefq.server import client
from tefq.spark.runtime.session_source import SESSION_SOURCE, HandOver, runtime_key
from tefq.stopping import raise_later, this_process_only

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SPARK_COMMANDS = ("run", "facts", "usecase", "compare")  # the command lines that can start Spark
TERMINATED_EARLY = "tefq: terminated by SIGTERM before the command started"
KILL_AFTER_S = 3.0  # a starting JVM that outlives SIGTERM this long gets SIGKILL (`EarlySession.cancel`)
EARLY_START_WAIT_S = 120.0  # the longest an ending command waits for its early session to stop


class HandOverSource:
    """`get_session` in a command line that a warm engine should run: HandOver for its master."""

    warm = False
    starts_engine = True  # session_source.starting_line says so

    def __init__(self, master: str) -> None:
        self.master = master

    def __call__(self, master: str, settings):
        if master == self.master and settings.driver_memory is None and all(runtime_key(k) for k, _ in settings.conf):
            raise HandOver(master)
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.spark.runtime.session import start_session

        return start_session(master, settings=settings)


class EarlySession:
    """A command line that names Spark and runs in this process starts its embedded session in a
    thread at once: the driver JVM starts while the command imports, parses and reads its input,
    and the Python workers while it plans its query (docs/spark.md "Start-up"). As a source, it
    answers a run on `master` with that session; any other master or settings start theirs once
    it is up (Spark's one JVM per process). A start that failed is tried again by the run, which
    reports it as it would have."""

    warm = False

    def __init__(self, master: str) -> None:
        self.master, self.ready, self.cancelled = master, threading.Event(), False
        self.outcome: SparkSession | BaseException | None = None
        threading.Thread(target=self.start, name="tefq-early-session", daemon=True).start()

    def start(self) -> None:
        try:
            if self.cancelled:
                return
            # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
            from tefq.spark.runtime.session import start_session, warm_workers_soon

            self.outcome = start_session(self.master)
            warm_workers_soon(self.outcome)
        except BaseException as e:  # noqa: BLE001 - the run starts Spark again and reports it
            self.outcome = e
        finally:
            self.ready.set()

    def __call__(self, master: str, settings):
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.spark.runtime.session import SessionSettings, start_session

        self.ready.wait()
        if self.cancelled:  # stopped by SIGTERM (`end_process`): no JVM of its own while the process ends
            threading.Event().wait()
        if master == self.master and settings == SessionSettings() and not isinstance(self.outcome, BaseException):
            return self.outcome
        return start_session(master, settings=settings)

    def cancel(self) -> None:
        """The command ended before its session was up (bad input, SIGTERM): stop the JVM starting
        for it rather than wait for it (2-3 s). SIGTERM first (the JVM's shutdown hooks), SIGKILL
        after KILL_AFTER_S (a JVM stopped in the middle of creating its context can hang in those
        hooks: 1 run in 88). Either way pyspark's launcher removes its connection directory
        and the thread's start fails, and the JVM's scratch is the run's (`jvm_scratch`, removed
        with the run's)."""
        self.cancelled = True
        started = time.monotonic()
        while not self.ready.wait(0.05) and time.monotonic() < started + EARLY_START_WAIT_S:
            how = signal.SIGTERM if time.monotonic() < started + KILL_AFTER_S else signal.SIGKILL
            for pid in starting_jvms():
                with contextlib.suppress(OSError):  # it ended meanwhile
                    os.kill(pid, how)

    def end_process(self, code: int) -> None:
        """SIGTERM before the command line took it over (`stop_before_the_command`): say so, stop the
        starting JVM (`cancel`), remove the run's scratch and end the process with `code`. Through
        os._exit: an orderly exit could wait on a lock the main thread holds."""
        print(TERMINATED_EARLY, file=sys.stderr, flush=True)
        self.cancel()
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq import cleanup

        cleanup.remove_all()
        os._exit(code)


def starting_jvms() -> list[int]:
    """This process's children that run Spark's launcher or JVM (pyspark starts `spark-submit`,
    which becomes the driver JVM); none where /proc is not there."""
    found = []
    with contextlib.suppress(OSError):
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError):  # gone
                    parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                    if parent == os.getpid() and b"spark" in (entry / "cmdline").read_bytes():
                        found.append(int(entry.name))
    return found


def here() -> None:
    """The command line in this process (tefq.cli.main; exits)."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.cli import main

    main()


def here_early(argv: list[str]) -> None:
    """The command line in this process, its session started at once when it names Spark on an
    embedded master with no JVM setting of its own (`EarlySession`)."""
    starts_spark = bound_for_spark(argv) and client.command_of(argv) in SPARK_COMMANDS
    master = client.embedded_master(argv) if starts_spark else None
    if master is None:
        here()
    early = EarlySession(master)
    token = SESSION_SOURCE.set(early)
    try:
        here()
    finally:
        SESSION_SOURCE.reset(token)
        early.cancel()


def reads_stdin(argv: list[str]) -> bool:
    return "-" in argv or any(a.endswith("=-") for a in argv)


def bound_for_spark(argv: list[str]) -> bool:
    """A command line that names Spark (`--engine spark`, TEFQ_ENGINE=spark), follows a stream, or
    leaves the engine to auto on an input that auto runs on Spark whatever the query (`large_input`)."""
    engine = (client.option_values(argv, "--engine") or [os.environ.get("TEFQ_ENGINE", "auto")])[-1]
    return engine == "spark" or (engine == "auto" and ("--follow" in argv or large_input(argv)))


def large_input(argv: list[str]) -> bool:
    """`tefq run` or `tefq facts` on stream files of at least AUTO_ORACLE_EVENTS events (estimated as
    `--engine auto` estimates them), where auto picks Spark for any query: Spark starts at once, as
    for `--engine spark`, not once the command has chosen (a first run on 300,000 events: 0.24 s)."""
    if client.command_of(argv) not in ("run", "facts"):
        return False
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.io.paths import stream_arg
    from tefq.io.redis_stream import is_redis_url
    from tefq.service import AUTO_ORACLE_EVENTS, STDIN, estimated_events

    paths = [stream_arg(v).path for v in client.option_values(argv, "--stream")]
    if not paths or any(p == STDIN or is_redis_url(p) for p in paths):
        return False
    try:
        return estimated_events(paths) >= AUTO_ORACLE_EVENTS
    except Exception:  # noqa: BLE001 - bad input: the command line reports it as it would have
        return False


def stop_before_the_command(signum: int, frame) -> None:
    """SIGTERM before tefq.cli.main takes it over (while it imports, an early session starting
    beside it): exit 143 as a stopped command does, not killed outright. With a session starting,
    not by raising here: the main thread may be inside the import machinery, where an exception is
    dropped with the import lock held, and the session's thread then waits for that lock forever
    (seen 1 in 14 at 0.3 s); a thread of its own stops the session and ends the process
    (`EarlySession.end_process`)."""
    early = SESSION_SOURCE.get()  # the main thread's, where the handler runs
    if isinstance(early, EarlySession):
        threading.Thread(target=early.end_process, args=(128 + signum,), name="tefq-stop", daemon=True).start()
    elif not raise_later(signum, frame):
        print(TERMINATED_EARLY, file=sys.stderr)
        raise SystemExit(128 + signum)


def main() -> None:
    began = time.time()  # a run that waits for the warm engine to start is not called warm
    signal.signal(signal.SIGTERM, this_process_only(stop_before_the_command))
    argv = sys.argv[1:]
    master = client.eligible_master(argv)
    if master is None:
        here_early(argv)
    code = client.delegate(argv, master, began)
    if code is not None:
        sys.exit(code)
    if reads_stdin(argv):
        here()
    launched = client.launch_early(master) if bound_for_spark(argv) else None
    token = SESSION_SOURCE.set(HandOverSource(master))
    try:
        here()
    except HandOver:
        sys.exit(hand_over(argv, master, launched, began))
    except SystemExit:  # it ended here (bad input, or no Spark after all): the early engine is not needed
        client.abandon(launched)
        raise
    finally:
        SESSION_SOURCE.reset(token)


def hand_over(argv: list[str], master: str, launched, began: float | None = None) -> int:
    """Start the warm engine (or wait for the one `launched` early) and run the command line there;
    if it cannot start, run it here."""
    signal.signal(signal.SIGINT, signal.default_int_handler)  # tefq.cli.main ignored them on its way out
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        place = client.start(master, say=False, launched=launched)  # starting_line said it
        code = client.delegate(argv, master, began) if place is not None else None
    except KeyboardInterrupt:
        print("tefq: interrupted", file=sys.stderr)
        return 130
    if code is not None:
        return code
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.cli import main

    token = SESSION_SOURCE.set(None)  # Spark starts here now: no second hand-over
    try:
        main()
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 1
    finally:
        SESSION_SOURCE.reset(token)
    return 0
