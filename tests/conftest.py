"""Fixtures every test folder shares: one SparkSession per module, a private redis-server, and the
`needs_shared` marker for tests that read ../shared (skipped outside CI, failed in CI). Every
`tefq` a test starts runs in its own process (TEFQ_SERVER=0: no warm engine, which would outlive
the test) unless the test asks for one (tests/server/test_server.py).

A test that takes the `spark` fixture is marked `spark` here, so `make test-fast` (-m "not spark")
starts no Spark; a test that starts Spark another way (a child process, `master=`) carries the
marker itself."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest

from tests.support.paths import SHARED

os.environ["TEFQ_SERVER"] = "0"


@pytest.fixture(scope="module")
def spark():
    """One SparkSession for the module: local[2], 2 shuffle partitions (2 buckets)."""
    from tefq.spark.runtime.session import get_session  # deferred: a module without Spark imports no pyspark

    s = get_session("local[2]")
    s.conf.set("spark.sql.shuffle.partitions", "2")
    yield s


@pytest.fixture(scope="module")
def redis_port(tmp_path_factory):
    """A private redis-server on 127.0.0.1 (no persistence), stopped after the module; skipped, with
    the reason, where Debian's redis-server or the redis package is missing."""
    redis = pytest.importorskip("redis", reason="the Python package redis is not installed")
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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """`@pytest.mark.needs_shared("external/csrbench")`: the test reads that folder of ../shared.
    Missing: skipped in a clone without ../shared, failed where the `CI` variable is set."""
    for mark in item.iter_markers("needs_shared"):
        where = SHARED.joinpath(*mark.args)
        if not where.exists():
            message = f"{where} is not present (../shared beside the checkout)"
            if os.environ.get("CI"):
                pytest.fail(f"{message}; CI runs every test", pytrace=False)
            pytest.skip(message)
