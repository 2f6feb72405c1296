"""Shared by the Redis test modules: a private `redis-server` on a free loopback port (skipped,
with the reason, where Debian's redis-server or the redis package is missing). Import the
`redis_port` fixture into a test module to use it."""
from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest

redis = pytest.importorskip("redis", reason="the Python package redis is not installed")


@pytest.fixture(scope="module")
def redis_port(tmp_path_factory):
    """A private redis-server on 127.0.0.1 (no persistence), stopped after the module."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed (Debian: apt-get install redis-server; .ci/run does it)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    work = tmp_path_factory.mktemp("redis")
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
    yield port
    proc.terminate()
    proc.wait(timeout=30)
