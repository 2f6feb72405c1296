"""The document planner: one plan per query, chosen by asking the planners in turn — the
current-aggregate operator, the fact-aggregate operator, the general vectorised plan
(planning/general.py), then the fallback, which keeps only what the general plan refuses. A
planner answers with its plan or a `Refusal` saying why; no exceptions steer the choice."""
from __future__ import annotations

import os

from tefq.plan.logical import AggregateQuery, Document, WindowedQuery
from tefq.spark.planning.common import Refusal
from tefq.spark.planning.current import CurrentAggregatePlan, plan_current_aggregate
from tefq.spark.planning.fact import FactAggregatePlan, plan_fact_aggregate
from tefq.spark.planning.fallback import FallbackPlan
from tefq.spark.planning.general import GeneralPlan, plan_general
from tefq.spark.planning.windowed import WindowedPlan, plan_windowed

SIMULATION_REFUSAL = Refusal("derived facts, fact patterns and WHILE in a simulation", suffix="")


def plan_query(doc: Document, i: int, buckets: int, fallback: bool, fact_aggregates: bool, merge_partials: bool,
               general: bool = True):
    """The plan of aggregate query `i`: the first planner that accepts it, else the fallback."""
    q = doc.queries[i]
    plan = plan_current_aggregate(doc, q, buckets)
    if isinstance(plan, Refusal):  # derived facts, fact patterns without CURRENT, WHILE
        plan = plan_fact_aggregate(doc, q, buckets, merge_partials) if fact_aggregates else SIMULATION_REFUSAL
    if not isinstance(plan, Refusal):
        return plan
    if general and fact_aggregates:  # the simulations have no simulated form of the general operator
        chosen = general_plan(doc, q, buckets, merge_partials)
        if not isinstance(chosen, Refusal):
            return chosen
        plan = Refusal(f"{plan.reason}; general plan: {chosen.what}", chosen.line, chosen.column, chosen.suffix)
    if not fallback:
        raise plan.error()
    return FallbackPlan(q.name, i, tuple(p.name for p in q.select), q.every_ms, plan.reason)


def general_plan(doc: Document, q, buckets: int, merge_partials: bool) -> GeneralPlan | Refusal:
    """The general plan; without `merge_partials` one that needs no driver-side merge (else one bucket)."""
    chosen = plan_general(doc, q, buckets)
    if not merge_partials and isinstance(chosen, GeneralPlan) and chosen.split is not None and chosen.split.merge:
        chosen = plan_general(doc, q, 1)
    return chosen


def plan_document(doc: Document, buckets: int = 8, fallback: bool = True, fact_aggregates: bool = True,
                  merge_partials: bool = True, general: bool | None = None) -> list:
    """One plan per query (windowed queries share one). `fact_aggregates=False` sends what the
    fact-aggregate and general operators would run to the fallback instead (the simulations have no
    simulated form of them); `merge_partials=False`: no routing that leaves the driver
    to add the buckets' partial aggregates (planning/fact.Routing.merge); `general=False`: what
    the specialised operators refuse goes to the fallback (default: TEFQ_SPARK_GENERAL=0 says so,
    for bench/general_spark.py's same-data comparison)."""
    if general is None:
        general = os.environ.get("TEFQ_SPARK_GENERAL", "1") != "0"
    plans: list = []
    windowed = None
    for i, q in enumerate(doc.queries):
        if isinstance(q, WindowedQuery):  # all of them run in one operator (operators/windowed.py)
            if windowed is None:
                windowed = plan_windowed(doc, buckets)
                plans.append(windowed)
        elif isinstance(q, AggregateQuery):
            plans.append(plan_query(doc, i, buckets, fallback, fact_aggregates, merge_partials, general))
    return plans


def shuffle_partitions(cores: int) -> int:
    """The session's shuffle partitions, and so the buckets a plan is offered: one per core (each
    partition of a stateful operator costs every micro-batch a task, a state store commit and a
    sink file: docs/spark.md "Measured"), at least 2; TEFQ_SPARK_PARTITIONS overrides."""
    return int(os.environ.get("TEFQ_SPARK_PARTITIONS") or max(2, cores))


def explain_physical(doc: Document, buckets: int | None = None, general: bool | None = None) -> str:
    """The physical plans of `doc`, with the buckets an embedded run on this machine is offered."""
    nb = buckets or shuffle_partitions(os.cpu_count() or 2)
    return "\n\n".join(p.explain() + "\n" + ingestion(p) for p in plan_document(doc, nb, general=general)) + "\n"


def reads_columnar(plan) -> bool:
    """Whether the plan's shape can take the columnar and direct ingestion paths
    (runtime/columnar.py): the vectorised CURRENT aggregate, the fact aggregate, the general
    aggregate and the windowed plan, whose mappers they reproduce."""
    return (isinstance(plan, CurrentAggregatePlan) and plan.operator == "FactOperator"
            or isinstance(plan, (FactAggregatePlan, GeneralPlan, WindowedPlan)))


def ingestion(plan) -> str:
    """Which ingestion path a run takes for this plan (`tefq run --ingest`, runtime/columnar.py)."""
    columnar = ("    columnar: binaryFile path source (path only) [maxFilesPerTrigger] -> MapInArrow per file: "
                "pyarrow reads it once (read amplification 1), distinct terms checked as the oracle does, "
                "SipHash codes (bucket = their hash mod B), clause match, tie order, heartbeats -> the same "
                "Exchange and operator")
    if reads_columnar(plan):
        direct = ("    direct: binaryFile path source (path only) [maxFilesPerTrigger] -> Generate: each path once "
                  "per bucket -> Exchange (paths only) -> each bucket's operator reads every file with pyarrow and "
                  f"keeps its own rows (read amplification = {plan.buckets} buckets; no event row crosses the JVM)")
        return ("  Ingestion (--ingest auto): direct when every --stream holds Parquet files (text streams are staged "
                "as Parquet first) and the run is bounded, else rows (the Project over the FileStreamSource above)"
                f"\n{direct}\n{columnar}")
    return ("  Ingestion: rows (columnar ingestion covers CURRENT, fact, general aggregates and windowed queries "
            "only; --ingest columnar and direct are refused)")
