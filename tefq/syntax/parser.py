"""Text -> syntax tree: the lark LALR parser over `grammar/tef.lark` and a Transformer into the
frozen dataclasses of `tefq.syntax.ast`. Syntax errors become located TefqErrors."""
from __future__ import annotations

import functools
import re
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from tefq.errors import Span, TefqError
from tefq.syntax import ast
from tefq.syntax.nesting import check_depth, check_nesting, deep_recursion
from tefq.terms import RDF, XSD

GRAMMAR_NAME = "tef.lark"


def grammar_text() -> str:
    """The grammar, from the installed package (`tefq/grammar/`) or, in a checkout, `grammar/`."""
    try:
        res = resources.files("tefq") / "grammar" / GRAMMAR_NAME
        if res.is_file():
            return res.read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError, NotADirectoryError):
        pass
    return (Path(__file__).resolve().parents[2] / "grammar" / GRAMMAR_NAME).read_text(encoding="utf-8")


def parser_cache_file(text: str) -> Path | None:
    """Where the built LALR tables are kept between runs (building them takes ~0.7 s): a file per
    grammar and lark version under the user's cache directory; None when it cannot be created."""
    import hashlib
    import os
    import sys

    import lark

    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tefq"
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return root / f"tef-{digest}-lark{lark.__version__}-py{sys.version_info[0]}{sys.version_info[1]}.cache"


def build_parser(strict: bool = False, cache: bool = False) -> Lark:
    """A fresh LALR parser; tests build it with `strict=True` so that any conflict or terminal
    collision in the grammar fails loudly. With `cache`, the tables come from (and go to) the
    user's cache directory; lark checks the grammar's hash before using them."""
    import lark.lexer

    # With `interegular` installed, lark checks every pair of terminals for collisions on every
    # build (minutes for this grammar). That check is what `strict=True` is for: the strict test
    # runs it; ordinary builds skip it.
    text = grammar_text()
    cache_file = parser_cache_file(text) if cache and not strict else None
    saved = lark.lexer.has_interegular
    lark.lexer.has_interegular = strict and saved
    try:
        return Lark(text, parser="lalr", lexer="contextual", propagate_positions=True,
                    maybe_placeholders=False, strict=strict, cache=str(cache_file) if cache_file else False)
    finally:
        lark.lexer.has_interegular = saved


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    return build_parser(cache=True)


# ---------------------------------------------------------------- helpers
def _span(meta: Any) -> Span:
    if getattr(meta, "empty", True):
        return Span()
    return Span(meta.line, meta.column, meta.end_line, meta.end_column)


def _tspan(tok: Token) -> Span:
    return Span(tok.line or 0, tok.column or 0, tok.end_line or 0, tok.end_column or 0)


_ECHAR = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}
_STRING_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.S)


def _unescape_string(body: str) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1) or m.group(2):
            return chr(int(m.group(1) or m.group(2), 16))
        return _ECHAR.get(m.group(3), m.group(3))

    return _STRING_ESCAPE.sub(one, body)


def _string_value(tok: Token) -> str:
    text = str(tok)
    quote = 3 if text[:3] in ('"""', "'''") else 1
    return _unescape_string(text[quote:-quote])


def _pname(tok: Token) -> ast.PName:
    text = str(tok).rstrip()
    prefix, _, local = text.partition(":")
    local = re.sub(r"\\(.)", r"\1", local)
    return ast.PName(prefix, local, _tspan(tok))


def _is_tok(x: Any, *types: str) -> bool:
    return isinstance(x, Token) and (not types or x.type in types)


def _nodes(children: Iterable[Any]) -> list[Any]:
    """Children without keyword/punctuation tokens."""
    return [c for c in children if not isinstance(c, Token)]


def _flatten(items: Iterable[Any]) -> tuple[Any, ...]:
    out: list[Any] = []
    for it in items:
        if isinstance(it, tuple):
            out.extend(_flatten(it))
        elif it is not None and not isinstance(it, Token):
            out.append(it)
    return tuple(out)


def _xsd(local: str) -> ast.IriRef:
    return ast.IriRef(XSD + local)


