"""A run killed with SIGKILL and restarted: its command, its first lines, the stream it reads (the reliability tests' harness)."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from typing import Callable

from tests.support.paths import ROOT

UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
X = "http://example.org/iptv#"
BASE = 1_700_000_000_000


FILES = 8


def write_stream(directory) -> None:
    """FILES files of joins and quits, in name order and modification-time order (Spark's order)."""
    rng = random.Random(5)
    directory.mkdir()
    for k in range(FILES):
        rows = []
        for i in range(40):
            t = BASE + k * 100_000 + rng.randrange(100_000)
            user, channel = f"<{X}u{rng.randrange(30)}>", f"<{X}ch{rng.randrange(4)}>"
            rows.append((t, user, rng.choice([f"<{X}join>", f"<{X}quit>"]), channel))
        f = directory / f"{k:02d}.tsv"
        f.write_text("ts\ts\tp\to\n" + "".join(f"{t}\t{s}\t{p}\t{o}\n" for t, s, p, o in sorted(rows)))
        os.utime(f, (1_600_000_000 + k, 1_600_000_000 + k))


def killed_after(child: subprocess.Popen, seconds: float) -> bool:
    """Wait up to `seconds` for `child`; if it is still running, SIGKILL its process group (the
    JVM and the Python workers with it). True if it was killed, False if it ended by itself."""
    try:
        child.wait(seconds)
        return False
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        return True


def scratch_report(root, env: dict) -> tuple[list[str], dict[str, str]]:
    """For a scratch test's failure message: every path under `root`, and the variables of a
    killed run's environment that move a JVM's scratch."""
    moving = ("SPARK_LOCAL_DIRS", "JAVA_TOOL_OPTIONS", "SPARK_HOME", "TMPDIR")
    return sorted(str(f.relative_to(root)) for f in root.rglob("*")), {k: env[k] for k in moving if k in env}


def first_lines(stderr: str) -> str:
    """The error's own words come first; Spark then prints the whole logical plan."""
    return stderr[:2500]


def tefq(args: list[str], env: dict, **kw) -> subprocess.Popen:
    """`python -m tefq ARGS` in a process group of its own (a kill takes its JVM with it)."""
    return subprocess.Popen([sys.executable, "-m", "tefq"] + args, env=env, start_new_session=True, **kw)


def kill_live_runs(args: list[str], env: dict, kills: int, rng: random.Random, committed: Callable[[], bool],
                   first_s: tuple[float, float] = (2.0, 12.0)) -> None:
    """Start the followed run `tefq ARGS` `kills` times, each SIGKILLed at a random moment (within
    `first_s` seconds; the last one within 3 s of `committed()` turning true: a real resume).
    Fails the test if a run ends by itself."""
    import pytest

    for k in range(kills):
        child = tefq(args, env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        last = k == kills - 1
        deadline = time.monotonic() + 600
        while last and not committed() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        with child.stderr:  # a random point: JVM start, planning, a micro-batch, writing the output
            if not killed_after(child, rng.uniform(0.0, 3.0) if last else rng.uniform(*first_s)):
                pytest.fail(f"the followed run ended by itself (exit {child.returncode}): "
                            + first_lines(child.stderr.read().decode()))
        time.sleep(0.2)  # the killed JVM's files are released
