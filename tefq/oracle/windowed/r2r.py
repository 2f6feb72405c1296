"""R2R: the full SPARQL 1.1 query over one window's content, evaluated by rdflib (as CSRBench's
oracle used Sesame). C-SPARQL's `timestamp(?s, ?p, ?o)` is rewritten to an extension function
that returns the element's timestamp in the window (the latest one if it occurs more than once),
as an xsd:integer of ms; it is unbound for a triple not in the window (background).
"""
from __future__ import annotations

import contextvars
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

from rdflib import BNode, Graph, Literal, URIRef
from rdflib.namespace import XSD
from rdflib.plugins.sparql.algebra import translateQuery
from rdflib.plugins.sparql.evaluate import evalQuery
from rdflib.plugins.sparql.operators import register_custom_function
from rdflib.plugins.sparql.parser import parseQuery
from rdflib.plugins.sparql.sparql import SPARQLError
from rdflib.term import Node, Variable

import tefq.io.rdf  # noqa: F401 - sets rdflib to keep literals' lexical forms (see there)
from tefq.analysis.network import keyword_offset, refusal, remote_constructs
from tefq.syntax.sparql_text import stable_triple_order, star_order
from tefq.errors import TefqError
from tefq.oracle.windowed import corrections
from tefq.syntax.nesting import check_nesting, deep_recursion
from tefq.terms import XSD_INTEGER, is_blank, is_iri, literal, split_literal
from tefq.vocabulary import Element

Row = tuple[str | None, ...]

_TIMESTAMP_FN = URIRef("urn:tefq:fn:timestamp")
_timestamps: contextvars.ContextVar[dict] = contextvars.ContextVar("tefq_window_timestamps", default={})
TIMESTAMP_FN, window_timestamps = _TIMESTAMP_FN, _timestamps  # public: tefq.spark.kernels.windowed.sparql evaluates windows too


def _timestamp(s: Node, p: Node, o: Node) -> Literal:
    ts = _timestamps.get().get((s, p, o))
    if ts is None:
        raise SPARQLError("timestamp(): the triple is not in the window")
    return Literal(ts, datatype=URIRef(XSD_INTEGER))


try:
    register_custom_function(_TIMESTAMP_FN, _timestamp)
except ValueError:  # already registered (module reloaded)
    pass

_FLOATS = (XSD.double, XSD.float)
_XSD_SPECIALS = {"nan": "NaN", "inf": "INF", "-inf": "-INF"}


@lru_cache(maxsize=1 << 20)
def to_rdflib(nt: str) -> Node:
    """An N-Triples term as an rdflib term (cached: streams repeat terms a lot)."""
    if is_iri(nt):
        return URIRef(nt[1:-1])
    if is_blank(nt):
        return BNode(nt[2:])
    lex, dt, lang = split_literal(nt)
    return Literal(lex, datatype=URIRef(dt) if dt else None, lang=lang)


def to_nt(term: Node | None) -> str | None:
    """An rdflib term as an N-Triples term (None stays None): the one rdflib -> N-Triples conversion."""
    if term is None:
        return None
    if isinstance(term, URIRef):
        return f"<{term}>"
    if isinstance(term, BNode):
        return f"_:{term}"
    if isinstance(term, Literal):
        lexical = str(term)
        if term.datatype in _FLOATS:  # rdflib spells a NaN or an infinity it computed as Python does
            lexical = _XSD_SPECIALS.get(lexical, lexical)
        return literal(lexical, str(term.datatype) if term.datatype else None, term.language)
    raise ValueError(f"unsupported RDF term {term!r}")


def _rewrite_timestamp(sparql: str) -> str:
    # only the call form `timestamp(`, not a prefixed name or variable called timestamp
    return re.sub(r"(?<![\w:?$<])timestamp\s*\(", f"<{_TIMESTAMP_FN}>(", sparql, flags=re.I)


