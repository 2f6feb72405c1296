"""Windowed (RSP-QL, spec §8) queries under `--follow` (issue 40): each window is reported once,
as soon as the run's event time (spec §6.1: the least over the active streams) reaches its close,
and its rows are the oracle's over the same input; REGISTER STREAM feedback included. Over a
followed directory, a Redis stream and a directory together, and a stream that goes idle."""
from __future__ import annotations

import os
import time

import pytest

from tefq.analysis import load
from tefq.io.stream_writers import write_stream
from tests.support.paths import ROOT
from tests.support.redis_client import redis
from tests.support.windowed_spark import bordered_log, followed, reported

BUSY = load(os.path.join(ROOT, "examples", "rspql", "busy-channels.rspql"))  # feedback, ISTREAM
GENRES = load(os.path.join(ROOT, "examples", "rspql", "genre-joins.rspql"))  # two windows, two streams
NS = "http://example.org/iptv#"


def guide(span_ms: int) -> list:
    """What each channel shows, every 10 s (the genre-joins EPG) over `span_ms`."""
    return [(t, f"<{NS}ch{c}>", f"<{NS}shows>", f"<{NS}{('news', 'sports', 'movies')[(c + t // 10_000) % 3]}>")
            for t in range(500, span_ms, 10_000) for c in range(4)]


@pytest.mark.spark
def test_busy_channels_over_a_followed_directory_reports_each_window_once(spark, tmp_path):
    """Two files, the second written while the run follows: every window that closes by the last
    element is reported once, its rows the oracle's (the first query's CONSTRUCT feeds the second)."""
    log = bordered_log(3, 300, 60_000, step_ms=5000)
    d = tmp_path / "live"
    d.mkdir()
    write_stream(log[:150], str(d / "part-0000.tsv"), fmt="tsv")

    def feed() -> None:
        time.sleep(3)
        write_stream(log[150:], str(d / ".part-0001.tsv"), fmt="tsv")
        os.replace(d / ".part-0001.tsv", d / "part-0001.tsv")

    last = log[-1][0] // 5000 * 5000  # the join counts' last window (every 5 s)
    got = followed(spark, BUSY, [str(d)], feed, last)
    want = reported(BUSY, log, log[-1][0])
    assert [sorted(rows) for rows in got] == want  # sorted: a repeat would be one row too many
    assert all(want)


@pytest.mark.spark
def test_genre_joins_over_redis_and_a_directory_wait_for_the_slower_stream(spark, tmp_path, redis_port):
    """The log in a Redis stream, the guide in a followed directory, each with its own event time:
    a window is reported only once both have passed its close; never idle (--idle-timeout 0)."""
    from tefq.io.redis_stream import RedisStream, add_elements

    log = [e for e in bordered_log(5, 240, 60_000, step_ms=10_000) if e[2] == f"<{NS}join>"]
    epg = guide(50_000)  # the guide ends earlier: it holds the event time back at its last element
    url = f"redis://127.0.0.1:{redis_port}/genres"
    redis.Redis(port=redis_port).delete("genres")
    stream = RedisStream.parse(url)
    add_elements(stream.connect(), stream, log[:100])
    d = tmp_path / "epg"
    d.mkdir()
    write_stream(epg, str(d / "part-0000.tsv"), fmt="tsv")

    def feed() -> None:
        time.sleep(3)
        add_elements(stream.connect(), stream, log[100:])

    event_time = min(log[-1][0], epg[-1][0])
    last = event_time // 10_000 * 10_000  # the last close at or before it
    got = followed(spark, GENRES, [url, str(d)], feed, last, idle_ms=0)
    assert [sorted(rows) for rows in got] == reported(GENRES, log + epg, event_time)
    assert max(r[0] for r in got[0]) == last  # nothing past the guide's time: it held the windows back


@pytest.mark.spark
def test_a_silent_stream_stops_holding_windows_back_after_the_idle_timeout(spark, tmp_path):
    """The guide's directory delivers once and then nothing: after --idle-timeout the log alone
    drives the event time, so the windows up to the log's last element are reported too."""
    log = [e for e in bordered_log(7, 200, 60_000, step_ms=10_000) if e[2] == f"<{NS}join>"]
    first = [e for e in log if e[0] < 35_000]
    epg = guide(40_000)  # its last element (30,500) holds the log's time (about 35,000) back
    dl, de = tmp_path / "log", tmp_path / "epg"
    dl.mkdir()
    de.mkdir()
    write_stream(first, str(dl / "part-0000.tsv"), fmt="tsv")
    write_stream(epg, str(de / "part-0000.tsv"), fmt="tsv")

    def feed() -> None:
        time.sleep(4)  # past the idle timeout: the guide no longer holds the event time back
        write_stream(log[len(first):], str(dl / ".part-0001.tsv"), fmt="tsv")
        os.replace(dl / ".part-0001.tsv", dl / "part-0001.tsv")

    last = 40_000  # the guide's last window: reported only once the guide no longer holds time back
    got = followed(spark, GENRES, [str(dl), str(de)], feed, last, idle_ms=1000)
    assert [sorted(rows) for rows in got] == reported(GENRES, log + epg, log[-1][0])
    assert max(r[0] for r in got[0]) == last
