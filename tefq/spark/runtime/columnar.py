"""Columnar ingestion for Parquet stream inputs (issue 14) and Redis streams: Spark carries only
file paths (or ID ranges, below), a mapInArrow task reads each Parquet file itself with pyarrow
(`read_files`) and the plan's encoding (`runtime/encodings.py`, `from_file`) emits the rows the
Spark projection + mapper would emit, so the stateful operators are the same. This module holds the reading: the files' columns checked and
coded, and the term codes (the (path, flush) sources are in runtime/sources.py).

Why: on the generic path the JVM dominates a micro-batch (Parquet read into rows, the regex
vouching, xxhash64 of strings, the Arrow round trip into Python). Here Spark's file source (the
`binaryFile` format with only `path` selected: Spark does not read `content` then) still owns
offsets, `maxFilesPerTrigger`, the checkpoint and exactly-once; the task reads each file once
(read amplification 1), checks and encodes only the *distinct* terms of each column (Parquet
dictionaries, read as such), and emits each event row once, shuffled by bucket.

Direct ingestion (`pipelines.reading_operator`) runs the same mapper inside each bucket's
operator over every path of the micro-batch, keeping the bucket's own rows (`only`): no event row
crosses the JVM. On a local master the buckets share the reading: each file is coded once, for
every bucket (runtime/shared_files.py); elsewhere each bucket reads each file.

A Redis stream's micro-batch arrives as its ID ranges (runtime/redis_source.range_uri), which
`read_files` reads the same way (`range_batches`): the source keeps the offsets and exactly-once,
the task reads the entries (checked by the source's own rules) and codes them.

Codes: a term's code is pandas' SipHash of it (`term_codes`: deterministic across processes and
restarts; not Spark's xxhash64, so a checkpoint never switches between the two paths:
`ingest.claim_ingest`); identity, element and bucket codes combine term codes with a splitmix64 step.
Terms are in the oracle's normal form (tefq.io.validate.check_term), as the oracle reads them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from typing import Iterator

import numpy as np
import pyarrow as pa

from tefq.errors import BAD_ROW, WorkerFailure
from tefq.io.paths import local_path
from tefq.io.readers import in_normal_form, ts_out_of_range
from tefq.io.redis_stream import is_range_uri, is_redis_url
from tefq.io.staging import files_in_stream_order
from tefq.io.validate import Fault, check_term
from tefq.spark.protocol import ROW_BITS, UNRANKED, UNRANKED_STREAM_SHIFT, arrival_base
from tefq.spark.runtime.scan import PartitionScan, bad_record

RANK_BITS = 32  # a path's entry in `path_ranks`: stream << RANK_BITS | rank


def path_ranks(stream_paths: list[str]) -> dict[str, int]:
    """Stream order for ties (spec §1): each file's absolute path -> its input stream (the --stream
    index, spec §6.1) << RANK_BITS | its rank in the oracle's order (the --stream paths in turn,
    each directory's files by relative path). Computed on the driver: the task knows its file's
    path, so no Spark job and no hash of Spark's path form is needed."""
    ranked = [(s, f) for s, p in enumerate(stream_paths) for f in files_in_stream_order([p])][:1 << 19]
    return {os.path.abspath(f): s << RANK_BITS | i for i, (s, f) in enumerate(ranked)}


