"""A document's windowed queries over whole streams, many windows per vectorised pass: the windowed
oracle's `run()` (tefq.oracle.windowed.runner: same agenda, windows, R2S, feedback and rows),
evaluated by tefq.relational.multiwindow instead of window by window.

Feedback orders the work. A `REGISTER STREAM` query's CONSTRUCT triples are stamped with its
window's close `c'` and read by the windows closing in `(c', c' + RANGE]` of every query that
names that stream. Each window gets a *round*: one more than the latest round of a window whose
output it reads, and never less than its query's previous window (R2S compares consecutive
windows). Rounds run in order; inside a round, each query's windows go through the evaluator in
batches of at most `batch_rows` assigned elements. Without feedback everything is round 0: a
query's whole run is a few batches. A query that reads its own output (UC1's
UserChannelCounts) needs each window's output for the next: one window per round.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from tefq.errors import TefqError
from tefq.oracle.query import bound_ticks
from tefq.oracle.windowed.query import OracleQuery, from_windowed
from tefq.oracle.windowed.runner import WindowedResults, canonical_cell, names_stream, r2s_rows, result_columns
from tefq.oracle.windowed.secret import DEFAULT, Semantics
from tefq.oracle.windowed.windows import close_instants, count_close_instants
from tefq.relational.multiwindow import MultiWindowEvaluator
from tefq.relational.window_content import COLUMNS, Part, TermNormaliser, batch, contents_size
from tefq.results import QueryResult

DEFAULT_BATCH_ROWS = 2_000_000  # elements assigned to windows per pass: bounds the memory of one batch


class BatchedResults(WindowedResults):
    """`WindowedResults` plus the batching's own figures: `rounds`, `batches` (evaluator passes),
    `batch_log` (per batch: query, first and last window close, windows, seconds) and
    `join_orders` (per batch and BGP: the order and the strategy chosen)."""

    rounds: int = 0
    batches: int = 0
    batch_log: list
    join_orders: list


def element_table(elements) -> pd.DataFrame:
    """Elements (ts, s, p, o) as a table sorted by timestamp (stable: stream order within a ms)."""
    if isinstance(elements, pd.DataFrame):
        df = elements[COLUMNS].reset_index(drop=True)
    else:
        rows = list(elements)
        df = pd.DataFrame(rows, columns=COLUMNS) if rows else pd.DataFrame({c: [] for c in COLUMNS})
    df["ts"] = df["ts"].astype(np.int64)
    ts = df["ts"].to_numpy()
    if len(ts) < 2 or (ts[1:] >= ts[:-1]).all():
        return df
    return df.iloc[np.argsort(ts, kind="stable")].reset_index(drop=True)


@dataclass
class _Source:
    """One stream a window reads: external elements, or a REGISTER STREAM's fed-back triples
    (appended in time order, round after round)."""

    table: pd.DataFrame
    pieces: list = field(default_factory=list)

    def add(self, fed: pd.DataFrame) -> None:
        self.pieces.append(fed)

    def current(self) -> pd.DataFrame:
        if self.pieces:
            self.table = pd.concat([self.table, *self.pieces], ignore_index=True)
            self.pieces = []
        return self.table

    def between(self, lo: int, hi: int) -> pd.DataFrame:
        """The elements with lo <= ts <= hi."""
        df = self.current()
        ts = df["ts"].to_numpy(np.int64)
        return df.iloc[np.searchsorted(ts, lo, "left"):np.searchsorted(ts, hi, "right")]


class BatchedRun:
    """The state of one run: streams, feeds, evaluators, R2S memory and results."""

    def __init__(self, doc, elements, background: Sequence[tuple[str, str, str]], t0: int, sem: Semantics,
                 join_order: str, batch_rows: int, interval_s: float | None) -> None:
        from tefq.plan.logical import WindowedQuery

        self.doc, self.t0, self.sem, self.batch_rows = doc, t0, sem, batch_rows
        self.queries: list[OracleQuery] = [from_windowed(q) for q in doc.queries if isinstance(q, WindowedQuery)]
        given = dict(elements) if isinstance(elements, Mapping) else {None: elements}
        self.streams = {iri: _Source(_from_t0(element_table(els), t0)) for iri, els in given.items()}
        self.feeds = {q.name: _Source(element_table([])) for q in self.queries if q.registers_stream}
        self.evaluators = [MultiWindowEvaluator(q.sparql, doc.source, background, join_order=join_order,
                                                interval_s=interval_s or q.step_ms / 1000) for q in self.queries]
        self.results = [QueryResult(q.name, result_columns(q)) for q in self.queries]
        self.previous: list[dict | None] = [None] * len(self.queries)
        self.out = BatchedResults()
        self.out.join_orders = []
        self.out.batch_log = []
        self.canonical = lru_cache(maxsize=1 << 16)(canonical_cell)
        self.normal = TermNormaliser()

    def source(self, iri: str | None) -> tuple[_Source, str | None]:
        """The stream a FROM clause names, and the feeding query's name if it is a feed."""
        for name, s in self.feeds.items():
            if names_stream(iri, name):
                return s, name
        return self.streams.get(iri) or self.streams.get(None) or _Source(element_table([])), None

    # ---------------------------------------------------------------- the agenda
    def agenda(self, max_ticks: int) -> list[np.ndarray]:
        """Each query's report instants (sorted), as the oracle's run() enumerates them."""
        ext = [s.table for s in self.streams.values() if len(s.table)]
        if not ext or not self.queries:
            return [np.zeros(0, np.int64) for _ in self.queries]
        first = min(int(t["ts"].iloc[0]) for t in ext)
        last = max(int(t["ts"].iloc[-1]) for t in ext)
        out = []
        for q in self.queries:
            instants: set[int] = set()
            for w in q.windows:
                if w.range_ms <= 0 or w.step_ms <= 0:
                    raise TefqError(f"query {q.name}: window RANGE and STEP must be positive", self.doc.source)
                start = self.t0 - (w.range_ms // w.step_ms) * w.step_ms if self.sem.partial_first else self.t0
                bound_ticks(q.name, count_close_instants(first, last, w.range_ms, w.step_ms, start), max_ticks,
                            w.step_ms, first, last)
                instants.update(c for c in close_instants(first, last, w.range_ms, w.step_ms, start) if c > self.t0)
            out.append(np.array(sorted(instants), dtype=np.int64))
        return out

    def rounds(self, instants: list[np.ndarray]) -> list[np.ndarray]:
        """Each window's round (see the module's doc)."""
        reads = [[(w.range_ms, self._feeder(w.iri)) for w in q.windows if self._feeder(w.iri) is not None]
                 for q in self.queries]
        if any(reads) and self.sem.closed_right:
            raise TefqError("windows closed on the right ([o, c]) that read a REGISTER STREAM are evaluated by "
                            "the oracle only", self.doc.source)
        levels = [np.zeros(len(ins), np.int64) for ins in instants]
        if not any(reads):
            return levels
        for c, i, k in sorted((int(c), i, k) for i, ins in enumerate(instants) for k, c in enumerate(ins)):
            level = levels[i][k - 1] if k else 0
            for range_ms, j in reads[i]:
                lo, hi = np.searchsorted(instants[j], [c - range_ms, c], "left")
                if hi > lo:
                    level = max(level, int(levels[j][lo:hi].max()) + 1)
            levels[i][k] = level
        return levels

    def _feeder(self, iri: str | None) -> int | None:
        _, name = self.source(iri)
        return None if name is None else next(i for i, q in enumerate(self.queries) if q.name == name)

    # ---------------------------------------------------------------- evaluation
    def parts(self, i: int, lo: int, hi: int, predicates: frozenset[str] | None) -> list[Part]:
        """Query i's FROM clauses' elements for windows closing in [lo, hi]."""
        out = []
        for w in self.queries[i].windows:
            els = self.source(w.iri)[0].between(lo - w.range_ms, hi)
            if predicates is not None:
                els = els[els["p"].isin(predicates)]
            out.append(Part(els, w.range_ms))
        return out

    def chunks(self, i: int, instants: np.ndarray) -> Iterable[np.ndarray]:
        """Query i's windows of one round, in batches of about `batch_rows` assigned elements."""
        if self.sem.non_empty:  # windows with no element at all report nothing (their tick counts)
            sizes = contents_size(self.parts(i, int(instants[0]), int(instants[-1]), None), instants, self.t0,
                                  self.sem.closed_right)
            instants = instants[sizes > 0]
        if not len(instants):
            return
        parts = self.parts(i, int(instants[0]), int(instants[-1]), self.evaluators[i].predicates)
        total = np.cumsum(contents_size(parts, instants, self.t0, self.sem.closed_right))
        start = 0
        while start < len(instants):
            base = int(total[start - 1]) if start else 0
            end = max(start + 1, int(np.searchsorted(total, base + self.batch_rows, "right")))
            yield instants[start:end]
            start = end

    def evaluate(self, i: int, instants: np.ndarray) -> dict:
        ev = self.evaluators[i]
        answers: dict = {}
        for chunk in self.chunks(i, instants):
            started = time.perf_counter()
            parts = self.parts(i, int(chunk[0]), int(chunk[-1]), ev.predicates)
            answers.update(ev.evaluate(batch(parts, chunk, self.t0, ev.predicates, ev.uses_timestamp,
                                             self.sem.closed_right, self.normal)))
            self.out.batches += 1
            self.out.batch_log.append({"query": self.queries[i].name, "first": int(chunk[0]), "last": int(chunk[-1]),
                                       "windows": len(chunk), "seconds": time.perf_counter() - started})
        return answers

    def report(self, c: int, i: int, ans) -> None:
        """One window's R2S, feedback and rows (the oracle's loop body)."""
        q = self.queries[i]
        self.out.ticks += 1
        if ans is None:  # an empty window under non-empty reporting
            return
        cells_list = ans.triples if ans.triples or q.form == "construct" else ans.rows
        rows, self.previous[i] = r2s_rows(cells_list, self.previous[i], q.r2s if q.r2s != "rstream" else self.sem.r2s)
        if q.registers_stream and q.form == "construct" and rows:
            fed = list(dict.fromkeys(rows))  # a stream is a set: one element per triple
            self.feeds[q.name].add(pd.DataFrame([(c, s, p, o) for s, p, o in fed], columns=COLUMNS))
            self.out.feedback_triples += len(fed)
        canonical = self.canonical
        self.results[i].rows.extend([(c, tuple(map(canonical, r))) for r in rows])

    def run(self, max_ticks: int) -> BatchedResults:
        self.out.events_in = sum(len(s.table) for s in self.streams.values())
        instants = self.agenda(max_ticks)
        levels = self.rounds(instants)
        for level in sorted(set().union(*[set(lv.tolist()) for lv in levels])):
            due = [ins[lv == level] for ins, lv in zip(instants, levels)]
            answers = [self.evaluate(i, d) if len(d) else {} for i, d in enumerate(due)]
            for c, i in sorted((int(c), i) for i, d in enumerate(due) for c in d):
                self.report(c, i, answers[i].get(c))
            self.out.rounds += 1
        for q, ev in zip(self.queries, self.evaluators):
            self.out.join_orders.extend({"query": q.name, **r.to_json()} for r in ev.orders.records)
        self.out.extend(self.results)
        return self.out


def _from_t0(df: pd.DataFrame, t0: int) -> pd.DataFrame:
    ts = df["ts"].to_numpy(np.int64)
    return df if not len(ts) or ts[0] >= t0 else df.iloc[np.searchsorted(ts, t0, "left"):].reset_index(drop=True)


def run_batched(doc, elements, background: Sequence[tuple[str, str, str]] = (), t0: int = 0,
                semantics: Semantics | None = None, join_order: str = "adaptive",
                batch_rows: int = DEFAULT_BATCH_ROWS, max_ticks: int = 0,
                interval_s: float | None = None) -> BatchedResults:
    """Every WindowedQuery of `doc` over `elements` (a table or iterable of (ts, s, p, o), or a
    mapping IRI -> those, None for the default stream), as the oracle's `run()` answers them.
    `interval_s`: the trigger interval of the adaptive join order's decision maker (default: each
    query's STEP)."""
    sem = semantics or DEFAULT
    if sem.content_change or sem.periodic_ms or not sem.window_close:
        raise TefqError("tefq run reports at window close only; use `tefq oracle check` for the other "
                        "report policies", "--engine oracle")
    if batch_rows <= 0:
        raise TefqError("the batch size must be positive", "--batch-rows")
    return BatchedRun(doc, elements, background, t0, sem, join_order, batch_rows, interval_s).run(max_ticks)


__all__ = ["run_batched", "BatchedRun", "BatchedResults", "element_table", "DEFAULT_BATCH_ROWS"]
