"""`IncrementalRun`'s contract (tefq.spark.kernels.windowed.windowed: `add` a micro-batch, `advance` to an event
time, a picklable state) with the due windows evaluated in rounds and multi-window batches
(tefq.spark.kernels.windowed.window_batches) instead of one at a time: the Spark windowed operator's engine.
Same agenda, content, R2S, feedback, counters and pruning as `IncrementalRun.advance`.

Its state (`FrameState`) keeps the elements as tables (ts int64 + three term columns, sorted by
ts, stable), not tuple lists: a micro-batch is appended by one concat and a stable sort, the
windows read it column-wise, and pruning is one binary search. Only the elements of windows not
yet closed stay (ts >= done - max RANGE), plus the fed-back triples in that span. Each query's
join-order memory (`JoinOrders`: the batch before's cardinalities, γ, the next strategy) lives
in the state too, so backward AQP works across micro-batches wherever the operator runs.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from tefq.oracle.windowed.runner import canonical_cell
from tefq.oracle.windowed.secret import DEFAULT
from tefq.spark.kernels.windowed.join_order import JoinOrders
from tefq.spark.kernels.windowed.multiwindow import MultiWindowEvaluator
from tefq.spark.kernels.windowed.window_batches import DEFAULT_BATCH_ROWS, SMALL_WINDOW, Source, WindowBatches, element_table
from tefq.spark.kernels.windowed.window_content import COLUMNS
from tefq.spark.kernels.windowed.windowed import IncrementalRun, Report, RunProgress


Owned = Callable[[np.ndarray], np.ndarray]  # window closes -> whether this run evaluates each


@dataclass
class FrameState(RunProgress):
    """What the operator keeps between micro-batches (saved in Spark's state store by runtime/codec)."""

    external: pd.DataFrame = field(default_factory=lambda: element_table([]))  # the unnamed inputs'
    named: dict[str, pd.DataFrame] = field(default_factory=dict)  # `--stream IRI=PATH` inputs, by IRI
    feeds: dict[str, pd.DataFrame] = field(default_factory=dict)
    orders: dict[int, JoinOrders] = field(default_factory=dict)  # query index -> its join-order memory


def due_closes(first: int, last: int, range_ms: int, step_ms: int, t0: int, done: int | None,
               upto: int | None) -> np.ndarray:
    """The report instants (spec §8 window closes) of windows that can hold data in [first, last],
    after `done` and at or before `upto` (None: no bound) — `close_instants` filtered, without
    enumerating the closes already reported."""
    k_lo = max(0, (first - t0 - range_ms) // step_ms + 1)
    if done is not None:
        k_lo = max(k_lo, (done - t0 - range_ms) // step_ms + 1)  # close > done
    k_hi = (last - t0) // step_ms
    closes = t0 + np.arange(k_lo, k_hi + 1, dtype=np.int64) * step_ms + range_ms
    keep = closes > t0
    if done is not None:
        keep &= closes > done
    if upto is not None:
        keep &= closes <= upto
    return closes[keep]


def appended(table: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """`new` merged into `table` by ts, stably (the older elements first within a millisecond).
    Term columns are kept categorical, their categories united: the table is saved in Spark's state
    every micro-batch, and a 10 s window at 50,000 elements/s weighs 16 MB as strings, 2.9 MB as
    codes (bench/live_windowed.py: the state's round trip through the JVM was most of a micro-batch)."""
    if not len(new):
        return table
    if not len(table):
        return coded(element_table(new[COLUMNS]))
    both = {c: concatenated(table[c], new[c]) for c in COLUMNS[1:]}
    ts = np.concatenate([table["ts"].to_numpy(np.int64), new["ts"].to_numpy(np.int64)])
    return element_table(pd.DataFrame({"ts": ts, **both}, copy=False))


def coded(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with categorical term columns."""
    return table.assign(**{c: categorical(table[c]) for c in COLUMNS[1:]})


def concatenated(a: pd.Series, b: pd.Series) -> pd.Series:
    """Two term columns end to end, as one categorical column (one category list)."""
    return pd.Series(union_categoricals([categorical(a), categorical(b)], ignore_order=True), copy=False)


def categorical(column: pd.Series) -> pd.Series:
    return column if isinstance(column.dtype, pd.CategoricalDtype) else column.astype("category")


def pruned(table: pd.DataFrame, keep_from: int) -> pd.DataFrame:
    """The elements at or after `keep_from` (categories no element holds any more dropped: the
    state is saved every micro-batch)."""
    start = int(np.searchsorted(table["ts"].to_numpy(np.int64), keep_from, "left"))
    if start == 0:
        return table
    kept = table.iloc[start:].reset_index(drop=True)
    for c in COLUMNS[1:]:
        if isinstance(kept[c].dtype, pd.CategoricalDtype):
            kept[c] = kept[c].cat.remove_unused_categories()
    return kept


class IncrementalBatchedRun(IncrementalRun):
    """The document's windowed queries, evaluated in batches of windows as event time advances.
    `join_order`: static | adaptive (Strider's, tefq.spark.kernels.windowed.join_order); `interval_s`: the
    trigger interval the decision maker's γ is measured against (default: each query's STEP);
    `small`: a lone due window with fewer relevant elements goes to rdflib (window_batches)."""

    def __init__(self, doc, t0: int = 0, small: int = SMALL_WINDOW, join_order: str = "adaptive",
                 batch_rows: int = DEFAULT_BATCH_ROWS, interval_s: float | None = None,
                 background: tuple[tuple[str, str, str], ...] = ()) -> None:
        super().__init__(doc, t0, small)
        self.join_order = join_order
        self.intervals = [interval_s or q.step_ms / 1000 for q in self.queries]
        evaluators = [MultiWindowEvaluator(q.sparql, doc.source, background, line=getattr(s, "line", 0),
                                           join_order=join_order, interval_s=dt)
                      for q, s, dt in zip(self.queries, self.spans, self.intervals)]
        self.batches = WindowBatches(self.queries, evaluators, t0, DEFAULT, batch_rows, doc.source, small)

    def new_state(self) -> FrameState:
        return FrameState()

    def add(self, st: FrameState, batch: pd.DataFrame, lo: int | None, hi: int | None, count: int,
            iris: np.ndarray | None = None) -> np.ndarray:
        """A micro-batch: the relevant elements (ts >= t0) plus the batch's event-time range and
        element count over *all* elements (irrelevant predicates too: they advance time); `iris`:
        per element the IRI its input is bound to (None: unnamed; no array: all unnamed). Returns,
        per element of `batch`, whether it is late (older than the last report instant: counted,
        and kept, since windows still open may need it)."""
        st.see(lo, hi, count)
        late = np.zeros(len(batch), bool)
        if len(batch):
            if st.done is not None:
                late = batch["ts"].to_numpy(np.int64) < st.done
                st.late_events += int(late.sum())
            if iris is None:
                st.external = appended(st.external, element_table(batch))
            else:
                unnamed = pd.isna(iris)
                st.external = appended(st.external, element_table(batch[unnamed]))
                for iri in pd.unique(iris[~unnamed]):
                    st.named[iri] = appended(st.named.get(iri, element_table([])), element_table(batch[iris == iri]))
        return late

    def due(self, st: FrameState, upto: int | None, own: Owned | None = None) -> list[np.ndarray]:
        """Each query's windows closing after `done` and at or before `upto` (None: all); `own`:
        only the closes it keeps (a run split by windows, tefq.spark.kernels.windowed.partitioning.WindowSlabs)."""
        out = []
        for q in self.queries:
            closes = [due_closes(st.first, st.last, w.range_ms, w.step_ms, self.t0, st.done, upto) for w in q.windows]
            mine = np.unique(np.concatenate(closes)) if closes else np.zeros(0, np.int64)
            out.append(mine if own is None else mine[own(mine)])
        return out

    def advance(self, st: FrameState, upto: int | None) -> list[Report]:
        """Evaluate the windows closing at or before `upto` (None: the end of input, all of them)."""
        return [Report(r.query, r.tick, [tuple(canonical_cell(x) for x in row) for row in r.rows])
                for r in self.evaluate_due(st, upto)]

    def evaluate_due(self, st: FrameState, upto: int | None, own: Owned | None = None) -> list[Report]:
        """`advance`, its rows' cells as SPARQL gave them (not yet canonical: a caller that
        dictionary-encodes them canonicalises each distinct cell once, tefq.spark.windowed_output).
        `own`: the windows this run evaluates, by their closes (`due`); the others are another's."""
        if st.first is None or st.last is None or st.flushed:
            return []
        instants = self.due(st, upto, own)
        self.attach(st)
        reports = []
        for c, i, ans in self.batches.due(instants):
            st.ticks += 1
            if ans is None:  # an empty window under non-empty reporting
                continue
            rows, st.previous[i], fed = self.batches.r2s(c, i, ans, st.previous.get(i))
            st.feedback_triples += len(fed)
            if rows:
                reports.append(Report(i, c, rows))
        st.feeds = {name: s.current() for name, s in self.batches.feeds.items()}
        last = max((int(ins[-1]) for ins in instants if len(ins)), default=None)
        self.close(st, upto, last)
        return reports

    def attach(self, st: FrameState) -> None:
        """Point the batches at the state's streams and each evaluator at its join-order memory."""
        self.batches.streams = {None: Source(st.external),  # FROM STREAM <IRI>: the unnamed inputs and IRI's
                                **{iri: Source(appended(st.external, t)) for iri, t in st.named.items()}}
        self.batches.feeds = {q.name: Source(st.feeds.get(q.name, element_table([])))
                              for q in self.queries if q.registers_stream}
        for i, ev in enumerate(self.batches.evaluators):
            ev.orders = st.orders.setdefault(i, JoinOrders(self.join_order, self.intervals[i]))

    def join_orders(self, st: FrameState) -> list[dict]:
        """The orders chosen since the last call (per batch and BGP), taken out of the state."""
        out = []
        for i, orders in st.orders.items():
            out.extend({"query": self.queries[i].name, **r.to_json()} for r in orders.records)
            orders.records = []
        return out

    def close(self, st: FrameState, upto: int | None, last: int | None) -> None:
        """Record how far the report instants went, and drop what no later window can read."""
        if upto is None:
            st.flushed = True
        elif st.done is None or upto > st.done:
            st.done = upto
        if last is not None:
            st.done = last if st.done is None else max(st.done, last)
        if st.done is None:
            return
        keep_from = st.done - self.max_range
        st.external = pruned(st.external, keep_from)
        st.named = {iri: pruned(t, keep_from) for iri, t in st.named.items()}
        st.feeds = {name: pruned(t, keep_from) for name, t in st.feeds.items()}


__all__ = ["IncrementalBatchedRun", "FrameState", "due_closes"]
