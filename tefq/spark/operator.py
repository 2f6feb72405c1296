"""The stateful fact operator: one call per bucket per micro-batch (applyInPandasWithState).

Input rows (built by `tefq.spark.engine`): `k` kind (0 SINCE, 1 UNTIL, 2 heartbeat, 3 flush,
5 terms), `ts`, `o` (order of ties; a heartbeat's max event time), `f` (identity hash; a heartbeat's
event count), `n` (a heartbeat's bad-row count), `g0..` group term hashes and `t0..` group terms
(set on terms rows only: the mapper sends each partition's distinct code -> term pairs once).
The bucket state is one pickled blob: the open facts (every closed one is final once reported),
pending events (after the last reported tick), the group-term dictionary and the event-time range.
Every bucket receives every partition's heartbeat, so all buckets agree on the event time reached
and report the same ticks without a second shuffle.
"""
from __future__ import annotations

import json
import os
import pickle
import time
from typing import Iterator

import numpy as np
import pandas as pd

from tefq.spark.facts import (OPEN, SINCE, UNTIL, Events, Intervals, apply_events, apply_sorted_events,
                              current_aggregates, durations_exact, fsum_durations, tick_at_or_after,
                              tick_at_or_before)
from tefq.spark.output import RECORD_SCHEMA, NumericRows, json_record, rows_record, terms_record
from tefq.spark.physical import CurrentAggregatePlan

HEARTBEAT, FLUSH, TERMS = 2, 3, 5
ORDER_SHIFT = 1 << 42  # order of ties = batch number * 2^42 + Spark's row id within the batch
OUTPUT_SCHEMA = RECORD_SCHEMA
STATE_SCHEMA = "blob binary"
MAX_WARNINGS = 20


def profile(where: str, **figures) -> None:
    """Worker-side timings for bench/ (TEFQ_SPARK_PROFILE=FILE appends one JSON line per call)."""
    path = os.environ.get("TEFQ_SPARK_PROFILE")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"where": where, "pid": os.getpid(), "at": time.time(), **figures}) + "\n")


class BucketState:
    def __init__(self, ngroups: int) -> None:
        self.base = Intervals.empty(ngroups)
        self.pending: list = []  # Events parts
        self.pending_sorted = False  # pending is one part, distinct and in apply order
        self.terms: dict[int, str] = {}
        self.gmin: int | None = None
        self.gmax: int | None = None
        self.last_tick: int | None = None
        self.batches = 0
        self.flushed = False


def _events(pdf: pd.DataFrame, rows: np.ndarray, ngroups: int, batch: int) -> Events:
    def col(name: str) -> np.ndarray:
        return pdf[name].to_numpy(np.int64)[rows]

    groups = np.stack([col(f"g{i}") for i in range(ngroups)], axis=1) if ngroups else np.zeros((len(rows), 0),
                                                                                                   np.int64)
    return Events(col("k"), col("ts"), batch * ORDER_SHIFT + col("o"), col("f"), groups, col("e"))


def batch_metrics() -> dict:
    """A bucket's metrics for one micro-batch, before anything happened (summed on the driver)."""
    return {"duplicates": 0, "late_events": 0, "unmatched_until": 0, "facts_created": 0, "facts_closed": 0,
            "rows_out": 0}


def batch_frame(pdfs: Iterator[pd.DataFrame]) -> pd.DataFrame | None:
    """A bucket's rows of one micro-batch as one frame (None when there are none)."""
    parts = [p for p in pdfs if len(p)]
    return pd.concat(parts, ignore_index=True, copy=False) if len(parts) > 1 else parts[0] if parts else None


def ingest(pdf: pd.DataFrame, st, bucket: int, ngroups: int, metrics: dict, out: list,
           late_note: str) -> tuple[bool, Events]:
    """One bucket's rows of a micro-batch into its state `st` (gmin, gmax, terms, last_tick, batches):
    heartbeats widen the event-time range, terms rows name group codes, SINCE/UNTIL rows become
    Events; late ones (at or before the last reported tick) are counted, warned about with
    `late_note` (formatted with the last tick) and left out. Returns (flush seen, events)."""
    kind = pdf["k"].to_numpy()
    hb = np.nonzero(kind == HEARTBEAT)[0]
    if len(hb):
        lo, hi = int(pdf["ts"].to_numpy()[hb].min()), int(pdf["o"].to_numpy()[hb].max())
        st.gmin = lo if st.gmin is None else min(st.gmin, lo)
        st.gmax = hi if st.gmax is None else max(st.gmax, hi)
        if bucket == 0:
            metrics["events_in"] = int(pdf["f"].to_numpy()[hb].sum())
            metrics["bad_rows"] = int(pdf["n"].to_numpy()[hb].sum())
    named = np.nonzero(kind == TERMS)[0]
    for i in range(ngroups):  # the mapper sends each partition's code -> term pairs once
        terms = pdf[f"t{i}"].to_numpy()[named]
        has = pd.notna(terms)
        st.terms.update(zip(pdf[f"g{i}"].to_numpy()[named][has].tolist(), terms[has].tolist()))
    ev = _events(pdf, np.nonzero((kind == SINCE) | (kind == UNTIL))[0], ngroups, st.batches)
    if len(ev) and st.last_tick is not None:
        late = ev.ts <= st.last_tick
        if late.any():
            metrics["late_events"] = int(late.sum())
            for ts in ev.ts[late][:MAX_WARNINGS].tolist():
                out.append(("warn", int(ts), f"late event at {ts} ms {late_note.format(st.last_tick)}".encode("utf-8")))
            ev = ev.take(np.nonzero(~late)[0])
    return bool((kind == FLUSH).any()), ev


