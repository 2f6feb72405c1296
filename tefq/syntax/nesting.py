"""How deeply a query may nest, checked on its text before anything recursive reads it.

The parsers, the binder, rdflib's SPARQL parser and the evaluators recurse once (rdflib: some
thirty Python frames) per level of `( )`, `{ }` or `[ ]`. A document nested deeper than
`MAX_NESTING` is exit 2 at the bracket that goes one level too far; up to it, every stage runs
with room to recurse (`deep_recursion`: SPARQL allows any nesting, and 40 nested `{ }` needed more
than Python's default 1,000 frames in rdflib). docs/language.md, "Limits".
"""
from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator

from tefq.errors import TefqError
from tefq.errors import Span

MAX_NESTING = 64
RECURSION_LIMIT = 12_000  # Python frames: MAX_NESTING levels of rdflib's parser and algebra, with room

# What a bracket inside does not count for (strings, IRIs, comments), then the brackets themselves.
_TOKENS = re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*"""' r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
                     r'|"(?:[^"\\\n]|\\.)*"' r"|'(?:[^'\\\n]|\\.)*'"
                     r'|<[^<>"{}|^`\\\x00-\x20]*>|#[^\n]*|[()\[\]{}]', re.S)


def check_nesting(text: str, file: str | None = None, limit: int = MAX_NESTING) -> None:
    """Exit 2, located at the offending bracket, if `text` nests brackets more than `limit` deep."""
    depth = 0
    for m in _TOKENS.finditer(text):
        token = m.group()
        if token in ("(", "[", "{"):
            depth += 1
            if depth > limit:
                line = text.count("\n", 0, m.start()) + 1
                start = text.rfind("\n", 0, m.start()) + 1
                end = text.find("\n", m.start())
                raise TefqError(f"nested more than {limit} deep (brackets, braces and parentheses together)",
                                file, line, m.start() - start + 1, text[start:end if end >= 0 else len(text)])
        elif token in (")", "]", "}"):
            depth = max(0, depth - 1)


def first_bracket(text: str, bracket: str) -> int | None:
    """The offset of the first `bracket` of `text` outside strings, IRIs and comments."""
    return next((m.start() for m in _TOKENS.finditer(text) if m.group() == bracket), None)


@contextlib.contextmanager
def deep_recursion() -> Iterator[None]:
    """Room for a recursive reader of a query `check_nesting` accepted (restored after)."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


MAX_TREE_DEPTH = 256  # syntax-tree levels (a chain `a + b + c` is one level per operator)


def check_depth(document: object, file: str | None, source: str) -> None:
    """Exit 2, located at the node, if the syntax tree of `document` is deeper than MAX_TREE_DEPTH:
    brackets aside, a long chain of operators nests one level each, and what reads the tree
    recurses over it. Walked without recursion."""
    import dataclasses


    stack: list[tuple[object, int, Span]] = [(document, 0, Span())]
    while stack:
        node, depth, where = stack.pop()
        if isinstance(node, (tuple, list)):
            stack.extend((child, depth, where) for child in node)
        elif dataclasses.is_dataclass(node) and not isinstance(node, (type, Span)):
            span = getattr(node, "span", None)
            where = span if span is not None and span.line else where  # the nearest node with a place
            if depth > MAX_TREE_DEPTH:
                raise TefqError(f"nested more than {MAX_TREE_DEPTH} deep (a chain of operators counts one level "
                                "each): split the expression", file, where.line, where.column).located(file, source)
            stack.extend((getattr(node, f.name), depth + 1, where) for f in dataclasses.fields(node))