# ---------------------------------------------------------------- the transformer
@v_args(meta=True)
class _ToAst(Transformer):
    """Builds `tefq.syntax.ast` nodes; rules of the SPARQL body stay lark Trees (not modelled)."""

    def __init__(self, text: str = "") -> None:
        super().__init__(visit_tokens=False)
        self._text = text
        self.timestamp_calls: list[tuple[int, int]] = []
        self.pname_uses: list[tuple[int, ast.PName]] = []
        self.window_patterns: list[ast.WindowPattern] = []
        self.offsets: dict[int, tuple[int, int]] = {}  # id of an IRI node -> where its text is
        self.path_rewrites: list[tuple[int, int, str]] = []  # (start, end, SPARQL that replaces it)

    # -- document and prologue
    def start(self, meta, ch):
        decls = tuple(c for c in ch if isinstance(c, (ast.BaseDecl, ast.PrefixDecl)))
        stmts = tuple(c for c in ch if isinstance(c, (ast.FactDef, ast.AggregateQuery, ast.WindowedQuery)))
        return ast.Document(decls, stmts)

    def base_decl(self, meta, ch):
        return ast.BaseDecl(str(ch[1])[1:-1], _span(meta))

    def prefix_decl(self, meta, ch):
        return ast.PrefixDecl(str(ch[1])[:-1], str(ch[2])[1:-1], _span(meta))

    def register(self, meta, ch):
        kind = str(ch[1]).upper()
        name = str(ch[2])
        if name.startswith("<"):
            name = name[1:-1]
        decls = tuple(c for c in ch[4:] if isinstance(c, (ast.BaseDecl, ast.PrefixDecl)))
        return ast.Register(kind, name, decls, _span(meta))  # type: ignore[arg-type]

    # -- facts
    def fact_def(self, meta, ch):
        name = next((str(c) for c in ch if _is_tok(c, "NAME")), None)
        template = next(c for c in ch if isinstance(c, ast.Triple))
        body = ch[-1]
        if body[0] == "event":
            return ast.FactDef(name, template, body[1], (), _span(meta))
        return ast.FactDef(name, template, None, body[1], _span(meta))

    def event_body(self, meta, ch):
        return ("event", tuple(c for c in ch if isinstance(c, ast.FactClause)))

    def derived_body(self, meta, ch):
        return ("derived", _flatten(ch))

    def clause(self, meta, ch):
        kind = str(ch[0]).upper()
        patterns = tuple(c for c in ch if isinstance(c, ast.Triple))
        filters = tuple(c for c in ch if isinstance(c, ast.FilterElem))
        return ast.FactClause(kind, patterns, filters, _span(meta))  # type: ignore[arg-type]

    # -- TEF patterns
    def tef_elems(self, meta, ch):
        return _flatten(ch)

    def fact_pattern(self, meta, ch):
        triple = ch[0]
        interval = ch[1] if len(ch) > 1 else None
        return ast.PatternElem(triple, False, interval, _span(meta))

    def current_pattern(self, meta, ch):
        triple = ch[1]
        interval = ch[2] if len(ch) > 2 else None
        return ast.PatternElem(triple, True, interval, _span(meta))

    def interval(self, meta, ch):
        return (ch[0], ch[1])

    def tef_triple(self, meta, ch):
        s, p, o = (self._term(c) for c in ch)
        return ast.Triple(s, p, o, _span(meta))

    def _term(self, c: Any) -> Any:
        if _is_tok(c, "A"):
            return ast.IriRef(RDF + "type", _tspan(c))
        return c

    def filter(self, meta, ch):
        return ast.FilterElem(ch[1], _span(meta))

    # -- SELECT
    def select_clause(self, meta, ch):
        items: list[Any] = []
        star = False
        for c in ch:
            if _is_tok(c, "STAR"):
                star = True
            elif isinstance(c, (ast.SelectItem, ast.AggregateBlock)):
                items.append(c)
            elif not isinstance(c, Token):  # a bare item the `?` rule inlined
                items.append(ast.SelectItem(c, None, getattr(c, "span", Span())))
        return ("select", None if star else tuple(items), _span(meta))

    def select_bare(self, meta, ch):
        return ast.SelectItem(ch[0], None, _span(meta))

    def select_named(self, meta, ch):
        name = ch[2]
        name = name.name if isinstance(name, ast.Var) else str(name)
        return ast.SelectItem(ch[0], name, _span(meta))

    def select_sparql(self, meta, ch):
        return ast.SelectItem(ch[0], ch[2].name, _span(meta))

    def aggregate_block(self, meta, ch):
        leading: list[ast.Var] = []
        aggs: list[ast.AggItem] = []
        where: tuple[Any, ...] = ()
        group_by = None
        having: tuple[Any, ...] = ()
        while_ = None
        every = None
        for c in ch:
            if isinstance(c, ast.Var):
                leading.append(c)
            elif isinstance(c, ast.AggItem):
                aggs.append(c)
            elif isinstance(c, tuple) and c and c[0] == "where":
                where = c[1]
            elif isinstance(c, tuple) and c and c[0] == "group":
                group_by = c[1]
            elif isinstance(c, tuple) and c and c[0] == "having":
                having = c[1]
            elif isinstance(c, ast.WhileClause):
                while_ = c
            elif isinstance(c, ast.Duration):
                every = c
        return ast.AggregateBlock(tuple(leading), tuple(aggs), where, group_by, while_, every, _span(meta), having)

    def _agg(self, meta, ch, distinct: bool, star: bool):
        func = str(ch[0]).upper()
        alias = ch[-1] if isinstance(ch[-1], ast.Var) and len(ch) >= 3 and _is_tok(ch[-2], "AS") else None
        rest = [c for c in ch[1:] if not isinstance(c, Token)]
        if alias is not None:
            rest = rest[:-1]
        arg = None if star else rest[0]
        distinct = distinct or any(_is_tok(c, "DISTINCT") for c in ch)
        return ast.AggItem(func, arg, distinct, alias, _span(meta))

    def agg_func(self, meta, ch):
        return self._agg(meta, ch, False, False)

    def agg_func_distinct(self, meta, ch):
        return self._agg(meta, ch, True, False)

    def agg_count_star(self, meta, ch):
        return self._agg(meta, ch, False, True)

    def tef_where(self, meta, ch):
        return ("where", _flatten(ch))

    def tef_group(self, meta, ch):
        return ("group", tuple(c for c in ch if isinstance(c, ast.Var)))

    def tef_having(self, meta, ch):
        return ("having", tuple(c for c in ch if not isinstance(c, Token)))

    def tef_while(self, meta, ch):
        nodes = _nodes(ch)
        elem = ast.PatternElem(nodes[0], False, nodes[1] if len(nodes) > 1 else None, _span(meta))
        return ast.WhileClause(elem, _span(meta))

    def every(self, meta, ch):
        return ch[1]

    def duration_word(self, meta, ch):
        return ast.Duration(str(ch[0]), None, _span(meta))

    def duration_literal(self, meta, ch):
        return ast.Duration(ch[0].lexical, ch[1] if len(ch) > 1 else None, _span(meta))

    def select_query(self, meta, ch):
        _, items, _ = ch[0]
        return ("query", "select", items, ch[1:], meta)

    def construct_query(self, meta, ch):
        return ("query", "construct", None, ch[1:], meta)

    construct_where = construct_query

    def ask_query(self, meta, ch):
        return ("query", "ask", None, ch[1:], meta)

    def from_stream(self, meta, ch):
        nodes = _nodes(ch)
        iri = next((c for c in nodes if isinstance(c, (ast.IriRef, ast.PName))), None)
        win = next((c for c in nodes if isinstance(c, tuple) and c[0] == "window"), None)
        rng, step, tumbling = (win[1], win[2], win[3]) if win else (None, None, False)
        return ast.StreamClause(iri, rng, step, tumbling, meta.start_pos, meta.end_pos, _span(meta))

    def window(self, meta, ch):
        durations = [c for c in ch if isinstance(c, ast.Duration)]
        tumbling = any(_is_tok(c, "TUMBLING") for c in ch)
        return ("window", durations[0], durations[1] if len(durations) > 1 else None, tumbling)

    def count_window(self, meta, ch):
        return ("count_window", int(next(c for c in ch if _is_tok(c, "INTEGER"))), _span(meta))

    def from_window(self, meta, ch):
        """RSP-QL's `FROM NAMED WINDOW <w> ON <s> [RANGE r STEP s]`: a stream clause with a name;
        without STEP the window is tumbling."""
        nodes = _nodes(ch)
        name, iri = nodes[0], nodes[1]
        win = nodes[2] if len(nodes) > 2 else None
        if win is not None and win[0] == "count_window":
            return ast.StreamClause(iri, None, None, False, meta.start_pos, meta.end_pos, _span(meta), name, win[1])
        rng, step = (win[1], win[2]) if win else (None, None)
        return ast.StreamClause(iri, rng, step, step is None, meta.start_pos, meta.end_pos, _span(meta), name)

    def window_graph(self, meta, ch):
        name, pattern = ch[1], ch[2]
        self.window_patterns.append(ast.WindowPattern(name, ch[0].start_pos, pattern.meta.start_pos, _span(meta)))
        return Tree("window_graph", ch, meta)

    def from_graph(self, meta, ch):
        return ("graph", ch[1])

    def from_named(self, meta, ch):
        return ("named", ch[2])

    def where_clause(self, meta, ch):
        return ("where_clause",)

    def select_statement(self, meta, ch):
        return self._statement(meta, ch)

    construct_statement = select_statement
    ask_statement = select_statement

    def _statement(self, meta, ch):
        register = ch[0] if isinstance(ch[0], ast.Register) else None
        _, form, items, rest, qmeta = ch[-1]
        span = _span(meta)
        block = None
        if form == "select" and items is not None:
            blocks = [i for i in items if isinstance(i, ast.AggregateBlock)]
            if blocks:
                if len(blocks) > 1:
                    raise TefqError("a query has one (AGGREGATE ...) block", None, blocks[1].span.line, blocks[1].span.column)
                block = blocks[0]
        every = next((c for c in rest if isinstance(c, ast.Duration)), None)
        if block is not None:
            self._check_aggregate_rest(rest, block)
            if every is not None and block.every is None:
                block = ast.AggregateBlock(block.leading_vars, block.aggregates, block.where, block.group_by,
                                           block.while_, every, block.span)
            select = tuple(i for i in items if isinstance(i, ast.SelectItem))
            return ast.AggregateQuery(register, select, block, span)
        streams = tuple(c for c in rest if isinstance(c, ast.StreamClause))
        graphs = tuple(c[1] for c in rest if isinstance(c, tuple) and c[0] == "graph")
        named = tuple(c[1] for c in rest if isinstance(c, tuple) and c[0] == "named")
        has_where = form == "construct" or any(isinstance(c, tuple) and c[0] == "where_clause" for c in rest)
        start, end = qmeta.start_pos, qmeta.end_pos
        ts = tuple(p for p in self.timestamp_calls if start <= p[0] < end)
        pnames = tuple(p for pos, p in self.pname_uses if start <= pos < end)
        windows = tuple(w for w in self.window_patterns if start <= w.start < end)
        rewrites = tuple(r for r in self.path_rewrites if start <= r[0] < end)
        return ast.WindowedQuery(register, form, items, streams, graphs, named, has_where, every,
                                 start, end, ts, pnames, span, windows, rewrites)

    def _check_aggregate_rest(self, rest: list[Any], block: ast.AggregateBlock) -> None:
        """A TEF aggregate query ends with its (AGGREGATE ...) block: SPARQL clauses after it are
        not part of the language."""
        for c in rest:
            if isinstance(c, (ast.StreamClause, Tree)) or (isinstance(c, tuple) and c[0] in ("graph", "named", "where_clause")):
                if isinstance(c, Tree) and c.data == "solution_modifier" and not c.children:
                    continue
                sp = c.span if isinstance(c, ast.StreamClause) else Span()
                if isinstance(c, Tree) and not c.meta.empty:
                    sp = _span(c.meta)
                raise TefqError("an aggregate query ends with its (AGGREGATE ...) block: put WHERE, GROUP BY"
                                " and EVERY inside it", None, sp.line or block.span.end_line,
                                sp.column or block.span.end_column)

    # -- expressions
    def _bin(self, op: str):
        def f(meta, ch):
            a, b = _nodes(ch)
            return ast.Call(op, (a, b), span=_span(meta))
        return f

    def or_(self, meta, ch):
        return self._bin("||")(meta, ch)

    def and_(self, meta, ch):
        return self._bin("&&")(meta, ch)

    def add(self, meta, ch):
        return self._bin("+")(meta, ch)

    def sub(self, meta, ch):
        return self._bin("-")(meta, ch)

    def mul(self, meta, ch):
        return self._bin("*")(meta, ch)

    def div(self, meta, ch):
        return self._bin("/")(meta, ch)

    def compare(self, meta, ch):
        return ast.Call(str(ch[1]), (ch[0], ch[2]), span=_span(meta))

    def in_(self, meta, ch):
        return ast.Call("in", (ch[0],) + ch[-1], span=_span(meta))

    def notin(self, meta, ch):
        return ast.Call("notin", (ch[0],) + ch[-1], span=_span(meta))

    def not_(self, meta, ch):
        return ast.Call("!", (ch[0],), span=_span(meta))

    def neg(self, meta, ch):
        return ast.Call("neg", (ch[0],), span=_span(meta))

    def pos(self, meta, ch):
        return ch[0]

    def arg_list(self, meta, ch):
        return (any(_is_tok(c, "DISTINCT") for c in ch), tuple(_nodes(ch)))

    def expression_list(self, meta, ch):
        return tuple(_nodes(ch))

    def function_call(self, meta, ch):
        tok = ch[0]
        text = re.sub(r"\s+$", "", str(tok))
        if tok.type == "IRIREF_CALL":
            func: ast.Iri = ast.IriRef(text[1:-1], _tspan(tok))
        else:
            func = _pname(tok)
            self.pname_uses.append((tok.start_pos, func))
        distinct, args = ch[1]
        return ast.Call("call", args, func=func, distinct=distinct, span=_span(meta))

    def function_builtin(self, meta, ch):
        tok = ch[0]
        name = str(tok).upper()
        if name == "TIMESTAMP":
            self.timestamp_calls.append((tok.start_pos, tok.end_pos))
        distinct, args = ch[1]
        return ast.Call(name, args, distinct=distinct, span=_span(meta))

    def exists(self, meta, ch):
        return ast.Exists(False, _span(meta))

    def not_exists(self, meta, ch):
        return ast.Exists(True, _span(meta))

    def aggregate_call(self, meta, ch):
        func = str(ch[0]).upper()
        arg = next((c for c in ch[1:] if not isinstance(c, Token)), None)
        return ast.AggregateCall(func, arg, any(_is_tok(c, "DISTINCT") for c in ch), _span(meta))

    def group_concat(self, meta, ch):
        arg = next(c for c in ch[1:] if not isinstance(c, Token))
        return ast.AggregateCall("GROUP_CONCAT", arg, any(_is_tok(c, "DISTINCT") for c in ch), _span(meta))

    # -- terms
    def var(self, meta, ch):
        return ast.Var(str(ch[0])[1:], _tspan(ch[0]))

    def iriref(self, meta, ch):
        node = ast.IriRef(str(ch[0])[1:-1], _tspan(ch[0]))
        self.offsets[id(node)] = (ch[0].start_pos, ch[0].end_pos)
        return node

    def pname(self, meta, ch):
        p = _pname(ch[0])
        self.pname_uses.append((ch[0].start_pos, p))
        self.offsets[id(p)] = (ch[0].start_pos, ch[0].end_pos)
        return p

    def path_not(self, meta, ch):
        """`!(a|^b)`: rdflib's parser drops the IRI of an inverse member, so such a set is
        rewritten into what it means, `(!(a)|^!(b))` (SPARQL 1.1 §9.3)."""
        members = ch[0].children if isinstance(ch[0], Tree) and ch[0].data == "path_negated" else [ch[0]]
        inverse = [m.children[0] for m in members if isinstance(m, Tree) and m.data == "path_inverse_one"]
        if inverse:
            forward = [m for m in members if not (isinstance(m, Tree) and m.data == "path_inverse_one")]
            text = "|".join(([f"!({self._members(forward)})"] if forward else []) + [f"^!({self._members(inverse)})"])
            self.path_rewrites.append((meta.start_pos, meta.end_pos, f"({text})"))
        return Tree("path_not", ch, meta)

    def _members(self, nodes: list) -> str:
        return "|".join("a" if isinstance(n, Token) else self._text[slice(*self.offsets[id(n)])] for n in nodes)

    def string(self, meta, ch):
        return ast.Literal(_string_value(ch[0]), None, None, _tspan(ch[0]))

    def literal(self, meta, ch):
        s: ast.Literal = ch[0]
        if len(ch) > 1:
            if _is_tok(ch[1], "LANGTAG"):
                return ast.Literal(s.lexical, None, str(ch[1])[1:], _span(meta))
            return ast.Literal(s.lexical, ch[1], None, _span(meta))
        return ast.Literal(s.lexical, None, None, _span(meta))

    def _num(self, meta, ch, dt: str, sign: str = ""):
        tok = next(c for c in ch if _is_tok(c, "INTEGER", "DECIMAL", "DOUBLE"))
        if not dt:
            dt = {"INTEGER": "integer", "DECIMAL": "decimal", "DOUBLE": "double"}[tok.type]
        return ast.Literal(sign + str(tok), _xsd(dt), None, _span(meta))

    def integer(self, meta, ch):
        return self._num(meta, ch, "integer")

    def decimal(self, meta, ch):
        return self._num(meta, ch, "decimal")

    def double(self, meta, ch):
        return self._num(meta, ch, "double")

    def neg_integer(self, meta, ch):
        return self._num(meta, ch, "integer", "-")

    def neg_decimal(self, meta, ch):
        return self._num(meta, ch, "decimal", "-")

    def neg_double(self, meta, ch):
        return self._num(meta, ch, "double", "-")

    def pos_number(self, meta, ch):
        return self._num(meta, ch, "")

    def true(self, meta, ch):
        return ast.Literal("true", _xsd("boolean"), None, _span(meta))

    def false(self, meta, ch):
        return ast.Literal("false", _xsd("boolean"), None, _span(meta))

    def bnode(self, meta, ch):
        return ast.BNode(str(ch[0])[2:], _tspan(ch[0]))

    def anon(self, meta, ch):
        return ast.BNode("", _span(meta))


