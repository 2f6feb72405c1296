"""Issue 40: a live windowed run (examples/rspql/busy-channels.rspql: a CONSTRUCT stream fed back
into a sliding window) with --checkpoint, SIGKILLed at random moments and restarted each time, ends
with the oracle's rows over the same input: every window once, nothing lost, nothing twice. Over a
followed directory (its files read one per micro-batch) and over a Redis stream. 2 kills in `make
test` (the directory) and 1 (Redis), 20 each in `make test-faults` (TEFQ_FAULTS_LONG=1).

A followed stream never ends, so its last element is a sentinel (a predicate no query reads) well
after the log: the run is stopped (SIGTERM) once it has reported the oracle's last window, which
only the sentinel's event time closes. The output holds both queries' rows, appended micro-batch
by micro-batch; compared as a sorted list of lines (a repeat is one line too many). `tefq publish`
feeds the Redis stream at 30 elements/s while the runs are killed; the last kill comes after the
first windows were written."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from tests.support.kills import first_lines, kill_live_runs, tefq
from tests.support.paths import ROOT
from tests.support.redis_client import redis
from tests.support.windowed_spark import NS, bordered_log, write_files

pytestmark = [pytest.mark.reliability, pytest.mark.spark]

LONG = os.environ.get("TEFQ_FAULTS_LONG") == "1"
BUSY = os.path.join(ROOT, "examples", "rspql", "busy-channels.rspql")
SENTINEL_MS = 120_500  # past the log's last window by far: it closes every window with rows


def log_and_sentinel() -> list:
    """The join log of the in-process tests (60 s, joins on 5 s borders), then the sentinel."""
    return bordered_log(3, 300, 60_000, step_ms=5000) + [(SENTINEL_MS, f"<{NS}clock>", f"<{NS}sentinel>", f"<{NS}now>")]


def data_lines(path) -> list[bytes]:
    """The rows of a result CSV (header left out: written once, asserted apart), sorted."""
    lines = open(path, "rb").read().splitlines() if os.path.exists(path) else []
    return sorted(ln for ln in lines[1:] if ln)


def last_window(path) -> int:
    """The close of the last window with rows in a result CSV (`query,tick,...`)."""
    return max(int(ln.split(b",")[1]) for ln in data_lines(path))


def has_window(path, tick: int) -> bool:
    return any(int(ln.split(b",")[1]) == tick for ln in data_lines(path))


@pytest.mark.parametrize("over", ["directory", "redis"])
def test_sigkills_then_restart_report_each_window_once(tmp_path, over, request) -> None:
    elements = log_and_sentinel()
    files = tmp_path / "s"
    write_files(elements, files, [40 * k for k in range(1, 8)] + [len(elements) - 1])  # 9 files, the sentinel alone
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch), "TEFQ_SPARK_MASTER": "local[2]"}
    got, want, ck = tmp_path / "got.csv", tmp_path / "want.csv", str(tmp_path / "ck")
    oracle = subprocess.run([sys.executable, "-m", "tefq", "run", BUSY, "--quiet", "--engine", "oracle", "--stream",
                             str(files), "--out", str(want)], capture_output=True, text=True, env=env)
    assert oracle.returncode == 0, oracle.stderr
    last = last_window(want)
    assert last < SENTINEL_MS - 10_000  # the sentinel closes it in a live run
    if over == "directory":
        stream, kills = str(files), 20 if LONG else 2
    else:
        port = request.getfixturevalue("redis_port")
        stream, kills = f"redis://127.0.0.1:{port}/busy", 20 if LONG else 1
        redis.Redis(port=port).delete("busy")
        publisher = tefq(["publish", str(files), "--to", stream, "--rate", "30", "--interval", "500ms", "--quiet"], env)
    run_args = ["run", BUSY, "--quiet", "--follow", "--stream", stream, "--checkpoint", ck, "--out", str(got),
                "--max-files-per-trigger", "1"]
    kill_live_runs(run_args, env, kills, random.Random(17), lambda: bool(data_lines(got)), first_s=(2.0, 14.0))
    if over == "redis":
        assert publisher.wait(timeout=600) == 0
    # The resumed run writes --out again from the start (every committed window handed over once
    # more): waiting on the killed runs' file would see their windows before it has truncated it.
    got.unlink(missing_ok=True)
    final = tefq(run_args, env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while not has_window(got, last) and final.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(1)  # a later poll would add a repeat: give it the chance
    final.send_signal(signal.SIGTERM)
    _, err = final.communicate(timeout=300)
    assert final.returncode == 143, first_lines(err.decode())
    assert open(got, "rb").readline() == open(want, "rb").readline()
    assert data_lines(got) == data_lines(want), f"{kills} kills"
