"""Columnar ingestion for Parquet stream inputs (issue 14): Spark carries only file paths, a
mapInArrow task reads each Parquet file itself with pyarrow and emits the rows the generic
projection + mapper would emit (`runtime/columns.py` + `runtime/mappers.py` for a
CurrentAggregatePlan, `runtime/fact_rows.py` for a FactAggregatePlan), so the stateful operators
are the same.

Why: on the generic path the JVM dominates a micro-batch (Parquet read into rows, the regex
vouching, xxhash64 of strings, the Arrow round trip into Python). Here Spark's file source (the
`binaryFile` format with only `path` selected: Spark does not read `content` then) still owns
offsets, `maxFilesPerTrigger`, the checkpoint and exactly-once; the task reads each file once
(read amplification 1), checks and encodes only the *distinct* terms of each column (Parquet
dictionaries, read as such), and emits each event row once, shuffled by bucket.

Direct ingestion (`reading_operator`) runs the same mapper inside each bucket's
operator over every path of the micro-batch, keeping the bucket's own rows (`only`): no event row
crosses the JVM, at the price of reading each file once per bucket.

Codes: a term's code is pandas' SipHash of it (`term_codes`: deterministic across processes and
restarts; not Spark's xxhash64, so a checkpoint never switches between the two paths:
`ingest.claim_ingest`); identity, element and bucket codes combine term codes with a splitmix64 step.
Terms are in the oracle's normal form (tefq.io.validate.check_term), as the oracle reads them.
"""
from __future__ import annotations

import os
import time

import numpy as np
import pyarrow as pa

from tefq.spark.operators.base import RowKind, profile
from tefq.spark.planning import CurrentAggregatePlan
from tefq.io.paths import local_path
from tefq.spark.runtime.mappers import BAD_ROW, TermRows, bad_record, const_batch, divert_bad
from tefq.spark.runtime.progress import Progress, as_dict
from tefq.spark.runtime.sources import CONTROL_SCHEMA, files_in_stream_order, name_glob

# Rows within one file < 2^22 (operators/base.ORDER_SHIFT leaves 42 bits: rank << 22 | row).
ROW_BITS = 22
UNRANKED = 1 << 41  # files the driver did not rank (none in a bounded run): after the ranked ones


# ---------------------------------------------------------------------------------------------
# The Spark side: a path source and the control source, one (path, flush) schema

def read_paths(spark, path: str, max_files_per_trigger: int | None):
    """A streaming DataFrame (path, flush=false) of the Parquet files of a stream path, in Spark's
    file-source order (modification time), as `sources.read_stream` lists them."""
    from pyspark.sql import functions as F

    from tefq.io.readers import literal_path_pattern

    if os.path.isdir(path):
        directory, glob = path, name_glob("parquet", False)
    else:
        directory, glob = os.path.dirname(os.path.abspath(path)), literal_path_pattern(os.path.basename(path))
    reader = (spark.readStream.format("binaryFile").option("recursiveFileLookup", "true")
              .option("pathGlobFilter", glob)
              .schema("path string, modificationTime timestamp, length long, content binary"))
    if max_files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", int(max_files_per_trigger))
    return reader.load(literal_path_pattern(directory)).select("path", F.lit(False).alias("flush"))


def read_flush(spark, directory: str):
    """The control source (sources.write_flush) as (path=null, flush=true) rows."""
    from pyspark.sql import functions as F

    os.makedirs(directory, exist_ok=True)
    return (spark.readStream.schema(CONTROL_SCHEMA).parquet(directory)
            .select(F.lit(None).cast("string").alias("path"), F.lit(True).alias("flush")))


