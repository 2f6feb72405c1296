"""The logical plan as deterministic, readable text (`tefq explain`): one indented operator tree
per fact and per query. IRIs are abbreviated with the document's prefixes."""
from __future__ import annotations

from typing import Any

from tefq.syntax.sparql_text import stable_triple_order
from tefq.vocabulary import format_ms
from tefq.plan import logical as L
from tefq.plan.allen import TOLERANCE_NAMES, relation_of
from tefq.terms import PREDECLARED_PREFIXES, split_literal

_INFIX = {"+", "-", "*", "/", "=", "!=", "<", ">", "<=", ">=", "&&", "||"}


class _Printer:
    def __init__(self, doc: L.Document) -> None:
        # Longest namespace first, so the most specific prefix wins; ties keep document order.
        self.prefixes = sorted(doc.prefixes, key=lambda p: -len(p[1]))
        self.lines: list[str] = []
        self.bnodes: dict[str, str] = {}  # rdflib's random blank-node labels -> _:b0, _:b1, ... (stable text)

    def out(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    # -------------------------------------------------------------- terms and expressions
    def term(self, nt: str) -> str:
        if nt.startswith("<"):
            value = nt[1:-1]
            for p, ns in self.prefixes:
                local = value[len(ns):]
                if value.startswith(ns) and local and all(c.isalnum() or c in "_-" for c in local):
                    return f"{p}:{local}"
            return nt
        if nt.startswith('"') and "^^<" in nt:
            lex, _, dt = nt.rpartition("^^")
            return f"{lex}^^{self.term(dt)}"
        return nt

    def node(self, n: L.Node) -> str:
        return "?" + n.name if isinstance(n, L.Var) else self.term(n.nt)

    def expr(self, e: L.Expr) -> str:
        if isinstance(e, (L.Var, L.Term)):
            return self.node(e)
        if e.op in _INFIX and len(e.args) == 2:
            return f"({self.expr(e.args[0])} {e.op} {self.expr(e.args[1])})"
        if e.op == "neg":
            return f"-{self.expr(e.args[0])}"
        if e.op == "!":
            return f"!{self.expr(e.args[0])}"
        if e.op in ("in", "notin"):
            word = "IN" if e.op == "in" else "NOT IN"
            return f"({self.expr(e.args[0])} {word} ({', '.join(self.expr(a) for a in e.args[1:])}))"
        relation = relation_of(e.op)
        if relation is not None:
            return self.allen(relation, e)
        name = self.term(e.op) if e.op.startswith("<") else e.op
        return f"{name}({', '.join(self.expr(a) for a in e.args)})"

    def allen(self, relation: str, e: L.Call) -> str:
        """`CONTAINS([?S, ?E), [?PS, ?PE))`, tolerances named and written as durations."""
        a_s, a_e, b_s, b_e = (self.expr(x) for x in e.args[:4])
        tolerances = e.args[4:]
        names = TOLERANCE_NAMES.get(len(tolerances), ())
        shown = [f"{n} {format_ms(int(split_literal(t.nt)[0]))}" for n, t in zip(names, tolerances)
                 if isinstance(t, L.Term)]
        return f"Allen {relation}([{a_s}, {a_e}), [{b_s}, {b_e}){''.join(', ' + x for x in shown)})"

    def pattern(self, p: L.Pattern) -> str:
        return f"{self.node(p.s)} {self.node(p.p)} {self.node(p.o)}"

    def scan(self, depth: int, wp: L.WherePattern, label: str = "Scan") -> None:
        what = wp.kind + (" " + "|".join(wp.facts) if wp.facts else "")
        interval = f" [?{wp.interval[0].name}, ?{wp.interval[1].name}]" if wp.interval else ""
        self.out(depth, f"{label}({what}) {self.pattern(wp.pattern)}{interval}")

    def join(self, depth: int, patterns: tuple[L.WherePattern, ...], label: str = "Join") -> None:
        if len(patterns) == 1:
            self.scan(depth, patterns[0])
            return
        seen: list[str] = []
        shared: list[str] = []
        for wp in patterns:
            for v in [v.name for v in wp.pattern.variables()] + [v.name for v in (wp.interval or ())]:
                if v in seen and v not in shared:
                    shared.append(v)
                if v not in seen:
                    seen.append(v)
        on = ", ".join("?" + v for v in shared) or "nothing (cross product)"
        self.out(depth, f"{label} on ({on})")
        for wp in patterns:
            self.scan(depth + 1, wp)

    def filters(self, depth: int, filters: tuple[L.Expr, ...]) -> int:
        for f in filters:
            self.out(depth, f"Filter {self.expr(f)}")
            depth += 1
        return depth

    # -------------------------------------------------------------- facts
    def fact(self, f: L.Fact) -> None:
        ident = ", ".join("?" + v.name for v in f.identity)
        if isinstance(f, L.EventFact):
            self.out(0, f"fact {f.name}: event-driven")
            self.out(1, f"Coalesce identity ({ident})")
            self.out(2, f"FactSource {self.pattern(f.template)}")
            for word, clauses in (("Since", f.since), ("Until", f.until)):
                for c in clauses:
                    self.out(3, word)
                    d = self.filters(4, c.filters)
                    if c.background:
                        pats = (L.WherePattern("event", c.trigger),) + tuple(L.WherePattern("background", b) for b in c.background)
                        self.join(d, pats)
                    else:
                        self.scan(d, L.WherePattern("event", c.trigger))
        else:
            self.out(0, f"fact {f.name}: derived")
            self.out(1, f"Coalesce identity ({ident})")
            self.out(2, f"FactSource {self.pattern(f.template)}")
            d = self.filters(3, f.filters)
            facts = tuple(wp for wp in f.body if wp.kind == "fact")
            other = tuple(wp for wp in f.body if wp.kind != "fact")
            if other:
                self.out(d, "Join with background")
                d += 1
            self.join(d, facts, label="IntervalJoin")
            for wp in other:
                self.scan(d, wp)

    # -------------------------------------------------------------- queries
    def aggregate_query(self, q: L.AggregateQuery) -> None:
        self.out(0, f"query {q.name}: aggregate")
        self.out(1, f"Tick every {format_ms(q.every_ms)}")
        self.out(2, "Project " + ", ".join(f"{p.name} := {self.expr(p.expr)}" for p in q.select))
        d = 3
        if q.having:
            self.out(d, "Having " + " && ".join(self.expr(e) for e in q.having))
            d += 1
        aggs = ", ".join(
            f"?{a.alias} := {a.func}({'DISTINCT ' if a.distinct else ''}{self.expr(a.arg) if a.arg is not None else '*'})"
            for a in q.aggregates)
        by = ", ".join("?" + v.name for v in q.group_by)
        self.out(d, f"Aggregate by ({by}): {aggs}")
        d += 1
        if q.while_ is not None:
            self.scan(d, q.while_, label="While scope: Scan")
            d += 1
        d = self.filters(d, q.filters)
        self.join(d, q.where)

    def windowed_query(self, q: L.WindowedQuery) -> None:
        reg = ", registers a stream" if q.registers_stream else ""
        r2s = f", {q.r2s.upper()}" if q.r2s != "rstream" else ""
        self.out(0, f"query {q.name}: windowed {q.form}{reg}{r2s}")
        if q.select_names:
            self.out(1, "Output " + ", ".join(q.select_names))
        for i, w in enumerate(q.windows):
            step = "tumbling" if w.step_ms == w.range_ms else f"step {format_ms(w.step_ms)}"
            stream = f"<{w.iri}>" if w.iri else "(default stream)"
            name = f"<{q.window_names[i]}> on " if i < len(q.window_names) and q.window_names[i] else ""
            self.out(1, f"Window {name}{stream} range {format_ms(w.range_ms)} {step}")
        if any(q.window_names) and len(q.windows) > 1:
            self.out(1, "Windows merged: every WINDOW <w> { P } pattern reads all windows' content (docs/front-end.md, RSP-QL)")
        for g in q.background:
            self.out(1, f"Background <{g}>")
        self.out(1, "SPARQL algebra (per window)")
        try:
            algebra = _algebra(q.sparql)
        except Exception as e:  # the bind step already checked it; keep explain total anyway
            self.out(2, f"(rdflib cannot translate it: {e})")
            return
        self.algebra(2, algebra)

    def algebra(self, depth: int, node: Any) -> None:
        from rdflib.plugins.sparql.parserutils import CompValue

        if isinstance(node, CompValue):
            simple: list[str] = []
            nested: list[tuple[str, Any]] = []
            for k, v in node.items():
                if k.startswith("_") or v is None or k in ("datasetClause", "prologue", "PV") and node.name != "Project":
                    continue
                if isinstance(v, CompValue) or (isinstance(v, (list, tuple)) and any(isinstance(x, CompValue) for x in v)):
                    nested.append((k, v))
                elif k == "PV" or isinstance(v, (set, frozenset)):
                    # rdflib builds these from sets: sort them so the text is deterministic
                    simple.append(f"{k}=[{', '.join(sorted(self.rdf(x) for x in v))}]")
                elif k == "triples":  # a BGP: in an order rdflib's random blank-node labels do not change
                    simple.append(f"{k}={self.rdf(stable_triple_order(list(v)))}")
                else:
                    simple.append(f"{k}={self.rdf(v)}")
            self.out(depth, node.name + (" " + " ".join(simple) if simple else ""))
            for k, v in nested:
                if isinstance(v, CompValue):
                    if k in ("p", "p1", "p2"):
                        self.algebra(depth + 1, v)
                    else:
                        self.out(depth + 1, f"{k}:")
                        self.algebra(depth + 2, v)
                else:
                    self.out(depth + 1, f"{k}:")
                    for x in v:
                        self.algebra(depth + 2, x)
        else:
            self.out(depth, self.rdf(node))

    def rdf(self, v: Any) -> str:
        from rdflib.plugins.sparql.parserutils import CompValue
        from rdflib.term import BNode, Identifier, Variable

        if isinstance(v, Variable):
            return "?" + str(v)
        if isinstance(v, BNode):
            return self.bnodes.setdefault(str(v), f"_:b{len(self.bnodes)}")
        if isinstance(v, Identifier):
            return self.term(v.n3())
        if isinstance(v, CompValue):
            return "{" + v.name + "}"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(self.rdf(x) for x in v) + "]"
        if isinstance(v, (set, frozenset)):
            return "{" + ", ".join(sorted(self.rdf(x) for x in v)) + "}"
        return str(v)


def _algebra(sparql: str) -> Any:
    from rdflib.plugins.sparql import prepareQuery

    return prepareQuery(sparql).algebra


def pattern_text(doc: L.Document, pattern: L.Pattern) -> str:
    """A triple pattern as explain writes it (IRIs abbreviated with the document's prefixes)."""
    return _Printer(doc).pattern(pattern)


def explain(doc: L.Document) -> str:
    """The logical plan of `doc` as text: facts in dependency order, then queries in order."""
    p = _Printer(doc)
    declared = [(k, v) for k, v in doc.prefixes if (k, v) not in PREDECLARED_PREFIXES]
    p.out(0, f"document {doc.source}")
    if doc.base:
        p.out(1, f"base <{doc.base}>")
    for k, v in declared:
        p.out(1, f"prefix {k}: <{v}>")
    for f in doc.facts:
        p.out(0, "")
        p.fact(f)
    for q in doc.queries:
        p.out(0, "")
        if isinstance(q, L.AggregateQuery):
            p.aggregate_query(q)
        else:
            p.windowed_query(q)
    return "\n".join(p.lines) + "\n"
