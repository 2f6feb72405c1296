"""The mapper (mapInArrow) between the input and the stateful operators, written once: per input
partition it reads batches, settles the bad rows and notes the event times (`PartitionScan`),
encodes the rows the plan's operator needs, routes them to their buckets, and at the end sends
the protocol's trailer (tefq.spark.protocol): the TERMS rows, one heartbeat per bucket, the flush.

What differs is a parameter each:
- the input: rows of Spark's projection (`SparkRows`) or Parquet files a task reads with pyarrow
  (`ParquetFiles`, runtime/columnar.py);
- the plan's encoding (runtime/encodings.py): current aggregate, fact rows or whole elements;
- the routing (runtime/routing.py): buckets set by the encoding, or rows routed after it.
Each plan's shape (tefq.spark.shapes) names its encoding and routing.
"""
from __future__ import annotations

import time
from typing import Callable, Iterator

import pyarrow as pa

from tefq.spark.operators.base import profile
from tefq.spark.protocol import BAD, FLUSH, FileTieOrder, TieOrder, are_elements, ddl, flush_rows, heartbeat_rows
from tefq.spark.runtime.columnar import FileOrder, read_files
from tefq.spark.runtime.encodings import Encoding
from tefq.spark.runtime.routing import RowRouting
from tefq.spark.runtime.scan import PartitionScan, settle_undecided

class SparkRows:
    """Input: rows of Spark's projection (columns k, ts, o = the file's xxhash64, ..., x). `ranks`:
    the files' stream order for ties (tefq.spark.runtime.ranks.file_ranks)."""

    profile = "mapper"

    def __init__(self, ranks: dict[int, int], fix: Callable | None = None) -> None:
        self.ranks, self.fix = ranks, fix  # fix: scan.settle_undecided's (a windowed plan's NormalCells)

    def rows(self, batches, scan: PartitionScan, enc: Encoding) -> Iterator[pa.RecordBatch]:
        tie_order = TieOrder(self.ranks, scan.partition)  # stream order of ties
        for rb in batches:
            scan.seen = True
            scan.rows_in += rb.num_rows
            rb = settle_undecided(rb, self.fix)
            kinds = rb.column("k").to_numpy(zero_copy_only=False)
            real, bad = are_elements(kinds), kinds == int(BAD)
            first = enc.first(rb)
            if first is not None:  # several rows of one element: count it once
                real, bad = real & first, bad & first
            scan.see(rb, real, bad)
            scan.flush = scan.flush or bool((kinds == int(FLUSH)).any())
            out = enc.projected(rb, kinds, tie_order(rb.column("o")))
            if out is not None:
                yield out


class ParquetFiles:
    """Input: (path, flush) rows; each file is read, checked and coded by the task
    (runtime/columnar.py). `order`: each file's stream and place in stream order (`FileOrder`)."""

    profile = "columnar_mapper"

    def __init__(self, order: FileOrder, since: int | None = None) -> None:
        self.order, self.since = order, since  # since: the first event time of the run's elements (windowed: t0)

    def rows(self, batches, scan: PartitionScan, enc: Encoding) -> Iterator[pa.RecordBatch]:
        order = FileTieOrder(scan.partition)
        for fb in read_files(batches, self.order, scan, self.since):
            out = enc.from_file(fb, order)
            if out is not None:
                yield out


def partition_mapper(reader: SparkRows | ParquetFiles, encoding: Callable[[], Encoding], routing: RowRouting,
                     bad_rows: str | None) -> Callable:
    """The mapInArrow function: `mapper(batches, partition)` (partition defaults to Spark's)."""

    def mapper(batches, partition: int | None = None) -> Iterator[pa.RecordBatch]:
        scan = PartitionScan(bad_rows, partition, record=routing.only in (None, 0))
        enc = encoding()
        started = time.perf_counter()
        for rb in reader.rows(batches, scan, enc):
            yield routing.route(rb)
        profile(reader.profile, rows_in=scan.rows_in, total_s=time.perf_counter() - started)
        if not scan.seen:
            return
        yield from enc.trailer()
        if scan.any:
            yield heartbeat_rows(enc.schema, routing.targets, scan.lo, scan.hi, scan.count, scan.bad, scan.streams())
        if scan.flush:
            yield flush_rows(enc.schema, routing.targets)

    return mapper


def make_mapper(plan, bad_rows: str | None, ranks: dict[int, int] | None = None, *,
                files: FileOrder | None = None, only: int | None = None) -> Callable:
    """The plan's mapper over rows of Spark's projection (`ranks`: tie order), or over (path, flush)
    rows when `files` (the files' stream order, runtime/columnar.FileOrder) is given. `only`:
    emit bucket `only`'s rows alone (direct ingestion; bucket 0 records the bad rows)."""
    return mapper_maker(plan, bad_rows, ranks, files=files)(only)


def mapper_maker(plan, bad_rows: str | None, ranks: dict[int, int] | None = None, *,
                 files: FileOrder | None = None) -> Callable[[int | None], Callable]:
    """`make_mapper`'s mappers by `only`, the plan's shape asked here on the driver: a task that
    makes its own (direct ingestion) imports no planner (docs/spark.md "Start-up")."""
    from tefq.spark.shapes import shape_of  # deferred: the registry imports every planner

    shape = shape_of(plan)
    if files is not None:
        reader, encoding = ParquetFiles(files, shape.since(plan)), shape.file_encoding or shape.encoding
    else:
        reader, encoding = SparkRows(ranks or {}, shape.cells(plan)), shape.encoding
    routings = {only: shape.routing(plan, only) for only in (None, *range(plan.buckets))}
    return lambda only: partition_mapper(reader, lambda: encoding(plan, only), routings[only], bad_rows)


def wire_schema(plan) -> pa.Schema:
    """The plan's wire rows' schema (mapInArrow's output: `protocol.ddl`)."""
    from tefq.spark.shapes import shape_of  # deferred: the registry imports every planner

    return shape_of(plan).encoding.wire(plan)


def map_schema(plan) -> str:
    """The DDL schema of the plan's mapper output (mapInArrow)."""
    return ddl(wire_schema(plan))


current_map_schema = map_schema  # the name bench/profile_spark.py uses
