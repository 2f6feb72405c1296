"""The fact table on Spark (spec §12): one streaming query whose fact operator holds every fact of
the document and emits each interval when it closes, and the open ones at the end of the input
(`tefq.spark.fact_output`); the driver decodes them into the oracle's `FactStore`, so
`tefq.facts.table.store_rows` writes both engines' tables in one order and one format.

The query is the fact-aggregate operator's (`tefq.spark.operators.fact`) over a plan that has
every fact of the document, every identity term and no aggregate (`table_plan`): its ticks only
say when an interval is final (every EVERY_MS of event time), no row is reported. A document
whose facts that operator cannot run (background or FILTER in a SINCE/UNTIL clause, non-fact
patterns in a derived-fact body) gets the oracle's fact table over the stream's elements.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tefq import cleanup
from tefq.facts.table import FactRows, store_rows
from tefq.io.paths import path_in
from tefq.oracle.facts import FactStore, FactTable
from tefq.plan.logical import Document
from tefq.vocabulary import DEFAULT_MAX_TICKS

EVERY_MS = 3_600_000  # when intervals become final on event time: in a bounded run, only how many ticks
TABLE_QUERY = "facts"  # the streaming query's name (its directory under the run's work directory)


def table_plan(doc: Document, buckets: int = 1, every_ms: int = EVERY_MS):  # -> FactAggregatePlan | Refusal | None
    """The fact-aggregate plan of every fact of `doc`, every identity term shipped, no output
    (None: `doc` has no fact); over `buckets` when the last fact's closure is every fact and one
    of its identity variables routes them exactly (planning/fact.choose_routing, as for a query
    grouping by it), else one. `every_ms`: the grid on which intervals become final."""
    from tefq.spark.planning.common import Refusal
    from tefq.spark.planning.fact import FactAggregatePlan, choose_routing, fact_buckets, fact_closure, plan_facts

    if not doc.facts:
        return None
    order = fact_closure(doc, [f.name for f in doc.facts])
    if isinstance(order, Refusal):
        return order
    plans = plan_facts(doc, order, {f.name: {v.name for v in f.identity} for f in doc.facts})
    if isinstance(plans, Refusal):
        return plans
    last = order[-1]
    keys = list(plans[last].identity)
    routing = choose_routing(plans, order, last, keys, None) if buckets > 1 else None
    return FactAggregatePlan(
        query=TABLE_QUERY, columns=(), facts=tuple(plans[n] for n in order), fact=last, current=True,
        group_vars=(), group_cols=(), aggregates=(), distinct_cols=(), projections=(), while_=None,
        every_ms=every_ms, partitioning="the fact table: no identity variable routes every fact exactly",
        buckets=fact_buckets(routing, buckets), routing=routing)


def collected_store(doc: Document, intervals: dict[str, dict]) -> FactStore:
    """The oracle's FactStore of the intervals the Spark operator emitted (per fact name)."""
    tables = {}
    for f in doc.facts:
        table = FactTable(f.name, f.template, f.identity)
        table.intervals = intervals.get(f.name, {})
        tables[f.name] = table
    return FactStore(tables)


@dataclass(frozen=True)
class TableRun:
    """What a run of the table plan needs: the session, the plan over its buckets, a work
    directory (removed afterwards) and the run's options (facts asked for)."""

    spark: Any  # SparkSession
    plan: Any  # FactAggregatePlan
    workdir: str
    options: Any  # RunOptions

    def sink(self) -> str:
        return os.path.join(path_in(self.workdir, self.plan.query), "output")  # build_plan's sink


@contextlib.contextmanager
def table_run(doc: Document, background: Any, *, master: str | None, progress: bool, spark=None,
              every_ms: int = EVERY_MS) -> Iterator[TableRun]:
    """Start (or take) the session and plan the table over its buckets (routed when exact);
    call only once `table_plan(doc)` is a plan."""
    from tefq.spark.operators.base import StreamLimits
    from tefq.spark.operators.fallback import rdflib_triples
    from tefq.spark.runtime.pipelines import RunOptions
    from tefq.spark.runtime.progress import say
    from tefq.spark.runtime.session import get_session
    from tefq.spark.runtime.session_source import starting_line

    opts = RunOptions(progress=progress, background=rdflib_triples(background),
                      limits=StreamLimits(DEFAULT_MAX_TICKS), facts=True)
    if spark is None:
        say(progress, starting_line(master))
        spark = get_session(master)
    plan = table_plan(doc, max(1, int(spark.conf.get("spark.sql.shuffle.partitions"))), every_ms)
    workdir = cleanup.register(tempfile.mkdtemp(prefix="tefq-facts-"))
    try:
        yield TableRun(spark, plan, workdir, opts)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        cleanup.unregister(workdir)


def spark_fact_store(doc: Document, stream_paths: list[str], background: Any = None, *, master: str | None = None,
                     progress: bool = False, spark=None, ingest: str = "auto") -> tuple[FactStore, str]:
    """The facts of `doc` over `stream_paths`, computed on Spark; returns the store and how
    ("spark", or "oracle" when the fact operator cannot run these facts)."""
    from tefq.io.bad_rows import BadRowLog
    from tefq.spark.engine import check_run, run_to_end
    from tefq.spark.planning.common import Refusal
    from tefq.spark.runtime.progress import say
    from tefq.spark.runtime.sink import collect_facts

    plan = table_plan(doc)
    if plan is None:
        return collected_store(doc, {}), "spark"
    if isinstance(plan, Refusal):
        from tefq.facts.table import event_elements
        from tefq.facts.table import fact_store

        say(progress, f"the fact operator does not run {plan.what}: the oracle's fact table over the elements")
        return fact_store(doc, event_elements(stream_paths), background), "oracle"
    check_run(doc, stream_paths, False, ingest)
    with table_run(doc, background, master=master, progress=progress, spark=spark) as run:
        run_to_end(run.spark, doc, [run.plan], stream_paths, run.workdir, run.options, ingest,
                   BadRowLog())  # a bad row stops it
        return collected_store(doc, collect_facts(run.plan, run.sink()).intervals()), "spark"


def spark_fact_table(doc: Document, stream_paths: list[str], background: Any = None, **options) -> tuple[FactRows, str]:
    """The fact table of spec §12 on Spark (options: those of `spark_fact_store`)."""
    store, engine = spark_fact_store(doc, stream_paths, background, **options)
    return store_rows(doc, store), engine


__all__ = ["EVERY_MS", "table_plan", "collected_store", "TableRun", "table_run", "spark_fact_store", "spark_fact_table"]
