"""An in-process driver of the general kernels: the elements cut into micro-batches, routed to
buckets, each bucket's evaluator advanced to the ticks that became final, partial rows merged,
rows formatted. The Spark operator of phase 2 does the same, with Spark moving the batches; the
tests compare this with the oracle and the bench times it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tefq.plan.ticks import tick_range
from tefq.results import Row
from tefq.spark.kernels.general.coding import Elements, TermDictionary, code_elements, encode
from tefq.spark.kernels.general.evaluator import GeneralEvaluator
from tefq.spark.kernels.general.facts import CodedBackground
from tefq.spark.kernels.general.query import CompiledQuery
from tefq.spark.kernels.general.routing import element_buckets
from tefq.spark.kernels.general.rows import BucketRows, concat, format_rows, merge_partials
from tefq.spark.kernels.general.state import GeneralState
from tefq.spark.runtime.codec import decode, encode as encode_state
from tefq.vocabulary import Element


def coded_background(triples: Sequence[tuple[str, str, str]]) -> tuple[CodedBackground, TermDictionary]:
    terms = list(dict.fromkeys(t for tr in triples for t in tr))
    codes = encode(terms)
    index = dict(zip(terms, codes.tolist()))
    spo = np.array([[index[t] for t in tr] for tr in triples], np.int64).reshape(len(triples), 3)
    return CodedBackground(spo), TermDictionary(*_sorted(codes, terms))


def _sorted(codes: np.ndarray, terms: list[str]):
    uniq, first = np.unique(codes, return_index=True)
    arr = np.empty(len(terms), dtype=object)
    arr[:] = terms
    return uniq, arr[first]


@dataclass
class LocalRun:
    """One query over `buckets` evaluators in this process."""

    cq: CompiledQuery
    background: CodedBackground
    bg_terms: TermDictionary
    buckets: int = 1
    restart: bool = False  # every state through its saved bytes after each batch (as a checkpoint would)
    t0: int = 0
    done: int | None = None  # the index of the last reported tick

    def __post_init__(self) -> None:
        self.evaluators = [GeneralEvaluator(self.cq, self.background, self.bg_terms, b, self.buckets)
                           for b in range(self.buckets)]
        self.states = [e.new_state() for e in self.evaluators]
        self.out: list[BucketRows] = []

    def ingest(self, el: Elements, terms: dict[int, str]) -> None:
        to = element_buckets(self.cq, el, self.background, _Both(terms, self.bg_terms), self.buckets)
        for b, (ev, st) in enumerate(zip(self.evaluators, self.states)):
            mine = el.take(np.nonzero(to[:, b])[0])
            ev.ingest(st, mine, {c: terms[c] for c in np.unique(mine.spo).tolist()})

    def advance(self, ticks: np.ndarray) -> None:
        parts = [ev.advance(st, ticks) for ev, st in zip(self.evaluators, self.states)]
        if self.restart:
            self.states = [decode(encode_state(st, GeneralState), GeneralState, "a bucket's state")
                           for st in self.states]
        if self.evaluators[0].partial:
            self.out.append(merge_partials(self.cq, parts))
        else:
            self.out.extend(parts)

    def report_through(self, k: int) -> None:
        """Report every tick after the last reported one up to tick index `k` (none if not later)."""
        first = k if self.done is None else self.done + 1
        if k >= first:
            self.advance(self.t0 + np.arange(first, k + 1, dtype=np.int64) * self.cq.every)
            self.done = k

    def rows(self) -> list[Row]:
        return format_rows(self.cq, concat(self.out, self.cq))


class _Both:
    """A dictionary view over a batch's terms and the background's (for routing)."""

    def __init__(self, terms: dict[int, str], bg: TermDictionary) -> None:
        self.terms, self.bg = terms, bg

    def lookup(self, codes: np.ndarray) -> np.ndarray:
        out = self.bg.lookup(codes)
        for i, c in enumerate(codes.tolist()):
            if c in self.terms:
                out[i] = self.terms[c]
        return out


def run_local(cq: CompiledQuery, elements: Sequence[Element], background: Sequence[tuple[str, str, str]] = (),
              t0: int = 0, cuts: Sequence[int] = (), buckets: int = 1, restart: bool = False) -> list[Row]:
    """The query's rows over `elements` in arrival order (ties apply in that order), cut at the
    positions `cuts` into micro-batches. After each batch the ticks before the earliest element
    still to come are reported (so no element is ever late)."""
    if not elements:
        return []
    run = LocalRun(cq, *coded_background(background), buckets, restart, t0)
    ts = np.array([e[0] for e in elements], np.int64)
    k_first, k_last = tick_range(int(ts.min()), int(ts.max()), t0, cq.every)
    run.done = k_first - 1
    still = np.minimum.accumulate(ts[::-1])[::-1]  # the earliest time from each position on
    lo = 0
    for hi in sorted(set(c for c in cuts if 0 < c < len(elements))) + [len(elements)]:
        run.ingest(*code_elements(elements[lo:hi], lo))
        run.report_through(k_last if hi == len(elements) else min(k_last, (int(still[hi]) - 1 - t0) // cq.every))
        lo = hi
    return run.rows()
