"""The general plan (issue 27): every other aggregate query the general kernels run, split by a
variable over the buckets (planning/general.py, operators/general.py, kernels/general/)."""
from __future__ import annotations

from dataclasses import replace

from tefq.spark.kernels.general.collector import GeneralCollector
from tefq.spark.operators.base import coded_frames
from tefq.spark.operators.general import make_general_operator
from tefq.spark.planning.common import Refusal
from tefq.spark.planning.general import GeneralPlan, plan_general
from tefq.spark.runtime.encodings import GeneralRows
from tefq.spark.shapes.shape import Capabilities, Shape


def plan(doc, i: int, options, refused: Refusal):
    """Asked when the specialised planners refused; its refusal joins theirs (the fallback names both)."""
    if not (options.general and options.fact_aggregates):  # no simulated form of the general operator
        return None
    q = doc.queries[i]
    chosen = plan_general(doc, q, options.buckets)
    if not options.merge_partials and not isinstance(chosen, Refusal) and chosen.split is not None \
            and chosen.split.merge:  # a plan that needs no driver-side merge: one bucket
        chosen = plan_general(doc, q, 1)
    if isinstance(chosen, Refusal):
        return Refusal(f"{refused.reason}; general plan: {chosen.what}", chosen.line, chosen.column, chosen.suffix)
    return chosen


def project(df, plan: GeneralPlan, run):
    from tefq.spark.runtime.columns import project_general  # deferred: planning and EXPLAIN import no pyspark

    return project_general(df, plan)


def bind(plan: GeneralPlan, run) -> GeneralPlan:
    """The background, which its mapper routes SINCE/UNTIL clauses by and every bucket joins."""
    return replace(plan, background=run.background.triples if run.background is not None else ())


GENERAL = Shape(
    "general", GeneralPlan, plan, project, GeneralRows,
    operator=lambda doc, plan, run: make_general_operator(bind(plan, run), run.settings),
    collector=lambda plan: GeneralCollector((), (), query=plan.query, columns=plan.columns, plan=plan),
    capabilities=Capabilities(columnar=lambda plan: True),
    bind=bind, frames=coded_frames)