# ---------------------------------------------------------------- syntax errors
_WORDS = {
    "LBRACE": "'{'", "RBRACE": "'}'", "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'",
    "DOT": "'.'", "COMMA": "','", "SEMICOLON": "';'", "STAR": "'*'", "SLASH": "'/'", "PLUS": "'+'",
    "MINUS": "'-'", "BANG": "'!'", "EQUAL": "'='", "OROR": "'||'", "ANDAND": "'&&'", "__ANON_0": "'^^'",
    "VAR": "a variable", "IRIREF": "an IRI", "PNAME_LN": "a prefixed name", "PNAME_NS": "a prefix",
    "NAME": "a name", "INTEGER": "a number", "DECIMAL": "a number", "DOUBLE": "a number",
    "STRING1": "a string", "STRING2": "a string", "STRING_LONG1": "a string", "STRING_LONG2": "a string",
    "DURATION_WORD": "a duration (10s, 500ms, 1m, PT10S)", "BUILTIN_FN": "a function call",
    "IRIREF_CALL": "a function call", "PNAME_CALL": "a function call", "REL_OP": "a comparison",
    "LANGTAG": "a language tag", "BLANK_NODE_LABEL": "a blank node", "OPEN_WHILE": "'[WHILE'",
    "MINUS_KW": "MINUS", "A": "'a'", "$END": "the end of the input",
}