def path_ranks(stream_paths: list[str]) -> dict[str, int]:
    """Stream order for ties (spec §1): each file's absolute path -> its rank in the oracle's order
    (the --stream paths in turn, each directory's files by relative path). Computed on the driver:
    the task knows its file's path, so no Spark job and no hash of Spark's path form is needed."""
    return {os.path.abspath(f): i for i, f in enumerate(files_in_stream_order(stream_paths)[:1 << 19])}


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

    def __init__(self, arr: pa.Array, role: str, patterns: dict[str, str]) -> None:
        import pyarrow.compute as pc

        from tefq import terms
        from tefq.io.validate import Fault, check_term

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
        ok = pc.match_substring_regex(values, patterns[role])
        if role == "o":
            ok = pc.and_(ok, pc.invert(pc.ends_with(values, "^^<" + terms.XSD_STRING + ">")))
        ok = ok.fill_null(False)
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
        self.dict_codes = term_codes(self.norm)
        self.codes = self.dict_codes[self.idx] if len(self.dict_codes) else np.zeros(len(self.idx), np.int64)

    def equals(self, term: str) -> np.ndarray:
        import pyarrow.compute as pc

        hit = pc.equal(self.norm, term).fill_null(False).to_numpy(zero_copy_only=False)
        return hit[self.idx] & (self.idx >= 0) if len(hit) else np.zeros(len(self.idx), bool)

    def bad_rows(self) -> np.ndarray:
        """Per row: the cell is null or not a term."""
        bad = self.idx < 0
        if self.faults:
            flag = np.zeros(len(self.dict_codes), bool)
            flag[list(self.faults)] = True
            bad |= flag[np.maximum(self.idx, 0)] & (self.idx >= 0)
        return bad


def ts_column(batch: pa.RecordBatch) -> pa.Array:
    """ts as int64 ms, as the oracle's reader takes it (an integer, or a timestamp floored to ms)."""
    import pyarrow.compute as pc

    col = batch.column("ts")
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    if pa.types.is_timestamp(col.type):
        return pc.floor_temporal(col, unit="millisecond").cast(pa.timestamp("ms", col.type.tz)).view(pa.int64())
    return col.cast(pa.int64())


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
        raise ValueError(f"{BAD_ROW}\t{path}\t{problem}\t")


class PartitionState:
    """What one task learns besides its rows: event-time range and counts (heartbeats), the bad
    rows, whether the flush came, the next row number of unranked files."""

    def __init__(self, bad_rows: str | None, only: int | None = None) -> None:
        # direct ingestion (`only`: the task's bucket): every bucket sees every bad row, bucket 0 records it
        self.bad_rows, self.record = bad_rows, only in (None, 0)
        self.lo: int | None = None
        self.hi: int | None = None
        self.count = self.bad = self.rows_in = 0
        self.unranked = 0  # rows of unranked files before the current one (their tie order)
        self.file_rows = 0  # fact rows of the current file before this batch (fact mapper)
        self.flush = self.seen = False
        from pyspark import TaskContext

        ctx = TaskContext.get()
        self.partition = ctx.partitionId() if ctx is not None else 0

    def see_times(self, ts: np.ndarray) -> None:
        if len(ts):
            a, z = int(ts.min()), int(ts.max())
            self.lo = a if self.lo is None else min(self.lo, a)
            self.hi = z if self.hi is None else max(self.hi, z)
            self.count += len(ts)

    def divert(self, records: list[str]) -> None:
        if self.record or self.bad_rows is None:
            divert_bad(records, self.bad_rows)  # raises in strict mode
        self.bad += len(records)


def bad_records(uri: str, batch: pa.RecordBatch, ts: pa.Array, bad: np.ndarray, row0: int) -> list[str]:
    """The diverted rows as `mappers.divert_bad` takes them (`mappers.bad_record`: the Parquet
    reader's own verdict on each)."""
    out = []
    rows = np.flatnonzero(bad)
    raw = {c: batch.column(c).take(pa.array(rows)).to_pylist() for c in "spo"}
    tsl = ts.take(pa.array(rows)).to_pylist()
    for k, i in enumerate(rows.tolist()):
        record = bad_record(uri, row0 + i + 1, tsl[k], raw["s"][k], raw["p"][k], raw["o"][k])
        assert record is not None, "the columnar check and the Parquet reader disagree"
        out.append(record)
    return out