def _reorder_bgps(node: object, seen: set | None = None) -> None:
    """Order each BGP's patterns so that every pattern after the first joins what is already
    bound: rdflib joins in list order, and its own order (most constants first) makes a cross
    product of CSRBench's Q6/Q7 self-joins (two `?x observedProperty C` patterns)."""
    from rdflib.plugins.sparql.parserutils import CompValue

    seen = set() if seen is None else seen
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, CompValue):
        if node.name == "BGP" and node.get("triples"):
            node["triples"] = _join_order(stable_triple_order(list(node["triples"])))
            node["_tefq_ordered"] = True
        for v in node.values():
            _reorder_bgps(v, seen)
    elif isinstance(node, (list, tuple)):
        for v in node:
            _reorder_bgps(v, seen)


def _predicates(algebra: object) -> frozenset[str] | None:
    """The N-Triples predicates of every triple pattern, or None when some predicate is a
    variable or a path (then every triple may matter)."""
    from rdflib.plugins.sparql.parserutils import CompValue

    found: set[str] = set()
    seen: set[int] = set()

    def walk(node: object) -> bool:
        if id(node) in seen:
            return True
        seen.add(id(node))
        if isinstance(node, CompValue):
            if node.name in ("BGP", "TriplesBlock"):  # TriplesBlock: the graph of a FILTER (NOT) EXISTS
                for t in node.get("triples") or []:
                    # an EXISTS block's parse tree keeps `;` lists flat (s p o p o ...): any other
                    # shape, like a path or a variable predicate, means every triple may matter
                    if len(t) != 3 or not isinstance(t[1], URIRef):
                        return False
                    found.add(f"<{t[1]}>")
            if node.name == "DescribeQuery":
                return False
            return all(walk(v) for k, v in node.items() if k != "template")
        if isinstance(node, (list, tuple)):
            return all(walk(v) for v in node)
        return True

    return frozenset(found) if walk(algebra) else None


def _ordered_bgp(ctx, part):
    """rdflib's CUSTOM_EVALS hook: evaluate our ordered BGPs in our order (rdflib would re-sort
    them by unbound terms, which puts both `?x observedProperty C` patterns first)."""
    if part.name != "BGP" or not part.get("_tefq_ordered"):
        raise NotImplementedError()
    from rdflib.plugins.sparql.evaluate import evalBGP

    return evalBGP(ctx, part.triples)


def _install_ordered_bgp() -> None:
    from rdflib.plugins.sparql import CUSTOM_EVALS

    CUSTOM_EVALS["tefq_ordered_bgp"] = _ordered_bgp


_install_ordered_bgp()
corrections.install()


def _join_order(patterns: list) -> list:
    bound: set = set()
    out = []
    rest = list(patterns)
    while rest:
        def score(t: tuple) -> tuple[int, int]:
            fixed = sum(1 for x in t if not isinstance(x, (Variable, BNode)) or x in bound)
            joins = any(x in bound for x in t if isinstance(x, (Variable, BNode)))
            return (int(joins or not bound), fixed)
        best = max(range(len(rest)), key=lambda i: (score(rest[i]), -i))
        t = rest.pop(best)
        out.append(t)
        bound.update(x for x in t if isinstance(x, (Variable, BNode)))
    return out


def _star_in_text_order(algebra, sparql: str) -> None:
    """`SELECT *`: the projection in the order the variables first appear in the text, not in
    the order of rdflib's set (a different one in every process: Spark's driver and workers)."""
    order = [Variable(n) for n in star_order(sparql, algebra["PV"])]
    algebra["PV"] = order
    if algebra.p.name == "Project":
        algebra.p["PV"] = order


def refuse_remote(algebra: object, sparql: str, source: str, line_offset: int) -> None:
    """A query that would reach the network (SERVICE) is a located TefqError before any window:
    `tefq run` refuses it when binding, this covers the queries `tefq oracle` reads itself."""
    remote = remote_constructs(algebra)
    if remote:
        at = keyword_offset(sparql, remote[0])
        line = sparql.count("\n", 0, at) + 1 + line_offset if at >= 0 else 0
        column = at - (sparql.rfind("\n", 0, at) + 1) + 1 if at >= 0 else 0
        raise TefqError(refusal(remote[0]), source, line, column)


@dataclass
class Answer:
    """What R2R gives for one window: SELECT rows, CONSTRUCT triples, or ASK's boolean as a row."""

    names: tuple[str, ...]
    rows: list[Row]
    triples: list[tuple[str, str, str]]


