"""The general plan on real Spark (issue 27 phase 2): for each query shape the issue lists, the
Spark engine's rows equal the oracle's on hypothesis streams (ties, tick boundaries, rejoins,
duplicates, open facts) cut into files read one or two per micro-batch, on 2 buckets (one shape
each on 1, 3 and 4: tests/reliability/test_rel_general.py runs every shape on each); late data
with and without --lateness; a followed directory. The shapes and the oracle come from the
Spark-free kernel tests (tests/spark/kernels/test_general_kernels.py). One SparkSession for the module; few
examples (each is a full streaming run)."""
from __future__ import annotations

import os
import time

import pytest
from hypothesis import given, strategies as st

from tefq.spark.planning.general import GeneralPlan
from tefq.spark.shapes import explain_physical, plan_document
from tests.support.general_shapes import BACKGROUND, PROGRAMS, SHAPES, document, iri, oracle_rows, streams
from tests.support.general_spark import (EXAMPLES, ISSUE_SHAPES, SPARK_SETTINGS, background_file,
                                         check_against_the_oracle, oracle_metrics, spark_rows)

pytestmark = pytest.mark.spark


ON_FACT_OPERATOR = {"fact pattern, SUM DURATION"}  # the specialised fact operator runs it already


@pytest.mark.parametrize("shape", ISSUE_SHAPES)
def test_no_shape_of_the_issue_falls_back(shape):
    """Each shape runs on the general plan (or a specialised operator that accepted it first)."""
    doc = document(SHAPES[shape])
    (plan,) = plan_document(doc, 2)
    text = explain_physical(doc, 2)
    assert "fallback" not in text
    if shape not in ON_FACT_OPERATOR:
        assert isinstance(plan, GeneralPlan) and "general aggregate" in text and "GeneralOperator" in text


def test_the_fallback_names_what_the_general_plan_refused():
    doc = document(SHAPES["genre"].replace("?genre AS G", "?E AS G").replace("AGGREGATE ?genre,", "AGGREGATE ?E,")
                   .replace("(CURRENT ?user :watching ?channel)", "?user :watching ?channel [?S,?E]")
                   .replace("GROUP BY ?genre", "GROUP BY ?E"))
    text = explain_physical(doc, 2)
    assert "general fallback" in text and "general plan: GROUP BY an interval end" in text


@pytest.mark.parametrize("shape", ISSUE_SHAPES)
def test_spark_rows_equal_the_oracle(spark, shape):
    # Kept as written first (not through check_against_the_oracle): hypothesis derives the
    # derandomized examples from this source, and these are the examples this test has always run.
    @SPARK_SETTINGS
    @given(elements=streams(shape in PROGRAMS), cuts=st.lists(st.integers(1, 20), max_size=3),
           per_batch=st.sampled_from([1, 2]))
    def run(elements, cuts, per_batch):
        doc = document(SHAPES[shape])
        in_time = sorted(elements, key=lambda e: e[0])  # arrival in time order: nothing is late
        got = spark_rows(spark, doc, in_time, cuts, max_files_per_trigger=per_batch)
        assert got.results[0].rows == oracle_rows(doc, in_time)
        want = oracle_metrics(doc, in_time)
        for k in ("events_in", "facts_created", "facts_closed", "unmatched_until", "late_events"):
            assert getattr(got.metrics, k) == getattr(want, k), k
    run()


BUCKET_CASES = [(1, "WHILE with a background pattern"), (3, "two facts joined"),  # partial exact sums merged
                (4, "no GROUP BY: the implicit group")]  # integer sums, MAX and empty ticks merged


@pytest.mark.parametrize("buckets,shape", BUCKET_CASES)
def test_spark_rows_equal_the_oracle_on_1_3_and_4_buckets(spark, buckets, shape):
    """One shape per bucket count (every shape on each: tests/reliability/test_rel_general.py)."""
    (plan,) = plan_document(document(SHAPES[shape]), buckets)
    assert isinstance(plan, GeneralPlan) and plan.buckets == buckets
    check_against_the_oracle(spark, shape, buckets, EXAMPLES or 1)


@pytest.mark.parametrize("cuts", [[], [2]])  # the copies in one file, in two micro-batches
def test_a_duplicate_of_an_element_nothing_matches_is_read_once(spark, cuts):
    """A stream is a set: the same element twice at one ms is one event read, matched or not
    (here a join to :c2, which the SINCE clause's FILTER excludes)."""
    doc = document(SHAPES["SINCE/UNTIL with a background BGP and FILTER"])
    j = iri("join")
    elements = [(5, iri("u0"), j, iri("c0")), (10, iri("u2"), j, iri("c2")), (10, iri("u2"), j, iri("c2"))]
    got = spark_rows(spark, doc, elements, cuts, max_files_per_trigger=1, lateness_ms=100)
    assert got.results[0].rows == oracle_rows(doc, elements)
    assert got.metrics.events_in == oracle_metrics(doc, elements).events_in == 2


