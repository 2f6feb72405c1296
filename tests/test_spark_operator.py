"""The Spark fact operator driven directly (no Spark): micro-batches of any size, several buckets
with heartbeats, end-of-input flush, against the oracle. The same code runs inside
applyInPandasWithState; here its state object is a stand-in."""
from __future__ import annotations

import os
import sys
import zlib

import pandas as pd
import pyarrow as pa
from hypothesis import HealthCheck, given, settings, strategies as st

sys.path.insert(0, os.path.dirname(__file__))
import spark_docs as sd  # noqa: E402

from tefq.results import QueryResult  # noqa: E402
from tefq.spark.output import read_record  # noqa: E402
from tefq.spark.runtime.mappers import make_mapper  # noqa: E402
from tefq.spark.protocol import ELEMENT, FLUSH  # noqa: E402
from tefq.spark.operators.current import make_operator  # noqa: E402
from tefq.spark.runtime.sources import FLUSH_TERM  # noqa: E402
from tefq.spark.output import Collector  # noqa: E402
from tefq.spark.planning import plan_document  # noqa: E402


class FakeState:
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
    `make_op(plan, t0, lateness)`: the stateful operator under test."""
    plan = plan_document(doc, buckets)[0]
    op = make_op(plan, 0, lateness)
    mapper = make_mapper(plan, None)
    states = [FakeState() for _ in range(plan.buckets)]
    col = Collector.of(plan)

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
    metrics["events_in"] = metrics.get("events_in", 0) - metrics.get("duplicates", 0)
    # The driver sorts numeric rows as arrays of ranks: the same order as the result order.
    assert col.sorted_rows() == QueryResult("q", (), col.rows()).sorted_rows()
    return sorted(col.rows()), metrics


def oracle(doc, elements):
    from tefq.oracle import run

    return run(doc, elements, None, 0)


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


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), st.sampled_from([1, 3]), st.sampled_from(["uc1", "uc2"]), st.sampled_from([1000, 2000]),
       st.sampled_from([1, 2]))
def test_operator_agrees_with_oracle(stream, buckets, uc, every, partitions):
    elements, sizes = stream
    doc = sd.uc1(every) if uc == "uc1" else sd.uc2(every)
    rows, metrics = drive(doc, elements, sizes, buckets, partitions=partitions)
    want = oracle(doc, elements)
    assert rows == want.results[0].rows
    for k in ("facts_created", "facts_closed", "unmatched_until", "ticks", "rows_out", "events_in"):
        assert metrics.get(k, 0) == getattr(want.metrics, k), k


def test_late_event_is_counted_not_applied():
    iptv = sd.IPTV
    j, q = f"<{iptv}join>", f"<{iptv}quit>"
    elements = [(1000, "<u1>", j, "<c>"), (5000, "<u2>", j, "<c>"), (2000, "<u1>", q, "<c>"),
                (6000, "<u3>", j, "<c>")]
    rows, metrics = drive(sd.uc1(1000), elements, [2, 1, 1], 1)
    assert metrics["late_events"] == 1  # the quit at 2000 came after tick 4000 was reported
    assert [r[1][1] for r in rows if r[0] == 5000] == [f'"2"^^<http://www.w3.org/2001/XMLSchema#integer>']


def test_lateness_allows_out_of_order_within_bound():
    iptv = sd.IPTV
    j, q = f"<{iptv}join>", f"<{iptv}quit>"
    elements = [(1000, "<u1>", j, "<c>"), (5000, "<u2>", j, "<c>"), (2000, "<u1>", q, "<c>"),
                (6000, "<u3>", j, "<c>")]
    rows, metrics = drive(sd.uc1(1000), elements, [2, 1, 1], 1, lateness=4000)
    assert metrics["late_events"] == 0
    assert rows == oracle(sd.uc1(1000), sorted(elements, key=lambda e: e[0])).results[0].rows


def drive_fallback(doc, elements, batch_sizes: list[int], lateness: int = 0):
    from tefq.spark.operators.fallback import make_fallback_operator

    q = doc.queries[0]
    op = make_fallback_operator(doc, 0, q.every_ms, 0, lateness)
    state, rows, metrics = FakeState(), [], {}

    def call(recs):
        for out in op((0,), iter([pd.DataFrame(recs, columns=["k", "ts", "o", "s", "p", "obj", "b", "x"])]), state):
            for kind, tick, payload in out.itertuples(index=False):
                if kind == "row":
                    rows.append((tick, tuple(read_record(kind, payload, list))))
                elif kind == "metric":
                    for k, v in read_record(kind, payload, dict).items():
                        metrics[k] = metrics.get(k, 0) + v

    i, sizes = 0, list(batch_sizes)
    while i < len(elements):
        n = sizes.pop(0) if sizes else len(elements)
        call([dict(k=ELEMENT, ts=t, o=j, s=s, p=p, obj=o, b=0, x=None) for j, (t, s, p, o) in enumerate(elements[i:i + n])])
        i += n
    call([dict(k=FLUSH, ts=0, o=0, s="", p="", obj="", b=0, x=None)])
    return sorted(rows), metrics


@st.composite
def uc3_streams(draw):
    iptv = sd.IPTV
    out, t = [], draw(st.integers(0, 5000))
    for _ in range(draw(st.integers(1, 30))):
        t += draw(st.sampled_from([0, 1, 999, 1000, 3000]))
        if draw(st.booleans()):
            out.append((t, f"<{iptv}u{draw(st.integers(0, 2))}>", f"<{iptv}{draw(st.sampled_from(['join', 'quit']))}>",
                        f"<{iptv}ch{draw(st.integers(0, 1))}>"))
        else:
            out.append((t, f"<{iptv}ch{draw(st.integers(0, 1))}>", f"<{iptv}{draw(st.sampled_from(['start', 'finish']))}>",
                        f"<{iptv}prog{draw(st.integers(0, 2))}>"))
    return out, draw(st.lists(st.integers(1, 10), max_size=5))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(uc3_streams())
def test_fallback_uc3_agrees_with_oracle_over_micro_batches(stream):
    elements, sizes = stream
    doc = sd.uc3(2000)
    rows, metrics = drive_fallback(doc, elements, sizes)
    want = oracle(doc, elements)
    assert rows == want.results[0].rows
    for k in ("facts_created", "unmatched_until", "ticks", "rows_out"):
        assert metrics.get(k, 0) == getattr(want.metrics, k), k
