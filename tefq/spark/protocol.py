"""The wire between the mappers (mapInArrow, `tefq.spark.runtime.mappers`) and the stateful
operators (applyInPandasWithState, `tefq.spark.operators`), written once: the row kinds, the
columns each plan's rows carry, the control rows (terms, heartbeat, flush), the heartbeat's
encoding and its decoding, and the order of ties.

Every mapper ends its input partition the same way: the TERMS rows its encoding collected, one
HEARTBEAT row per bucket it feeds, then one FLUSH row per bucket if the end of input came.
Spark-free (pyarrow, numpy, pandas): the operators are tested without Spark.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np
import pandas as pd
import pyarrow as pa

from tefq.spark.kernels.intervals import SINCE as EVENT_SINCE, UNTIL as EVENT_UNTIL


class RowKind(IntEnum):
    """Column `k` of a row between the Spark projection, the mapper and the operator."""

    IGNORED = -2  # before t0 (windowed pipeline): not a stream element of the run
    OTHER = -1  # an element no clause matches: counted; CURRENT/fact wires: to one bucket (hash e), for duplicates
    SINCE = int(EVENT_SINCE)  # a SINCE clause matched (an event opening a fact)
    UNTIL = int(EVENT_UNTIL)  # an UNTIL clause matched (an event closing a fact)
    HEARTBEAT = 2  # per input partition and bucket: what the partition read (`heartbeat_rows`)
    FLUSH = 3  # the control source's end of input: report every tick left
    BAD = 4  # a malformed row (its text in column x): diverted by the mapper
    TERMS = 5  # a group code -> term dictionary row (each pair sent once per partition and bucket)
    ELEMENT = 6  # a whole stream element, matched later (fallback: by the oracle; windowed: by SPARQL)


SINCE, UNTIL, ELEMENT, HEARTBEAT, FLUSH, BAD, TERMS = (RowKind.SINCE, RowKind.UNTIL, RowKind.ELEMENT,
                                                       RowKind.HEARTBEAT, RowKind.FLUSH, RowKind.BAD, RowKind.TERMS)
EVENT_KINDS = (RowKind.SINCE, RowKind.UNTIL)  # the rows that are events of a fact


def are_events(kinds: np.ndarray) -> np.ndarray:
    """Per row of kinds: a SINCE/UNTIL event (numpy: pyarrow's is_in costs ~20x more here)."""
    return (kinds == int(RowKind.SINCE)) | (kinds == int(RowKind.UNTIL))


def are_elements(kinds: np.ndarray) -> np.ndarray:
    """Per row of kinds: a stream element of the run (an event, a whole element, or one that
    matched nothing), i.e. what the heartbeat counts."""
    return are_events(kinds) | (kinds == int(RowKind.ELEMENT)) | (kinds == int(RowKind.OTHER))

# ---------------------------------------------------------------------------------------------
# Tie order: equal timestamps apply in stream order (spec §1). A row's key in column `o` is below
# 2^42; the operator adds micro-batch * ORDER_SHIFT, so later batches come after earlier ones.

ORDER_SHIFT = 1 << 42
ROW_BITS = 22  # a ranked file's key: rank (< 2^19) << ROW_BITS + row within the file (< 2^22)
UNRANKED = 1 << 41  # files the driver did not rank come after the ranked ones

# The file hash `fh` every source gives its rows carries the input stream (its --stream index,
# spec §6.1) in the top bits and the file's modification time (ms; 0 for a source without files)
# above the path's xxhash64: fh = stream << STREAM_SHIFT | mtime << MTIME_SHIFT | (xxhash64 & PATH_HASH_MASK).
# The time orders the files that arrive after a followed run starts (`TieOrder`: by arrival).
STREAM_SHIFT = 56
FILE_HASH_MASK = (1 << STREAM_SHIFT) - 1
MTIME_SHIFT = 23  # the path's hash below: two files collide only with equal mtimes and equal 23 bits
MTIME_MASK = (1 << (STREAM_SHIFT - MTIME_SHIFT)) - 1  # the ms since 1970 modulo 2^33 (99 days)
PATH_HASH_MASK = (1 << MTIME_SHIFT) - 1
MAX_STREAMS = 127


def stream_of(fh: np.ndarray) -> np.ndarray:
    """The input stream of each file hash `fh` (see STREAM_SHIFT)."""
    return (np.asarray(fh, np.int64) >> STREAM_SHIFT).astype(np.int64)


def ranked_keys(batch: int, o: np.ndarray) -> np.ndarray:
    """Keys `o` of rows of micro-batch `batch` such that the operators' order, `batch * ORDER_SHIFT
    + key`, is `o` itself for a ranked file's row (its key already orders every ranked row of the
    run by stream order, file and row, whatever micro-batch it arrives in: spec §6.1's (t, stream
    order)) and for a later file's row keyed by arrival (ARRIVED), and stays batch-major for the
    rest (rows without a file time: Redis)."""
    o = np.asarray(o, np.int64)
    return np.where((o < UNRANKED) | (o >= ARRIVED), o - np.int64(batch) * ORDER_SHIFT, o)


UNRANKED_STREAM_SHIFT, UNRANKED_PARTITION_SHIFT = 34, 26  # an unranked key: stream, partition, row

# A file that arrived after a ranked run started (its `fh` has a time) is keyed by arrival, batch-free
# like a ranked file and after every ranked one: ARRIVED + stream << ARRIVED_STREAM_SHIFT + (its
# mtime - the newest ranked file's + ARRIVAL_BEFORE, modulo 2^33) << ROW_BITS + row within the file.
# The window is 2^33 ms (99 days): from ~50 days before the newest file at the start (an old file
# moved in) to ~50 days after; a file outside it wraps around.
ARRIVED = 1 << 62
ARRIVED_STREAM_SHIFT = 55
ARRIVAL_BITS = ARRIVED_STREAM_SHIFT - ROW_BITS
ARRIVAL_BEFORE = 1 << (ARRIVAL_BITS - 1)
assert ARRIVAL_BITS == STREAM_SHIFT - MTIME_SHIFT  # the key holds the whole time `fh` carries


def mtime_of(fh: int) -> int:
    """The modification time (ms) a file hash carries (0: none)."""
    return (fh >> MTIME_SHIFT) & MTIME_MASK


def arrival_base(stream: int, mtime: int, newest: int) -> int:
    """The key of the first row of a file of input `stream` that arrived with modification time
    `mtime` (ms) in a run whose newest ranked file's is `newest` (ARRIVED above)."""
    arrival = (mtime - newest + ARRIVAL_BEFORE) & MTIME_MASK
    return ARRIVED + (stream << ARRIVED_STREAM_SHIFT) + (arrival << ROW_BITS)


class Arrivals:
    """Keys of files by arrival (ARRIVED): their mtime relative to `newest`, the newest ranked
    file's, then row; the name's order where two files share a ms is not kept (their rows interleave)."""

    def __init__(self, ranks: dict[int, int]) -> None:
        hashes = np.fromiter(ranks, np.int64, len(ranks))
        self.newest = int(((hashes >> MTIME_SHIFT) & MTIME_MASK).max()) if len(hashes) else 0

    def base(self, fh: int) -> int:
        return arrival_base((fh >> STREAM_SHIFT) & MAX_STREAMS, mtime_of(fh), self.newest)


class TieOrder:
    """Per input partition of Spark's rows, the order key of ties: file rank << ROW_BITS + row
    within the file. `o` arrives as the row's file hash (`fh`: its stream in the top bits);
    `ranks` (tefq.spark.runtime.ranks.file_ranks) maps it to the file's place in stream order.
    Files not ranked come after the ranked ones: a file with a time by arrival (`Arrivals`), so
    ties across files that arrive later follow their order whatever partition Spark packs them
    in; rows without one (Redis) by stream, then partition, then row: UNRANKED + stream << 34 +
    partition << 26 + row; without ranks (a run that started with under two files), every
    unranked row so, without UNRANKED (such a run's keys stay batch-major: see `ranked_keys`)."""

    UNRANKED = UNRANKED

    def __init__(self, ranks: dict[int, int], partition: int) -> None:
        self.ranks, self.partition, self.row = ranks, partition, 0
        self.arrivals: Arrivals | None = None  # made at the first later file (most partitions have none)
        self.start: dict[int, int] = {}  # first row of each file keyed by its own rows in this partition

    def base(self, fh: int) -> int | None:
        """The key of a file's first row (None: its rows are keyed by partition and row)."""
        r = self.ranks.get(fh)
        if r is not None:
            return r << ROW_BITS
        if not self.ranks or not mtime_of(fh):
            return None
        self.arrivals = self.arrivals or Arrivals(self.ranks)
        return self.arrivals.base(fh)

    def unranked(self, fh: int) -> int:
        stream = (fh >> STREAM_SHIFT) & MAX_STREAMS
        base = UNRANKED if self.ranks else 0
        return base + (stream << UNRANKED_STREAM_SHIFT) + (self.partition << UNRANKED_PARTITION_SHIFT)

    def __call__(self, fh: pa.Array) -> pa.Array:
        rows = np.arange(self.row, self.row + len(fh), dtype=np.int64)
        self.row += len(fh)
        if not len(fh):
            return pa.array(rows)
        h = fh.to_numpy(zero_copy_only=False)
        starts = np.concatenate(([0], np.flatnonzero(h[1:] != h[:-1]) + 1))  # a file's rows are contiguous
        offset = np.empty(len(starts), np.int64)  # per run of one file: key = offset + row in partition
        for i, (u, f) in enumerate(zip(h[starts].tolist(), starts.tolist())):
            base = self.base(u)
            offset[i] = self.unranked(u) if base is None else base - self.start.setdefault(u, int(rows[f]))
        return pa.array(np.repeat(offset, np.diff(np.append(starts, len(h)))) + rows)


def streams_of_keys(o: np.ndarray, rank_starts: tuple[int, ...], ranked_run: bool) -> np.ndarray:
    """The input stream of rows with tie keys `o` (`TieOrder`): in a run with ranks
    (`ranked_run`), a ranked key's rank falls in its stream's ranks (`rank_starts`: the first rank
    of each stream); an unranked key carries it."""
    o = np.asarray(o, np.int64)
    ranked = (o < UNRANKED) & ranked_run
    by_rank = (np.searchsorted(np.asarray(rank_starts, np.int64), o >> ROW_BITS, side="right") - 1
               if rank_starts else np.zeros(len(o), np.int64))
    carried = np.where(o >= ARRIVED, o >> ARRIVED_STREAM_SHIFT, (o & (UNRANKED - 1)) >> UNRANKED_STREAM_SHIFT)
    return np.where(ranked, np.maximum(by_rank, 0), carried & MAX_STREAMS)


class FileTieOrder:
    """The same keys for rows a task reads from Parquet files itself (runtime/columnar.py): the
    task knows the key of each file's first row (`runtime.columnar.FileOrder`: by rank, or by
    arrival in a followed run; None: unranked) and numbers the rows it emits per file."""

    def __init__(self, partition: int) -> None:
        self.partition = partition
        self.row = 0  # rows of the current file before this batch
        self.unranked = 0  # rows of unranked files before this batch

    def keys(self, first: int | None, new_file: bool, positions: np.ndarray, rows: int) -> np.ndarray:
        """The keys of `positions` (rows of this batch) and move past the batch's `rows`."""
        if new_file:
            self.row = 0
        if first is None:
            base = UNRANKED + (np.int64(self.partition) << UNRANKED_PARTITION_SHIFT) + self.unranked
            self.unranked += rows
        else:
            base = np.int64(first) + self.row
        self.row += rows
        return base + positions.astype(np.int64)


# ---------------------------------------------------------------------------------------------
# The columns of each plan's rows (`k` first, `b` the bucket last)

def current_wire(ngroups: int) -> pa.Schema:
    """Current aggregate: ts, o (tie order), f (identity hash), e (element hash: a stream is a
    set), n, and per group variable its code g_i and term t_i (on TERMS rows only)."""
    fields = [("k", pa.int32()), ("ts", pa.int64()), ("o", pa.int64()), ("f", pa.int64()), ("e", pa.int64()),
              ("n", pa.int64())]
    for i in range(ngroups):
        fields += [(f"g{i}", pa.int64()), (f"t{i}", pa.string())]
    return pa.schema(fields + [("b", pa.int32())])


def fact_wire(arity: int, nterms: int) -> pa.Schema:
    """Fact aggregate: one row per (fact, clause) an element matches; `fact` the event fact, n 1 on
    the element's first row, v_i its identity codes, t_i its output terms (on SINCE rows)."""
    fields = [("k", pa.int32()), ("fact", pa.int32()), ("ts", pa.int64()), ("o", pa.int64()), ("f", pa.int64()),
              ("e", pa.int64()), ("n", pa.int64())]
    fields += [(f"v{i}", pa.int64()) for i in range(arity)] + [(f"t{i}", pa.string()) for i in range(nterms)]
    return pa.schema(fields + [("b", pa.int32())])


ELEMENT_WIRE = pa.schema([("k", pa.int32()), ("ts", pa.int64()), ("o", pa.int64()), ("f", pa.int64()),
                          ("n", pa.int64()), ("s", pa.string()), ("p", pa.string()), ("obj", pa.string()),
                          ("b", pa.int32())])
"""Whole elements (fallback, windowed): s, p and the object `obj` (`o` is the tie order)."""

DDL_TYPES = {pa.int32(): "int", pa.int64(): "long", pa.string(): "string"}


def ddl(schema: pa.Schema) -> str:
    """The schema as Spark's DDL text (mapInArrow's output schema)."""
    return ", ".join(f"{f.name} {DDL_TYPES[f.type]}" for f in schema)


# ---------------------------------------------------------------------------------------------
# Control rows and the heartbeat

HB_LO, HB_HI, HB_ELEMENTS, HB_BAD = "ts", "o", "f", "n"
"""A heartbeat's columns: the partition's first and last event time in one input stream (both
meaningless when it read no element), the stream's index and the elements it read (packed in
HB_ELEMENTS: stream << HB_STREAM_SHIFT | elements) and the partition's bad rows (on its first
heartbeat only)."""
HB_STREAM_SHIFT = 48


def control_rows(schema: pa.Schema, kind: int, size: int, **cols) -> pa.RecordBatch:
    """`size` control rows of `kind`: the given columns (one value per row), zeros or nulls
    elsewhere (no nulls in integer columns: pandas would turn a whole batch's codes into floats)."""
    arrays = {"k": pa.array(np.full(size, kind, np.int32))}
    for f in list(schema)[1:]:
        value = cols.get(f.name)
        if value is None:
            arrays[f.name] = (pa.nulls(size, f.type) if f.type == pa.string()
                              else pa.array(np.zeros(size, f.type.to_pandas_dtype())))
        else:
            arrays[f.name] = value if isinstance(value, pa.Array) else pa.array(value, f.type)
    return pa.RecordBatch.from_pydict(arrays, schema=schema)


@dataclass(frozen=True)
class StreamTimes:
    """What a partition read of one input stream: its event-time range and its elements."""

    stream: int
    lo: int
    hi: int
    elements: int


def routed_rows(rb: pa.RecordBatch, rows: np.ndarray, buckets: np.ndarray) -> pa.RecordBatch:
    """Rows `rows` of `rb` (a row repeated once per bucket it goes to), column `b` set to `buckets`."""
    out = rb.take(pa.array(rows))
    at = out.schema.get_field_index("b")
    field = out.schema.field(at)
    return out.set_column(at, field, pa.array(buckets, field.type))


def heartbeat_rows(schema: pa.Schema, buckets: list[int], lo: int | None, hi: int | None, elements: int, bad: int,
                   streams: list[StreamTimes] | None = None) -> pa.RecordBatch:
    """Per bucket in `buckets`, one heartbeat per input stream the partition read (`streams`; by
    default one stream, 0, with the range `lo`..`hi` of `elements` elements; one heartbeat with no
    elements if it read none): every bucket learns the time each stream reached."""
    if streams is None:
        streams = [StreamTimes(0, lo or 0, hi or 0, elements)]
    streams = streams or [StreamTimes(0, 0, 0, 0)]
    cols: dict[str, list[int]] = {HB_LO: [], HB_HI: [], HB_ELEMENTS: [], HB_BAD: [], "b": []}
    for b in buckets:
        for i, st in enumerate(streams):
            cols[HB_LO].append(st.lo)
            cols[HB_HI].append(st.hi)
            cols[HB_ELEMENTS].append(st.stream << HB_STREAM_SHIFT | st.elements)
            cols[HB_BAD].append(bad if i == 0 else 0)
            cols["b"].append(b)
    return control_rows(schema, RowKind.HEARTBEAT, len(cols["b"]), **cols)


def flush_rows(schema: pa.Schema, buckets: list[int]) -> pa.RecordBatch:
    return control_rows(schema, RowKind.FLUSH, len(buckets), b=buckets)


@dataclass(frozen=True)
class Heartbeats:
    """What the heartbeats of one operator call say together."""

    lo: int | None  # the event-time range of the partitions that read elements (None: none did)
    hi: int | None
    elements: int  # stream elements read
    bad: int  # bad rows diverted
    latest: dict[int, int] = field(default_factory=dict)  # per input stream that read elements: its largest t


def read_heartbeats(pdf: pd.DataFrame, kinds: np.ndarray) -> Heartbeats | None:
    """The heartbeats among an operator call's rows (None: there are none)."""
    at = np.nonzero(kinds == RowKind.HEARTBEAT)[0]
    if not len(at):
        return None
    packed = pdf[HB_ELEMENTS].to_numpy().astype(np.int64)[at]
    elements, streams = packed & ((1 << HB_STREAM_SHIFT) - 1), packed >> HB_STREAM_SHIFT
    ranged = elements > 0  # a partition of bad rows only has no time range
    lo = int(pdf[HB_LO].to_numpy()[at][ranged].min()) if ranged.any() else None
    his = pdf[HB_HI].to_numpy().astype(np.int64)[at]
    hi = int(his[ranged].max()) if ranged.any() else None
    latest: dict[int, int] = {}
    for s, h in zip(streams[ranged].tolist(), his[ranged].tolist()):
        latest[s] = max(latest.get(s, h), h)
    return Heartbeats(lo, hi, int(elements.sum()), int(pdf[HB_BAD].to_numpy()[at].sum()), latest)
