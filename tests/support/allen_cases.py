"""Allen's relations (spec §11): the query and events both engines' tests use, and the spec's table."""
from __future__ import annotations

from hypothesis import strategies as st

NS = "http://example.org/t#"


def iri(local: str) -> str:
    return f"<{NS}{local}>"


# ---------------------------------------------------------------- the table of §11, as printed
def _eq(x: int, y: int, tol: tuple[int, ...]) -> bool:
    return abs(x - y) <= (tol[0] if tol else 0)


SPEC_TABLE = {
    "BEFORE": lambda a_s, a_e, b_s, b_e, t: t[0] <= b_s - a_e <= t[1] if t else a_e < b_s,
    "AFTER": lambda a_s, a_e, b_s, b_e, t: t[0] <= a_s - b_e <= t[1] if t else b_e < a_s,
    "MEETS": lambda a_s, a_e, b_s, b_e, t: _eq(a_e, b_s, t),
    "METBY": lambda a_s, a_e, b_s, b_e, t: _eq(b_e, a_s, t),
    "OVERLAPS": lambda a_s, a_e, b_s, b_e, t: a_s < b_s and b_s < a_e and a_e < b_e,
    "OVERLAPPEDBY": lambda a_s, a_e, b_s, b_e, t: b_s < a_s and a_s < b_e and b_e < a_e,
    "STARTS": lambda a_s, a_e, b_s, b_e, t: _eq(a_s, b_s, t) and a_e < b_e,
    "STARTEDBY": lambda a_s, a_e, b_s, b_e, t: _eq(a_s, b_s, t) and b_e < a_e,
    "DURING": lambda a_s, a_e, b_s, b_e, t: b_s < a_s and a_e < b_e,
    "CONTAINS": lambda a_s, a_e, b_s, b_e, t: a_s < b_s and b_e < a_e,
    "FINISHES": lambda a_s, a_e, b_s, b_e, t: b_s < a_s and _eq(a_e, b_e, t),
    "FINISHEDBY": lambda a_s, a_e, b_s, b_e, t: a_s < b_s and _eq(a_e, b_e, t),
    "EQUALS": lambda a_s, a_e, b_s, b_e, t: _eq(a_s, b_s, t) and _eq(a_e, b_e, t),
}


DOC = """PREFIX : <http://example.org/t#>
CONSTRUCT FACT AFact {{?x :a ?y .}} (UNION (SINCE ?x :aon ?y) (UNTIL ?x :aoff ?y))
CONSTRUCT FACT BFact {{?x :b ?z .}} (UNION (SINCE ?x :bon ?z) (UNTIL ?x :boff ?z))
SELECT ?x AS X, ?y AS Y, ?z AS Z, ?n AS N
(AGGREGATE ?x, ?y, ?z, COUNT(*) AS ?n
 WHERE {{ ?x :a ?y [?S1,?E1] . ?x :b ?z [?S2,?E2] FILTER({rel}(?S1, ?E1, ?S2, ?E2{tols})) }}
 GROUP BY ?x ?y ?z EVERY "{d}ms")
"""


event = st.tuples(st.integers(0, 60), st.sampled_from(["u0", "u1"]),
                  st.sampled_from(["aon", "aoff", "bon", "boff"]), st.sampled_from(["c0", "c1"]))
