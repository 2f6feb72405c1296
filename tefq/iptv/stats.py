"""`tefq stats STREAM`: what an IPTV-style stream holds.

Reads Parquet, TSV and CSV column-wise (pyarrow); other formats through tefq's stream readers.
Terms are dictionary-encoded to integers once, and everything after that is numpy.
"""
from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from tefq.errors import TefqError
from tefq.iptv import model as m, sessions as S

JOIN, QUIT = f"<{m.NS}join>", f"<{m.NS}quit>"
START, FINISH = f"<{m.NS}start>", f"<{m.NS}finish>"
_FAST = (".parquet", ".tsv", ".csv")


def stream_files(path: str) -> list[str]:
    """A file, or every file under a directory in name order (recursively), as readers do."""
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        raise TefqError(f"no such stream file or directory: {path}", file=path)
    files = []
    for root, dirs, names in os.walk(path):
        dirs.sort()
        files.extend(os.path.join(root, n) for n in sorted(names) if not n.startswith((".", "_")))
    return sorted(files, key=lambda f: os.path.relpath(f, path).split(os.sep))


def _read_fast(path: str) -> pa.Table:
    try:
        if path.endswith(".parquet"):
            t = pq.read_table(path, columns=["ts", "s", "p", "o"])
        else:
            t = pcsv.read_csv(path, parse_options=pcsv.ParseOptions(delimiter="\t" if path.endswith(".tsv") else ","),
                              convert_options=pcsv.ConvertOptions(column_types={"ts": pa.int64(), "s": pa.string(),
                                                                                "p": pa.string(), "o": pa.string()}))
    except (pa.ArrowInvalid, KeyError, OSError) as e:
        raise TefqError(f"cannot read stream file: {e}", file=path) from None
    return t.select(["ts", "s", "p", "o"])


def _read_other(path: str) -> pa.Table:
    try:
        # deferred: tried here, where its absence is handled
        from tefq.io.readers import read_stream
    except ImportError:
        raise TefqError("this version cannot read this stream format (only .parquet, .tsv, .csv)", file=path) from None
    rows = list(read_stream(path))
    return pa.table({"ts": pa.array([r[0] for r in rows], pa.int64()), "s": [r[1] for r in rows],
                     "p": [r[2] for r in rows], "o": [r[3] for r in rows]})


def _read_one(path: str) -> pa.Table:
    if path.endswith(_FAST):
        try:
            return _read_fast(path)
        except TefqError:
            if path.endswith(".parquet"):
                raise
            # e.g. ISO-8601 timestamps in a TSV: let the general reader handle it
    return _read_other(path)


def load(path: str) -> pa.Table:
    files = stream_files(path)
    tables = [_read_one(f) for f in files]
    if not tables:
        raise TefqError("no stream files found", file=path)
    t = pa.concat_tables(tables)
    # stream order is by time, ties in file order (spec §1)
    order = np.argsort(t["ts"].to_numpy(), kind="stable")
    return t.take(pa.array(order))


@dataclass
class Report:
    events: int
    log_events: int
    epg_events: int
    users: int
    channels: int
    programs: int
    first_ts: int
    last_ts: int
    sessions: int
    open_sessions: int
    unmatched_quits: int
    mean_concurrent: float
    max_concurrent: int
    length_quantiles: dict[str, float]
    window_ms: int
    refresh_per_fact: int
    refresh_per_channel: int
    program_facts: int

    def lines(self) -> list[str]:
        def iso(ms: int) -> str:
            return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

        q = "  ".join(f"{k} {_human(v)}" for k, v in self.length_quantiles.items())
        ratio = self.refresh_per_fact / self.refresh_per_channel if self.refresh_per_channel else float("nan")
        w = self.window_ms / 1000
        return [
            f"events               {self.events}  (log {self.log_events}, program guide {self.epg_events})",
            f"users                {self.users}",
            f"channels             {self.channels}",
            f"programs             {self.programs}  ({self.program_facts} airings)",
            f"time span            {iso(self.first_ts)} .. {iso(self.last_ts)}  "
            f"({(self.last_ts - self.first_ts) / m.HOUR:.2f} h)",
            f"sessions             {self.sessions}  ({self.open_sessions} still open at the end, "
            f"{self.unmatched_quits} unmatched quits)",
            f"concurrent sessions  mean {self.mean_concurrent:.1f}  max {self.max_concurrent}",
            f"session length       {q}",
            f"refresh bindings     {w:g} s ticks: per session (UC2) {self.refresh_per_fact}, "
            f"per channel (UC1) {self.refresh_per_channel}, ratio {ratio:.2f}",
        ]


def _human(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}min"
    return f"{seconds / 3600:.1f}h"


def _codes(col: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    d = pc.dictionary_encode(col).combine_chunks()
    return d.indices.to_numpy(zero_copy_only=False).astype(np.int64), d.dictionary.to_pylist()


def report(table: pa.Table, window_ms: int = 10_000) -> Report:
    ts = table["ts"].to_numpy().astype(np.int64)
    if len(ts) == 0:
        raise TefqError("the stream is empty")
    p = table["p"]
    is_join, is_quit = pc.equal(p, JOIN).to_numpy(zero_copy_only=False), pc.equal(p, QUIT).to_numpy(zero_copy_only=False)
    is_start = pc.equal(p, START).to_numpy(zero_copy_only=False)
    is_finish = pc.equal(p, FINISH).to_numpy(zero_copy_only=False)
    log, epg = is_join | is_quit, is_start | is_finish
    # one code space for subjects and objects: a channel is the object of a join and the
    # subject of a start
    codes, _ = _codes(pa.chunked_array(table["s"].chunks + table["o"].chunks, pa.string()))
    s, o = codes[:len(ts)], codes[len(ts):]
    n_o = int(codes.max()) + 1
    users = np.unique(s[log])
    channels = np.unique(np.concatenate([o[log], s[epg]]))
    programs = np.unique(o[epg])
    first, last = int(ts[0]), int(ts[-1])
    ses = S.sessions(s[log] * n_o + o[log], ts[log], is_join[log])
    prog = S.sessions(s[epg] * n_o + o[epg], ts[epg], is_start[epg])
    log_first = int(ts[log][0]) if log.any() else first
    log_last = int(ts[log][-1]) if log.any() else last
    mean_c, max_c = S.concurrency(ses, log_first, log_last)
    closed = ses.end != S.OPEN_END
    lengths = (ses.end[closed] - ses.start[closed]) / 1000.0
    qs = (("p10", 0.1), ("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0))
    quant = {k: float(np.quantile(lengths, v)) for k, v in qs} if len(lengths) else {}
    return Report(
        events=len(ts), log_events=int(log.sum()), epg_events=int(epg.sum()), users=len(users),
        channels=len(channels), programs=len(programs), first_ts=first, last_ts=last, sessions=len(ses),
        open_sessions=int((~closed).sum()), unmatched_quits=ses.unmatched_closes,
        mean_concurrent=mean_c, max_concurrent=max_c, length_quantiles=quant, window_ms=window_ms,
        refresh_per_fact=S.refresh_per_fact(ses, log_first, log_last, window_ms),
        refresh_per_channel=S.refresh_per_group(ses, ses.ident % n_o, log_first, log_last, window_ms),
        program_facts=len(prog),
    )
