"""The windowed plan: every C-SPARQL / RSP-QL (spec §8) query of a document, run by one stateful
operator (`tefq.spark.operators.windowed`) that evaluates all due windows of a micro-batch in one
vectorised pass (tefq.spark.kernels.windowed.multiwindow). Planning parses every query (syntax errors and
unsupported algebra fail here), decides the partitioning (tefq.spark.kernels.windowed.partitioning: by a join
key where sound, else one key) and computes each BGP's static join order for `explain`."""
from __future__ import annotations

import os
from dataclasses import dataclass

from tefq.plan.logical import Document
from tefq.spark.kernels.windowed.algebra import bgp_nodes
from tefq.spark.kernels.windowed.join_order import static_order
from tefq.spark.kernels.windowed.multiwindow_incremental import IncrementalBatchedRun
from tefq.spark.kernels.windowed.partitioning import JoinKey, WindowSlabs, join_key, window_slabs
from tefq.spark.kernels.windowed.window_batches import SMALL_WINDOW
from tefq.spark.planning.nodes import SINK, SOURCE


def small_window() -> int:
    """The rdflib threshold of a lone due window (tefq.spark.kernels.windowed.window_batches.SMALL_WINDOW), or
    TEFQ_SMALL_WINDOW (tests set 0 to run every window vectorised on Spark)."""
    return int(os.environ.get("TEFQ_SMALL_WINDOW", SMALL_WINDOW))


@dataclass(frozen=True)
class WindowedPlan:
    """Every windowed query of a document, run by one stateful operator. `key`: the join key the
    elements are hash-partitioned by (over `buckets` buckets); else `slabs`: the windows are split
    over the buckets, each element sent where its windows are evaluated; else one bucket."""

    queries: tuple[str, ...]
    windows: tuple[str, ...]  # per query, for explain
    predicates: frozenset[str] | None
    feedback: tuple[str, ...]  # REGISTER STREAM names
    query_columns: tuple[tuple[str, ...], ...] = ()  # per query, its result columns
    window_order: tuple[bool, ...] = ()  # per query: ORDER BY orders each window's rows
    query: str = "windowed"  # the pipeline's name (its directory under the checkpoint)
    buckets: int = 1
    key: JoinKey | None = None
    slabs: WindowSlabs | None = None
    details: tuple[tuple[str, ...], ...] = ()  # per query: partitioning, state, rounds, join orders
    t0: int = 0  # the run's (bound by runtime/pipelines): elements before it only advance time

    def explain(self) -> str:
        preds = "any" if self.predicates is None else ", ".join(sorted(self.predicates))
        exchange = (f"  Exchange hashpartitioning(term at ?{self.key.variable}, {self.buckets}) (IRIs and blank "
                    "nodes by their hash, literals to bucket 0: one spelling, one bucket)"
                    if self.key is not None else
                    f"  Exchange by window slab ({self.slabs.per_slab} windows a slab, {self.buckets} buckets; "
                    "an element at a slab's edge to both its buckets)" if self.slabs is not None
                    else "  Exchange SinglePartition (bucket 0)")
        lines = [f"SparkQuery {', '.join(self.queries)}: windowed (C-SPARQL / RSP-QL, spec §8) — report at window close",
                 SINK,
                 "  WindowedOperator: applyInPandasWithState; at event time >= close, every due window of a query in"
                 " one vectorised pass, the window id one more join and group key (tefq.spark.kernels.windowed.multiwindow);"
                 f" REGISTER STREAM feedback {', '.join(self.feedback) or '(none)'}"]
        for name, w, detail in zip(self.queries, self.windows, self.details or [()] * len(self.queries)):
            lines.append(f"    {name}: {w}")
            lines.extend(f"      {d}" for d in detail)
        return "\n".join([*lines, exchange,
                          "  MapInArrow: per-partition heartbeat (event-time range, element count), bad rows",
                          f"  Project: kind, ts, terms only for predicates {preds} (others: time only)", SOURCE])


KEY_BUCKETS = 2  # join-key buckets when the caller offers none (planning.common.shuffle_partitions' least)


def plan_windowed(doc: Document, buckets: int | None = None, background: bool = False) -> WindowedPlan:
    """`buckets`: how many a split query spreads over (the session's shuffle partitions).
    `background`: the run joins background knowledge, which every window holds whole: then no
    split by a join key (a solution of background triples alone would come out of every bucket),
    by windows where it can."""
    run = IncrementalBatchedRun(doc)  # parses every query: syntax errors and unsupported algebra fail here
    evaluators = run.batches.evaluators
    split = buckets or KEY_BUCKETS  # the buckets a split query spreads over
    key = join_key(run.queries[0], evaluators[0].algebra) if len(run.queries) == 1 and not background else None
    slabs = window_slabs(run.queries, split) if key is None else None
    descr, details = [], []
    for q, ev in zip(run.queries, evaluators):
        descr.append(" + ".join(f"FROM STREAM <{w.iri or 'default'}> [RANGE {w.range_ms} ms STEP {w.step_ms} ms]"
                                for w in q.windows) + f" -> {q.form.upper()}, {q.r2s.upper()}")
        details.append(query_details(run, q, ev, key, slabs))
    return WindowedPlan(tuple(q.name for q in run.queries), tuple(descr), run.predicates,
                        tuple(q.name for q in run.queries if q.registers_stream),
                        tuple(tuple(c) for c in run.columns), tuple(q.ordered for q in run.queries),
                        buckets=split if key is not None or slabs is not None else 1, key=key, slabs=slabs,
                        details=tuple(details))


def query_details(run, q, ev, key: JoinKey | None, slabs: WindowSlabs | None) -> tuple[str, ...]:
    """What explain says of one query: partitioning, state, rounds, each BGP's static order."""
    feedback = any(p.registers_stream for p in run.queries)
    part = key.describe() if key is not None else slabs.describe() if slabs is not None else \
        "one key (REGISTER STREAM feedback orders the windows)" if feedback else \
        "one key (no join key, and windows that depend on each other: ISTREAM/DSTREAM, several windows or queries)"
    out = [f"partitioning: {part}",
           f"state: elements with ts >= last close - {run.max_range} ms (windows not yet closed)",
           "rounds: by feedback (a window after the windows whose output it reads)" if feedback
           else "rounds: 0 (no feedback: all due windows in one pass, <= 2,000,000 assigned elements a batch)"]
    labels: dict[str, str] = {}  # rdflib's random blank-node labels, numbered: explain's text is stable
    for k, bgp in enumerate(bgp_nodes(ev.algebra)):
        triples = list(bgp.triples)
        order = static_order(triples)
        out.append(f"BGP {k}, {len(triples)} pattern(s); join order: --join-order adaptive (default: Strider's "
                   f"forward/backward AQP on exact cardinalities, Θ = 0.7) or static")
        out.append("  static order: " + "; ".join(" ".join(spelled(x, labels) for x in triples[i]) for i in order))
    return tuple(out)


def spelled(term, labels: dict[str, str]) -> str:
    """A pattern's term as explain writes it: N-Triples, blank nodes numbered in order of appearance."""
    from rdflib import BNode

    if isinstance(term, BNode):
        return labels.setdefault(str(term), f"_:b{len(labels)}")
    return term.n3()

