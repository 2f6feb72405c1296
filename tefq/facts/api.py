"""The fact table from Python (`Query.facts(events, engine=...)`, `Result.facts`): the events as
`Query.run` takes them (stream paths, a pandas DataFrame, a pyarrow Table, (ts, s, p, o) tuples),
the table as `FactRows` or a pandas DataFrame, computed by the oracle or on Spark (in-memory
events handed to Spark as one checked Parquet file); both engines give the same table."""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from tefq.errors import TefqError
from tefq.facts.table import FactRows, event_elements, fact_table, facts_frame

if TYPE_CHECKING:
    from tefq.results import RunResult
    from tefq.service import DocumentSource, EngineChoice

FACT_ENGINES = ("oracle", "spark", "auto")


def chosen_engine(engine: str, paths: list[str], master: str | None = None) -> "EngineChoice":
    """`--engine auto` over stream paths as `tefq run` picks (tefq.service.auto_engine; standard
    input, or a Spark master or Connect server named: Spark), or the engine named."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.service import STDIN, EngineChoice, auto_engine, estimated_events

    if engine != "auto":
        return EngineChoice(engine)
    if STDIN in paths or master is not None:
        return EngineChoice("spark", f"auto, {'standard input' if STDIN in paths else 'a Spark option'}")
    return auto_engine(estimated_events(paths))


def fact_engine(engine: str, events: Any) -> str:
    """`engine`, or for "auto" the engine `tefq.service.auto_engine` picks for the events (as
    `tefq facts --engine auto` and `Query.run` pick)."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.io.run_inputs import is_paths
    from tefq.service import auto_engine, stream_paths

    if engine not in FACT_ENGINES:
        raise TefqError(f"unknown engine {engine!r}: expected {', '.join(FACT_ENGINES)}", file="engine")
    if engine != "auto":
        return engine
    if is_paths(events):
        return chosen_engine(engine, stream_paths(events)).engine
    return auto_engine(len(events) if hasattr(events, "__len__") else 0).engine


@contextlib.contextmanager
def spark_inputs(events: Any) -> Iterator[list[str]]:
    """The stream paths Spark reads: the paths given, or in-memory events checked (a bad row is a
    TefqError naming it) and written as one Parquet file in a directory removed afterwards."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq import cleanup
    from tefq.io.readers import read_table
    from tefq.io.staging import write_parquet
    from tefq.io.run_inputs import EVENTS, events_table, is_paths
    from tefq.service import stream_paths

    if is_paths(events):
        yield stream_paths(events)
        return
    table = events_table(events)
    tmp = cleanup.register(tempfile.mkdtemp(prefix="tefq-facts-events-"))
    try:
        target = os.path.join(tmp, "events.parquet")
        write_parquet(read_table(table, EVENTS), target)
        yield [target]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        cleanup.unregister(tmp)


def facts_of(query: "DocumentSource", events: Any, background: Any = None, *, engine: str = "auto",
             master: str | None = None) -> FactRows:
    """The fact table of spec §12 of `query`'s document over `events`, on `engine` (oracle, spark,
    auto); `master`: the Spark master (default: TEFQ_SPARK_MASTER or local[*])."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.service import bind, read_background

    bg = read_background(background)
    doc = bind(query, bg)
    if fact_engine(engine, events) == "oracle":
        return fact_table(doc, event_elements(events), None if bg is None else bg.triples)
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.facts.spark import spark_fact_table

    with spark_inputs(events) as paths:
        return spark_fact_table(doc, paths, bg, master=master)[0]


def as_of(query: "DocumentSource", events: Any, instants: list[int], background: Any = None, *,
          engine: str = "oracle", master: str | None = None) -> "RunResult":
    """The rows of `query`'s aggregate queries as of `instants` over `events` (spec §12, as `tefq
    run --at`), their facts from `engine` (oracle, spark, auto), each column's kind as planned."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.facts.as_of import as_of_spark, as_of_stream
    from tefq.service import bind, plan_kinds, read_background

    bg = read_background(background)
    doc = bind(query, bg)
    if fact_engine(engine, events) == "oracle":
        run = as_of_stream(doc, event_elements(events), instants, bg)
    else:
        with spark_inputs(events) as paths:
            run = as_of_spark(doc, paths, instants, bg, master=master, progress=False)
    plan_kinds(run, doc)
    return run


__all__ = ["FACT_ENGINES", "as_of", "event_elements", "chosen_engine", "fact_engine", "spark_inputs", "facts_of", "facts_frame"]
