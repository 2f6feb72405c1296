"""Write simulated IPTV streams as files: DIR/log/part-NNNNN.<ext> and DIR/epg/part-NNNNN.<ext>.

Terms are built column-wise from the integer-coded events (pyarrow compute), so no Python code
runs per event.
Files hold a fixed number of events, so a run of any size streams out in bounded memory and a
Spark file source can read the directory as a stream.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from tefq.errors import TefqError
from tefq.iptv import model as m
from tefq.iptv.generator import Chunk, IptvConfig, simulate_epg, simulate_log

FORMATS = ("parquet", "tsv", "csv", "nq", "trig")
PROV_TIME = "<http://www.w3.org/ns/prov#generatedAtTime>"
XSD_DATETIME = "<http://www.w3.org/2001/XMLSchema#dateTime>"
GRAPH_NS = "http://example.org/iptv/graph/"
EVENTS_PER_USER = 4.4  # the paper's density (100,000 events, 22,872 users): every user appears


def rows_per_file(events: int) -> int:
    """About ten files for small runs, at most two million events per file for large ones."""
    return int(min(2_000_000, max(10_000, -(-events // 10))))


@dataclass
class Written:
    """What a generation run wrote."""

    log_files: list[str] = field(default_factory=list)
    epg_files: list[str] = field(default_factory=list)
    log_events: int = 0
    epg_events: int = 0
    first_ts: int | None = None
    last_ts: int = 0
    users_seen: int = 0
    channels_seen: int = 0


class _Terms:
    """Term columns of one stream. Numbered IRIs (`:u17`, `:prog9`) are built from the numbers
    column-wise; predicates and, when their number is known (channels), objects come from a
    small dictionary: as Arrow dictionary arrays Parquet writes them without hashing a value."""

    def __init__(self, subject_prefix: str, object_prefix: str, predicates: tuple[str, str],
                 n_objects: int | None = None) -> None:
        self.subject_prefix = f"<{m.NS}{subject_prefix}"
        self.object_prefix = f"<{m.NS}{object_prefix}"
        self.predicates = pa.array([f"<{m.NS}{p}>" for p in predicates], pa.string())
        self.objects = None if n_objects is None else \
            self._numbered(self.object_prefix, np.arange(n_objects, dtype=np.int64))

    @staticmethod
    def _numbered(prefix: str, index: np.ndarray) -> pa.Array:
        numbers = pc.cast(pa.array(index.astype(np.int64) + 1), pa.string())
        return pc.binary_join_element_wise(prefix, numbers, ">", "")

    def table(self, chunk: Chunk, dictionary: bool) -> pa.Table:
        """Columns ts, s, p, o; with `dictionary`, p and o may be Arrow dictionary arrays."""
        def small(values: pa.Array, index: np.ndarray) -> pa.Array:
            i = pa.array(index.astype(np.int32))
            return pa.DictionaryArray.from_arrays(i, values) if dictionary else values.take(i)

        o = self._numbered(self.object_prefix, chunk.obj) if self.objects is None else small(self.objects, chunk.obj)
        return pa.table({
            "ts": pa.array(chunk.ts + m.EPOCH_MS, pa.int64()),
            "s": self._numbered(self.subject_prefix, chunk.subject),
            "p": small(self.predicates, chunk.kind),
            "o": o,
        })


def _rechunk(chunks: Iterator[Chunk], size: int) -> Iterator[Chunk]:
    """Regroup time-ordered chunks into chunks of exactly `size` events (the last may be short)."""
    buf: list[Chunk] = []
    held = 0
    for c in chunks:
        buf.append(c)
        held += len(c)
        while held >= size:
            merged = Chunk(*(np.concatenate([getattr(b, f) for b in buf]) for f in ("ts", "subject", "obj", "kind")))
            yield Chunk(merged.ts[:size], merged.subject[:size], merged.obj[:size], merged.kind[:size])
            rest = Chunk(merged.ts[size:], merged.subject[size:], merged.obj[size:], merged.kind[size:])
            buf, held = ([rest] if len(rest) else []), len(rest)
    if held:
        yield Chunk(*(np.concatenate([getattr(b, f) for b in buf]) for f in ("ts", "subject", "obj", "kind")))


# ---------------------------------------------------------------- one file per format
def _iso(ts: pa.Array) -> pa.Array:
    text = np.datetime_as_string(ts.to_numpy().astype("datetime64[ms]"), unit="ms")
    return pa.array(np.char.add(text, "Z"), pa.string())


def _graph_lines(table: pa.Table, trig: bool) -> pa.Array:
    """N-Quads (or TriG) lines: one named graph per timestamp, its time given by
    `<g> prov:generatedAtTime "..."^^xsd:dateTime` in the default graph."""
    ts = table["ts"].combine_chunks()
    n = len(ts)
    t = ts.to_numpy()
    new_graph = np.ones(n, dtype=bool)
    new_graph[1:] = t[1:] != t[:-1]
    heads = np.flatnonzero(new_graph)
    graph = pc.binary_join_element_wise(f"<{GRAPH_NS}", pc.cast(ts, pa.string()), ">", "")
    g_heads = graph.take(pa.array(heads))
    time_line = pc.binary_join_element_wise(g_heads, PROV_TIME,
                                            pc.binary_join_element_wise('"', _iso(ts.take(pa.array(heads))),
                                                                        '"^^' + XSD_DATETIME, ""), ".", " ")
    s, p, o = (table[c].combine_chunks() for c in ("s", "p", "o"))
    if trig:
        body = pc.binary_join_element_wise("\t", s, " ", p, " ", o, " .", "")
        head = pc.binary_join_element_wise(time_line, "\n", g_heads, " {", "")
        # a graph block closes before the next one opens, and after the last event
        last = np.ones(n, dtype=bool)
        last[:-1] = new_graph[1:]
        closes = np.flatnonzero(last)
        pieces = [head, body, pa.array(["}"] * len(closes), pa.string())]
        keys = [heads * 3, np.arange(n) * 3 + 1, closes * 3 + 2]
    else:
        body = pc.binary_join_element_wise(s, p, o, graph, ".", " ")
        pieces = [time_line, body]
        keys = [heads * 2, np.arange(n) * 2 + 1]
    order = np.argsort(np.concatenate(keys), kind="stable")
    return pa.concat_arrays(pieces).take(pa.array(order))


def _write_lines(path: str, lines: pa.Array) -> None:
    """Write each string followed by a newline: the string array's data buffer already holds
    them back to back, so a newline is appended column-wise and the buffer written as is."""
    arr = pc.binary_join_element_wise(lines, "\n", "").cast(pa.large_string())
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset: arr.offset + len(arr) + 1]
    data = arr.buffers()[2]
    with open(path, "wb") as f:
        if len(arr):
            f.write(memoryview(data)[int(offsets[0]):int(offsets[-1])])


def write_table(table: pa.Table, path: str, fmt: str) -> None:
    if fmt == "parquet":
        # Subjects (users) are many: plain encoding + snappy is as small as a dictionary and
        # much faster to write; predicates and objects are few and dictionary-encode well.
        # store_schema=False: readers see plain string columns, never Arrow dictionaries.
        pq.write_table(table, path, compression="snappy", use_dictionary=["p", "o"], write_statistics=["ts"],
                       store_schema=False)
    elif fmt in ("tsv", "csv"):
        # IRIs hold no tab, comma, quote or newline: no quoting needed (the columns are checked
        # by pyarrow, which refuses to write such a value unquoted)
        sep = "\t" if fmt == "tsv" else ","
        with open(path, "wb") as f:
            f.write(sep.join(table.column_names).encode() + b"\n")  # pyarrow would quote the names
            pcsv.write_csv(table, f, pcsv.WriteOptions(include_header=False, delimiter=sep, quoting_style="none"))
    elif fmt == "nq":
        _write_lines(path, _graph_lines(table, trig=False))
    elif fmt == "trig":
        _write_lines(path, _graph_lines(table, trig=True))
    else:
        raise TefqError(f"unknown format '{fmt}' (expected one of {', '.join(FORMATS)})", file="--format")


def _seen(chunks: Iterator[Chunk], subjects: np.ndarray, objects: np.ndarray) -> Iterator[Chunk]:
    """Pass chunks through, marking which subjects and objects occur."""
    for c in chunks:
        subjects[c.subject] = True
        objects[c.obj] = True
        yield c


def _write_stream(chunks: Iterator[Chunk], terms: _Terms, directory: str, fmt: str, per_file: int,
                  written: Written, files: list[str]) -> int:
    os.makedirs(directory, exist_ok=True)
    n = 0
    for i, chunk in enumerate(_rechunk(chunks, per_file)):
        path = os.path.join(directory, f"part-{i:05d}.{fmt}")
        write_table(terms.table(chunk, dictionary=fmt == "parquet"), path, fmt)
        files.append(path)
        n += len(chunk)
        first = int(chunk.ts[0]) + m.EPOCH_MS
        written.first_ts = first if written.first_ts is None else min(written.first_ts, first)
        written.last_ts = max(written.last_ts, int(chunk.ts[-1]) + m.EPOCH_MS)
    return n


def generate(cfg: IptvConfig, out: str, epg: bool = False, fmt: str = "parquet") -> Written:
    """Write the viewing log (and with `epg` the program guide) of `cfg` under directory `out`."""
    cfg.check()
    if fmt not in FORMATS:
        raise TefqError(f"unknown format '{fmt}' (expected one of {', '.join(FORMATS)})", file="--format")
    if os.path.exists(out) and not os.path.isdir(out):
        raise TefqError(f"--out must be a directory, and {out} is a file", file="--out")
    for sub in ("log", "epg"):
        stale = os.path.join(out, sub)
        if os.path.isdir(stale) and any(f.startswith("part-") for f in os.listdir(stale)):
            raise TefqError(f"{stale} already holds generated files: choose an empty --out", file="--out")
    written = Written()
    log_terms = _Terms("u", "ch", ("quit", "join"), n_objects=cfg.channels)
    users, channels = np.zeros(cfg.users, dtype=bool), np.zeros(cfg.channels, dtype=bool)
    written.log_events = _write_stream(_seen(simulate_log(cfg), users, channels), log_terms,
                                       os.path.join(out, "log"), fmt, rows_per_file(cfg.events), written,
                                       written.log_files)
    written.users_seen, written.channels_seen = int(users.sum()), int(channels.sum())
    if written.users_seen < cfg.users or written.channels_seen < cfg.channels:
        print(f"tefq gen: {written.users_seen} of {cfg.users} users and {written.channels_seen} of "
              f"{cfg.channels} channels occur in the log: {cfg.events} events are too few for them all "
              f"(about {EVENTS_PER_USER:g} events per user make sure every user appears)", file=sys.stderr)
    if epg:
        end = written.last_ts - m.EPOCH_MS
        epg_terms = _Terms("ch", "prog", ("finish", "start"))
        written.epg_events = _write_stream(simulate_epg(cfg, end), epg_terms, os.path.join(out, "epg"), fmt,
                                           rows_per_file(cfg.events), written, written.epg_files)
    span = (written.last_ts - m.EPOCH_MS) / m.DAY
    if span > 1.1 * cfg.days:
        print(f"tefq gen: the log spans {span:.2f} days, more than --days {cfg.days:g}: "
              f"{cfg.users} users cannot watch {cfg.events} events' worth in that time; raise --users",
              file=sys.stderr)
    return written
