"""RDF terms in N-Triples form, the one representation every part of tefq shares.

Readers produce `(ts, s, p, o)` with `s p o` in this form, the plan holds constants in it, and
engines emit result cells in it; only the edges (expression evaluation, result writers) look
inside a term. Literals are always written with an explicit datatype IRI except plain strings
(`"x"`) and language-tagged strings (`"x"@en`).
"""
from __future__ import annotations

import re

XSD = "http://www.w3.org/2001/XMLSchema#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
OWL = "http://www.w3.org/2002/07/owl#"
PROV = "http://www.w3.org/ns/prov#"

PREDECLARED_PREFIXES: tuple[tuple[str, str], ...] = (
    ("rdf", RDF), ("rdfs", RDFS), ("xsd", XSD), ("owl", OWL), ("prov", PROV),
)

XSD_INTEGER = XSD + "integer"
XSD_DECIMAL = XSD + "decimal"
XSD_DOUBLE = XSD + "double"
XSD_BOOLEAN = XSD + "boolean"
XSD_STRING = XSD + "string"
XSD_DATETIME = XSD + "dateTime"
XSD_DURATION = XSD + "duration"

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNESCAPES = {"\\": "\\", '"': '"', "n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "'": "'"}


def iri(value: str) -> str:
    """`http://x` -> `<http://x>`."""
    return f"<{value}>"


def literal(lexical: str, datatype: str | None = None, lang: str | None = None) -> str:
    """A literal in N-Triples form; `datatype` is a full IRI without brackets."""
    body = '"' + "".join(_ESCAPES.get(c, c) for c in lexical) + '"'
    if lang:
        return f"{body}@{lang.lower()}"
    if datatype and datatype != XSD_STRING:
        return f"{body}^^<{datatype}>"
    return body


def is_iri(term: str) -> bool:
    return term.startswith("<")


def is_literal(term: str) -> bool:
    return term.startswith('"')


def is_blank(term: str) -> bool:
    return term.startswith("_:")


def iri_value(term: str) -> str:
    """`<http://x>` -> `http://x`."""
    return term[1:-1]


_LITERAL = re.compile(r'^"((?:[^"\\]|\\.)*)"(?:\^\^<([^>]*)>|@([A-Za-z0-9-]+))?$', re.S)
_UNICODE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")


def split_literal(term: str) -> tuple[str, str | None, str | None]:
    """`"lex"^^<dt>` -> (lexical, datatype IRI or None, language or None). Raises ValueError."""
    m = _LITERAL.match(term)
    if not m:
        raise ValueError(f"not an N-Triples literal: {term}")
    raw, dt, lang = m.groups()
    lex = re.sub(r"\\(.)", lambda e: _UNESCAPES.get(e.group(1), "\\" + e.group(1)), raw) if "\\" in raw else raw
    if "\\u" in raw or "\\U" in raw:
        lex = _UNICODE.sub(lambda e: chr(int(e.group(1) or e.group(2), 16)), raw)
        lex = re.sub(r"\\([\\\"nrtbf'])", lambda e: _UNESCAPES[e.group(1)], lex)
    return lex, dt, lang
