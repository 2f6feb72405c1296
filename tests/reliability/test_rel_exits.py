"""Issue 26, case 10 (outside Spark): temporary directories are removed on every exit path and
SIGTERM exits 143 however often it comes.

- An oracle run that runs out of memory (RLIMIT_AS) left its `tefq-stage-*` directory behind: the
  MemoryError's frames still held the memory while the directory's own clean-up ran, which then
  failed too. Now the directory is registered with tefq.cleanup (removed by `main` after the run's
  frames are freed) and the failure is one sentence, exit 1.
- In follow mode the first signal stops after the micro-batch and a second one stops at once; a
  second SIGTERM exited 130 (the follow loop raises KeyboardInterrupt for either signal). `main`
  now knows which signals arrived (a wakeup descriptor), whatever handler was installed."""
from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.reliability

UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
TEFQ = os.environ.get("TEFQ_CLI", f"{sys.executable} -m tefq").split()  # TEFQ_CLI: to try old code
MEMORY = 1 << 30
X = "http://example.org/iptv#"
BASE = 1_700_000_000_000


def memory_limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    resource.setrlimit(resource.RLIMIT_CPU, (120, 120))


def test_an_out_of_memory_run_removes_its_stage_directory(tmp_path) -> None:
    """A run without a tick bound (--max-ticks 0) over a stray timestamp holding 200 facts open
    really needs unbounded memory: it must fail with a sentence and leave no scratch directory."""
    stream = tmp_path / "s.tsv"
    stream.write_text("ts\ts\tp\to\n" + "".join(f"{BASE + i}\t<{X}u{i}>\t<{X}join>\t<{X}ch{i}>\n" for i in range(200))
                      + f"{BASE + 10 ** 13}\t<{X}z>\t<{X}other>\t<{X}ch0>\n")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    r = subprocess.run(TEFQ + ["run", UC1, "--engine", "oracle", "--stream", str(stream), "--max-ticks", "0",
                               "--quiet", "--out", str(tmp_path / "out.csv")],
                       capture_output=True, text=True, preexec_fn=memory_limit, env={**os.environ, "TMPDIR": str(scratch)})
    assert r.returncode == 1, r.stderr[-2000:]
    assert "tefq: out of memory" in r.stderr and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert os.listdir(scratch) == []


# A run of tefq's main() whose `tefq run` is replaced by the follow loop's signal handling: the
# first signal asks it to stop after the current micro-batch, a second one raises KeyboardInterrupt
# (tefq/spark/runtime/follow.py); `graceful` returns after the first signal, as a finished batch does.
FOLLOW = """
import signal, sys, time
import tefq.cli as cli

def follow(args):
    asked = []
    def handle(signum, frame):
        if asked:
            raise KeyboardInterrupt
        asked.append(signum)
        print("stopping after the current micro-batch", file=sys.stderr, flush=True)
    saved = {s: signal.signal(s, handle) for s in (signal.SIGINT, signal.SIGTERM)}
    print("following", file=sys.stderr, flush=True)
    try:
        while not (asked and MODE == "graceful"):
            time.sleep(0.02)
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
    return 0

MODE = sys.argv[3]
cli.cmd_run = follow
sys.argv = ["tefq", "run", sys.argv[1], "--stream", sys.argv[2]]
cli.main()
"""


def follow_like(tmp_path, signals: list[int], mode: str) -> subprocess.CompletedProcess:
    stream = tmp_path / "s.tsv"
    stream.write_text("ts\ts\tp\to\n")
    p = subprocess.Popen([sys.executable, "-c", FOLLOW, UC1, str(stream), mode], stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert p.stderr is not None
    for line in p.stderr:
        if "following" in line:
            break
    for sig in signals:
        p.send_signal(sig)
        time.sleep(0.3)
    err = p.stderr.read()
    return subprocess.CompletedProcess(p.args, p.wait(), "", err)


@pytest.mark.parametrize("signals,mode,code,words", [
    ([signal.SIGTERM, signal.SIGTERM], "at-once", 143, "terminated by SIGTERM"),
    ([signal.SIGTERM], "graceful", 143, "terminated by SIGTERM"),
    ([signal.SIGINT, signal.SIGTERM], "at-once", 143, "terminated by SIGTERM"),
    ([signal.SIGINT, signal.SIGINT], "at-once", 130, "interrupted"),
    ([signal.SIGINT], "graceful", 130, "interrupted"),
], ids=["term-term", "term-graceful", "int-term", "int-int", "int-graceful"])
def test_sigterm_exits_143_however_often_it_comes(tmp_path, signals, mode, code, words) -> None:
    r = follow_like(tmp_path, signals, mode)
    assert r.returncode == code, r.stderr
    assert f"tefq: {words}" in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.spark
def test_a_second_sigterm_stops_a_real_follow_run_with_143(tmp_path) -> None:
    stream = tmp_path / "s"
    stream.mkdir()
    (stream / "a.tsv").write_text("ts\ts\tp\to\n" + "".join(
        f"{BASE + i * 1000}\t<{X}u{i}>\t<{X}join>\t<{X}ch{i % 3}>\n" for i in range(50)))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch), "TEFQ_SPARK_MASTER": "local[1]"}
    p = subprocess.Popen(TEFQ + ["run", UC1, "--stream", str(stream), "--follow", "--out", str(tmp_path / "out.csv")],
                         stderr=subprocess.PIPE, text=True, env=env,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert p.stderr is not None
    for line in p.stderr:  # the first micro-batch is committed: the query is running
        if "micro-batch 1:" in line:
            break
    p.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    p.send_signal(signal.SIGTERM)
    err = p.stderr.read()
    assert p.wait() == 143, err
    assert "terminated by SIGTERM" in err and "Traceback" not in err, err
    assert not [d for d in os.listdir(scratch) if d.startswith("tefq-")], os.listdir(scratch)
