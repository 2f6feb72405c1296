"""A Redis micro-batch read by several tasks (issue 24: stage 1 was one task, one core): its entries
split into ID ranges (`tefq.io.redis_stream.split_range`), each numbered from the entries before
it, read together give the very rows of one range; a Spark run over the split stream equals the
oracle's rows."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tefq.analysis import load
from tefq.io.readers import read_stream
from tefq.iptv.generator import IptvConfig
from tefq.iptv.writer import generate
from tefq.oracle import run as oracle_run
from tests.support.paths import ROOT

UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
EVENTS = 12_000


@pytest.fixture(scope="module")
def published(redis_port, tmp_path_factory) -> tuple[str, str]:
    """(URL, log file): an IPTV log of EVENTS events published with `tefq publish`."""
    out = str(tmp_path_factory.mktemp("gen") / "iptv")
    generate(IptvConfig(events=EVENTS, users=200, channels=5, days=0.05, seed=5), out, fmt="tsv")
    url = f"redis://127.0.0.1:{redis_port}/split"
    r = subprocess.run([sys.executable, "-m", "tefq", "publish", os.path.join(out, "log"), "--to", url],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return url, os.path.join(out, "log")


def rows_of(options, ranges) -> list[tuple]:
    from tefq.spark.runtime.redis_source import EntryRange, read_range

    return [row for r in ranges for rb in read_range(options, EntryRange(*r)) for row in zip(*rb.to_pydict().values())]


def test_split_ranges_read_the_rows_of_one_range(published):
    from tefq.io.redis_stream import Position, head, split_range
    from tefq.spark.runtime.redis_source import SourceOptions

    url, _ = published
    options = SourceOptions.of({"url": url})
    client = options.stream.connect()
    end = head(client, options.stream)
    assert end.n == EVENTS
    whole = split_range(client, options.stream, Position(), end, 1, 1)
    parts = split_range(client, options.stream, Position(), end, 3, 1000)
    assert len(whole) == 1 and len(parts) >= 2
    assert [p[2] for p in parts] == sorted(p[2] for p in parts) and parts[0][2] == 0
    got = rows_of(options, parts)
    assert got == rows_of(options, whole) and [r[-1] for r in got] == list(range(1, EVENTS + 1))
    assert split_range(client, options.stream, Position(), end, 3, EVENTS) == whole  # too few entries to split
    client.close()


@pytest.mark.spark
def test_spark_run_over_a_split_stream_equals_the_oracle(spark, published, monkeypatch):
    """UC1 bounded over the stream read in two ranges per micro-batch: the oracle's rows."""
    from tefq.io.redis_stream import Position, RedisStream, head, split_range
    from tefq.spark import run as spark_run
    from tefq.spark.runtime import redis_source

    url, log = published
    monkeypatch.setattr(redis_source, "ENGINE_PARTITIONS", 2)
    monkeypatch.setattr(redis_source, "LEAST_PER_PARTITION", 1_000)
    stream = RedisStream.parse(url)
    client = stream.connect()
    assert len(split_range(client, stream, Position(), head(client, stream), 2,
                           redis_source.LEAST_PER_PARTITION)) == 2  # the run below reads two ranges at once
    client.close()
    doc = load(UC1)
    got = spark_run(doc, [url], spark=spark, buckets=2, progress=False)
    want = oracle_run(doc, list(read_stream(log)))
    assert got.results[0].rows == want.results[0].rows
