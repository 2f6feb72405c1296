"""Redis Streams end to end (issue 24 phase 2): `tefq run --stream redis://HOST:PORT/KEY` on the
oracle and on Spark (bounded: the stream up to its head when the run starts) gives the rows of the
same elements read from a file; a bad entry stops the run with exit 2 naming the stream and the
entry, or with --bad-rows is recorded and counted; `tefq publish` is a tefq command."""
from __future__ import annotations

import json
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
from tests.support.redis_client import redis

UC1, UC3 = (os.path.join(ROOT, "usecases", f"uc{i}.tef") for i in (1, 3))
TEFQ = [sys.executable, "-m", "tefq"]
EVENTS = 1500


@pytest.fixture(scope="module")
def iptv(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("gen") / "iptv")
    generate(IptvConfig(events=EVENTS, users=40, channels=5, days=0.02, seed=11), out, epg=True, fmt="tsv")
    return out


def tefq(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(TEFQ + list(args), capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def log_url(redis_port, iptv) -> str:
    """The IPTV log published into `log` with the `tefq publish` command."""
    url = f"redis://127.0.0.1:{redis_port}/log"
    r = tefq("publish", os.path.join(iptv, "log"), "--to", url)
    assert r.returncode == 0, r.stderr
    return url


def test_oracle_run_over_redis_equals_the_file(tmp_path, log_url, iptv):
    out = tmp_path / "rows.csv"
    r = tefq("run", UC1, "--engine", "oracle", "--stream", log_url, "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    want = oracle_run(load(UC1), list(read_stream(os.path.join(iptv, "log"))))
    assert len(out.read_text().splitlines()) == 1 + len(want.results[0].rows)


def test_spark_bounded_run_over_redis_and_a_file_equals_the_oracle(spark, log_url, iptv, redis_port):
    """UC3: the log from Redis, the programme guide from its file; Spark and the oracle agree."""
    from tefq.spark import run as spark_run

    doc = load(UC3)
    guide = os.path.join(iptv, "epg")
    got = spark_run(doc, [log_url, guide], spark=spark, buckets=2, progress=False)
    want = oracle_run(doc, list(read_stream(os.path.join(iptv, "log"))) + list(read_stream(guide)))
    assert got.results[0].rows == want.results[0].rows
    assert got.metrics.extra["late_events_by_stream"] == {log_url: 0, guide: 0}


@pytest.fixture()
def bad_url(redis_port, request) -> str:
    key = f"bad-{request.node.name[-20:]}"
    client = redis.Redis(port=redis_port)
    client.delete(key)
    client.xadd(key, {"ts": "1000", "s": "<http://x/u1>", "p": "<http://example.org/iptv#join>", "o": "<http://x/c>"})
    client.xadd(key, {"ts": "2000", "s": "not a term", "p": "<http://example.org/iptv#join>", "o": "<http://x/c>"})
    client.xadd(key, {"ts": "3000", "s": "<http://x/u2>", "p": "<http://example.org/iptv#join>", "o": "<http://x/c>"})
    return f"redis://127.0.0.1:{redis_port}/{key}"


@pytest.mark.parametrize("engine", ["oracle", pytest.param("spark", marks=pytest.mark.spark)])
def test_a_bad_entry_stops_the_run_naming_the_stream_and_entry(bad_url, engine):
    r = tefq("run", UC1, "--engine", engine, "--stream", bad_url, "--quiet")
    assert r.returncode == 2, r.stderr
    assert bad_url in r.stderr and "entry " in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("engine", ["oracle", pytest.param("spark", marks=pytest.mark.spark)])
def test_bad_entries_are_recorded_and_counted(bad_url, engine, tmp_path):
    metrics = tmp_path / "m.json"
    r = tefq("run", UC1, "--engine", engine, "--stream", bad_url, "--bad-rows", str(tmp_path / "bad"),
             "--metrics", str(metrics), "--quiet")
    assert r.returncode == 0, r.stderr
    m = json.loads(metrics.read_text())
    assert m["bad_rows"] == 1 and m["events_in"] == 2


def test_publish_is_a_command_and_a_bad_address_is_exit_2():
    r = tefq("publish", "--help")
    assert r.returncode == 0 and "--rate" in r.stdout
    r = tefq("run", UC1, "--engine", "oracle", "--stream", "redis://", "--quiet")
    assert r.returncode == 2 and "Redis" in r.stderr


def test_follow_a_redis_stream_reports_the_oracles_rows(spark, redis_port, iptv):
    """--follow over Redis: the run reports each tick once the event time passed it; stopped once
    the ticks up to the last full one came, its rows are the oracle's at those ticks."""
    import threading
    import time

    from tefq.io.redis_stream import RedisStream, add_elements
    from tefq.spark import run as spark_run

    url = f"redis://127.0.0.1:{redis_port}/followed"
    elements = list(read_stream(os.path.join(iptv, "log")))
    doc = load(UC1)
    every = doc.queries[0].every_ms
    want = oracle_run(doc, elements).results[0].rows
    last_final = max(t for t, _ in want if t < max(e[0] for e in elements) - every)
    got: list = []

    def publish_later() -> None:  # the run starts before its publisher: an absent key is an empty stream
        time.sleep(3)
        stream = RedisStream.parse(url)
        add_elements(stream.connect(), stream, elements)

    threading.Thread(target=publish_later, daemon=True).start()
    deadline = time.time() + 600
    spark_run(doc, [url], follow=True, spark=spark, buckets=2, progress=False,
              on_rows=lambda results: got.extend(results[0].rows),
              stop=lambda: any(t >= last_final for t, _ in got) or time.time() > deadline)
    assert sorted(r for r in got if r[0] <= last_final) == sorted(r for r in want if r[0] <= last_final)


def tied_elements(seed: int, n: int) -> list[tuple]:
    """Joins and quits on few timestamps (ticks every 10 s): which comes first among equal
    timestamps decides whether a user is watching at a tick."""
    import random

    rng = random.Random(seed)
    iptv = "http://example.org/iptv#"
    return [(rng.choice((9_000, 10_000, 19_000, 20_000, 30_000)), f"<http://x/u{rng.randrange(6)}>",
             f"<{iptv}{rng.choice(('join', 'quit'))}>", f"<http://x/c{rng.randrange(2)}>") for _ in range(n)]


def publish_elements(url: str, elements: list[tuple]) -> None:
    from tefq.io.redis_stream import RedisStream, add_elements

    stream = RedisStream.parse(url)
    client = stream.connect()
    client.delete(stream.key)
    add_elements(client, stream, elements)


@pytest.mark.spark
def test_ties_across_redis_streams_follow_stream_order_on_every_path(spark, redis_port):
    """Spec §1: equal timestamps apply in stream order (the --stream order), then entry order;
    the direct path reads each stream's entries in its buckets, as the row path's source does."""
    from tefq.spark import run as spark_run

    doc = load(UC1)
    a, b = tied_elements(1, 150), tied_elements(2, 150)
    urls = [f"redis://127.0.0.1:{redis_port}/ties-{k}" for k in "ab"]
    publish_elements(urls[0], a)
    publish_elements(urls[1], b)
    assert oracle_run(doc, a + b).results[0].rows != oracle_run(doc, b + a).results[0].rows  # ties matter
    for paths, elements in (([urls[0], urls[1]], a + b), ([urls[1], urls[0]], b + a)):
        want = oracle_run(doc, elements).results[0].rows
        for ingest in ("auto", "direct", "columnar", "rows"):
            got = spark_run(doc, paths, spark=spark, buckets=2, progress=False, ingest=ingest)
            assert got.results[0].rows == want, (paths, ingest)
            assert got.metrics.extra["ingest"] == ("direct" if ingest == "auto" else ingest)


@pytest.mark.spark
def test_a_redis_stream_beside_files_is_read_as_rows(spark, redis_port, tmp_path):
    """Ties across a Redis stream and a file stream in stream order: such a run reads rows (auto),
    and --ingest direct is refused naming why."""
    from tefq.errors import TefqError
    from tefq.spark import run as spark_run

    doc = load(UC1)
    from_redis, from_file = tied_elements(1, 150), tied_elements(2, 150)
    url = f"redis://127.0.0.1:{redis_port}/ties-mixed"
    publish_elements(url, from_redis)
    path = tmp_path / "file.tsv"
    path.write_text("ts\ts\tp\to\n" + "".join("\t".join(map(str, e)) + "\n" for e in from_file))
    for paths, elements in (([url, str(path)], from_redis + from_file), ([str(path), url], from_file + from_redis)):
        got = spark_run(doc, paths, spark=spark, buckets=2, progress=False)
        assert got.results[0].rows == oracle_run(doc, elements).results[0].rows, paths
        assert got.metrics.extra["ingest"] == "rows"
    with pytest.raises(TefqError, match="mixing Redis streams and files"):
        spark_run(doc, [url, str(path)], spark=spark, buckets=2, progress=False, ingest="direct")


@pytest.mark.spark
def test_ties_across_the_ranges_of_one_micro_batch_follow_entry_order(spark, redis_port, monkeypatch):
    """A micro-batch split into several ID ranges (each read as one task's input, in whatever order
    they reach a bucket): ties keep the entries' order on every path."""
    import time

    from tefq.io.redis_stream import Position, RedisStream, add_elements, head, split_range
    from tefq.spark import run as spark_run
    from tefq.spark.runtime import redis_source

    monkeypatch.setattr(redis_source, "ENGINE_PARTITIONS", 4)
    monkeypatch.setattr(redis_source, "LEAST_PER_PARTITION", 40)
    doc = load(UC1)
    elements = tied_elements(3, 200)
    url = f"redis://127.0.0.1:{redis_port}/ties-split"
    stream = RedisStream.parse(url)
    for _ in range(10):  # on a loaded machine one pause may outlast the others: publish again
        publish_elements(url, elements[:50])
        for k in range(50, 200, 50):  # the ranges are split by the IDs' milliseconds, in equal spans
            time.sleep(0.01)
            add_elements(stream.connect(), stream, elements[k:k + 50])
        ranges = split_range(stream.connect(), stream, Position(), head(stream.connect(), stream), 4, 40)
        if len(ranges) == 4:
            break
    assert len(ranges) == 4, ranges
    want = oracle_run(doc, elements).results[0].rows
    for ingest in ("direct", "columnar", "rows"):
        got = spark_run(doc, [url], spark=spark, buckets=2, progress=False, ingest=ingest)
        assert got.results[0].rows == want, ingest
