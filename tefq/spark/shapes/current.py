"""The CURRENT aggregate (UC1, UC2): one event fact, counts and duration sums per tick, bucketed by
the group key (planning/current.py, operators/current.py); simulated on Spark too."""
from __future__ import annotations

from dataclasses import replace

from tefq.spark.operators.current import make_operator
from tefq.spark.operators.simulated import make_simulation_operator
from tefq.spark.output import Collector
from tefq.spark.planning.current import CurrentAggregatePlan, plan_current_aggregate
from tefq.spark.runtime.encodings import CurrentRows
from tefq.spark.shapes.shape import Capabilities, Shape, Simulation

FORMS = {"refresh": "refresh bindings (identity, start)", "refresh-group": "per-group packs",
         "sequence": "state-event sequence"}  # what a simulation carries from window to window


def plan(doc, i: int, options, refused):
    return plan_current_aggregate(doc, doc.queries[i], options.buckets)


def project(df, plan: CurrentAggregatePlan, run):
    from tefq.spark.runtime.columns import project_current  # deferred: planning and EXPLAIN import no pyspark

    return project_current(df, plan)


def simulated_explain(p: CurrentAggregatePlan, strategy: str) -> str:
    head = (f"SimulatedFacts {strategy} on Spark (vectorised, per bucket): windows ({p.every_ms} ms) in order;"
            f" each restores the facts from the carried {FORMS[strategy]}, applies its events, reports at"
            " tau, carries on")
    return head + "\n" + replace(p, operator="SimulationOperator (replaces the fact operator)").explain()


CURRENT = Shape(
    "current", CurrentAggregatePlan, plan, project, CurrentRows,
    operator=lambda doc, plan, run: make_operator(plan, run.settings),
    collector=lambda plan: Collector(plan.group_vars, plan.projections, (), plan.having, plan.query, plan.columns),
    capabilities=Capabilities(columnar=lambda plan: plan.operator == "FactOperator"),
    simulation=Simulation(
        "vectorised",
        lambda sim_doc, plan, strategy, run: make_simulation_operator(plan, strategy, run.settings),
        simulated_explain))
