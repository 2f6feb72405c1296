"""Windowed (C-SPARQL, spec §8) queries on Spark Structured Streaming.

Pipeline for a document's windowed queries (all of them in one streaming query):
file sources ∪ control source -> Spark SQL projection (kind, ts, terms; rows whose predicate no
query can match and rows before t0 are reduced to their timestamp, bad rows carry their text)
-> mapInArrow (drops the reduced rows, adds one heartbeat per partition with the event-time range
and element count, diverts bad rows) -> groupBy(key).applyInPandasWithState (the windowed operator:
keeps the elements open windows need; when event time reaches a window's close c it evaluates the
window with the vectorised SPARQL evaluator, tefq.relational.sparql, and feeds REGISTER STREAM
output back) -> parquet sink -> rows read on the driver.

Feedback makes window c depend on the windows before it, so the operator has one key: windows are
evaluated in (close, document) order, as the oracle's `run()` does (tefq.relational.windowed).
"""
from __future__ import annotations

import json
import os
from functools import reduce

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from tefq.plan.logical import Document
from tefq.results import QueryResult
from tefq.spark.operators.base import ELEMENT, Batch, BucketLogic, BucketState, RowKind, bucket_operator, widen
from tefq.spark.output import RECORD_SCHEMA, json_record
from tefq.spark.runtime.columns import undecided
from tefq.spark.runtime.mappers import PartitionScan, settle_undecided
from tefq.spark.runtime.progress import Progress, ours, run_until_done
from tefq.spark.runtime.sink import read_sink
from tefq.spark.planning.windowed import SMALL_WINDOW, WindowedPlan, plan_windowed, small_window
from tefq.spark.runtime.sources import FLUSH_TERM, read_control, read_stream, write_flush

DATA, HEARTBEAT, FLUSH, BAD, OTHER, IGNORED = (ELEMENT, RowKind.HEARTBEAT, RowKind.FLUSH, RowKind.BAD,
                                             RowKind.OTHER, RowKind.IGNORED)
MAP_SCHEMA = "k int, ts long, s string, p string, o string, n long, x string"


def _project(df: DataFrame, plan: WindowedPlan, t0: int) -> DataFrame:
    flush = F.col("p") == F.lit(FLUSH_TERM)
    relevant = F.col("ts") >= F.lit(t0)
    if plan.predicates is not None:
        relevant = relevant & F.col("p").isin(*sorted(plan.predicates))
    kind = (F.when(flush, F.lit(int(FLUSH)))  # a row not vouched for: the mapper turns it BAD if the oracle would
            .when(relevant, F.lit(int(DATA))).when(F.col("ts") >= F.lit(t0), F.lit(int(OTHER)))
            .otherwise(F.lit(int(IGNORED))))
    keep = F.col("k") == F.lit(int(DATA))
    return df.select(kind.cast("int").alias("k"), "ts", "s", "p", "o", undecided(flush).alias("x")).select(
        "k", "ts", F.when(keep, F.col("s")).alias("s"), F.when(keep, F.col("p")).alias("p"),
        F.when(keep, F.col("o")).alias("o"), F.lit(0).cast("long").alias("n"), "x")


def make_mapper(bad_rows: str | None):
    out_schema = pa.schema([("k", pa.int32()), ("ts", pa.int64()), ("s", pa.string()), ("p", pa.string()),
                            ("o", pa.string()), ("n", pa.int64()), ("x", pa.string())])

    def mapper(batches):
        import pyarrow.compute as pc

        scan, seen = PartitionScan(bad_rows), False
        for rb in batches:
            seen = True
            rb = settle_undecided(rb)
            k = rb.column("k")
            scan.see(rb, pc.or_(pc.equal(k, int(DATA)), pc.equal(k, int(OTHER))), pc.equal(k, int(BAD)))
            keep = rb.filter(pc.or_(pc.equal(k, int(DATA)), pc.equal(k, int(FLUSH))))
            if keep.num_rows:
                yield keep.select(out_schema.names).cast(out_schema)
        if seen and scan.any:  # ts = min, n = count, x = "max|bad"
            yield pa.RecordBatch.from_pydict(
                {"k": [int(HEARTBEAT)], "ts": [scan.lo or 0], "s": [None], "p": [None], "o": [None],
                 "n": [scan.count], "x": [f"{scan.hi if scan.hi is not None else ''}|{scan.bad}"]}, schema=out_schema)

    return mapper


class WindowedBucket(BucketState):
    """The one key's state: the incremental run's (`WindowedState`) and the bad-row count."""

    def __init__(self) -> None:
        super().__init__()
        from tefq.relational.windowed import WindowedState

        self.windows = WindowedState()


