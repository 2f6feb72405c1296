"""The bars the Spark engine is measured against, on the same events, in the same process.

* `numpy_limit`: the best single-pass, single-core numpy computation of UC1 / UC2 we know: terms
  dictionary-encoded by Arrow, one sort, fact intervals by status transitions (coalescing,
  redundant SINCE, unmatched UNTIL, duplicates as the engine treats them), then per (channel, tick)
  counts with difference arrays and, for UC2, the spec's exact sum of the double durations (the
  oracle's math.fsum, by the engine's integer-limb kernel over (fact, tick) pairs; `exact=False`:
  the cheaper rational sum, which is not the oracle's answer). It produces every reported row as
  numbers (tick, channel code, count[, average seconds]), like the engine's operator does.
* `python_loop`: a plain per-event Python loop with dicts (the single-threaded, Esper-style way),
  producing the same rows as numbers: at each tick, one row per channel with open facts.

Both return (seconds, rows); the bench checks the row counts against the engine's `rows_out`
(and that the engine read every event and none was late).
"""
from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

IPTV = "http://example.org/iptv#"


def _codes(col: pa.ChunkedArray) -> np.ndarray:
    return pc.dictionary_encode(col.combine_chunks()).indices.to_numpy().astype(np.int64)


def numpy_limit(table: pa.Table, every: int, durations: bool, t0: int = 0, exact: bool = True) -> tuple[float, int]:
    started = time.perf_counter()
    ts = table.column("ts").to_numpy()
    p = table.column("p")
    join = pc.equal(p, f"<{IPTV}join>").to_numpy(zero_copy_only=False)
    quit_ = pc.equal(p, f"<{IPTV}quit>").to_numpy(zero_copy_only=False)
    keep = np.nonzero(join | quit_)[0]
    s, o = _codes(table.column("s")), _codes(table.column("o"))
    n_o = int(o.max(initial=0)) + 1
    fid = (s * n_o + o)[keep]
    ts_k, since, chan = ts[keep], join[keep], o[keep]
    n = len(keep)
    # One sort by (identity, stream position): the stream is in time order, as the files are.
    order = np.argsort(fid * n + np.arange(n)) if n else np.zeros(0, np.int64)
    fid, ts_k, since, chan = fid[order], ts_k[order], since[order], chan[order]
    first = np.ones(n, bool)
    first[1:] = fid[1:] != fid[:-1]
    # A stream is a set: an element repeated at one ms counts once (same identity, kind, time).
    dup = np.zeros(n, bool)
    dup[1:] = ~first[1:] & (ts_k[1:] == ts_k[:-1]) & (since[1:] == since[:-1])
    if dup.any():
        k = ~dup
        fid, ts_k, since, chan, first = fid[k], ts_k[k], since[k], chan[k], first[k]
    prev_open = np.zeros(len(fid), bool)
    prev_open[1:] = since[:-1]
    prev_open[first] = False
    opens = since & ~prev_open
    closes = ~since & prev_open
    eff = np.nonzero(opens | closes)[0]
    e_open, e_ts, e_fid, e_chan = opens[eff], ts_k[eff], fid[eff], chan[eff]
    # A close and an open of one identity at one ms coalesce.
    meet = np.zeros(len(eff), bool)
    if len(eff) > 1:
        m = ~e_open[:-1] & e_open[1:] & (e_fid[:-1] == e_fid[1:]) & (e_ts[:-1] == e_ts[1:])
        meet[:-1] |= m
        meet[1:] |= m
    e_open, e_ts, e_fid, e_chan = e_open[~meet], e_ts[~meet], e_fid[~meet], e_chan[~meet]
    o_idx = np.nonzero(e_open)[0]
    nxt = o_idx + 1
    closed = nxt < len(e_open)
    closed[closed] = e_fid[nxt[closed]] == e_fid[o_idx[closed]]
    start = e_ts[o_idx]
    end = np.full(len(o_idx), np.iinfo(np.int64).max // 4, np.int64)
    end[closed] = e_ts[nxt[closed]]
    g = e_chan[o_idx]
    # Ticks from the first to the one at or after the last event.
    t_first = t0 + -((t0 - int(ts.min())) // every) * every
    t_last = t0 + -((t0 - int(ts.max())) // every) * every
    nt = (t_last - t_first) // every + 1
    lo = np.clip(-((t_first - start) // every), 0, nt)
    hi = np.clip(-((t_first - end) // every), 0, nt)
    live = lo < hi
    g, lo, hi, rel = g[live], lo[live], hi[live], start[live] - t_first
    width = nt + 1
    cnt = np.bincount(g * width + lo, minlength=n_o * width) - np.bincount(g * width + hi, minlength=n_o * width)
    count = np.cumsum(cnt.reshape(n_o, width), axis=1)[:, :nt]
    gi, ki = np.nonzero(count > 0)
    ticks = t_first + ki * every
    values = count[gi, ki]
    if durations:
        # As the engine (facts.durations_exact): whole multiples of 125 ms are exact doubles, and
        # then the rational sum is the oracle's.
        cheap = not exact or (every % 125 == 0 and not (rel % 125).any())
        secs = (rational_sums(g, lo, hi, rel, every, n_o, nt, count, gi, ki) if cheap
                else exact_sums(g, lo, hi, rel, every, n_o, nt)[gi, ki])
        _ = secs / values  # AverageDuration
    _ = (ticks, gi, values)
    return time.perf_counter() - started, len(ticks)


def rational_sums(g, lo, hi, rel, every, n_o, nt, count, gi, ki) -> np.ndarray:
    """Per reported cell, the exact sum of the durations in ms by difference arrays, divided once:
    `(count * tau - sum of starts) / 1000`. Cheap, but not the oracle's answer: the spec sums the
    xsd:double durations exactly (math.fsum of each fact's rounded `(tau - start) / 1000`)."""
    width = nt + 1
    sst = (np.bincount(g * width + lo, weights=rel, minlength=n_o * width)
           - np.bincount(g * width + hi, weights=rel, minlength=n_o * width))
    sumrel = np.cumsum(sst.reshape(n_o, width), axis=1)[:, :nt]
    return (count[gi, ki] * (ki * every) - sumrel[gi, ki]) / 1000.0


def exact_sums(g, lo, hi, rel, every, n_o, nt) -> np.ndarray:
    """(n_o, nt): per (channel, tick), bit for bit the oracle's math.fsum of the facts' durations
    `(tau - start) / 1000.0`: the engine's integer-limb kernel over every (fact, tick) pair."""
    from tefq.spark.kernels.exact import exact_duration_sums

    return exact_duration_sums(g, lo, hi, rel, every, n_o, nt)


def python_loop(table: pa.Table, every: int, durations: bool, t0: int = 0) -> tuple[float, int]:
    """Per event: dict look-ups; per tick: one row per channel with open facts."""
    ts_l = table.column("ts").to_pylist()
    s_l = table.column("s").to_pylist()
    p_l = table.column("p").to_pylist()
    o_l = table.column("o").to_pylist()
    join, quit_ = f"<{IPTV}join>", f"<{IPTV}quit>"
    started = time.perf_counter()
    open_: dict = {}  # (user, channel) -> start
    closed_at: dict = {}  # (user, channel) -> (start, end) of its last closed fact, for coalescing
    count: dict = {}  # channel -> open facts
    starts: dict = {}  # channel -> sum of open facts' starts (durations at a tick = count * tau - sum)
    seen: set = set()  # elements at the current ms (a stream is a set)
    seen_ts = None
    rows_t: list = []
    rows_c: list = []
    rows_v: list = []
    tick = t0 + -((t0 - ts_l[0]) // every) * every if ts_l else 0

    def report(tau: int) -> None:
        for ch, c in count.items():
            if c:
                rows_t.append(tau)
                rows_c.append(ch)
                rows_v.append((c * tau - starts[ch]) / 1000.0 / c if durations else c)

    for t, s, p, o in zip(ts_l, s_l, p_l, o_l):
        while t > tick:
            report(tick)
            tick += every
        if t != seen_ts:
            seen, seen_ts = set(), t
        if (s, p, o) in seen:
            continue
        seen.add((s, p, o))
        key = (s, o)
        if p == join:
            if key not in open_:
                last = closed_at.get(key)
                begin = last[0] if last is not None and last[1] == t else t
                open_[key] = begin
                count[o] = count.get(o, 0) + 1
                starts[o] = starts.get(o, 0) + begin
        elif p == quit_:
            begin = open_.pop(key, None)
            if begin is not None:
                closed_at[key] = (begin, t)
                count[o] -= 1
                starts[o] -= begin
    if ts_l:
        report(tick)  # the tick at or after the last event
    return time.perf_counter() - started, len(rows_t)
