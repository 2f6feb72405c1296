"""Issue 26 (part 2), case 6: a Python worker killed mid-batch costs a retry of its task, not the
run (embedded `local[N]` gave each task one attempt: "Task ... failed 1 times", exit 1 and a
68-line Java dump); the output still equals the oracle's."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from tefq.spark.runtime.task_retries import TASK_ATTEMPTS, with_retries
from tests.support.paths import ROOT

pytestmark = [pytest.mark.reliability]

UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
X = "http://example.org/iptv#"
BASE = 1_700_000_000_000
FILES, ROWS = 8, 20_000


@pytest.mark.parametrize("master, expected", [
    ("local", f"local[1,{TASK_ATTEMPTS}]"), ("local[*]", f"local[*,{TASK_ATTEMPTS}]"),
    ("local[2]", f"local[2,{TASK_ATTEMPTS}]"), ("local[2,7]", "local[2,7]"), ("spark://h:7077", "spark://h:7077"),
])
def test_embedded_masters_allow_task_retries(master, expected) -> None:
    assert with_retries(master) == expected


def write_stream(directory) -> None:
    rng = random.Random(3)
    directory.mkdir()
    for k in range(FILES):
        lines = []
        for i in range(ROWS):
            t = BASE + (k * ROWS + i) * 50
            lines.append(f"{t}\t<{X}u{rng.randrange(3000)}>\t<{X}{rng.choice(['join', 'quit'])}>\t"
                         f"<{X}ch{rng.randrange(40)}>\n")
        f = directory / f"{k:02d}.tsv"
        f.write_text("ts\ts\tp\to\n" + "".join(lines))
        os.utime(f, (1_600_000_000 + k, 1_600_000_000 + k))


def process_table() -> dict[int, tuple[int, str, int]]:
    """pid -> (parent pid, command line, CPU ticks), from /proc."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        table[int(name)] = (int(fields[1]), cmd, int(fields[11]) + int(fields[12]))
    return table


def busy_workers(root: int, before: dict[int, int]) -> tuple[list[int], dict[int, int]]:
    """The forked pyspark.daemon workers under `root` (our run only) that used CPU since `before`."""
    table = process_table()
    ours, frontier = set(), {root}
    while frontier:
        frontier = {p for p, (pp, _, _) in table.items() if pp in frontier} - ours
        ours |= frontier
    workers = {p: table[p][2] for p in ours
               if "pyspark.daemon" in table[p][1] and "pyspark.daemon" in table.get(table[p][0], (0, "", 0))[1]}
    return [p for p, ticks in workers.items() if p in before and ticks > before[p]], workers


@pytest.mark.spark
@pytest.mark.skipif(os.environ.get("TEFQ_FAULTS_LONG") != "1", reason="make test-faults (TEFQ_FAULTS_LONG=1): make test stays under 20 minutes")
def test_a_python_worker_killed_mid_batch_costs_a_retry_not_the_run(tmp_path) -> None:
    stream = tmp_path / "s"
    write_stream(stream)
    want, got = tmp_path / "want.csv", tmp_path / "got.csv"
    oracle = subprocess.run([sys.executable, "-m", "tefq", "run", UC1, "--quiet", "--engine", "oracle", "--stream",
                             str(stream), "--out", str(want)], capture_output=True, text=True, timeout=600)
    assert oracle.returncode == 0, oracle.stderr
    child = subprocess.Popen([sys.executable, "-m", "tefq", "run", UC1, "--quiet", "--engine", "spark", "--stream",
                              str(stream), "--out", str(got), "--max-files-per-trigger", "1"],
                             env={**os.environ, "TEFQ_SPARK_MASTER": "local[2]"}, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, start_new_session=True)
    killed, seen = 0, {}
    try:
        while child.poll() is None and killed < 2:
            busy, seen = busy_workers(child.pid, seen)
            if busy:
                os.kill(busy[0], signal.SIGKILL)  # a worker in the middle of a task
                killed += 1
                time.sleep(3)
                seen = {}
            time.sleep(0.1)
        _, err = child.communicate(timeout=900)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert killed, "no busy Python worker was seen: the run ended first"
    assert child.returncode == 0, err.decode()[-3000:]
    assert got.read_bytes() == want.read_bytes()
