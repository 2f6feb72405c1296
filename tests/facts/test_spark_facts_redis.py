"""`tefq facts --follow` over a Redis stream (tefq.facts.live): entries published while the run
goes; once the event time passed them, the closed file and the open snapshot together are the
bounded fact table of the same elements."""
from __future__ import annotations

import threading
import time

import pytest

import tefq
from tefq.facts.live import LiveFactWriter, follow_fact_table, open_snapshot_path
from tefq.facts.writer import fact_text
from tefq.io.redis_stream import RedisStream, add_elements
from tests.support.fact_streams import UC3, complete_lines, uc3_events

IPTV = "http://example.org/iptv#"


@pytest.mark.spark
def test_follow_a_redis_stream_writes_the_bounded_table(spark, redis_port, tmp_path):  # noqa: F811
    url = f"redis://127.0.0.1:{redis_port}/facts"
    elements = uc3_events(5, 80, 0) + [(60_000, f"<{IPTV}probe>", f"<{IPTV}ping>", f"<{IPTV}x>")]
    query = tefq.load(UC3)
    doc = query.document()
    want = fact_text(query.facts(elements), "csv").split("\r\n")[:-1]
    out = str(tmp_path / "facts.csv")

    def publish_later() -> None:  # the run starts before its publisher: an absent key is an empty stream
        time.sleep(2)
        stream = RedisStream.parse(url)
        add_elements(stream.connect(), stream, elements[:50])
        time.sleep(1)
        add_elements(stream.connect(), stream, elements[50:])

    def written() -> list[str]:
        closed, open_ = complete_lines(out), complete_lines(open_snapshot_path(out))
        return closed[:1] + sorted(closed[1:] + open_[1:])

    threading.Thread(target=publish_later, daemon=True).start()
    deadline = time.time() + 300
    follow_fact_table(doc, [url], None, LiveFactWriter(doc, "csv", out), spark=spark,
                      stop=lambda: written() == want[:1] + sorted(want[1:]) or time.time() > deadline)
    assert written() == want[:1] + sorted(want[1:])
