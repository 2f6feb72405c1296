"""Run a planned document on Spark Structured Streaming and collect its rows and metrics.

Pipeline per query: file source ∪ control source -> Spark SQL projection (clause matching,
xxhash64 identity and group codes, bucket) -> mapInArrow (drops unmatched rows, adds one heartbeat
per bucket carrying the partition's event-time range) -> groupBy(bucket).applyInPandasWithState
(the fact operator) -> parquet file sink. A bounded input runs with availableNow, then a flush row is
written into the control source and the query runs once more to report the last ticks.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from functools import reduce

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from tefq.errors import TefqError
from tefq.plan.logical import Document
from tefq.results import Metrics, QueryResult, RunResult
from tefq.spark import operator as fop
from tefq.spark.fallback import make_fallback_operator
from tefq.spark.output import Collector
from tefq.spark.physical import CurrentAggregatePlan, FallbackPlan, plan_document
from tefq.spark.session import get_session
from tefq.spark.sources import FLUSH_TERM, read_control, read_stream, write_flush

BAD_ROW = "TEFQ_BAD_ROW"
TERM_START = "^(<[^>]*>|_:\\S+|\".*)$"


def _bad_reason() -> "F.Column":
    return (F.when(F.col("ts").isNull(), F.lit("timestamp is missing or not a time"))
            .when(F.col("s").isNull() | F.col("p").isNull() | F.col("o").isNull(), F.lit("missing column"))
            .when(~(F.col("s").rlike(TERM_START) & F.col("p").rlike(TERM_START) & F.col("o").rlike(TERM_START)),
                  F.lit("not an N-Triples term")))


def _bad_text(bad_reason: "F.Column") -> "F.Column":
    return F.when(bad_reason.isNotNull(), F.concat_ws("\t", F.col("file"), bad_reason,
                                                      F.coalesce(F.col("ts_text"), F.lit("")),
                                                      F.coalesce("s", F.lit("")), F.coalesce("p", F.lit("")),
                                                      F.coalesce("o", F.lit(""))))


def _clause_condition(c) -> "F.Column":
    conds = [F.col(col) == F.lit(term) for col, term in c.consts] + [F.col(a) == F.col(b) for a, b in c.same]
    return reduce(lambda x, y: x & y, conds, F.lit(True))


def _project(df: DataFrame, plan: CurrentAggregatePlan) -> DataFrame:
    """Clause matching and dictionary encoding in Spark SQL: only int64 codes (and the group
    terms, for decoding the output) cross into Python."""
    bad_reason = _bad_reason()
    conds = [_clause_condition(c) for c in plan.clauses]
    kind = F.when(F.col("p") == F.lit(FLUSH_TERM), F.lit(3)).when(bad_reason.isNotNull(), F.lit(4))
    for c, cond in zip(plan.clauses, conds):
        kind = kind.when(cond, F.lit(c.kind))
    kind = kind.otherwise(F.lit(-1))

    def per_clause(make) -> "F.Column":
        expr = None
        for c, cond in zip(plan.clauses, conds):
            expr = F.when(cond, make(c)) if expr is None else expr.when(cond, make(c))
        return expr

    var_pos = {v: i for i, v in enumerate(plan.identity)}
    cols = [kind.cast("int").alias("k"), F.col("ts"), F.lit(0).cast("long").alias("o"),
            per_clause(lambda c: F.xxhash64(*[F.col(x) for x in c.binds])).alias("f"),
            F.xxhash64("s", "p", "o").alias("e"), F.lit(0).cast("long").alias("n")]
    terms = []
    for i, g in enumerate(plan.group_vars):
        term = per_clause(lambda c, j=var_pos[g]: F.col(c.binds[j]))
        terms.append(term)
        cols.append(F.xxhash64(term).alias(f"g{i}"))
        cols.append(term.alias(f"t{i}"))
    bucket = F.pmod(F.xxhash64(*terms), F.lit(plan.buckets)) if terms else F.lit(0)
    cols.append(F.coalesce(bucket, F.lit(0)).cast("int").alias("b"))
    cols.append(_bad_text(bad_reason).alias("x"))
    return df.select(*cols)


def _project_all(df: DataFrame) -> DataFrame:
    """For the fallback: every row, with its terms (the oracle needs them all)."""
    bad = _bad_reason()
    kind = F.when(F.col("p") == F.lit(FLUSH_TERM), F.lit(3)).when(bad.isNotNull(), F.lit(4)).otherwise(F.lit(0))
    return df.select(kind.cast("int").alias("k"), "ts", F.lit(0).cast("long").alias("o"), "s", "p",
                     F.col("o").alias("obj"), F.lit(0).cast("int").alias("b"), _bad_text(bad).alias("x"))


FALLBACK_MAP_SCHEMA = "k int, ts long, o long, s string, p string, obj string, b int, x string"


def make_fallback_mapper(bad_rows: str | None):
    fields = [("k", pa.int32()), ("ts", pa.int64()), ("o", pa.int64()), ("s", pa.string()), ("p", pa.string()),
              ("obj", pa.string()), ("b", pa.int32()), ("x", pa.string())]
    out_schema = pa.schema(fields)

    def mapper(batches):
        import pyarrow.compute as pc
        from pyspark import TaskContext

        ctx = TaskContext.get()
        row = (ctx.partitionId() if ctx is not None else 0) << 33
        for rb in batches:
            badmask = pc.equal(rb.column("k"), 4)
            if pc.any(badmask).as_py():
                _divert_bad(pc.filter(rb.column("x"), badmask).to_pylist(), bad_rows)
            order = pa.array(np.arange(row, row + rb.num_rows, dtype=np.int64))
            row += rb.num_rows
            cols = [order if name == "o" else rb.column(name) for name in out_schema.names]
            keep = pa.RecordBatch.from_arrays(cols, schema=out_schema).filter(pc.not_equal(rb.column("k"), 4))
            if keep.num_rows:
                yield keep

    return mapper


def _divert_bad(rows: list[str], bad_rows: str | None) -> None:
    import uuid

    if bad_rows is None:
        file, reason, *rest = rows[0].split("\t")
        raise ValueError(f"{BAD_ROW}\t{file}\t{reason}\t" + "\t".join(rest))
    os.makedirs(bad_rows, exist_ok=True)
    with open(os.path.join(bad_rows, f"bad-{uuid.uuid4().hex}.tsv"), "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(r.replace("\n", " ") + "\n")


def _map_schema(plan: CurrentAggregatePlan) -> str:
    parts = ["k int", "ts long", "o long", "f long", "e long", "n long"]
    for i in range(len(plan.group_vars)):
        parts += [f"g{i} long", f"t{i} string"]
    return ", ".join(parts + ["b int", "x string"])


def make_mapper(plan: CurrentAggregatePlan, bad_rows: str | None):
    """Per input partition: keep SINCE/UNTIL rows, divert bad rows, and send every bucket one
    heartbeat with the partition's event-time range, so that all buckets see the time reached."""
    nb = plan.buckets
    ng = len(plan.group_vars)
    fields = [("k", pa.int32()), ("ts", pa.int64()), ("o", pa.int64()), ("f", pa.int64()), ("e", pa.int64()),
              ("n", pa.int64())]
    for i in range(ng):
        fields += [(f"g{i}", pa.int64()), (f"t{i}", pa.string())]
    out_schema = pa.schema(fields + [("b", pa.int32()), ("x", pa.string())])

    def mapper(batches):
        import uuid

        import pyarrow.compute as pc

        from pyspark import TaskContext

        ctx = TaskContext.get()
        row = (ctx.partitionId() if ctx is not None else 0) << 33  # ties keep partition, then row order
        lo, hi, count, bad, flush, seen = None, None, 0, 0, False, False
        for rb in batches:
            seen = True
            k = rb.column("k")
            data = pc.less(k, 2)
            real = pc.or_(pc.equal(k, -1), pc.less(k, 2))
            tsr = pc.filter(rb.column("ts"), real)
            if len(tsr):
                mm = pc.min_max(tsr)
                a, z = mm["min"].as_py(), mm["max"].as_py()
                lo = a if lo is None else min(lo, a)
                hi = z if hi is None else max(hi, z)
                count += len(tsr)
            if pc.any(pc.equal(k, 3)).as_py():
                flush = True
            badmask = pc.equal(k, 4)
            if pc.any(badmask).as_py():
                rows = pc.filter(rb.column("x"), badmask).to_pylist()
                _divert_bad(rows, bad_rows)
                bad += len(rows)
            order = pa.array(np.arange(row, row + rb.num_rows, dtype=np.int64))
            row += rb.num_rows
            cols = [order if name == "o" else rb.column(name) for name in out_schema.names]
            keep = pa.RecordBatch.from_arrays(cols, schema=out_schema).filter(data)
            if keep.num_rows:
                yield keep
        if not seen:
            return

        def const_batch(kind: int, ts: int, o: int, f: int, n: int) -> pa.RecordBatch:
            arrays = {"k": pa.array([kind] * nb, pa.int32()), "ts": pa.array([ts] * nb, pa.int64()),
                      "o": pa.array([o] * nb, pa.int64()), "f": pa.array([f] * nb, pa.int64()),
                      "e": pa.array([0] * nb, pa.int64()), "n": pa.array([n] * nb, pa.int64())}
            for i in range(ng):
                arrays[f"g{i}"] = pa.array([0] * nb, pa.int64())
                arrays[f"t{i}"] = pa.array([None] * nb, pa.string())
            arrays["b"] = pa.array(list(range(nb)), pa.int32())
            arrays["x"] = pa.array([None] * nb, pa.string())
            return pa.RecordBatch.from_pydict(arrays, schema=out_schema)

        if count or bad:
            yield const_batch(2, lo if lo is not None else 0, hi if hi is not None else 0, count, bad)
        if flush:
            yield const_batch(3, 0, 0, 0, 0)

    return mapper


