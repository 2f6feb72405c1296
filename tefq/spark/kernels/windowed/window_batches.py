"""Evaluating a document's due windows in rounds and multi-window batches, over streams the
caller keeps: the scheduling and evaluation shared by the whole-stream run
(tefq.spark.kernels.windowed.multiwindow_run) and the incremental one (tefq.spark.kernels.windowed.multiwindow_incremental).

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
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

import numpy as np
import pandas as pd

from tefq.errors import TefqError
from tefq.oracle.windowed.query import OracleQuery
from tefq.oracle.windowed.runner import names_stream, r2s_rows
from tefq.oracle.windowed.secret import Semantics
from tefq.spark.kernels.windowed.multiwindow import MultiWindowEvaluator
from tefq.spark.kernels.windowed.window_content import COLUMNS, Part, batch, contents_size

DEFAULT_BATCH_ROWS = 2_000_000  # elements assigned to windows per pass: bounds the memory of one batch
# A round in which a query has one window due, with fewer relevant elements than this, goes to
# rdflib (the oracle's own evaluator): a pandas pass costs ~30 ms whatever its size, rdflib ~6 ms
# for 30 triples. Feedback cycles (a query reading its own output: one window per round) and
# micro-batches that close one window each make such rounds.
SMALL_WINDOW = 1000


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


PIECES = 256  # fed-back pieces kept apart before they join the table (one concat per this many rounds)


@dataclass
class Source:
    """One stream a window reads: external elements, or a REGISTER STREAM's fed-back triples
    (appended in time order, round after round: each piece one window's output, at its close).
    The pieces stay apart until there are `PIECES` of them: a feedback cycle evaluates one window
    a round, and joining every piece to the table at once made each round copy the whole feed."""

    table: pd.DataFrame
    pieces: list = field(default_factory=list)
    starts: list = field(default_factory=list)  # each piece's first timestamp

    def add(self, fed: pd.DataFrame) -> None:
        if len(fed):
            self.pieces.append(fed)
            self.starts.append(int(fed["ts"].iat[0]))
        if len(self.pieces) >= PIECES:
            self.current()

    def current(self) -> pd.DataFrame:
        if self.pieces:
            self.table = pd.concat([self.table, *self.pieces], ignore_index=True)
            self.pieces, self.starts = [], []
        return self.table

    def between(self, lo: int, hi: int) -> pd.DataFrame:
        """The elements with lo <= ts <= hi."""
        ts = self.table["ts"].to_numpy(np.int64)
        out = self.table.iloc[np.searchsorted(ts, lo, "left"):np.searchsorted(ts, hi, "right")]
        first = bisect_left(self.starts, lo) - 1  # the piece before may still reach lo
        tail = [p for p in self.pieces[max(first, 0):bisect_right(self.starts, hi)]
                if int(p["ts"].iat[-1]) >= lo]
        if not tail:
            return out
        both = pd.concat([out, *tail], ignore_index=True)
        ts = both["ts"].to_numpy(np.int64)
        return both.iloc[np.searchsorted(ts, lo, "left"):np.searchsorted(ts, hi, "right")]


class WindowBatches:
    """The queries, their evaluators and the streams they read (`streams`: IRI -> external
    `Source`, None the default; `feeds`: REGISTER STREAM name -> fed-back `Source`)."""

    def __init__(self, queries: Sequence[OracleQuery], evaluators: Sequence[MultiWindowEvaluator], t0: int,
                 sem: Semantics, batch_rows: int, source_name: str = "<query>", small: int = SMALL_WINDOW) -> None:
        if batch_rows <= 0:
            raise TefqError("the batch size must be positive", "--batch-rows")
        self.queries, self.evaluators = list(queries), list(evaluators)
        self.t0, self.sem, self.batch_rows, self.source_name, self.small = t0, sem, batch_rows, source_name, small
        self.streams: dict[str | None, Source] = {}
        self.feeds: dict[str, Source] = {}
        self.batches = 0
        self.rounds_run = 0
        self.batch_log: list[dict] = []

    def source(self, iri: str | None) -> tuple[Source, str | None]:
        """The stream a FROM clause names, and the feeding query's name if it is a feed."""
        for name, s in self.feeds.items():
            if names_stream(iri, name):
                return s, name
        return self.streams.get(iri) or self.streams.get(None) or Source(element_table([])), None

    def due(self, instants: list[np.ndarray]) -> Iterator[tuple[int, int, object]]:
        """(close, query, answer) of every window in `instants` (per query, sorted), round after
        round, in (close, query) order inside a round; the caller feeds a window's output back
        before the next round is evaluated (None: an empty window under non-empty reporting)."""
        levels = self.rounds(instants)
        for level in sorted(set().union(*[set(lv.tolist()) for lv in levels])):
            todo = [ins[lv == level] for ins, lv in zip(instants, levels)]
            answers = [self.evaluate(i, d) if len(d) else {} for i, d in enumerate(todo)]
            self.rounds_run += 1
            for c, i in sorted((int(c), i) for i, d in enumerate(todo) for c in d):
                yield c, i, answers[i].get(c)

    def r2s(self, c: int, i: int, ans, previous: dict | None) -> tuple[list, dict | None, list]:
        """One window's R2S (the oracle's loop body): its rows, what the next window compares
        with, and the triples it feeds back (appended to its stream here)."""
        q = self.queries[i]
        cells_list = ans.triples if ans.triples or q.form == "construct" else ans.rows
        rows, previous = r2s_rows(cells_list, previous, q.r2s if q.r2s != "rstream" else self.sem.r2s)
        fed: list = []
        if q.registers_stream and q.form == "construct" and rows:
            fed = [(c, s, p, o) for s, p, o in dict.fromkeys(rows)]  # a stream is a set: one element per triple
            self.feeds[q.name].add(pd.DataFrame(fed, columns=COLUMNS))
        return rows, previous, fed

    def rounds(self, instants: list[np.ndarray]) -> list[np.ndarray]:
        """Each window's round (see the module's doc)."""
        reads = [[(w.range_ms, self._feeder(w.iri)) for w in q.windows if self._feeder(w.iri) is not None]
                 for q in self.queries]
        if any(reads) and self.sem.closed_right:
            raise TefqError("windows closed on the right ([o, c]) that read a REGISTER STREAM are evaluated by "
                            "the oracle only", self.source_name)
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
        if len(instants) <= 1:  # one window is one batch (a feedback cycle's round): no sizes to add up
            yield from [instants] if len(instants) else []
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
            if len(instants) == 1 and sum(len(p.elements) for p in parts) < self.small:
                answers[int(chunk[0])] = self.one_window(i, int(chunk[0]), parts)
            else:
                answers.update(ev.evaluate(batch(parts, chunk, self.t0, ev.predicates, ev.uses_timestamp,
                                                 self.sem.closed_right)))
            self.batches += 1
            self.batch_log.append({"query": self.queries[i].name, "first": int(chunk[0]), "last": int(chunk[-1]),
                                   "windows": len(chunk), "seconds": time.perf_counter() - started})
        return answers


    def one_window(self, i: int, c: int, parts: list[Part]):
        """Window `c` of query i by rdflib: its elements, [max(c - RANGE, t0), c) per FROM clause
        (`]` with closed bounds), in timestamp order, as the oracle's loop hands them over."""
        pieces = []
        for part in parts:
            ts = part.elements["ts"].to_numpy(np.int64)
            keep = (ts >= max(c - part.range_ms, self.t0)) & ((ts <= c) if self.sem.closed_right else (ts < c))
            pieces.append(part.elements[keep])
        content = element_table(pd.concat(pieces, ignore_index=True)) if pieces else element_table([])
        return self.evaluators[i].prepared.evaluate(list(content.itertuples(index=False, name=None)))


__all__ = ["WindowBatches", "Source", "element_table", "DEFAULT_BATCH_ROWS", "SMALL_WINDOW"]
