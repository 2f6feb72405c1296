"""UC1 / UC2 in Pathway (the `bench` extra), on the same events as the Spark bench.

Pathway has no operator for "facts valid at each tick" and no running sum over time, so the
pipeline is written with its relational operators plus Python UDFs where order matters:
  1. group the SINCE/UNTIL events by identity (user, channel), sorted by (time, stream position);
     a UDF turns each sequence into fact intervals (same rules as the oracle: redundant SINCE,
     unmatched UNTIL, coalescing at one ms, duplicates);
  2. each interval becomes two difference entries (+1 at its first tick, -1 after its last;
     and the start time, for UC2's durations), summed per (channel, tick) by a groupby;
  3. per channel, a UDF takes the running sums over the ticks and emits one row per tick with
     open facts: (tick, channel, count[, average seconds]).
Timed from the pandas frame to the result frame (Pathway's batch mode: one input batch).
"""
from __future__ import annotations

import time

IPTV = "http://example.org/iptv#"


def run_pathway(usecase: str, table, every: int, t0: int = 0) -> dict:
    if usecase not in ("uc1", "uc2"):
        return {"pathway_events_per_s": None,
                "pathway_note": "UC3 not written in Pathway (derived facts by interval intersection)"}
    import pathway as pw

    durations = usecase == "uc2"
    df = table.select(["ts", "s", "p", "o"]).to_pandas()
    df["pos"] = range(len(df))
    ts_min, ts_max = int(df["ts"].min()), int(df["ts"].max())
    t_first = t0 + -((t0 - ts_min) // every) * every
    nt = (t0 + -((t0 - ts_max) // every) * every - t_first) // every + 1
    join, quit_ = f"<{IPTV}join>", f"<{IPTV}quit>"

    @pw.udf
    def intervals(evs: tuple) -> list[tuple[int, int]]:
        """Fact intervals of one identity from its (ts, pos, since) events; end -1 = open."""
        out: list[list[int]] = []
        is_open, seen, seen_ts = False, set(), None
        for ts, _, since in evs:
            if ts != seen_ts:
                seen, seen_ts = set(), ts
            if since in seen:  # a stream is a set
                continue
            seen.add(since)
            if since and not is_open:
                if out and out[-1][1] == ts:
                    out[-1][1] = -1  # reopened at the ms it closed: coalesce
                else:
                    out.append([ts, -1])
                is_open = True
            elif not since and is_open:
                out[-1][1] = ts
                is_open = False
        return [(a, b) for a, b in out]

    @pw.udf
    def diffs(iv: tuple) -> list[tuple[int, int, int]]:
        """(tick index, +-1, +-start relative to the first tick) at the interval's ends."""
        start, end = iv
        lo = max(0, min(nt, -((t_first - start) // every)))
        hi = nt if end == -1 else max(0, min(nt, -((t_first - end) // every)))
        if lo >= hi:
            return []
        rel = start - t_first
        return [(lo, 1, rel), (hi, -1, -rel)]

    @pw.udf
    def running(seq: tuple) -> list[tuple[int, int, float]]:
        rows, count, rel = [], 0, 0
        deltas = {k: (d, r) for k, d, r in seq}
        for k in range(nt):
            d, r = deltas.get(k, (0, 0))
            count, rel = count + d, rel + r
            if count:
                rows.append((t_first + k * every,
                             count, (count * k * every - rel) / 1000.0 / count if durations else float(count)))
        return rows

    started = time.perf_counter()
    t = pw.debug.table_from_pandas(df)
    f = t.filter((t.p == join) | (t.p == quit_))
    ev = f.select(f.s, f.o, item=pw.make_tuple(f.ts, f.pos, f.p == join))
    per = ev.groupby(ev.s, ev.o).reduce(ev.o, evs=pw.reducers.sorted_tuple(ev.item))
    iv = per.select(per.o, ivs=intervals(per.evs)).flatten(pw.this.ivs)
    d = iv.select(iv.o, ds=diffs(iv.ivs)).flatten(pw.this.ds)
    d = d.select(d.o, k=d.ds[0], delta=d.ds[1], rel=d.ds[2])
    agg = d.groupby(d.o, d.k).reduce(d.o, d.k, delta=pw.reducers.sum(d.delta), rel=pw.reducers.sum(d.rel))
    ch = agg.groupby(agg.o).reduce(agg.o, seq=pw.reducers.tuple(pw.make_tuple(agg.k, agg.delta, agg.rel)))
    rows = ch.select(ch.o, r=running(ch.seq)).flatten(pw.this.r)
    out = pw.debug.table_to_pandas(rows)
    secs = time.perf_counter() - started
    return {"pathway_events_per_s": len(df) / secs, "pathway_seconds": secs, "pathway_rows": len(out),
            "pathway_note": f"pathway {pw.__version__}, batch mode (one input batch), Python UDFs for "
                            "intervals and running sums"}