def _as_dict(v) -> dict:
    if v is None:
        return {}
    return v.asDict() if hasattr(v, "asDict") else dict(v)


class _Progress:
    def __init__(self, enabled: bool, name: str) -> None:
        self.enabled, self.name, self.seen = enabled, name, -1
        self.batches: list[dict] = []  # per micro-batch: id, input rows, ms, state bytes (for the bench)

    def report(self, query) -> None:
        for p in query.recentProgress:
            if p["batchId"] > self.seen:
                self._one(p)

    def _one(self, p) -> None:
        self.seen = p["batchId"]
        self.batches.append({"batch": p["batchId"], "rows": p.get("numInputRows", 0),
                             "ms": p.get("durationMs", {}).get("triggerExecution", 0),
                             "state_bytes": sum(op.get("memoryUsedBytes", 0) for op in p.get("stateOperators", []))})
        if not self.enabled:
            return
        observed = p.get("observedMetrics") or {}
        obs, obs_out = (_as_dict(observed.get(name)) for name in ("tefq_in", "tefq_out"))
        state = sum(op.get("memoryUsedBytes", 0) for op in p.get("stateOperators", []))
        print(f"[spark {self.name}] batch {p['batchId']}: events read {p.get('numInputRows', 0)}, "
              f"event time {obs.get('event_time')}, rows emitted {obs_out.get('rows', 0)}, "
              f"state {state} bytes, {p.get('durationMs', {}).get('triggerExecution', 0)} ms", file=sys.stderr)


