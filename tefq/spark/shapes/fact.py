"""The fact aggregate (UC3): derived facts, fact patterns and WHILE, bucketed by a routing of its
facts (planning/fact.py, operators/fact.py); its operator can also emit the fact table."""
from __future__ import annotations

from tefq.spark.operators.fact import make_fact_operator
from tefq.spark.output import Collector
from tefq.spark.planning.common import Refusal
from tefq.spark.planning.fact import FactAggregatePlan, plan_fact_aggregate
from tefq.spark.runtime.encodings import FactRows
from tefq.spark.runtime.routing import RowRouting
from tefq.spark.shapes.shape import Capabilities, Shape

SIMULATION_REFUSAL = Refusal("derived facts, fact patterns and WHILE in a simulation", suffix="")


def plan(doc, i: int, options, refused):
    if not options.fact_aggregates:  # the simulations have no simulated form of the fact operator
        return SIMULATION_REFUSAL
    return plan_fact_aggregate(doc, doc.queries[i], options.buckets, options.merge_partials)


def project(df, plan: FactAggregatePlan, run):
    from tefq.spark.runtime.fact_rows import project_facts  # deferred: planning and EXPLAIN import no pyspark

    return project_facts(df, plan)


def collector(plan: FactAggregatePlan) -> Collector:
    """A merging routing leaves the buckets' partial aggregates to add (output.merge_partials)."""
    merge = tuple((a.alias, a.op) for a in plan.aggregates) if plan.routing is not None and plan.routing.merge else ()
    return Collector(plan.group_vars, plan.projections, merge, plan.having, plan.query, plan.columns)


FACT = Shape(
    "fact", FactAggregatePlan, plan, project, FactRows,
    operator=lambda doc, plan, run: make_fact_operator(plan, run.settings, run.facts),
    collector=collector,
    capabilities=Capabilities(columnar=lambda plan: True, facts=True),
    routing=lambda plan, only: RowRouting(plan.buckets, only, plan.event_routes))
