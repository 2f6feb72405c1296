"""HAVING (spec §4) on real Spark, on every plan kind an aggregate query can get: the current-fact
operator, the fact-aggregate operator (partial aggregates merged on the driver), the general plan
and the fallback; hypothesis streams cut into micro-batches, rows equal to the oracle's. (Windowed
queries carry SPARQL's own HAVING: tests/spark/test_spark_windowed_differential.py.)"""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from tefq.spark.planning.current import CurrentAggregatePlan
from tefq.spark.planning.fact import FactAggregatePlan
from tefq.spark.planning.fallback import FallbackPlan
from tefq.spark.planning.general import GeneralPlan
from tefq.spark.shapes import plan_document
from tests.support.general_shapes import (HAVING_SHAPES, PROGRAMS, SHAPES, USER_FACT, agg, document, oracle_rows,
                                          streams)
from tests.support.general_spark import SPARK_SETTINGS, spark_rows

pytestmark = pytest.mark.spark

CASES = {  # shape -> (query, the plan kind it must get)
    "current fact, by channel": (USER_FACT + agg("?channel AS C, ?n AS N", "?channel, COUNT ?user AS ?n",
                                                  "(CURRENT ?user :watching ?channel)", "?channel",
                                                  "HAVING (?n > 1 || STR(?channel) = \"http://example.org/iptv#c2\")"),
                                 CurrentAggregatePlan),
    "fact pattern, SUM DURATION": (SHAPES["fact pattern, SUM DURATION"].replace(
        "GROUP BY ?channel", "GROUP BY ?channel HAVING (?t > 0.015) (?n >= 1)"), FactAggregatePlan),
    "UC3 (derived fact, WHILE)": (HAVING_SHAPES["UC3 (derived fact, WHILE)"], FactAggregatePlan),
    "genre": (HAVING_SHAPES["genre"], GeneralPlan),
    "no GROUP BY: the implicit group": (HAVING_SHAPES["no GROUP BY: the implicit group"], GeneralPlan),
    "GROUP BY an interval end": (USER_FACT + agg("?E AS E, ?n AS N", "?E, COUNT ?user AS ?n",
                                                 "{ ?user :watching ?channel [?S,?E] }", "?E", "HAVING (?n > 1)"),
                                 FallbackPlan),
}
WITH_PROGRAMS = PROGRAMS  # the cases whose streams carry programme events too


@pytest.mark.parametrize("case", list(CASES))
def test_having_on_spark_equals_the_oracle(spark, case: str) -> None:
    text, kind = CASES[case]
    (plan,) = plan_document(document(text), 2)
    assert isinstance(plan, kind), plan

    @SPARK_SETTINGS
    @given(elements=streams(case in WITH_PROGRAMS), cuts=st.lists(st.integers(1, 20), max_size=3),
           per_batch=st.sampled_from([1, 2]))
    def run(elements, cuts, per_batch):
        doc = document(text)
        in_time = sorted(elements, key=lambda e: e[0])
        got = spark_rows(spark, doc, in_time, cuts, max_files_per_trigger=per_batch)
        assert got.results[0].rows == oracle_rows(doc, in_time)
    run()
