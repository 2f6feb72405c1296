"""Bucket labels: each bucket in a shuffle partition of its own (tefq.spark.runtime.partitioning)."""
from __future__ import annotations


import pytest


from tefq.errors import TefqError
from tefq.spark.runtime.partitioning import by_bucket, checkpointed_labels, shuffle_labels, spark_hash_int


@pytest.mark.parametrize("buckets,partitions", [(1, 4), (2, 2), (4, 4), (8, 8), (3, 8), (6, 4)])
def test_labels_are_distinct_and_name_the_bucket_partition(buckets, partitions):
    labels = shuffle_labels(buckets, partitions)
    assert len(set(labels)) == buckets
    assert [spark_hash_int(v) % partitions for v in labels] == [i % partitions for i in range(buckets)]


def test_by_bucket_hands_the_operator_the_bucket_index():
    labels = shuffle_labels(4, 4)
    seen = []
    op = by_bucket(lambda key, pdfs, state: seen.append(key), labels)
    for v in labels:
        op((v,), iter(()), None)
    assert seen == [(0,), (1,), (2,), (3,)]


@pytest.mark.spark
def test_spark_hashes_and_partitions_like_the_labels_say(spark):  # noqa: F811
    from pyspark.sql import functions as F

    values = list(range(-50, 200)) + [2**31 - 1, -(2**31)]
    df = spark.createDataFrame([(v,) for v in values], "v int")
    assert {r.v: r.h for r in df.select("v", F.hash("v").alias("h")).collect()} == \
        {v: spark_hash_int(v) for v in values}
    labels = shuffle_labels(4, 4)
    rows = (spark.createDataFrame([(v,) for v in labels for _ in range(3)], "b int").repartition(4, "b")
            .select("b", F.spark_partition_id().alias("p")).distinct().collect())
    assert sorted((r.b, r.p) for r in rows) == sorted((v, i) for i, v in enumerate(labels))


def test_labels_are_kept_with_the_checkpoint(tmp_path):
    ck = tmp_path / "checkpoint"
    first = checkpointed_labels(str(tmp_path), str(ck), 4, 4)
    assert first == shuffle_labels(4, 4)
    # A restart: Spark keeps the checkpoint's partition count, so the labels must not follow the session's.
    assert checkpointed_labels(str(tmp_path), str(ck), 4, 2) == first
    with pytest.raises(TefqError, match="fresh --checkpoint"):
        checkpointed_labels(str(tmp_path), str(ck), 8, 8)


def test_a_checkpoint_from_before_labels_keeps_bucket_indices(tmp_path):
    (tmp_path / "checkpoint" / "commits").mkdir(parents=True)
    (tmp_path / "checkpoint" / "commits" / "0").write_text("v1\n{}\n")
    assert checkpointed_labels(str(tmp_path), str(tmp_path / "checkpoint"), 4, 4) == [0, 1, 2, 3]
