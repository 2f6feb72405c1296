"""A bounded run's listed file inputs read through one source (runtime/listing.one_source): one
listing naming every input's files in stream order, input by input; Redis inputs and a file named
by two inputs keep their own sources. (The rows stay the oracle's: tests/test_w3c.py, 459 streams,
and the multi-stream differential tests run through it.)"""
from __future__ import annotations

import json
import os

from tefq.spark.runtime.listing import LOG_DIR, one_source, write_listing
from tefq.spark.runtime.sources import StreamInput


def listed(tmp_path, stream: int, names: list[str]) -> StreamInput:
    directory = str(tmp_path / f"staged/listed-{stream}")
    write_listing(directory, [f"file:/data/{n}" for n in names], [10 * (i + 1) for i in range(len(names))])
    return StreamInput(f"/data/stream{stream}", stream, listing=directory)


def entries(directory: str) -> list[dict]:
    with open(os.path.join(directory, LOG_DIR, "0"), encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    assert lines[0] == "v1"
    return [json.loads(line) for line in lines[1:]]


def test_listed_inputs_become_one_in_stream_order(tmp_path) -> None:
    redis = StreamInput("redis://127.0.0.1:6379/s", 1)
    inputs = [listed(tmp_path, 0, ["b.parquet", "a.parquet"]), redis, listed(tmp_path, 2, ["c.parquet"])]
    together, *rest = one_source(inputs)
    assert rest == [redis] and rest[0] is redis
    assert together.stream == 0 and together.listing.endswith("listed-together")
    got = entries(together.listing)
    assert [e["path"] for e in got] == ["file:/data/b.parquet", "file:/data/a.parquet", "file:/data/c.parquet"]
    assert [e["modificationTime"] for e in got] == [0, 1, 2]  # Spark's order: the ranks
    assert [e["size"] for e in got] == [10, 20, 10]


def test_one_listed_input_or_a_file_in_two_inputs_keep_their_sources(tmp_path) -> None:
    alone = [listed(tmp_path, 0, ["a.parquet"]), StreamInput("redis://127.0.0.1:6379/s", 1)]
    assert one_source(alone) == alone
    twice = [listed(tmp_path, 0, ["a.parquet"]), listed(tmp_path, 1, ["a.parquet"])]
    assert one_source(twice) == twice
