"""A followed run's sink written and read back: the commits Spark recorded, a plan to decode them."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from tefq.spark.planning.current import CurrentAggregatePlan


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


def sink_plan(group_vars: tuple[str, ...], projections: tuple) -> CurrentAggregatePlan:
    """A current-aggregate plan with these group variables and projections: what a SinkTail needs
    of a plan to decode its sink's rows (its shape's collector)."""
    return CurrentAggregatePlan(query="q", columns=tuple(name for name, _ in projections), fact="F", identity=(),
                                clauses=(), group_vars=group_vars, aggregates=(), projections=projections,
                                every_ms=1000, buckets=1)
