"""What a mapper task learns from its input partition besides the rows it emits: the event-time
range and the number of stream elements (for the heartbeats), whether the end of input came, and
the bad rows — settled by the oracle's rules for a Parquet row, then raised (no --bad-rows: the
driver locates the first, tefq.spark.runtime.progress) or written to --bad-rows and counted."""
from __future__ import annotations

import json
from typing import Callable

import numpy as np
import pyarrow as pa

from tefq.errors import BAD_ROW, WorkerFailure
from tefq.io.bad_rows import BadRowLog
from tefq.io.paths import local_path
from tefq.io.readers import parquet_row_fault
from tefq.io.validate import Fault, check_term
from tefq.spark.protocol import RowKind, StreamTimes, stream_of


class PartitionScan:
    """One mapper call's view of its partition. `record`: whether this task writes the bad rows
    it diverts (direct ingestion: every bucket reads every file, bucket 0 records them)."""

    def __init__(self, bad_rows: str | None, partition: int | None = None, record: bool = True) -> None:
        self.bad_rows, self.record = bad_rows, record
        self.lo: int | None = None
        self.hi: int | None = None
        self.count = self.bad = self.rows_in = 0
        self.per_stream: dict[int, list[int]] = {}  # input stream -> [lo, hi, elements] (spec §6.1)
        self.flush = self.seen = False
        if partition is None:
            from pyspark import TaskContext

            ctx = TaskContext.get()
            partition = ctx.partitionId() if ctx is not None else 0
        self.partition = partition

    def see_times(self, ts: np.ndarray, stream: int = 0) -> None:
        """The event times of stream elements read (bad rows excluded) from input `stream`."""
        if len(ts):
            self.widen(int(ts.min()), int(ts.max()), len(ts), stream)

    def widen(self, lo: int, hi: int, elements: int, stream: int = 0) -> None:
        self.lo = lo if self.lo is None else min(self.lo, lo)
        self.hi = hi if self.hi is None else max(self.hi, hi)
        self.count += elements
        seen = self.per_stream.setdefault(stream, [lo, hi, 0])
        seen[0], seen[1], seen[2] = min(seen[0], lo), max(seen[1], hi), seen[2] + elements

    def streams(self) -> list[StreamTimes]:
        """What the partition read of each input stream, for its heartbeats."""
        return [StreamTimes(s, lo, hi, n) for s, (lo, hi, n) in sorted(self.per_stream.items())]

    def see(self, rb: pa.RecordBatch, real: np.ndarray, bad: np.ndarray) -> None:
        """Rows of Spark's projection: `real` the stream elements, `bad` the bad ones (their
        records in column x, `settle_undecided`)."""
        import pyarrow.compute as pc

        mask = pa.array(real)
        ts = rb.column("ts").filter(mask)  # exact int64 (a null ts of a bad row makes numpy floats)
        if len(ts):
            streams = stream_of(rb.column("o").filter(mask).to_numpy(zero_copy_only=False))
            present = np.unique(streams).tolist()  # a partition holds one source's rows: usually one stream
            for s in present:
                part = ts if len(present) == 1 else ts.filter(pa.array(streams == s))
                mm = pc.min_max(part)
                self.widen(mm["min"].as_py(), mm["max"].as_py(), len(part), s)
        if bad.any():
            self.divert(rb.column("x").filter(pa.array(bad)).to_pylist())

    def divert(self, records: list[str]) -> None:
        if self.record or self.bad_rows is None:
            divert_bad(records, self.bad_rows)  # raises without --bad-rows
        self.bad += len(records)

    @property
    def any(self) -> bool:
        """Whether the partition read anything a heartbeat reports."""
        return bool(self.count or self.bad)


def divert_bad(records: list[str], bad_rows: str | None) -> None:
    """Bad rows (`bad_record`'s records) raise (no --bad-rows: the driver locates the first
    with the oracle's reader, tefq.spark.runtime.progress) or go to --bad-rows in the oracle's
    record format (tefq.io.bad_rows)."""
    log = BadRowLog(bad_rows)
    try:
        for text in records:
            file, row, kind, message, *cells = json.loads(text)
            path = local_path(file)
            if bad_rows is None:
                raise WorkerFailure(BAD_ROW, {"file": path, "reason": f"{kind}: {message}"}).error()
            log.report(Fault(kind, 0, message), path, int(row), "\t".join(cells), 0)
    finally:
        log.close()


def bad_record(file: str, row: int, ts: int | str | None, s: str | None, p: str | None,
               o: str | None) -> str | None:
    """The record `divert_bad` takes (JSON [file, row, kind, message, ts, s, p, o]) of a row the
    Parquet reader would refuse (tefq.io.readers.parquet_row_fault), or None for a good row."""
    fault = parquet_row_fault(None if ts is None else int(ts), s, p, o, row=row)
    if fault is None:
        return None
    return json.dumps([file, row, fault.kind, fault.message] + ["" if c is None else str(c) for c in (ts, s, p, o)])


def settle_undecided(rb: pa.RecordBatch, fix: "Callable[[pa.RecordBatch, dict], pa.RecordBatch] | None" = None
                     ) -> pa.RecordBatch:
    """The rows the projection could not vouch for (column x: JSON [file, row, ts, s, p, o]) are
    classified by the oracle's rules for a Parquet row (tefq.io.readers.parquet_row_fault): a bad
    one gets kind BAD and x its record (`bad_record`), a good one keeps the kind its clause gave it
    and x null. `fix(rb, good)`, if given, rewrites the good ones from their normal cells (`good`:
    row index -> the oracle reader's s, p, o; runtime/normal_cells.py)."""
    import pyarrow.compute as pc

    x = rb.column("x")
    records = pa.nulls(rb.num_rows, pa.string())
    good: dict[int, tuple[str, str, str]] = {}
    if x.null_count < rb.num_rows:
        at = pc.indices_nonzero(pc.is_valid(x)).to_numpy()
        kinds = rb.column("k").to_numpy(zero_copy_only=False).copy()
        out: list[str | None] = [None] * rb.num_rows
        for i, text in zip(at.tolist(), x.take(pa.array(at)).to_pylist()):
            file, row, *cells = json.loads(text)
            out[i] = bad_record(file or "", int(row or 0), *cells)
            if out[i] is not None:
                kinds[i] = RowKind.BAD
            elif fix is not None:
                good[i] = normal_cells(cells[1:])
        records = pa.array(out, pa.string())
        rb = rb.set_column(rb.schema.get_field_index("k"), "k", pa.array(kinds, pa.int32()))
    rb = rb.set_column(rb.schema.get_field_index("x"), "x", records)
    return fix(rb, good) if good and fix is not None else rb


def normal_cells(cells: list[str]) -> tuple[str, str, str]:
    """A good row's s, p, o as the oracle's Parquet reader reads them (tefq.io.validate.check_term)."""
    s, p, o = (check_term(cell, role) for cell, role in zip(cells, "spo"))
    return s, p, o