@pytest.mark.parametrize("ingest", ["rows", "auto"])  # hashed by Spark SQL / from the file's codes
def test_a_duplicate_of_an_element_no_pattern_names_is_read_once(spark, ingest):
    """An element whose predicate no pattern names never reaches a bucket's kernels, but its repeat
    at one ms is still a duplicate: the run reads one element (a scaled differential run found
    events_in one too many)."""
    doc = document(SHAPES["genre"])
    elements = [(5, iri("u0"), iri("join"), iri("c0")), (10, iri("u2"), iri("rates"), iri("c2")),
                (10, iri("u2"), iri("rates"), iri("c2")), (10, iri("u2"), iri("rates"), iri("c1"))]
    got = spark_rows(spark, doc, elements, [], ingest=ingest)
    assert got.results[0].rows == oracle_rows(doc, elements)
    assert got.metrics.events_in == oracle_metrics(doc, elements).events_in == 3
    assert got.metrics.extra["ingest"] == ("rows" if ingest == "rows" else "direct")


def test_out_of_order_within_lateness_gives_the_oracles_rows(spark):
    """Files out of time order, one per micro-batch: with --lateness covering the disorder, every
    element applies in time order (ties in stream order)."""
    doc = document(SHAPES["two facts joined"])
    j, q, s, f = iri("join"), iri("quit"), iri("start"), iri("finish")
    elements = [(10, iri("c0"), s, iri("p0")), (30, iri("u1"), j, iri("c0")), (20, iri("u2"), j, iri("c0")),
                (40, iri("u1"), q, iri("c0")), (25, iri("c0"), f, iri("p0")), (25, iri("c0"), s, iri("p1")),
                (60, iri("u3"), j, iri("c0")), (50, iri("u2"), q, iri("c0"))]
    got = spark_rows(spark, doc, elements, [2, 4, 6], max_files_per_trigger=1, lateness_ms=100)
    assert got.metrics.late_events == 0
    assert got.results[0].rows == oracle_rows(doc, elements)


def test_a_late_copy_is_counted_once_and_not_applied(spark, capsys):
    """A late programme event reaches both buckets (ProgramFact is read whole): counted and warned
    about once, not applied."""
    doc = document(SHAPES["two facts joined"])
    j, s, f = iri("join"), iri("start"), iri("finish")
    first = [(0, iri("c0"), s, iri("p0")), (5, iri("u0"), j, iri("c0")), (12, iri("u1"), j, iri("c0")),
             (95, iri("u2"), j, iri("c1"))]
    late = [(33, iri("c0"), f, iri("p0"))]  # ticks up to 90 were reported already
    got = spark_rows(spark, doc, first + late, [4], max_files_per_trigger=1)
    assert got.metrics.late_events == 1
    assert capsys.readouterr().err.count("late event at 33 ms") == 1
    assert got.results[0].rows == oracle_rows(doc, first)


@pytest.mark.parametrize("ingest", ["rows", "auto"])
def test_a_late_element_no_pattern_names_is_counted_late(spark, ingest, capsys):
    """Spec §6: any element at or before a reported tick is late, matched or not, and counted as on
    the oracle (an element of a predicate no pattern names was dropped uncounted before)."""
    from tefq.oracle import run

    doc = document(SHAPES["genre"])
    j = iri("join")
    first = [(0, iri("u0"), j, iri("c0")), (5, iri("u1"), j, iri("c1")), (95, iri("u2"), j, iri("c1"))]
    late = [(33, iri("u2"), iri("rates"), iri("c2"))]  # ticks up to 90 were reported already
    got = spark_rows(spark, doc, first + late, [3], max_files_per_trigger=1, ingest=ingest)
    assert capsys.readouterr().err.count("late event at 33 ms") == 1
    want = run(doc, first + late, BACKGROUND, 0, lateness_ms=0, batch_sizes=[3, 1]).metrics
    assert got.metrics.late_events == want.late_events == 1
    assert got.metrics.events_in == want.events_in == 3
    assert got.results[0].rows == oracle_rows(doc, first)


def test_follow_reports_the_ticks_the_event_time_passed(spark, tmp_path):
    """--follow on the genre shape: a second file arrives while the run watches; the rows handed
    on are the oracle's rows of the ticks the event time passed."""
    doc = document(SHAPES["genre"])
    j, q = iri("join"), iri("quit")
    first = [(1, iri("u0"), j, iri("c0")), (12, iri("u1"), j, iri("c1")), (20, iri("u2"), j, iri("c2")),
             (33, iri("u0"), q, iri("c0"))]
    second = [(40, iri("u3"), j, iri("c0")), (41, iri("u1"), q, iri("c1")), (70, iri("u2"), q, iri("c2"))]
    d = tmp_path / "in"
    d.mkdir()
    from tefq.io.stream_writers import write_stream
    from tefq.spark import run

    write_stream(first, str(d / "part-0000.tsv"), fmt="tsv")
    seen: list = []

    def on_rows(results) -> None:
        seen.extend(results[0].rows)
        if any(t >= 30 for t, _ in seen) and not (d / "part-0001.tsv").exists():
            write_stream(second, str(d / "part-0001.tsv.tmp"), fmt="tsv")
            os.replace(d / "part-0001.tsv.tmp", d / "part-0001.tsv")

    deadline = time.monotonic() + 300
    run(doc, [str(d)], background_file(str(tmp_path)), spark=spark, buckets=2, progress=False, follow=True,
        on_rows=on_rows, stop=lambda: any(t >= 60 for t, _ in seen) or time.monotonic() > deadline)
    want = [r for r in oracle_rows(doc, first + second) if r[0] < 70]
    got = sorted(seen, key=lambda r: r[0])
    assert got[:len(want)] == want[:len(got)] and max(t for t, _ in got) >= 60
