"""`tefq.spark.apply`: a TEF-SPARQL query over a Spark DataFrame of events, a DataFrame of rows out.

    rows = tefq.spark.apply(tefq.load("usecases/uc1.tef"), events_df)   # ts, s, p, o in
    rows.show()                                                          # tick, CHANNEL, USER out

The DataFrame runs the same pipeline as `tefq run --engine spark` (`operator_frame`: the plan's
projection, mapper and stateful bucket operator, as its shape in tefq.spark.shapes names them);
only the source and the sink differ. A batch DataFrame gets the control source's flush row appended,
so it gives every tick `tefq run` gives (the end-of-input flush included). A streaming DataFrame
never ends: each tick's rows come once the event time, minus `lateness`, has passed the tick
(as `--follow`), and the user writes them with their own `writeStream` and checkpoint.

Output: `tick` (timestamp, ms) and one column per SELECT name, the schema of `tefq run --format
parquet`: typed as the plan says before the query runs (tefq.results.column_kinds: a COUNT long, a
SUM or AVG double, a group variable a string with IRIs without brackets), or with
`terms="ntriples"` each a string holding the N-Triples term (null = unbound), lossless. Each bucket decodes its own rows
inside the stateful operator (`decoded`): an operator emits a micro-batch's term dictionary with
the rows that use it, so no driver is needed. Metrics are not returned; warnings (late events) go
to the executors' stderr.
"""
from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession, functions as F, types as T
from pyspark.sql.streaming.state import GroupStateTimeout

from tefq.analysis import bind
from tefq.analysis.durations import duration_ms
from tefq.errors import TefqError
from tefq.io.rdf import as_background
from tefq.plan.logical import Document
from tefq.results import BOOLEAN, DOUBLE, LONG, NTRIPLES, TERM, check_term_form, column_kinds, typed_cell
from tefq.spark.operators.base import OUTPUT_SCHEMA, STATE_SCHEMA
from tefq.spark.runtime.partitioning import by_bucket, relabel, shuffle_labels
from tefq.spark.runtime.pipelines import RunOptions, map_rows
from tefq.spark.runtime.sources import CONTROL_SCHEMA, FLUSH_TERM
from tefq.spark.shapes import collector_of, plan_document, shape_of
from tefq.syntax import parse
from tefq.vocabulary import RunSettings

EVENT_COLUMNS = ("ts", "s", "p", "o")
SOURCE_NAME = "<dataframe>"  # the `file` of a DataFrame's rows, in bad-row reports
QUERY_TEXT = "<string>"  # the `file` of query text given as a string, in error messages (as tefq.compile's)
INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
SPARK_TYPES = {LONG: "long", DOUBLE: "double", BOOLEAN: "boolean"}  # any other kind: string


def apply(query: Any, events_df: DataFrame, *, lateness: int | str = 0, t0: int = 0, name: str | None = None,
          background: Any = None, bad_rows: str | None = None, terms: str = "typed") -> DataFrame:
    """The rows of one query of `query` (a `tefq.Query` or its text; `name` picks a query of a
    document with several, the first by default) over `events_df` (batch or streaming, columns
    ts: long epoch ms or timestamp; s, p, o: N-Triples terms). `lateness`: ms or a duration
    ("5s"). `background`: a file or rdflib graph (used by the general operator). `bad_rows`: a
    directory for malformed rows; without it a malformed row fails the Spark job, naming the row.
    `terms`: "typed" (a long column to sum; see the module doc) or "ntriples" (every column an
    N-Triples string)."""
    check_term_form(terms, "terms")
    doc = document_of(query)
    spark = events_df.sparkSession
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
    # each bucket's rows are formatted in its operator (`decoded`): no partial aggregates to add
    plan = pick_plan(plan_document(doc, max(1, partitions), merge_partials=False), name)
    source = event_source(events_df)
    if not events_df.isStreaming:  # the whole input is there: report every tick, as a bounded run
        source = source.unionByName(flush_source(spark))
    run = RunOptions(RunSettings(t0, duration_ms(lateness, "lateness")), bad_rows=bad_rows,
                     background=as_background(background))
    kinds = output_kinds(doc, plan, terms)
    func = decoded(shape_of(plan).operator(doc, plan, run), plan, kinds)
    records = operator_frame(plan, source, shuffle_labels(plan.buckets, partitions), func, run,
                             schema=decoded_schema(plan, kinds))
    return records.select(F.timestamp_millis("tick").alias("tick"), *[F.col(f"`{c}`") for c in plan.columns])


def operator_frame(plan, source: DataFrame, labels: list[int], func: Callable, run: RunOptions, *,
                   ranks: dict[int, int] | None = None, schema: str = OUTPUT_SCHEMA) -> DataFrame:
    """One plan's pipeline over `source` (rows of ts, s, p, o, file, fh, row): the projection
    its shape names and its mapper, then `func` (an applyInPandasWithState function taking
    the bucket index) per bucket, grouped by the buckets' shuffle `labels`
    (tefq.spark.runtime.partitioning). `ranks`: the stream order of the files, for ties."""
    mapped = relabel(map_rows(source, plan, run, ranks), labels)
    if not source.isStreaming:  # Spark refuses applyInPandasWithState on a batch: one call per bucket
        return mapped.groupBy("b").applyInPandas(stateless(by_bucket(func, labels)), schema)
    return mapped.groupBy("b").applyInPandasWithState(by_bucket(func, labels), schema, STATE_SCHEMA, "append",
                                                      GroupStateTimeout.NoTimeout)


