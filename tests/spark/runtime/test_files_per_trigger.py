"""A bounded run's default micro-batch (runtime/inputs.files_per_trigger): about BATCH_EVENTS
events of files, so that memory follows the micro-batch; one micro-batch for small inputs."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from tefq.spark.runtime.inputs import files_per_trigger


def parquet_stream(directory, sizes: list[int]) -> str:
    directory.mkdir()
    for i, n in enumerate(sizes):
        table = pa.table({"ts": list(range(n)), "s": ["<http://e/u>"] * n, "p": ["<http://e/p>"] * n,
                          "o": ["<http://e/o>"] * n})
        pq.write_table(table, directory / f"part-{i:05d}.parquet")
    return str(directory)


def test_small_inputs_stay_one_micro_batch(tmp_path) -> None:
    stream = parquet_stream(tmp_path / "s", [10, 10, 10])
    assert files_per_trigger([stream], batch_events=30) is None


def test_large_inputs_take_as_many_files_as_the_largest_allow(tmp_path) -> None:
    stream = parquet_stream(tmp_path / "s", [10, 12, 10, 10])
    assert files_per_trigger([stream], batch_events=30) == 2  # 30 // 12
    assert files_per_trigger([stream], batch_events=5) == 1  # a file larger than the budget: one a batch


def test_two_streams_count_together(tmp_path) -> None:
    a, b = parquet_stream(tmp_path / "a", [10, 10]), parquet_stream(tmp_path / "b", [10, 10])
    assert files_per_trigger([a], batch_events=25) is None
    assert files_per_trigger([a, b], batch_events=25) == 2


def test_redis_and_unreadable_files_keep_one_micro_batch(tmp_path) -> None:
    stream = parquet_stream(tmp_path / "s", [10, 10])
    assert files_per_trigger([stream, "redis://127.0.0.1:6379/log"], batch_events=5) is None
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "log.parquet").write_bytes(b"not parquet")
    assert files_per_trigger([str(tmp_path / "t")], batch_events=5) is None
