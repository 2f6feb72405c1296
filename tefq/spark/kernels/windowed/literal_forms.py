"""rdflib's spelling of the plain xsd:double and xsd:dateTime literals, without an rdflib term.

The windowed engine prints every literal as rdflib would (`window_content.TermNormaliser`), and
building an rdflib `Literal` costs ~20 µs: on a sensor stream, whose every observation carries a
new value and a new result time, that was half of a query's time. rdflib 7 reads an xsd:double
with `float` and prints it with `str`; it reads an xsd:dateTime with `datetime.fromisoformat`
and prints it with `isoformat()`. Here the same two steps, for the plain spellings only; any
other literal (or one that does not parse) is rdflib's to spell (`None`).
tests/spark/kernels/test_literal_forms.py checks these spellings against rdflib's.
"""
from __future__ import annotations

import re
from datetime import datetime

XSD = "http://www.w3.org/2001/XMLSchema#"
PLAIN_DOUBLE = re.compile(r'"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"\^\^<http://www\.w3\.org/2001/XMLSchema#double>')
PLAIN_DATETIME = re.compile(r'"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|[+-]\d\d:\d\d)?)"'
                            r'\^\^<http://www\.w3\.org/2001/XMLSchema#dateTime>')


def rdflib_spelling(term: str) -> str | None:
    """The N-Triples term rdflib prints for `term`, or None when rdflib must decide it."""
    double = PLAIN_DOUBLE.fullmatch(term)
    if double:
        return f'"{float(double[1])}"^^<{XSD}double>'
    stamp = PLAIN_DATETIME.fullmatch(term)
    if stamp:
        try:
            value = datetime.fromisoformat(stamp[1])
        except ValueError:  # rdflib keeps an ill-typed lexical form as it is
            return None
        return f'"{value.isoformat()}"^^<{XSD}dateTime>'
    return None


__all__ = ["rdflib_spelling"]
