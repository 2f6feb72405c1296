"""The Spark Structured Streaming engine: `run` a planned document, `explain_physical` its plan."""
from __future__ import annotations

from tefq.plan.logical import Document


def run(doc: Document, stream_paths: list[str], background=None, **options):
    """Every query of `doc` on Spark over the stream paths (`tefq.spark.engine.SparkRun` lists
    the options; t0, lateness_ms, max_ticks and idle_ms are the run's settings)."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.spark.engine import SparkRun, run as _run

    return _run(SparkRun.of(doc, stream_paths, background, **options))


def apply(query, events_df, **kwargs):
    """A query over a Spark DataFrame of events (batch or streaming): `tefq.spark.dataframe.apply`."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.spark.dataframe import apply as _apply

    return _apply(query, events_df, **kwargs)


def explain_physical(doc: Document) -> str:
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.spark.shapes import explain_physical as _explain

    return _explain(doc)


__all__ = ["run", "apply", "explain_physical"]
