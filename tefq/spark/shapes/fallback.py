"""The fallback: an aggregate query no other planner runs, on one bucket holding every element
read, the oracle evaluating the ticks that became final in each micro-batch (planning/fallback.py,
operators/fallback.py). Not scalable: the other shapes exist so that few queries land here."""
from __future__ import annotations

from dataclasses import replace

from tefq.plan.logical import Document
from tefq.spark.operators.fallback import make_fallback_operator
from tefq.spark.output import Collector
from tefq.spark.planning.fallback import FallbackPlan
from tefq.spark.runtime.encodings import ElementRows
from tefq.spark.shapes.shape import Shape, Simulation


def plan(doc, i: int, options, refused) -> FallbackPlan:
    """What the planners asked in turn refused (`refused` says why, in its EXPLAIN)."""
    q = doc.queries[i]
    return FallbackPlan(q.name, i, tuple(p.name for p in q.select), q.every_ms, refused.reason)


def project(df, plan: FallbackPlan, run):
    from tefq.spark.runtime.columns import project_elements  # deferred: planning and EXPLAIN import no pyspark

    return project_elements(df)


def simulation_fallback(strategy: str, window_ms: int):
    """Simulated shapes the simulation operator does not cover (UC3): the oracle-side simulation
    (`tefq.simulate.run`) evaluates, on one bucket holding every element read, the windows that
    became final in each micro-batch. O(input) per micro-batch: correct, not scalable. Its
    bindings are those of the run at the flush."""
    def evaluate(doc: Document, elements, background, t0: int):
        from tefq.simulate import run as simulate_run  # deferred: in the worker, only for a simulated run

        return simulate_run(doc, elements, strategy, window_ms, background, t0)

    return evaluate


def operator(doc: Document, plan: FallbackPlan, run, evaluate=None):
    """The bucket's operator: every element read, the oracle (or `evaluate`) over them; the
    background's triples ship in its closure."""
    triples = run.background.triples if run.background is not None else None
    return make_fallback_operator(doc, plan.query_index, plan.every_ms, run.settings, triples, evaluate)


def simulated_operator(sim_doc: Document, plan: FallbackPlan, strategy: str, run):
    return operator(sim_doc, plan, run, simulation_fallback(strategy, plan.every_ms))


def simulated_explain(p: FallbackPlan, strategy: str) -> str:
    head = (f"SimulatedFacts {strategy} on Spark (single bucket, oracle-side simulation tefq.simulate per"
            " micro-batch: not scalable)")
    return head + "\n" + replace(p, evaluator="tefq.simulate runs the windows").explain()


FALLBACK = Shape(
    "fallback", FallbackPlan, plan, project, ElementRows,
    operator=operator,
    collector=lambda plan: Collector((), (), (), (), plan.query, plan.columns),
    simulation=Simulation("oracle-simulation fallback", simulated_operator, simulated_explain))
