"""DISTINCT counts values, and two spellings of one value are two terms with two codes: the plans
that count or split by code take a DISTINCT variable only when it can never bind a literal
(tefq.spark.planning.literals); the others go to the general kernels, which compare values.
Spark-free: the planners' choices, and the kernels against the oracle on the spellings that once
gave 3 for 2 (a CI run's hypothesis example: `"2024-01-01T00:00:00Z"` and `"2024-01-01T01:00:00+01:00"`
in two of three buckets)."""
from __future__ import annotations

import pytest

import tefq
from tefq.spark.planning.current import CurrentAggregatePlan
from tefq.spark.planning.fact import FactAggregatePlan
from tefq.spark.planning.general import GeneralPlan, plan_general
from tefq.spark.planning.literals import fact_column_literal_free
from tefq.spark.shapes import plan_document
from tests.support.differential import FACT, PREFIX, check
from tests.support.term_streams import X, typed

EVERY = 'EVERY "PT1S"^^xsd:duration'
REVERSED = "CONSTRUCT FACT R {?v :of ?g .} {?g :has ?v}\n"  # an object in a subject position


def document(text: str):
    return tefq.compile(PREFIX + text).document()


@pytest.mark.parametrize("text, kind", [
    (FACT + f"SELECT ?v AS V, ?n AS N (AGGREGATE ?v, COUNT DISTINCT ?g AS ?n WHERE (CURRENT ?g :has ?v) GROUP BY ?v {EVERY})",
     CurrentAggregatePlan),
    (FACT + f"SELECT ?g AS G, ?n AS N (AGGREGATE ?g, COUNT DISTINCT ?v AS ?n WHERE (CURRENT ?g :has ?v) GROUP BY ?g {EVERY})",
     GeneralPlan),
    (FACT + f"SELECT ?v AS V, ?n AS N (AGGREGATE ?v, COUNT DISTINCT ?g AS ?n WHERE ?g :has ?v [?S,?E] GROUP BY ?v {EVERY})",
     FactAggregatePlan),
    (FACT + f"SELECT ?g AS G, ?n AS N (AGGREGATE ?g, COUNT DISTINCT ?v AS ?n WHERE ?g :has ?v [?S,?E] GROUP BY ?g {EVERY})",
     GeneralPlan),
    # a derived fact's subject that came from an object may be a literal
    (FACT + REVERSED + f"SELECT ?g AS G, ?n AS N (AGGREGATE ?g, COUNT DISTINCT ?v AS ?n WHERE ?v :of ?g [?S,?E] GROUP BY ?g {EVERY})",
     GeneralPlan),
    (FACT + REVERSED + f"SELECT ?v AS V, ?n AS N (AGGREGATE ?v, COUNT DISTINCT ?g AS ?n WHERE ?v :of ?g [?S,?E] GROUP BY ?v {EVERY})",
     FactAggregatePlan),
])
def test_counting_codes_only_where_no_literal_can_be_counted(text, kind):
    doc = document(text)
    assert [type(p) for p in plan_document(doc, 3)] == [kind]


def test_fact_columns_follow_their_bindings():
    doc = document(FACT + REVERSED + "CONSTRUCT FACT B {?g :tagged ?t .} (SINCE ?g :tag ?x . ?x :label ?t)\n"
                   f"SELECT ?g AS G (AGGREGATE ?g, COUNT ?g AS ?n WHERE (CURRENT ?g :has ?v) GROUP BY ?g {EVERY})")
    assert [fact_column_literal_free(doc, "F", c) for c in (0, 1)] == [True, False]
    assert [fact_column_literal_free(doc, "R", c) for c in (0, 1)] == [False, True]  # R's identity: ?v, ?g
    # ?t is bound where only objects bind it: the background could hold literals there
    assert [fact_column_literal_free(doc, "B", c) for c in (0, 1)] == [True, False]


def test_a_merging_split_by_a_variable_that_may_bind_a_literal_is_by_value():
    doc = document(FACT + "SELECT ?v AS V, ?n AS N, ?s AS S (AGGREGATE ?v, COUNT DISTINCT ?g AS ?n, SUM ?v AS ?s"
                   f" WHERE (CURRENT ?g :has ?v) GROUP BY ?v {EVERY})")
    split = plan_general(doc, doc.queries[0], 3).split
    assert (split.var, split.merge, split.by_value) == ("g", True, False)  # subjects: their codes are their values
    doc = document(FACT + "SELECT ?g AS G, ?n AS N, ?s AS S (AGGREGATE ?g, COUNT DISTINCT ?v AS ?n, SUM ?v AS ?s"
                   f" WHERE (CURRENT ?g :has ?v) GROUP BY ?g {EVERY})")
    split = plan_general(doc, doc.queries[0], 3).split
    assert (split.var, split.merge, split.by_value) == ("v", True, True)
    assert "by value" in plan_general(doc, doc.queries[0], 3).partitioning


def test_spellings_of_one_value_share_a_bucket():
    from tefq.spark.kernels.general.coding import TermDictionary, bucket_of, encode, value_buckets

    terms = SPELLINGS + [f"<{X}n{i}>" for i in range(20)]
    codes = encode(terms)
    dictionary = TermDictionary()
    dictionary.add(codes, terms)
    for buckets in (2, 3, 7):
        got = value_buckets(codes, buckets, dictionary)
        assert len(set(got[:2])) == 1 and len(set(got[2:5])) == 1 and len(set(got[5:7])) == 1
        assert (got[7:] == bucket_of(codes[7:], buckets)).all()  # IRIs: their own codes' buckets


SPELLINGS = [typed("2024-01-01T00:00:00Z", "dateTime"), typed("2024-01-01T01:00:00+01:00", "dateTime"),
             typed("1", "integer"), typed("01", "integer"), typed("+1", "integer"), typed("2.5", "decimal"),
             typed("2.50", "decimal")]


@pytest.mark.parametrize("name", ["numbers of a fact", "distinct current objects", "distinct objects of facts"])
@pytest.mark.parametrize("buckets", [1, 3])
def test_spellings_of_one_value_count_once(name, buckets):
    rows = [(1000 * i, f"<{X}n{i % 2}>", f"<{X}set>", o) for i, o in enumerate(SPELLINGS)]
    check("general", name, 1000, [[rows[:3], rows[3:]]], None, buckets)
