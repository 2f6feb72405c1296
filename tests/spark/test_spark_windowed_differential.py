"""The Spark windowed operator (all due windows of a micro-batch in one vectorised pass,
tefq.spark.operators.windowed) against the windowed oracle (tefq.oracle.windowed.run), the
definition: random IPTV-like logs with timestamps on and next to window borders, cut into
micro-batches, sliding and tumbling windows, OPTIONAL / UNION / MINUS / sub-SELECT, REGISTER STREAM
feedback, a join-key-partitioned query, and late data (out of order within the lateness; beyond
it, counted). One SparkSession, few examples: each is a whole streaming run."""
from __future__ import annotations


import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("pyspark")

from tests.support.paths import ROOT
from tests.support.windowed_spark import NS, PREFIX, bordered_log, load_text, spark_equals_oracle, write_files

QUERIES = {
    "sliding-count": PREFIX + """REGISTER RSTREAM <http://example.org/q> AS
SELECT ?c (COUNT(?u) AS ?n) FROM NAMED WINDOW :w ON <http://example.org/iptv/log> [RANGE PT6S STEP PT2S]
WHERE { WINDOW :w { ?u :join ?c } } GROUP BY ?c""",
    "tumbling-optional-minus": PREFIX + """REGISTER QUERY T AS
SELECT ?u ?c ?q FROM STREAM <http://example.org/iptv/log> [RANGE 4s STEP 4s]
WHERE { ?u :join ?c OPTIONAL { ?u :quit ?q } MINUS { ?u :rate ?c } }""",
    "union-filter": PREFIX + """REGISTER QUERY U AS
SELECT ?u (COUNT(*) AS ?n) (COUNT(DISTINCT ?c) AS ?channels)
FROM STREAM <http://example.org/iptv/log> [RANGE 5s STEP 2s]
WHERE { { ?u :join ?c } UNION { ?u :quit ?c FILTER(?c != :ch0) } } GROUP BY ?u""",
    "subselect": PREFIX + """REGISTER QUERY S AS
SELECT ?c ?n FROM STREAM <http://example.org/iptv/log> [RANGE 6s STEP 3s]
WHERE { { SELECT ?c (COUNT(?u) AS ?n) WHERE { ?u :join ?c } GROUP BY ?c } FILTER(?n > 1) }""",
    "istream-key": (ROOT / "examples" / "rspql" / "new-viewers.rspql").read_text(),
    "feedback": (ROOT / "usecases" / "uc1_csparql.rspql").read_text(),
}


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(QUERIES)), seed=st.integers(0, 10_000),
       cuts=st.lists(st.integers(1, 119), max_size=2))
def test_windowed_operator_equals_oracle(spark, tmp_path_factory, name: str, seed: int, cuts: list[int]) -> None:
    tmp = tmp_path_factory.mktemp("diff")
    doc = load_text(tmp, QUERIES[name])
    elements = bordered_log(seed, 120, 20_000)
    write_files(elements, tmp / "log", cuts)
    spark_equals_oracle(spark, doc, elements, tmp / "log")


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), back_ms=st.integers(0, 3000))
def test_late_data_within_the_lateness_equals_the_oracle(spark, tmp_path_factory, seed: int, back_ms: int) -> None:
    """The second micro-batch holds elements up to `back_ms` older than the first's latest: with
    a lateness of 3 s no window closed too early, so the rows are the oracle's."""
    tmp = tmp_path_factory.mktemp("late")
    doc = load_text(tmp, QUERIES["sliding-count"])
    elements = bordered_log(seed, 120, 20_000)
    split = elements[60][0]
    first = elements[:60]
    second = sorted(elements[60:] + [(max(0, split - back_ms), f"<{NS}late>", f"<{NS}join>", f"<{NS}ch1>")],
                    key=lambda e: e[0])
    write_files(first + second, tmp / "log", [len(first)])
    got = spark_equals_oracle(spark, doc, first + second, tmp / "log", lateness_ms=3000)
    assert got.metrics.late_events == 0


def test_late_data_beyond_the_lateness_is_counted(spark, tmp_path) -> None:
    """An element older than a reported window's close still reaches the windows still open; the
    closed ones keep their rows (the run counts it late)."""
    from tefq.spark import run as spark_run

    doc = load_text(tmp_path, QUERIES["sliding-count"])
    first = [(t, f"<{NS}u1>", f"<{NS}join>", f"<{NS}ch1>") for t in range(0, 20_000, 500)]
    second = [(15_000, f"<{NS}late>", f"<{NS}join>", f"<{NS}ch2>"), (30_000, f"<{NS}u2>", f"<{NS}join>", f"<{NS}ch1>")]
    write_files(first + second, tmp_path / "log", [len(first)])
    got = spark_run(doc, [str(tmp_path / "log")], spark=spark, progress=False, max_files_per_trigger=1)
    assert got.metrics.late_events == 1
    late_rows = {t for t, cells in got.results[0].rows if cells[0] == f"<{NS}ch2>"}
    assert late_rows == {20_000}  # 15 s is in the windows closing at 16, 18, 20 s; only 20 s was still open


def key_bucket(spark, term: str, buckets: int = 2, ingest: str = "rows") -> int:
    """The join-key bucket `term` goes to: on the rows path Spark's (runtime/columns.project_windowed's
    xxhash64), on the direct path its SipHash code's (runtime/windowed_rows.term_buckets)."""
    if ingest == "direct":
        import numpy as np
        import pyarrow as pa

        from tefq.spark.runtime.columnar import term_codes

        return int(term_codes(pa.array([term])).view(np.uint64)[0] % np.uint64(buckets))
    from pyspark.sql import functions as F

    return spark.range(1).select(F.pmod(F.xxhash64(F.lit(term)), F.lit(buckets))).first()[0]


@pytest.mark.parametrize("ingest", ["rows", "direct"])
def test_late_events_are_summed_over_the_join_key_buckets(spark, tmp_path, ingest: str) -> None:
    """Late elements of two channels that live in two buckets: the run counts both (each bucket
    counts its own; the driver adds them up), on either ingestion path."""
    from tefq.spark import run as spark_run

    channels = [f"<{NS}ch{i}>" for i in range(20)]
    by_bucket = {key_bucket(spark, c, ingest=ingest): c for c in channels}
    assert set(by_bucket) == {0, 1}
    doc = load_text(tmp_path, QUERIES["sliding-count"])
    first = [(t, f"<{NS}u1>", f"<{NS}join>", c) for t in range(0, 20_000, 500) for c in by_bucket.values()]
    second = [(15_000, f"<{NS}late>", f"<{NS}join>", c) for c in by_bucket.values()] + \
             [(30_000, f"<{NS}u2>", f"<{NS}join>", c) for c in by_bucket.values()]
    write_files(first + second, tmp_path / "log", [len(first)])
    got = spark_run(doc, [str(tmp_path / "log")], spark=spark, progress=False, max_files_per_trigger=1,
                    ingest=ingest)
    assert got.metrics.late_events == 2
    assert got.metrics.extra["late_events_by_stream"] == {str(tmp_path / "log"): 2}
