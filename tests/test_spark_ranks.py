"""runtime/ranks.file_ranks (no Spark job) = the ranks a Spark job computes with Spark SQL's own
hash of the same URIs (the engine's former way, kept here as the reference): the same file hash
-> stream rank for files with spaces, brackets, `%` and non-ASCII letters in their names, over two
--stream inputs."""
from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

import os  # noqa: E402
import sys  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from spark_helpers import spark  # noqa: E402,F401 (the module's SparkSession fixture)


def ranks_by_job(spark, paths: list[str]) -> dict[int, int]:
    """The reference: Spark SQL hashes every file's URI (protocol.file_hash) in a job."""
    from pyspark.sql import functions as F

    from tefq.spark.protocol import file_hash
    from tefq.spark.runtime.ranks import spark_file_uris

    uris = spark_file_uris(spark, paths)
    rows = spark.createDataFrame([(u, s, i) for i, (u, s) in enumerate(uris)], "u string, s int, r long")
    return {h: r for h, r in rows.select(file_hash(F.col("u"), F.col("s")), "r").collect()}


def test_ranks_without_a_job_equal_spark_sql_hashes(spark, tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tefq.spark.runtime.ranks import file_ranks

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
