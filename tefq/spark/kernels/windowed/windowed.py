"""Incremental spec §8 windowed evaluation: the oracle's `run()` (tefq.oracle.windowed.runner) cut
into steps, for an engine that sees its input in micro-batches (the Spark windowed operator).

`WindowedState` (picklable: Spark keeps it in its state store) holds the elements that windows
still open may need, every REGISTER STREAM's fed-back triples, and how far the report instants
went. `IncrementalRun.add` appends a batch; `advance(upto)` evaluates, in (instant, document order),
every window that closed at or before `upto` (all remaining ones at the end of input) — the same
agenda, content and R2S as the oracle's loop, so the rows are the oracle's rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import heapq
from bisect import bisect_left

import pandas as pd

from tefq.oracle.windowed.query import from_windowed
from tefq.oracle.windowed.runner import Stream, names_stream, r2s_rows, result_columns
from tefq.oracle.windowed.runner import canonical_cell as canonical
from tefq.oracle.windowed.windows import close_instants
from tefq.plan.logical import Document, WindowedQuery
from tefq.spark.kernels.windowed.sparql import VectorEvaluator

COLUMNS = ["ts", "s", "p", "o"]


@dataclass
class RunProgress:
    """How far an incremental run went, whatever holds its elements: the event-time range seen,
    the last report instant, its counters and each query's last relation."""

    first: int | None = None
    last: int | None = None
    done: int | None = None  # every report instant <= done has been evaluated
    ticks: int = 0
    feedback_triples: int = 0
    events_in: int = 0
    late_events: int = 0
    flushed: bool = False
    previous: dict = field(default_factory=dict)  # query index -> last relation (RSP-QL ISTREAM/DSTREAM)

    def see(self, lo: int | None, hi: int | None, count: int) -> None:
        """A micro-batch's event-time range and element count (irrelevant predicates included)."""
        self.events_in += count
        if lo is not None:
            self.first = lo if self.first is None else min(self.first, lo)
        if hi is not None:
            self.last = hi if self.last is None else max(self.last, hi)


@dataclass
class WindowedState(RunProgress):
    """What the operator keeps between micro-batches. Streams are the oracle's `Stream`s:
    time-ordered element lists, searched by bisection (cheaper than a DataFrame per window)."""

    external: Stream = field(default_factory=Stream)
    feeds: dict[str, Stream] = field(default_factory=dict)


@dataclass(frozen=True)
class Report:
    query: int  # index among the document's windowed queries
    tick: int
    rows: list  # cells tuples (canonical terms)


class IncrementalRun:
    """The document's windowed queries, evaluated window by window as event time advances."""

    def __init__(self, doc: Document, t0: int = 0, small: int = 0) -> None:
        self.queries = [from_windowed(q) for q in doc.queries if isinstance(q, WindowedQuery)]
        self.spans = [q.span for q in doc.queries if isinstance(q, WindowedQuery)]
        self.t0 = t0
        self.evaluators = [VectorEvaluator(q.sparql, doc.source, line=getattr(s, "line", 0), small=small)
                           for q, s in zip(self.queries, self.spans)]
        self.columns = [result_columns(q) for q in self.queries]
        self.max_range = max((w.range_ms for q in self.queries for w in q.windows), default=0)

    def new_state(self) -> WindowedState:
        return WindowedState()

    @property
    def predicates(self) -> frozenset[str] | None:
        """Every predicate a query can match (None: any), for filtering the input early. The fed
        triples are not filtered: they are few and each query filters its own window."""
        out: set[str] = set()
        for ev in self.evaluators:
            if ev.predicates is None:
                return None
            out |= ev.predicates
        return frozenset(out)

    def add(self, st: WindowedState, batch: pd.DataFrame, lo: int | None, hi: int | None, count: int) -> None:
        """A micro-batch: the relevant elements (ts >= t0) plus the batch's event-time range and
        element count over *all* elements (irrelevant predicates too: they advance time as in the oracle)."""
        st.see(lo, hi, count)
        if len(batch):
            new = sorted(batch[COLUMNS].itertuples(index=False, name=None), key=lambda e: e[0])
            if st.done is not None:
                st.late_events += sum(1 for e in new if e[0] < st.done)  # kept for windows still open
            ext = st.external
            ext.external = list(heapq.merge(ext.external, new, key=lambda e: e[0]))  # stable: old first
            ext.ext_ts = [e[0] for e in ext.external]

    def advance(self, st: WindowedState, upto: int | None) -> list[Report]:
        """Evaluate the windows closing at or before `upto` (None: the end of input, all of them)."""
        if st.first is None or st.last is None or st.flushed:
            return []
        agenda: list[tuple[int, int]] = []
        for i, q in enumerate(self.queries):
            instants: set[int] = set()
            for w in q.windows:
                instants.update(c for c in close_instants(st.first, st.last, w.range_ms, w.step_ms, self.t0)
                                if c > self.t0 and (st.done is None or c > st.done) and (upto is None or c <= upto))
            agenda.extend((c, i) for c in instants)
        agenda.sort()
        reports = []
        for c, i in agenda:
            q, ev = self.queries[i], self.evaluators[i]
            content: list = []
            for w in q.windows:
                content.extend(self._source(st, w.iri).between(max(c - w.range_ms, self.t0), c, False))
            if len(q.windows) > 1:
                content.sort(key=lambda e: e[0])
            st.ticks += 1
            ans = ev.evaluate(content)
            cells_list = ans.triples if ans.triples or q.form == "construct" else ans.rows
            cells_list, st.previous[i] = r2s_rows(cells_list, st.previous.get(i), q.r2s)
            if q.registers_stream and q.form == "construct" and cells_list:
                fed = list(dict.fromkeys(cells_list))  # a stream is a set: one element per triple
                st.feedback_triples += len(fed)
                feed = st.feeds.setdefault(q.name, Stream())
                feed.fed.extend((c, s, p, o) for s, p, o in fed)
                feed.fed_ts.extend([c] * len(fed))
            rows = [tuple(canonical(x) for x in r) for r in cells_list]
            if rows:
                reports.append(Report(i, c, rows))
        if upto is None:
            st.flushed = True
        elif st.done is None or upto > st.done:
            st.done = upto
        if agenda:
            last_c = agenda[-1][0]
            st.done = last_c if st.done is None else max(st.done, last_c)
        self._prune(st)
        return reports

    def _source(self, st: WindowedState, iri: str | None) -> Stream:
        for q in self.queries:
            if q.registers_stream and names_stream(iri, q.name):
                return st.feeds.setdefault(q.name, Stream())
        return st.external

    def _prune(self, st: WindowedState) -> None:
        """Drop what no window closing after `done` can read."""
        if st.done is None:
            return
        keep_from = st.done - self.max_range
        for s in [st.external, *st.feeds.values()]:
            a, b = bisect_left(s.ext_ts, keep_from), bisect_left(s.fed_ts, keep_from)
            s.external, s.ext_ts, s.fed, s.fed_ts = s.external[a:], s.ext_ts[a:], s.fed[b:], s.fed_ts[b:]


__all__ = ["IncrementalRun", "WindowedState", "RunProgress", "Report"]
