"""Columnar ingestion for Parquet stream inputs (issue 14): Spark carries only file paths, a
mapInArrow task reads each Parquet file itself with pyarrow and emits the rows the generic
projection + mapper (`runtime/columns.py`, `runtime/mappers.py`) would emit for a
CurrentAggregatePlan, so the stateful operator is the same.

Why: on the generic path the JVM dominates a micro-batch (Parquet read into rows, the regex
vouching, xxhash64 of strings, the Arrow round trip into Python). Here Spark's file source (the
`binaryFile` format with only `path` selected: Spark does not read `content` then) still owns
offsets, `maxFilesPerTrigger`, the checkpoint and exactly-once; the task reads each file once
(read amplification 1), checks and encodes only the *distinct* terms of each column (Parquet
dictionaries, read as such), and emits each event row once, shuffled by bucket.

Codes: a term's code is pandas' SipHash of it (`term_codes`: deterministic across processes and
restarts; not Spark's xxhash64, so a checkpoint never switches between the two paths:
`claim_ingest`); identity, element and bucket codes combine term codes with a splitmix64 step.
Terms are in the oracle's normal form (tefq.io.validate.check_term), as the oracle reads them.
"""
from __future__ import annotations

import os
import time
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa

from tefq.errors import TefqError
from tefq.spark.operators.base import RowKind, profile
from tefq.spark.planning import CurrentAggregatePlan
from tefq.spark.runtime.mappers import BAD_ROW, TermRows, const_batch, divert_bad
from tefq.spark.runtime.progress import Progress, as_dict
from tefq.spark.runtime.sources import CONTROL_SCHEMA, SPARK_FORMATS, name_glob

INGEST_CHOICES = ("auto", "columnar", "rows")
INGEST_MARKER = "ingest"  # beside the query's checkpoint: the path that wrote it

# Rows within one file < 2^22 (operators/base.ORDER_SHIFT leaves 42 bits: rank << 22 | row).
ROW_BITS = 22
UNRANKED = 1 << 41  # files the driver did not rank (none in a bounded run): after the ranked ones


# ---------------------------------------------------------------------------------------------
# The choice of path, and the checkpoint's record of it

def parquet_only(stream_paths: list[str]) -> bool:
    """Every stream path holds Parquet files only (`stream_paths` after staging: RDF inputs are
    staged as Parquet by then, sources.stage_streams)."""
    from tefq.io.readers import stream_files, stream_format

    return all({stream_format(f) for f in stream_files(p)} == {("parquet", False)} for p in stream_paths)


def why_not_columnar(plan, stream_paths: list[str]) -> str | None:
    """None if the plan can take the columnar path over these inputs, else the reason."""
    if not isinstance(plan, CurrentAggregatePlan) or plan.operator != "FactOperator":
        return f"query {plan.query} is not a CURRENT aggregate (the columnar path covers that shape only)"
    if not parquet_only(stream_paths):
        return "a stream input is not Parquet files (" + "|".join(SPARK_FORMATS[1:]) + " go through Spark's reader)"
    return None


def choose_ingest(requested: str, plan, stream_paths: list[str]) -> str:
    """`auto`: columnar where the plan and inputs allow it, else rows; `columnar` where they do
    not is refused (exit 2) rather than silently run the other way."""
    if requested not in INGEST_CHOICES:
        raise TefqError(f"unknown --ingest {requested!r}: expected auto, columnar or rows", file="--ingest")
    if requested == "rows":
        return "rows"
    reason = why_not_columnar(plan, stream_paths)
    if reason is None:
        return "columnar"
    if requested == "columnar":
        raise TefqError(f"--ingest columnar: {reason}; use --ingest auto or rows", file="--ingest")
    return "rows"


def claim_ingest(qdir: str, ck: str, ingest: str) -> None:
    """Record the path a query's checkpoint is written by; refuse (exit 2) a restart on the other
    one: its sources, codes and state would not match. A checkpoint with state but no record was
    written by the row path (before this record existed)."""
    marker = os.path.join(qdir, INGEST_MARKER)
    if os.path.exists(marker):
        with open(marker, encoding="utf-8") as fh:
            written = fh.read().strip()
    else:
        offsets = os.path.join(ck, "offsets")
        written = "rows" if os.path.isdir(offsets) and any(f.isdigit() for f in os.listdir(offsets)) else None
    if written is not None and written != ingest:
        raise TefqError(f"this checkpoint was written with --ingest {written} (resolved), this run would take "
                        f"--ingest {ingest}: a restart cannot switch ingestion paths; run with --ingest {written} "
                        "or use a fresh --checkpoint", qdir)
    if written is None:
        os.makedirs(qdir, exist_ok=True)
        tmp = marker + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(ingest + "\n")
        os.replace(tmp, marker)


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


def local_path(uri: str) -> str:
    return unquote(urlparse(uri).path) if uri.startswith("file:") else uri


