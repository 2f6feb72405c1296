"""The windowed plan's wire rows (`protocol.ELEMENT_WIRE`) from a Parquet file's batch
(runtime/columnar.py), for the columnar and direct ingestion paths: the rows the projection
(runtime/columns.project_windowed) and its mapper would send, made in numpy from the file's
dictionaries (each distinct term checked and coded once, runtime/columnar.Column).

The rules are the projection's: an element of the run is a good row at or after t0 (the
mapper's heartbeats count it: `read_files(since=t0)`); it keeps its terms when a query can match
its predicate (`WindowedPlan.predicates`), else it goes to bucket 0 as an OTHER row (its time
and hash: it advances time and counts repeats); with a
join key, it goes to the bucket of its key term's code (the subject or the object, by its
predicate), a literal to bucket 0 (two spellings of one literal meet in one bucket). The bucket
is the term's SipHash code mod B, not Spark's xxhash64: a checkpoint never switches paths
(runtime/ingest.claim_ingest), and a join-key partitioned query's buckets need no merge."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tefq.spark.protocol import ELEMENT, FileTieOrder, RowKind, routed_rows
from tefq.spark.runtime.columnar import Column, FileBatch
from tefq.spark.runtime.encodings import ElementRows, joined

if TYPE_CHECKING:  # the workers import no planner (docs/spark.md "Start-up")
    from tefq.spark.planning.windowed import WindowedPlan


def named(col: Column, terms: frozenset[str] | tuple[str, ...]) -> np.ndarray:
    """Per row of `col`: its cell is one of `terms` (checked once per distinct value)."""
    hit = np.isin(col.norm.to_numpy(zero_copy_only=False), sorted(terms))
    return hit[np.maximum(col.idx, 0)] & (col.idx >= 0) if len(hit) else np.zeros(len(col.idx), bool)


def term_buckets(col: Column, buckets: int) -> np.ndarray:
    """Per distinct value of `col`: the bucket of its term (IRIs and blank nodes by their code,
    literals and non-terms 0)."""
    if not len(col.dict_codes):
        return np.zeros(0, np.int32)
    hashed = (col.dict_codes.view(np.uint64) % np.uint64(buckets)).astype(np.int32)
    node = pc.or_(pc.starts_with(col.norm, "<"), pc.starts_with(col.norm, "_:")).fill_null(False)
    return np.where(node.to_numpy(zero_copy_only=False), hashed, 0).astype(np.int32)


def route_by_window(plan: WindowedPlan, rb: pa.RecordBatch, only: int | None = None) -> pa.RecordBatch:
    """`rb` with column `b` set for a plan split by windows (`plan.slabs`): each element to the
    bucket of its first window, and a second copy to its last window's when that differs (a slab's
    edge). Other rows keep theirs. `only`: bucket `only`'s rows alone (direct ingestion)."""
    n = rb.num_rows
    if plan.slabs is None or not n:
        return rb
    element = rb.column("k").to_numpy(zero_copy_only=False) == int(ELEMENT)
    first, last = plan.slabs.element_buckets(rb.column("ts").to_numpy(zero_copy_only=False), plan.t0)
    bucket = np.where(element, first, rb.column("b").to_numpy(zero_copy_only=False))
    edge = np.flatnonzero(element & (last != first))
    rows = np.concatenate([np.arange(n), edge])
    b = np.concatenate([bucket, last[edge]])
    if only is not None:
        rows, b = rows[b == only], b[b == only]
    order = np.argsort(rows, kind="stable")  # copies beside their originals: rows stay in stream order
    return routed_rows(rb, rows[order], b[order])


class WindowedRows(ElementRows):
    """The windowed plan's rows: ELEMENT rows, and OTHER rows (time, tie order, element hash) for
    the elements of the run no query can match, to bucket 0; `only`: bucket `only`'s alone. Every
    element's hash is in `f`, so that its operator counts a repeat as a duplicate (a stream is a
    set): on rows Spark SQL's xxhash64 of its cells (columns.project_windowed), from a Parquet file
    the hash of its codes; a run reads each input one way (runtime/ingest.claim_ingest)."""

    plan: WindowedPlan

    def projected(self, rb: pa.RecordBatch, kinds: np.ndarray, order: pa.Array) -> pa.RecordBatch | None:
        keep = (kinds == int(ELEMENT)) | ((kinds == int(RowKind.OTHER)) & (self.only in (None, 0)))
        out = self.with_order(rb, order).filter(pa.array(keep))
        return out if out.num_rows else None

    def in_run(self, fb: FileBatch) -> np.ndarray:
        """Per row: an element of the run (a good row at or after t0)."""
        return fb.good & (fb.ts >= self.plan.t0)

    def elements(self, fb: FileBatch) -> np.ndarray:
        """Per row: an element of the run whose predicate a query can match."""
        keep = self.in_run(fb)
        return keep if self.plan.predicates is None else keep & named(fb.cols["p"], self.plan.predicates)

    def buckets(self, fb: FileBatch, at: np.ndarray) -> np.ndarray:
        """The join-key bucket of each element `at` (all 0 without a key)."""
        plan = self.plan
        if plan.key is None or plan.buckets <= 1:
            return np.zeros(len(at), np.int32)
        s, o = fb.cols["s"], fb.cols["o"]
        by_subject = named(fb.cols["p"], plan.key.subject_predicates)[at]
        from_s = term_buckets(s, plan.buckets)[s.idx[at]] if len(s.dict_codes) else np.zeros(len(at), np.int32)
        from_o = term_buckets(o, plan.buckets)[o.idx[at]] if len(o.dict_codes) else np.zeros(len(at), np.int32)
        return np.where(by_subject, from_s, from_o).astype(np.int32)

    def from_file(self, fb: FileBatch, order: FileTieOrder) -> pa.RecordBatch | None:
        relevant = self.elements(fb)
        at = np.flatnonzero(relevant)
        bucket = self.buckets(fb, at)
        if self.only is not None and self.plan.slabs is None:  # the other buckets' rows are their operators'
            # to encode (split by windows: the routing keeps this bucket's, route_by_window)
            mine = bucket == self.only
            at, bucket = at[mine], bucket[mine]
        other = np.flatnonzero(self.in_run(fb) & ~relevant) if self.only in (None, 0) else np.zeros(0, np.int64)
        keys = order.keys(fb.first, fb.row0 == 0, np.concatenate([at, other]), fb.n)
        unnamed = [self.other_rows(fb.ts[other], pa.array(keys[len(at):]), self.element_hashes(fb, other))] \
            if len(other) else []
        if not len(at):
            return unnamed[0] if unnamed else None
        everything, base = fb.dictionaries()
        n, zero = len(at), pa.array(np.zeros(len(at), np.int64))
        cols = {"k": pa.array(np.full(n, int(ELEMENT), np.int32)), "ts": pa.array(fb.ts[at]),
                "o": pa.array(keys[:len(at)]), "f": pa.array(self.element_hashes(fb, at)), "n": zero,
                "b": pa.array(bucket)}
        for c, name in (("s", "s"), ("p", "p"), ("o", "obj")):
            cols[name] = everything.take(pa.array(fb.cols[c].idx[at] + base[c]))
        return joined(unnamed + [pa.RecordBatch.from_arrays([cols[name] for name in self.schema.names],
                                                            schema=self.schema)])
