"""The stateful fact operator: one call per bucket per micro-batch (applyInPandasWithState).

Input rows (built by `tefq.spark.engine`): `k` kind (0 SINCE, 1 UNTIL, 2 heartbeat, 3 flush),
`ts`, `o` (order of ties; a heartbeat's max event time), `f` (identity hash; a heartbeat's event
count), `n` (a heartbeat's bad-row count), `g0..` group term hashes and `t0..` group terms.
The bucket state is one pickled blob: base intervals (final up to the last reported tick),
pending events (after it), the group-term dictionary and the global event-time range.
Every bucket receives every partition's heartbeat, so all buckets agree on the event time reached
and report the same ticks without a second shuffle.
"""
from __future__ import annotations

import pickle
from typing import Iterator

import numpy as np
import pandas as pd

from tefq.spark.facts import (OPEN, Events, Intervals, apply_events, current_aggregates, durations_exact,
                              fsum_durations, tick_at_or_after, tick_at_or_before)
from tefq.spark.output import RECORD_SCHEMA, NumericRows, json_record, rows_record, terms_record
from tefq.spark.physical import CurrentAggregatePlan

HEARTBEAT, FLUSH = 2, 3
ORDER_SHIFT = 1 << 42  # order of ties = batch number * 2^42 + Spark's row id within the batch
OUTPUT_SCHEMA = RECORD_SCHEMA
STATE_SCHEMA = "blob binary"
MAX_WARNINGS = 20


class BucketState:
    def __init__(self, ngroups: int) -> None:
        self.base = Intervals.empty(ngroups)
        self.pending: list = []  # Events parts
        self.terms: dict[int, str] = {}
        self.gmin: int | None = None
        self.gmax: int | None = None
        self.last_tick: int | None = None
        self.batches = 0
        self.flushed = False


def _events(pdf: pd.DataFrame, ngroups: int, batch: int) -> Events:
    groups = pdf[[f"g{i}" for i in range(ngroups)]].to_numpy(dtype=np.int64).reshape(len(pdf), ngroups)
    return Events(pdf["k"].to_numpy(np.int64), pdf["ts"].to_numpy(np.int64),
                  batch * ORDER_SHIFT + pdf["o"].to_numpy(np.int64), pdf["f"].to_numpy(np.int64), groups,
                  pdf["e"].to_numpy(np.int64))


