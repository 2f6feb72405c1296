"""`IncrementalRun`'s contract (tefq.relational.windowed: the Spark windowed operator's steps over
micro-batches and a picklable `WindowedState`) with the due windows evaluated in rounds and
multi-window batches (tefq.relational.window_batches) instead of one at a time: the drop-in for
phase 2 of issue 23. Same agenda, content, R2S, feedback, counters and pruning as `advance`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from tefq.oracle.windowed.runner import Stream, canonical_cell
from tefq.oracle.windowed.secret import DEFAULT
from tefq.oracle.windowed.windows import close_instants
from tefq.relational.multiwindow import MultiWindowEvaluator
from tefq.relational.window_batches import DEFAULT_BATCH_ROWS, Source, WindowBatches
from tefq.relational.window_content import COLUMNS
from tefq.relational.windowed import IncrementalRun, Report, WindowedState


def _table(elements: list) -> pd.DataFrame:
    df = pd.DataFrame(elements, columns=COLUMNS) if elements else pd.DataFrame({c: [] for c in COLUMNS})
    return df.astype({"ts": np.int64})


class IncrementalBatchedRun(IncrementalRun):
    """The document's windowed queries, evaluated in batches of windows as event time advances."""

    def __init__(self, doc, t0: int = 0, small: int = 0, join_order: str = "adaptive",
                 batch_rows: int = DEFAULT_BATCH_ROWS, interval_s: float | None = None) -> None:
        super().__init__(doc, t0, small)
        evaluators = [MultiWindowEvaluator(q.sparql, doc.source, line=getattr(s, "line", 0), join_order=join_order,
                                           interval_s=interval_s or q.step_ms / 1000)
                      for q, s in zip(self.queries, self.spans)]
        self.batches = WindowBatches(self.queries, evaluators, t0, DEFAULT, batch_rows, doc.source)

    def due(self, st: WindowedState, upto: int | None) -> list[np.ndarray]:
        """Each query's windows closing after `done` and at or before `upto` (None: all)."""
        out = []
        for q in self.queries:
            instants: set[int] = set()
            for w in q.windows:
                instants.update(c for c in close_instants(st.first, st.last, w.range_ms, w.step_ms, self.t0)
                                if c > self.t0 and (st.done is None or c > st.done) and (upto is None or c <= upto))
            out.append(np.array(sorted(instants), dtype=np.int64))
        return out

    def advance(self, st: WindowedState, upto: int | None) -> list[Report]:
        """Evaluate the windows closing at or before `upto` (None: the end of input, all of them)."""
        if st.first is None or st.last is None or st.flushed:
            return []
        instants = self.due(st, upto)
        self.batches.streams = {None: Source(_table(st.external.external))}
        self.batches.feeds = {q.name: Source(_table(st.feeds.get(q.name, Stream()).fed))
                              for q in self.queries if q.registers_stream}
        reports = []
        for c, i, ans in self.batches.due(instants):
            st.ticks += 1
            rows, st.previous[i], fed = self.batches.r2s(c, i, ans, st.previous.get(i))
            if fed:
                feed = st.feeds.setdefault(self.queries[i].name, Stream())
                feed.fed.extend(fed)
                feed.fed_ts.extend([c] * len(fed))
                st.feedback_triples += len(fed)
            if rows:
                reports.append(Report(i, c, [tuple(canonical_cell(x) for x in r) for r in rows]))
        last = max((int(ins[-1]) for ins in instants if len(ins)), default=None)
        self.close(st, upto, last)
        return reports

    def close(self, st: WindowedState, upto: int | None, last: int | None) -> None:
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
        for s in [st.external, *st.feeds.values()]:
            a, b = np.searchsorted(s.ext_ts, keep_from, "left"), np.searchsorted(s.fed_ts, keep_from, "left")
            s.external, s.ext_ts, s.fed, s.fed_ts = s.external[a:], s.ext_ts[a:], s.fed[b:], s.fed_ts[b:]


__all__ = ["IncrementalBatchedRun"]
