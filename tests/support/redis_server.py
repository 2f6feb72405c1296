"""A private redis-server on a free loopback port (no persistence), for the Redis tests: the
`redis_port` fixture of tests/conftest.py, and tests that stop the server themselves."""
from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def redis_server(work: str) -> Iterator[tuple[subprocess.Popen, int]]:
    """Start a redis-server keeping its files in `work`; yields (process, port), stops it after.
    Skips the test, with the reason, where Debian's redis-server or the redis package is missing."""
    redis = pytest.importorskip("redis", reason="the Python package redis is not installed")
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed (Debian: apt-get install redis-server; .ci/run does it)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(work)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    client = redis.Redis(port=port)
    deadline = time.monotonic() + 60
    while True:
        try:
            client.ping()
            break
        except redis.exceptions.ConnectionError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"redis-server did not start on port {port}")
            time.sleep(0.05)
    try:
        yield proc, port
    finally:
        proc.terminate()
        proc.wait(timeout=30)
