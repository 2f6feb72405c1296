"""A command line that names Spark and runs in its own process starts its session at once, in a
thread (tefq.entry.EarlySession; docs/spark.md "Start-up"). Its answers are Spark's as before (the
CLI and engine tests run through it: TEFQ_SERVER=0); what is new is a command that ends before the
session is up: it says what was wrong at once, exits 2, and leaves no JVM and no file behind."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.spark
UC1 = ROOT / "examples" / "spec10" / "uc1.tef"
EVENTS = ROOT / "examples" / "spec10" / "events.tsv"


def processes_with(text: str) -> list[int]:
    """The processes whose environment holds `text` (this user's: /proc/PID/environ)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:  # gone, or not ours
                continue
    return found


@pytest.mark.parametrize("bad", ["stream", "query"])
def test_a_command_that_fails_before_spark_leaves_nothing(tmp_path, bad: str) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    query, stream = (UC1, tmp_path / "absent") if bad == "stream" else (tmp_path / "absent.tef", EVENTS)
    env = {**os.environ, "TMPDIR": str(scratch), "TEFQ_SERVER": "0"}
    proc = subprocess.run([sys.executable, "-m", "tefq", "run", str(query), "--stream", str(stream), "--engine", "spark"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 2, proc.stderr
    assert "absent" in proc.stderr and "Traceback" not in proc.stderr
    deadline = time.monotonic() + 30  # the JVM ends when its stdin, the command's, closes
    while processes_with(str(scratch)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_with(str(scratch)) == []
    assert sorted(p.name for p in scratch.iterdir()) == []


def catches_sigterm(pid: int) -> bool:
    """Whether process `pid` has a handler of its own for SIGTERM (/proc/PID/status, SigCgt)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    return False


@pytest.mark.parametrize("after_s", [0.0, 0.2, 0.5, 1.0, 1.5, 2.0])
def test_sigterm_while_it_starts_is_a_stop(tmp_path, after_s: float) -> None:
    """SIGTERM before the command line's own handler is in place (its imports, the session starting
    beside them; `after_s` past tefq.entry's handler) still stops it as a command stops: exit 143,
    a sentence, no file left. Raised in the main thread, it once hung the command in an import
    (tefq.entry.stop_before_the_command)."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch), "TEFQ_SERVER": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "tefq", "run", str(UC1), "--stream", str(EVENTS), "--engine", "spark"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    while not catches_sigterm(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(after_s)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 143, err
    assert "SIGTERM" in err and "Traceback" not in err
    assert sorted(p.name for p in scratch.iterdir()) == []