class Evaluator:
    """One prepared query; `evaluate(content)` runs it over a window's elements + background."""

    def __init__(self, sparql: str, source: str = "<query>", background: Iterable[tuple[str, str, str]] = (),
                 line_offset: int = 0, line: int = 0) -> None:
        self.sparql = sparql
        check_nesting(sparql, source)  # rdflib recurses ~30 frames a level: deep_recursion below
        try:
            with deep_recursion():
                parsed = parseQuery(_rewrite_timestamp(sparql))
                self.query = translateQuery(parsed)
        except Exception as e:  # pyparsing.ParseException and rdflib's own errors
            line = getattr(e, "lineno", 0) or getattr(e, "line", 0)
            col = getattr(e, "col", 0) or getattr(e, "column", 0)
            msg = getattr(e, "msg", None) or str(e).splitlines()[0]
            raise TefqError(f"SPARQL syntax error: {msg}", source,
                            (line + line_offset) if isinstance(line, int) else 0,
                            col if isinstance(col, int) else 0) from None
        with deep_recursion():
            refuse_remote(self.query.algebra, sparql, source, line_offset)
            if self.query.algebra.name == "SelectQuery" and "projection" not in parsed[1]:
                _star_in_text_order(self.query.algebra, sparql)
            # FROM <iri> names background the caller supplies; never let rdflib fetch it
            if "datasetClause" in self.query.algebra:
                self.query.algebra["datasetClause"] = None
            _reorder_bgps(self.query.algebra)
            corrections.corrected(self.query.algebra)
            self.predicates = _predicates(self.query.algebra)
        self.uses_timestamp = str(_TIMESTAMP_FN) in _rewrite_timestamp(sparql)
        self.form = self.query.algebra.name  # SelectQuery | ConstructQuery | AskQuery | DescribeQuery
        self.names: tuple[str, ...] = tuple(str(v) for v in self.query.algebra.get("PV", []) or [])
        self.background = [tuple(to_rdflib(x) for x in t) for t in background]
        self.source, self.line = source, line

    def evaluate(self, content: Sequence[Element]) -> Answer:
        g = Graph(store="SimpleMemory")  # one default graph: no context indexes to keep (the 459 W3C tests pass)
        stamps: dict = {}
        wanted = self.predicates
        for ts, s, p, o in content:
            if wanted is not None and p not in wanted:
                continue  # no pattern can match it: keep the window graph small
            t = (to_rdflib(s), to_rdflib(p), to_rdflib(o))
            g.add(t)
            if self.uses_timestamp and stamps.get(t, -1) < ts:
                stamps[t] = ts
        for t in self.background:
            g.add(t)
        token = _timestamps.set(stamps)
        try:  # rdflib evaluates lazily: consume the solutions while the timestamps are set
            with deep_recursion():
                return self._answer(evalQuery(g, self.query, {}))
        except TefqError:
            raise
        except Exception as e:  # an evaluation error is the query's fault, not an internal one
            raise TefqError(f"SPARQL evaluation failed: {e}", self.source, self.line) from None
        finally:
            _timestamps.reset(token)

    def _answer(self, res) -> Answer:
        """The rows (or triples, or the boolean) of rdflib's lazy result `res`, consumed now."""
        if self.form == "AskQuery":
            return Answer(("ask",), [(to_nt(Literal(bool(res["askAnswer"]))),)], [])
        if self.form in ("ConstructQuery", "DescribeQuery"):
            return Answer(("s", "p", "o"), [],
                          [(to_nt(s), to_nt(p), to_nt(o)) for s, p, o in res["graph"]])  # type: ignore[misc]
        names = self.names  # a solution whose variables are all unbound is a row too
        rows = [tuple(to_nt(b.get(Variable(n))) for n in names) for b in res["bindings"]]
        return Answer(names, rows, [])


@lru_cache(maxsize=4096)
def prepared(sparql: str, source: str = "<query>", background: tuple[tuple[str, str, str], ...] = (),
             line: int = 0) -> Evaluator:
    """The one `Evaluator` of a query text (its parse and translation cost ~50 ms; the windowed
    operator prepares a document's queries in every micro-batch, a worker process keeps them).
    Shared within a process, so for one thread at a time (rdflib's expressions hold the solution
    being evaluated): Spark's Python workers run one task each; the oracle makes its own."""
    return Evaluator(sparql, source, background, line=line)