def make_operator(plan: CurrentAggregatePlan, t0: int, lateness_ms: int):
    ngroups = len(plan.group_vars)
    every = plan.every_ms

    def op(key, pdfs: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
        bucket = int(key[0])
        clock = [time.perf_counter()]
        st: BucketState = pickle.loads(state.get[0]) if state.exists else BucketState(ngroups)
        st.batches += 1
        out: list[tuple[str, int, bytes]] = []
        metrics = batch_metrics()
        pdf = batch_frame(pdfs)
        clock.append(time.perf_counter())
        flush = False
        if pdf is not None:
            flush, ev = ingest(pdf, st, bucket, ngroups, metrics, out,
                               f"ignored for fact {plan.fact}: ticks up to {{}} were already reported")
            if len(ev):
                st.pending.append(ev)
                st.pending_sorted = False
        clock.append(time.perf_counter())
        if st.gmax is not None and not st.flushed:
            first = tick_at_or_after(st.gmin, t0, every)
            start = first if st.last_tick is None else st.last_tick + every
            upto = (tick_at_or_after(st.gmax, t0, every) if flush
                    else tick_at_or_before(st.gmax - lateness_ms - 1, t0, every))
            ticks = np.arange(start, upto + 1, every, dtype=np.int64) if upto >= start else np.zeros(0, np.int64)
            # A stream is a set: the same element twice at one ms counts once, even across batches.
            if len(st.pending) > 1 or (st.pending and not st.pending_sorted):
                allp = Events.concat(st.pending)
                pend = allp.sorted_distinct()  # sorted by (fid, ts, order), as apply wants
                metrics["duplicates"] = len(allp) - len(pend)
                st.pending, st.pending_sorted = [pend], True
            if len(ticks):
                st.last_tick = int(ticks[-1])
                # Rows at ticks <= last_tick depend only on events at or before it (events apply in
                # time order), so one application serves the report and the new base.
                cur, unmatched = st.base, 0
                if st.pending:
                    pend = st.pending[0]
                    done = pend.ts <= st.last_tick
                    if done.any():
                        applied = apply_sorted_events(st.base, pend.take(np.nonzero(done)[0]))
                        cur, unmatched = applied.intervals, applied.unmatched_until
                    rest = pend.take(np.nonzero(~done)[0])
                    st.pending = [rest] if len(rest) else []
                agg, rows = tick_rows(plan, cur, ticks)
                metrics["rows_out"] = len(rows)
                if len(rows):
                    out.append(rows_record(rows))
                    used = np.unique(agg.group_codes)
                    out.append(terms_record({c: st.terms[c] for c in used.tolist() if c in st.terms}))
                if bucket == 0:
                    metrics["ticks"] = len(ticks)
                metrics["unmatched_until"] += unmatched
                # Every close applied is at or before the last tick: only open facts stay in the state.
                final = cur.end <= st.last_tick
                real = final & (cur.end > cur.start)  # [t, t) (SINCE then UNTIL at one ms) is no fact
                metrics["facts_created"] += int(real.sum())
                metrics["facts_closed"] += int(real.sum())
                st.base = cur.take(np.nonzero(~final)[0])
            if flush:
                st.flushed = True
                if st.pending:  # nothing should remain after the last tick; apply for the metrics
                    applied = apply_events(st.base, Events.concat(st.pending).distinct())
                    st.base, st.pending = applied.intervals, []
                    metrics["unmatched_until"] += applied.unmatched_until
                nonempty = st.base.end > st.base.start
                metrics["facts_created"] += int(nonempty.sum())
                metrics["facts_closed"] += int((nonempty & (st.base.end != OPEN)).sum())
                st.base = Intervals.empty(ngroups)
        clock.append(time.perf_counter())
        metrics["state_bytes"] = 0
        blob = pickle.dumps(st, protocol=5)
        metrics["state_bytes"] = len(blob)
        metrics["open_facts"] = int((st.base.end == OPEN).sum())
        metrics["batch"] = st.batches
        state.update((blob,))
        out.append(json_record("metric", st.gmax if st.gmax is not None else 0, metrics))
        clock.append(time.perf_counter())
        profile("operator", bucket=bucket, batch=st.batches, rows_in=0 if pdf is None else len(pdf),
                rows_out=metrics["rows_out"], read_s=clock[1] - clock[0], ingest_s=clock[2] - clock[1],
                compute_s=clock[3] - clock[2], save_s=clock[4] - clock[3])
        yield pd.DataFrame(out, columns=["kind", "tick", "payload"])

    return op


def tick_rows(plan: CurrentAggregatePlan, facts: Intervals, ticks: np.ndarray):
    """The plan's aggregates over `facts` at `ticks`: (TickAggregates, NumericRows)."""
    agg = current_aggregates(facts, ticks)
    seconds = None
    if any(a.op != "count" for a in plan.aggregates):
        seconds = (agg.duration_ms / 1000.0 if durations_exact(facts, ticks)
                   else fsum_durations(facts, ticks, agg.group_codes))
    return agg, _rows(plan, agg, seconds)


def _rows(plan: CurrentAggregatePlan, agg, seconds) -> NumericRows:
    """The reported rows as numbers: one per (group, tick) with a valid fact."""
    gi, ki = np.nonzero(agg.count > 0)
    counts = agg.count[gi, ki]
    secs = seconds[gi, ki] if seconds is not None else None
    values: dict[str, np.ndarray] = {}
    for a in plan.aggregates:
        values[a.alias] = counts if a.op == "count" else secs if a.op == "sum_duration" else secs / counts
    return NumericRows(agg.ticks[ki], agg.group_codes[gi], values)