def path_ranks(stream_paths: list[str]) -> dict[str, int]:
    """Stream order for ties (spec §1): each file's absolute path -> its rank in the oracle's order
    (the --stream paths in turn, each directory's files by relative path). Computed on the driver:
    the task knows its file's path, so no Spark job and no hash of Spark's path form is needed."""
    from tefq.io.readers import stream_files
    from tefq.spark.runtime.sources import _is_stage_dir, _staged_in_order

    files: list[str] = []
    for p in stream_paths:
        files += _staged_in_order(p) if os.path.isdir(p) and _is_stage_dir(p) else stream_files(p)
    return {os.path.abspath(f): i for i, f in enumerate(files[:1 << 19])}


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

def fast_patterns() -> dict[str, str]:
    """The cells the oracle's Parquet reader takes unchanged (tefq.io.readers._check_terms)."""
    from tefq.io.ntriples import BNODE_FAST, IRI_FAST, LIT_FAST

    return {"s": f"^(?:{IRI_FAST}|{BNODE_FAST})$", "p": f"^{IRI_FAST}$",
            "o": f"^(?:{IRI_FAST}|{BNODE_FAST}|{LIT_FAST})$"}


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

    def __init__(self, bad_rows: str | None) -> None:
        self.bad_rows = bad_rows
        self.lo: int | None = None
        self.hi: int | None = None
        self.count = self.bad = self.unranked_row = 0
        self.flush = False
        from pyspark import TaskContext

        ctx = TaskContext.get()
        self.partition = ctx.partitionId() if ctx is not None else 0

    def see_times(self, ts: np.ndarray) -> None:
        if len(ts):
            a, z = int(ts.min()), int(ts.max())
            self.lo = a if self.lo is None else min(self.lo, a)
            self.hi = z if self.hi is None else max(self.hi, z)
            self.count += len(ts)

    def divert(self, texts: list[str]) -> None:
        divert_bad(texts, self.bad_rows)  # raises in strict mode
        self.bad += len(texts)


def bad_texts(uri: str, batch: pa.RecordBatch, ts: pa.Array, cols: dict[str, Column], bad: np.ndarray,
              row0: int) -> list[str]:
    """The diverted rows, as the generic mapper writes them: file, kind: message, ts, s, p, o."""
    out = []
    rows = np.flatnonzero(bad)
    raw = {c: batch.column(c).take(pa.array(rows)).to_pylist() for c in "spo"}
    tsl = ts.take(pa.array(rows)).to_pylist()
    for k, i in enumerate(rows.tolist()):
        if tsl[k] is None:
            reason = f"empty-cell: row {row0 + i + 1}: column ts is null"
        else:
            reason = ""
            for c in "spo":
                j = cols[c].idx[i]
                if j < 0:
                    reason = f"empty-cell: row {row0 + i + 1}: column {c} is null"
                    break
                f = cols[c].faults.get(int(j))
                if f is not None:
                    reason = f"{f.kind}: row {row0 + i + 1}, column {c}: {f.message}"
                    break
        cells = ["" if tsl[k] is None else str(tsl[k])] + ["" if raw[c][k] is None else str(raw[c][k]) for c in "spo"]
        out.append("\t".join([uri, reason] + cells))
    return out


