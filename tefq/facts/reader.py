"""A stored fact table (`tefq facts --out FILE`) read back as the oracle's fact store, so queries
can run as of a time without replaying events (spec §12). Parquet, TSV and JSON Lines keep every
term exactly; CSV (SPARQL CSV writes IRIs and literals alike, bare) is refused with the remedy.
Every bad row is a TefqError naming the file and the row."""
from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence

from tefq import terms
from tefq.errors import TefqError
from tefq.facts.table import fact_label
from tefq.io.ntriples import TermError, normalise_term
from tefq.oracle.facts import INF, FactStore, FactTable, coalesce
from tefq.plan.logical import Document

# (row number for messages, fact label, identity variable -> term, start ms, end ms or None)
Record = tuple[int, str, dict[str, str], int, int | None]
_NOT_IDENTITY = ("fact", "start", "end")
Span = tuple[int | None, int | None]  # (lo, hi) ms


def read_fact_store(path: str, doc: Document, spans: Sequence[Span] = ()) -> FactStore:
    """The facts `doc` defines, as stored in the table at `path`; with `spans` only the intervals
    that, for some `(lo, hi)` of them, start at or before `hi` and end after `lo` (None: no bound):
    the only ones an as-of query can see."""
    ext = os.path.splitext(path[:-3] if path.endswith(".gz") else path)[1].lower()
    readers = {".parquet": _parquet_records, ".tsv": _tsv_records, ".jsonl": _jsonl_records}
    if ext == ".csv":
        raise TefqError("a CSV fact table cannot be read back (SPARQL CSV writes IRIs and literals alike): "
                        "store it with --format parquet, tsv or jsonl", path)
    if ext not in readers:
        raise TefqError(f"unknown fact table format '{ext or path}': expected .parquet, .tsv or .jsonl", path)
    if not os.path.isfile(path):
        raise TefqError("no such fact table file", path)
    records = readers[ext](path, spans) if ext == ".parquet" else _within(readers[ext](path), spans)
    return _store(doc, records, path)


def stored_rows(path: str) -> int | None:
    """How many intervals (rows) the fact table at `path` holds, whatever an as-of run reads of
    it (the summary's "N of M"); None when it cannot be counted. Parquet: from its footer."""
    try:
        if path.lower().endswith(".parquet"):
            import pyarrow.parquet as pq

            return pq.ParquetFile(path).metadata.num_rows
        with open(path, encoding="utf-8") as f:
            lines = sum(1 for line in f if line.strip())
        return lines - 1 if path.lower().endswith(".tsv") else lines  # a TSV table has a header
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _within(records: Iterator[Record], spans: Sequence[Span]) -> Iterator[Record]:
    for rec in records:
        _, _, _, start, end = rec
        if not spans or any((hi is None or start <= hi) and (lo is None or end is None or end > lo)
                            for lo, hi in spans):
            yield rec


