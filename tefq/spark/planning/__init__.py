"""Spark physical planning, Spark-free: one planner per query shape, each plan renders its EXPLAIN.

`plan_document` picks a plan per query: `CurrentAggregatePlan` (current.py), `FactAggregatePlan`
(fact.py), `GeneralPlan` (general.py), `FallbackPlan` (fallback.py), and one `WindowedPlan` (windowed.py) for all C-SPARQL queries.
"""
from tefq.spark.planning.current import CurrentAggregatePlan
from tefq.spark.planning.document import explain_physical, plan_document
from tefq.spark.planning.fact import FactAggregatePlan
from tefq.spark.planning.fallback import FallbackPlan
from tefq.spark.planning.general import GeneralPlan
from tefq.spark.planning.windowed import WindowedPlan

__all__ = ["CurrentAggregatePlan", "FactAggregatePlan", "FallbackPlan", "GeneralPlan", "WindowedPlan", "explain_physical",
           "plan_document"]
