"""The logical plan: what a .tef document means, independent of any engine.

The bind step (`tefq.analysis`) produces a `Document`; the oracle, the Spark engine and the
simulations consume it. Terms are kept in N-Triples form (see `tefq.terms`) so that plan
constants compare directly with stream elements, which the readers also give in that form.
Everything here is frozen: plans are values.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal as TypingLiteral, Union

from tefq.errors import Span


# ---------------------------------------------------------------- terms and expressions
@dataclass(frozen=True)
class Var:
    """A variable, named without its `?`/`$` (`?_` is the variable `_`)."""

    name: str


@dataclass(frozen=True)
class Term:
    """An RDF term in N-Triples form: `<iri>`, `"lex"^^<dt>`, `"lex"@lang`, `"lex"`, `_:b`."""

    nt: str


Node = Union[Var, Term]


@dataclass(frozen=True)
class Call:
    """An operator or function application.

    `op` is one of `+ - * /` (binary), `neg` (unary minus), `= != < > <= >=`, `&& || !`,
    `in`/`notin` (first arg the tested value), an upper-case SPARQL built-in name (`BOUND`,
    `STR`, `IF`, `COALESCE`, `ABS`, ...), `DURATION` (TEF: seconds between two dateTimes), or a
    full IRI in angle brackets for casts and extension functions (`<http://www.w3.org/2001/XMLSchema#integer>`).
    """

    op: str
    args: tuple["Expr", ...]


Expr = Union[Var, Term, Call]


@dataclass(frozen=True)
class Pattern:
    """A triple pattern."""

    s: Node
    p: Node
    o: Node
    span: Span = field(default=Span(), compare=False)

    def shape(self) -> "PatternShape":
        """What an element must satisfy to match, by position (0 = s, 1 = p, 2 = o): the engines'
        matchers are built from this."""
        consts: list[tuple[int, str]] = []
        same: list[tuple[int, int]] = []
        first: dict[str, int] = {}
        for i, n in enumerate((self.s, self.p, self.o)):
            if isinstance(n, Term):
                consts.append((i, n.nt))
            elif n.name in first:
                same.append((first[n.name], i))
            else:
                first[n.name] = i
        return PatternShape(tuple(consts), tuple(same), first)

    def variables(self) -> tuple[Var, ...]:
        seen: list[Var] = []
        for n in (self.s, self.p, self.o):
            if isinstance(n, Var) and n not in seen:
                seen.append(n)
        return tuple(seen)


@dataclass(frozen=True)
class PatternShape:
    """A triple pattern as positions: constants `(position, term)`, pairs of positions that hold
    the same variable, and each variable's first position."""

    consts: tuple[tuple[int, str], ...]
    same: tuple[tuple[int, int], ...]
    first: dict[str, int]


# ---------------------------------------------------------------- facts
@dataclass(frozen=True)
class Clause:
    """A SINCE or UNTIL clause: the triggering event pattern, joined with background patterns,
    then filtered."""

    trigger: Pattern
    background: tuple[Pattern, ...] = ()
    filters: tuple[Expr, ...] = ()


@dataclass(frozen=True)
class EventFact:
    """An event-driven fact (spec §3.1): opened by SINCE events, closed by UNTIL events."""

    name: str  # user-given, else `fact1`, `fact2`, ... in document order
    template: Pattern
    identity: tuple[Var, ...]  # the template's variables, in template order
    since: tuple[Clause, ...]
    until: tuple[Clause, ...]
    span: Span = field(default=Span(), compare=False)
    named: bool = True  # False: `name` was made up (`fact1`); the fact table shows the template (spec §12)


PatternKind = TypingLiteral["current", "fact", "event", "background"]


@dataclass(frozen=True)
class WherePattern:
    """One element of a WHERE / WHILE / derived-fact body, classified by the bind step (spec §4.2).

    `facts` names the fact definitions whose template unifies with `pattern` (kinds `current`
    and `fact`); `interval` is the optional `[?S, ?E]` binding.
    """

    kind: PatternKind
    pattern: Pattern
    facts: tuple[str, ...] = ()
    interval: tuple[Var, Var] | None = None


@dataclass(frozen=True)
class DerivedFact:
    """A fact derived by interval intersection of other facts (spec §3.2)."""

    name: str
    template: Pattern
    identity: tuple[Var, ...]
    body: tuple[WherePattern, ...]  # kinds `fact` (other facts' templates) and `background`
    filters: tuple[Expr, ...] = ()
    span: Span = field(default=Span(), compare=False)
    named: bool = True  # as EventFact.named


