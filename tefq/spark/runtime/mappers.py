"""The mappers (mapInArrow) between the projection and the stateful operator: tie order, the
per-partition heartbeats, terms rows and flush, bad rows diverted or raised."""
from __future__ import annotations

import json
import time

import numpy as np
import pyarrow as pa

from tefq.spark.operators.base import EVENT_KINDS, RowKind, profile
from tefq.spark.planning import CurrentAggregatePlan

BAD_ROW = "TEFQ_BAD_ROW"
EVENT_KIND_SET = pa.array([int(k) for k in EVENT_KINDS], pa.int32())

FALLBACK_MAP_SCHEMA = "k int, ts long, o long, s string, p string, obj string, b int, x string"



class TieOrder:
    """Per input partition, the order key of ties (< 2^42, see operator.ORDER_SHIFT): file rank
    (< 2^19) << 22 + row within the file. `o` arrives as xxhash64 of the row's file path; `ranks`
    (tefq.spark.runtime.sources.file_ranks) maps it to the file's place in stream order. Files not ranked
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
            rb = settle_undecided(rb)
            badmask = pc.equal(rb.column("k"), int(RowKind.BAD))
            if pc.any(badmask).as_py():
                divert_bad(pc.filter(rb.column("x"), badmask).to_pylist(), bad_rows)
            order = tie_order(rb.column("o"))
            cols = [order if name == "o" else rb.column(name) for name in out_schema.names]
            keep = pa.RecordBatch.from_arrays(cols, schema=out_schema).filter(pc.not_equal(rb.column("k"), int(RowKind.BAD)))
            if keep.num_rows:
                yield keep

    return mapper



def divert_bad(records: list[str], bad_rows: str | None) -> None:
    """Bad rows (`settle_undecided`'s records) raise (no --bad-rows: the driver locates the first
    with the oracle's reader, tefq.spark.runtime.progress) or go to --bad-rows in the oracle's
    record format (tefq.io.bad_rows)."""
    from tefq.io.bad_rows import BadRowLog
    from tefq.io.paths import local_path
    from tefq.io.validate import Fault

    log = BadRowLog(bad_rows)
    try:
        for text in records:
            file, row, kind, message, *cells = json.loads(text)
            path = local_path(file)
            if bad_rows is None:
                raise ValueError(f"{BAD_ROW}\t{path}\t{kind}: {message}")
            log.report(Fault(kind, 0, message), path, int(row), "\t".join(cells), 0)
    finally:
        log.close()


def bad_record(file: str, row: int, ts: int | str | None, s: str | None, p: str | None,
               o: str | None) -> str | None:
    """The record `divert_bad` takes (JSON [file, row, kind, message, ts, s, p, o]) of a row the
    Parquet reader would refuse (tefq.io.readers.parquet_row_fault), or None for a good row."""
    from tefq.io.readers import parquet_row_fault

    fault = parquet_row_fault(None if ts is None else int(ts), s, p, o, row=row)
    if fault is None:
        return None
    return json.dumps([file, row, fault.kind, fault.message] + ["" if c is None else str(c) for c in (ts, s, p, o)])


def settle_undecided(rb: pa.RecordBatch) -> pa.RecordBatch:
    """The rows the projection could not vouch for (column x: JSON [file, row, ts, s, p, o]) are
    classified by the oracle's rules for a Parquet row (tefq.io.readers.parquet_row_fault): a bad
    one gets kind BAD and x its record (`bad_record`), a good one keeps the kind its clause gave it
    and x null."""
    import pyarrow.compute as pc

    x = rb.column("x")
    records = pa.nulls(rb.num_rows, pa.string())
    if x.null_count < rb.num_rows:
        at = pc.indices_nonzero(pc.is_valid(x)).to_numpy()
        kinds = rb.column("k").to_numpy(zero_copy_only=False).copy()
        out: list[str | None] = [None] * rb.num_rows
        for i, text in zip(at.tolist(), x.take(pa.array(at)).to_pylist()):
            file, row, *cells = json.loads(text)
            out[i] = bad_record(file or "", int(row or 0), *cells)
            if out[i] is not None:
                kinds[i] = RowKind.BAD
        records = pa.array(out, pa.string())
        rb = rb.set_column(rb.schema.get_field_index("k"), "k", pa.array(kinds, pa.int32()))
    return rb.set_column(rb.schema.get_field_index("x"), "x", records)


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
            divert_bad(rows, self.bad_rows)
            self.bad += len(rows)

    @property
    def any(self) -> bool:
        return bool(self.count or self.bad)



def current_map_schema(plan: CurrentAggregatePlan) -> str:
    parts = ["k int", "ts long", "o long", "f long", "e long", "n long"]
    for i in range(len(plan.group_vars)):
        parts += [f"g{i} long", f"t{i} string"]
    return ", ".join(parts + ["b int"])



def const_batch(schema: pa.Schema, kind: int, size: int, **cols) -> pa.RecordBatch:
    """`size` control rows of `kind`: the given columns, zeros or nulls elsewhere (no nulls in
    integer columns: pandas would turn a whole batch's codes into floats)."""
    arrays = {"k": pa.array(np.full(size, kind, np.int32))}
    for f in list(schema)[1:]:
        value = cols.get(f.name)
        if value is None:
            arrays[f.name] = (pa.nulls(size, f.type) if f.type == pa.string()
                              else pa.array(np.zeros(size, f.type.to_pandas_dtype())))
        else:
            arrays[f.name] = value if isinstance(value, pa.Array) else pa.array(value, f.type)
    return pa.RecordBatch.from_pydict(arrays, schema=schema)


class TermRows:
    """The group terms a mapper has seen on SINCE rows, sent once per (bucket, code) on TERMS rows."""

    def __init__(self, ngroups: int) -> None:
        self.ngroups = ngroups
        self.named: list[set] = [set() for _ in range(ngroups)]  # (bucket, code) pairs already sent
        self.rows: list[tuple[int, int, int, str]] = []  # (group var, bucket, code, term)

    def see(self, rb: pa.RecordBatch, opens: np.ndarray) -> None:
        """`opens`: the SINCE rows of `rb` (the rows that carry terms)."""
        if not self.ngroups or not len(opens):
            return
        buckets = rb.column("b").to_numpy(zero_copy_only=False)[opens]
        for i in range(self.ngroups):
            codes = rb.column(f"g{i}").to_numpy(zero_copy_only=False)[opens]
            for b in np.unique(buckets).tolist():
                sel = np.nonzero(buckets == b)[0]
                uniq, first = np.unique(codes[sel], return_index=True)
                new = [(c, j) for c, j in zip(uniq.tolist(), first.tolist()) if (b, c) not in self.named[i]]
                if new:
                    terms = rb.column(f"t{i}").take(pa.array(opens[sel[[j for _, j in new]]])).to_pylist()
                    for (c, _), term in zip(new, terms):
                        self.named[i].add((b, c))
                        self.rows.append((i, b, c, term))

    def batch(self, schema: pa.Schema) -> pa.RecordBatch | None:
        if not self.rows:
            return None
        cols = {"b": [b for _, b, _, _ in self.rows]}
        for i in range(self.ngroups):
            cols[f"g{i}"] = [c if j == i else 0 for j, _, c, _ in self.rows]
            cols[f"t{i}"] = [term if j == i else None for j, _, _, term in self.rows]
        return const_batch(schema, RowKind.TERMS, len(self.rows), **cols)


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

    def mapper(batches, partition: int | None = None):
        import pyarrow.compute as pc

        from pyspark import TaskContext

        if partition is None:
            ctx = TaskContext.get()
            partition = ctx.partitionId() if ctx is not None else 0
        tie_order = TieOrder(ranks or {}, partition)  # stream order of ties
        scan, flush, seen = PartitionScan(bad_rows), False, False
        terms = TermRows(ng)
        busy, rows_in, started = 0.0, 0, time.perf_counter()
        for rb in batches:
            t = time.perf_counter()
            seen = True
            rows_in += rb.num_rows
            rb = settle_undecided(rb)
            k = rb.column("k")
            data = pc.is_in(k, EVENT_KIND_SET)  # SINCE/UNTIL rows: the only ones shuffled
            scan.see(rb, pc.or_(pc.equal(k, int(RowKind.OTHER)), data), pc.equal(k, int(RowKind.BAD)))
            flush = flush or pc.any(pc.equal(k, int(RowKind.FLUSH))).as_py()
            order = tie_order(rb.column("o"))
            keep_idx = np.nonzero(data.to_numpy(zero_copy_only=False))[0]
            opens = keep_idx[k.to_numpy(zero_copy_only=False)[keep_idx] == RowKind.SINCE]  # the rows with terms
            terms.see(rb, opens)
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
        named = terms.batch(out_schema)
        if named is not None:
            yield named
        if scan.any:
            yield const_batch(out_schema, RowKind.HEARTBEAT, nb, ts=[scan.lo or 0] * nb, o=[scan.hi or 0] * nb, f=[scan.count] * nb,
                              n=[scan.bad] * nb, b=list(range(nb)))
        if flush:
            yield const_batch(out_schema, RowKind.FLUSH, nb, b=list(range(nb)))

    return mapper
