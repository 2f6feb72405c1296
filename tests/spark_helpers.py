"""Shared by the Spark test modules: one SparkSession per module (local[2], 2 buckets), the engine
and the oracle called the same way. Import the `spark` fixture into a test module to use it."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def spark():
    from tefq.spark.runtime.session import get_session

    s = get_session("local[2]")
    s.conf.set("spark.sql.shuffle.partitions", "2")
    yield s


def run_spark(spark, doc, paths, **kw):
    from tefq.spark.engine import run

    return run(doc, paths, spark=spark, buckets=2, progress=False, **kw)


def oracle(doc, elements, background=None):
    from tefq.oracle import run

    return run(doc, elements, background, 0)
