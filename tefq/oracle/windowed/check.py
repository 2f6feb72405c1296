"""Checking an engine's answers against the oracle: CSRBench's verdict over a t0 sweep, YABench's
per-window precision / recall / delay, and YABench's gracious mode.

Verdict (CSRBench, 001 §6.1 and its oracle's `contains`): the engine passes when, for some t0 of
the sweep, its sequence of relations (each a set of mappings; timestamps not compared) occurs as
a contiguous run in the oracle's sequence. `strict=True` demands the whole sequence instead.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import asdict, dataclass, field
from typing import Sequence

from tefq.oracle.windowed.answers import Relation
from tefq.oracle.windowed.engine import WindowEvaluator, relations
from tefq.oracle.windowed.secret import Semantics


@dataclass
class WindowReport:
    open: int
    close: int
    at: int
    expected: int
    actual: int
    precision: float | None  # None: the engine answered nothing (0/0 is not a precision of 1.0)
    recall: float | None  # None: the oracle expected nothing
    delay: int | None = None
    gracious_open: int | None = None
    gracious_close: int | None = None
    gracious_precision: float | None = None
    gracious_recall: float | None = None


@dataclass
class CheckResult:
    verdict: str  # pass | fail
    t0: int  # the matching t0, else the best one by mean F1
    matching_t0s: list[int]
    windows: list[WindowReport]
    system: str = ""
    query: str = ""
    swept: list[int] = field(default_factory=list)
    offset: int | None = None  # index of the oracle relation the engine's first one matched

    def to_json(self) -> dict:
        d = asdict(self)
        d["windows"] = [{k: v for k, v in asdict(w).items() if v is not None or k in ("precision", "recall")}
                        for w in self.windows]
        return d


def contains(oracle: Sequence[Relation], actual: Sequence[Relation], strict: bool = False) -> int | None:
    """Where `actual` occurs as a contiguous run of `oracle` (by row sets), else None."""
    o = [r.rows for r in oracle]
    a = [r.rows for r in actual]
    if strict:
        return 0 if o == a else None
    if not a:
        return 0
    for i in range(len(o) - len(a) + 1):
        if o[i:i + len(a)] == a:
            return i
    return None


def _pr(expected: frozenset, actual: frozenset) -> tuple[float | None, float | None]:
    """Precision and recall; undefined (None) when their denominator is empty."""
    hit = len(expected & actual)
    precision = hit / len(actual) if actual else None
    recall = hit / len(expected) if expected else None
    return precision, recall


def f1(precision: float | None, recall: float | None) -> float:
    """F1 of one window: both undefined means both sides empty (agreement, 1.0); one undefined
    means one side answered nothing while the other did (0.0)."""
    if precision is None or recall is None:
        return 1.0 if precision is None and recall is None else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def _rounded(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def window_metrics(oracle: Sequence[Relation], actual: Sequence[Relation], offset: int | None = None
                   ) -> tuple[list[WindowReport], list[frozenset]]:
    """Pair each engine relation with an oracle relation and score each oracle window.

    With timestamps on both sides and no matching offset, an engine relation belongs to the latest
    oracle report at or before it (its delay is the difference; one earlier than every report goes
    to the first). With an offset (the verdict's match) or without timestamps, relations pair in
    order from the offset. Returns the reports and, per oracle window, the engine's rows for it."""
    assigned: list[list[int]] = [[] for _ in oracle]
    timed = _timed(oracle, actual)
    surplus: list[int] = []  # engine relations no oracle relation can take: all wrong
    if timed and offset is None:
        ats = [r.at for r in oracle]
        for j, r in enumerate(actual):
            if oracle:
                assigned[max(0, bisect_right(ats, r.at) - 1)].append(j)  # type: ignore[arg-type]
            else:
                surplus.append(j)
    else:
        for j in range(len(actual)):
            if (offset or 0) + j < len(oracle):
                assigned[(offset or 0) + j].append(j)
            else:
                surplus.append(j)
    reports, got_all = [], []
    for i, rel in enumerate(oracle):
        got = frozenset().union(*(actual[j].rows for j in assigned[i]))
        p, r = _pr(rel.rows, got)
        delay = None
        if assigned[i] and timed:
            delay = min(actual[j].at for j in assigned[i]) - rel.at  # type: ignore[operator]
        o, c = rel.window or (rel.at or 0, rel.at or 0)
        reports.append(WindowReport(o, c, rel.at or 0, len(rel.rows), len(got), _rounded(p), _rounded(r), delay))
        got_all.append(got)
    for j in surplus:
        at = actual[j].at or 0
        reports.append(WindowReport(at, at, at, 0, len(actual[j].rows), 0.0 if actual[j].rows else None, None))
    return reports, got_all


def _timed(oracle: Sequence[Relation], actual: Sequence[Relation]) -> bool:
    return all(r.at is not None for r in actual) and all(r.at is not None for r in oracle)


def _mean_f1(reports: Sequence[WindowReport]) -> float:
    if not reports:
        return 1.0
    return sum(f1(w.precision, w.recall) for w in reports) / len(reports)


def t0_candidates(first: int, range_ms: int, unit: int, sweep: bool) -> list[int]:
    """CSRBench's sweep: t0 from the query's first t0 to first + RANGE, by the engine's time unit."""
    return list(range(first, first + range_ms + 1, max(1, unit))) if sweep else [first]


def check(ev: WindowEvaluator, sem: Semantics, actual: Sequence[Relation], t0s: Sequence[int],
          strict: bool = False, gracious: bool = False) -> CheckResult:
    """The verdict over the t0 sweep; metrics for the first matching t0, else the best by mean F1."""
    matching: list[int] = []
    chosen: tuple[int, list[Relation], int | None] | None = None
    best_score = -1.0
    for t0 in t0s:
        oracle = relations(ev, sem, t0)
        at = contains(oracle, actual, strict)
        if at is not None:
            matching.append(t0)
            if chosen is None or chosen[2] is None:
                chosen = (t0, oracle, at)
            continue
        if chosen is None or chosen[2] is None:
            score = _mean_f1(window_metrics(oracle, actual)[0])
            if score > best_score:
                best_score, chosen = score, (t0, oracle, None)
    assert chosen is not None, "the sweep holds at least one t0"
    t0, oracle, offset = chosen
    reports, got = window_metrics(oracle, actual, offset)
    if gracious:
        _gracious(ev, sem, t0, oracle, got, reports)
    return CheckResult("pass" if matching else "fail", t0, matching, reports, swept=list(t0s), offset=offset)


def _gracious(ev: WindowEvaluator, sem: Semantics, t0: int, oracle: Sequence[Relation],
              got: Sequence[frozenset], reports: list[WindowReport]) -> None:
    """YABench's gracious mode: for each window whose engine answer differs, move its borders to
    the instants within one STEP where the content changes, and keep the borders whose answer fits
    the engine's best (highest F1, then the smallest move). Only for Rstream: an Istream/Dstream
    delta depends on the previous window too, so borders alone cannot explain it."""
    from bisect import bisect_left

    if sem.r2s != "rstream":
        return
    ts = ev.ts
    step = ev.query.step_ms
    for rel, rows_got, rep in zip(oracle, got, reports):
        if f1(rep.precision, rep.recall) == 1.0:
            continue
        o, c = rel.window or (0, 0)
        near_o = ts[bisect_left(ts, o - step):bisect_right(ts, o + step)]
        near_c = ts[bisect_left(ts, c - step):bisect_right(ts, c + step)]
        opens = sorted({o} | set(near_o) | {t + 1 for t in near_o})
        closes = sorted({c} | {t if sem.closed_right else t + 1 for t in near_c})
        def fit(no: int, nc: int) -> tuple[tuple[float, int], int, int, float, float]:
            lo = bisect_left(ts, max(no, t0))
            hi = bisect_right(ts, nc) if sem.closed_right else bisect_left(ts, nc)
            rows, _ = ev.rows(lo, max(lo, hi))
            p, r = _pr(rows, rows_got)
            return ((-f1(p, r), abs(no - o) + abs(nc - c)), no, nc, p, r)

        # coordinate search (close, then open): content changes only at element timestamps
        best = min(fit(o, nc) for nc in closes if nc > o)
        best = min([best] + [fit(no, best[2]) for no in opens if no < best[2]])
        if best is not None:
            _, rep.gracious_open, rep.gracious_close, p, r = best
            rep.gracious_precision, rep.gracious_recall = _rounded(p), _rounded(r)
