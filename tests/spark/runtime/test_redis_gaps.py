"""Entries removed from a Redis stream before tefq read them are never skipped in silence (issue 38:
stop a --follow --checkpoint run, publish more, XTRIM MAXLEN, restart: no warning, wrong ticks).
`unread_gap` counts them from XINFO STREAM on a real redis-server on loopback; the Spark source
stops the run with exit 2 naming how many and their IDs, unless --accept-gaps."""
from __future__ import annotations

import time

import pytest

from tefq.errors import TefqError
from tefq.io.redis_stream import Position, RedisStream, add_elements, head, unread_gap
from tests.support import spark_docs as sd
from tests.support.redis_client import redis  # noqa: F401 (skips the module without the package)
from tests.support.spark import oracle, run_spark


def stream_of(port: int, key: str, elements: list) -> tuple[RedisStream, object]:
    stream = RedisStream.parse(f"redis://127.0.0.1:{port}/{key}")
    client = stream.connect()
    client.delete(key)
    add_elements(client, stream, elements)
    return stream, client


def test_a_trim_past_the_last_entry_read_is_counted_and_named(redis_port):
    stream, client = stream_of(redis_port, "trimmed", sd.views(0, 50))  # 100 entries
    read = head(client, stream)  # a reader stopped here
    add_elements(client, stream, sd.views(50, 50))  # 100 more, never read
    assert unread_gap(client, stream, read) is None  # nothing removed yet
    client.xtrim(stream.key, maxlen=30, approximate=False)  # the oldest 170 go: 70 of them after `read`
    first = client.xrange(stream.key, count=1)[0][0].decode()
    gap = unread_gap(client, stream, read)
    assert gap is not None and gap.startswith(f"70 entries after {read.id} ") and first in gap
    assert "--accept-gaps" in gap


def test_what_is_no_gap(redis_port):
    stream, client = stream_of(redis_port, "kept", sd.views(0, 50))
    early = Position(client.xrange(stream.key, count=10)[-1][0].decode(), 10)
    client.xtrim(stream.key, maxlen=90, approximate=False)  # removes entries the reader had read: none lost
    assert unread_gap(client, stream, early) is None
    assert unread_gap(client, stream, Position()) is None  # a fresh reader reads what is there
    client.xtrim(stream.key, maxlen=50, approximate=False)  # now 40 entries after `early` go
    assert unread_gap(client, stream, early).startswith("40 entries after")


def test_an_entry_deleted_in_the_middle_is_counted(redis_port):
    stream, client = stream_of(redis_port, "holes", sd.views(0, 50))
    early = Position(client.xrange(stream.key, count=10)[-1][0].decode(), 10)
    ids = [e[0] for e in client.xrange(stream.key)]
    client.xdel(stream.key, ids[40], ids[41], ids[5])  # two unread, one read
    assert unread_gap(client, stream, early).startswith("2 entries after")


@pytest.mark.spark
def test_a_restart_after_a_trim_stops_with_exit_2_unless_gaps_are_accepted(spark, redis_port, tmp_path):
    """The issue's case, small: a followed run stops, more entries arrive, the stream is trimmed
    past what the run read; the restart names the lost entries; --accept-gaps goes on, its rows
    the oracle's over the entries that were there to read."""
    first = [e for e in sd.views(0, 20) if e[2].endswith("join>")]  # 20 viewers who stay
    later = sd.views(20, 40)  # 80 entries: 40 join, 40 quit
    stream, client = stream_of(redis_port, "restarted", first)
    doc, ck, seen = sd.uc1(10_000), str(tmp_path / "ck"), []
    deadline = time.time() + 300
    run_spark(spark, doc, [stream.url], checkpoint=ck, follow=True, on_rows=lambda r: seen.extend(r[0].rows),
              stop=lambda: bool(seen) or time.time() > deadline)
    assert seen
    add_elements(client, stream, later)
    client.xtrim(stream.key, maxlen=20, approximate=False)  # 60 unread entries of the 80 are gone
    left = later[-20:]
    with pytest.raises(TefqError) as e:
        run_spark(spark, doc, [stream.url], checkpoint=ck, follow=True, stop=lambda: time.time() > deadline)
    assert e.value.file == stream.url and e.value.message.startswith("60 entries after ")
    again: list = []
    deadline = time.time() + 300
    last = max(t for t, *_ in left) - 10_000  # the ticks the event time passes
    run_spark(spark, doc, [stream.url], checkpoint=ck, follow=True, accept_gaps=True,
              on_rows=lambda r: again.extend(r[0].rows), stop=lambda: any(t >= last for t, _ in again) or time.time() > deadline)
    want = oracle(doc, first + left).results[0].rows
    after = max(t for t, _ in seen)
    assert sorted(r for r in again if after < r[0] <= last) == sorted(r for r in want if after < r[0] <= last) != []
