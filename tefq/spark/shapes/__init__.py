"""The plan kinds, one `Shape` each (tefq/spark/shapes/<kind>.py), and the registry the engine asks:
`plan_document` picks each query's plan by asking the planners in turn, `shape_of(plan)` is the
shape of a plan wherever the engine's work differs by kind. Adding a plan kind: its shape file and
a row below (ASKED_IN_TURN for an aggregate query's planner, in the order it is to be asked).

The planners answer with a plan or a `Refusal` saying why (no exceptions steer the choice): the
current aggregate, then the fact aggregate, then the general plan; what they all refuse runs on
the fallback. All windowed queries of a document share one windowed plan."""
from __future__ import annotations

import os

from tefq.plan.logical import AggregateQuery, Document, WindowedQuery
from tefq.spark.planning.common import Refusal, shuffle_partitions
from tefq.spark.shapes.current import CURRENT
from tefq.spark.shapes.fact import FACT
from tefq.spark.shapes.fallback import FALLBACK
from tefq.spark.shapes.general import GENERAL
from tefq.spark.shapes.shape import PlanOptions, Shape
from tefq.spark.shapes.windowed import WINDOWED

ASKED_IN_TURN = (CURRENT, FACT, GENERAL)  # an aggregate query's planners, in order
SHAPES = ASKED_IN_TURN + (FALLBACK, WINDOWED)
BY_PLAN = {shape.plan_type: shape for shape in SHAPES}


def shape_of(plan) -> Shape:
    """The shape of a plan made by `plan_document` (or by a shape's planner)."""
    return BY_PLAN[type(plan)]


def collector_of(plan):
    """The driver's decoder of the plan's sink records."""
    return shape_of(plan).collector(plan)


def plan_query(doc: Document, i: int, options: PlanOptions, fallback: bool = True):
    """The plan of aggregate query `i`: the first planner that accepts it, else the fallback
    (without `fallback`: exit 2 naming what the planners refused)."""
    refused = None
    for shape in ASKED_IN_TURN:
        answer = shape.plan(doc, i, options, refused)
        if answer is None:
            continue
        if not isinstance(answer, Refusal):
            return answer
        refused = answer
    if not fallback:
        raise refused.error()
    return FALLBACK.plan(doc, i, options, refused)


def plan_document(doc: Document, buckets: int = 8, fallback: bool = True, fact_aggregates: bool = True,
                  merge_partials: bool = True, general: bool | None = None, background: bool = False) -> list:
    """One plan per query (windowed queries share one). `fact_aggregates=False` sends what the
    fact-aggregate and general operators would run to the fallback instead (the simulations have no
    simulated form of them); `merge_partials=False`: no routing that leaves the driver
    to add the buckets' partial aggregates (planning/fact.FactRouting.merge); `general=False`: what
    the specialised operators refuse goes to the fallback (default: TEFQ_SPARK_GENERAL=0 says so,
    for bench/general_spark.py's same-data comparison); `background`: the run joins background
    knowledge."""
    if general is None:
        general = os.environ.get("TEFQ_SPARK_GENERAL", "1") != "0"
    options = PlanOptions(buckets, fact_aggregates, merge_partials, general, background)
    plans: list = []
    windowed = None
    for i, q in enumerate(doc.queries):
        if isinstance(q, WindowedQuery):  # all of them run in one operator (operators/windowed.py)
            if windowed is None:
                windowed = WINDOWED.plan(doc, i, options, None)
                plans.append(windowed)
        elif isinstance(q, AggregateQuery):
            plans.append(plan_query(doc, i, options, fallback))
    return plans


def follow_refusal(doc: Document) -> str | None:
    """Why `--follow` cannot run the document (a query no shape of its kind follows), else None."""
    for q in doc.queries:
        refusals = [s.capabilities.follow for s in SHAPES if isinstance(q, s.query_type)]
        if refusals and all(refusals):
            return refusals[0]
    return None


def reads_columnar(plan) -> bool:
    """Whether the plan's shape can take the columnar and direct ingestion paths (runtime/columnar.py)."""
    return shape_of(plan).capabilities.columnar(plan)


def explain_physical(doc: Document, buckets: int | None = None, general: bool | None = None) -> str:
    """The physical plans of `doc`, with the buckets an embedded run on this machine is offered."""
    nb = buckets or shuffle_partitions(os.cpu_count() or 2)
    return "\n\n".join(p.explain() + "\n" + ingestion(p) for p in plan_document(doc, nb, general=general)) + "\n"


def ingestion(plan) -> str:
    """Which ingestion path a run takes for this plan (`tefq run --ingest`, runtime/columnar.py)."""
    columnar = ("    columnar: binaryFile path source (path only) [maxFilesPerTrigger] -> MapInArrow per file: "
                "pyarrow reads it once (read amplification 1), distinct terms checked as the oracle does, "
                "SipHash codes (bucket = their hash mod B), clause match, tie order, heartbeats -> the same "
                "Exchange and operator")
    if reads_columnar(plan):
        direct = ("    direct: binaryFile path source (path only) [maxFilesPerTrigger] -> Generate: each path once "
                  "per bucket -> Exchange (paths only) -> each bucket's operator keeps its own rows of every file: "
                  "on a local master the first to take a file reads and codes it with pyarrow for every bucket and "
                  "leaves the others their parts (read amplification 1), on a cluster each reads every file (read "
                  f"amplification = {plan.buckets} buckets); no event row crosses the JVM")
        return ("  Ingestion (--ingest auto): direct when every --stream holds Parquet files (text streams are staged "
                "as Parquet first) or every --stream is a Redis stream (its micro-batches' ID ranges in place of "
                "paths), bounded or --follow, else rows (the Project over the source above: Redis beside files, "
                "--ingest rows)"
                f"\n{direct}\n{columnar}")
    return ("  Ingestion: rows (columnar ingestion covers CURRENT, fact, general aggregates and windowed queries "
            "only; --ingest columnar and direct are refused)")


__all__ = ["SHAPES", "Shape", "collector_of", "explain_physical", "follow_refusal", "plan_document", "reads_columnar",
           "shape_of"]
