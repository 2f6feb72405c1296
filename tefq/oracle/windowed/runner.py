"""`run`: a document's windowed queries under spec §8's default semantics, with REGISTER STREAM
feedback, producing the shared `QueryResult` rows that `tefq run --engine oracle` writes.

All queries advance together in time: at each report instant (a window close) the queries due
are evaluated in document order; a REGISTER STREAM query's CONSTRUCT triples get the instant as
timestamp and are appended to the stream named after it, so windows that close later (its own
included) read them. With `[o, c)` windows a triple stamped `c` is never in a window closing at
`c`, so the order of queries within one instant does not change any answer.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Iterable, Mapping, Sequence

from tefq.errors import TefqError
from tefq.io.rdf import background_as_ntriples
from tefq.oracle.query import bound_ticks
from tefq.oracle.windowed.answers import binding
from tefq.oracle.windowed.query import OracleQuery, from_windowed
from tefq.oracle.windowed.r2r import Evaluator
from tefq.oracle.windowed.secret import DEFAULT, Semantics
from tefq.oracle.windowed.windows import close_instants, count_close_instants
from tefq.plan.logical import WindowedQuery
from tefq.results import QueryResult
from tefq.semantics.values import is_numeric, to_term, to_value
from tefq.vocabulary import Element


class WindowedResults(list):
    """The results list, plus what the caller needs for metrics: `ticks` (windows evaluated,
    empty ones included), `feedback_triples` (REGISTER STREAM triples fed back: the baseline's
    intermediate bindings, spec §7) and `events_in` (external elements read)."""

    ticks: int = 0
    feedback_triples: int = 0
    events_in: int = 0

    @property
    def intermediate_bindings(self) -> int:
        return self.feedback_triples


def _names_stream(iri: str | None, name: str) -> bool:
    return iri is not None and (iri == name or iri.endswith("/" + name) or iri.endswith("#" + name))


class _Stream:
    """External elements (sorted) plus fed-back ones (appended in time order)."""

    def __init__(self, external: Sequence[Element] = ()) -> None:
        self.external = list(external)
        self.ext_ts = [e[0] for e in self.external]
        self.fed: list[Element] = []
        self.fed_ts: list[int] = []

    def between(self, lo: int, hi: int, closed: bool) -> list[Element]:
        out = []
        for ts, els in ((self.ext_ts, self.external), (self.fed_ts, self.fed)):
            a = bisect_left(ts, lo)
            b = bisect_right(ts, hi) if closed else bisect_left(ts, hi)
            out.extend(els[a:b])
        return sorted(out, key=lambda e: e[0])


def run(doc, elements: Iterable[Element] | Mapping[str | None, Iterable[Element]], background=None,
        t0: int = 0, semantics: Semantics | None = None, evaluator=Evaluator, max_ticks: int = 0) -> WindowedResults:
    """Every WindowedQuery of `doc` over `elements` (one stream feeding every FROM STREAM, or a
    mapping IRI -> the elements of the inputs bound to that IRI, None -> those of the unnamed
    inputs, which every FROM STREAM reads too: `--stream IRI=PATH` and `--stream PATH`). Returns one QueryResult per query,
    in document order, as a `WindowedResults` list (see its counters). `evaluator` is the R2R
    class (rdflib's `Evaluator`; tests pass the vectorised one to compare them). A query whose
    windows would close more than `max_ticks` times (0: no bound) raises TooManyTicks first."""
    sem = semantics or DEFAULT
    if sem.content_change or sem.periodic_ms or not sem.window_close:
        raise TefqError("tefq run reports at window close only; use `tefq oracle check` for the other "
                        "report policies", "--engine oracle")
    queries = [from_windowed(q) for q in doc.queries if isinstance(q, WindowedQuery)]
    given = {k: [e for e in v if e[0] >= t0] for k, v in
             (elements.items() if isinstance(elements, Mapping) else [(None, elements)])}
    unnamed = given.get(None, [])
    streams = {iri: _Stream(sorted(els if iri is None else unnamed + els, key=lambda e: e[0]))
               for iri, els in given.items()}
    out = WindowedResults()
    out.events_in = sum(len(els) for els in given.values())
    feeds = {q.name: _Stream() for q in queries if q.registers_stream}
    bg = background_as_ntriples(background)

    def source(iri: str | None) -> _Stream:
        for name, s in feeds.items():
            if _names_stream(iri, name):
                return s
        return streams.get(iri) or streams.get(None) or _Stream()

    ext = [s for s in streams.values() if s.external]
    if not ext or not queries:
        out.extend(QueryResult(q.name, _columns(q), window_order=q.ordered) for q in queries)
        return out
    first = min(s.ext_ts[0] for s in ext)
    last = max(s.ext_ts[-1] for s in ext)
    agenda = _agenda(queries, first, last, t0, sem, max_ticks, doc.source)
    evaluators = [evaluator(q.sparql, doc.source, bg, line=q.line) for q in queries]
    results = [QueryResult(q.name, _columns(q), window_order=q.ordered) for q in queries]
    previous: list[dict | None] = [None] * len(queries)
    for c, i in agenda:
        q, ev = queries[i], evaluators[i]
        content: list[Element] = []
        for w in q.windows:
            content.extend(source(w.iri).between(max(c - w.range_ms, t0), c, sem.closed_right))
        out.ticks += 1
        if sem.non_empty and not content:
            continue
        ans = ev.evaluate(sorted(content, key=lambda e: e[0]))
        cells_list = ans.triples if ans.triples or q.form == "construct" else ans.rows
        rows, previous[i] = r2s_rows(cells_list, previous[i], q.r2s if q.r2s != "rstream" else sem.r2s)
        if q.registers_stream and q.form == "construct" and rows:
            feed = feeds[q.name]
            for s, p, o in dict.fromkeys(rows):  # a stream is a set: one element per triple
                feed.fed.append((c, s, p, o))
                feed.fed_ts.append(c)
                out.feedback_triples += 1
        results[i].rows.extend((c, tuple(canonical_cell(x) for x in r)) for r in rows)
    out.extend(results)
    return out


def _agenda(queries: list[OracleQuery], first: int, last: int, t0: int, sem: Semantics, max_ticks: int,
            source: str) -> list[tuple[int, int]]:
    """(close instant, query index) of every window that closes over the events' span, in time
    order then document order; more than `max_ticks` closes of one window raise TooManyTicks."""
    per_query = report_instants(queries, first, last, t0, sem, max_ticks, source)
    return sorted((c, i) for i, instants in enumerate(per_query) for c in instants)


def report_instants(queries: list[OracleQuery], first: int, last: int, t0: int, sem: Semantics, max_ticks: int,
                    source: str) -> list[list[int]]:
    """Each query's report instants (sorted) over the events' span [first, last]: the agenda of
    the oracle's loop and of the batched runs (tefq.spark.kernels.windowed.multiwindow_run)."""
    out = []
    for q in queries:
        instants: set[int] = set()
        for w in q.windows:
            if w.range_ms <= 0 or w.step_ms <= 0:
                raise TefqError(f"query {q.name}: window RANGE and STEP must be positive", source)
            start = t0 - (w.range_ms // w.step_ms) * w.step_ms if sem.partial_first else t0
            bound_ticks(q.name, count_close_instants(first, last, w.range_ms, w.step_ms, start), max_ticks,
                        w.step_ms, first, last)
            instants.update(c for c in close_instants(first, last, w.range_ms, w.step_ms, start) if c > t0)
        out.append(sorted(instants))
    return out


def canonical_cell(cell: str | None) -> str | None:
    """A number's lexical form made the shared canonical one (tefq.semantics.values: the oracle's
    and Spark's rows compare with ==), its datatype kept as computed (spec §8: `"23.0"^^xsd:float`
    is written `"23"^^xsd:float`, an `xsd:negativeInteger` stays one); every other term as is."""
    if cell is None or not cell.startswith('"') or "^^<http://www.w3.org/2001/XMLSchema#" not in cell:
        return cell
    v = to_value(cell)
    if not is_numeric(v):
        return cell
    canonical = to_term(v)
    return canonical[:canonical.rindex("^^")] + cell[cell.rindex("^^"):]


def _columns(q: OracleQuery) -> tuple[str, ...]:
    if q.form == "construct":
        return ("s", "p", "o")
    if q.form == "ask":
        return ("ask",)
    if q.select_names:
        return q.select_names
    try:
        return Evaluator(q.sparql, q.source).names
    except TefqError:
        return ()


def r2s_rows(cells_list: list, previous: dict | None, op: str) -> tuple[list, dict | None]:
    """One window's R2S: Rstream keeps the relation as SPARQL gives it (a bag); Istream / Dstream
    are set differences with the previous window's relation (`previous`, None before the first;
    rows in the order SPARQL gave them). Returns the rows and what the next window compares with."""
    if op == "rstream":
        return list(cells_list), None
    keyed = {binding([str(k) for k in range(len(cells))], cells): cells for cells in cells_list}
    if op == "istream":
        return [cells for k, cells in keyed.items() if previous is None or k not in previous], keyed
    return ([] if previous is None else [cells for k, cells in previous.items() if k not in keyed]), keyed


# The public seam for the incremental evaluator (tefq.spark.kernels.windowed.windowed): the same objects.
Stream, result_columns, names_stream = _Stream, _columns, _names_stream

__all__ = ["run", "r2s_rows", "canonical_cell", "WindowedResults", "Stream", "result_columns", "names_stream",
           "report_instants"]
