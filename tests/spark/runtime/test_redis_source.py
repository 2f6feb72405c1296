"""Redis Streams as a tefq source (issue 24): a real `redis-server` on a free loopback port (skipped,
with the reason, where Debian's redis-server or the redis package is missing), a generated IPTV
log published into it with `tefq publish`, read back by the bounded reader and by the `tefq-redis`
Spark source: the file's rows, in order, once each, also across a SIGKILL and a restart from the
checkpoint; a bad entry named by its stream and ID, raised or recorded once."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

redis = pytest.importorskip("redis", reason="the Python package redis is not installed")

import tefq
import tefq.spark
from tefq.errors import TefqError
from tefq.io.bad_rows import BadRowLog
from tefq.io.readers import read_stream
from tefq.io.redis_stream import Position, RedisStream, advance, head, read_elements
from tefq.iptv.generator import IptvConfig
from tefq.iptv.writer import generate
from tefq.publish import Pace, publish
from tests.support.paths import ROOT

EVENTS = 2000


@pytest.fixture(scope="module")
def iptv_log(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("gen") / "iptv")
    generate(IptvConfig(events=EVENTS, users=50, channels=6, days=0.02, seed=5), out, fmt="tsv")
    return os.path.join(out, "log")


@pytest.fixture(scope="module")
def published(redis_port, iptv_log) -> str:
    """The IPTV log published as fast as possible into the stream `iptv`."""
    url = f"redis://127.0.0.1:{redis_port}/iptv"
    report = publish(iptv_log, url)
    assert report.events == EVENTS
    return url


def stream_rows(df) -> list[tuple]:
    return [(r.ts, r.s, r.p, r.o, r.file, r.row) for r in df.orderBy("row").collect()]


def want_rows(path: str, url: str) -> list[tuple]:
    return [(*e, url, i) for i, e in enumerate(read_stream(path), 1)]


def run_available_now(df, checkpoint: str, *, table: str | None = None, path: str | None = None):
    """Run a streaming query over everything available now, into a memory `table` or a Parquet `path`."""
    writer = df.writeStream.option("checkpointLocation", checkpoint).trigger(availableNow=True)
    writer = writer.format("memory").queryName(table) if table else writer.format("parquet").option("path", path)
    query = writer.start()
    query.awaitTermination()
    return query


def test_bounded_read_gives_the_files_elements(published, iptv_log):
    assert list(read_elements(RedisStream.parse(published))) == list(read_stream(iptv_log))


def test_positions_and_admission_control(published, redis_port):
    stream = RedisStream.parse(published)
    client = stream.connect()
    latest = head(client, stream)
    assert latest.n == EVENTS
    step = advance(client, stream, Position(), latest, 300)
    assert step.n == 300 and step.is_before(latest)
    assert len(client.xrange(stream.key, "-", step.id)) == 300
    assert advance(client, stream, step, latest, None) == latest
    assert advance(client, stream, latest, latest, 5) == latest  # nothing new: the start again
    absent = RedisStream.parse(f"redis://127.0.0.1:{redis_port}/not-yet")  # a run that starts before its publisher
    assert head(client, absent) == Position()


def test_stream_source_gives_the_files_rows(spark, published, iptv_log, tmp_path):
    from tefq.spark.runtime.redis_source import redis_stream_frame

    df = redis_stream_frame(spark, published, max_entries=700)
    assert df.isStreaming and df.columns == ["ts", "s", "p", "o", "file", "fh", "row"]
    query = run_available_now(df, str(tmp_path / "ck"), table="redis_rows")
    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [700, 700, 600]
    assert stream_rows(spark.table("redis_rows")) == want_rows(iptv_log, published)


def test_batch_read_and_tefq_spark_apply(spark, published, iptv_log, tmp_path):
    """The user's own `spark.readStream.format("tefq-redis")` into tefq.spark.apply: the oracle's
    rows at the ticks the event time passed; a batch read gives the whole stream."""
    from tefq.spark.runtime.redis_source import register

    register(spark)
    assert stream_rows(spark.read.format("tefq-redis").load(published)) == want_rows(iptv_log, published)
    uc1 = tefq.load(os.path.join(ROOT, "usecases", "uc1.tef"))
    events = spark.readStream.format("tefq-redis").option("maxEntriesPerTrigger", 800).load(published)
    run_available_now(tefq.spark.apply(uc1, events, terms="ntriples"), str(tmp_path / "ck"), path=str(tmp_path / "out"))
    elements = list(read_stream(iptv_log))
    last = max(t for t, *_ in elements)
    want = sorted((r for r in uc1.run(elements).query_result().rows if r[0] < last), key=repr)
    from pyspark.sql import functions as F

    got = spark.read.parquet(str(tmp_path / "out"))
    cells = [c for c in got.columns if c != "tick"]
    got = sorted(((r[0], tuple(r[1:])) for r in got.select(F.unix_millis("tick"), *cells).collect()), key=repr)
    assert want and got == want


KILLED_CHILD = """
from tefq.spark.runtime.session import get_session
from tefq.spark.runtime.redis_source import redis_stream_frame
spark = get_session("local[2]")
df = redis_stream_frame(spark, {url!r}, max_entries=100)
(df.writeStream.format("parquet").option("path", {out!r}).option("checkpointLocation", {ck!r})
   .trigger(processingTime="0 seconds").start().awaitTermination())
