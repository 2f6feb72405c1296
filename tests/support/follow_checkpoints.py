"""A followed run's checkpoint read back: the commits Spark recorded."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq


def commit_records(out, batch: int, records: list[tuple]) -> None:
    """Commit (kind, tick, payload) records as micro-batch `batch` of a Parquet sink (a data file,
    then its `_spark_metadata` log entry), as Spark's file sink does."""
    data = out / f"part-{batch:05d}.parquet"
    kind, tick, payload = zip(*records)
    pq.write_table(pa.table({"kind": list(kind), "tick": pa.array(tick, pa.int64()),
                             "payload": pa.array(payload, pa.binary())}), data)
    log = out / "_spark_metadata"
    log.mkdir(exist_ok=True)
    (log / str(batch)).write_text('v1\n{"path":"file://%s","size":1,"isDir":false,"modificationTime":0,'
                                  '"blockReplication":1,"blockSize":1,"action":"add"}\n' % data)
