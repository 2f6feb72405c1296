"""Fixtures every test folder shares: one SparkSession per module, a private redis-server, and the
`needs_shared` marker for tests that read ../shared (skipped outside CI, failed in CI). Every
`tefq` a test starts runs in its own process (TEFQ_SERVER=0: no warm engine, which would outlive
the test) unless the test asks for one (tests/server/test_server.py).

A test that takes the `spark` fixture is marked `spark` here, so `make test-fast` (-m "not spark")
starts no Spark; a test that starts Spark another way (a child process, `master=`) carries the
marker itself."""
from __future__ import annotations

import os

import pytest

from tests.support.paths import SHARED
from tests.support.redis_server import redis_server

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
    with redis_server(str(tmp_path_factory.mktemp("redis"))) as (_, port):
        yield port


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