# Common mistakes, recognised by the parser state they leave (lark's match_examples).
_EXAMPLES: dict[str, list[str]] = {
    "missing '}' to close the fact template": [
        "CONSTRUCT FACT F {?u :w ?c (UNION (SINCE ?u :j ?c))",
        "CONSTRUCT FACT F {?u :w ?c . (SINCE ?u :j ?c)",
    ],
    "missing ')': the (AGGREGATE ...) block or a clause is not closed": [
        'SELECT ?c (AGGREGATE ?c, COUNT ?u WHERE ?u :w ?c GROUP BY ?c EVERY "PT1M"',
        'SELECT ?c (AGGREGATE ?c, COUNT ?u WHERE (CURRENT ?u :w ?c GROUP BY ?c EVERY "PT1M")',
        "CONSTRUCT FACT F {?u :w ?c} (UNION (SINCE ?u :j ?c) (UNTIL ?u :q ?c)",
        "CONSTRUCT FACT F {?u :w ?c} (UNION (SINCE ?u :j ?c (UNTIL ?u :q ?c))",
    ],
    "missing WHERE before the pattern of the (AGGREGATE ...) block": [
        'SELECT ?c (AGGREGATE ?c, COUNT ?u (CURRENT ?u :w ?c) EVERY "PT1M")',
        'SELECT ?c (AGGREGATE ?c, COUNT ?u {?u :w ?c} EVERY "PT1M")',
    ],
    "bad duration: write e.g. EVERY \"PT10S\"^^xsd:duration, RANGE 10s, 500ms, 1m, 1h or PT1M": [
        'SELECT ?c (AGGREGATE ?c, COUNT ?u WHERE ?u :w ?c EVERY 10)',
        'SELECT ?c (AGGREGATE ?c, COUNT ?u WHERE ?u :w ?c EVERY ?x)',
        "REGISTER QUERY Q AS SELECT ?x FROM STREAM <s> [RANGE 10 TUMBLING] WHERE { ?x ?p ?o }",
        "REGISTER QUERY Q AS SELECT ?x FROM STREAM <s> [RANGE ?x TUMBLING] WHERE { ?x ?p ?o }",
    ],
}