Fact = Union[EventFact, DerivedFact]


# ---------------------------------------------------------------- aggregate queries (spec §4)
@dataclass(frozen=True)
class Aggregate:
    """`COUNT [DISTINCT] e`, `COUNT(*)` (arg None), `SUM/AVG/MIN/MAX e`; `alias` is the name it
    binds: the `AS ?alias`, else the argument variable's name (spec §4)."""

    func: str  # COUNT SUM AVG MIN MAX (upper case)
    arg: Expr | None
    distinct: bool
    alias: str


@dataclass(frozen=True)
class Projection:
    """A SELECT item: an expression over group variables and aggregate aliases, and its output
    column name (as written, without `?`)."""

    expr: Expr
    name: str


@dataclass(frozen=True)
class AggregateQuery:
    name: str  # REGISTER name, else `q1`, `q2`, ... in document order
    select: tuple[Projection, ...]
    group_by: tuple[Var, ...]
    aggregates: tuple[Aggregate, ...]
    where: tuple[WherePattern, ...]
    filters: tuple[Expr, ...]
    while_: WherePattern | None  # kind `fact`
    every_ms: int
    span: Span = field(default=Span(), compare=False)
    having: tuple[Expr, ...] = ()  # spec §4: a group is reported at a tick only if every one is true


# ---------------------------------------------------------------- windowed queries (spec §8)
@dataclass(frozen=True)
class StreamWindow:
    """`FROM STREAM <iri> [RANGE r (STEP s | TUMBLING)]`; `iri` is None when the query names no
    stream (the paper prints `FROM STREAM [RANGE 10s TUMBLING]`): it reads the default stream."""

    iri: str | None  # without angle brackets
    range_ms: int
    step_ms: int  # == range_ms for TUMBLING


@dataclass(frozen=True)
class WindowedQuery:
    """A C-SPARQL-style registered query. `sparql` is the same query as static SPARQL 1.1 text
    (prologue included, REGISTER header and FROM STREAM clauses removed, `FROM <iri>` kept) that
    rdflib can parse and evaluate over one window's content (the merge of its windows' contents);
    engines derive their algebra from it. An RSP-QL query maps onto the same plan: its named
    windows become `windows`, its `WINDOW <w> { P }` patterns `{ P }`, its REGISTER form `r2s`."""

    name: str
    registers_stream: bool  # REGISTER STREAM (output is a stream others can read) vs QUERY
    form: TypingLiteral["select", "construct", "ask"]  # ask: one row a window, ?ask true or false
    windows: tuple[StreamWindow, ...]
    background: tuple[str, ...]  # FROM <iri> graphs
    sparql: str
    select_names: tuple[str, ...] = ()  # output columns of a SELECT (ASK: "ask"), in order
    span: Span = field(default=Span(), compare=False)
    r2s: TypingLiteral["rstream", "istream", "dstream"] = "rstream"  # RSP-QL's REGISTER ISTREAM|DSTREAM
    window_names: tuple[str, ...] = ()  # RSP-QL window IRIs, one per window ("" for C-SPARQL's)
    ordered: bool = False  # an ORDER BY orders each window's rows (they are written in that order)


Query = Union[AggregateQuery, WindowedQuery]


# ---------------------------------------------------------------- the document
@dataclass(frozen=True)
class Document:
    source: str  # file name, for messages
    base: str | None
    prefixes: tuple[tuple[str, str], ...]  # (prefix, namespace IRI), declared and predeclared
    facts: tuple[Fact, ...]  # in dependency order: a fact comes after every fact it builds on
    queries: tuple[Query, ...]  # in document order
    # The error running this document raises: `:` used without a declaration (tefq.analysis.bind,
    # UNMAPPED_NAMESPACE); it parses and explains, but runs only once `--prefix :=IRI` maps it.
    unmapped: Exception | None = field(default=None, compare=False, repr=False)
    # The constant predicates of the patterns no fact template and no background answers, each with
    # its first pattern's position: only an input can match them (a run warns about those no
    # input holds: tefq.plan.absent).
    input_predicates: tuple[tuple[str, Span], ...] = field(default=(), compare=False, repr=False)

    def require_mapped(self) -> None:
        """Raise the located error of a `:` the document uses without declaring it (spec §1)."""
        if self.unmapped is not None:
            raise self.unmapped

    def fact(self, name: str) -> Fact:
        for f in self.facts:
            if f.name == name:
                return f
        raise KeyError(name)
