"""RDF-library reading: TriG streams (pyoxigraph: fast, streaming) and background knowledge
(Turtle, N-Triples, TriG, N-Quads through rdflib): `load_background` reads it once for a run,
`background_as_ntriples` is the one conversion of a background, in whatever form it comes, to
N-Triples triples.

Kept apart from `tefq.io.readers` because both libraries are slow to import.
"""
from __future__ import annotations

import os
import pathlib
import warnings
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import pyoxigraph
import rdflib
from rdflib.plugins.parsers.notation3 import BadSyntax

from tefq import terms
from tefq.errors import TefqError
from tefq.io.ntriples import TermError, normalise_term
from tefq.io.elements import statement, timestamp_graphs
from tefq.io.limits import open_input
from tefq.io.sniff import HEAD_BYTES, refuse_binary, refuse_special
from tefq.vocabulary import Element, Triple
from tefq.syntax.nesting import first_bracket

# RDF terms keep their lexical form everywhere in tefq (docs/formats.md: `"01"^^xsd:integer` stays
# "01"; RDF 1.1 tells the two terms apart, SPARQL's `=` compares their values). rdflib would
# rewrite a valid literal to its canonical form when it builds it — in background graphs and in
# SPARQL queries alike (`sameTerm(?x, "01"^^xsd:integer)`): its switch for that, once, here.
rdflib.NORMALIZE_LITERALS = False


def _from_rdflib(t: rdflib.term.Node) -> str:
    if isinstance(t, rdflib.URIRef):
        return normalise_term(terms.iri(str(t)))
    if isinstance(t, rdflib.BNode):
        return "_:" + str(t)
    if isinstance(t, rdflib.Literal):
        dt = str(t.datatype) if t.datatype is not None else None
        return terms.literal(str(t), dt, t.language)
    raise TermError(f"unsupported RDF term {t!r}", 0)


def _read_bytes(path: str, gz: bool, fmt: str) -> bytes:
    """The (decompressed) bytes of an RDF file; one that starts like a binary format is refused
    (tefq.io.sniff)."""
    try:
        with open_input(path, gz) as f:
            data = f.read()
    except (OSError, EOFError, zlib.error) as e:
        raise TefqError(f"cannot read the file: {getattr(e, 'strerror', None) or e}", path) from None
    refuse_binary(data[:HEAD_BYTES], path, fmt)
    return data


def _parse_rdf(data: bytes, fmt: str, path: str, graph: rdflib.Graph) -> None:
    """rdflib parse with literals kept as written and errors located."""
    saved = rdflib.NORMALIZE_LITERALS
    rdflib.NORMALIZE_LITERALS = False  # keep lexical forms as written: "01"^^xsd:integer stays
    try:
        with warnings.catch_warnings():  # rdflib's own deprecation noise (ConjunctiveGraph)
            warnings.simplefilter("ignore", DeprecationWarning)
            graph.parse(data=data.decode("utf-8"), format=fmt, publicID=pathlib.Path(os.path.abspath(path)).as_uri())
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise TefqError("invalid UTF-8", path, line) from None
    except BadSyntax as e:
        text = data.decode("utf-8")
        offset = getattr(e, "_i", 0)
        line = text.count("\n", 0, offset) + 1
        col = offset - (text.rfind("\n", 0, offset) + 1) + 1
        lines = text.split("\n")
        src = lines[line - 1] if line <= len(lines) else None
        raise TefqError(f"{fmt} syntax error: {getattr(e, '_why', e)}", path, line, col, source_line=src) from None
    except TefqError:
        raise
    except Exception as e:  # rdflib's other parsers raise assorted exceptions without positions
        if fmt in ("nt", "nquads"):
            _locate_line_error(data.decode("utf-8"), path, "graph" if fmt == "nquads" else "none")
        raise TefqError(f"{fmt} parse error: {e}", path) from None
    finally:
        rdflib.NORMALIZE_LITERALS = saved


