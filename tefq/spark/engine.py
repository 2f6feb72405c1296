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
from typing import Callable

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from tefq.errors import TefqError
from tefq.plan.logical import Document, WindowedQuery
from tefq.results import Metrics, QueryResult, RunResult
from tefq.spark.operators.base import ELEMENT, EVENT_KINDS, OUTPUT_SCHEMA, STATE_SCHEMA, RowKind, profile
from tefq.spark.operators.current import make_operator
from tefq.spark.operators.fallback import make_fallback_operator
from tefq.spark.output import Collector
from tefq.spark.partitioning import by_bucket, checkpointed_labels
from tefq.spark.planning.fact import FactAggregatePlan
from tefq.spark.planning import CurrentAggregatePlan, FallbackPlan, plan_document
from tefq.spark.session import get_session
from tefq.spark.sources import (FLUSH_TERM, Stager, file_ranks, is_staged, read_control, read_stream,
                                write_flush)

BAD_ROW = "TEFQ_BAD_ROW"
EVENT_KIND_SET = pa.array([int(k) for k in EVENT_KINDS], pa.int32())
TERM_START = "^(<[^>]*>|_:\\S+|\".*)$"


def _is_term(col: str) -> "F.Column":
    """`col` rlike TERM_START, with a cheap exact shortcut for the common `<...>` IRI (its only
    `>` is the last character): the regular expression runs only on other cells."""
    c = F.col(col)
    iri = c.startswith("<") & (F.instr(c, ">") == F.length(c))
    return F.when(iri, F.lit(True)).otherwise(c.rlike(TERM_START))


def _bad_reason() -> "F.Column":
    return (F.when(F.col("ts").isNull(), F.lit("timestamp is missing or not a time"))
            .when(F.col("s").isNull() | F.col("p").isNull() | F.col("o").isNull(), F.lit("missing column"))
            .when(~(_is_term("s") & _is_term("p") & _is_term("o")), F.lit("not an N-Triples term")))


def _bad_text(bad_reason: "F.Column") -> "F.Column":
    return F.when(bad_reason.isNotNull(), F.concat_ws("\t", F.col("file"), bad_reason,
                                                      F.coalesce(F.col("ts_text"), F.lit("")),
                                                      F.coalesce("s", F.lit("")), F.coalesce("p", F.lit("")),
                                                      F.coalesce("o", F.lit(""))))


def _clause_condition(c) -> "F.Column":
    conds = [F.col(col) == F.lit(term) for col, term in c.consts] + [F.col(a) == F.col(b) for a, b in c.same]
    return reduce(lambda x, y: x & y, conds, F.lit(True))


def _is_good() -> "F.Column":
    """The row is well formed (the negation of `_bad_reason`), as one cheap boolean: the reason
    text is built only for the rare bad row."""
    return (F.col("ts").isNotNull() & F.col("s").isNotNull() & F.col("p").isNotNull() & F.col("o").isNotNull()
            & _is_term("s") & _is_term("p") & _is_term("o"))


def _determines_element(c) -> bool:
    """The clause's constants and identity columns (and columns equal to those) are s, p and o."""
    known = {col for col, _ in c.consts} | set(c.binds)
    for _ in range(2):
        known |= {b for a, b in c.same if a in known} | {a for a, b in c.same if b in known}
    return known >= {"s", "p", "o"}


