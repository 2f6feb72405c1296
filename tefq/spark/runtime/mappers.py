"""The mapper (mapInArrow) between the input and the stateful operators, written once: per input
partition it reads batches, settles the bad rows and notes the event times (`PartitionScan`),
encodes the rows the plan's operator needs, routes them to their buckets, and at the end sends
the protocol's trailer (tefq.spark.protocol): the TERMS rows, one heartbeat per bucket, the flush.

What differs is a parameter each:
- the input: rows of Spark's projection (`SparkRows`) or Parquet files a task reads with pyarrow
  (`ParquetFiles`, runtime/columnar.py);
- the plan's encoding (runtime/encodings.py): current aggregate, fact rows or whole elements;
- the routing (`Routing`): buckets set by the encoding, or fact rows routed after it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterator

import pyarrow as pa

from tefq.spark.operators.base import profile
from tefq.spark.planning import FactAggregatePlan, WindowedPlan
from tefq.spark.protocol import BAD, FLUSH, FileTieOrder, TieOrder, are_elements, ddl, flush_rows, heartbeat_rows
from tefq.spark.runtime.columnar import read_files
from tefq.spark.runtime.encodings import ENCODINGS, Encoding, wire_schema
from tefq.spark.runtime.fact_buckets import route_batch
from tefq.spark.runtime.normal_cells import NormalCells
from tefq.spark.runtime.scan import PartitionScan, settle_undecided
from tefq.spark.runtime.windowed_rows import WindowedRows, route_by_window

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
    (runtime/columnar.py). `ranks`: each file's absolute path -> its stream order (`path_ranks`)."""

    profile = "columnar_mapper"

    def __init__(self, ranks: dict[str, int], since: int | None = None) -> None:
        self.ranks, self.since = ranks, since  # since: the first event time of the run's elements (windowed: t0)

    def rows(self, batches, scan: PartitionScan, enc: Encoding) -> Iterator[pa.RecordBatch]:
        order = FileTieOrder(scan.partition)
        for fb in read_files(batches, self.ranks, scan, self.since):
            out = enc.from_file(fb, order)
            if out is not None:
                yield out


@dataclass(frozen=True)
class Routing:
    """Which buckets a partition's rows go to. `only`: bucket `only` alone (direct ingestion).
    `routes`: a fact plan's (`FactAggregatePlan.event_routes`), applied after the encoding; other
    plans' encodings set each row's bucket themselves."""

    buckets: int
    only: int | None = None
    routes: tuple[int, ...] | None = None

    windows: WindowedPlan | None = None  # a windowed plan split by its windows (`slabs`)

    @staticmethod
    def of(plan, only: int | None = None) -> "Routing":
        routes = plan.event_routes if isinstance(plan, FactAggregatePlan) else None
        split = plan if isinstance(plan, WindowedPlan) and plan.slabs is not None else None
        return Routing(plan.buckets, only, routes, split)

    @property
    def targets(self) -> list[int]:
        """The buckets every control row (heartbeat, flush) goes to."""
        return list(range(self.buckets)) if self.only is None else [self.only]

    def route(self, rb: pa.RecordBatch) -> pa.RecordBatch:
        if self.windows is not None:
            return route_by_window(self.windows, rb, self.only)
        return rb if self.routes is None else route_batch(self.routes, self.buckets, rb, self.only)


def partition_mapper(reader: SparkRows | ParquetFiles, encoding: Callable[[], Encoding], routing: Routing,
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
                files: dict[str, int] | None = None, only: int | None = None) -> Callable:
    """The plan's mapper over rows of Spark's projection (`ranks`: tie order), or over (path, flush)
    rows when `files` (each file's stream rank, runtime/columnar.path_ranks) is given. `only`:
    emit bucket `only`'s rows alone (direct ingestion; bucket 0 records the bad rows)."""
    windowed = isinstance(plan, WindowedPlan)
    fix = NormalCells(plan).fix if windowed else None  # its cells decide buckets
    reader = ParquetFiles(files, plan.t0 if windowed else None) if files is not None else SparkRows(ranks or {}, fix)
    encoding = WindowedRows if windowed and files is not None else ENCODINGS[type(plan)]
    return partition_mapper(reader, lambda: encoding(plan, only), Routing.of(plan, only), bad_rows)


def map_schema(plan) -> str:
    """The DDL schema of the plan's mapper output (mapInArrow)."""
    return ddl(wire_schema(plan))


current_map_schema = map_schema  # the name bench/profile_spark.py uses