@dataclass(frozen=True)
class FileOrder:
    """Where a task that reads files by path puts each file's rows in stream order (spec §1): a
    file there when the run started by its rank (`path_ranks`); in a followed run (`inputs` given)
    a file that arrived later by arrival, as the row path keys it (`protocol.Arrivals`): the input
    directory it is in gives its stream, its modification time (ms) then its row its place, after
    every ranked file. Made on the driver: the task only stats the later files."""

    ranks: dict[str, int]
    inputs: tuple[str, ...] = ()  # a followed run's inputs (absolute), by --stream index
    newest: int = 0  # the newest ranked file's modification time (ms): the arrivals' origin
    redis: tuple[tuple[str, int], ...] = ()  # each Redis stream URL and its --stream index

    @staticmethod
    def of(stream_paths: list[str], follow: bool = False) -> "FileOrder":
        ranks = path_ranks(stream_paths)
        redis = tuple((str(p), i) for i, p in enumerate(stream_paths) if is_redis_url(p))
        if not follow:
            return FileOrder(ranks, redis=redis)
        newest = max((os.stat(f).st_mtime_ns // 1_000_000 for f in ranks), default=0)
        return FileOrder(ranks, tuple(os.path.abspath(p) for p in stream_paths), newest, redis)

    def redis_stream(self, url: str) -> int:
        """The --stream index of a Redis stream URL."""
        return next((i for u, i in self.redis if u == url), 0)

    def place(self, path: str) -> tuple[int, int | None]:
        """A file's input stream and the tie key of its first row (None: unranked)."""
        path = os.path.abspath(path)
        ranked = self.ranks.get(path)
        if ranked is not None:
            return ranked >> RANK_BITS, (ranked & ((1 << RANK_BITS) - 1)) << ROW_BITS
        stream = self.arrived_in(path)
        if stream is None:
            return 0, None
        return stream, arrival_base(stream, os.stat(path).st_mtime_ns // 1_000_000, self.newest)

    def keyed(self, path: str) -> bool:
        """The file's rows have tie keys of their own (not counted from a task's rows before them);
        a Redis range's do (`range_batches`)."""
        if is_range_uri(path):
            return True
        path = os.path.abspath(path)
        return path in self.ranks or self.arrived_in(path) is not None

    def arrived_in(self, path: str) -> int | None:
        """The input stream of an absolute path under a followed run's inputs (None: outside them)."""
        return next((s for s, p in enumerate(self.inputs) if path == p or path.startswith(p + os.sep)), None)


# ---------------------------------------------------------------------------------------------
# Codes: terms -> int64 (SipHash), combined with splitmix64 (numpy, wrapping uint64)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def _mix(h: np.ndarray) -> np.ndarray:
    h = (h ^ (h >> _S30)) * _M1
    h = (h ^ (h >> _S27)) * _M2
    return h ^ (h >> _S31)


def combine(codes: list[np.ndarray], n: int) -> np.ndarray:
    """One int64 per row from the rows' term codes, in order (order matters: (a, b) != (b, a))."""
    h = np.full(n, np.uint64(len(codes)), np.uint64)
    with np.errstate(over="ignore"):
        for c in codes:
            h = _mix(h * _GOLDEN + c.view(np.uint64))
    return h.view(np.int64)


def term_codes(terms: pa.Array) -> np.ndarray:
    """One int64 code per term: pandas' SipHash-2-4 of the UTF-8 bytes with its fixed default key
    (vectorised in C, the same in every process and run; a null gets a code too, never used)."""
    import pandas as pd

    return pd.util.hash_array(terms.to_numpy(zero_copy_only=False), categorize=False).view(np.int64)


# ---------------------------------------------------------------------------------------------
# One file -> rows of the current-aggregate wire schema

class Column:
    """One s/p/o column of a batch, dictionary-encoded: per distinct value its normal form (None
    if it is not a term: `faults[i]`), its code; per row the dictionary index (-1: null cell)."""

    def __init__(self, arr: pa.Array, role: str) -> None:
        import pyarrow.compute as pc

        if not pa.types.is_dictionary(arr.type):
            arr = pc.dictionary_encode(arr)
        values = arr.dictionary
        if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
            values = values.cast(pa.string())
        idx = arr.indices
        self.null = idx.null_count > 0
        self.idx = idx.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64) if self.null \
            else idx.to_numpy(zero_copy_only=False).astype(np.int64)
        self.faults: dict[int, Fault] = {}
        ok = in_normal_form(values, role).fill_null(False)  # the Parquet reader's test (term length too)
        if pc.all(ok).as_py() and values.null_count == 0:
            self.norm = values
        else:
            norm = values.to_pylist()
            j = "spo".index(role) + 1
            for i in pc.indices_nonzero(pc.invert(ok)).to_pylist():
                if norm[i] is None:
                    continue
                try:
                    norm[i] = check_term(norm[i], role, j)
                except Fault as f:
                    self.faults[i] = f
                    norm[i] = None
            self.norm = pa.array(norm, pa.string())

    # made on first use: a windowed plan without a join key never needs them (no hashing per term)
    @cached_property
    def dict_codes(self) -> np.ndarray:
        """Per distinct value: its term's code (`term_codes`)."""
        return term_codes(self.norm)

    @cached_property
    def codes(self) -> np.ndarray:
        """Per row: its term's code."""
        return self.dict_codes[self.idx] if len(self.dict_codes) else np.zeros(len(self.idx), np.int64)

    def equals(self, term: str) -> np.ndarray:
        import pyarrow.compute as pc

        hit = pc.equal(self.norm, term).fill_null(False).to_numpy(zero_copy_only=False)
        return hit[self.idx] & (self.idx >= 0) if len(hit) else np.zeros(len(self.idx), bool)

    def bad_rows(self) -> np.ndarray:
        """Per row: the cell is null or not a term."""
        bad = self.idx < 0
        if self.faults:
            flag = np.zeros(len(self.norm), bool)
            flag[list(self.faults)] = True
            bad |= flag[np.maximum(self.idx, 0)] & (self.idx >= 0)
        return bad


def ts_column(batch: pa.RecordBatch) -> tuple[pa.Array, np.ndarray]:
    """ts as int64 ms, as the oracle's reader takes it (an integer, or a timestamp floored to ms),
    and per row whether it lies outside tefq's time range (a bad row, as in the reader)."""
    import pyarrow.compute as pc

    col = batch.column("ts")
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    if pa.types.is_timestamp(col.type):
        col = pc.floor_temporal(col, unit="millisecond").cast(pa.timestamp("ms", col.type.tz)).view(pa.int64())
    beyond = np.zeros(len(col), bool)
    beyond[ts_out_of_range(col)] = True
    return col.cast(pa.int64(), safe=False), beyond


def check_schema(pf, path: str) -> None:
    """A file the oracle's reader refuses whole (columns, types): raise for the driver, which
    re-reads it with that reader for the located message (runtime/progress.bad_row_error)."""
    schema = pf.schema_arrow
    problem = None
    if any(c not in schema.names for c in ("ts", "s", "p", "o")):
        problem = "missing Parquet column(s)"
    else:
        t = schema.field("ts").type
        if not (pa.types.is_integer(t) or pa.types.is_timestamp(t)):
            problem = "column ts must be int64 milliseconds"
        for c in "spo":
            t = schema.field(c).type
            t = t.value_type if pa.types.is_dictionary(t) else t
            if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
                problem = f"column {c} must hold strings"
    if problem:
        raise WorkerFailure(BAD_ROW, {"file": path, "reason": problem}).error()


def bad_records(uri: str, batch: pa.RecordBatch, ts: pa.Array, bad: np.ndarray, row0: int) -> list[str]:
    """The diverted rows as `scan.divert_bad` takes them (`scan.bad_record`: the Parquet reader's
    own verdict on each)."""
    out = []
    rows = np.flatnonzero(bad)
    raw = {c: batch.column(c).take(pa.array(rows)).to_pylist() for c in "spo"}
    written = batch.column("ts") if pa.types.is_integer(batch.column("ts").type) else ts  # uint64 as it is
    tsl = written.take(pa.array(rows)).to_pylist()
    for k, i in enumerate(rows.tolist()):
        record = bad_record(uri, row0 + i + 1, tsl[k], raw["s"][k], raw["p"][k], raw["o"][k])
        assert record is not None, "the columnar check and the Parquet reader disagree"
        out.append(record)
    return out


class FileBatch:
    """Up to 2^20 rows of one file, read and checked: the s/p/o columns, ts, which rows are good
    (bad ones are already diverted or raised), where they sit in the file and the tie key of the
    file's first row (`FileOrder.place`; None: unranked)."""

    def __init__(self, uri: str, row0: int, first: int | None, cols: dict[str, Column], ts: np.ndarray,
                 good: np.ndarray) -> None:
        self.uri, self.row0, self.first, self.cols, self.ts, self.good = uri, row0, first, cols, ts, good
        self.n = len(ts)

    def matches(self, c) -> np.ndarray:
        """Per row: clause `c` matches (its constants, its repeated variables), on good rows only."""
        cond = self.good.copy()
        for col, term in c.consts:
            cond &= self.cols[col].equals(term)
        for a, b in c.same:
            cond &= self.cols[a].codes == self.cols[b].codes
        return cond

    def dictionaries(self) -> tuple[pa.Array, dict[str, int]]:
        """The three columns' normal-form dictionaries end to end, and where each starts."""
        base = {"s": 0, "p": len(self.cols["s"].norm), "o": len(self.cols["s"].norm) + len(self.cols["p"].norm)}
        return pa.concat_arrays([self.cols[c].norm.cast(pa.string()) for c in "spo"]), base


def read_files(batches, order: FileOrder, st: PartitionScan, since: int | None = None):
    """The (path, flush) rows of a task -> FileBatches, file by file; bad rows diverted (or raised)
    and the task's event-time range and counts noted in `st` on the way. `order`: each file's
    stream and tie key. `since`: only good rows at or after it are elements of the run (a windowed
    plan's t0; the others are not counted)."""
    import pyarrow.parquet as pq

    for rb in batches:
        st.seen = True
        for uri, flush in zip(rb.column("path").to_pylist(), rb.column("flush").to_pylist()):
            if flush:
                st.flush = True
                continue
            if is_range_uri(uri):
                yield from range_batches(uri, order, st, since)
                continue
            path = local_path(uri)
            try:
                pf = pq.ParquetFile(path, read_dictionary=["s", "p", "o"])
            except (OSError, pa.ArrowException, KeyError) as e:  # KeyError: read_dictionary names a missing column
                raise unreadable(uri, e) from None
            check_schema(pf, uri)
            (stream, first), row0 = order.place(path), 0
            batches = pf.iter_batches(batch_size=1 << 20, columns=["ts", "s", "p", "o"])
            while True:
                try:  # a damaged page shows only when it is read
                    batch = next(batches, None)
                except (OSError, pa.ArrowException) as e:
                    raise unreadable(uri, e) from None
                if batch is None:
                    break
                n = batch.num_rows
                ts, beyond = ts_column(batch)
                cols = {c: Column(batch.column(c), c) for c in "spo"}
                bad = ts.is_null().to_numpy(zero_copy_only=False) | beyond if ts.null_count else beyond
                for c in "spo":
                    bad |= cols[c].bad_rows()
                tsv = (ts.fill_null(0) if ts.null_count else ts).to_numpy(zero_copy_only=False)
                if bad.any():
                    st.divert(bad_records(uri, batch, ts, bad, row0))
                st.see_times(tsv[~bad] if since is None else tsv[~bad & (tsv >= since)], stream)
                yield FileBatch(uri, row0, first, cols, tsv, ~bad)
                row0 += n
            st.rows_in += row0


def unreadable(uri: str, e: Exception) -> Exception:
    """A damaged Parquet file stops the run as a bad row does: the driver reads the file again and
    says where (runtime/progress.bad_row_error), exit 2."""
    return WorkerFailure(BAD_ROW, {"file": uri, "reason": f"cannot read the Parquet file: {e}"}).error()


def range_batches(uri: str, order: FileOrder, st: PartitionScan, since: int | None) -> Iterator[FileBatch]:
    """A Redis stream's ID range (`redis_source.range_uri`) as FileBatches. The source's checks
    leave only good entries (the task that `st.record`s writes the bad ones, as the row path's
    source does; none counts in `st.bad`: the driver counts their files, engine.redis_bad_entries).
    Tie keys like the row path's unranked rows (protocol.TieOrder.unranked): the stream, then the
    entry's place in its micro-batch, whoever reads the range (each batch restarts FileTieOrder's
    row count, row0 0, at its `first`)."""
    from tefq.spark.runtime.redis_source import range_entries  # deferred: a run without Redis never loads it

    part, url, batches = range_entries(uri, st.bad_rows, st.record)
    stream = order.redis_stream(url)
    for batch in batches:
        n = batch.num_rows
        ts = batch.column("ts").to_numpy(zero_copy_only=False)
        st.see_times(ts if since is None else ts[ts >= since], stream)
        st.rows_in += n
        place = batch.column("row")[0].as_py() - 1 - part.batch_first  # the entry's, in its micro-batch
        first = UNRANKED + (stream << UNRANKED_STREAM_SHIFT) + place
        yield FileBatch(uri, 0, first, {c: Column(batch.column(c), c) for c in "spo"}, ts, np.ones(n, bool))
