"""Issue 39, case 6: infrastructure failures are sentences. Redis stopped under a `--follow` run
was `internal error: RuntimeError … latestOffset: Traceback (most recent call last):` (no word of
Redis or its address, exit 1): now one line naming the URL and what happened, exit 2 (Spark's
source runner raises it as a worker refusal: runtime/redis_source.refusing). A SIGTERM of a fed
Redis `--follow` run ends with exit 143 and no Java or Python stack. Each test runs its own
redis-server on loopback (it is stopped by the test)."""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tests.support.redis_server import redis_server

pytestmark = pytest.mark.reliability
UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
X = "http://example.org/iptv#"
STACK_WORDS = ("Traceback", "\tat ", "Exception", "py4j", "ERROR ")


@contextlib.contextmanager
def private_redis(tmp_path) -> Iterator[tuple[subprocess.Popen, str]]:
    """A redis-server of this test's own (the test may stop it) and its stream URL."""
    with redis_server(str(tmp_path)) as (proc, port):
        yield proc, f"redis://127.0.0.1:{port}/log"


def add(url: str, first: int, n: int) -> None:
    from tefq.io.redis_stream import RedisStream, add_elements

    stream = RedisStream.parse(url)
    add_elements(stream.connect(), stream, [(first + i * 100, f"<{X}u{i}>", f"<{X}join>", f"<{X}c{i % 3}>")
                                            for i in range(n)])


def follow(url: str, out) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tefq", "run", UC1, "--engine", "spark", "--follow", "--quiet",
                             "--stream", url, "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT, start_new_session=True)


def wait_for_rows(out, child: subprocess.Popen, limit_s: float = 600) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and child.poll() is None:
        if os.path.exists(out) and any(line[:1].isdigit() for line in open(out)):
            return
        time.sleep(0.2)
    child.kill()
    pytest.fail(f"no rows within {limit_s} s: {child.communicate()[1][-2000:]}")


def no_stack(stderr: str) -> None:
    assert not any(word in stderr for word in STACK_WORDS), stderr[-3000:]


@pytest.mark.spark
def test_redis_stopped_under_follow_is_one_sentence_naming_it(tmp_path) -> None:
    out = tmp_path / "rows.csv"
    with private_redis(tmp_path) as (server, url):
        add(url, 1000, 300)
        child = follow(url, out)
        wait_for_rows(out, child)
        server.kill()
        _, err = child.communicate(timeout=300)
    assert child.returncode == 2, err[-3000:]
    no_stack(err)
    (line,) = err.strip().splitlines()
    assert line.startswith(f"tefq: error: {url}: cannot reach Redis at 127.0.0.1:") and "Connection refused" in line


@pytest.mark.spark
def test_sigterm_of_a_fed_redis_follow_run_prints_no_stack(tmp_path) -> None:
    out, stop = tmp_path / "rows.csv", threading.Event()
    crashes = {p.name for p in Path(ROOT).glob("hs_err_pid*.log")}  # stopping mid-task crashed RocksDB once
    with private_redis(tmp_path) as (_, url):
        add(url, 1000, 100)
        child = follow(url, out)

        def feed() -> None:  # entries keep arriving while the signal comes
            k = 0
            while not stop.is_set():
                add(url, 100_000 + k * 5_000, 50)
                k += 1
                time.sleep(0.2)

        feeder = threading.Thread(target=feed, daemon=True)
        try:
            wait_for_rows(out, child)
            feeder.start()
            time.sleep(3)
            child.send_signal(signal.SIGTERM)
            _, err = child.communicate(timeout=300)
        finally:
            stop.set()
            if feeder.is_alive():
                feeder.join(timeout=30)  # before its server stops
    assert child.returncode == 143, err[-3000:]
    no_stack(err)
    assert err.strip().splitlines()[-1] == "tefq: terminated by SIGTERM: the run stopped, temporary files removed"
    assert {p.name for p in Path(ROOT).glob("hs_err_pid*.log")} <= crashes  # no JVM crash log left behind


def test_unreachable_redis_in_a_bounded_run_is_one_sentence() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        url = f"redis://127.0.0.1:{s.getsockname()[1]}/log"
    proc = subprocess.run([sys.executable, "-m", "tefq", "run", UC1, "--engine", "oracle", "--stream", url],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2
    no_stack(proc.stderr)
    assert [x for x in proc.stderr.splitlines() if "error:" in x] == [
        x for x in proc.stderr.splitlines() if x.startswith(f"{url}: error: cannot reach Redis at 127.0.0.1:")]
    assert "error:" in proc.stderr
