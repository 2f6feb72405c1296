"""The Spark fact operator driven directly (no Spark): micro-batches of any size, several buckets
with heartbeats, end-of-input flush, against the oracle. The same code runs inside
applyInPandasWithState; here its state object is a stand-in."""
from __future__ import annotations


import pandas as pd
from hypothesis import HealthCheck, given, settings, strategies as st

from tefq.spark.output import read_record
from tefq.spark.protocol import ELEMENT, FLUSH
from tefq.vocabulary import RunSettings
from tests.support import spark_docs as sd
from tests.support.operator_harness import FakeState, drive, streams


def oracle(doc, elements):
    from tefq.oracle import run

    return run(doc, elements, None, 0)


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
    op = make_fallback_operator(doc, 0, q.every_ms, RunSettings(0, lateness))
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