def _project(df: DataFrame, plan: CurrentAggregatePlan) -> DataFrame:
    """Clause matching and dictionary encoding in Spark SQL: only int64 codes (and the group
    terms, for decoding the output) cross into Python. Two steps: the row checks and the matching
    clause are computed once per row (`good`, `m`), then every column reads them (Spark keeps
    the two projections apart because `good` is used more than once)."""
    match = F.lit(-1)
    for i, c in reversed(list(enumerate(plan.clauses))):
        match = F.when(_clause_condition(c), F.lit(i)).otherwise(match)
    df = df.select("*", _is_good().alias("good"), match.alias("m"))
    m, good = F.col("m"), F.col("good")

    def per_clause(make) -> "F.Column":
        expr = None
        for i, c in enumerate(plan.clauses):
            expr = F.when(m == i, make(c)) if expr is None else expr.when(m == i, make(c))
        return expr

    kind = F.when(F.col("p") == F.lit(FLUSH_TERM), F.lit(int(RowKind.FLUSH))).when(~good, F.lit(int(RowKind.BAD)))
    for i, c in enumerate(plan.clauses):
        kind = kind.when(m == i, F.lit(c.kind))
    kind = kind.otherwise(F.lit(int(RowKind.OTHER)))
    var_pos = {v: i for i, v in enumerate(plan.identity)}
    fid = per_clause(lambda c: F.xxhash64(*[F.col(x) for x in c.binds]))
    # A stream is a set: duplicates are equal elements at one time. When a clause's constants and
    # identity columns cover s, p and o, (clause, identity) is the element: its hash is the fid.
    one_per_kind = len({c.kind for c in plan.clauses}) == len(plan.clauses)
    elem = fid if one_per_kind and all(_determines_element(c) for c in plan.clauses) else F.xxhash64("s", "p", "o")
    cols = [kind.cast("int").alias("k"), F.col("ts"), F.col("fh").alias("o"), fid.alias("f"),
            elem.alias("e"), F.lit(0).cast("long").alias("n")]
    # Only a SINCE opens a fact, so only SINCE rows' group terms can reach the output: the strings
    # of other rows are not sent to Python at all (strings are the costly cells there).
    since = reduce(lambda x, y: x | y, [m == j for j, c in enumerate(plan.clauses) if c.kind == RowKind.SINCE],
                   F.lit(False))
    terms = []
    for i, g in enumerate(plan.group_vars):
        term = per_clause(lambda c, j=var_pos[g]: F.col(c.binds[j]))
        terms.append(term)
        cols.append(F.xxhash64(term).alias(f"g{i}"))
        cols.append(F.when(since, term).alias(f"t{i}"))
    bucket = F.pmod(F.xxhash64(*terms), F.lit(plan.buckets)) if terms else F.lit(0)
    cols.append(F.coalesce(bucket, F.lit(0)).cast("int").alias("b"))
    cols.append(F.when(~good, _bad_text(_bad_reason())).alias("x"))
    return df.select(*cols)


def _project_all(df: DataFrame) -> DataFrame:
    """For the fallback: every row, with its terms (the oracle needs them all)."""
    bad = _bad_reason()
    kind = (F.when(F.col("p") == F.lit(FLUSH_TERM), F.lit(int(RowKind.FLUSH)))
            .when(bad.isNotNull(), F.lit(int(RowKind.BAD))).otherwise(F.lit(int(ELEMENT))))
    return df.select(kind.cast("int").alias("k"), "ts", F.col("fh").alias("o"), "s", "p",
                     F.col("o").alias("obj"), F.lit(0).cast("int").alias("b"), _bad_text(bad).alias("x"))


FALLBACK_MAP_SCHEMA = "k int, ts long, o long, s string, p string, obj string, b int, x string"


class TieOrder:
    """Per input partition, the order key of ties (< 2^42, see operator.ORDER_SHIFT): file rank
    (< 2^19) << 22 + row within the file. `o` arrives as xxhash64 of the row's file path; `ranks`
    (tefq.spark.sources.file_ranks) maps it to the file's place in stream order. Files not ranked
    come after the ranked ones, in partition then row order; so does everything without ranks."""

    UNRANKED = 1 << 41

    def __init__(self, ranks: dict[int, int], partition: int) -> None:
        self.ranks, self.partition, self.row = ranks, partition, 0
        self.start: dict[int, int] = {}  # first row of each ranked file in this partition

    def __call__(self, fh: pa.Array) -> pa.Array:
        rows = np.arange(self.row, self.row + len(fh), dtype=np.int64)
        self.row += len(fh)
        if not self.ranks or not len(fh):
            return pa.array((self.partition << 33) + rows)
        h = fh.to_numpy(zero_copy_only=False)
        starts = np.concatenate(([0], np.flatnonzero(h[1:] != h[:-1]) + 1))  # a file's rows are contiguous
        offset = np.empty(len(starts), np.int64)  # per run of one file: key = offset + row in partition
        for i, (u, f) in enumerate(zip(h[starts].tolist(), starts.tolist())):
            r = self.ranks.get(u)
            offset[i] = (self.UNRANKED + (self.partition << 31) if r is None
                         else (r << 22) - self.start.setdefault(u, int(rows[f])))
        return pa.array(np.repeat(offset, np.diff(np.append(starts, len(h)))) + rows)


