"""The fact table on Spark (spec §12, tefq.facts.spark): the fact operator's second output equals
the oracle's table — driven without Spark over hypothesis streams (ties, disorder within the
allowed lateness, several micro-batches), and on real Spark over small generated streams;
`--at` over Spark's fact table equals the rows of a full run at those ticks."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tefq.facts.as_of import as_of_spark, as_of_stream
from tefq.facts.spark import collected_store, spark_fact_table
from tefq.facts.table import fact_table, store_rows
from tefq.io.stream_writers import write_stream
from tefq.spark.fact_output import FactCollector
from tefq.spark.operators.fact import make_fact_operator
from tefq.spark.planning.fact import plan_fact_table as table_plan
from tefq.spark.runtime.fact_buckets import route_batch
from tefq.vocabulary import RunSettings
from tests.support import spark_docs as sd
from tests.support.fact_harness import batch_of, feed, uc3_streams  # the derived-fact tests' harness
from tests.support.operator_harness import FakeState

IPTV = sd.IPTV


def operator_table(doc, elements, batch_sizes: list[int], lateness: int = 0, buckets: int = 1):
    """The fact table the fact operator emits for `doc` over `elements` (in arrival order), fed
    in micro-batches of `batch_sizes` without Spark, routed to the plan's buckets (each its own
    state) as Spark's groupBy(bucket) would call them."""
    plan = table_plan(doc, buckets)
    op = make_fact_operator(plan, RunSettings(0, lateness), facts=True)
    states, facts = [FakeState() for _ in range(plan.buckets)], FactCollector(tuple(f.name for f in plan.facts))

    def call(recs: list[dict]) -> None:
        routed = route_batch(plan.event_routes, plan.buckets, batch_of(plan, recs)).to_pandas()
        for b in range(plan.buckets):
            for out in op((b,), iter([routed[routed["b"] == b].reset_index(drop=True)]), states[b]):
                for kind, tick, payload in out.itertuples(index=False):
                    facts.add(kind, tick, payload)

    feed(call, plan, elements, batch_sizes)
    return store_rows(doc, collected_store(doc, facts.intervals())), plan


@st.composite
def disordered(draw, lateness: int = 3000):
    """UC3-like streams in an arrival order where no element is more than `lateness` ms behind
    the latest one before it (ordered by t + a jitter in [0, lateness]): late, never dropped."""
    elements, sizes = draw(uc3_streams())
    jitter = draw(st.lists(st.integers(0, lateness), min_size=len(elements), max_size=len(elements)))
    order = sorted(range(len(elements)), key=lambda i: elements[i][0] + jitter[i])
    return [elements[i] for i in order], sizes


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(disordered(), st.sampled_from(["uc1", "uc3"]), st.sampled_from([1, 3]))
def test_operator_fact_table_equals_the_oracle(stream, which, buckets):
    elements, sizes = stream
    doc = sd.uc3(1000) if which == "uc3" else sd.uc1(1000)
    table, plan = operator_table(doc, elements, sizes, lateness=3000, buckets=buckets)
    assert plan.buckets == buckets  # UC1 split by a variable of UserFact, UC3 by ?user (the guide replicated)
    assert table.rows == fact_table(doc, elements).rows


def test_a_plan_without_columns_reports_no_rows():
    doc = sd.uc1(1000)
    elements = [(1000, f"<{IPTV}u1>", f"<{IPTV}join>", f"<{IPTV}ch1>"),
                (5000, f"<{IPTV}u1>", f"<{IPTV}quit>", f"<{IPTV}ch1>"),
                (5000, f"<{IPTV}u2>", f"<{IPTV}join>", f"<{IPTV}ch1>")]
    table, _ = operator_table(doc, elements, [1, 2])
    assert [(r.start, r.end) for r in table.rows] == [(1000, 5000), (5000, None)]


def write_tsv(path, elements) -> str:
    write_stream(elements, str(path))
    return str(path)


@pytest.mark.spark
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(disordered(), st.integers(0, 40))
def test_spark_fact_table_equals_the_oracle(spark, tmp_path_factory, stream, cut):  # noqa: F811
    """A stream directory of two files (ties across them apply in file order)."""
    elements, _ = stream
    folder = tmp_path_factory.mktemp("facts")
    write_tsv(folder / "part-0.tsv", elements[:cut])
    write_tsv(folder / "part-1.tsv", elements[cut:])
    doc = sd.uc3(60_000)
    table, engine = spark_fact_table(doc, [str(folder)], spark=spark)
    assert engine == "spark"
    assert table.rows == fact_table(doc, elements).rows


@pytest.mark.spark
def test_at_over_spark_facts_equals_a_full_run(spark, tmp_path):  # noqa: F811
    from tefq.oracle import run

    def ev(t, s, p, o):
        return (t, f"<{IPTV}{s}>", f"<{IPTV}{p}>", f"<{IPTV}{o}>")

    elements = [ev(0, "ch0", "start", "prog0"), ev(1000, "u0", "join", "ch0"), ev(1000, "u1", "join", "ch0"),
                ev(3000, "ch1", "start", "prog1"), ev(4000, "u1", "quit", "ch0"), ev(4000, "u1", "join", "ch1"),
                ev(6000, "ch0", "finish", "prog0"), ev(6000, "ch0", "start", "prog2"), ev(9000, "u0", "quit", "ch0"),
                ev(12_000, "u2", "join", "ch1")]
    path = write_tsv(tmp_path / "events.tsv", elements)
    doc = sd.uc3(2000)
    full = run(doc, elements, None, 0).results[0]
    ticks = sorted({t for t, _ in full.rows})[1::2]
    got = as_of_spark(doc, [path], ticks, spark=spark).results[0]
    assert got.rows == as_of_stream(doc, elements, ticks).results[0].rows
    assert got.rows == [r for r in full.rows if r[0] in ticks]


def test_facts_the_fact_operator_cannot_run_come_from_the_oracle(tmp_path):
    """A SINCE clause with a FILTER: no table plan; the fact table is the oracle's (no Spark starts)."""
    from tefq.analysis import bind_text
    from tefq.spark.planning.common import Refusal

    doc = bind_text("PREFIX : <http://example.org/iptv#>\nCONSTRUCT FACT F {?u :w ?c} (UNION (SINCE ?u :join ?c "
                    "FILTER(?c != :x)) (UNTIL ?u :quit ?c))\n", "<test>")
    assert isinstance(table_plan(doc), Refusal)
    elements = [(1000, f"<{IPTV}u1>", f"<{IPTV}join>", f"<{IPTV}ch1>"),
                (2000, f"<{IPTV}u1>", f"<{IPTV}join>", f"<{IPTV}x>")]
    table, engine = spark_fact_table(doc, [write_tsv(tmp_path / "events.tsv", elements)])
    assert engine == "oracle" and table.rows == fact_table(doc, elements).rows and len(table.rows) == 1

