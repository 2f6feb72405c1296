"""runtime/ranks.file_ranks (no Spark job) = sources.file_ranks (a Spark job): the same file hash
-> stream rank for files with spaces, brackets, `%` and non-ASCII letters in their names, over two
--stream inputs."""
from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

import os  # noqa: E402
import sys  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from spark_helpers import spark  # noqa: E402,F401 (the module's SparkSession fixture)


def test_ranks_without_a_job_equal_sources_file_ranks(spark, tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tefq.spark.runtime.ranks import file_ranks
    from tefq.spark.runtime.sources import file_ranks as ranks_by_job

    streams = [tmp_path / "a dir [1]", tmp_path / "b%20é"]
    for d in streams:
        (d / "sub dir").mkdir(parents=True)
        for name in ("x 1.parquet", "y[2].parquet", "z%41.parquet", "é€.parquet", "sub dir/w.parquet"):
            pq.write_table(pa.table({"ts": pa.array([1], pa.int64()), "s": ["<a>"], "p": ["<b>"], "o": ["<c>"]}),
                           str(d / name))
    paths = [str(d) for d in streams]
    want = ranks_by_job(spark, paths)
    assert len(want) == 10
    assert file_ranks(spark, paths) == want
    assert file_ranks(spark, [str(streams[0] / "x 1.parquet")]) == {}  # one file: no ties between files