def make_fallback_mapper(bad_rows: str | None, ranks: dict[int, int] | None = None):
    fields = [("k", pa.int32()), ("ts", pa.int64()), ("o", pa.int64()), ("s", pa.string()), ("p", pa.string()),
              ("obj", pa.string()), ("b", pa.int32()), ("x", pa.string())]
    out_schema = pa.schema(fields)

    def mapper(batches):
        import pyarrow.compute as pc
        from pyspark import TaskContext

        ctx = TaskContext.get()
        tie_order = TieOrder(ranks or {}, ctx.partitionId() if ctx is not None else 0)
        for rb in batches:
            badmask = pc.equal(rb.column("k"), int(RowKind.BAD))
            if pc.any(badmask).as_py():
                _divert_bad(pc.filter(rb.column("x"), badmask).to_pylist(), bad_rows)
            order = tie_order(rb.column("o"))
            cols = [order if name == "o" else rb.column(name) for name in out_schema.names]
            keep = pa.RecordBatch.from_arrays(cols, schema=out_schema).filter(pc.not_equal(rb.column("k"), int(RowKind.BAD)))
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


class PartitionScan:
    """What a mapper learns from its input partition besides the rows it keeps: the event-time
    range and number of stream rows (for the heartbeats) and the bad rows (raised, or written
    to --bad-rows and counted)."""

    def __init__(self, bad_rows: str | None) -> None:
        self.bad_rows = bad_rows
        self.lo: int | None = None
        self.hi: int | None = None
        self.count = self.bad = 0

    def see(self, rb: pa.RecordBatch, real: pa.Array, badmask: pa.Array) -> None:
        """`real`: the rows that are stream elements; `badmask`: the bad ones (text in column x)."""
        import pyarrow.compute as pc

        tsr = pc.filter(rb.column("ts"), real)
        if len(tsr):
            mm = pc.min_max(tsr)
            a, z = mm["min"].as_py(), mm["max"].as_py()
            self.lo = a if self.lo is None else min(self.lo, a)
            self.hi = z if self.hi is None else max(self.hi, z)
            self.count += len(tsr)
        if pc.any(badmask).as_py():
            rows = pc.filter(rb.column("x"), badmask).to_pylist()
            _divert_bad(rows, self.bad_rows)
            self.bad += len(rows)

    @property
    def any(self) -> bool:
        return bool(self.count or self.bad)


def _map_schema(plan: CurrentAggregatePlan) -> str:
    parts = ["k int", "ts long", "o long", "f long", "e long", "n long"]
    for i in range(len(plan.group_vars)):
        parts += [f"g{i} long", f"t{i} string"]
    return ", ".join(parts + ["b int"])