def _run_until_done(query, progress: _Progress) -> None:
    while query.isActive:
        query.awaitTermination(1.0)
        progress.report(query)
    progress.report(query)
    exc = query.exception()
    if exc is not None:
        raise exc


def _bad_row_error(text: str) -> TefqError:
    i = text.find(BAD_ROW + "\t")
    tail = text[i + len(BAD_ROW) + 1:].split("\n", 1)[0]
    file, reason, *_ = (tail.split("\t") + ["", ""])[:3]
    from urllib.parse import unquote, urlparse

    path = unquote(urlparse(file).path) if file.startswith("file:") else file
    try:  # the readers know the line and column
        from tefq.io.readers import read_stream_file

        for _ in read_stream_file(path):
            pass
    except TefqError as e:
        return e
    except Exception:  # noqa: BLE001 - fall back to Spark's view of the row
        pass
    return TefqError(f"bad stream row: {reason}", path)


def run_plan(spark: SparkSession, doc: Document, plan, stream_paths: list[str], workdir: str, *,
             t0: int, lateness_ms: int, follow: bool, max_files_per_trigger: int | None,
             bad_rows: str | None, progress: bool, operator=None) -> tuple[QueryResult, dict, list[str]]:
    """`operator(plan)`, if given, replaces the plan's stateful operator (the simulations use it)."""
    qdir = os.path.join(workdir, plan.query)
    ctl, out, ck = (os.path.join(qdir, d) for d in ("control", "output", "checkpoint"))
    os.makedirs(ctl, exist_ok=True)
    sources = [read_stream(spark, p, max_files_per_trigger) for p in stream_paths]
    sources.append(read_control(spark, ctl))
    df = reduce(DataFrame.unionByName, sources)
    if isinstance(plan, FallbackPlan):
        df = _project_all(df).observe("tefq_in", F.max("ts").alias("event_time"), F.count(F.lit(1)).alias("n"))
        mapped = df.mapInArrow(make_fallback_mapper(bad_rows), FALLBACK_MAP_SCHEMA)
        func = make_fallback_operator(doc, plan.query_index, plan.every_ms, t0, lateness_ms)
    else:
        df = _project(df, plan).observe("tefq_in", F.max("ts").alias("event_time"), F.count(F.lit(1)).alias("n"))
        mapped = df.mapInArrow(make_mapper(plan, bad_rows), _map_schema(plan))
        func = fop.make_operator(plan, t0, lateness_ms)
    if operator is not None:
        func = operator(plan)
    result = mapped.groupBy("b").applyInPandasWithState(
        func, fop.OUTPUT_SCHEMA, fop.STATE_SCHEMA, "append", GroupStateTimeout.NoTimeout)
    result = result.observe("tefq_out", F.sum(F.when(F.col("kind") == "rows", 1).otherwise(0)).alias("rows"))
    pr = _Progress(progress, plan.query)

    def start(**trigger):
        return (result.writeStream.format("parquet").option("path", out).option("checkpointLocation", ck)
                .outputMode("append").trigger(**trigger).queryName(f"tefq_{plan.query}_{os.getpid()}").start())

    try:
        if follow:
            _run_until_done(start(processingTime="1 second"), pr)
        else:
            _run_until_done(start(availableNow=True), pr)
            write_flush(ctl)
            _run_until_done(start(availableNow=True), pr)
    except Exception as e:  # noqa: BLE001 - Spark wraps worker errors; find ours
        text = str(e)
        if BAD_ROW in text:
            raise _bad_row_error(text) from None
        raise
    qr, m, warns = _collect(spark, plan, out)
    m["micro_batches"] = pr.batches
    return qr, m, warns


