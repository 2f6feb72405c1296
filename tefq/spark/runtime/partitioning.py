"""Bucket -> shuffle partition, one to one.

`groupBy("b")` sends a row to shuffle partition `pmod(murmur3(b, 42), P)`. For the bucket ids
0..3 and P = 4 that is partitions 3, 3, 2, 3: three buckets in one reduce task, run one after
another on one core, and two partitions empty. So the engine groups by a *label* per bucket, the
smallest integer that Spark's hash sends to the bucket's own partition, and the operators still
see the bucket index (`by_bucket`).
"""
from __future__ import annotations

import json
import os
from typing import Callable

from tefq.errors import TefqError

_C1, _C2, _M32 = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def spark_hash_int(value: int, seed: int = 42) -> int:
    """Spark's `hash(int)`: Murmur3_x86_32.hashInt(value, seed), as a signed 32-bit int."""
    k1 = _rotl((value & _M32) * _C1 & _M32, 15) * _C2 & _M32
    h1 = (_rotl(seed ^ k1, 13) * 5 + 0xE6546B64) & _M32
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _M32
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _M32
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def shuffle_labels(buckets: int, partitions: int) -> list[int]:
    """Per bucket i, a distinct int label that Spark's hash partitioning into `partitions` sends
    to partition `i mod partitions`."""
    labels: list[int] = []
    v = 0
    for i in range(buckets):
        while spark_hash_int(v) % partitions != i % partitions or v in labels:  # Python % is pmod
            v += 1
        labels.append(v)
        v = 0
    return labels


def checkpointed_labels(directory: str, checkpoint: str, buckets: int, partitions: int) -> list[int]:
    """The labels of a query, kept in `directory` beside its checkpoint: the state is keyed by label,
    and a restarted query uses the partition count its checkpoint recorded, not the session's. A
    checkpoint written before labels existed keyed its state by the bucket index itself."""
    path = os.path.join(directory, "bucket-labels.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            labels = json.load(fh)
        if len(labels) != buckets:
            raise TefqError(f"this checkpoint was written with {len(labels)} buckets, the run has {buckets} "
                            "(spark.sql.shuffle.partitions changed?): use a fresh --checkpoint", checkpoint)
        return labels
    commits = os.path.join(checkpoint, "commits")
    if os.path.isdir(commits) and any(f.isdigit() for f in os.listdir(commits)):
        return list(range(buckets))
    labels = shuffle_labels(buckets, partitions)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(labels, fh)
    os.replace(tmp, path)
    return labels


def by_bucket(func: Callable, labels: list[int]) -> Callable:
    """An applyInPandasWithState function keyed by label, calling `func` with the bucket index."""
    index = {label: i for i, label in enumerate(labels)}

    def op(key, pdfs, state):
        return func((index[int(key[0])],), pdfs, state)

    return op


def relabel(mapped, labels: list[int]):
    """Rows whose column `b` holds a bucket index, with `b` that bucket's label: the key they are
    grouped by (`by_bucket` hands the operator the index again)."""
    from pyspark.sql import functions as F

    return mapped.withColumn("b", F.element_at(F.array(*[F.lit(v) for v in labels]), F.col("b") + 1))