"""


def test_restart_after_sigkill_reads_every_entry_once(spark, published, iptv_log, tmp_path):
    """SIGKILL a query mid-stream (two micro-batches committed, one maybe planned), restart it
    from its checkpoint: every entry reaches the idempotent Parquet sink exactly once."""
    from tefq.spark.runtime.redis_source import redis_stream_frame

    out, ck = str(tmp_path / "out"), str(tmp_path / "ck")
    child = subprocess.Popen([sys.executable, "-c", KILLED_CHILD.format(url=published, out=out, ck=ck)],
                             env=dict(os.environ, PYSPARK_PYTHON=sys.executable), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    commits = os.path.join(ck, "commits")
    deadline = time.monotonic() + 300
    while child.poll() is None and time.monotonic() < deadline and len(
            [f for f in os.listdir(commits) if f.isdigit()] if os.path.isdir(commits) else []) < 2:
        time.sleep(0.1)
    assert child.poll() is None, "the query ended before it could be killed"
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    run_available_now(redis_stream_frame(spark, published, max_entries=700), ck, path=out)
    assert stream_rows(spark.read.parquet(out)) == want_rows(iptv_log, published)


def add_bad_entry(port: int, key: str) -> tuple[str, str]:
    """A stream of one good entry and one whose ts is not a time; returns (url, bad entry ID)."""
    client = redis.Redis(port=port)
    client.delete(key)
    client.xadd(key, {"ts": "1000", "s": "<http://ex.org/a>", "p": "<http://ex.org/p>", "o": '"x"'})
    bad = client.xadd(key, {"ts": "soon", "s": "<http://ex.org/a>", "p": "<http://ex.org/p>", "o": '"y"'})
    return f"redis://127.0.0.1:{port}/{key}", bad.decode()


def test_bad_entry_is_named_by_stream_and_id(spark, redis_port, tmp_path):
    from tefq.spark.runtime.redis_source import bad_entry_error, redis_stream_frame

    url, bad = add_bad_entry(redis_port, "bad")
    with pytest.raises(TefqError) as oracle_side:
        list(read_elements(RedisStream.parse(url)))
    message = oracle_side.value.render()
    assert message.startswith(f"{url}:2: error: entry {bad}: field ts: bad timestamp 'soon'")
    with pytest.raises(Exception) as spark_side:
        run_available_now(redis_stream_frame(spark, url), str(tmp_path / "ck"), table="bad_entries")
    located = bad_entry_error(str(spark_side.value))
    assert located is not None and located.render() == message


def test_bad_entries_are_recorded_once(spark, redis_port, tmp_path):
    """With badRows the bad entry is recorded (kind, entry ID) and skipped; reading the same range
    again (a replay) rewrites its record file instead of adding one; the oracle records the same."""
    from tefq.spark.runtime.redis_source import register

    url, bad = add_bad_entry(redis_port, "bad2")
    register(spark)
    records = tmp_path / "bad"
    for _ in range(2):
        rows = spark.read.format("tefq-redis").option("badRows", str(records)).load(url).collect()
        assert [r.o for r in rows] == ['"x"']
    (name,) = os.listdir(records)
    (record,) = (records / name).read_text().splitlines()
    log = BadRowLog(str(tmp_path / "oracle"))
    assert len(list(read_elements(RedisStream.parse(url), log))) == 1 and log.count == 1
    log.close()
    (oracle_file,) = os.listdir(tmp_path / "oracle")
    assert record == (tmp_path / "oracle" / oracle_file).read_text().rstrip("\n")
    assert record.split("\t")[:3] == [url, "2", "bad-timestamp"] and f"entry {bad}:" in record


def test_publisher_rate_into_redis(redis_port, iptv_log):
    """600 entries at 2000/s in 100 ms intervals: three pipelines of 200, each sent once its
    interval was over (the schedule the publisher recorded, not wall-clock bounds)."""
    url = f"redis://127.0.0.1:{redis_port}/paced"
    report = publish(iptv_log, url, Pace(rate=2000, interval_ms=100), limit=600, restamp="now")
    assert [s.events for s in report.intervals] == [200, 200, 200]
    assert all(s.sent >= s.due for s in report.intervals)
    dues = [s.due for s in report.intervals]
    assert [round(b - a, 6) for a, b in zip(dues, dues[1:])] == [0.1, 0.1]
    stamps = [t for t, *_ in read_elements(RedisStream.parse(url))]
    assert len(stamps) == 600 and stamps == sorted(stamps)
    assert [s.first_ts <= s.last_ts for s in report.intervals] == [True] * 3


def test_ending_offset_pins_a_bounded_read(spark, redis_port, tmp_path):
    """Entries added after the pinned head (a publisher still running) are not read."""
    from tefq.spark.runtime.redis_source import redis_stream_frame

    stream = RedisStream.parse(f"redis://127.0.0.1:{redis_port}/grows")
    client = stream.connect()
    client.delete(stream.key)
    entry = (1, "<http://ex.org/a>", "<http://ex.org/p>", '"x"')
    add = [(t, *entry[1:]) for t in range(1, 81)]
    from tefq.io.redis_stream import add_elements

    add_elements(client, stream, add[:50])
    pinned = head(client, stream)
    add_elements(client, stream, add[50:])
    run_available_now(redis_stream_frame(spark, stream.url, end=pinned), str(tmp_path / "ck"), table="pinned")
    assert [r.ts for r in spark.table("pinned").orderBy("row").collect()] == list(range(1, 51))


@pytest.mark.parametrize("fields, kind, says", [
    ({"ts": "1", "s": "<http://a>", "p": "<http://p>"}, "empty-cell", "field o is missing"),
    ({"ts": "1", "s": "<http://a>", "p": "<http://p>", "o": '"x"', "g": "1"}, "column-count", "found also g"),
    ({"ts": "1", "s": '"lit"', "p": "<http://p>", "o": '"x"'}, "term-position", "field s: "),
    ({"ts": "1", "s": "<http://a>", "p": "<http://p>", "o": b'"\xff"'}, "invalid-utf8", "field o: "),
    ({"ts": "1", "s": "<http://a>", "p": "<http://p>", "o": '"a\x00b"'}, "nul-byte", "field o: "),
    ({"ts": "", "s": "<http://a>", "p": "<http://p>", "o": '"x"'}, "empty-cell", "column ts is empty"),
])
def test_entries_follow_the_file_rows_rules(fields, kind, says):
    """Each kind of bad entry, by tefq.io.validate's rules; a good entry read twice (the second
    time by the fast path) gives the same normal-form element."""
    from tefq.io.redis_stream import EntryChecker
    from tefq.io.validate import Fault

    flat = [v if isinstance(v, bytes) else str(v).encode() for kv in fields.items() for v in kv]
    with pytest.raises(Fault) as e:
        EntryChecker().element(b"7-1", flat)
    assert e.value.kind == kind and e.value.message.startswith("entry 7-1: ") and says in e.value.message
    checker = EntryChecker()
    good = [b"ts", b"5", b"s", b" <http://a>", b"p", b"<http://p>", b"o", b'"\\u0041"']
    assert checker.element(b"1-0", good) == checker.element(b"1-1", good) == (5, "<http://a>", "<http://p>", '"A"')
