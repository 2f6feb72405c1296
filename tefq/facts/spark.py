"""The fact table on Spark (spec §12): one streaming query whose fact operator holds every fact of
the document and emits each interval when it closes, and the open ones at the end of the input
(`tefq.spark.fact_output`); the driver decodes them into the oracle's `FactStore`, so
`tefq.facts.table.store_rows` writes both engines' tables in one order and one format.

The query is the fact-aggregate operator's (`tefq.spark.operators.fact`) over a plan that has
every fact of the document, every identity term and no aggregate (`planning.fact.plan_fact_table`),
run by the engine's `run_fact_table` (the preparation and drivers of every Spark run): its ticks only
say when an interval is final (every EVERY_MS of event time), no row is reported. A document
whose facts that operator cannot run (background or FILTER in a SINCE/UNTIL clause, non-fact
patterns in a derived-fact body) gets the oracle's fact table over the stream's elements.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from tefq.facts.table import FactRows, event_elements, fact_store, store_rows
from tefq.oracle.facts import FactStore, FactTable
from tefq.plan.logical import Document
from tefq.spark.engine import SparkRun, run_fact_table
from tefq.spark.planning.common import Refusal
from tefq.spark.planning.fact import plan_fact_table
from tefq.spark.runtime.progress import say

EVERY_MS = 3_600_000  # when intervals become final on event time: in a bounded run, only how many ticks


def collected_store(doc: Document, intervals: dict[str, dict]) -> FactStore:
    """The oracle's FactStore of the intervals the Spark operator emitted (per fact name)."""
    tables = {}
    for f in doc.facts:
        table = FactTable(f.name, f.template, f.identity)
        table.intervals = intervals.get(f.name, {})
        tables[f.name] = table
    return FactStore(tables)


def spark_fact_store(doc: Document, stream_paths: list[str], background: Any = None, *, master: str | None = None,
                     progress: bool = False, spark=None, ingest: str = "auto") -> tuple[FactStore, str]:
    """The facts of `doc` over `stream_paths`, computed on Spark; returns the store and how
    ("spark", or "oracle" when the fact operator cannot run these facts)."""
    plan = plan_fact_table(doc)
    if plan is None:
        return collected_store(doc, {}), "spark"
    if isinstance(plan, Refusal):
        say(progress, f"the fact operator does not run {plan.what}: the oracle's fact table over the elements")
        return fact_store(doc, event_elements(stream_paths), background), "oracle"
    request = table_request(doc, stream_paths, background, master=master, progress=progress, spark=spark,
                            ingest=ingest)  # no bad-row log given: a bad row stops it
    return collected_store(doc, run_fact_table(request, EVERY_MS).intervals()), "spark"


def table_request(doc: Document, stream_paths: list[str], background: Any, **options: Any) -> SparkRun:
    """A Spark run of the document's fact table: its facts only (the document's queries do not run)."""
    return SparkRun.of(replace(doc, queries=()), stream_paths, background, **options)


def spark_fact_table(doc: Document, stream_paths: list[str], background: Any = None, **options) -> tuple[FactRows, str]:
    """The fact table of spec §12 on Spark (options: those of `spark_fact_store`)."""
    store, engine = spark_fact_store(doc, stream_paths, background, **options)
    return store_rows(doc, store), engine


__all__ = ["EVERY_MS", "collected_store", "table_request", "spark_fact_store", "spark_fact_table"]