def make_columnar_mapper(plan: CurrentAggregatePlan, bad_rows: str | None, ranks: dict[str, int]):
    """mapInArrow over (path, flush) rows: each file read, checked and encoded; output in
    `mappers.current_map_schema(plan)`, as `mappers.make_mapper` emits it (events, then the terms
    rows, one heartbeat per bucket, the flush)."""
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
    patterns = fast_patterns()

    def encode(uri: str, batch: pa.RecordBatch, row0: int, rank: int | None, st: PartitionState,
               terms: TermRows) -> pa.RecordBatch | None:
        n = batch.num_rows
        ts = ts_column(batch)
        cols = {c: Column(batch.column(c), c, patterns) for c in "spo"}
        bad = ts.is_null().to_numpy(zero_copy_only=False) if ts.null_count else np.zeros(n, bool)
        for c in "spo":
            bad |= cols[c].bad_rows()
        tsv = ts.fill_null(0).to_numpy(zero_copy_only=False) if ts.null_count else ts.to_numpy(zero_copy_only=False)
        if bad.any():
            st.divert(bad_texts(uri, batch, ts, cols, bad, row0))
        good = ~bad
        st.see_times(tsv[good])
        m = np.full(n, -1, np.int64)  # the first clause a row matches, as the projection's when-chain
        for i in reversed(range(len(plan.clauses))):
            c = plan.clauses[i]
            cond = np.ones(n, bool)
            for col, term in c.consts:
                cond &= cols[col].equals(term)
            for a, b in c.same:
                cond &= cols[a].codes == cols[b].codes
            m[cond] = i
        keep = np.flatnonzero(good & (m >= 0))
        if rank is not None:  # as mappers.TieOrder: file rank, then row in the file
            order = (np.int64(rank) << ROW_BITS) + row0 + keep.astype(np.int64)
        else:
            order = UNRANKED + (np.int64(st.partition) << 31) + st.unranked_row + row0 + keep.astype(np.int64)
        if not len(keep):
            return None
        mk = m[keep]
        kinds = np.array([c.kind for c in plan.clauses], np.int32)[mk]

        def per_clause(columns, make) -> np.ndarray:
            """`make(column names, rows)` for each kept row, with the columns its clause gives:
            clauses that read the same columns are computed together (UC1, UC2: one pass)."""
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

        fid = per_clause(lambda c: c.binds, lambda names, rows: combine([cols[x].codes[rows] for x in names], len(rows)))
        elem = fid if elem_is_fid else combine([cols[x].codes[keep] for x in "spo"], len(keep))
        arrays = {"k": pa.array(kinds), "ts": pa.array(tsv[keep]), "o": pa.array(order), "f": pa.array(fid),
                  "e": pa.array(elem), "n": pa.array(np.zeros(len(keep), np.int64))}
        gcodes, gterms = [], []
        # a group term per kept row, as an index into the three columns' dictionaries laid end to end
        base = {"s": 0, "p": len(cols["s"].norm), "o": len(cols["s"].norm) + len(cols["p"].norm)}
        for i, g in enumerate(plan.group_vars):
            where = lambda c, j=var_pos[g]: (c.binds[j],)  # noqa: E731
            gcodes.append(per_clause(where, lambda names, rows: cols[names[0]].codes[rows]))
            gterms.append(per_clause(where, lambda names, rows: cols[names[0]].idx[rows] + base[names[0]]))
            arrays[f"g{i}"] = pa.array(gcodes[-1])
            arrays[f"t{i}"] = pa.nulls(len(keep), pa.string())
        if ng:
            bucket = (combine(gcodes, len(keep)).view(np.uint64) % np.uint64(nb)).astype(np.int32)
        else:
            bucket = np.zeros(len(keep), np.int32)
        arrays["b"] = pa.array(bucket)
        out = pa.RecordBatch.from_arrays([arrays[f] for f in out_schema.names], schema=out_schema)
        opens = np.flatnonzero(kinds == RowKind.SINCE)
        if ng and len(opens):
            everything = pa.concat_arrays([cols[c].norm.cast(pa.string()) for c in "spo"])
            named = {"b": out.column("b")}
            for i in range(ng):
                named[f"g{i}"] = out.column(f"g{i}")
                named[f"t{i}"] = pa.DictionaryArray.from_arrays(pa.array(gterms[i].astype(np.int32)), everything)
            terms.see(pa.RecordBatch.from_pydict(named), opens)
        return out

    def mapper(batches):
        import pyarrow.parquet as pq

        st = PartitionState(bad_rows)
        terms = TermRows(ng)
        seen, started, rows_in = False, time.perf_counter(), 0
        for rb in batches:
            seen = True
            for uri, flush in zip(rb.column("path").to_pylist(), rb.column("flush").to_pylist()):
                if flush:
                    st.flush = True
                    continue
                path = local_path(uri)
                rank = ranks.get(os.path.abspath(path))
                try:
                    pf = pq.ParquetFile(path, read_dictionary=["s", "p", "o"])
                except (OSError, pa.ArrowException) as e:
                    raise ValueError(f"{BAD_ROW}\t{uri}\tcannot read the Parquet file: {e}\t") from None
                check_schema(pf, uri)
                row0 = 0
                for batch in pf.iter_batches(batch_size=1 << 20, columns=["ts", "s", "p", "o"]):
                    out = encode(uri, batch, row0, rank, st, terms)
                    row0 += batch.num_rows
                    if out is not None:
                        yield out
                if rank is None:
                    st.unranked_row += row0
                rows_in += row0
        profile("columnar_mapper", rows_in=rows_in, total_s=time.perf_counter() - started)
        if not seen:
            return
        named = terms.batch(out_schema)
        if named is not None:
            yield named
        if st.count or st.bad:
            yield const_batch(out_schema, RowKind.HEARTBEAT, nb, ts=[st.lo or 0] * nb, o=[st.hi or 0] * nb,
                              f=[st.count] * nb, n=[st.bad] * nb, b=list(range(nb)))
        if st.flush:
            yield const_batch(out_schema, RowKind.FLUSH, nb, b=list(range(nb)))

    return mapper


class ColumnarProgress(Progress):
    """Spark counts a columnar batch's input in files; the events read come from the heartbeats
    (the `tefq_in` observation of the mapped rows), so progress lines and the bench's per-batch
    figures still count events."""

    def _one(self, p) -> None:
        observed = as_dict((p.get("observedMetrics") or {}).get("tefq_in"))
        q = dict(p)
        q["numInputRows"] = int(observed.get("n") or 0)
        super()._one(q)
