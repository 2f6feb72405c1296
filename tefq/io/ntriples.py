"""Parsing and normalising RDF terms written in N-Triples syntax (plus a few Turtle shorthands).

Every stream reader funnels its terms through `normalise_term` so engines only ever see the one
form of `tefq.terms`: IRIs `<...>` with UCHAR escapes decoded, literals re-escaped by
`tefq.terms.literal` (explicit datatype except plain/lang strings, `xsd:string` dropped, language
tags lowercased), blank nodes `_:label`.

Accepted beyond strict N-Triples (documented in docs/formats.md): Turtle numbers and booleans
(`42`, `1.5`, `1e3`, `true`), datatypes named with a predeclared prefix (`"5"^^xsd:int`), and
YABench's unquoted typed literal (`62.0^^<...#float>`).
"""
from __future__ import annotations

import re

from tefq import terms

# Fast paths: terms already in normal form are returned unchanged (the common case).
_IRI_BODY = r'[A-Za-z][A-Za-z0-9+.\-]*:[^\x00-\x20<>"{}|^`\\]*'
IRI_FAST = r"<" + _IRI_BODY + r">"
BNODE_FAST = r"_:[A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_\-])?"
LIT_FAST = r'"[^"\\\n\r\t]*"(?:@[a-z]+(?:-[a-z0-9]+)*|\^\^<' + _IRI_BODY + r">)?"
XSD_STRING_SUFFIX = "^^<" + terms.XSD_STRING + ">"
_FAST = re.compile(r"(?:%s|%s|%s)" % (IRI_FAST, BNODE_FAST, LIT_FAST))

# Full tokenizer, used when the fast path fails and by the line-based RDF readers.
_UCHAR = r"\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8}"
_PN_START = "A-Za-z0-9_\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff\u200c-\u200d" \
            "\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd\U00010000-\U000effff"
_PN_MORE = _PN_START + r"\-\u00b7\u0300-\u036f\u203f-\u2040"
_BNODE = r"_:[%s](?:[%s.]*[%s])?" % (_PN_START, _PN_MORE, _PN_MORE)
_STRING = r'"(?:[^"\\\n\r]|\\[tbnrf"\'\\]|%s)*"' % _UCHAR
_NUMBER = r"[+-]?(?:[0-9]+\.[0-9]*[eE][+-]?[0-9]+|\.[0-9]+[eE][+-]?[0-9]+|[0-9]+[eE][+-]?[0-9]+|[0-9]*\.[0-9]+|[0-9]+)"

_IRI_ANY = r'<(?:[^\x00-\x20<>"{}|^`\\]|%s)*>' % _UCHAR


def _named(name: str, pattern: str) -> str:
    return f"(?P<{name}>{pattern})"


_TOKEN = re.compile(
    "|".join((
        _named("iri", _IRI_ANY),
        _named("bnode", _BNODE),
        _named("str", _STRING)
        + "(?:@" + _named("lang", r"[a-zA-Z]+(?:-[a-zA-Z0-9]+)*")
        + r"|\^\^(?:" + _named("dt", _IRI_ANY) + "|" + _named("pfx", "[A-Za-z][A-Za-z0-9_\\-]*") + ":"
        + _named("local", "[A-Za-z0-9_](?:[A-Za-z0-9_.\\-]*[A-Za-z0-9_\\-])?") + "))?",
        _named("bare", _NUMBER + "|true|false") + r"(?:\^\^" + _named("bdt", _IRI_ANY) + ")?",
    )))
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_ESC = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.S)
_ECHAR = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}
_PREFIXES = dict(terms.PREDECLARED_PREFIXES)