def make_mapper(plan: CurrentAggregatePlan, bad_rows: str | None, ranks: dict[int, int] | None = None):
    """Per input partition: keep SINCE/UNTIL rows (their group terms dropped: each distinct
    `code -> term` pair travels once per partition and bucket, on a terms row), divert bad rows,
    and send every bucket one heartbeat with the partition's event-time range, so that all
    buckets see the time reached. `mapper(batches, partition)`: partition defaults to Spark's."""
    nb = plan.buckets
    ng = len(plan.group_vars)
    fields = [("k", pa.int32()), ("ts", pa.int64()), ("o", pa.int64()), ("f", pa.int64()), ("e", pa.int64()),
              ("n", pa.int64())]
    for i in range(ng):
        fields += [(f"g{i}", pa.int64()), (f"t{i}", pa.string())]
    out_schema = pa.schema(fields + [("b", pa.int32())])

    def const_batch(kind: int, size: int, **cols) -> pa.RecordBatch:
        arrays = {"k": pa.array(np.full(size, kind, np.int32))}
        for name, typ in fields[1:] + [("b", pa.int32())]:
            value = cols.get(name)
            if value is None:
                arrays[name] = (pa.nulls(size, typ) if typ == pa.string()
                                else pa.array(np.zeros(size, typ.to_pandas_dtype())))
            else:
                arrays[name] = value if isinstance(value, pa.Array) else pa.array(value, typ)
        return pa.RecordBatch.from_pydict(arrays, schema=out_schema)

    def mapper(batches, partition: int | None = None):
        import pyarrow.compute as pc

        from pyspark import TaskContext

        if partition is None:
            ctx = TaskContext.get()
            partition = ctx.partitionId() if ctx is not None else 0
        tie_order = TieOrder(ranks or {}, partition)  # stream order of ties
        scan, flush, seen = PartitionScan(bad_rows), False, False
        named: list[set] = [set() for _ in range(ng)]  # (bucket, code) pairs already sent, per group var
        term_rows: list[tuple[int, int, int, str]] = []  # (group var, bucket, code, term)
        busy, rows_in, started = 0.0, 0, time.perf_counter()
        for rb in batches:
            t = time.perf_counter()
            seen = True
            rows_in += rb.num_rows
            k = rb.column("k")
            data = pc.is_in(k, EVENT_KIND_SET)  # SINCE/UNTIL rows: the only ones shuffled
            scan.see(rb, pc.or_(pc.equal(k, int(RowKind.OTHER)), data), pc.equal(k, int(RowKind.BAD)))
            flush = flush or pc.any(pc.equal(k, int(RowKind.FLUSH))).as_py()
            order = tie_order(rb.column("o"))
            keep_idx = np.nonzero(data.to_numpy(zero_copy_only=False))[0]
            opens = keep_idx[k.to_numpy(zero_copy_only=False)[keep_idx] == RowKind.SINCE]  # the rows with terms
            if ng and len(opens):
                buckets = rb.column("b").to_numpy(zero_copy_only=False)[opens]
                for i in range(ng):
                    codes = rb.column(f"g{i}").to_numpy(zero_copy_only=False)[opens]
                    for b in np.unique(buckets).tolist():
                        sel = np.nonzero(buckets == b)[0]
                        uniq, first = np.unique(codes[sel], return_index=True)
                        new = [(c, j) for c, j in zip(uniq.tolist(), first.tolist()) if (b, c) not in named[i]]
                        if new:
                            terms = rb.column(f"t{i}").take(pa.array(opens[sel[[j for _, j in new]]])).to_pylist()
                            for (c, _), term in zip(new, terms):
                                named[i].add((b, c))
                                term_rows.append((i, b, c, term))
            if len(keep_idx):
                cols = {name: order if name == "o" else rb.column(name) for name in out_schema.names}
                for i in range(ng):
                    cols[f"t{i}"] = pa.nulls(rb.num_rows, pa.string())
                keep = pa.RecordBatch.from_arrays([cols[n] for n in out_schema.names], schema=out_schema)
                busy += time.perf_counter() - t
                yield keep.take(pa.array(keep_idx)) if len(keep_idx) < rb.num_rows else keep
            else:
                busy += time.perf_counter() - t
        profile("mapper", rows_in=rows_in, busy_s=busy, total_s=time.perf_counter() - started)
        if not seen:
            return
        if term_rows:
            cols = {"b": [b for _, b, _, _ in term_rows]}
            for i in range(ng):
                cols[f"g{i}"] = [c if j == i else 0 for j, _, c, _ in term_rows]
                cols[f"t{i}"] = [term if j == i else None for j, _, _, term in term_rows]
            yield const_batch(RowKind.TERMS, len(term_rows), **cols)
        if scan.any:
            yield const_batch(RowKind.HEARTBEAT, nb, ts=[scan.lo or 0] * nb, o=[scan.hi or 0] * nb, f=[scan.count] * nb,
                              n=[scan.bad] * nb, b=list(range(nb)))
        if flush:
            yield const_batch(RowKind.FLUSH, nb, b=list(range(nb)))

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
                             "durations_ms": dict(p.get("durationMs", {})),
                             "state_bytes": sum(op.get("memoryUsedBytes", 0) for op in p.get("stateOperators", []))})
        if not self.enabled:
            return
        observed = p.get("observedMetrics") or {}
        obs, obs_out = (_as_dict(observed.get(name)) for name in ("tefq_in", "tefq_out"))
        state = sum(op.get("memoryUsedBytes", 0) for op in p.get("stateOperators", []))
        print(f"[spark {self.name}] batch {p['batchId']}: events read {p.get('numInputRows', 0)}, "
              f"event time {obs.get('event_time')}, ticks emitted {obs_out.get('ticks') or 0}, "
              f"rows emitted {obs_out.get('rows') or 0}, "
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


def build_plan(spark: SparkSession, doc: Document, plan, stream_paths: list[str], workdir: str, *,
               t0: int, lateness_ms: int, max_files_per_trigger: int | None, bad_rows: str | None,
               progress: bool, background: list | None = None, ranks: dict[int, int] | None = None,
               operator=None):
    """The streaming query of one plan, not started: (start(**trigger), sink dir, control dir, progress).
    `ranks`: the stream order of the files (tefq.spark.sources.file_ranks), for ties.
    `operator(plan)`, if given, replaces the plan's stateful operator (the simulations use it)."""
    qdir = os.path.join(workdir, plan.query)
    ctl, out, ck = (os.path.join(qdir, d) for d in ("control", "output", "checkpoint"))
    os.makedirs(ctl, exist_ok=True)
    sources = [read_stream(spark, p, max_files_per_trigger) for p in stream_paths]
    sources.append(read_control(spark, ctl))
    df = reduce(DataFrame.unionByName, sources)
    if isinstance(plan, FallbackPlan):
        df = _project_all(df).observe("tefq_in", F.max("ts").alias("event_time"), F.count(F.lit(1)).alias("n"))
        mapped = df.mapInArrow(make_fallback_mapper(bad_rows, ranks), FALLBACK_MAP_SCHEMA)
        func = make_fallback_operator(doc, plan.query_index, plan.every_ms, t0, lateness_ms, background)
    elif isinstance(plan, FactAggregatePlan):  # derived facts, fact patterns, WHILE (tefq.spark.derived_*)
        from tefq.spark import derived_spark
        from tefq.spark.operators.fact import make_fact_operator

        df = derived_spark.project_facts(df, plan).observe(
            "tefq_in", F.max("ts").alias("event_time"), F.count(F.lit(1)).alias("n"))
        mapped = df.mapInArrow(derived_spark.make_fact_mapper(plan, bad_rows, ranks), derived_spark.map_schema(plan))
        func = make_fact_operator(plan, t0, lateness_ms)
    else:
        df = _project(df, plan).observe("tefq_in", F.max("ts").alias("event_time"), F.count(F.lit(1)).alias("n"))
        mapped = df.mapInArrow(make_mapper(plan, bad_rows, ranks), _map_schema(plan))
        func = make_operator(plan, t0, lateness_ms)
    if operator is not None:
        func = operator(plan)
    # One bucket per shuffle partition (tefq.spark.partitioning): group by each bucket's label.
    labels = checkpointed_labels(qdir, ck, plan.buckets, int(spark.conf.get("spark.sql.shuffle.partitions")))
    mapped = mapped.withColumn("b", F.element_at(F.array(*[F.lit(v) for v in labels]), F.col("b") + 1))
    result = mapped.groupBy("b").applyInPandasWithState(
        by_bucket(func, labels), OUTPUT_SCHEMA, STATE_SCHEMA, "append", GroupStateTimeout.NoTimeout)

    def metric(name: str) -> "F.Column":  # summed over the micro-batch's metric records
        value = F.get_json_object(F.col("payload").cast("string"), f"$.{name}").cast("long")
        return F.sum(F.when(F.col("kind") == "metric", value))

    result = result.observe("tefq_out", metric("rows_out").alias("rows"), metric("ticks").alias("ticks"))
    pr = _Progress(progress, plan.query)

    def start(**trigger):
        return (result.writeStream.format("parquet").option("path", out).option("checkpointLocation", ck)
                .outputMode("append").trigger(**trigger).queryName(f"tefq_{plan.query}_{os.getpid()}").start())

    return start, out, ctl, pr


def ours(e: Exception) -> Exception:
    """Spark wraps worker errors: a bad row becomes the reader's located TefqError."""
    text = str(e)
    return _bad_row_error(text) if BAD_ROW in text else e


def run_plan(spark: SparkSession, doc: Document, plan, stream_paths: list[str], workdir: str, *,
             t0: int, lateness_ms: int, max_files_per_trigger: int | None,
             bad_rows: str | None, progress: bool, background: list | None = None,
             ranks: dict[int, int] | None = None, operator=None) -> tuple[QueryResult, dict, list[str]]:
    """A bounded run: every file available now, then a flush for the last ticks."""
    start, out, ctl, pr = build_plan(spark, doc, plan, stream_paths, workdir, t0=t0, lateness_ms=lateness_ms,
                                     max_files_per_trigger=max_files_per_trigger, bad_rows=bad_rows,
                                     progress=progress, background=background, ranks=ranks, operator=operator)
    try:
        _run_until_done(start(availableNow=True), pr)
        write_flush(ctl)
        _run_until_done(start(availableNow=True), pr)
    except Exception as e:  # noqa: BLE001 - Spark wraps worker errors; find ours
        err = ours(e)
        if err is e:
            raise
        raise err from None
    collect_started = time.perf_counter()
    qr, m, warns = _collect(spark, plan, out)
    m["collect_seconds"] = time.perf_counter() - collect_started
    m["micro_batches"] = pr.batches
    return qr, m, warns


def committed_files(out: str) -> list[str]:
    """The committed files of the parquet sink (its _spark_metadata log): files of a batch that
    died before its commit are not part of the output."""
    import glob
    from urllib.parse import unquote, urlparse

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
    return list(dict.fromkeys(files))


def read_sink_files(files: list[str]):
    """Sink records read with pyarrow on the driver (result records can be large)."""
    import pandas as pd
    import pyarrow.parquet as pq

    frames = [pq.read_table(f).to_pandas() for f in files]
    if not frames:
        return pd.DataFrame({"kind": [], "tick": [], "payload": []})  # no record yet
    return pd.concat(frames, ignore_index=True)


def _read_sink(out: str):
    return read_sink_files(committed_files(out))


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
    qr = QueryResult(plan.query, plan.columns, col.sorted_rows())
    return qr, metrics, col.warnings


def _run_windowed(spark, doc, plan, stream_paths, workdir, results: list, metrics: Metrics, **kwargs) -> None:
    from tefq.spark.windowed import run_windowed

    qrs, m = run_windowed(spark, doc, plan, stream_paths, workdir, **kwargs)
    results.extend(qrs)
    metrics.rows_out += sum(len(r.rows) for r in qrs)
    metrics.ticks += m.get("ticks", 0)  # windows evaluated, empty ones included (spec §8)
    metrics.intermediate_bindings += m.get("feedback_triples", 0)  # REGISTER STREAM feedback (spec §7)
    metrics.late_events += m.get("late_events", 0)
    if not metrics.events_in:
        metrics.events_in = m.get("events_in", 0)
    metrics.extra["bad_rows"] = metrics.extra.get("bad_rows", 0) + m.get("bad_rows", 0)
    metrics.extra.setdefault("micro_batches", m.get("micro_batches", []))


def run(doc: Document, stream_paths: list[str], background=None, *, t0: int = 0,
        lateness_ms: int = 0, master: str | None = None, checkpoint: str | None = None, follow: bool = False,
        max_files_per_trigger: int | None = None, bad_rows: str | None = None, progress: bool = True,
        buckets: int | None = None, spark: SparkSession | None = None,
        on_rows: Callable[[list[QueryResult]], None] | None = None,
        stop: Callable[[], bool] | None = None) -> RunResult:
    """Run every query of `doc` on Spark over the stream paths; the rows are the oracle's rows.

    `background`: a file path or an rdflib graph. `follow`: keep watching the stream directories
    (tefq.spark.follow): `on_rows` receives each micro-batch's new rows, the run ends when `stop()`
    turns true (default: on SIGINT/SIGTERM)."""
    started = time.time()
    if not stream_paths:
        raise TefqError("no --stream given")
    if follow and any(isinstance(q, WindowedQuery) for q in doc.queries):
        raise TefqError("--follow is not yet supported for windowed (REGISTER QUERY) queries on Spark; "
                        "run them bounded", file="--follow")
    triples = _background_triples(background)
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
        if follow:
            from tefq.spark.follow import follow_plans

            results, m = follow_plans(spark, doc, plans, stream_paths, workdir, t0=t0, lateness_ms=lateness_ms,
                                      max_files_per_trigger=max_files_per_trigger, bad_rows=bad_rows,
                                      progress=progress, background=triples, on_rows=on_rows, stop=stop)
            metrics = _metrics(m, Metrics())
            metrics.rows_out = sum(len(r.rows) for r in results)
        else:
            _, paths = stage_streams(stream_paths, workdir)
            ranks = file_ranks(spark, paths)
            results, metrics, first = [], Metrics(), True
            for plan in plans:
                if getattr(plan, "query", None) == "windowed":  # C-SPARQL queries: tefq.spark.windowed
                    _run_windowed(spark, doc, plan, paths, workdir, results, metrics, t0=t0,
                                  lateness_ms=lateness_ms, follow=False, max_files_per_trigger=max_files_per_trigger,
                                  bad_rows=bad_rows, progress=progress)
                    continue
                qr, m, warns = run_plan(spark, doc, plan, paths, workdir, t0=t0, lateness_ms=lateness_ms,
                                        max_files_per_trigger=max_files_per_trigger, bad_rows=bad_rows,
                                        progress=progress, background=triples, ranks=ranks)
                for w in warns:
                    print(f"warning: {w}", file=sys.stderr)
                results.append(qr)
                if first:  # every query reads the same input and the facts are shared
                    _metrics(m, metrics)
                    first = False
                metrics.rows_out += len(qr.rows)
        metrics.intermediate_bindings += metrics.facts_created
        order = {q.name: i for i, q in enumerate(doc.queries)}
        results.sort(key=lambda r: order.get(r.name, len(order)))
        metrics.wall_seconds = time.time() - started
        metrics.extra["engine"] = "spark"
        return RunResult(results, metrics)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _metrics(m: dict, metrics: Metrics) -> Metrics:
    """The run's metrics (filled in) from the first fact query's sink metrics."""
    m["events_in"] = m.get("events_in", 0) - m.get("duplicates", 0)  # a stream is a set
    for k in ("events_in", "facts_created", "facts_closed", "unmatched_until", "late_events", "ticks"):
        setattr(metrics, k, int(m.get(k, 0)))
    metrics.extra["bad_rows"] = int(m.get("bad_rows", 0))
    metrics.extra["micro_batches"] = m.get("micro_batches", [])
    metrics.extra["collect_seconds"] = m.get("collect_seconds")
    metrics.extra["state_bytes_per_open_fact"] = m.get("state_bytes_per_open_fact")
    return metrics


def _background_triples(background) -> list | None:
    """The background graph as a list of rdflib-term triples: small, picklable, shipped to the
    executors with the fallback operator (the only operator that joins with it today)."""
    if background is None:
        return None
    if isinstance(background, str):
        from tefq.io.readers import read_background

        background = read_background(background)
    return [tuple(t[:3]) for t in background]


def stage_streams(stream_paths: list[str], workdir: str) -> tuple[list[Stager], list[str]]:
    """RDF streams become staged Parquet directories (tefq.spark.sources.Stager); others stay."""
    import hashlib

    stagers, paths = [], []
    for p in stream_paths:
        if is_staged(p):
            key = hashlib.sha1(os.path.abspath(p).encode("utf-8")).hexdigest()[:12]
            stager = Stager(p, os.path.join(workdir, "staged", key))
            stager.sync()
            stagers.append(stager)
            paths.append(stager.directory)
        else:
            paths.append(p)
    return stagers, paths
