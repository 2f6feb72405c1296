"""The stateful-operator lifecycle, written once: the one bucket loop that every per-shape operator
runs under (applyInPandasWithState, one call per bucket and micro-batch), over the rows the
mappers send (their kinds and heartbeats: `tefq.spark.protocol`).

The loop (`bucket_operator`) owns the plumbing: restore the bucket state (runtime/codec), read the rows,
take the event-time range from the heartbeats, drop late events (counted and warned about), choose
the ticks that became final, save the state and emit the batch's metrics. A `BucketLogic` holds
only the maths of one query shape: `ingest` the bucket's new rows, `advance` to the chosen ticks
(emitting their rows), `finish` at the end of input, `snapshot` the state's size figures. This
splits logic from state plumbing as bytewax's `StatefulBatchLogic`/`stateful_batch` and PySpark's
`StatefulProcessor` do.
"""
from __future__ import annotations

import json
import os
import time
import typing
from dataclasses import dataclass, field, fields
from typing import Callable, Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from tefq.plan.ticks import tick_array, tick_at_or_after, tick_at_or_before
from tefq.spark.kernels.general.coding import row_hash
from tefq.spark.output import RECORD_SCHEMA, WARNING, data_record, metric_record
from tefq.spark.protocol import EVENT_KINDS, FLUSH, Heartbeats, RowKind, ranked_keys, read_heartbeats, streams_of_keys
from tefq.spark.runtime.codec import CodecError, decode, encode
from tefq.errors import REFUSAL, TOO_MANY_TICKS, WorkerFailure
from tefq.vocabulary import RunSettings

MAX_WARNINGS = 20  # late-event warnings per bucket and micro-batch
OUTPUT_SCHEMA = RECORD_SCHEMA
STATE_SCHEMA = "blob binary"
OUTPUT_COLUMNS = ["kind", "tick", "payload"]
def too_many_ticks(max_ticks: int, every: int, first: int, last: int, query: str | None = None) -> RuntimeError:
    """Raised in a worker; `tefq.spark.runtime.progress.ours` turns it into the oracle's message naming the row
    (`query`: the query's name, where the plan runs several)."""
    fields = dict(max_ticks=max_ticks, every=every, first=first, last=last)
    return WorkerFailure(TOO_MANY_TICKS, fields if query is None else {**fields, "query": query}).error()


def profile(where: str, **figures) -> None:
    """Worker-side timings for bench/ (TEFQ_SPARK_PROFILE=FILE appends one JSON line per call)."""
    path = os.environ.get("TEFQ_SPARK_PROFILE")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"where": where, "pid": os.getpid(), "at": time.time(), **figures}) + "\n")


def batch_metrics() -> dict:
    """A bucket's metrics for one micro-batch, before anything happened (summed on the driver)."""
    return {"duplicates": 0, "late_events": 0, "unmatched_until": 0, "facts_created": 0, "facts_closed": 0,
            "rows_out": 0}


def batch_frame(pdfs: Iterator[pd.DataFrame]) -> pd.DataFrame | None:
    """A bucket's rows of one micro-batch as one frame (None when there are none)."""
    parts = [p for p in pdfs if len(p)]
    if len(parts) < 2:
        return parts[0] if parts else None
    # column by column: pd.concat tests every cell of an object column whose part is all null
    # (the term columns, null but on SINCE rows), ~1 s per million rows (issue 14 profile)
    return pd.DataFrame({c: np.concatenate([p[c].to_numpy() for p in parts]) for c in parts[0].columns}, copy=False)


