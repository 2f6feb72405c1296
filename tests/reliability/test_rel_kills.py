"""Issue 17: SIGKILL at random points of a Spark run with --checkpoint, then restart, again and
again; the last run's output must equal the oracle's byte for byte (every tick once, nothing lost).
2 kills in `make test`, 20 in `make test-faults` (TEFQ_FAULTS_LONG=1)."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

pytestmark = [pytest.mark.reliability, pytest.mark.spark]

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
X = "http://example.org/iptv#"
BASE = 1_700_000_000_000
KILLS = 20 if os.environ.get("TEFQ_FAULTS_LONG") == "1" else 2
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


def tefq_run(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tefq", "run", UC1, "--quiet"] + args, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


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


def first_lines(stderr: str) -> str:
    """The error's own words come first; Spark then prints the whole logical plan."""
    return stderr[:2500]


def test_random_sigkills_then_restart_equal_the_oracle(tmp_path) -> None:
    stream = tmp_path / "s"
    write_stream(stream)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch), "TEFQ_SPARK_MASTER": "local[2]"}
    want, got, ck = tmp_path / "want.csv", tmp_path / "got.csv", str(tmp_path / "ck")
    oracle = subprocess.run([sys.executable, "-m", "tefq", "run", UC1, "--quiet", "--engine", "oracle", "--stream",
                             str(stream), "--out", str(want)], capture_output=True, text=True)
    assert oracle.returncode == 0, oracle.stderr
    spark_args = ["--stream", str(stream), "--checkpoint", ck, "--out", str(got), "--max-files-per-trigger", "1"]
    rng, kills, finished = random.Random(11), 0, 0
    while kills < KILLS:
        child = tefq_run(spark_args, env)
        with child.stderr:  # a random point: JVM start, planning, a micro-batch, writing the output
            if killed_after(child, rng.uniform(1.0, 10.0)):
                kills += 1
            else:
                finished += 1
                assert child.returncode == 0, first_lines(child.stderr.read().decode())
        time.sleep(0.2)  # the killed JVM's files are released
    last = tefq_run(spark_args, env)
    _, err = last.communicate()
    assert last.returncode == 0, first_lines(err.decode())
    assert got.read_bytes() == want.read_bytes(), f"{kills} kills, {finished} runs finished before their kill"
