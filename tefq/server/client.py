"""Finding, starting and using a warm engine from a command line (standard library only: this runs
before anything heavy is imported). See tefq.server and its `place` module."""
from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from tefq.server import wire
from tefq.server.place import Place, PlaceError, enabled, identity, key_of, runtime_dir
from tefq.spark.runtime.session_source import default_master, is_local, runtime_key

# The commands a warm engine runs (the others gain nothing, or manage the engine itself).
DELEGATED = ("run", "facts", "usecase", "compare", "parse", "explain")
# A command line that sets the driver JVM itself starts its own Spark (--conf: unless Spark SQL's).
OWN_JVM_OPTIONS = ("--driver-memory",)
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
REPLY_TIMEOUT_S = 30.0  # an engine that does not answer this fast is hung: replaced
START_TIMEOUT_S = 600.0  # Spark's start and first run on a loaded machine


def command_of(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def option_values(argv: Sequence[str], name: str) -> list[str]:
    """The values of option `name` in a command line, in order (`--name VALUE` or `--name=VALUE`)."""
    values = []
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            values.append(argv[i + 1])
        elif arg.startswith(name + "="):
            values.append(arg[len(name) + 1:])
    return values


def wanted_master(argv: Sequence[str]) -> str:
    """The master the command line runs Spark on: its --remote or --master, else TEFQ_SPARK_MASTER or local[*]."""
    return default_master((option_values(argv, "--remote") or option_values(argv, "--master") or [None])[-1])


def eligible_master(argv: Sequence[str]) -> str | None:
    """The embedded master a warm engine would run this command line on, or None when it runs here."""
    return embedded_master(argv) if enabled() else None


def embedded_master(argv: Sequence[str]) -> str | None:
    """The embedded master this command line would start Spark on without a JVM setting of its own
    (--driver-memory; --conf but Spark SQL's), or None."""
    if command_of(argv) not in DELEGATED:
        return None
    if any(a.split("=", 1)[0] in OWN_JVM_OPTIONS for a in argv) or not all(runtime_key(k) for k in conf_keys(argv)):
        return None
    master = wanted_master(argv)
    return master if is_local(master) else None


def conf_keys(argv: Sequence[str]) -> list[str]:
    """The keys of the command line's `--conf KEY=VALUE` options."""
    return [value.split("=", 1)[0] for value in option_values(argv, "--conf")]


def place_for(master: str) -> Place:
    return Place(runtime_dir(), key_of(identity(master)))


def connect(place: Place, timeout: float = REPLY_TIMEOUT_S) -> socket.socket | None:
    """A connection to the engine at `place`, or None when none listens there."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(place.socket)
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None
    return sock


def ask(place: Place, message: dict, timeout: float = REPLY_TIMEOUT_S) -> dict | None:
    """One request and its reply; None when no engine answers there."""
    sock = connect(place, timeout)
    if sock is None:
        return None
    try:
        wire.send(sock, message)
        return wire.receive(sock)[0]
    except (OSError, ValueError):
        return None
    finally:
        sock.close()


def delegate(argv: Sequence[str], master: str, began: float | None = None) -> int | None:
    """Run the command line in the warm engine for `master` if one is up: its exit code, else None.
    `began`: when the command line began (time.time()); the engine tells a run that waited for it
    to start from a warm one by it (its summary line)."""
    try:
        place = place_for(master)
    except PlaceError as e:
        print(f"tefq: no warm engine: {e}", file=sys.stderr)
        return None
    sock = connect(place)
    return None if sock is None else run_there(sock, place, argv, began)


def run_there(sock: socket.socket, place: Place, argv: Sequence[str], began: float | None = None) -> int | None:
    """Send the command line with this process's standard streams, forward signals, wait for its
    exit code. None when the engine turned it down before it ran (stale, stopping, hung)."""
    try:
        with standard_streams() as fds:
            wire.send(sock, {"op": "run", "key": place.key, "argv": list(argv), "cwd": os.getcwd(),
                             "env": dict(os.environ), "umask": current_umask(),
                             "encoding": getattr(sys.stdout, "encoding", None) or "utf-8",
                             **({"began": began} if began is not None else {})}, fds)
        reply = wire.receive(sock)[0]
    except (OSError, ValueError):
        reply = None
    if not reply or "pid" not in reply:
        sock.close()
        return None
    sock.settimeout(None)  # a run takes as long as it takes (a --follow run: until stopped)
    with forwarded_signals(sock):
        done = wait_for_exit(sock)
    sock.close()
    if done is None:
        print("tefq: the warm engine stopped during the run (its log: tefq server status)", file=sys.stderr)
        return 1
    return done


def wait_for_exit(sock: socket.socket) -> int | None:
    while True:
        try:
            message = wire.receive(sock)[0]
        except InterruptedError:
            continue
        except (OSError, ValueError):
            return None
        if message is None:
            return None
        if "exit" in message:
            return int(message["exit"])


@contextmanager
def standard_streams() -> Iterator[list[int]]:
    """Descriptors 0, 1, 2 to pass to the run (a closed one stands in as /dev/null)."""
    opened = []
    fds = []
    for fd, mode in ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(fd)
            fds.append(fd)
        except OSError:
            opened.append(os.open(os.devnull, mode))
            fds.append(opened[-1])
    try:
        yield fds
    finally:
        for fd in opened:
            os.close(fd)


@contextmanager
def forwarded_signals(sock: socket.socket) -> Iterator[None]:
    """Ctrl-C, SIGTERM, SIGHUP and SIGQUIT go to the run (which stops as it would in this process)."""

    def forward(signum, frame) -> None:
        try:
            wire.send(sock, {"op": "signal", "signal": int(signum)})
        except OSError:
            pass

    saved = {s: signal.signal(s, forward) for s in FORWARDED_SIGNALS}
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


def current_umask() -> int:
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


# ---------------------------------------------------------------- starting and stopping engines
class Launch:
    """An engine being started by this command line, with the start lock held until it is ready
    (or abandoned): another command line waits for it instead of starting a second one."""

    def __init__(self, place: Place) -> None:
        self.place = place
        self.lock = open(place.lock, "a")
        os.chmod(place.lock, 0o600)
        self.proc: subprocess.Popen | None = None

    def acquire(self, wait: bool = True) -> bool:
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return False
        return True

    def release(self) -> None:
        self.lock.close()


def start(master: str, *, say: bool, warm_up: bool = False, idle: str | None = None,
          launched: Launch | None = None) -> Place | None:
    """The warm engine for `master`, started unless one is up (or `launched` early is starting);
    None when it could not start (its log says why). Two command lines starting at once: one
    starts it, the other waits for it."""
    launch = launched or Launch(place_for(master))
    try:
        if launched is None:
            launch.acquire()
        place = launch.place
        if is_ready(place):
            return place
        if say:
            print(f"[spark] starting the warm engine ({master}): later runs use it; `tefq server stop` stops it",
                  file=sys.stderr, flush=True)
        if launch.proc is None or launch.proc.poll() is not None:
            replace_stale(place, master)
            launch.proc = spawn(place, master, warm_up, idle)
        return place if wait_ready(place, launch.proc) else None
    finally:
        launch.release()


def launch_early(master: str) -> Launch | None:
    """For a command line bound for Spark (`--engine spark`, `--follow`): the engine starts while
    the command line reads and checks its input; `start(..., launched=)` then waits for it, and
    `abandon` stops it if the command line ends without Spark (bad input). None when an engine is
    up or another command line is starting one."""
    launch = Launch(place_for(master))
    if not launch.acquire(wait=False) or is_ready(launch.place):
        launch.release()
        return None
    replace_stale(launch.place, master)
    launch.proc = spawn(launch.place, master, False, None)
    return launch


def abandon(launched: Launch | None) -> None:
    """Stop an engine launched early for a command line that ended without needing it."""
    if launched is None:
        return
    if launched.proc is not None and launched.proc.poll() is None:
        os.killpg(launched.proc.pid, signal.SIGTERM)
    launched.release()


def is_ready(place: Place) -> bool:
    return bool((ask(place, {"op": "ping"}) or {}).get("ready"))


def spawn(place: Place, master: str, warm_up: bool, idle: str | None) -> subprocess.Popen:
    """`python -m tefq.warm_engine`, detached (its own session: its JVM and runs in its group)."""
    command = [sys.executable, "-m", "tefq.warm_engine", "--key", place.key, "--master", master]
    command += ["--warm-up"] if warm_up else []
    command += ["--idle", idle] if idle else []
    with open(place.log, "ab") as log:
        os.chmod(place.log, 0o600)
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd="/",
                                start_new_session=True, env=dict(os.environ, PYTHONSAFEPATH="1"))


def wait_ready(place: Place, proc: subprocess.Popen) -> bool:
    """Wait until the engine `proc` answers (True) or dies."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if (ask(place, {"op": "ping"}, timeout=5.0) or {}).get("ready"):
            return True
        if proc.poll() is not None:
            print(f"tefq: the warm engine did not start (exit {proc.returncode}; {place.log}): "
                  f"{last_line(place.log)}", file=sys.stderr)
            return False
        time.sleep(0.1)
    proc.terminate()
    return False


def replace_stale(place: Place, master: str) -> None:
    """Stop what is left of an engine at `place` (a hung one) and this interpreter's engines for the
    same master and settings whose code has changed since they started."""
    mine = identity(master)
    for other in Place.all(place.directory):
        info = read_info(other)
        stale = other.key == place.key or (info is not None and same_but_code(info.get("identity", {}), mine))
        if stale:
            stop(other)


def same_but_code(a: dict, b: dict) -> bool:
    fixed = ("uid", "python", "master", "env")
    return all(a.get(k) == b.get(k) for k in fixed) and a != b


def read_info(place: Place) -> dict | None:
    try:
        return json.loads(place.info.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def stop(place: Place, wait_s: float = 60.0) -> bool:
    """Stop the engine at `place` (runs in progress are stopped as by SIGTERM) and remove its files;
    True if one was running."""
    info = read_info(place) or {}
    asked = ask(place, {"op": "stop"}, timeout=5.0) is not None
    pid = info.get("pid")
    deadline = time.monotonic() + wait_s
    while pid and is_engine(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if pid and is_engine(pid):  # hung: its process group is the engine, its JVM and its runs
        os.killpg(pid, signal.SIGKILL)
        asked = True
    for path in (place.socket, str(place.info)):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    return asked


def is_engine(pid: int) -> bool:
    """Whether `pid` is a tefq engine process of this user (not a recycled pid)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"tefq.warm_engine" in f.read() and os.stat(f"/proc/{pid}").st_uid == os.getuid()
    except OSError:
        return False


def last_line(path) -> str:
    try:
        lines = [ln for ln in open(path, encoding="utf-8", errors="replace").read().splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""
