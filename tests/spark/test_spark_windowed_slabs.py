"""A windowed query without a join key, split by its windows over two buckets
(tefq.spark.kernels.windowed.partitioning.WindowSlabs) on real Spark, against the windowed oracle: slabs of a
few windows so that a short log crosses several slab edges, timestamps on and next to window
borders, several micro-batches, both ingestion paths, an aggregate without GROUP BY (its empty
windows still report, once), and a late element at a slab's edge counted once."""
from __future__ import annotations


import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("pyspark")

from tefq.oracle.windowed import run as oracle_run
from tests.support.windowed_spark import (NS, PREFIX, assert_same_as_oracle, bordered_log, load_text,
                                          spark_equals_oracle, write_files)

SPLIT = {  # RANGE / STEP make slabs of 8 and 4 windows (8 s and 4 s): a 20 s log crosses several edges
    "sliding-no-group": PREFIX + """REGISTER RSTREAM <http://example.org/q> AS
SELECT (COUNT(*) AS ?n) (COUNT(DISTINCT ?c) AS ?channels)
FROM NAMED WINDOW :w ON <http://example.org/iptv/log> [RANGE PT2S STEP PT1S] WHERE { WINDOW :w { ?u :join ?c } }""",
    "tumbling-subselect": PREFIX + """REGISTER QUERY S AS
SELECT ?c ?n ?q FROM STREAM <http://example.org/iptv/log> [RANGE 1s STEP 1s]
WHERE { { SELECT ?c (COUNT(?u) AS ?n) WHERE { ?u :join ?c } GROUP BY ?c } OPTIONAL { ?x :quit ?c BIND(?x AS ?q) } }""",
}


def split_plan(doc):
    from tefq.spark.planning.windowed import plan_windowed

    plan = plan_windowed(doc, 2)
    assert plan.key is None and plan.slabs is not None and plan.buckets == 2
    return plan


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(SPLIT)), seed=st.integers(0, 10_000), cuts=st.lists(st.integers(1, 119), max_size=3),
       ingest=st.sampled_from(["rows", "direct"]))
def test_a_query_split_by_windows_equals_the_oracle(spark, tmp_path_factory, name: str, seed: int, cuts: list[int],
                                                    ingest: str) -> None:
    tmp = tmp_path_factory.mktemp("slabs")
    doc = load_text(tmp, SPLIT[name])
    split_plan(doc)
    elements = bordered_log(seed, 120, 20_000)
    write_files(elements, tmp / "log", cuts)
    spark_equals_oracle(spark, doc, elements, tmp / "log", ingest=ingest)


def test_a_late_element_at_a_slab_edge_is_counted_once(spark, tmp_path) -> None:
    """8 s is in the windows closing at 8, 9 and 10 s: slab 0 (windows 0-7) and slab 1 (8-15), two
    buckets. Sent late to both, it is one late element."""
    from tefq.spark import run as spark_run

    doc = load_text(tmp_path, SPLIT["sliding-no-group"])
    plan = split_plan(doc)
    first_b, last_b = (x.tolist() for x in plan.slabs.element_buckets([8_000], 0))
    assert first_b != last_b
    first = [(t, f"<{NS}u{t % 7}>", f"<{NS}join>", f"<{NS}ch{t % 3}>") for t in range(0, 20_000, 250)]
    second = [(8_000, f"<{NS}late>", f"<{NS}join>", f"<{NS}ch9>"), (30_000, f"<{NS}u2>", f"<{NS}join>", f"<{NS}ch1>")]
    write_files(first + second, tmp_path / "log", [len(first)])
    got = spark_run(doc, [str(tmp_path / "log")], spark=spark, progress=False, max_files_per_trigger=1)
    assert got.metrics.late_events == 1
    assert got.metrics.extra["late_events_by_stream"] == {str(tmp_path / "log"): 1}
    # every window that holds 8 s was reported before it came: the rows (and windows) are the oracle's without it
    assert_same_as_oracle(got, oracle_run(doc, first + second[1:]))