def _locate_line_error(text: str, path: str, fourth: str) -> None:
    """Re-read a line-based file with tefq's own parser to find where rdflib failed."""
    for lineno, line in enumerate(text.splitlines(), 1):
        st = statement(line, path, lineno, "graph")
        if st is not None and fourth == "none" and st[3] is not None:
            raise TefqError("N-Triples has three terms per line, found a fourth", path, lineno,
                            source_line=line)


def read_trig(path: str, gz: bool) -> Iterator[Element]:
    """A TriG stream, parsed by pyoxigraph (~20x rdflib's speed; literals keep their lexical form),
    each named graph's quads stamped with its time."""
    data = _read_bytes(path, gz, "trig")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TefqError("invalid UTF-8", path, data[:e.start].count(b"\n") + 1) from None

    def locate(term: str) -> tuple[int, str]:
        """Best effort line for a term (parsed quads carry no positions): its first textual mention."""
        if term.startswith('"'):
            term = term[:term.rfind('"') + 1]  # a literal: its quoted lexical form
        for probe in (term, term.strip("<>").rsplit("#", 1)[-1].rsplit("/", 1)[-1]):
            i = text.find(probe)
            if probe and i >= 0:
                line = text.count("\n", 0, i) + 1
                return line, text.split("\n")[line - 1]
        return 0, ""

    def quads() -> Iterator[tuple[int, str, str, str, str | None, str]]:
        term = _OxigraphTerms({})
        base = pathlib.Path(os.path.abspath(path)).as_uri()
        # lenient: TriG's grammar takes any `@[a-zA-Z]+(-[a-zA-Z0-9]+)*` language tag (rdflib did);
        # pyoxigraph would check BCP 47. Terms are checked by normalise_term anyway.
        try:
            for q in pyoxigraph.parse(data, pyoxigraph.RdfFormat.TRIG, base_iri=base, lenient=True):
                try:
                    g = None if isinstance(q.graph_name, pyoxigraph.DefaultGraph) else term(q.graph_name)
                    yield (0, term(q.subject), term(q.predicate), term(q.object), g, "")
                except TermError as e:
                    raise TefqError(str(e), path, *locate(str(q.subject))[:1]) from None
        except SyntaxError as e:
            raise _oxigraph_error(e, "trig", path, text) from None

    return timestamp_graphs(quads(), path, locate)


class _OxigraphTerms:
    """pyoxigraph terms -> tefq's N-Triples terms: `"x"^^xsd:string` is the plain `"x"` (as rdflib
    gives it), blank nodes are `_:trig1`, `_:trig2`, ... in order of appearance."""

    def __init__(self, bnodes: dict[str, str]) -> None:
        self.bnodes = bnodes
        self.memo: dict = {}  # streams repeat their terms: convert each once

    def __call__(self, t) -> str:
        nt = self.memo.get(t)
        if nt is None:
            nt = self.convert(t)
            if len(self.memo) < 1 << 16:
                self.memo[t] = nt
        return nt

    def convert(self, t) -> str:
        if isinstance(t, pyoxigraph.NamedNode):
            return normalise_term(terms.iri(t.value))
        if isinstance(t, pyoxigraph.BlankNode):
            return self.bnodes.setdefault(t.value, f"_:trig{len(self.bnodes) + 1}")
        if isinstance(t, pyoxigraph.Literal):
            dt = t.datatype.value
            return terms.literal(t.value, None if t.language or dt == _XSD_STRING else dt, t.language)
        raise TermError(f"unsupported RDF term {t!r}", 0)


_XSD_STRING = terms.XSD + "string"


def _oxigraph_error(e: SyntaxError, fmt: str, path: str, text: str) -> TefqError:
    """pyoxigraph's `Parser error at line L column C: why` as a located TefqError."""
    why = str(e).split(": ", 1)[-1] if str(e).startswith("Parser error") else str(e)
    line, col = e.lineno or 0, e.offset or 0
    lines = text.split("\n")
    src = lines[line - 1] if 0 < line <= len(lines) else None
    return TefqError(f"{fmt} syntax error: {why}", path, line, col, source_line=src)


_BACKGROUND_FORMATS = {"ttl": "turtle", "turtle": "turtle", "nt": "nt", "n3": "n3", "trig": "trig",
                       "nq": "nquads"}


