"""Facts read off a SPARQL query: its text, token by token (comments, IRIs and strings skipped),
and the shape of its rdflib algebra.

`star_order`: the columns of `SELECT *`. SPARQL 1.1 projects every in-scope variable; rdflib's
algebra holds them in a Python set, whose order follows the string hash seed (different in every
process, so on Spark's driver and its workers). tefq lists them in the order they first appear in
the query text: deterministic, the same on every engine and worker (docs/windowed-sparql.md).
"""
from __future__ import annotations

import re
from typing import Iterable, Iterator

_TOKENS = re.compile(r"""
      (?P<skip>\#[^\n]*
        | <[^<>"{}|^`\\\s]*>
        | '''(?:[^'\\]|\\.|'(?!''))*'''
        | \"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
        | '(?:[^'\\\n]|\\.)*'
        | "(?:[^"\\\n]|\\.)*")
    | [?$](?P<var>[A-Za-z0-9_\u00B7\u00C0-\uFFFF]+)
""", re.VERBOSE)


def variables_in_order(sparql: str) -> Iterator[str]:
    """Every variable name of the text, in order of appearance (repeats included)."""
    for m in _TOKENS.finditer(sparql):
        if m.group("var"):
            yield m.group("var")


def star_order(sparql: str, projected: Iterable[object]) -> tuple[str, ...]:
    """The variables of `projected` (rdflib's `SELECT *` set) in order of first appearance."""
    wanted = {str(v) for v in projected}
    seen = dict.fromkeys(v for v in variables_in_order(sparql) if v in wanted)
    return tuple(seen) + tuple(sorted(wanted - set(seen)))  # (none left: every variable is in the text)


def walk(node, seen: set | None = None) -> Iterator:
    """Every node of an rdflib algebra below `node` (itself included), each once, parents first
    (a caller may change a node before its parts are walked)."""
    from rdflib.plugins.sparql.parserutils import CompValue

    seen = set() if seen is None else seen
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, CompValue):
        yield node
        for v in children(node):
            yield from walk(v, seen)
    elif isinstance(node, (list, tuple)):
        for v in node:
            yield from walk(v, seen)


def children(node) -> list:
    """A node's parts; an EXISTS's pattern is its translated algebra (rdflib sets it as an
    attribute and leaves the parse tree in the item)."""
    if node.name in ("Builtin_EXISTS", "Builtin_NOTEXISTS"):
        return [node.graph]
    return [v for k, v in node.items() if k != "_vars"]


def top_level_order(algebra) -> bool:
    """Whether the query's own solution modifiers include ORDER BY (rdflib's algebra: an OrderBy
    under the top Slice / Distinct / Reduced / Project / Extend nodes)."""
    node = getattr(algebra, "p", None)
    while getattr(node, "name", None) in ("Slice", "Distinct", "Reduced", "Project", "Extend", "ToMultiSet"):
        node = node.p
    return getattr(node, "name", None) == "OrderBy"


_IRI = re.compile(r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$", re.S)


def resolve_iri(base: str, ref: str) -> str:
    """`ref` resolved against `base` by RFC 3986 §5.2 (Python's urljoin drops an empty fragment:
    `PREFIX : <#>` under `BASE <http://example.org/x/>` is `http://example.org/x/#`)."""
    r = _IRI.match(ref).groups()  # type: ignore[union-attr]
    b = _IRI.match(base).groups()  # type: ignore[union-attr]
    frag = "#" + r[4] if r[4] is not None else ""
    if r[0] is not None:
        return _joined(r[0], r[1], _without_dots(r[2]), r[3]) + frag
    if r[1] is not None:
        return _joined(b[0], r[1], _without_dots(r[2]), r[3]) + frag
    if not r[2]:
        return _joined(b[0], b[1], b[2], r[3] if r[3] is not None else b[3]) + frag
    if r[2].startswith("/"):
        path = r[2]
    elif b[1] is not None and not b[2]:
        path = "/" + r[2]
    else:
        path = b[2][:b[2].rfind("/") + 1] + r[2]
    return _joined(b[0], b[1], _without_dots(path), r[3]) + frag


def _joined(scheme: str | None, authority: str | None, path: str, query: str | None) -> str:
    return ((scheme + ":") if scheme is not None else "") + (("//" + authority) if authority is not None else "") + \
        path + (("?" + query) if query is not None else "")


def _without_dots(path: str) -> str:
    """RFC 3986 §5.2.4: `.` and `..` segments removed."""
    out: list[str] = []
    while path:
        if path.startswith(("../", "./")):
            path = path[path.index("/") + 1:]
        elif path.startswith("/./") or path == "/.":
            path = "/" + path[3:]
        elif path.startswith("/../") or path == "/..":
            path = "/" + path[4:]
            if out:
                out.pop()
        elif path in (".", ".."):
            path = ""
        else:
            cut = path.find("/", 1)
            segment, path = (path, "") if cut < 0 else (path[:cut], path[cut:])
            out.append(segment)
    return "".join(out)


def stable_triple_order(triples: list) -> list:
    """A BGP's triple patterns in an order that does not depend on rdflib's blank-node labels
    (random in every process: `[ ]` and `( ... )` make them, and rdflib sorts a BGP by them);
    without blank nodes, as they are. A
    blank node is known by its neighbourhood: colours refined three times from the predicates and
    terms around it, as graph canonicalisation does; what is left tied is symmetric."""
    from rdflib import BNode

    colour = {t: "" for triple in triples for t in triple if isinstance(t, BNode)}
    if not colour:
        return triples  # rdflib's own order, deterministic without blank nodes
    for _ in range(3):
        colour = {b: repr(sorted((pos, _key(triple, colour, b)) for triple in triples
                                 for pos, t in enumerate(triple) if t == b)) for b in colour}
    return sorted(triples, key=lambda triple: _key(triple, colour, None))


def _key(triple, colour: dict, me) -> tuple:
    return tuple("@" if t == me else f"_:{colour[t]}" if t in colour else f"{type(t).__name__}:{t}" for t in triple)


__all__ = ["star_order", "top_level_order", "variables_in_order", "resolve_iri", "stable_triple_order", "walk",
           "children"]
