"""Syntax tree -> logical plan. The bind step owns every semantic error, each located: prefixes,
variables, names, fact dependencies, pattern classification (spec §4.2), durations and the
static SPARQL text of windowed queries."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, Sequence

from tefq.analysis.durations import parse_duration
from tefq.analysis.network import keyword_offset, refusal, remote_constructs
from tefq.syntax.sparql_text import resolve_iri, star_order, top_level_order
from tefq.errors import Span, TefqError
from tefq.plan import allen, logical as L
from tefq.syntax import ast
from tefq.terms import PREDECLARED_PREFIXES, XSD_DATETIME, XSD_DURATION, iri as nt_iri, literal as nt_literal

# C-SPARQL's `timestamp(?s, ?p, ?o)` becomes a call of this extension function in the static
# SPARQL text of a windowed query (rdflib has no `timestamp` built-in); engines register it.
TIMESTAMP_FUNCTION = "urn:tefq:fn:timestamp"

# The paper's queries use `:` without declaring it (spec §1, §9): they bind with `:` in this
# namespace and run once `--prefix :=IRI` (or a PREFIX) maps it (Document.unmapped says where).
UNMAPPED_NAMESPACE = "urn:tefq:unmapped-prefix:"


def undeclared_prefix(prefix: str, why: str = "") -> str:
    """The one message for a prefix no PREFIX or `--prefix` maps, `:` or `foo:` alike. The
    suggestion writes the prefix as the document does, colon included (`--prefix :=IRI`,
    `--prefix foo:=IRI`): `=IRI` alone, the bare form for `:`, reads like a typo."""
    shown = prefix + ":"
    return f"undeclared prefix '{shown}': {why}declare it with PREFIX {shown} <IRI> or map it with --prefix {shown}=IRI"


# RSP-QL's REGISTER forms and the R2S operator each one names.
RSPQL_R2S = {"RSTREAM": "rstream", "ISTREAM": "istream", "DSTREAM": "dstream"}


@dataclass(frozen=True)
class _Where:
    file: str
    source: str
    unmapped: list[Span] = field(default_factory=list)  # where `:` was used without a declaration

    def err(self, message: str, span: Span) -> TefqError:
        return TefqError(message, self.file, span.line, span.column).located(self.file, self.source)


class _Scope:
    """Prefix and base resolution for one statement."""

    def __init__(self, where: _Where, base: str | None, prefixes: dict[str, str]) -> None:
        self.where = where
        self.base = base
        self.prefixes = prefixes

    def with_decls(self, decls: Iterable[ast.Decl]) -> "_Scope":
        decls = tuple(decls)
        if not decls:
            return self
        base, prefixes = self.base, dict(self.prefixes)
        for d in decls:
            if isinstance(d, ast.BaseDecl):
                base = self._abs(d.iri, base)
            else:
                prefixes[d.prefix] = self._abs(d.iri, base)
        return _Scope(self.where, base, prefixes)

    @staticmethod
    def _abs(value: str, base: str | None) -> str:
        return resolve_iri(base, value) if base and ":" not in value.split("/")[0] else value

    def iri(self, node: ast.Iri) -> str:
        if isinstance(node, ast.IriRef):
            return self._abs(node.iri, self.base)
        if node.prefix == "" and "" not in self.prefixes:  # the paper's `:`: an error only when run
            self.where.unmapped.append(node.span)
            return UNMAPPED_NAMESPACE + node.local
        if node.prefix not in self.prefixes:
            raise self.where.err(undeclared_prefix(node.prefix), node.span)
        return self.prefixes[node.prefix] + node.local

    def node(self, n: ast.Term) -> L.Node:
        if isinstance(n, ast.Var):
            return L.Var(n.name)
        if isinstance(n, (ast.IriRef, ast.PName)):
            return L.Term(nt_iri(self.iri(n)))
        if isinstance(n, ast.Literal):
            dt = self.iri(n.datatype) if n.datatype is not None else None
            return L.Term(nt_literal(n.lexical, dt, n.lang))
        if isinstance(n, ast.BNode):
            return L.Term("_:" + (n.label or f"anon{n.span.line}_{n.span.column}"))
        raise self.where.err(f"unexpected term {n!r}", getattr(n, "span", Span()))  # pragma: no cover

    def pattern(self, t: ast.Triple) -> L.Pattern:
        return L.Pattern(self.node(t.s), self.node(t.p), self.node(t.o), t.span)

    def expr(self, e: ast.Expr) -> L.Expr:
        if isinstance(e, ast.Call):
            args = tuple(self.expr(a) for a in e.args)
            if e.op == "call":
                assert e.func is not None
                return L.Call(nt_iri(self.iri(e.func)), args)
            if e.op == "TIMESTAMP":
                raise self.where.err("timestamp(...) is C-SPARQL: use it in windowed queries", e.span)
            if e.op == "DURATION" and len(args) != 2:
                raise self.where.err("DURATION takes two arguments: DURATION(?start, ?end)", e.span)
            if e.op in allen.TOLERANCES and (e.op != "CONTAINS" or len(args) != 2):
                return self.allen(e, args)
            return L.Call(e.op, args)
        if isinstance(e, ast.AggregateCall):
            raise self.where.err(f"{e.func}(...) belongs in the (AGGREGATE ...) block, not in an expression", e.span)
        if isinstance(e, ast.Exists):
            raise self.where.err("EXISTS is supported in windowed (C-SPARQL) queries only", e.span)
        return self.node(e)  # type: ignore[arg-type]


    # -------------------------------------------------------------- Allen's relations (spec §11)
    def allen(self, e: ast.Call, args: tuple[L.Expr, ...]) -> L.Expr:
        """`REL(?S1, ?E1, ?S2, ?E2 [, tolerances])`: four times and the tolerances the relation
        accepts, each a non-negative constant xsd:duration (stored in ms)."""
        rel, counts = e.op, allen.TOLERANCES[e.op]
        extra = len(args) - 4
        if extra not in counts:
            raise self.where.err(f"{rel} takes {_allen_usage(rel)}, not {len(args)} argument"
                                 f"{'s' if len(args) != 1 else ''}", e.span)
        for a in e.args[:4]:
            if isinstance(a, ast.Literal) and not (a.datatype is not None and self.iri(a.datatype) == XSD_DATETIME):
                raise self.where.err(f"{rel} compares xsd:dateTime values (interval bindings such as ?S, ?E),"
                                     " not this literal", a.span)
        tolerances = tuple(self.tolerance(rel, a) for a in e.args[4:])
        if len(tolerances) == 2 and tolerances[0] > tolerances[1]:
            raise self.where.err(f"{rel}: the minimum gap exceeds the maximum, so it never holds", e.args[4].span)
        return allen.allen_call(rel, args[:4], tolerances)  # type: ignore[arg-type]

    def tolerance(self, rel: str, a: ast.Expr) -> int:
        """A tolerance argument in ms: a duration literal, never negative."""
        negated = isinstance(a, ast.Call) and a.op == "neg" and isinstance(a.args[0], ast.Literal)
        lit = a.args[0] if negated else a  # type: ignore[union-attr]
        span = getattr(a, "span", Span())
        if not isinstance(lit, ast.Literal) or lit.lang is not None or (
                lit.datatype is not None and self.iri(lit.datatype).lower() != XSD_DURATION.lower()):
            raise self.where.err(f"a tolerance of {rel} is a constant xsd:duration such as \"PT1M\"^^xsd:duration",
                                 span)
        text = lit.lexical.strip()
        if negated or text.startswith("-"):
            raise self.where.err(f"negative tolerance '{'-' if negated else ''}{text}' in {rel}: a tolerance is a"
                                 " duration of zero or more", span)
        try:
            return parse_duration(text, self.where.file, span.line, span.column)
        except TefqError as err:
            raise err.located(self.where.file, self.where.source) from None


def _allen_usage(rel: str) -> str:
    forms = []
    for n in allen.TOLERANCES[rel]:
        names = allen.TOLERANCE_NAMES.get(n, ())
        forms.append(f"{rel}(?S1, ?E1, ?S2, ?E2{''.join(', ' + x for x in names)})")
    return " or ".join(forms)


def _expr_vars(e: ast.Expr) -> list[ast.Var]:
    if isinstance(e, ast.Var):
        return [e]
    if isinstance(e, ast.Call):
        return [v for a in e.args for v in _expr_vars(a)]
    if isinstance(e, ast.AggregateCall) and e.arg is not None:
        return _expr_vars(e.arg)
    return []


def _triple_vars(t: ast.Triple) -> list[ast.Var]:
    return [n for n in (t.s, t.p, t.o) if isinstance(n, ast.Var)]


def unifies(p: L.Pattern, template: L.Pattern) -> bool:
    """Does the pattern unify with a fact template (spec §4.2)? Constants must be equal; a
    variable repeated on either side must meet equal constants."""
    binding: dict[tuple[str, str], L.Node] = {}
    for a, b in ((p.s, template.s), (p.p, template.p), (p.o, template.o)):
        for side, var, other in (("p", a, b), ("t", b, a)):
            if isinstance(var, L.Var):
                prev = binding.get((side, var.name))
                if prev is not None and isinstance(prev, L.Term) and isinstance(other, L.Term) and prev != other:
                    return False
                binding[(side, var.name)] = other
        if isinstance(a, L.Term) and isinstance(b, L.Term) and a != b:
            return False
    return True


def _pretty(names: Sequence[str]) -> str:
    return ", ".join("?" + n for n in names)


class _Binder:
    def __init__(self, doc: ast.Document, filename: str, source: str, extra_prefixes: dict[str, str],
                 background_predicates: frozenset[str]) -> None:
        self.doc = doc
        self.where = _Where(filename, source)
        self.source = source
        self.background_predicates = background_predicates
        base: str | None = None
        prefixes = dict(PREDECLARED_PREFIXES)
        prefixes.update(extra_prefixes)
        self.root = _Scope(self.where, None, prefixes).with_decls(doc.decls)
        self.base = self.root.base
        self.templates: list[tuple[str, L.Pattern]] = []

    def err(self, message: str, span: Span) -> TefqError:
        return self.where.err(message, span)

    # -------------------------------------------------------------- names
    def _names(self, given: Sequence[str | None], stem: str, what: str, spans: Sequence[Span]) -> list[str]:
        used: dict[str, int] = {}
        for i, g in enumerate(given):
            if g is not None:
                if g in used:
                    raise self.err(f"duplicate {what} name '{g}'", spans[i])
                used[g] = i
        out: list[str] = []
        n = 0
        for g in given:
            if g is not None:
                out.append(g)
                continue
            n += 1
            while f"{stem}{n}" in used:
                n += 1
            out.append(f"{stem}{n}")
        return out

    # -------------------------------------------------------------- classification (spec §4.2)
    def classify(self, scope: _Scope, elem: ast.PatternElem, derived: bool = False) -> L.WherePattern:
        pat = scope.pattern(elem.triple)
        facts = tuple(name for name, tpl in self.templates if unifies(pat, tpl))
        interval = (L.Var(elem.interval[0].name), L.Var(elem.interval[1].name)) if elem.interval else None
        if interval is not None and interval[0] == interval[1]:
            raise self.err(f"[?{interval[0].name}, ?{interval[1].name}] binds ?{interval[0].name} twice: the start"
                           " and the end of an interval need two names, e.g. [?S, ?E]", elem.interval[1].span)
        if elem.current:
            if derived:
                raise self.err("CURRENT has no meaning in a derived fact's body (all body facts hold at"
                               " the same time by definition)", elem.span)
            if not facts:
                raise self.err("CURRENT pattern matches no fact template", elem.span)
            kind: L.PatternKind = "current"
        elif facts:
            kind = "fact"
        elif derived or (isinstance(pat.p, L.Term) and pat.p.nt in self.background_predicates):
            kind = "background"
        else:
            kind = "event"
        if interval is not None and kind not in ("current", "fact"):
            raise self.err(f"an interval binding [?{interval[0].name}, ?{interval[1].name}] needs a fact"
                           " pattern, and this pattern matches no fact template", elem.span)
        return L.WherePattern(kind, pat, facts if kind in ("current", "fact") else (), interval)

    # -------------------------------------------------------------- facts
    def bind_facts(self, defs: list[ast.FactDef]) -> tuple[L.Fact, ...]:
        names = self._names([d.name for d in defs], "fact", "fact", [d.span for d in defs])
        for name, d in zip(names, defs):
            self.templates.append((name, self.root.pattern(d.template)))
        bound: dict[str, L.Fact] = {}
        deps: dict[str, tuple[str, ...]] = {}
        for name, d, (_, tpl) in zip(names, defs, self.templates):
            identity = tuple(dict.fromkeys(L.Var(v.name) for v in _triple_vars(d.template)))
            if d.clauses is not None:
                bound[name] = self._event_fact(name, d, tpl, identity)
                deps[name] = ()
            else:
                fact = self._derived_fact(name, d, tpl, identity)
                bound[name] = fact
                deps[name] = tuple(dict.fromkeys(f for wp in fact.body for f in wp.facts))
            if d.name is None:
                bound[name] = replace(bound[name], named=False)
        order = self._dependency_order(names, deps, {n: d.span for n, d in zip(names, defs)})
        return tuple(bound[n] for n in order)

    def _event_fact(self, name: str, d: ast.FactDef, tpl: L.Pattern, identity: tuple[L.Var, ...]) -> L.EventFact:
        assert d.clauses is not None
        since: list[L.Clause] = []
        until: list[L.Clause] = []
        for c in d.clauses:
            if not c.patterns:
                raise self.err(f"{c.kind} needs a triple pattern", c.span)
            bound_vars = {v.name for t in c.patterns for v in _triple_vars(t)}
            missing = [v.name for v in identity if v.name not in bound_vars]
            if missing:
                raise self.err(f"fact {name}: template variable{'s' if len(missing) > 1 else ''} "
                               f"{_pretty(missing)} not bound by this {c.kind} pattern", c.span)
            pats = [self.root.pattern(t) for t in c.patterns]
            clause = L.Clause(pats[0], tuple(pats[1:]), tuple(self.root.expr(f.expr) for f in c.filters))
            (since if c.kind == "SINCE" else until).append(clause)
        if not since:
            raise self.err(f"fact {name} needs at least one SINCE clause", d.span)
        return L.EventFact(name, tpl, identity, tuple(since), tuple(until), d.span)

    def _derived_fact(self, name: str, d: ast.FactDef, tpl: L.Pattern, identity: tuple[L.Var, ...]) -> L.DerivedFact:
        body: list[L.WherePattern] = []
        filters: list[L.Expr] = []
        for e in d.body:
            if isinstance(e, ast.FilterElem):
                filters.append(self.root.expr(e.expr))
            else:
                if e.interval is not None:
                    raise self.err("an interval binding has no meaning in a derived fact's body", e.span)
                body.append(self.classify(self.root, e, derived=True))
        if not any(wp.kind == "fact" for wp in body):
            raise self.err(f"derived fact {name}: its body matches no fact template", d.span)
        bound_vars = {v.name for wp in body for v in wp.pattern.variables()}
        missing = [v.name for v in identity if v.name not in bound_vars]
        if missing:
            raise self.err(f"fact {name}: template variable{'s' if len(missing) > 1 else ''} "
                           f"{_pretty(missing)} not bound by its body", d.span)
        return L.DerivedFact(name, tpl, identity, tuple(body), tuple(filters), d.span)

    def _dependency_order(self, names: list[str], deps: dict[str, tuple[str, ...]], spans: dict[str, Span]) -> list[str]:
        order: list[str] = []
        state: dict[str, int] = {}  # 1 visiting, 2 done

        def visit(n: str, path: list[str]) -> None:
            if state.get(n) == 2:
                return
            if state.get(n) == 1:
                cycle = path[path.index(n):] + [n]
                raise self.err("facts form a cycle: " + " -> ".join(cycle), spans[cycle[0]])
            state[n] = 1
            for m in deps[n]:
                visit(m, path + [n])
            state[n] = 2
            order.append(n)

        for n in names:
            visit(n, [])
        return order

    # -------------------------------------------------------------- aggregate queries (spec §4)
    def bind_aggregate(self, name: str, q: ast.AggregateQuery) -> L.AggregateQuery:
        scope = self.root.with_decls(q.register.decls if q.register else ())
        b = q.block
        if b.every is None:
            raise self.err("the (AGGREGATE ...) block needs EVERY d (e.g. EVERY \"PT1M\"^^xsd:duration)", b.span)
        every_ms = self.duration(scope, b.every, "EVERY")
        if not b.where:
            raise self.err("the (AGGREGATE ...) block needs WHERE and a pattern", b.span)
        if not b.aggregates:
            raise self.err("the (AGGREGATE ...) block names no aggregate (COUNT, SUM, AVG, MIN, MAX)", b.span)
        where: list[L.WherePattern] = []
        filters: list[L.Expr] = []
        for e in b.where:
            if isinstance(e, ast.FilterElem):
                filters.append(scope.expr(e.expr))
            else:
                where.append(self.classify(scope, e))
        while_ = None
        if b.while_ is not None:
            while_ = self.classify(scope, b.while_.elem)
            if while_.kind != "fact":
                what = "CURRENT" if while_.kind == "current" else "a pattern that matches no fact template"
                raise self.err(f"WHILE needs a fact pattern, not {what}", b.while_.span)
        self._intervals_once(b, where, while_)
        bound = {v.name for wp in where for v in wp.pattern.variables()}
        bound |= {v.name for wp in where if wp.interval for v in wp.interval}
        where_bound = set(bound)  # what a FILTER inside WHERE sees
        if while_ is not None:
            bound |= {v.name for v in while_.pattern.variables()}
            bound |= {v.name for v in (while_.interval or ())}
        group_src = b.group_by if b.group_by is not None else b.leading_vars
        for v in group_src:
            if v.name not in bound:
                raise self.err(f"group variable ?{v.name} is not bound by the WHERE pattern", v.span)
        group_names = [v.name for v in group_src]
        if b.group_by is not None:
            for v in b.leading_vars:
                if v.name not in group_names:
                    raise self.err(f"?{v.name} is listed in AGGREGATE but not in GROUP BY", v.span)
        aggregates: list[L.Aggregate] = []
        for a in b.aggregates:
            for v in _expr_vars(a.arg) if a.arg is not None else []:
                if v.name not in bound:
                    raise self.err(f"?{v.name} in {a.func} is not bound by the WHERE pattern", v.span)
            if a.alias is not None:
                alias = a.alias.name
            elif isinstance(a.arg, ast.Var):
                alias = a.arg.name  # spec §4: without AS, an aggregate binds its argument's name
            else:
                raise self.err(f"{a.func} over an expression needs a name: {a.func} ... AS ?name", a.span)
            if alias in [x.alias for x in aggregates]:
                raise self.err(f"two aggregates bind ?{alias}: give each its own name (... AS ?name)", a.span)
            if alias in group_names:
                raise self.err(f"?{alias} is a group variable and {a.func}'s result: the name would have two"
                               f" meanings; name the aggregate differently ({a.func} ... AS ?{a.func.lower()})",
                               a.alias.span if a.alias is not None else a.span)
            aggregates.append(L.Aggregate(a.func, scope.expr(a.arg) if a.arg is not None else None, a.distinct, alias))
        self._filters_see_solutions(b, where_bound, aggregates)
        known = set(group_names) | {x.alias for x in aggregates}
        having = tuple(self._having(scope, e, group_names, aggregates) for e in b.having)
        projections: list[L.Projection] = []
        for item in q.select:
            for v in _expr_vars(item.expr):
                if v.name not in known:
                    raise self.err(f"unknown variable ?{v.name} in SELECT: it is neither a group variable"
                                   f" ({_pretty(group_names) or 'none'}) nor an aggregate"
                                   f" ({_pretty([x.alias for x in aggregates])})", v.span)
            if item.name is not None:
                out = item.name
            elif isinstance(item.expr, ast.Var):
                out = item.expr.name
            else:
                raise self.err("name this SELECT expression: ... AS Name", item.span)
            if out in [p.name for p in projections]:
                raise self.err(f"duplicate output name '{out}'", item.span)
            projections.append(L.Projection(scope.expr(item.expr), out))
        if not projections:
            raise self.err("SELECT names no output", q.span)
        return L.AggregateQuery(name, tuple(projections), tuple(L.Var(n) for n in group_names), tuple(aggregates),
                                tuple(where), tuple(filters), while_, every_ms, q.span, having)

    def _intervals_once(self, b: ast.AggregateBlock, where: list[L.WherePattern], while_: L.WherePattern | None) -> None:
        """An interval variable is bound by one interval binding and is no pattern variable (a name
        has one meaning, spec §4): a second binding would be silently ignored."""
        elems = [e for e in b.where if not isinstance(e, ast.FilterElem)] + ([b.while_.elem] if b.while_ else [])
        pattern_vars = {v.name for wp in [*where, *([while_] if while_ else [])] for v in wp.pattern.variables()}
        seen: set[str] = set()
        for e in elems:
            for v in e.interval or ():
                if v.name in pattern_vars:
                    raise self.err(f"?{v.name} is bound by a triple pattern and by this interval binding: an interval"
                                   " variable needs a name of its own", v.span)
                if v.name in seen:
                    raise self.err(f"?{v.name} is bound by two interval bindings: each interval variable needs a"
                                   " name of its own (compare them with a FILTER)", v.span)
                seen.add(v.name)

    def _filters_see_solutions(self, b: ast.AggregateBlock, where_bound: set[str],
                               aggregates: list[L.Aggregate]) -> None:
        """A FILTER inside WHERE sees each solution, not the aggregates (spec §4): naming an
        aggregate's result there is an error that says where the condition belongs."""
        results = {a.alias: a.func for a in aggregates}
        for e in b.where:
            if not isinstance(e, ast.FilterElem):
                continue
            for v in _expr_vars(e.expr):
                if v.name in results and v.name not in where_bound:
                    raise self.err(f"?{v.name} is {results[v.name]}'s result, which a FILTER inside WHERE cannot see"
                                   " (it filters each solution before grouping): put the condition in HAVING,"
                                   f" after GROUP BY, e.g. HAVING (?{v.name} > 3)", v.span)

    def _having(self, scope: _Scope, e: ast.Expr, group_names: list[str], aggregates: list[L.Aggregate]) -> L.Expr:
        """One HAVING constraint (spec §4): over group variables and aggregate results only."""
        aliases = [a.alias for a in aggregates]
        for v in _expr_vars(e):
            if v.name not in group_names and v.name not in aliases:
                raise self.err(f"?{v.name} in HAVING is neither a group variable ({_pretty(group_names) or 'none'})"
                               f" nor an aggregate ({_pretty(aliases)}): HAVING sees each group's values", v.span)
        return scope.expr(e)

    def duration(self, scope: _Scope, d: ast.Duration, what: str) -> int:
        if d.datatype is not None:
            dt = scope.iri(d.datatype)
            if dt.lower() != XSD_DURATION.lower():  # `xsd:Duration` (the paper's spelling) is accepted
                raise self.err(f"{what} expects an xsd:duration, not <{dt}>", d.span)
        try:
            ms = parse_duration(d.text, self.where.file, d.span.line, d.span.column)
        except TefqError as e:
            raise e.located(self.where.file, self.source) from None
        if ms <= 0:
            raise self.err(f"{what} must be a positive duration, got '{d.text}'", d.span)
        return ms

    # -------------------------------------------------------------- windowed queries (spec §8)
    def bind_windowed(self, name: str, q: ast.WindowedQuery, extra_prefixes: dict[str, str]) -> L.WindowedQuery:
        scope = self.root.with_decls(q.register.decls if q.register else ())
        if q.every is not None:
            raise self.err("EVERY belongs in an (AGGREGATE ...) block; a windowed query reports when its"
                           " window closes", q.every.span)
        for p in q.pnames:
            scope.iri(p)  # an undeclared prefix is located here, not deep inside rdflib
        if not q.streams:
            raise self.err("a windowed query needs FROM STREAM <iri> [RANGE d TUMBLING] (C-SPARQL) or"
                           " FROM NAMED WINDOW <w> ON <iri> [RANGE d STEP d] (RSP-QL)", q.span)
        if q.named_graphs:
            raise self.err("FROM NAMED is not supported in windowed queries: a window's content is one default graph"
                           " (spec §8)", q.span)
        windows = [self._window(scope, s) for s in q.streams]
        self._check_window_patterns(scope, q)
        background = tuple(scope.iri(g) for g in q.graphs)
        sparql = self._static_sparql(scope, q)
        algebra = self._check_sparql(sparql, q)
        self._refuse_remote(algebra, q)
        self._refuse_graph(algebra, q)
        names: tuple[str, ...] = ()
        if q.form == "ask":
            names = ("ask",)
        elif q.form == "select":
            if q.select is None:
                names = star_order(sparql, algebra.get("PV", ()))
            else:
                names = tuple(i.name if i.name is not None else i.expr.name  # type: ignore[union-attr]
                              for i in q.select)
        kind = q.register.kind if q.register is not None else "QUERY"
        registers_stream = kind == "STREAM" or (kind in RSPQL_R2S and q.form == "construct")
        r2s = RSPQL_R2S.get(kind, "rstream")
        return L.WindowedQuery(name, registers_stream, q.form, tuple(windows), background, sparql, names, q.span,
                               r2s, tuple(scope.iri(s.name) if s.name else "" for s in q.streams),
                               ordered=top_level_order(algebra))

    def _window(self, scope: _Scope, s: ast.StreamClause) -> L.StreamWindow:
        """One C-SPARQL `FROM STREAM` or RSP-QL `FROM NAMED WINDOW` clause as a time window."""
        if s.elements is not None:
            raise self.err("count-based windows ([ELEMENTS n]) are not supported: tefq's windows are"
                           " time-based, [RANGE d STEP d] or [RANGE d] (spec §8)", s.span)
        if s.range is None:
            if s.name is not None:
                raise self.err("FROM NAMED WINDOW needs a window: [RANGE d STEP d] or [RANGE d] (tumbling)", s.span)
            raise self.err("FROM STREAM needs a window: [RANGE d TUMBLING] or [RANGE d STEP d]", s.span)
        rng = self.duration(scope, s.range, "RANGE")
        step = self.duration(scope, s.step, "STEP") if s.step is not None else rng
        return L.StreamWindow(scope.iri(s.iri) if s.iri is not None else None, rng, step)

    def _check_window_patterns(self, scope: _Scope, q: ast.WindowedQuery) -> None:
        """RSP-QL: every `WINDOW <w> { ... }` names a declared window, and every declared window is
        read by one (tefq evaluates the merge of the windows: a window no pattern names would
        otherwise change the answers; docs/front-end.md)."""
        declared: dict[str, ast.StreamClause] = {}
        for s in q.streams:
            if s.name is not None:
                if scope.iri(s.name) in declared:
                    raise self.err("two windows have the same name", s.span)
                declared[scope.iri(s.name)] = s
        used: set[str] = set()
        for w in q.window_patterns:
            if isinstance(w.name, ast.Var):
                raise self.err("WINDOW ?var (a window chosen by a variable) is not supported: name the"
                               " window, WINDOW <w> { ... }", w.span)
            iri = scope.iri(w.name)
            if iri not in declared:
                raise self.err(f"WINDOW <{iri}> names no window: declare it with FROM NAMED WINDOW <{iri}>"
                               " ON <stream> [RANGE d STEP d]", w.span)
            used.add(iri)
        if q.window_patterns and any(s.name is None for s in q.streams):
            raise self.err("WINDOW <w> { ... } reads named windows: declare them with FROM NAMED WINDOW,"
                           " not FROM STREAM", q.window_patterns[0].span)
        for iri, s in declared.items():
            if iri not in used:
                raise self.err(f"window <{iri}> is declared but no WINDOW <{iri}> {{ ... }} pattern reads it", s.span)

    def _static_sparql(self, scope: _Scope, q: ast.WindowedQuery) -> str:
        """The document prologue + the query text without its FROM STREAM / FROM NAMED WINDOW clauses
        (spec §8) and without the `WINDOW <w>` headers of RSP-QL window patterns."""
        head = []
        if scope.base:
            head.append(f"BASE <{scope.base}>")
        head += [f"PREFIX {p}: <{ns}>" for p, ns in scope.prefixes.items()]
        if self.where.unmapped and "" not in scope.prefixes:
            head.append(f"PREFIX : <{UNMAPPED_NAMESPACE}>")
        edits = [(s.start, s.end, "") for s in q.streams]
        edits += [(w.start, w.end, "") for w in q.window_patterns]  # RSP-QL: `WINDOW <w> {P}` -> `{P}`
        edits += [(a, b, f"<{TIMESTAMP_FUNCTION}>") for a, b in q.timestamp_calls]
        edits += list(q.rewrites)  # e.g. `!(a|^b)` as `(!(a)|^!(b))`: rdflib drops an inverse member's IRI
        text, pos = [], q.start
        for a, b, repl in sorted(edits):
            text.append(self.source[pos:a])
            text.append(repl)
            pos = b
        text.append(self.source[pos:q.end])
        return "\n".join(head) + "\n" + "".join(text).strip() + "\n"

    def _check_sparql(self, sparql: str, q: ast.WindowedQuery):  # -> rdflib CompValue
        from rdflib.plugins.sparql import prepareQuery

        try:
            return prepareQuery(sparql).algebra
        except Exception as e:  # rdflib raises many kinds; any of them means "not SPARQL 1.1"
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise self.err(f"not a valid SPARQL 1.1 query once FROM STREAM is removed: {first}", q.span) from None

    def _refuse_remote(self, algebra, q: ast.WindowedQuery) -> None:
        """SERVICE would send the stream's bindings over the network (tefq.analysis.network): exit 2
        at the keyword, on every engine, before anything runs."""
        remote = remote_constructs(algebra)
        if not remote:
            return
        at = keyword_offset(self.source[q.start:q.end], remote[0])
        span = q.span if at < 0 else self._span_at(q.start + at)
        raise self.err(refusal(remote[0]), span)

    def _refuse_graph(self, algebra, q: ast.WindowedQuery) -> None:
        """`GRAPH` matches named graphs, and a window's content is one default graph (spec §8)."""
        from rdflib.plugins.sparql.parserutils import CompValue

        def graphs(node) -> bool:
            if isinstance(node, CompValue):
                return node.name == "Graph" or any(graphs(v) for k, v in node.items() if k != "_vars")
            return isinstance(node, (list, tuple)) and any(graphs(v) for v in node)

        if graphs(algebra):
            at = keyword_offset(self.source[q.start:q.end], "GRAPH")
            raise self.err("GRAPH is not supported in windowed queries: a window's content is one default graph"
                           " (spec §8)", q.span if at < 0 else self._span_at(q.start + at))

    def _span_at(self, offset: int) -> Span:
        line_start = self.source.rfind("\n", 0, offset) + 1
        return Span(self.source.count("\n", 0, offset) + 1, offset - line_start + 1)

    # -------------------------------------------------------------- the document
    def bind(self, extra_prefixes: dict[str, str]) -> L.Document:
        facts = self.bind_facts([s for s in self.doc.statements if isinstance(s, ast.FactDef)])
        queries_ast = [s for s in self.doc.statements if not isinstance(s, ast.FactDef)]
        names = self._names([q.register.name if q.register else None for q in queries_ast], "q", "query",
                            [q.register.span if q.register else q.span for q in queries_ast])
        queries: list[L.Query] = []
        for name, q in zip(names, queries_ast):
            if isinstance(q, ast.AggregateQuery):
                queries.append(self.bind_aggregate(name, q))
            else:
                queries.append(self.bind_windowed(name, q, extra_prefixes))
        prefixes = dict(self.root.prefixes)
        if self.where.unmapped:
            prefixes.setdefault("", UNMAPPED_NAMESPACE)  # explain shows `:join`, as written
        return L.Document(self.where.file, self.base, tuple(prefixes.items()), facts, tuple(queries),
                          self._unmapped(), self._input_predicates(facts, queries))

    def _input_predicates(self, facts: Sequence[L.Fact], queries: Sequence[L.Query]) -> tuple[tuple[str, Span], ...]:
        """The constant predicates of the patterns that neither a fact template nor the background
        answers (SINCE/UNTIL clauses, event patterns...), first position each (`Document.input_predicates`)."""
        patterns: list[L.Pattern] = []
        for f in facts:
            if isinstance(f, L.EventFact):  # an UNTIL no input holds yet is common (no one quit): not named
                patterns += [p for c in f.since for p in (c.trigger, *c.background)]
                patterns += [p for c in f.until for p in c.background]
            else:
                patterns += [wp.pattern for wp in f.body if wp.kind not in ("current", "fact")]
        for q in queries:
            if isinstance(q, L.AggregateQuery):
                patterns += [wp.pattern for wp in q.where if wp.kind not in ("current", "fact")]
        found: dict[str, Span] = {}
        for pat in patterns:
            if isinstance(pat.p, L.Term) and pat.p.nt not in self.background_predicates:
                found.setdefault(pat.p.nt, pat.span)
        return tuple(found.items())

    def _unmapped(self) -> TefqError | None:
        """The error a run of this document raises when it used `:` undeclared (at its first use)."""
        if not self.where.unmapped:
            return None
        return self.where.err(undeclared_prefix(""), self.where.unmapped[0])


def bind(ast_doc: ast.Document, filename: str, source: str, extra_prefixes: dict[str, str] | None = None,
         background_predicates: frozenset[str] = frozenset()) -> L.Document:
    """Bind a parsed document into the logical plan. `extra_prefixes` are the CLI's `--prefix`
    mappings; `background_predicates` (N-Triples IRIs) are the predicates of the background graph,
    which make a non-fact pattern a background pattern instead of an event pattern."""
    return _Binder(ast_doc, filename, source, dict(extra_prefixes or {}), background_predicates).bind(dict(extra_prefixes or {}))