def warm_up(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A Python worker's first task (runtime/session.warm_workers): loading this module is the work."""
    profile("warm_up")
    return batches


def row_frames(batches) -> Iterator:
    """Direct ingestion: the mapper's rows as the operator's frames, one per batch."""
    return (rb.to_pandas() for rb in batches)


def coded_frames(batches) -> Iterator:
    """Direct ingestion of a general or windowed plan: the mapper's rows as one frame whose term
    columns are categorical (Arrow dictionaries: each distinct term one Python string), so the
    operator codes each distinct term once (kernels/general/coding.code_categorical; the windowed
    engine's factorisation, tefq.spark.kernels.windowed.window_content), not each row's string."""
    batches = list(batches)
    table = pa.Table.from_batches(batches) if batches else None
    if table is not None and table.num_rows:
        for name in ("s", "p", "obj"):
            table = table.set_column(table.schema.get_field_index(name), name,
                                     pc.dictionary_encode(table.column(name).combine_chunks()))
        yield table.to_pandas()


@dataclass(frozen=True)
class StreamSettings(RunSettings):
    """The run's settings plus what the event time of spec §6.1 needs of its inputs (shipped in the
    operator's closure). `batches`: per input stream (its --stream index), the micro-batches its
    input takes (a bounded input: it has ended after them) or None (a live input: idle after
    `idle_ms` of wall-clock time without a delivery; 0: never idle). `rank_starts`: the first file
    rank of each stream (`protocol.TieOrder`), to count late rows per stream. `stream_iris`: per
    input stream, the IRI `--stream IRI=PATH` bound it to (None: unnamed), for windowed
    `FROM STREAM <IRI>`."""

    batches: tuple[int | None, ...] = ()
    rank_starts: tuple[int, ...] = ()
    ranked: bool = False  # the files were ranked (`ranks.file_ranks`): ties go by (t, stream order)
    stream_iris: tuple[str | None, ...] = ()

    def ended(self, batches: int) -> bool:
        """Every input is bounded and was read to its end in `batches` micro-batches: the end of
        input, as a flush row would say it (the engine then runs no extra micro-batch for one)."""
        return bool(self.batches) and None not in self.batches and batches >= max(self.batches)

    @staticmethod
    def of(settings: RunSettings, **inputs) -> "StreamSettings":
        """`settings` with what the run's inputs add (batches, rank_starts, ranked, stream_iris)."""
        return StreamSettings(**{f.name: getattr(settings, f.name) for f in fields(RunSettings)}, **inputs)


class StreamClock:
    """Per input stream, kept in the bucket state: the largest t read (`latest`) and the wall
    time of its last delivery (`seen_at`, for idleness), and when the bucket first ran."""

    latest: dict[int, int]
    seen_at: dict[int, float]
    started: float

    def __init__(self, now: float) -> None:
        self.latest: dict[int, int] = {}
        self.seen_at: dict[int, float] = {}
        self.started = now

    def see(self, latest: dict[int, int], now: float) -> None:
        for s, t in latest.items():
            self.latest[s] = max(self.latest.get(s, t), t)
            self.seen_at[s] = now

    def active(self, settings: RunSettings, batches: int, now: float) -> list[int]:
        """The streams that hold the event time back: not ended (a bounded input read to its
        end), not idle (a live input silent for the idle timeout; one that never delivered counts
        from the bucket's start). Without StreamSettings: the streams seen, never ended nor idle."""
        if not isinstance(settings, StreamSettings) or not settings.batches:
            return list(self.latest)
        out = []
        for s, n in enumerate(settings.batches):
            if n is not None:
                if batches < n:
                    out.append(s)
            elif not settings.idle_ms or (now - self.seen_at.get(s, self.started)) * 1000 <= settings.idle_ms:
                out.append(s)
        return out

    def event_time(self, settings: RunSettings, batches: int, now: float) -> int | None:
        """Spec §6.1: the minimum over the active streams of their latest t (None while one of
        them has read nothing); the maximum over every stream once none is active."""
        active = self.active(settings, batches, now)
        if not active:
            return max(self.latest.values()) if self.latest else None
        if any(s not in self.latest for s in active):
            return None
        return min(self.latest[s] for s in active)


class UnnamedElements:
    """Elements no clause matches (rows of kind OTHER: their time and element hash `e` only; on the
    windowed plan every element's), kept until their tick is reported so that a repeat at the same
    ms counts as a duplicate (a stream is a set, spec §1). A copy arriving after that tick is late
    (`drop_late`), never a duplicate, so nothing older is needed: the state is bounded by the
    elements after the last tick."""

    ts: np.ndarray
    e: np.ndarray

    def __init__(self) -> None:
        self.ts = np.zeros(0, np.int64)
        self.e = np.zeros(0, np.int64)

    def ingest(self, ts: np.ndarray, e: np.ndarray) -> int:
        """Take new elements; returns how many repeat one already held or one another."""
        if not len(ts):
            return 0
        ts, e = np.concatenate([self.ts, ts]).astype(np.int64), np.concatenate([self.e, e]).astype(np.int64)
        # one int64 per (t, hash) pair, sorted once: 5x faster than a lexsort of the two (2M pairs:
        # 0.1 against 0.5 s); two pairs meet on it as rarely as two elements on their hash
        key = e ^ row_hash(ts.reshape(-1, 1))
        order = np.argsort(key)
        key = key[order]
        first = np.ones(len(key), bool)
        first[1:] = key[1:] != key[:-1]
        self.ts, self.e = ts[order[first]], e[order[first]]
        return int(len(first) - first.sum())

    def forget(self, upto: int) -> None:
        """Drop the elements at or before the reported tick `upto`."""
        keep = self.ts > upto
        self.ts, self.e = self.ts[keep], self.e[keep]


def ingest_unnamed(st: "BucketState", pdf: pd.DataFrame, kinds: np.ndarray, batch: "Batch") -> None:
    """The OTHER rows of a bucket's micro-batch (late ones already dropped): count their repeats."""
    at = kinds == RowKind.OTHER
    if at.any():
        batch.metrics["duplicates"] += st.unnamed.ingest(pdf["ts"].to_numpy(np.int64)[at],
                                                         pdf["e"].to_numpy(np.int64)[at])


class BucketState:
    """What every bucket keeps between micro-batches; a logic's state subclasses it. Its fields are
    annotated: the annotations are the schema it is saved and restored by (runtime/codec)."""

    terms: dict[int, str]
    gmin: int | None
    gmax: int | None
    clock: StreamClock
    last_tick: int | None
    batches: int
    flushed: bool
    unnamed: UnnamedElements

    def __init__(self) -> None:
        self.terms: dict[int, str] = {}  # group code -> term
        self.gmin: int | None = None  # event-time range seen (all streams)
        self.gmax: int | None = None
        self.clock = StreamClock(time.time())  # per stream: the event time of spec §6.1
        self.last_tick: int | None = None  # the last reported tick
        self.batches = 0
        self.flushed = False
        self.unnamed = UnnamedElements()  # elements no clause matches, until their tick (hashes only)


@dataclass
class Batch:
    """One call of the operator: the bucket, whether input ended, what is emitted."""

    bucket: int
    settings: RunSettings = RunSettings()  # the run's (StreamSettings: how its streams end or idle)
    flush: bool = False
    event_time: int | None = None  # the run's event time after this batch (spec §6.1)
    held: bool = False  # an active stream has read nothing yet: no tick is final
    late_streams: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # per late row: its stream
    metrics: dict = field(default_factory=batch_metrics)
    out: list = field(default_factory=list)  # (kind, tick, payload) records

    def warn(self, tick: int, text: str) -> None:
        self.out.append(data_record(WARNING, tick, text))


class BucketLogic:
    """The maths of one query shape. Subclasses set `every_ms` and `late_note` and override the
    hooks; the loop calls them in this order: `see_time`, `ingest`, `report` (by default: `advance`
    to the final ticks, `finish` at the end of input), `snapshot`."""

    every_ms: int
    late_note = "ignored: ticks up to {last} were already reported"
    data_kinds: tuple[RowKind, ...] = EVENT_KINDS  # the rows that are events (late ones are dropped)

    def new_state(self) -> BucketState:
        return BucketState()

    def see_time(self, st: BucketState, hb: Heartbeats | None, pdf: pd.DataFrame, kinds: np.ndarray,
                 batch: Batch) -> None:
        """Widen the event-time range from the batch's heartbeats `hb` (every bucket receives each
        partition's; None: there were none)."""
        if hb is None:
            return
        if hb.lo is not None:
            widen(st, hb.lo, hb.hi)
        if batch.bucket == 0:  # counted once, not once per bucket
            batch.metrics["events_in"] = hb.elements
            batch.metrics["bad_rows"] = hb.bad

    def ingest(self, st: BucketState, pdf: pd.DataFrame, kinds: np.ndarray, batch: Batch) -> None:
        """Take the batch's rows (late events already dropped) into the state."""

    def advance(self, st: BucketState, ticks: np.ndarray, batch: Batch) -> None:
        """Report the rows at `ticks` (which became final) and keep only what later ticks need."""

    def finish(self, st: BucketState, batch: Batch) -> None:
        """End of input, after the last ticks were reported."""

    def snapshot(self, st: BucketState, metrics: dict) -> None:
        """Size figures of the saved state (e.g. open facts)."""

    def report(self, st: BucketState, batch: Batch) -> None:
        """Choose the ticks that became final (the tick grid of spec §4.1), `advance` to them, and
        `finish` at the end of input. The windowed operator reports at window closes instead."""
        if st.gmax is None or st.flushed or (batch.held and not batch.flush):
            return
        ticks = final_ticks(st, batch.flush, self.every_ms, batch.settings, batch.event_time)
        if len(ticks):
            self.advance(st, ticks, batch)
            st.last_tick = int(ticks[-1])
            st.unnamed.forget(st.last_tick)
            if batch.bucket == 0:  # every bucket reports the same ticks: counted once
                batch.metrics["ticks"] = len(ticks)
        if batch.flush:
            st.flushed = True
            self.finish(st, batch)


def widen(st: BucketState, lo: int, hi: int) -> None:
    st.gmin = lo if st.gmin is None else min(st.gmin, lo)
    st.gmax = hi if st.gmax is None else max(st.gmax, hi)


def drop_late(st: BucketState, pdf: pd.DataFrame, kinds: np.ndarray, logic: BucketLogic,
              batch: Batch) -> tuple[pd.DataFrame, np.ndarray]:
    """Events at or before the last reported tick can no longer change a report: count them, warn
    about the first MAX_WARNINGS and leave them out."""
    if st.last_tick is None:
        return pdf, kinds
    late = np.isin(kinds, logic.data_kinds) & (pdf["ts"].to_numpy() <= st.last_tick)
    if not late.any():
        return pdf, kinds
    batch.metrics["late_events"] = int(late.sum())
    ranks = batch.settings if isinstance(batch.settings, StreamSettings) else StreamSettings()
    batch.late_streams = streams_of_keys(pdf["o"].to_numpy()[late], ranks.rank_starts, ranks.ranked)
    count_late_streams(batch, batch.late_streams, 1)
    note = logic.late_note.format(last=st.last_tick)
    for ts in pdf["ts"].to_numpy()[late][:MAX_WARNINGS].tolist():
        batch.warn(ts, f"late event at {ts} ms {note}")
    keep = ~late
    return pdf[keep], kinds[keep]


def in_stream_order(pdf: pd.DataFrame, kinds: np.ndarray, logic: BucketLogic, batch: int) -> pd.DataFrame:
    """The data rows' tie keys made batch-free for ranked files (`protocol.ranked_keys`), so that
    ties apply in (t, stream order) across micro-batches as on the oracle (spec §6.1)."""
    data = np.isin(kinds, logic.data_kinds)
    if not data.any():
        return pdf
    o = pdf["o"].to_numpy(np.int64).copy()
    o[data] = ranked_keys(batch, o[data])
    # a shallow copy with `o` replaced: `assign` copied and consolidated every column (1.6 of a
    # 10M UC1 run's 15.6 worker CPU seconds)
    out = pdf.copy(deep=False)
    out["o"] = o
    return out


def count_late_streams(batch: Batch, streams: np.ndarray, sign: int) -> None:
    """Add (sign 1) or take back (-1) late rows of input `streams` in the batch's per-stream
    counts (`late_stream.<index>`, summed on the driver into late_events_by_stream)."""
    for s, n in zip(*np.unique(streams, return_counts=True)):
        key = f"late_stream.{int(s)}"
        batch.metrics[key] = batch.metrics.get(key, 0) + sign * int(n)


def uncount_late_copies(batch: Batch, copies: np.ndarray) -> None:
    """Take late rows that are copies (`copies`: per late row of this call, in row order) out of
    this bucket's late count, its per-stream counts and its warnings: the bucket that got the
    original counts and warns (`drop_late` counted every late row and warned about the first
    MAX_WARNINGS, in row order)."""
    if not copies.any():
        return
    batch.metrics["late_events"] -= int(copies.sum())
    count_late_streams(batch, batch.late_streams[copies], -1)
    warned = iter(copies[:MAX_WARNINGS].tolist())
    batch.out = [r for r in batch.out if r[0] != WARNING or not next(warned, False)]


def final_ticks(st: BucketState, flush: bool, every: int, settings: RunSettings,
                event_time: int | None = None) -> np.ndarray:
    """The ticks not yet reported that no later event can change: up to the event time reached
    (`event_time`, spec §6.1; default: the latest t of all streams) minus the allowed lateness, or
    every tick up to the last event at the end of input. More than `max_ticks` ticks since the
    first event (a stray timestamp at 0 or near 2^63) raise before any array is made."""
    t0, lateness_ms, max_ticks = settings.t0, settings.lateness_ms, settings.max_ticks
    first = tick_at_or_after(st.gmin, t0, every)
    start = first if st.last_tick is None else st.last_tick + every
    now = st.gmax if event_time is None else event_time
    upto = (tick_at_or_after(st.gmax, t0, every) if flush
            else tick_at_or_before(now - lateness_ms - 1, t0, every))
    if max_ticks > 0 and (upto - first) // every + 1 > max_ticks:
        raise too_many_ticks(max_ticks, every, st.gmin, st.gmax)
    return tick_array(start, upto, every)


def step(logic: BucketLogic, st: BucketState, pdf: pd.DataFrame | None, batch: Batch) -> None:
    """One micro-batch of one bucket on its restored state. The input ends with a flush row or
    with the last micro-batch of bounded inputs (`StreamSettings.ended`)."""
    batch.flush = isinstance(batch.settings, StreamSettings) and batch.settings.ended(st.batches)
    if pdf is not None:
        kinds = pdf["k"].to_numpy()
        batch.flush = batch.flush or bool((kinds == FLUSH).any())
        hb = read_heartbeats(pdf, kinds)
        logic.see_time(st, hb, pdf, kinds, batch)
        if hb is not None:
            st.clock.see(hb.latest, time.time())
        pdf, kinds = drop_late(st, pdf, kinds, logic, batch)
        if isinstance(batch.settings, StreamSettings) and batch.settings.ranked:
            pdf = in_stream_order(pdf, kinds, logic, st.batches)
        logic.ingest(st, pdf, kinds, batch)
    batch.event_time = st.clock.event_time(batch.settings, st.batches, time.time())
    batch.held = batch.event_time is None
    logic.report(st, batch)
    if batch.flush:  # the driver counts the buckets that ended (engine.read_to_end)
        batch.metrics["ended"] = 1


def restored(blob: bytes, state_class: type[BucketState]) -> BucketState:
    """A bucket's state as `bucket_operator` saved it; anything else stops the run with one
    sentence (a worker refusal: exit 2), never decoded as code (runtime/codec)."""
    try:
        return decode(blob, state_class, "the operator state in this checkpoint")
    except CodecError as e:
        raise WorkerFailure(REFUSAL, {"message": f"{e.message}: use a fresh --checkpoint"}).error() from None


def bucket_operator(logic: BucketLogic, settings: RunSettings = RunSettings(), name: str = "operator") -> Callable:
    """The applyInPandasWithState function running `logic`: state restore/save, metrics, profile.
    `settings`: the run's (shipped in the closure, handed to each call's `Batch`)."""
    state_class = typing.get_type_hints(type(logic).new_state)["return"]  # the schema of its saved state

    def op(key, pdfs: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
        clock = [time.perf_counter()]
        batch = Batch(int(key[0]), settings)
        st = restored(state.get[0], state_class) if state.exists else logic.new_state()
        st.batches += 1
        pdf = batch_frame(pdfs)
        clock.append(time.perf_counter())
        step(logic, st, pdf, batch)
        clock.append(time.perf_counter())
        blob = encode(st, state_class)
        batch.metrics["state_bytes"] = len(blob)
        logic.snapshot(st, batch.metrics)
        batch.metrics["batch"] = st.batches
        state.update((blob,))
        batch.out.append(metric_record(st.gmax if st.gmax is not None else 0, batch.metrics))
        clock.append(time.perf_counter())
        profile(name, bucket=batch.bucket, batch=st.batches, rows_in=0 if pdf is None else len(pdf),
                rows_out=batch.metrics["rows_out"], read_s=clock[1] - clock[0], compute_s=clock[2] - clock[1],
                save_s=clock[3] - clock[2])
        yield pd.DataFrame(batch.out, columns=OUTPUT_COLUMNS)

    return op
