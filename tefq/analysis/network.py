"""No query reaches the network: the SPARQL that rdflib would dereference a URL for is refused.

What rdflib 7's SPARQL evaluator can fetch, and what tefq does about each:
- `SERVICE <url> { ... }` (also `SERVICE SILENT`, inside OPTIONAL, a subquery or EXISTS): an HTTP
  request to `url` carrying the solutions bound so far (a `VALUES` block of the stream's data).
  Refused here, when the document is bound, on every engine.
- `FROM <url>` / `FROM NAMED <url>`: loaded from the web only when the queried graph is a Dataset
  without that graph. tefq evaluates over a plain Graph and clears the dataset clauses (a `FROM`
  names --background data; `FROM NAMED` is refused by the bind step), so nothing is fetched.
- `LOAD <url>` and the rest of SPARQL Update: not a query; the grammar does not parse them.
"""
from __future__ import annotations

import re
from typing import Any

# rdflib algebra node -> the keyword a user wrote
REMOTE_NODES = {"ServiceGraphPattern": "SERVICE"}

# SPARQL tokens that may contain a keyword's letters without being the keyword: comments, IRIs,
# strings, variables, prefixed names. The first alternatives win, so a keyword inside them is skipped.
_TOKENS = re.compile(r"""
      \#[^\n]*
    | <[^<>"{}|^`\\\s]*>
    | '''(?:[^'\\]|\\.|'(?!''))*'''
    | \"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
    | '(?:[^'\\\n]|\\.)*'
    | "(?:[^"\\\n]|\\.)*"
    | [?$]\w+
    | [A-Za-z_][\w.-]*:[\w.:-]*
    | :[\w.:-]*
    | (?P<word>[A-Za-z_]\w*)
""", re.VERBOSE)


def remote_constructs(algebra: Any) -> list[str]:
    """The keywords of the constructs in an rdflib query algebra that would reach the network."""
    from rdflib.plugins.sparql.parserutils import CompValue

    found: list[str] = []
    seen: set[int] = set()
    stack = [algebra]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, CompValue):
            if node.name in REMOTE_NODES:
                found.append(REMOTE_NODES[node.name])
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return found


def keyword_offset(text: str, keyword: str) -> int:
    """The offset of the first `keyword` (any case) in SPARQL `text` used as a keyword, not inside
    a comment, IRI, string, variable or prefixed name; -1 if there is none."""
    for m in _TOKENS.finditer(text):
        if m.group("word") is not None and m.group("word").upper() == keyword:
            return m.start()
    return -1


def refusal(keyword: str) -> str:
    """Why a query with `keyword` (SERVICE) is refused."""
    return (f"{keyword} is not supported: it would send the query's bindings (the stream's data) to another "
            "server, and tefq queries never reach the network; load that data with --background instead")


__all__ = ["REMOTE_NODES", "remote_constructs", "keyword_offset", "refusal"]