def _read_sink(out: str):
    """The committed files of the parquet sink (its _spark_metadata log), read with pyarrow on the
    driver: result records can be large, and files of a batch that died before its commit are
    not part of the output."""
    import glob
    from urllib.parse import unquote, urlparse

    import pandas as pd
    import pyarrow.parquet as pq

    files: list[str] = []
    for log in sorted(glob.glob(os.path.join(out, "_spark_metadata", "*"))):
        if os.path.basename(log).startswith("."):
            continue
        with open(log, encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if line.startswith("{"):
                    entry = json.loads(line)
                    if entry.get("action", "add") == "add":
                        files.append(unquote(urlparse(entry["path"]).path))
    frames = [pq.read_table(f).to_pandas() for f in dict.fromkeys(files)]
    if not frames:
        return pd.DataFrame({"kind": [], "tick": [], "payload": []})  # no record yet
    return pd.concat(frames, ignore_index=True)


def _collect(spark: SparkSession, plan, out: str) -> tuple[QueryResult, dict, list[str]]:
    pdf = _read_sink(out)
    col = Collector(getattr(plan, "group_vars", ()), getattr(plan, "projections", ()))
    for kind, tick, payload in zip(pdf["kind"], pdf["tick"], pdf["payload"]):
        col.add(kind, tick, payload)
    metrics: dict = {}
    by_batch: dict[int, list[int]] = {}
    for d in col.metrics:
        per = by_batch.setdefault(d.get("batch", 0), [0, 0])
        per[0] += d.get("state_bytes", 0)
        per[1] += d.get("open_facts", 0)
        for k, v in d.items():
            if k not in ("state_bytes", "open_facts", "batch"):
                metrics[k] = metrics.get(k, 0) + v
    if by_batch:  # state size at the batch holding the most open facts
        state_bytes, open_facts = max(by_batch.values(), key=lambda x: x[1])
        metrics["state_bytes_per_open_fact"] = state_bytes / open_facts if open_facts else None
        metrics["peak_open_facts"] = open_facts
    qr = QueryResult(plan.query, plan.columns, col.rows())
    qr.rows = qr.sorted_rows()
    return qr, metrics, col.warnings


def run(doc: Document, stream_paths: list[str], background: str | None = None, *, t0: int = 0,
        lateness_ms: int = 0, master: str | None = None, checkpoint: str | None = None, follow: bool = False,
        max_files_per_trigger: int | None = None, bad_rows: str | None = None, progress: bool = True,
        buckets: int | None = None, spark: SparkSession | None = None) -> RunResult:
    """Run every query of `doc` on Spark over the stream paths; the rows are the oracle's rows."""
    started = time.time()
    if background is not None:
        raise TefqError("background knowledge is not yet supported on Spark (try --engine oracle)", background)
    if not stream_paths:
        raise TefqError("no --stream given")
    spark = spark or get_session(master)
    nb = buckets or max(1, int(spark.conf.get("spark.sql.shuffle.partitions")))
    plans = plan_document(doc, nb)
    tmp = None
    if checkpoint is None:
        tmp = workdir = tempfile.mkdtemp(prefix="tefq-spark-")
    else:
        workdir = checkpoint
        os.makedirs(workdir, exist_ok=True)
    try:
        results, metrics = [], Metrics()
        for i, plan in enumerate(plans):
            qr, m, warns = run_plan(spark, doc, plan, stream_paths, workdir, t0=t0, lateness_ms=lateness_ms,
                                    follow=follow, max_files_per_trigger=max_files_per_trigger,
                                    bad_rows=bad_rows, progress=progress)
            for w in warns:
                print(f"warning: {w}", file=sys.stderr)
            results.append(qr)
            if i == 0:  # every query reads the same input and the facts are shared
                m["events_in"] = m.get("events_in", 0) - m.get("duplicates", 0)  # a stream is a set
                for k in ("events_in", "facts_created", "facts_closed", "unmatched_until", "late_events", "ticks"):
                    setattr(metrics, k, int(m.get(k, 0)))
                metrics.extra["bad_rows"] = int(m.get("bad_rows", 0))
                metrics.extra["micro_batches"] = m.get("micro_batches", [])
                metrics.extra["state_bytes_per_open_fact"] = m.get("state_bytes_per_open_fact")
            metrics.rows_out += len(qr.rows)
        metrics.intermediate_bindings = metrics.facts_created
        metrics.wall_seconds = time.time() - started
        metrics.extra["engine"] = "spark"
        return RunResult(results, metrics)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
