"""What Spark's state commit costs with nothing of tefq in the way (a probe, not a test).

A file-source stream, one 1,000-row Parquet file per micro-batch, grouped into 2 buckets whose
`applyInPandasWithState` keeps a state of SIZE bytes (random or zeros), RocksDB with changelog
checkpointing as tefq's session has it. Prints the medians (micro-batches 4 to N) of `addBatch`,
the state store's `commitTimeMs` and `rocksdbCommitFileSyncLatencyMs`, and `triggerExecution`.

    python bench/state_commit.py 1000 rand
    EXTRA=spark.sql.streaming.checkpointFileManagerClass=org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager \
        python bench/state_commit.py 1000 rand       # Spark's default manager: ~120 ms more a commit
    PROV=org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider python bench/state_commit.py 1000 rand

EXTRA: comma-separated KEY=VALUE settings; PROV: the state store provider; CL: changelog
checkpointing (true); N: micro-batches (12). docs/spark.md "Session" says what it found.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time

import numpy as np
import pandas as pd

os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql.streaming.state import GroupStateTimeout  # noqa: E402

from tefq.spark.runtime.session import CHECKPOINT_FILE_MANAGER  # noqa: E402

SIZE, KIND = int(sys.argv[1]), sys.argv[2]


def op(key, pdfs, state):
    for _ in pdfs:
        pass
    state.update((os.urandom(SIZE) if KIND == "rand" else bytes(SIZE),))
    yield pd.DataFrame({"k": [int(key[0])]})


def main() -> None:
    extra = dict(x.split("=", 1) for x in os.environ.get("EXTRA", "").split(",") if x)
    spark = (SparkSession.builder.master("local[2]")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.streaming.stateStore.providerClass", os.environ.get(
                 "PROV", "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"))
             .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", os.environ.get("CL", "true"))
             .config("spark.sql.streaming.checkpointFileManagerClass", CHECKPOINT_FILE_MANAGER)
             .config("spark.sql.streaming.noDataMicroBatches.enabled", "false")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.adaptive.enabled", "false")
             .config(map=extra)
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    d = tempfile.mkdtemp(prefix="tefq-state-commit-")
    os.makedirs(f"{d}/in")
    df = spark.readStream.format("parquet").schema("b long").option("maxFilesPerTrigger", 1).load(f"{d}/in")
    df = df.withColumn("g", df.b % 2)
    q = (df.groupBy("g").applyInPandasWithState(op, "k long", "blob binary", "append", GroupStateTimeout.NoTimeout)
         .writeStream.format("noop").option("checkpointLocation", f"{d}/cp")
         .trigger(processingTime="100 milliseconds").start())
    res = []
    for i in range(int(os.environ.get("N", "12"))):
        pd.DataFrame({"b": np.arange(1000)}).to_parquet(f"{d}/tmp.parquet")
        os.rename(f"{d}/tmp.parquet", f"{d}/in/f{i}.parquet")
        n, t = len(q.recentProgress), time.time()
        while len(q.recentProgress) == n:
            time.sleep(0.05)
            if time.time() - t > 60:
                sys.exit(f"no progress: {q.exception()}")
        p = q.recentProgress[-1]
        store = p["stateOperators"][0] if p["stateOperators"] else {}
        res.append((p["durationMs"].get("addBatch"), store.get("commitTimeMs"),
                    store.get("customMetrics", {}).get("rocksdbCommitFileSyncLatencyMs"),
                    p["durationMs"].get("triggerExecution")))
    q.stop()
    medians = [int(np.median([r[j] or 0 for r in res[3:]])) for j in range(4)]
    print(f"state {SIZE:,} bytes ({KIND}): addBatch {medians[0]} ms, commit {medians[1]} ms, "
          f"file sync {medians[2]} ms, trigger {medians[3]} ms (medians of micro-batches 4-{len(res)})")


if __name__ == "__main__":
    main()