class FreshState:
    """The GroupState of a batch query's only call per group: nothing before, nothing kept."""

    exists = False

    def update(self, value: tuple) -> None:
        pass


def stateless(func: Callable) -> Callable:
    """An applyInPandasWithState function as an applyInPandas one (a batch: all rows, one call)."""

    def op(key, pdf):  # no type hints: Spark would read them as a request for another UDF kind
        return pd.concat(list(func(key, iter([pdf]), FreshState())), ignore_index=True)

    return op


def pick_plan(plans: list, name: str | None):
    """The plan of the query named `name` (the first query's when None)."""
    if not plans:
        raise TefqError("the document has no queries")
    plan = plans[0] if name is None else next((p for p in plans if name in shape_of(p).query_names(p)), None)
    if plan is None:
        known = ", ".join(n for p in plans for n in shape_of(p).query_names(p))
        raise TefqError(f"no query named {name!r}: the document has {known}", file="name")
    refusal = shape_of(plan).capabilities.dataframe
    if refusal is not None:
        raise TefqError(refusal, file="query")
    return plan


def event_source(df: DataFrame) -> DataFrame:
    """The user's events as the engine's source rows (ts long, s, p, o, file, fh, row: 0, not known)."""
    missing = [c for c in EVENT_COLUMNS if c not in df.columns]
    if missing:
        raise TefqError(f"the events DataFrame lacks the column(s) {', '.join(missing)}: expected ts (epoch ms or "
                        f"timestamp), s, p, o (N-Triples terms); found {', '.join(df.columns)}", SOURCE_NAME)
    kind = df.schema["ts"].dataType
    if isinstance(kind, INTEGRAL):
        ts = F.col("ts").cast("long")
    elif isinstance(kind, T.TimestampType):
        ts = F.unix_millis(F.col("ts"))
    else:
        raise TefqError(f"column ts is {kind.simpleString()}: expected a long (epoch ms) or a timestamp "
                        "(cast a string with to_timestamp, a timestamp_ntz to timestamp)", SOURCE_NAME)
    return df.select(ts.alias("ts"), *[F.col(c).cast("string").alias(c) for c in ("s", "p", "o")],
                     F.lit(SOURCE_NAME).alias("file"), F.lit(0).cast("long").alias("fh"),
                     F.lit(0).cast("long").alias("row"))


def flush_source(spark: SparkSession) -> DataFrame:
    """The control source's end-of-input row (tefq.spark.runtime.sources.write_flush) as a batch."""
    row = spark.createDataFrame([(0, FLUSH_TERM, FLUSH_TERM, FLUSH_TERM)], CONTROL_SCHEMA)
    return row.select("ts", "s", "p", "o", F.lit(None).cast("string").alias("file"),
                      F.lit(0).cast("long").alias("fh"), F.lit(0).cast("long").alias("row"))


def output_kinds(doc: Document, plan, terms: str) -> list[str]:
    """Each output column's kind: NTRIPLES for every column, or (typed) the plan's
    (tefq.results.column_kinds)."""
    if terms == "ntriples":
        return [NTRIPLES] * len(plan.columns)
    planned = column_kinds(next(q for q in doc.queries if q.name == plan.query))
    return [planned.get(c, TERM) for c in plan.columns]


def decoded_schema(plan, kinds: list[str]) -> str:
    return ", ".join(["tick long"] + [f"`{c}` {SPARK_TYPES.get(k, 'string')}" for c, k in zip(plan.columns, kinds)])


def decoded(func: Callable, plan, kinds: list[str]) -> Callable:
    """`func`'s records of one bucket and micro-batch as result rows (tick ms, cells of their
    column's kind: tefq.results.typed_cell), formatted by the driver's Collector; warnings printed
    to the worker's stderr."""
    columns = list(plan.columns)

    def op(key, pdfs, state):
        col = collector_of(plan)
        for records in func(key, pdfs, state):
            for kind, tick, payload in zip(records["kind"], records["tick"], records["payload"]):
                col.add(kind, int(tick), payload)
        for w in col.warnings:
            print(f"tefq warning ({plan.query}): {w}", file=sys.stderr)
        rows = col.sorted_rows()
        frame = {"tick": np.fromiter((t for t, _ in rows), np.int64, len(rows))}
        for i, (c, kind) in enumerate(zip(columns, kinds)):
            frame[c] = pd.Series([typed_cell(cells[i], kind) for _, cells in rows], dtype=object)
        yield pd.DataFrame(frame, columns=["tick"] + columns)

    return op


def document_of(query: Any) -> Document:
    """The document of a compiled query (anything with `.document()`, as tefq.Query) or of query text."""
    if hasattr(query, "document"):
        doc = query.document()
    elif isinstance(query, str):
        doc = bind(parse(query, QUERY_TEXT), QUERY_TEXT, query, {}, frozenset())
    else:
        raise TefqError(f"expected a tefq.Query or query text, got {type(query).__name__}", file="query")
    doc.require_mapped()
    return doc