class FileBatch:
    """Up to 2^20 rows of one file, read and checked: the s/p/o columns, ts, which rows are good
    (bad ones are already diverted or raised), where they sit in the file and the file's rank."""

    def __init__(self, uri: str, row0: int, rank: int | None, cols: dict[str, Column], ts: np.ndarray,
                 good: np.ndarray) -> None:
        self.uri, self.row0, self.rank, self.cols, self.ts, self.good = uri, row0, rank, cols, ts, good
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


def read_files(batches, ranks: dict[str, int], st: PartitionState):
    """The (path, flush) rows of a task -> FileBatches, file by file; bad rows diverted (or raised)
    and the task's event-time range and counts noted in `st` on the way."""
    import pyarrow.parquet as pq

    from tefq.io.readers import fast_term_patterns

    patterns = fast_term_patterns()
    for rb in batches:
        st.seen = True
        for uri, flush in zip(rb.column("path").to_pylist(), rb.column("flush").to_pylist()):
            if flush:
                st.flush = True
                continue
            path = local_path(uri)
            try:
                pf = pq.ParquetFile(path, read_dictionary=["s", "p", "o"])
            except (OSError, pa.ArrowException) as e:
                raise ValueError(f"{BAD_ROW}\t{uri}\tcannot read the Parquet file: {e}\t") from None
            check_schema(pf, uri)
            rank, row0 = ranks.get(os.path.abspath(path)), 0
            for batch in pf.iter_batches(batch_size=1 << 20, columns=["ts", "s", "p", "o"]):
                n = batch.num_rows
                ts = ts_column(batch)
                cols = {c: Column(batch.column(c), c, patterns) for c in "spo"}
                bad = ts.is_null().to_numpy(zero_copy_only=False) if ts.null_count else np.zeros(n, bool)
                for c in "spo":
                    bad |= cols[c].bad_rows()
                tsv = (ts.fill_null(0) if ts.null_count else ts).to_numpy(zero_copy_only=False)
                if bad.any():
                    st.divert(bad_records(uri, batch, ts, bad, row0))
                st.see_times(tsv[~bad])
                yield FileBatch(uri, row0, rank, cols, tsv, ~bad)
                row0 += n
            st.rows_in += row0


