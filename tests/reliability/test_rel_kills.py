"""Issue 17: SIGKILL at random points of a Spark run with --checkpoint, then restart, again and
again; the last run's output must equal the oracle's byte for byte (every tick once, nothing lost).
2 kills in `make test`, 20 in `make test-faults` (TEFQ_FAULTS_LONG=1)."""
from __future__ import annotations

import os
import random
import subprocess
import sys
import time

import pytest

from tests.support.kills import UC1, first_lines, killed_after, write_stream

pytestmark = [pytest.mark.reliability, pytest.mark.spark]

KILLS = 20 if os.environ.get("TEFQ_FAULTS_LONG") == "1" else 2


def tefq_run(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tefq", "run", UC1, "--quiet"] + args, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


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
