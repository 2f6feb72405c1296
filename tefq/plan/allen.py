"""Allen's thirteen interval relations as the plan names them (spec §11).

A relation call in the logical plan is `Call("ALLEN:<REL>", (as, ae, bs, be, *tolerances))`: the
four times are expressions; the tolerances, checked by the bind step, are integer-millisecond
terms. The oracle (`tefq.semantics.allen`) gives them their meaning; this module only names them.
"""
from __future__ import annotations

from tefq.plan.logical import Call, Expr, Term
from tefq.terms import XSD_INTEGER, literal

OP_PREFIX = "ALLEN:"

# relation -> how many tolerances it accepts (BEFORE/AFTER: a gap range; the others: one `tol`
# for each of their equality tests; OVERLAPS/DURING/CONTAINS test no equality, so none).
TOLERANCES: dict[str, tuple[int, ...]] = {
    "BEFORE": (0, 2), "AFTER": (0, 2),
    "MEETS": (0, 1), "METBY": (0, 1),
    "OVERLAPS": (0,), "OVERLAPPEDBY": (0,),
    "STARTS": (0, 1), "STARTEDBY": (0, 1),
    "DURING": (0,), "CONTAINS": (0,),
    "FINISHES": (0, 1), "FINISHEDBY": (0, 1),
    "EQUALS": (0, 1),
}
RELATIONS = tuple(TOLERANCES)
TOLERANCE_NAMES = {2: ("min", "max"), 1: ("tol",)}


def is_allen_call(name: str, arity: int) -> bool:
    """Is a built-in call with this name and arity Allen's? (CONTAINS(a, b) is the string test.)"""
    return name in TOLERANCES and arity >= 4


def allen_op(relation: str) -> str:
    return OP_PREFIX + relation


def relation_of(op: str) -> str | None:
    """The relation a plan operator names, or None."""
    if op.startswith(OP_PREFIX) and op[len(OP_PREFIX):] in TOLERANCES:
        return op[len(OP_PREFIX):]
    return None


def ms_term(ms: int) -> Term:
    return Term(literal(str(ms), XSD_INTEGER))


def allen_call(relation: str, times: tuple[Expr, Expr, Expr, Expr], tolerances_ms: tuple[int, ...] = ()) -> Call:
    return Call(allen_op(relation), tuple(times) + tuple(ms_term(t) for t in tolerances_ms))


__all__ = ["RELATIONS", "TOLERANCES", "TOLERANCE_NAMES", "is_allen_call", "allen_op", "relation_of", "allen_call",
           "ms_term"]