def make_columnar_mapper(plan: CurrentAggregatePlan, bad_rows: str | None, ranks: dict[str, int],
                         only: int | None = None):
    """mapInArrow over (path, flush) rows: each file read, checked and encoded; output in
    `mappers.current_map_schema(plan)`, as `mappers.make_mapper` emits it (events, then the terms
    rows, one heartbeat per bucket, the flush). `only`: emit bucket `only`'s rows alone (direct
    ingestion: each bucket's operator reads every file; bucket 0 records the bad rows)."""
    from tefq.spark.runtime.columns import determines_element

    nb, ng = plan.buckets, len(plan.group_vars)
    fields = [("k", pa.int32()), ("ts", pa.int64()), ("o", pa.int64()), ("f", pa.int64()), ("e", pa.int64()),
              ("n", pa.int64())]
    for i in range(ng):
        fields += [(f"g{i}", pa.int64()), (f"t{i}", pa.string())]
    out_schema = pa.schema(fields + [("b", pa.int32())])
    var_pos = {v: i for i, v in enumerate(plan.identity)}
    one_per_kind = len({c.kind for c in plan.clauses}) == len(plan.clauses)
    elem_is_fid = one_per_kind and all(determines_element(c) for c in plan.clauses)

    def per_clause(keep: np.ndarray, mk: np.ndarray, columns, make) -> np.ndarray:
        """`make(column names, rows)` for each kept row (`mk`: its clause), with the columns its
        clause gives: clauses that read the same columns are computed together (UC1, UC2: one pass)."""
        groups: dict[tuple, list[int]] = {}
        for i, c in enumerate(plan.clauses):
            groups.setdefault(tuple(columns(c)), []).append(i)
        if len(groups) == 1:
            return make(next(iter(groups)), keep)
        out = np.zeros(len(keep), np.int64)
        for names, idx in groups.items():
            sel = np.isin(mk, idx)
            if sel.any():
                out[sel] = make(names, keep[sel])
        return out

    def group_var(i: int):
        return lambda c, j=var_pos[plan.group_vars[i]]: (c.binds[j],)

    def group_codes(cols: dict[str, Column], keep: np.ndarray, mk: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        """Per kept row: the group terms' codes and the bucket (their combined hash mod buckets)."""
        gcodes = [per_clause(keep, mk, group_var(i), lambda names, rows: cols[names[0]].codes[rows])
                  for i in range(ng)]
        if not ng:
            return gcodes, np.zeros(len(keep), np.int32)
        return gcodes, (combine(gcodes, len(keep)).view(np.uint64) % np.uint64(nb)).astype(np.int32)

    def encode(fb: FileBatch, st: PartitionState, terms: TermRows) -> pa.RecordBatch | None:
        cols, n = fb.cols, fb.n
        m = np.full(n, -1, np.int64)  # the first clause a row matches, as the projection's when-chain
        for i in reversed(range(len(plan.clauses))):
            m[fb.matches(plan.clauses[i])] = i
        keep = np.flatnonzero(m >= 0)
        gcodes, bucket = group_codes(cols, keep, m[keep])
        if only is not None:  # the other buckets' rows are their operators' to encode
            mine = bucket == only
            keep, bucket, gcodes = keep[mine], bucket[mine], [g[mine] for g in gcodes]
        if not len(keep):
            return None
        if fb.rank is not None:  # as mappers.TieOrder: file rank, then row in the file
            order = (np.int64(fb.rank) << ROW_BITS) + fb.row0 + keep.astype(np.int64)
        else:
            order = UNRANKED + (np.int64(st.partition) << 31) + st.unranked + keep.astype(np.int64)
            st.unranked += n
        mk = m[keep]
        kinds = np.array([c.kind for c in plan.clauses], np.int32)[mk]
        fid = per_clause(keep, mk, lambda c: c.binds, lambda names, rows: combine([cols[x].codes[rows] for x in names], len(rows)))
        elem = fid if elem_is_fid else combine([cols[x].codes[keep] for x in "spo"], len(keep))
        arrays = {"k": pa.array(kinds), "ts": pa.array(fb.ts[keep]), "o": pa.array(order), "f": pa.array(fid),
                  "e": pa.array(elem), "n": pa.array(np.zeros(len(keep), np.int64))}
        gterms = []
        everything, base = fb.dictionaries() if ng else (None, {})
        for i in range(ng):
            # the group term per kept row, as an index into `everything`
            gterms.append(per_clause(keep, mk, group_var(i), lambda names, rows: cols[names[0]].idx[rows] + base[names[0]]))
            arrays[f"g{i}"] = pa.array(gcodes[i])
            arrays[f"t{i}"] = pa.nulls(len(keep), pa.string())
        arrays["b"] = pa.array(bucket)
        out = pa.RecordBatch.from_arrays([arrays[f] for f in out_schema.names], schema=out_schema)
        opens = np.flatnonzero(kinds == RowKind.SINCE)
        if ng and len(opens):
            named = {"b": out.column("b")}
            for i in range(ng):
                named[f"g{i}"] = out.column(f"g{i}")
                named[f"t{i}"] = pa.DictionaryArray.from_arrays(pa.array(gterms[i].astype(np.int32)), everything)
            terms.see(pa.RecordBatch.from_pydict(named), opens)
        return out

    to = list(range(nb)) if only is None else [only]  # the buckets this mapper's control rows go to

    def mapper(batches):
        st = PartitionState(bad_rows, only)
        terms = TermRows(ng)
        started = time.perf_counter()
        for fb in read_files(batches, ranks, st):
            out = encode(fb, st, terms)
            if out is not None:
                yield out
        profile("columnar_mapper", rows_in=st.rows_in, total_s=time.perf_counter() - started)
        if not st.seen:
            return
        named = terms.batch(out_schema)
        if named is not None:
            yield named
        k = len(to)
        if st.count or st.bad:
            yield const_batch(out_schema, RowKind.HEARTBEAT, k, ts=[st.lo or 0] * k, o=[st.hi or 0] * k,
                              f=[st.count] * k, n=[st.bad] * k, b=to)
        if st.flush:
            yield const_batch(out_schema, RowKind.FLUSH, k, b=to)

    return mapper


def make_columnar_fact_mapper(plan, bad_rows: str | None, ranks: dict[str, int], only: int | None = None):
    """The fact-aggregate plan's (UC3) columnar mapper: the rows `fact_rows.project_facts` +
    `fact_rows.make_fact_mapper` emit (one row per (fact, clause) an element matches, in clause
    order, `n` = 1 on its first; output terms on SINCE rows; one heartbeat, the flush), before
    `fact_buckets.routed_mapper` routes them. `only`: the bucket of a direct-ingestion task (bad rows
    are recorded by bucket 0's)."""
    from tefq.spark.runtime.fact_rows import _widths

    arity, nterms = _widths(plan)
    fields = [("k", pa.int32()), ("fact", pa.int32()), ("ts", pa.int64()), ("o", pa.int64()), ("f", pa.int64()),
              ("e", pa.int64()), ("n", pa.int64())]
    fields += [(f"v{i}", pa.int64()) for i in range(arity)] + [(f"t{i}", pa.string()) for i in range(nterms)]
    out_schema = pa.schema(fields + [("b", pa.int32())])
    matches = [(i, f, c) for i, f in enumerate(plan.event_facts) for c in f.clauses]

    def encode(fb: FileBatch, st: PartitionState) -> pa.RecordBatch | None:
        cols, n = fb.cols, fb.n
        hits = [np.flatnonzero(fb.matches(c)) for _, _, c in matches]
        # every (row, match) pair in row order, then match order: the projection's exploded rows
        rows = np.concatenate(hits + [np.zeros(0, np.int64)]).astype(np.int64)
        which = np.concatenate([np.full(len(h), j, np.int64) for j, h in enumerate(hits)] + [np.zeros(0, np.int64)])
        sort = np.lexsort((which, rows))
        rows, which = rows[sort], which[sort]
        # the tie order counts the projection's rows: max(1, matches) per element, bad rows included
        per_row = np.maximum(np.bincount(rows, minlength=n), 1)
        before = np.cumsum(per_row) - per_row
        first = np.ones(len(rows), bool)
        first[1:] = rows[1:] != rows[:-1]
        run_start = np.maximum.accumulate(np.where(first, np.arange(len(rows)), 0)) if len(rows) else rows
        pos = before[rows] + (np.arange(len(rows)) - run_start)
        if fb.rank is not None:
            if fb.row0 == 0:
                st.file_rows = 0
            order = (np.int64(fb.rank) << ROW_BITS) + st.file_rows + pos
            st.file_rows += int(per_row.sum())
        else:
            order = UNRANKED + (np.int64(st.partition) << 31) + st.unranked + pos
            st.unranked += int(per_row.sum())
        if not len(rows):
            return None
        k = np.zeros(len(rows), np.int32)
        fact = np.zeros(len(rows), np.int32)
        fid = np.zeros(len(rows), np.int64)
        v = [np.zeros(len(rows), np.int64) for _ in range(arity)]
        t_idx = [np.full(len(rows), -1, np.int64) for _ in range(nterms)]
        everything, base = fb.dictionaries() if nterms else (None, {})
        for j, (i, f, c) in enumerate(matches):
            sel = which == j
            if not sel.any():
                continue
            r = rows[sel]
            k[sel], fact[sel] = c.kind, i
            fid[sel] = combine([cols[x].codes[r] for x in c.binds], len(r))
            for q, x in enumerate(c.binds):
                v[q][sel] = cols[x].codes[r]
            if c.kind == RowKind.SINCE:
                for q, p in enumerate(f.terms):
                    t_idx[q][sel] = cols[c.binds[p]].idx[r] + base[c.binds[p]]
        elem = combine([cols[x].codes[rows] for x in "spo"], len(rows))
        arrays = {"k": pa.array(k), "fact": pa.array(fact), "ts": pa.array(fb.ts[rows]), "o": pa.array(order),
                  "f": pa.array(fid), "e": pa.array(elem), "n": pa.array(first.astype(np.int64))}
        for q in range(arity):
            arrays[f"v{q}"] = pa.array(v[q])
        for q in range(nterms):
            has = t_idx[q] >= 0
            arrays[f"t{q}"] = everything.take(pa.array(np.where(has, t_idx[q], 0), mask=~has))
        arrays["b"] = pa.array(np.zeros(len(rows), np.int32))
        return pa.RecordBatch.from_arrays([arrays[name] for name in out_schema.names], schema=out_schema)

    def control(kind: int, ts: int, o: int, f: int, n: int) -> pa.RecordBatch:
        values = {"k": int(kind), "ts": ts, "o": o, "f": f, "n": n}  # no null integers (pandas floats)
        return pa.RecordBatch.from_arrays(
            [pa.array([None if name.startswith("t") and name != "ts" else values.get(name, 0)],
                      out_schema.field(name).type) for name in out_schema.names], schema=out_schema)

    def mapper(batches):
        st = PartitionState(bad_rows, only)
        started = time.perf_counter()
        for fb in read_files(batches, ranks, st):
            out = encode(fb, st)
            if out is not None:
                yield out
        profile("columnar_fact_mapper", rows_in=st.rows_in, total_s=time.perf_counter() - started)
        if not st.seen:
            return
        if st.count or st.bad:
            yield control(RowKind.HEARTBEAT, st.lo or 0, st.hi or 0, st.count, st.bad)
        if st.flush:
            yield control(RowKind.FLUSH, 0, 0, 0, 0)

    return mapper


def columnar_mapper(plan, bad_rows: str | None, ranks: dict[str, int], only: int | None = None):
    """The plan's columnar mapper (the plans `why_not_columnar` accepts); `only`: bucket `only`'s
    rows alone (direct ingestion; bucket 0 records the bad rows)."""
    if isinstance(plan, CurrentAggregatePlan):
        return make_columnar_mapper(plan, bad_rows, ranks, only)
    from tefq.spark.runtime.fact_buckets import routed_mapper

    return routed_mapper(plan, make_columnar_fact_mapper(plan, bad_rows, ranks, only), only)


# ---------------------------------------------------------------------------------------------
# Direct ingestion: the (path, flush) rows go to every bucket, each bucket's operator reads the
# files itself and keeps its own rows; no event row crosses the JVM (read amplification = buckets)

def reading_operator(func, plan, bad_rows: str | None, ranks: dict[str, int]):
    """The operator `func` fed by its bucket's columnar mapper over the (path, flush) rows it
    receives: the same wire frames the Exchange would deliver, made in the operator's process."""
    def op(key, pdfs, state):
        mapper = columnar_mapper(plan, bad_rows, ranks, only=int(key[0]))
        batches = (pa.RecordBatch.from_pandas(pdf[["path", "flush"]], preserve_index=False) for pdf in pdfs)
        return func(key, (rb.to_pandas() for rb in mapper(batches)), state)

    return op


class ColumnarProgress(Progress):
    """Spark counts a columnar batch's input in files; the events read come from the heartbeats
    (the `tefq_in` observation of the mapped rows), so progress lines and the bench's per-batch
    figures still count events."""

    def _one(self, p) -> None:
        observed = as_dict((p.get("observedMetrics") or {}).get("tefq_in"))
        q = dict(p)
        q["numInputRows"] = int(observed.get("n") or 0)
        super()._one(q)
