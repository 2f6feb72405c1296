"""What the Spark planners share: clause and aggregate planning, and `Refusal`, the value a planner
returns for a shape it does not run (the registry, tefq.spark.shapes, then asks the next planner),
and the buckets a plan is offered.

Spark-free: dataclasses over the logical plan (`tefq.plan.logical`); the event kinds come from the
numpy kernels.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from tefq.errors import TefqError
from tefq.plan.logical import Call, Expr, Pattern, Term, Var
from tefq.spark.kernels.intervals import SINCE, UNTIL  # ClausePlan.kind: the event kinds (= RowKind's)

POSITIONS = ("s", "p", "o")


@dataclass(frozen=True)
class Refusal:
    """Why a planner does not run a query (`what` is not supported), and where."""

    what: str
    line: int = 0
    column: int = 0
    suffix: str = " is not yet supported on Spark (try --engine oracle)"

    @staticmethod
    def at(what: str, span=None) -> "Refusal":
        return Refusal(what, getattr(span, "line", 0) if span is not None else 0,
                       getattr(span, "column", 0) if span is not None else 0)

    @property
    def reason(self) -> str:
        """The fallback plan's note on why the vectorised operators do not run the query."""
        return f"{self.what} not supported" if self.suffix else self.what

    def error(self) -> TefqError:
        return TefqError(self.what + self.suffix, line=self.line, column=self.column)


@dataclass(frozen=True)
class ClausePlan:
    """One SINCE/UNTIL trigger as column conditions: `consts` are (column, N-Triples term) that
    must match, `same` pairs of columns that must be equal (a repeated variable), and `binds`
    the column of each identity variable."""

    kind: int  # SINCE or UNTIL
    consts: tuple[tuple[str, str], ...]
    same: tuple[tuple[str, str], ...]
    binds: tuple[str, ...]  # per identity variable

    @property
    def determines_element(self) -> bool:
        """The clause's constants and identity columns (and columns equal to those) are s, p and o."""
        known = {col for col, _ in self.consts} | set(self.binds)
        for _ in range(2):
            known |= {b for a, b in self.same if a in known} | {a for a, b in self.same if b in known}
        return known >= {"s", "p", "o"}

    def explain(self, identity: tuple[str, ...]) -> str:
        kind = "SINCE" if self.kind == SINCE else "UNTIL"
        cond = " AND ".join([f"{col} = {t}" for col, t in self.consts] + [f"{a} = {b}" for a, b in self.same])
        binds = ", ".join(f"?{v}<-{col}" for v, col in zip(identity, self.binds))
        return f"{kind}: {cond or 'true'}; binds {binds}"


@dataclass(frozen=True)
class AggPlan:
    alias: str
    op: str  # count | count_distinct | sum_duration | avg_duration


def clause_plan(kind: int, pattern: Pattern, identity: tuple[str, ...]) -> ClausePlan:
    """A trigger pattern as column conditions (a clause that does not bind the identity is an error)."""
    shape = pattern.shape()
    consts = [(POSITIONS[i], term) for i, term in shape.consts]
    same = [(POSITIONS[i], POSITIONS[j]) for i, j in shape.same]
    first = {name: POSITIONS[i] for name, i in shape.first.items()}
    missing = [v for v in identity if v not in first]
    if missing:
        raise TefqError(f"clause does not bind ?{missing[0]}", line=pattern.span.line, column=pattern.span.column)
    return ClausePlan(kind, tuple(consts), tuple(same), tuple(first[v] for v in identity))


def is_duration_of(e: Expr | None, interval: tuple[Var, Var] | None) -> bool:
    """`e` is DURATION(?S, ?E) of the pattern's interval variables."""
    return (isinstance(e, Call) and e.op == "DURATION" and interval is not None
            and tuple(e.args) == tuple(interval))


def check_projection(e: Expr, names: set[str], q) -> Refusal | None:
    """SELECT expressions the driver evaluates: group variables, aggregates and `+ - * /`."""
    if isinstance(e, Var):
        if e.name not in names:
            return Refusal.at(f"projecting ?{e.name} (neither a group variable nor an aggregate)", q.span)
    elif isinstance(e, Call):
        if e.op not in ("+", "-", "*", "/", "neg"):
            return Refusal.at(f"the function {e.op} in a SELECT expression", q.span)
        for a in e.args:
            refusal = check_projection(a, names, q)
            if refusal is not None:
                return refusal
    return None


def check_projections(q) -> Refusal | None:
    names = {g.name for g in q.group_by} | {a.alias for a in q.aggregates}
    return next((r for r in (check_projection(p.expr, names, q) for p in q.select) if r is not None), None)


def groups_and_aggregates(q, rename: dict[str, str], identity: tuple[str, ...], bound_by: str, plan_aggregates):
    """The checks both aggregate planners make after unifying the WHERE pattern, in order: every
    GROUP BY variable bound by the pattern, the aggregates (`plan_aggregates(q, rename, identity)`),
    the SELECT expressions. The planned aggregates, or a Refusal."""
    unbound = next((g for g in q.group_by if g.name not in rename), None)
    if unbound is not None:
        return Refusal.at(f"GROUP BY ?{unbound.name} not bound by {bound_by}", q.span)
    aggs = plan_aggregates(q, rename, identity)
    return aggs if isinstance(aggs, Refusal) else check_projections(q) or aggs


def rename_expr(e: Expr, rename: dict[str, str]) -> Expr:
    # Group variables are carried under their template names; aggregate aliases keep theirs.
    if isinstance(e, Var):
        return Var("group:" + rename[e.name]) if e.name in rename else e
    if isinstance(e, Call):
        return Call(e.op, tuple(rename_expr(a, rename) for a in e.args))
    return e


def projections(q, rename: dict[str, str]) -> tuple[tuple[str, Expr], ...]:
    """The SELECT list with group variables renamed to the fact template's names."""
    return tuple((p.name, rename_expr(p.expr, rename)) for p in q.select)


def having(q, rename: dict[str, str]) -> tuple[Expr, ...]:
    """HAVING's constraints with group variables renamed as in `projections` (the driver's
    Collector evaluates them over each group's row: tefq.spark.output.having_kept)."""
    return tuple(rename_expr(e, rename) for e in q.having)


def unify(pattern: Pattern, template: Pattern, what: str, strict: bool = True) -> dict[str, str] | Refusal:
    """pattern variable -> template variable, for a pattern that matches the template position by
    position. `strict`: two pattern variables may not name one template variable either."""
    rename: dict[str, str] = {}
    for wn, tn in zip((pattern.s, pattern.p, pattern.o), (template.s, template.p, template.o)):
        if isinstance(wn, Var) and isinstance(tn, Var):
            taken = strict and tn.name in {v for k, v in rename.items() if k != wn.name}
            if rename.get(wn.name, tn.name) != tn.name or taken:
                return Refusal.at(f"a repeated variable in {what}", pattern.span)
            rename[wn.name] = tn.name
        elif not (isinstance(wn, Term) and isinstance(tn, Term) and wn == tn):
            return Refusal.at(f"constants in {what}", pattern.span)
    return rename


def shuffle_partitions(cores: int) -> int:
    """The session's shuffle partitions, and so the buckets a plan is offered: one per core (each
    partition of a stateful operator costs every micro-batch a task, a state store commit and a
    sink file: docs/spark.md "Measured"), at least 2; TEFQ_SPARK_PARTITIONS overrides."""
    return int(os.environ.get("TEFQ_SPARK_PARTITIONS") or max(2, cores))