def _arrow_within(data, spans: Sequence[Span]):  # -> pa.ChunkedArray of bool
    """`_within` as an Arrow mask (a null start is kept: it is reported, not dropped)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    mask = pa.scalar(False)
    for lo, hi in spans:
        starts = pc.less_equal(data["start"], hi) if hi is not None else pa.scalar(True)
        ends = pc.or_kleene(pc.is_null(data["end"]), pc.greater(data["end"], lo)) if lo is not None else pa.scalar(True)
        mask = pc.or_kleene(mask, pc.and_kleene(starts, ends))
    return pc.fill_null(mask, True)


def _store(doc: Document, records: Iterator[Record], path: str) -> FactStore:
    by_label = {fact_label(doc, f): f for f in doc.facts}
    tables = {f.name: FactTable(f.name, f.template, f.identity) for f in doc.facts}
    for row, label, cells, start, end in records:
        fact = by_label.get(label)
        if fact is None:
            raise TefqError(f"row {row}: fact '{label}' is not defined by the document "
                            f"(it defines {', '.join(map(repr, by_label)) or 'no fact'})", path)
        missing = [v.name for v in fact.identity if not cells.get(v.name)]
        if missing:
            raise TefqError(f"row {row}: fact '{label}' has no {', '.join(missing)}", path)
        if end is not None and end <= start:
            raise TefqError(f"row {row}: end {end} is not after start {start}", path)
        ident = tuple(cells[v.name] for v in fact.identity)
        tables[fact.name].intervals.setdefault(ident, []).append((start, INF if end is None else end))
    for table in tables.values():
        table.intervals = {k: coalesce(v) for k, v in table.intervals.items()}
    return FactStore(tables)


def _ms(value, row: int, column: str, path: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(terms.split_literal(value)[0]) if isinstance(value, str) and value.startswith('"') else int(value)
    except (TypeError, ValueError):
        raise TefqError(f"row {row}: {column} {value!r} is not integer milliseconds", path) from None


def _start(value, row: int, path: str) -> int:
    ms = _ms(value, row, "start", path)
    if ms is None:
        raise TefqError(f"row {row}: no start", path)
    return ms


def _parquet_records(path: str, spans: Sequence[Span]) -> Iterator[Record]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        data = pq.ParquetFile(path).read()  # (pq.read_table imports pyarrow.dataset: a second more)
    except (OSError, pa.ArrowException) as e:
        raise TefqError(f"cannot read the fact table: {e}", path) from None
    missing = [c for c in ("fact", "start", "end") if c not in data.column_names]
    if missing:
        raise TefqError(f"not a fact table: no column {', '.join(missing)}", path)
    for name in ("start", "end"):  # timestamps (as tefq writes them) or plain int64 ms
        if pa.types.is_timestamp(data.schema.field(name).type):
            data = data.set_column(data.column_names.index(name), name, data[name].cast(pa.int64()))
    rows = pa.array(range(1, data.num_rows + 1), type=pa.int64())
    if spans:  # filtered in Arrow: rows no instant can see are never converted to Python
        keep = _arrow_within(data, spans)
        data, rows = data.filter(keep), rows.filter(keep)
    ids = [c for c in data.column_names if c not in _NOT_IDENTITY]
    columns = [data[c].to_pylist() for c in ("fact", "start", "end", *ids)]
    for i, fact, start, end, *cells in zip(rows.to_pylist(), *columns):
        yield (i, fact or "", {c: v for c, v in zip(ids, cells) if v}, _start(start, i, path), _ms(end, i, "end", path))


def _tsv_records(path: str) -> Iterator[Record]:
    with open(path, encoding="utf-8") as f:
        head = [h.lstrip("?") for h in f.readline().rstrip("\n").split("\t")]
        missing = [c for c in _NOT_IDENTITY if c not in head]
        if missing:
            raise TefqError(f"not a fact table: its header has no {', '.join('?' + c for c in missing)}", path, 1)
        for line_no, line in enumerate(f, start=2):
            cells = dict(zip(head, line.rstrip("\n").split("\t")))
            try:
                ids = {c: normalise_term(v) for c, v in cells.items() if c not in _NOT_IDENTITY and v}
                label = terms.split_literal(normalise_term(cells.get("fact", '""')))[0]
            except TermError as e:
                raise TefqError(f"line {line_no}: {e}", path) from None
            yield (line_no, label, ids, _start(cells.get("start"), line_no, path),
                   _ms(cells.get("end"), line_no, "end", path))


def _json_term(cell: dict) -> str:
    if cell.get("type") == "uri":
        return terms.iri(cell["value"])
    if cell.get("type") == "bnode":
        return "_:" + cell["value"]
    return terms.literal(cell["value"], cell.get("datatype"), cell.get("xml:lang"))


def _jsonl_records(path: str) -> Iterator[Record]:
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                ids = {k: _json_term(v) for k, v in obj.items() if k not in _NOT_IDENTITY and v}
            except (ValueError, KeyError, AttributeError, TypeError) as e:
                raise TefqError(f"line {line_no}: not a fact table row ({e})", path) from None
            yield line_no, str(obj.get("fact", "")), ids, _start(obj.get("start"), line_no, path), \
                _ms(obj.get("end"), line_no, "end", path)


__all__ = ["read_fact_store"]
