"""A Redis input and `--checkpoint` (issue 24): the stream's URL is part of what a checkpoint
belongs to (a restart on another stream is refused), and a finished bounded checkpoint over Redis
is refused when entries arrive after the end its run read, as it is for new files
(tests/reliability/test_rel_spark.py). A private redis-server on loopback (tests/redis_helpers.py)."""
from __future__ import annotations

import os

import pytest

from tefq.errors import TefqError
from tefq.io.redis_stream import RedisStream, add_elements
from tefq.spark.runtime.checkpoint_identity import claim_identity, identity_of
from tests.support import spark_docs as sd
from tests.support.spark import oracle, run_spark


def published(port: int, key: str, elements: list) -> str:
    url = f"redis://127.0.0.1:{port}/{key}"
    stream = RedisStream.parse(url)
    add_elements(stream.connect(), stream, elements)
    return url


def test_the_redis_stream_is_part_of_the_checkpoints_identity(tmp_path):
    doc = sd.uc1(10_000)
    ck = str(tmp_path / "ck")
    os.makedirs(ck)
    first = identity_of(ck, doc, ["redis://127.0.0.1:6390/log"])
    assert first["streams"] == ["redis://127.0.0.1:6390/log"]
    claim_identity(ck, first, stateful=True)
    claim_identity(ck, identity_of(ck, doc, ["redis://127.0.0.1:6390/log"]), stateful=True)  # the same: resumed
    with pytest.raises(TefqError, match="the --stream set was redis://127.0.0.1:6390/log, now redis://127.0.0.1:6390/other"):
        claim_identity(ck, identity_of(ck, doc, ["redis://127.0.0.1:6390/other"]), stateful=True)


@pytest.mark.spark
def test_finished_checkpoint_over_redis_refuses_new_entries(spark, redis_port, tmp_path):
    first, later = sd.views(0, 10), sd.views(10, 10, start=sd.VIEWS_START + 600_000)
    url = published(redis_port, "ck-log", first)
    doc, ck = sd.uc1(10_000), str(tmp_path / "ck")
    got = run_spark(spark, doc, [url], checkpoint=ck)
    assert got.results[0].rows == oracle(doc, first).results[0].rows
    again = run_spark(spark, doc, [url], checkpoint=ck)  # no new entry: the same rows, once
    assert again.results[0].rows == got.results[0].rows
    published(redis_port, "ck-log", later)
    with pytest.raises(TefqError) as e:
        run_spark(spark, doc, [url], checkpoint=ck)
    assert "finished bounded run" in e.value.message and "Redis entries arrived since" in e.value.message
    assert url in e.value.message
    fresh = run_spark(spark, doc, [url], checkpoint=str(tmp_path / "ck2"))
    assert fresh.results[0].rows == oracle(doc, first + later).results[0].rows