def make_operator(plan: CurrentAggregatePlan, t0: int, lateness_ms: int):
    ngroups = len(plan.group_vars)
    every = plan.every_ms

    def op(key, pdfs: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
        bucket = int(key[0])
        st: BucketState = pickle.loads(state.get[0]) if state.exists else BucketState(ngroups)
        st.batches += 1
        out: list[tuple[str, int, bytes]] = []
        metrics = {"duplicates": 0, "late_events": 0, "unmatched_until": 0, "facts_created": 0, "facts_closed": 0,
                   "rows_out": 0}
        parts = [p for p in pdfs if len(p)]
        pdf = pd.concat(parts, ignore_index=True) if parts else None
        flush = False
        if pdf is not None:
            kind = pdf["k"].to_numpy()
            hb = pdf[kind == HEARTBEAT]
            if len(hb):
                lo, hi = int(hb["ts"].min()), int(hb["o"].max())
                st.gmin = lo if st.gmin is None else min(st.gmin, lo)
                st.gmax = hi if st.gmax is None else max(st.gmax, hi)
                if bucket == 0:
                    metrics["events_in"] = int(hb["f"].sum())
                    metrics["bad_rows"] = int(hb["n"].sum())
            flush = bool((kind == FLUSH).any())
            evs = pdf[kind <= 1]
            if len(evs):
                for i in range(ngroups):
                    pairs = evs[[f"g{i}", f"t{i}"]].dropna().drop_duplicates(f"g{i}")
                    st.terms.update(zip(pairs[f"g{i}"].tolist(), pairs[f"t{i}"].tolist()))
                if st.last_tick is not None:
                    late = evs["ts"].to_numpy() <= st.last_tick
                    if late.any():
                        metrics["late_events"] = int(late.sum())
                        for ts in evs["ts"][late].head(MAX_WARNINGS).tolist():
                            out.append(("warn", int(ts), (f"late event at {ts} ms ignored for fact "
                                        f"{plan.fact}: ticks up to {st.last_tick} were already reported"
                                                          ).encode("utf-8")))
                        evs = evs[~late]
                if len(evs):
                    # A stream is a set: the same element twice at one ms counts once.
                    st.pending.append(_events(evs, ngroups, st.batches))
        if st.gmax is not None and not st.flushed:
            first = tick_at_or_after(st.gmin, t0, every)
            start = first if st.last_tick is None else st.last_tick + every
            upto = (tick_at_or_after(st.gmax, t0, every) if flush
                    else tick_at_or_before(st.gmax - lateness_ms - 1, t0, every))
            ticks = np.arange(start, upto + 1, every, dtype=np.int64) if upto >= start else np.zeros(0, np.int64)
            # A stream is a set: the same element twice at one ms counts once, even across batches.
            pend = None
            if st.pending:
                allp = Events.concat(st.pending)
                pend = allp.distinct()
                metrics["duplicates"] = len(allp) - len(pend)
                st.pending = [pend]
            if len(ticks):
                cur = apply_events(st.base, pend).intervals if pend is not None else st.base
                agg = current_aggregates(cur, ticks)
                seconds = None
                if any(a.op != "count" for a in plan.aggregates):
                    seconds = (agg.duration_ms / 1000.0 if durations_exact(cur, ticks)
                               else fsum_durations(cur, ticks, agg.group_codes))
                rows = _rows(plan, agg, seconds)
                metrics["rows_out"] = len(rows)
                if len(rows):
                    out.append(rows_record(rows))
                    used = np.unique(rows.groups)
                    out.append(terms_record({c: st.terms[c] for c in used.tolist() if c in st.terms}))
                if bucket == 0:
                    metrics["ticks"] = len(ticks)
                st.last_tick = int(ticks[-1])
                if pend is not None:
                    done = pend.ts <= st.last_tick
                    applied = apply_events(st.base, pend.take(np.nonzero(done)[0]))
                    st.base = applied.intervals
                    metrics["unmatched_until"] += applied.unmatched_until
                    rest = pend.take(np.nonzero(~done)[0])
                    st.pending = [rest] if len(rest) else []
                final = st.base.end <= st.last_tick
                real = final & (st.base.end > st.base.start)  # [t, t) (SINCE then UNTIL at one ms) is no fact
                metrics["facts_created"] += int(real.sum())
                metrics["facts_closed"] += int(real.sum())
                st.base = st.base.take(np.nonzero(~final)[0])
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
        metrics["state_bytes"] = 0
        blob = pickle.dumps(st, protocol=5)
        metrics["state_bytes"] = len(blob)
        metrics["open_facts"] = int((st.base.end == OPEN).sum())
        metrics["batch"] = st.batches
        state.update((blob,))
        out.append(json_record("metric", st.gmax if st.gmax is not None else 0, metrics))
        yield pd.DataFrame(out, columns=["kind", "tick", "payload"])

    return op


def _rows(plan: CurrentAggregatePlan, agg, seconds) -> NumericRows:
    """The reported rows as numbers: one per (group, tick) with a valid fact."""
    gi, ki = np.nonzero(agg.count > 0)
    counts = agg.count[gi, ki]
    secs = seconds[gi, ki] if seconds is not None else None
    values: dict[str, np.ndarray] = {}
    for a in plan.aggregates:
        values[a.alias] = counts if a.op == "count" else secs if a.op == "sum_duration" else secs / counts
    return NumericRows(agg.ticks[ki], agg.group_codes[gi], values)
