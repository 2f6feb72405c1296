"""Which variables can never bind a literal, for the plans that count or split by term code.

A DISTINCT aggregate keeps one of each *value* (docs/semantics.md): `"1"` and `"01"^^xsd:integer`,
or one instant written in two time zones, are two terms with two codes but one value. A kernel that
counts distinct codes, or a split that puts a variable's codes in buckets and adds the buckets'
distinct counts, is exact only for a variable that binds IRIs and blank nodes alone. Subjects and
predicates of stream elements and background triples are never literals (the readers refuse them),
so a variable bound there — directly, or through the identity column of a fact it was bound from
in a SINCE clause — is literal-free. Anything else may bind a literal, and such a query goes to the
general kernels, which compare values.
"""
from __future__ import annotations

from tefq.plan.logical import Document, EventFact, Pattern, Term, Var, WherePattern
from tefq.spark.planning.common import Refusal


def positions(pattern: Pattern, name: str) -> list[int]:
    """Where (0 subject, 1 predicate, 2 object) `pattern` has `?name`."""
    return [i for i, node in enumerate((pattern.s, pattern.p, pattern.o)) if node == Var(name)]


def fact_column_literal_free(doc: Document, fact: str, col: int) -> bool:
    """Whether identity column `col` of `fact` holds IRIs and blank nodes only: for an event fact,
    every SINCE clause (the only ones that open facts) binds it at a subject or predicate of its
    trigger or of a background pattern; for a derived fact, some body pattern binds it so."""
    f = doc.fact(fact)
    name = f.identity[col].name
    if isinstance(f, EventFact):
        return all(any(i < 2 for p in (c.trigger, *c.background) for i in positions(p, name)) for c in f.since)
    return any(binds_literal_free(doc, wp, name) for wp in f.body)


def binds_literal_free(doc: Document, wp: WherePattern, name: str) -> bool:
    """Whether pattern `wp` binds `?name` to IRIs and blank nodes only (a solution must match every
    pattern of a conjunction, so one such pattern is enough)."""
    at = positions(wp.pattern, name)
    if wp.kind in ("event", "background"):
        return any(i < 2 for i in at)
    return bool(at) and all(any(template_literal_free(doc, fact, i) for i in at) for fact in wp.facts)


def template_literal_free(doc: Document, fact: str, i: int) -> bool:
    """Whether position `i` of `fact`'s template holds no literal."""
    f = doc.fact(fact)
    node = (f.template.s, f.template.p, f.template.o)[i]
    if isinstance(node, Term):
        return not node.nt.startswith('"')
    return fact_column_literal_free(doc, fact, [v.name for v in f.identity].index(node.name))


def literal_free(doc: Document, where: tuple[WherePattern, ...], name: str) -> bool:
    """Whether a WHERE (a conjunction) binds `?name` to IRIs and blank nodes only."""
    return any(binds_literal_free(doc, wp, name) for wp in where)


def distinct_codes_refusal(doc: Document, fact: str, cols: list[int], span) -> Refusal | None:
    """The CURRENT and fact operators count a COUNT DISTINCT's codes: a Refusal (the general
    kernels count values) when one of `fact`'s counted columns `cols` may hold a literal."""
    if all(fact_column_literal_free(doc, fact, c) for c in cols):
        return None
    return Refusal.at("COUNT DISTINCT over a variable that may bind a literal", span)