class TermError(ValueError):
    """A term that is not valid; `pos` is the 0-based offset in the text being parsed."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.pos = pos


def _unescape(raw: str, pos: int) -> str:
    if "\\" not in raw:
        return raw

    def one(m: re.Match) -> str:
        code = m.group(1) or m.group(2)
        if code:
            cp = int(code, 16)
            if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
                raise TermError(f"invalid code point escape \\u{code}", pos)
            return chr(cp)
        return _ECHAR[m.group(3)]

    return _ESC.sub(one, raw)


def _iri(raw: str, pos: int) -> str:
    value = _unescape(raw, pos)
    if not _SCHEME.match(value):
        raise TermError(f"IRI <{value}> is not absolute (no scheme)", pos)
    if re.search(r'[\x00-\x20<>"{}|^`\\]', value):
        raise TermError(f"IRI <{value}> contains a character IRIs may not contain", pos)
    return terms.iri(value)


def _bare_datatype(text: str) -> str:
    if text in ("true", "false"):
        return terms.XSD_BOOLEAN
    if "e" in text or "E" in text:
        return terms.XSD_DOUBLE
    if "." in text:
        return terms.XSD_DECIMAL
    return terms.XSD_INTEGER


def scan_term(text: str, pos: int = 0) -> tuple[str, int]:
    """Parse one term at `pos` (no leading blanks); return (normalised term, end offset)."""
    m = _TOKEN.match(text, pos)
    if not m:
        raise TermError(_describe_bad(text, pos), pos)
    end = m.end()
    if m.group("iri") is not None:
        return _iri(m.group("iri")[1:-1], pos), end
    if m.group("bnode") is not None:
        return m.group("bnode"), end
    if m.group("str") is not None:
        lex = _unescape(m.group("str")[1:-1], pos)
        lang, dt_raw, pfx, local = m.group("lang"), m.group("dt"), m.group("pfx"), m.group("local")
        if lang:
            return terms.literal(lex, lang=lang), end
        if dt_raw is not None:
            return terms.literal(lex, terms.iri_value(_iri(dt_raw[1:-1], pos))), end
        if pfx is not None:
            if pfx not in _PREFIXES:
                raise TermError(f"unknown prefix '{pfx}:' in datatype (only rdf, rdfs, xsd, owl, prov)", pos)
            return terms.literal(lex, _PREFIXES[pfx] + local), end
        return terms.literal(lex), end
    bare = m.group("bare")
    dt_raw = m.group("bdt")
    datatype = terms.iri_value(_iri(dt_raw[1:-1], pos)) if dt_raw is not None else _bare_datatype(bare)
    return terms.literal(bare, datatype), end


def _describe_bad(text: str, pos: int) -> str:
    rest = text[pos:pos + 40].split("\t")[0].rstrip("\r\n")
    if not rest:
        return "expected an RDF term, found the end of the line"
    if rest.startswith("<"):
        return f"malformed IRI {rest!r} (unterminated, or contains a space or one of <>\"{{}}|^`\\)"
    if rest.startswith('"'):
        return f"malformed literal {rest!r} (unterminated, bad escape or bad language/datatype)"
    if rest.startswith("_:"):
        return f"malformed blank node {rest!r}"
    return f"expected an RDF term (<iri>, \"literal\", _:blank), found {rest!r}"


def normalise_term(text: str) -> str:
    """One whole cell -> the normal N-Triples form; raises TermError (pos = offset in `text`)."""
    if _FAST.fullmatch(text) and not text.endswith(XSD_STRING_SUFFIX):
        return text
    term, end = scan_term(text, 0)
    if end != len(text):
        raise TermError(f"unexpected text after the term: {text[end:end + 30]!r}", end)
    return term


def check_position(term: str, role: str, pos: int = 0) -> None:
    """RDF's rules: subjects are IRIs or blank nodes, predicates IRIs (graph names as subjects)."""
    if role == "p" and not term.startswith("<"):
        raise TermError(f"the predicate must be an IRI, found {term}", pos)
    if role in ("s", "g") and term.startswith('"'):
        raise TermError(f"the {'subject' if role == 's' else 'graph name'} must be an IRI or blank node, "
                        f"found the literal {term}", pos)
