"""Spark physical planning, Spark-free: one planner per query shape, each plan renders its EXPLAIN.

`CurrentAggregatePlan` (current.py), `FactAggregatePlan` (fact.py), `GeneralPlan` (general.py),
`FallbackPlan` (fallback.py), and one `WindowedPlan` (windowed.py) for all C-SPARQL queries of a
document. Which planner is asked when, and what else a kind needs (projection, operator,
collector...), is its shape's: tefq.spark.shapes.
"""
