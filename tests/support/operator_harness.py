"""The operators driven without Spark: a stand-in for Spark's group state, hand-made wire rows, hypothesis streams."""
from __future__ import annotations

import zlib

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import strategies as st

pytest.importorskip("pyspark")

from tefq.results import QueryResult
from tefq.spark.operators.current import make_operator
from tefq.spark.protocol import ELEMENT, FLUSH, RowKind
from tefq.spark.run_metrics import applied_events
from tefq.spark.runtime.mappers import make_mapper
from tefq.spark.runtime.sources import FLUSH_TERM
from tefq.spark.runtime.spark_hash import element_hash
from tefq.spark.shapes import collector_of, plan_document
from tefq.vocabulary import RunSettings
from tests.support import spark_docs as sd


class FakeState:
    """Spark's GroupState as the operators use it: `exists`, `get`, `update`."""

    def __init__(self) -> None:
        self.exists, self.get = False, None

    def update(self, v) -> None:
        self.exists, self.get = True, v


def h(*parts: str) -> int:
    return zlib.crc32("\x00".join(parts).encode()) * 7919 + len(parts)


def projected(part: list, plan, first_row: int = 0) -> pa.RecordBatch:
    """What the engine's Spark SQL projection makes of stream rows (crc32 codes instead of xxhash64;
    group terms on SINCE rows only)."""
    cols: dict[str, list] = {c: [] for c in ("k", "ts", "o", "f", "e", "n", "g0", "t0", "b", "x")}
    for t, s, p, o in part:
        kind = 3 if p == FLUSH_TERM else 0 if p.endswith("join>") else 1 if p.endswith("quit>") else -1
        row = dict(k=kind, ts=t, o=0, f=h(s, o) if kind >= 0 else None, e=h(s, p, o), n=0, g0=h(o),
                   t0=o if kind == 0 else None, b=h(o) % plan.buckets if plan.buckets > 1 else 0, x=None)
        for c, v in row.items():
            cols[c].append(v)
    types = dict(k=pa.int32(), ts=pa.int64(), o=pa.int64(), f=pa.int64(), e=pa.int64(), n=pa.int64(), g0=pa.int64(),
                 t0=pa.string(), b=pa.int32(), x=pa.string())
    return pa.RecordBatch.from_pydict({c: pa.array(v, types[c]) for c, v in cols.items()})


def drive(doc, elements, batch_sizes: list[int], buckets: int, lateness: int = 0, partitions: int = 1,
          make_op=make_operator):
    """Feed `elements` (stream order) in micro-batches, each split into `partitions` input partitions
    that go through the engine's mapper; each bucket gets its rows, as after Spark's shuffle.
    `make_op(plan, settings)`: the stateful operator under test (t0 0, the lateness)."""
    plan = plan_document(doc, buckets)[0]
    op = make_op(plan, RunSettings(0, lateness))
    mapper = make_mapper(plan, None)
    states = [FakeState() for _ in range(plan.buckets)]
    col = collector_of(plan)

    def call(b: int, frame: pd.DataFrame) -> None:
        for out in op((b,), iter([frame]), states[b]):
            for kind, tick, payload in out.itertuples(index=False):
                col.add(kind, tick, payload)

    def micro_batch(chunks: list[list]) -> None:
        mapped = [rb for p, chunk in enumerate(chunks) for rb in mapper(iter([projected(chunk, plan)]), p)]
        frame = pa.Table.from_batches(mapped).to_pandas()
        for b in range(plan.buckets):
            call(b, frame[frame["b"] == b])

    i, sizes = 0, list(batch_sizes)
    while i < len(elements):
        n = sizes.pop(0) if sizes else len(elements)
        part = elements[i:i + n]
        cut = max(1, len(part) // partitions)
        micro_batch([part[j:j + cut] for j in range(0, len(part), cut)])
        i += n
    micro_batch([[(0, FLUSH_TERM, FLUSH_TERM, FLUSH_TERM)]])
    metrics: dict = {}
    for d in col.metrics:
        for k, v in d.items():
            metrics[k] = metrics.get(k, 0) + v
    metrics["events_in"] = applied_events(metrics)  # as the driver counts them (tefq.spark.run_metrics)
    # The driver sorts numeric rows as arrays of ranks: the same order as the result order.
    assert col.sorted_rows() == QueryResult("q", (), col.rows()).sorted_rows()
    return sorted(col.rows()), metrics


@st.composite
def streams(draw):
    iptv = sd.IPTV
    n = draw(st.integers(1, 40))
    t = draw(st.integers(0, 3000))
    out = []
    for _ in range(n):
        t += draw(st.sampled_from([0, 0, 1, 999, 1000, 1001, 2000]))
        u = draw(st.integers(0, 3))
        c = draw(st.integers(0, 2))
        p = draw(st.sampled_from(["join", "join", "quit"]))
        out.append((t, f"<{iptv}u{u}>", f"<{iptv}{p}>", f"<{iptv}ch{c}>"))
    sizes = draw(st.lists(st.integers(1, 15), max_size=6))
    return out, sizes


def element_rows(elements: list[tuple], kinds: list[int] | None = None) -> pa.RecordBatch:
    """What `columns.project_elements` makes of stream rows (no Spark; OTHER rows hashed as
    `project_general` hashes them)."""
    n = len(elements)
    kinds = kinds or [int(FLUSH) if p == FLUSH_TERM else int(ELEMENT) for _, _, p, _ in elements]
    hashes = [element_hash(*e[1:4]) if k == int(RowKind.OTHER) else 0 for e, k in zip(elements, kinds)]
    return pa.RecordBatch.from_pydict({
        "k": pa.array(kinds, pa.int32()), "ts": pa.array([e[0] for e in elements], pa.int64()),
        "o": pa.array([0] * n, pa.int64()), "f": pa.array(hashes, pa.int64()), "n": pa.array([0] * n, pa.int64()),
        "s": [e[1] for e in elements], "p": [e[2] for e in elements], "obj": [e[3] for e in elements],
        "b": pa.array([0] * n, pa.int32()), "x": pa.nulls(n, pa.string())})
