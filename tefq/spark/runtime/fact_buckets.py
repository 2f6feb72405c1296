"""Bucket routing of the fact-aggregate rows (`FactAggregatePlan.routing`), after the mapper: each
SINCE/UNTIL row of a split event fact goes to the bucket of its key code (`code mod B`), each row
of a replicated event fact and every heartbeat and flush row to every bucket, an OTHER row (an
element no clause matches) to the bucket of its element hash.

Done on the mapper's Arrow output (runtime/routing.RowRouting), after the partition's elements are
counted, so a replicated element is still one element read."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from tefq.spark.protocol import EVENT_KINDS, RowKind, routed_rows


def route_batch(routes: tuple[int, ...], buckets: int, rb: pa.RecordBatch, only: int | None = None) -> pa.RecordBatch:
    """`rb` with column `b` set: rows of event fact i by `v{routes[i]} mod buckets`; rows of a
    fact with route -1 and control rows once per bucket. `only`: bucket `only`'s rows alone."""
    n = rb.num_rows
    if buckets == 1 or not n:
        return rb
    kind = rb.column("k").to_numpy(zero_copy_only=False)
    fact = rb.column("fact").to_numpy(zero_copy_only=False)
    data = np.isin(kind, [int(k) for k in EVENT_KINDS])
    bucket = np.full(n, -1, np.int64)  # -1: every bucket
    other = kind == int(RowKind.OTHER)  # an element no clause matches: one bucket, by its hash
    bucket[other] = np.mod(rb.column("e").to_numpy(zero_copy_only=False)[other], buckets)
    for i, col in enumerate(routes):
        if col >= 0:
            mine = data & (fact == i)
            bucket[mine] = np.mod(rb.column(f"v{col}").to_numpy(zero_copy_only=False)[mine], buckets)
    if only is not None:  # direct ingestion: this bucket's rows, and the ones every bucket gets
        rows = np.nonzero((bucket == only) | (bucket < 0))[0]
        b = np.full(len(rows), only, np.int64)
    else:
        single = np.nonzero(bucket >= 0)[0]
        every = np.nonzero(bucket < 0)[0]
        rows = np.concatenate([single, np.tile(every, buckets)])
        b = np.concatenate([bucket[single], np.repeat(np.arange(buckets, dtype=np.int64), len(every))])
    return routed_rows(rb, rows, b)