class WindowedLogic(BucketLogic):
    """The windowed maths under the bucket loop: elements kept for open windows, each window
    evaluated when event time (minus the lateness) passes its close. Late elements are not dropped:
    windows still open need them (the incremental run counts them)."""

    data_kinds = ()

    def __init__(self, doc: Document, t0: int, small: int) -> None:
        self.doc, self.t0, self.small = doc, t0, small

    def run(self):
        from tefq.relational.windowed import IncrementalRun

        key = (self.doc.source, self.t0, self.small, tuple(getattr(q, "sparql", "") for q in self.doc.queries))
        if key not in _runs:  # parse once per worker process
            _runs[key] = IncrementalRun(self.doc, self.t0, small=self.small)
        return _runs[key]

    def new_state(self) -> WindowedBucket:
        return WindowedBucket()

    def see_time(self, st: WindowedBucket, pdf: pd.DataFrame, kinds: np.ndarray, batch: Batch) -> None:
        hb = pdf[kinds == HEARTBEAT]  # ts = min, n = count, x = "max|bad"
        his = [int(x.split("|")[0]) for x in hb["x"] if x.split("|")[0]]
        batch.metrics["bad_rows"] = sum(int(x.split("|")[1]) for x in hb["x"])
        lo, hi = (int(hb["ts"].min()), max(his)) if his else (None, None)
        self.run().add(st.windows, pdf.iloc[:0][COLUMNS], lo, hi, int(hb["n"].sum()) if len(hb) else 0)
        if his:
            widen(st, lo, hi)

    def ingest(self, st: WindowedBucket, pdf: pd.DataFrame, kinds: np.ndarray, batch: Batch) -> None:
        self.run().add(st.windows, pdf[kinds == DATA][COLUMNS].astype({"ts": np.int64}), None, None, 0)

    def report(self, st: WindowedBucket, batch: Batch, t0: int, lateness_ms: int) -> None:
        w, late_before = st.windows, st.windows.late_events
        reports = self.run().advance(w, None if batch.flush else (w.last - lateness_ms if w.last is not None else None))
        by_query: dict[int, list] = {}
        for r in reports:
            by_query.setdefault(r.query, []).extend([r.tick, list(c)] for c in r.rows)
        for i, rows in by_query.items():
            batch.out.append(json_record(f"wrows{i}", rows[-1][0], rows))
        batch.metrics["rows"] = sum(len(r) for r in by_query.values())
        if w.late_events > late_before:
            batch.out.append(json_record("warn", w.last or 0, f"{w.late_events - late_before} late events: windows up"
                                         f" to {w.done} ms were already reported"))

    def snapshot(self, st: WindowedBucket, metrics: dict) -> None:
        w = st.windows  # cumulative in the state: the driver keeps the largest
        metrics.update(ticks=w.ticks, events_in=w.events_in, feedback_triples=w.feedback_triples,
                       late_events=w.late_events)
        metrics.setdefault("bad_rows", 0)  # this batch's (heartbeats carry them)


def make_operator(doc: Document, t0: int, lateness_ms: int, small: int = SMALL_WINDOW):
    """The windowed operator (applyInPandasWithState): one key, the bucket loop of
    `tefq.spark.operators.base` around `WindowedLogic`."""
    return bucket_operator(WindowedLogic(doc, t0, small), t0, lateness_ms, "windowed_operator")


_runs: dict = {}
COLUMNS = ["ts", "s", "p", "o"]


def run_windowed(spark: SparkSession, doc: Document, plan: WindowedPlan, stream_paths: list[str], workdir: str, *,
                 t0: int, lateness_ms: int, follow: bool, max_files_per_trigger: int | None,
                 bad_rows: str | None, progress: bool) -> tuple[list[QueryResult], dict]:
    """Run the plan; returns one QueryResult per windowed query (document order) and the metrics."""
    from tefq.relational.windowed import IncrementalRun

    qdir = os.path.join(workdir, plan.query)
    ctl, out, ck = (os.path.join(qdir, d) for d in ("control", "output", "checkpoint"))
    os.makedirs(ctl, exist_ok=True)
    sources = [read_stream(spark, p, max_files_per_trigger) for p in stream_paths] + [read_control(spark, ctl)]
    df = _project(reduce(DataFrame.unionByName, sources), plan, t0)
    mapped = df.mapInArrow(make_mapper(bad_rows), MAP_SCHEMA).withColumn("key", F.lit(0))
    result = mapped.groupBy("key").applyInPandasWithState(
        make_operator(doc, t0, lateness_ms, small_window()), RECORD_SCHEMA, "blob binary", "append", GroupStateTimeout.NoTimeout)
    pr = Progress(progress, plan.query)

    def start(**trigger):
        return (result.writeStream.format("parquet").option("path", out).option("checkpointLocation", ck)
                .outputMode("append").trigger(**trigger).queryName(f"tefq_windowed_{os.getpid()}").start())

    try:
        if follow:
            run_until_done(start(processingTime="1 second"), pr)
        else:
            run_until_done(start(availableNow=True), pr)
            write_flush(ctl)
            run_until_done(start(availableNow=True), pr)
    except Exception as e:  # noqa: BLE001 - Spark wraps worker errors; find ours
        err = ours(e)
        if err is e:
            raise
        raise err from None
    run = IncrementalRun(doc, t0)
    results = [QueryResult(q.name, cols) for q, cols in zip(run.queries, run.columns)]
    metrics: dict = {}
    pdf = read_sink(out)
    for kind, payload in zip(pdf["kind"], pdf["payload"]):
        if kind.startswith("wrows"):
            results[int(kind[5:])].rows.extend((int(t), tuple(c)) for t, c in json.loads(payload))
        elif kind == "metric":
            m = json.loads(payload)
            for k in ("ticks", "events_in", "feedback_triples", "late_events"):  # cumulative in the state
                metrics[k] = max(metrics.get(k, 0), m[k])
            metrics["bad_rows"] = metrics.get("bad_rows", 0) + m["bad_rows"]
        elif kind == "warn":
            import sys

            print(f"warning: {json.loads(payload)}", file=sys.stderr)
    for r in results:
        r.rows = r.sorted_rows()
    metrics["micro_batches"] = pr.batches
    return results, metrics


__all__ = ["WindowedPlan", "plan_windowed", "run_windowed"]

