"""The Spark side of a micro-batch, stage by stage, as batch jobs over the bench data.

    .venv/bin/python bench/profile_spark.py --usecase uc1 --data /tmp/bench2m [--files 5]

Times (best of --repeat) reading the files, the engine's projection, the mapInArrow step and the
shuffle into buckets, each written to Spark's `noop` sink, so each step's cost is the difference
to the previous one. The stateful operator itself runs only in streaming: see profile_operator.py.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))  # the checkout: tests.support holds the hand-built documents

from throughput import docs  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--usecase", default="uc1")
    ap.add_argument("--data", required=True)
    ap.add_argument("--files", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    from pyspark.sql import functions as F

    from tefq.io.readers import stream_files
    from tefq.spark.runtime import columns, mappers
    from tefq.spark.shapes import plan_document
    from tefq.spark.runtime.session import get_session

    spark = get_session()
    nb = int(spark.conf.get("spark.sql.shuffle.partitions"))
    plan = plan_document(docs(a.usecase), nb)[0]
    files = stream_files(os.path.join(a.data, "log"))[:a.files]
    raw = spark.read.schema("ts long, s string, p string, o string").parquet(*files).select(
        "ts", "s", "p", "o", F.col("_metadata.file_path").alias("file"), F.xxhash64(F.col("_metadata.file_path")).alias("fh"),
        F.lit(0).cast("long").alias("row"))
    n = raw.count()
    projected = columns.project_current(raw, plan)
    mapped = projected.mapInArrow(mappers.make_mapper(plan, None), mappers.current_map_schema(plan))
    shuffled = mapped.repartition(nb, "b")
    steps = [("read", raw), ("project", projected), ("mapInArrow", mapped), ("shuffle", shuffled)]
    print(f"{n} rows, {len(files)} files, {nb} shuffle partitions")
    for name, df in steps:
        best = min(_time(df) for _ in range(a.repeat))
        print(f"{name:>12}: {best:6.2f} s  ({n / best:,.0f} rows/s)")


def _time(df) -> float:
    started = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
