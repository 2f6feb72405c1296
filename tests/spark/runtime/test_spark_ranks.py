"""runtime/ranks.file_ranks (no Spark job) = the ranks a Spark job computes with Spark SQL's own
hash of the same files (`_metadata`: URI and modification time): the same file hash
-> stream rank for files with spaces, brackets, `%` and non-ASCII letters in their names, over two
--stream inputs."""
from __future__ import annotations

import pytest

pytest.importorskip("pyspark")




def ranks_by_job(spark, paths: list[str]) -> dict[int, int]:
    """The reference: Spark SQL hashes every file's URI and modification time as its file source
    reports them (`_metadata`, ranks.file_hash) in a job."""
    from pyspark.sql import functions as F

    from tefq.io.readers import literal_path_pattern
    from tefq.spark.runtime.ranks import file_hash
    from tefq.spark.runtime.ranks import spark_file_uris

    rank = {(u, s): i for i, (u, s, _) in enumerate(spark_file_uris(spark, paths))}
    want = {}
    for s, p in enumerate(paths):
        meta = F.col("_metadata")
        df = spark.read.option("recursiveFileLookup", "true").parquet(literal_path_pattern(p))
        for u, h in df.select(meta.file_path, file_hash(meta.file_path, s, meta.file_modification_time)).collect():
            want[h] = rank[(u, s)]
    return want


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
