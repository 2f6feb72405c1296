"""The Spark physical planner: operator choice, partitioning and unsupported shapes (no Spark)."""
from __future__ import annotations


import pytest

from tefq.errors import TefqError
from tefq.plan.logical import StreamWindow, WindowedQuery
from tefq.spark.planning.current import CurrentAggregatePlan
from tefq.spark.planning.fallback import FallbackPlan
from tefq.spark.shapes import explain_physical, plan_document
from tests.support import spark_docs as sd


def test_uc1_uc2_are_vectorised_and_bucketed_by_the_group_key():
    for doc in (sd.uc1(), sd.uc2()):
        (plan,) = plan_document(doc, 4)
        assert isinstance(plan, CurrentAggregatePlan)
        assert plan.group_vars == ("channel",) and plan.identity == ("user", "channel")
        assert plan.buckets == 4
        text = explain_physical(doc, 8)
        assert "hashpartitioning(bucket = xxhash64(?channel) mod 8)" in text
        assert text == explain_physical(doc, 8)  # deterministic


def test_uc2_aggregates_are_planned_from_duration_of_the_interval():
    (plan,) = plan_document(sd.uc2(), 2)
    assert [(a.alias, a.op) for a in plan.aggregates] == [("TotalTime", "sum_duration"), ("Count", "count")]


def test_uc3_runs_vectorised_on_the_fact_operator_bucketed_by_user():
    from tefq.spark.planning.fact import FactAggregatePlan

    (plan,) = plan_document(sd.uc3(), 2)
    assert isinstance(plan, FactAggregatePlan) and plan.buckets == 2
    assert plan.while_ is not None and plan.while_.shared == ("show",)
    text = explain_physical(sd.uc3())
    assert "FactAggregateOperator" in text and "Exchange hashpartitioning(bucket = xxhash64(?user)" in text
    assert "general fallback" not in text


def test_shapes_beyond_the_fact_operator_fall_back_and_say_why():
    from dataclasses import replace

    from tefq.plan.logical import WherePattern

    doc = sd.uc3()
    q = doc.queries[0]
    two = replace(q, where=q.where + (WherePattern("background", q.where[0].pattern),))
    # without the general plan (issue 27: it runs this shape, tests/spark/test_spark_general.py)
    (plan,) = plan_document(replace(doc, queries=(two,)), 4, general=False)
    assert isinstance(plan, FallbackPlan) and plan.buckets == 1
    assert "WHERE other than a single fact pattern" in plan.reason
    assert "general fallback" in explain_physical(replace(doc, queries=(two,)), general=False)


def test_windowed_queries_get_one_windowed_plan():
    from dataclasses import replace

    from tefq.spark.planning.windowed import WindowedPlan

    w = WindowedQuery("w", False, "select", (StreamWindow(None, 10_000, 10_000),), (), "SELECT * WHERE { ?s ?p ?o }")
    doc = replace(sd.uc1(), queries=(w, replace(w, name="v")))
    (plan,) = plan_document(doc)
    assert isinstance(plan, WindowedPlan) and plan.queries == ("w", "v") and plan.predicates is None