def _describe(tok: Token | None) -> str:
    if tok is None or tok.type == "$END":
        return "the end of the input"
    return f"'{tok}'"


def _expected_words(expected: Iterable[str]) -> str:
    words = sorted({_WORDS.get(e, e) for e in expected if not e.startswith("__")} |
                   {_WORDS[e] for e in expected if e in _WORDS and e.startswith("__")})
    if len(words) > 12:
        words = words[:12] + ["..."]
    return ", ".join(words)


def _syntax_error(e: UnexpectedInput, text: str, filename: str) -> TefqError:
    label = None
    try:
        label = e.match_examples(_parser().parse, _EXAMPLES, use_accepts=True)
    except Exception:  # a failing example must never hide the user's error
        label = None
    if isinstance(e, UnexpectedCharacters):
        ch = text[e.pos_in_stream] if e.pos_in_stream < len(text) else ""
        msg = f"unexpected character '{ch}'"
        expected = e.allowed or set()
    elif isinstance(e, UnexpectedEOF):
        msg = "unexpected end of the input"
        expected = set(e.expected)
    elif isinstance(e, UnexpectedToken):
        msg = "unexpected end of the input" if e.token.type == "$END" else f"unexpected {_describe(e.token)}"
        expected = set(e.accepts or e.expected)
    else:  # pragma: no cover - lark has no other kinds
        msg, expected = "syntax error", set()
    if expected:
        msg += f"; expected {_expected_words(expected)}"
    if label:
        msg = f"{label} ({msg})"
    line, col = e.line, e.column
    at_end = isinstance(e, UnexpectedEOF) or (isinstance(e, UnexpectedToken) and e.token.type == "$END")
    if at_end or line in (None, -1):
        lines = text.splitlines() or [""]
        line, col = len(lines), len(lines[-1]) + 1
    err = TefqError(f"syntax error: {msg}", filename, line, col)
    return err.located(filename, text)


def parse(text: str, filename: str = "<input>") -> ast.Document:
    """Parse a .tef document into its syntax tree; a syntax error, or nesting deeper than
    `nesting.MAX_NESTING`, is a located TefqError."""
    check_nesting(text, filename)
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as e:
        raise _syntax_error(e, text, filename) from None
    try:
        with deep_recursion():
            document = _ToAst(text).transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, TefqError):
            raise e.orig_exc.located(filename, text) from None
        raise
    check_depth(document, filename, text)
    return document