def read_background(path: str) -> rdflib.Graph:
    """A static background graph (Turtle, N-Triples, TriG, N-Quads by extension; `.gz` too).
    TriG/N-Quads give a Dataset; their named graphs all count as background."""
    refuse_special(path, "background")
    if not os.path.isfile(path):
        raise TefqError("no such background file", path)
    name = os.path.basename(path).lower()
    gz = name.endswith(".gz")
    ext = (name[:-3] if gz else name).rsplit(".", 1)[-1]
    fmt = _BACKGROUND_FORMATS.get(ext)
    if fmt is None:
        raise TefqError(f"unknown background file type {os.path.basename(path)!r}: expected .ttl, .nt, "
                        ".n3, .trig or .nq (optionally .gz)", path)
    graph: rdflib.Graph = rdflib.Dataset() if fmt in ("trig", "nquads") else rdflib.Graph()
    data = _read_bytes(path, gz, fmt)
    _parse_rdf(data, fmt, path, graph)
    if fmt == "n3":
        _refuse_formulas(graph, data.decode("utf-8"), path)
    return graph


def _refuse_formulas(graph: rdflib.Graph, text: str, path: str) -> None:
    """Exit 2, at the first `{` (or `=>`), if an N3 background holds more than triples: a formula
    `{ … }`, a rule `=>`, a variable. A background is a set of triples."""
    plain = (rdflib.URIRef, rdflib.BNode, rdflib.Literal)
    if all(isinstance(t, plain) for triple in graph for t in triple):
        return

    offset = first_bracket(text, "{")
    if offset is None:
        offset = max(text.find("=>"), 0)
    line = text.count("\n", 0, offset) + 1
    start = text.rfind("\n", 0, offset) + 1
    error = TefqError("an N3 formula, rule or variable ({ … }, =>, ?x): tefq uses a background as a set of "
                      "triples; give the triples alone (Turtle or N-Triples)", path, line, offset - start + 1)
    raise error.located(path, text)


def background_as_ntriples(background: object) -> list[Triple]:
    """The background's triples as N-Triples strings, sorted and each once (so runs are
    deterministic), from any form it is handed over in: None (no triples), an rdflib Graph or
    Dataset (the union of its graphs), or an iterable of (s, p, o[, g]) tuples of rdflib terms or
    N-Triples strings (the picklable form Spark ships to its executors)."""
    if background is None:
        return []
    if isinstance(background, rdflib.ConjunctiveGraph):
        raw = {(s, p, o) for s, p, o, _ in background.quads((None, None, None, None))}
    elif isinstance(background, rdflib.Graph):
        raw = set(background.triples((None, None, None)))
    else:
        raw = {tuple(t[:3]) for t in background}  # type: ignore[attr-defined]
    return sorted({(_ntriples(s), _ntriples(p), _ntriples(o)) for s, p, o in raw})


def _ntriples(term: object) -> str:
    # rdflib's terms are str subclasses: test for them first
    return _from_rdflib(term) if isinstance(term, rdflib.term.Node) else str(term)


@dataclass(frozen=True)
class Background:
    """Background knowledge, read once for a run: the `graph` as rdflib holds it (what the Spark
    engine takes) and its `triples` in N-Triples form (what the oracle and the simulations join
    with); its `predicates` take part in binding the document."""

    graph: rdflib.Graph
    triples: tuple[Triple, ...]

    @property
    def predicates(self) -> frozenset[str]:
        return frozenset(p for _, p, _ in self.triples)


def load_background(source: str | os.PathLike | rdflib.Graph) -> Background:
    """A background file (see `read_background`) or an rdflib graph, as a Background."""
    graph = read_background(os.fspath(source)) if isinstance(source, (str, os.PathLike)) else source
    return Background(graph, tuple(background_as_ntriples(graph)))


def as_background(source: "str | os.PathLike | rdflib.Graph | Background | None") -> Background | None:
    """The background a run is handed (a file, an rdflib graph, a Background, or None), read once."""
    if source is None or isinstance(source, Background):
        return source
    return load_background(source)
