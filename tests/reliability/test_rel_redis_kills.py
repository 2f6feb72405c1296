"""Issue 24: a live run over Redis with --checkpoint, SIGKILLed at random moments while `tefq
publish` feeds it and restarted each time, ends with the oracle's output over everything published,
byte for byte — every tick once, nothing lost, nothing twice. 2 kills in `make test`, 20 in `make
test-faults` (TEFQ_FAULTS_LONG=1); the last kill comes after the first rows were committed.

A followed stream never ends, so after the publisher a sentinel element (a predicate no query
reads) is added one minute after the last event; the run is stopped (SIGTERM) once it has reported
the last tick before it. Compared: every tick up to that one, header included."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from tests.support.kills import UC1, first_lines, kill_live_runs, tefq, write_stream

pytestmark = [pytest.mark.reliability, pytest.mark.spark]

KILLS = 20 if os.environ.get("TEFQ_FAULTS_LONG") == "1" else 2
EVERY_MS = 10_000  # UC1's period
X = "http://example.org/iptv#"


def up_to(path, last_tick: int) -> bytes:
    """The CSV's header and its rows of ticks at or before `last_tick`."""
    lines = open(path, "rb").read().splitlines(keepends=True)
    return b"".join(ln for ln in lines if not ln[:1].isdigit() or int(ln.split(b",", 1)[0]) <= last_tick)


def has_tick(path, tick: int) -> bool:
    return os.path.exists(path) and any(ln.startswith(f"{tick},".encode()) for ln in open(path, "rb"))


def has_rows(path) -> bool:
    return os.path.exists(path) and any(ln[:1].isdigit() for ln in open(path, "rb"))


def add_sentinel(url: str, stream_dir) -> tuple[int, int]:
    """The sentinel one minute after the last event; (its time, the last tick a live run reports)."""
    from tefq.io.readers import read_stream
    from tefq.io.redis_stream import RedisStream, add_elements

    last = max(e[0] for e in read_stream(str(stream_dir)))
    at = last + 60_000
    stream = RedisStream.parse(url)
    add_elements(stream.connect(), stream, [(at, f"<{X}clock>", f"<{X}sentinel>", f"<{X}now>")])
    return at, (at - 1) // EVERY_MS * EVERY_MS - EVERY_MS


def test_sigkills_while_publish_feeds_redis_then_restart_equal_the_oracle(tmp_path, redis_port) -> None:
    stream = tmp_path / "s"
    write_stream(stream)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch), "TEFQ_SPARK_MASTER": "local[2]"}
    url = f"redis://127.0.0.1:{redis_port}/killed"
    got, want, ck = tmp_path / "got.csv", tmp_path / "want.csv", str(tmp_path / "ck")
    run_args = ["run", UC1, "--quiet", "--follow", "--stream", url, "--checkpoint", ck, "--out", str(got)]
    publisher = tefq(["publish", str(stream), "--to", url, "--rate", "20", "--interval", "500ms", "--quiet"], env)
    kill_live_runs(run_args, env, KILLS, random.Random(13), lambda: has_rows(got))
    assert publisher.wait(timeout=600) == 0
    _, last_tick = add_sentinel(url, stream)
    last = tefq(run_args, env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 600
    while not has_tick(got, last_tick) and last.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    last.send_signal(signal.SIGTERM)
    _, err = last.communicate(timeout=300)
    assert last.returncode == 143, first_lines(err.decode())
    oracle = subprocess.run([sys.executable, "-m", "tefq", "run", UC1, "--quiet", "--engine", "oracle", "--stream",
                             url, "--out", str(want)], capture_output=True, text=True, env=env)
    assert oracle.returncode == 0, oracle.stderr
    assert has_tick(want, last_tick)
    assert up_to(got, last_tick) == up_to(want, last_tick), f"{KILLS} kills"
