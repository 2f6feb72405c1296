"""The syntax tree of a .tef document: what was written, with where it was written.

Nothing here is resolved yet (prefixed names stay prefixed, names are not checked): the bind step
(`tefq.analysis`) turns this into the logical plan and owns every semantic error. Each node keeps
a `Span` (line/column, for messages); nodes whose text matters later also keep character offsets
(`start`, `end`) into the source.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal as TypingLiteral, Union

from tefq.errors import Span

_NOSPAN = Span()


# ---------------------------------------------------------------- terms
@dataclass(frozen=True)
class Var:
    name: str  # without `?`/`$`
    span: Span = field(default=_NOSPAN, compare=False)


@dataclass(frozen=True)
class IriRef:
    """`<...>` as written (may be relative to BASE)."""

    iri: str
    span: Span = field(default=_NOSPAN, compare=False)


@dataclass(frozen=True)
class PName:
    """A prefixed name `prefix:local` (`local` already unescaped)."""

    prefix: str
    local: str
    span: Span = field(default=_NOSPAN, compare=False)


Iri = Union[IriRef, PName]


@dataclass(frozen=True)
class Literal:
    """A literal; numbers and booleans get their XSD datatype as an absolute IriRef."""

    lexical: str
    datatype: Iri | None = None
    lang: str | None = None
    span: Span = field(default=_NOSPAN, compare=False)


@dataclass(frozen=True)
class BNode:
    label: str
    span: Span = field(default=_NOSPAN, compare=False)


Term = Union[Var, IriRef, PName, Literal, BNode]


# ---------------------------------------------------------------- expressions
@dataclass(frozen=True)
class Call:
    """Operator or function application; `op` as in `tefq.plan.logical.Call`, except that a
    function IRI stays unresolved in `func`."""

    op: str
    args: tuple["Expr", ...]
    func: Iri | None = None  # for op == "call"
    distinct: bool = False  # `f(DISTINCT ...)` (only meaningful for aggregates)
    span: Span = field(default=_NOSPAN, compare=False)


@dataclass(frozen=True)
class AggregateCall:
    """A SPARQL aggregate inside an expression (`COUNT(?x)`, `GROUP_CONCAT(...)`)."""

    func: str
    arg: "Expr | None"  # None for `*`
    distinct: bool = False
    span: Span = field(default=_NOSPAN, compare=False)


@dataclass(frozen=True)
class Exists:
    negated: bool
    span: Span = field(default=_NOSPAN, compare=False)


Expr = Union[Var, IriRef, PName, Literal, BNode, Call, AggregateCall, Exists]


# ---------------------------------------------------------------- TEF patterns
@dataclass(frozen=True)
class Triple:
    s: Term
    p: Term
    o: Term
    span: Span = field(default=_NOSPAN, compare=False)


@dataclass(frozen=True)
class PatternElem:
    """A WHERE / body element: a triple pattern, maybe CURRENT, maybe with `[?S, ?E]`."""

    triple: Triple
    current: bool = False
    interval: tuple[Var, Var] | None = None
    span: Span = field(default=_NOSPAN, compare=False)


@dataclass(frozen=True)
class FilterElem:
    expr: Expr
    span: Span = field(default=_NOSPAN, compare=False)


Elem = Union[PatternElem, FilterElem]


# ---------------------------------------------------------------- prologue
@dataclass(frozen=True)
class BaseDecl:
    iri: str
    span: Span = field(default=_NOSPAN, compare=False)


@dataclass(frozen=True)
class PrefixDecl:
    prefix: str  # without the colon
    iri: str
    span: Span = field(default=_NOSPAN, compare=False)


Decl = Union[BaseDecl, PrefixDecl]


# ---------------------------------------------------------------- facts
@dataclass(frozen=True)
class FactClause:
    kind: TypingLiteral["SINCE", "UNTIL"]
    patterns: tuple[Triple, ...]  # the first is the trigger
    filters: tuple[FilterElem, ...]
    span: Span = field(default=_NOSPAN, compare=False)


@dataclass(frozen=True)
class FactDef:
    name: str | None
    template: Triple
    clauses: tuple[FactClause, ...] | None  # event-driven fact; None for a derived fact
    body: tuple[Elem, ...] = ()  # derived fact
    span: Span = field(default=_NOSPAN, compare=False)


# ---------------------------------------------------------------- queries
@dataclass(frozen=True)
class Register:
    kind: TypingLiteral["QUERY", "STREAM", "RSTREAM", "ISTREAM", "DSTREAM"]  # the last three: RSP-QL
    name: str
    decls: tuple[Decl, ...]
    span: Span = field(default=_NOSPAN, compare=False)


@dataclass(frozen=True)
class SelectItem:
    """A SELECT item: `expr`, `expr AS Name`, or SPARQL's `(expr AS ?v)`; `name` is as written,
    without `?`, or None."""

    expr: Expr
    name: str | None
    span: Span = field(default=_NOSPAN, compare=False)


@dataclass(frozen=True)
class AggItem:
    """An aggregate of an `(AGGREGATE ...)` block; `arg` None for `COUNT(*)`."""

    func: str
    arg: Expr | None
    distinct: bool
    alias: Var | None
    span: Span = field(default=_NOSPAN, compare=False)


@dataclass(frozen=True)
class Duration:
    """A duration as written (`10s`, `"PT1M"^^xsd:duration`, ...): checked by the bind step."""

    text: str
    datatype: Iri | None = None
    span: Span = field(default=_NOSPAN, compare=False)


@dataclass(frozen=True)
class WhileClause:
    elem: PatternElem
    span: Span = field(default=_NOSPAN, compare=False)


@dataclass(frozen=True)
class AggregateBlock:
    leading_vars: tuple[Var, ...]
    aggregates: tuple[AggItem, ...]
    where: tuple[Elem, ...]
    group_by: tuple[Var, ...] | None
    while_: WhileClause | None
    every: Duration | None
    span: Span = field(default=_NOSPAN, compare=False)
    having: tuple[Expr, ...] = ()  # HAVING's constraints, all of which a reported group meets


@dataclass(frozen=True)
class AggregateQuery:
    register: Register | None
    select: tuple[SelectItem, ...]
    block: AggregateBlock
    span: Span = field(default=_NOSPAN, compare=False)


@dataclass(frozen=True)
class StreamClause:
    iri: Iri | None
    range: Duration | None
    step: Duration | None  # None with TUMBLING or without a window
    tumbling: bool
    start: int  # character offsets of the whole `FROM STREAM ...` clause
    end: int
    span: Span = field(default=_NOSPAN, compare=False)
    name: Iri | None = None  # RSP-QL's `FROM NAMED WINDOW <name> ON <iri> [...]`
    elements: int | None = None  # RSP-QL's count window `[ELEMENTS n ...]` (refused by bind)


@dataclass(frozen=True)
class WindowPattern:
    """RSP-QL's `WINDOW <w> { ... }` inside WHERE: `start`..`end` are the offsets of the
    `WINDOW <w>` header, which the bind step cuts from the static SPARQL text."""

    name: Iri | Var
    start: int
    end: int
    span: Span = field(default=_NOSPAN, compare=False)


@dataclass(frozen=True)
class WindowedQuery:
    """A C-SPARQL-style query (spec §8). The SPARQL body is not modelled: the bind step cuts the
    text (`start`..`end` minus the stream clauses) and lets rdflib check and translate it."""

    register: Register | None
    form: TypingLiteral["select", "construct", "ask"]
    select: tuple[SelectItem, ...] | None  # None for `SELECT *`, CONSTRUCT and ASK
    streams: tuple[StreamClause, ...]
    graphs: tuple[Iri, ...]  # FROM <iri>
    named_graphs: tuple[Iri, ...]
    has_where: bool
    every: Duration | None  # an EVERY here is an error (it belongs in an AGGREGATE block)
    start: int  # offsets of the query text after the REGISTER header (its prologue included)
    end: int
    timestamp_calls: tuple[tuple[int, int], ...] = ()  # offsets of C-SPARQL `timestamp` names
    pnames: tuple[PName, ...] = ()  # every prefixed name in the query text (for prefix checks)
    span: Span = field(default=_NOSPAN, compare=False)
    window_patterns: tuple[WindowPattern, ...] = ()  # RSP-QL `WINDOW <w> { ... }`
    rewrites: tuple[tuple[int, int, str], ...] = ()  # (start, end, text): SPARQL rdflib reads right


Statement = Union[FactDef, AggregateQuery, WindowedQuery]


@dataclass(frozen=True)
class Document:
    decls: tuple[Decl, ...]  # document-level BASE / PREFIX, in order
    statements: tuple[Statement, ...]
