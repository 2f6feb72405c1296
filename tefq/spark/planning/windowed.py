"""The windowed plan: every C-SPARQL (spec §8) query of a document, run by one stateful operator
(`tefq.spark.operators.windowed`). Planning parses every query: syntax errors and unsupported algebra fail here."""
from __future__ import annotations

import os
from dataclasses import dataclass

from tefq.plan.logical import Document
from tefq.spark.planning.nodes import SINK, SOURCE

SMALL_WINDOW = 1000  # relevant triples below which a window goes to rdflib (measured: docs/spark-windowed.md)


def small_window() -> int:
    """SMALL_WINDOW, or TEFQ_SMALL_WINDOW (tests set 0 to run every window vectorised on Spark)."""
    return int(os.environ.get("TEFQ_SMALL_WINDOW", SMALL_WINDOW))


@dataclass(frozen=True)
class WindowedPlan:
    """Every windowed query of a document, run by one stateful operator."""

    queries: tuple[str, ...]
    windows: tuple[str, ...]  # per query, for explain
    predicates: frozenset[str] | None
    feedback: tuple[str, ...]  # REGISTER STREAM names
    query_columns: tuple[tuple[str, ...], ...] = ()  # per query, its result columns
    query: str = "windowed"  # the pipeline's name (its directory under the checkpoint)
    buckets: int = 1  # feedback orders the windows: one bucket

    def explain(self) -> str:
        preds = "any" if self.predicates is None else ", ".join(sorted(self.predicates))
        return "\n".join([
            f"SparkQuery {', '.join(self.queries)}: windowed (C-SPARQL / RSP-QL, spec §8) — report at window close",
            SINK,
            "  WindowedOperator: applyInPandasWithState, one key (windows in close order:"
            f" REGISTER STREAM feedback {', '.join(self.feedback) or '(none)'}); state = open windows'"
            " elements + fed-back triples; at event time >= close: vectorised SPARQL algebra per window"
            f" (tefq.relational.sparql; < {small_window()} triples: rdflib)",
            *(f"    {name}: {w}" for name, w in zip(self.queries, self.windows)),
            "  Exchange SinglePartition (bucket 0)",
            "  MapInArrow: per-partition heartbeat (event-time range, element count), bad rows",
            f"  Project: kind, ts, terms only for predicates {preds} (others: time only)",
            SOURCE])


def plan_windowed(doc: Document) -> WindowedPlan:
    from tefq.relational.windowed import IncrementalRun

    run = IncrementalRun(doc)  # parses every query: syntax errors and unsupported algebra fail here
    descr = []
    for q in run.queries:
        descr.append(" + ".join(f"FROM STREAM <{w.iri or 'default'}> [RANGE {w.range_ms} ms STEP {w.step_ms} ms]"
                                for w in q.windows) + f" -> {q.form.upper()}, {q.r2s.upper()}")
    return WindowedPlan(tuple(q.name for q in run.queries), tuple(descr), run.predicates,
                        tuple(q.name for q in run.queries if q.registers_stream),
                        tuple(tuple(c) for c in run.columns))
