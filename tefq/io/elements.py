"""What the stream readers (`tefq.io.readers`) and the RDF readers (`tefq.io.rdf`) share: the
element type, one N-Quads / YABench statement line, and giving quads their named graph's time."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from tefq import terms
from tefq.errors import TefqError
from tefq.io.bad_rows import STRICT, BadRow, BadRowLog
from tefq.io.ntriples import TermError, check_position, scan_term
from tefq.io.timestamps import literal_ms
from tefq.io.validate import RANGE_HINT, TS_MAX, TS_MIN, Fault, term_fault
from tefq.vocabulary import Element


# Predicates that give a named graph its time; their triples are metadata, not stream elements.
TIME_PREDICATES = (
    terms.iri(terms.PROV + "generatedAtTime"),
    "<http://www.streamreasoning.org/schema/benchmark#hasTimestamp>",
)

_WS = re.compile(r"[ \t]*")


def statement(line: str, path: str, lineno: int, fourth: str) -> tuple[str, str, str, str | None] | None:
    """`parse_statement` with its fault raised as a located BadRow (exit 2)."""
    try:
        return parse_statement(line, fourth)
    except Fault as fault:
        raise BadRow(fault, path, lineno, line) from None


def parse_statement(line: str, fourth: str) -> tuple[str, str, str, str | None] | None:
    """Parse `s p o [x] .`; `fourth` is "graph" (N-Quads) or "time" (YABench). None = blank line.
    Raises Fault (bad-term, bad-escape, term-position or bad-statement)."""
    pos = _WS.match(line).end()
    if pos == len(line) or line[pos] == "#":
        return None
    out: list[str] = []
    try:
        for role in ("s", "p", "o", "x"):
            if role == "x" and line.startswith(".", pos):
                break
            term, end = scan_term(line, pos)
            check_position(term, role if role != "x" else ("g" if fourth == "graph" else "o"), pos)
            out.append(term)
            pos = _WS.match(line, end).end()
    except TermError as e:
        fault = term_fault(line[e.pos:].split(" ", 1)[0], "", e)
        fault.offset = e.pos
        raise fault from None
    if not line.startswith(".", pos):
        raise Fault("bad-statement", pos, "expected '.' at the end of the statement")
    pos = _WS.match(line, pos + 1).end()
    if pos != len(line) and line[pos] != "#":
        raise Fault("bad-statement", pos, f"unexpected text after '.': {line[pos:pos + 30]!r}")
    return out[0], out[1], out[2], (out[3] if len(out) == 4 else None)


def time_literal(term: str, offset: int) -> int:
    """A graph time or YABench timestamp literal -> ms, or Fault (bad-timestamp, timestamp-range)."""
    try:
        ts = literal_ms(term)
    except ValueError as e:
        raise Fault("bad-timestamp", offset, str(e)) from None
    if not TS_MIN <= ts <= TS_MAX:
        raise Fault("timestamp-range", offset, f"timestamp {term} is {RANGE_HINT}")
    return ts


def timestamp_graphs(quads: Iterable[tuple[int, str, str, str, str | None, str]], path: str,
                      locate: Callable[[str], tuple[int, str]] | None, log: BadRowLog = STRICT) -> Iterator[Element]:
    """Give every quad its graph's time. Quads of a graph whose time is not known yet wait (in
    file order) until its time declaration arrives; a graph never given a time is an error.
    Quads come with their line number and text, or line 0 (TriG, via pyoxigraph) and then `locate`
    finds a line that mentions a term."""
    graph_ts: dict[str, int] = {}
    waiting: dict[str, list[tuple[str, str, str]]] = {}
    first_use: dict[str, tuple[int, str]] = {}
    for lineno, s, p, o, g, line in quads:
        if p in TIME_PREDICATES and o.startswith('"') and not s.startswith('"'):
            try:
                ms = time_literal(o, 0)
            except Fault as fault:
                at, text = (lineno, line) if lineno else locate(o)
                fault.offset = text.find(o) if text and lineno else 0
                log.report(fault, path, at, text or None, 1 if text and lineno else 0)
                continue
            if graph_ts.setdefault(s, ms) != ms:
                at, text = (lineno, line) if lineno else locate(s)
                raise TefqError(f"graph {s} is given two times: {graph_ts[s]} and {ms} ms", path, at,
                                source_line=text or None)
            for el in waiting.pop(s, ()):
                yield (ms, *el)
            continue
        if g is None:
            where = (lineno, line) if lineno else locate(s)
            raise TefqError(f"the triple {s} {p} {o} is in the default graph: every stream element "
                            "must be in a named graph that has a time (prov:generatedAtTime or "
                            "bench:hasTimestamp)", path, where[0], source_line=where[1] or None)
        ms = graph_ts.get(g)
        if ms is not None:
            yield ms, s, p, o
        else:
            waiting.setdefault(g, []).append((s, p, o))
            first_use.setdefault(g, (lineno, line))
    for g in waiting:
        lineno, line = first_use[g] if first_use[g][0] else locate(g)
        raise TefqError(f"graph {g} has no time: declare `{g} prov:generatedAtTime "
                        "\"...\"^^xsd:dateTime` (or CSRBench's bench:hasTimestamp \"ms\"^^xsd:long)",
                        path, lineno, source_line=line or None)
