"""The W3C SPARQL 1.1 query-evaluation tests that fit one stream (../shared/external/w3c-sparql),
run as a windowed engine takes them: each test's data graph is one window's content, its query
text, unchanged, the body of a `REGISTER QUERY` over that window's stream.

    python bench/w3c.py [--engine oracle|spark|both] [--small-window N] [--show wrong]

runs every test through `tefq run` (one document per engine: every test a query over its own
stream, `FROM STREAM <urn:w3c:N>` bound by `--stream urn:w3c:N=PATH`) and prints the per-category
table: passed / wrong / refused (exit 2) / failed (exit 1); `--per-test` runs each test alone (what
a tefq without `--stream IRI=PATH` can do). tests/test_w3c.py runs the same in `make test` against
the expected-failure list `EXPECTED_FAILURES` below.

Results are compared as the W3C's own test rules say: a bag of solutions (in order under a
top-level ORDER BY, ties free), RDF terms equal, numbers of one datatype by value, blank nodes up
to renaming; CONSTRUCT graphs up to blank-node renaming; ASK by its boolean.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Iterable

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT.parent / "shared" / "external" / "w3c-sparql"
XSD = "http://www.w3.org/2001/XMLSchema#"
RS = "http://www.w3.org/2001/sw/DataAccess/tests/result-set#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_INTEGERS = {f"{XSD}{t}" for t in ("integer", "int", "long", "short", "byte", "nonNegativeInteger",
                                    "positiveInteger", "negativeInteger", "nonPositiveInteger", "unsignedLong",
                                    "unsignedInt", "unsignedShort", "unsignedByte")}

Row = tuple  # of N-Triples terms, None for unbound


@dataclass(frozen=True)
class Test:
    """One W3C test: `data` the window's triples (N-Triples terms), `query` the test's text."""

    id: str
    category: str
    form: str  # SELECT | ASK | CONSTRUCT
    query: str
    base: str
    data: tuple[tuple[str, str, str], ...]
    result: Path

    @property
    def stream(self) -> str:
        return "urn:w3c:" + self.id


@dataclass
class Expected:
    names: tuple[str, ...] = ()
    rows: list[Row] = field(default_factory=list)
    ordered: bool = False  # rows carry rs:index / the query orders them
    boolean: bool | None = None


# ---------------------------------------------------------------- reading the suite
def nt(term) -> str:
    """A pyoxigraph term as N-Triples (blank nodes as they are labelled)."""
    import pyoxigraph as ox

    if isinstance(term, ox.BlankNode):
        return "_:" + term.value
    return str(term)


def _triples(path: Path, base: str) -> list[tuple[str, str, str]]:
    import pyoxigraph as ox

    fmt = {".ttl": ox.RdfFormat.TURTLE, ".nt": ox.RdfFormat.N_TRIPLES, ".rdf": ox.RdfFormat.RDF_XML}[path.suffix]
    labels: dict[str, str] = {}
    out = []
    for t in ox.parse(path=str(path), format=fmt, base_iri=base + path.name):
        terms = []
        for x in (t.subject, t.predicate, t.object):
            if isinstance(x, ox.BlankNode):  # readable, stable labels (the parser's are hashes)
                terms.append("_:" + labels.setdefault(x.value, f"b{len(labels)}"))
            else:
                terms.append(str(x))
        out.append(tuple(terms))
    return out


def load(root: Path = SUITE) -> list[Test]:
    tests = []
    for e in json.loads((root / "tests.json").read_text()):
        data = tuple(_triples(root / e["data"], e["base"])) if e["data"] else ()
        tests.append(Test(e["id"], f"{e['suite']}/{e['dir']}", e["form"],
                          (root / e["query"]).read_text(encoding="utf-8"), e["base"], data, root / e["result"]))
    return tests


def expected(test: Test) -> Expected:
    """The W3C's answer: SPARQL results (XML / JSON / TSV), a result set in RDF (rs:), or a graph."""
    import pyoxigraph as ox

    path = test.result
    if path.suffix in (".srx", ".srj", ".tsv"):
        fmt = {".srx": ox.QueryResultsFormat.XML, ".srj": ox.QueryResultsFormat.JSON,
               ".tsv": ox.QueryResultsFormat.TSV}[path.suffix]
        res = ox.parse_query_results(path=str(path), format=fmt)
        if isinstance(res, ox.QueryBoolean):
            return Expected(boolean=bool(res))
        names = tuple(v.value for v in res.variables)
        return Expected(names, [tuple(None if s[n] is None else nt(s[n]) for n in names) for s in res])
    triples = _triples(path, test.base)
    if test.form == "CONSTRUCT":
        return Expected(("s", "p", "o"), [tuple(t) for t in triples])
    return _result_set(triples)


def _result_set(triples: list[tuple[str, str, str]]) -> Expected:
    """A DAWG result set in RDF (rs:ResultSet)."""
    by_s: dict[str, list[tuple[str, str]]] = {}
    for s, p, o in triples:
        by_s.setdefault(s, []).append((p, o))

    def one(s: str, p: str) -> str | None:
        return next((o for q, o in by_s.get(s, []) if q == f"<{RS}{p}>"), None)

    def lexical(term: str) -> str:
        return term[1:term.rindex('"')]

    rs = next(s for s, p, o in triples if p == f"<{RDF}type>" and o == f"<{RS}ResultSet>")
    boolean = one(rs, "boolean")
    if boolean is not None:
        return Expected(boolean=lexical(boolean) == "true")
    names = tuple(lexical(o) for p, o in by_s[rs] if p == f"<{RS}resultVariable>")
    rows, indexes = [], []
    for p, sol in by_s[rs]:
        if p != f"<{RS}solution>":
            continue
        cells = dict.fromkeys(names)
        for q, b in by_s.get(sol, []):
            if q == f"<{RS}binding>":
                cells[lexical(one(b, "variable"))] = one(b, "value")
        rows.append(tuple(cells[n] for n in names))
        index = one(sol, "index")
        indexes.append(int(lexical(index)) if index else None)
    ordered = bool(indexes) and all(i is not None for i in indexes)
    if ordered:
        rows = [r for _, r in sorted(zip(indexes, rows), key=lambda x: x[0])]
    return Expected(names, rows, ordered)


# ---------------------------------------------------------------- comparing
def _value(term: str | None):
    """A term as compared: numbers of one datatype by value, language tags in any case,
    `xsd:string` as the simple literal it is in RDF 1.1; blank nodes stay labels."""
    if term is None or not term.startswith('"'):
        return term
    from tefq.terms import split_literal

    lex, dt, lang = split_literal(term)
    if lang:
        return ("lang", lex, lang.lower())
    if dt in (None, f"{XSD}string"):
        return ("str", lex)
    try:
        if dt in _INTEGERS:
            return ("num", dt, int(lex))
        if dt == f"{XSD}decimal":
            return ("num", dt, Decimal(lex))
        if dt in (f"{XSD}double", f"{XSD}float"):
            return ("num", dt, float(lex.replace("INF", "inf")))
    except (ValueError, InvalidOperation):
        pass
    return ("lit", lex, dt)


def _blank(x) -> bool:
    return isinstance(x, str) and x.startswith("_:")


def same_bag(got: list[Row], want: list[Row], ordered: bool = False) -> bool:
    """Equal bags (sequences when `ordered`) of rows, blank nodes up to one consistent renaming."""
    if len(got) != len(want):
        return False
    got_v = [tuple(_value(c) for c in r) for r in got]
    want_v = [tuple(_value(c) for c in r) for r in want]
    if ordered:
        return _match_ordered(got_v, want_v, {})
    plain = lambda r: not any(_blank(c) for c in r)  # noqa: E731
    if Counter(r for r in got_v if plain(r)) != Counter(r for r in want_v if plain(r)):
        return False
    return _match([r for r in got_v if not plain(r)], [r for r in want_v if not plain(r)], {}, set())


def _bind(a: tuple, b: tuple, mapping: dict) -> dict | None:
    """`mapping` (got blank -> wanted blank, both ways) extended so that row a maps onto row b."""
    m = dict(mapping)
    for x, y in zip(a, b):
        if _blank(x) or _blank(y):
            if not (_blank(x) and _blank(y)):
                return None
            if m.get(("g", x), y) != y or m.get(("w", y), x) != x:
                return None
            m[("g", x)], m[("w", y)] = y, x
        elif x != y:
            return None
    return m


def _match(got: list, want: list, mapping: dict, used: set) -> bool:
    if not want:
        return True
    first, rest = want[0], want[1:]
    for i, r in enumerate(got):
        if i in used:
            continue
        m = _bind(r, first, mapping)
        if m is not None and _match(got, rest, m, used | {i}):
            return True
    return False


def _match_ordered(got: list, want: list, mapping: dict) -> bool:
    for a, b in zip(got, want):
        m = _bind(a, b, mapping)
        if m is None:
            return False
        mapping = m
    return True


def order_keys(query: str, names: tuple[str, ...]) -> list[int] | None:
    """The projected columns a top-level ORDER BY sorts on (plain variables, as the W3C's own
    comparison checks the order: rows equal on these keys are ties and may come in any order);
    None when the query has no top-level ORDER BY."""
    body = re.sub(r"#[^\n]*", "", query)
    last = body.rfind("}")
    m = re.search(r"\bORDER\s+BY\b(.*)", body[last:], re.I | re.S)
    if not m:
        return None
    keys = re.findall(r"[?$](\w+)", re.split(r"\b(?:LIMIT|OFFSET|VALUES)\b", m.group(1), flags=re.I)[0])
    return [names.index(k) for k in dict.fromkeys(keys) if k in names]


# The manifests give these REDUCED tests `mf:resultCardinality mf:LaxCardinality`: an answer may
# hold each solution between once and as often as the expected bag does.
LAX = frozenset({"data-r2/reduced/reduced-1", "data-r2/reduced/reduced-2"})


def _lax(got: list[Row], want: list[Row]) -> bool:
    values = [set(tuple(_value(c) for c in r) for r in rows) for rows in (got, want)]
    return values[0] == values[1] and len(values[1]) <= len(got) <= len(want)


def verdict(test: Test, names: tuple[str, ...], rows: list[Row]) -> bool:
    """Whether an engine's answer (`rows` of `names`; ASK: one row with the boolean; CONSTRUCT:
    triples) is the W3C's."""
    want = expected(test)
    if want.boolean is not None:
        return len(rows) == 1 and _value(rows[0][0]) == ("lit", "true" if want.boolean else "false", f"{XSD}boolean")
    if test.form != "CONSTRUCT":
        if set(names) != set(want.names):
            return False
        rows = [tuple(r[names.index(n)] for n in want.names) for r in rows]
    else:
        rows, want.rows = list(dict.fromkeys(rows)), list(dict.fromkeys(want.rows))
    if test.id in LAX:
        return _lax(rows, want.rows)
    if not same_bag(rows, want.rows):
        return False
    keys = order_keys(test.query, want.names) if test.form == "SELECT" else None
    if keys == []:  # sorted on expressions: the whole rows in order
        return same_bag(rows, want.rows, ordered=True)
    if keys:  # the order of the sort keys' values (ties free)
        return same_bag([tuple(r[k] for k in keys) for r in rows],
                        [tuple(r[k] for k in keys) for r in want.rows], ordered=True)
    return True


# ---------------------------------------------------------------- the windowed document
_WORDS = re.compile(r"""(\#[^\n]*|<[^<>"{}|^`\\\s]*>|'''(?:[^'\\]|\\.|'(?!''))*'''|\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
                        |'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|[?$]\w+|[A-Za-z_][\w-]*|[{}()])""", re.VERBOSE)


def windowed(query: str, window: str) -> str:
    """The test's query with `window` (`FROM STREAM <iri> [RANGE ...]`) where a dataset clause
    goes: after SELECT's projection or CONSTRUCT's template, after ASK."""
    depth, form, at = 0, None, None
    for m in _WORDS.finditer(query):
        tok = m.group(0)
        word = tok.upper()
        if form is None:
            if word in ("SELECT", "ASK", "CONSTRUCT"):
                form = word
                if word == "ASK":
                    at = m.end()
                    break
            continue
        if tok in "({" and tok:
            if tok == "{" and depth == 0 and form == "SELECT":
                at = m.start()
                break
            depth += 1
        elif tok in ")}" and tok:
            depth -= 1
            if depth == 0 and tok == "}" and form == "CONSTRUCT":
                at = m.end()
                break
        elif word == "WHERE" and depth == 0:
            at = m.start()
            break
    if at is None:
        raise ValueError("no place for the window")
    return f"{query[:at]} {window} {query[at:]}"


def document(tests: list[Test]) -> str:
    """Every test as one `REGISTER QUERY` over its own stream: one tumbling window of 1 s."""
    parts = []
    for i, t in enumerate(tests):
        body = windowed(t.query, f"FROM STREAM <{t.stream}> [RANGE 1s TUMBLING]")
        parts.append(f"REGISTER QUERY t{i:03d} AS\nBASE <{t.base}>\n{body}\n")
    return "\n".join(parts)


def write_streams(tests: list[Test], directory: Path) -> list[tuple[str, Path]]:
    """Each test's data as a Parquet stream (every triple at ts 0; blank nodes per test)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = []
    for i, t in enumerate(tests):
        relabel = lambda x: f"_:t{i}{x[2:]}" if x.startswith("_:") else x  # noqa: E731
        rows = [tuple(relabel(x) for x in tr) for tr in t.data]
        path = directory / f"t{i:03d}.parquet"
        columns = {c: pa.array([r[k] for r in rows], pa.string()) for k, c in enumerate("spo")}
        pq.write_table(pa.table({"ts": pa.array([0] * len(rows), pa.int64()), **columns}), path)
        out.append((t.stream, path))
    return out


# ---------------------------------------------------------------- running an engine
@dataclass
class Outcome:
    verdict: str  # passed | wrong | refused (exit 2) | failed (exit 1)
    detail: str = ""
    rows: list = field(default_factory=list)
    names: tuple[str, ...] = ()


def run_engine(engine: str, tests: list[Test], workdir: Path, spark=None, progress: bool = False) -> dict[str, Outcome]:
    """Every test through `tefq run` on `engine`, one document: a test whose query the engine
    refuses (exit 2 naming its line: at binding, or when it is evaluated) is taken out and the
    document run again."""
    from tefq.errors import TefqError
    from tefq.service import QueryFile, RunRequest, SparkOptions, execute

    outcomes: dict[str, Outcome] = {}
    todo = list(tests)
    streams = dict(write_streams(tests, workdir))
    while todo:
        doc = workdir / f"w3c-{engine}.rspql"
        text = document(todo)
        doc.write_text(text, encoding="utf-8")
        request = RunRequest(QueryFile(str(doc)), [str(streams[t.stream]) for t in todo], engine=engine,
                             progress=progress, spark=SparkOptions(session=spark),
                             stream_iris=tuple(t.stream for t in todo))
        try:
            run = execute(request).run
        except TefqError as e:
            k = _query_at(text, e.line or 0)
            if k is None:
                raise
            outcomes[todo[k].id] = Outcome("refused", str(e).splitlines()[0])
            del todo[k]
            continue
        for i, t in enumerate(todo):
            result = next(r for r in run.results if r.name == f"t{i:03d}")
            rows = [cells for _, cells in result.sorted_rows()]
            names = tuple(result.columns)
            ok = verdict(t, names, rows)
            outcomes[t.id] = Outcome("passed" if ok else "wrong", "", rows, names)
        break
    return outcomes


def run_each(engine: str, tests: list[Test], workdir: Path) -> dict[str, Outcome]:
    """Every test as its own `tefq run` (one document, one unnamed stream): what a tefq without
    `--stream IRI=PATH` can run, for the figures before it (slow on Spark: a run per test)."""
    from tefq.errors import TefqError
    from tefq.service import QueryFile, RunRequest, execute

    outcomes: dict[str, Outcome] = {}
    streams = dict(write_streams(tests, workdir))
    for i, t in enumerate(tests):
        doc = workdir / f"t{i:03d}.rspql"
        doc.write_text(document([t]), encoding="utf-8")
        try:
            run = execute(RunRequest(QueryFile(str(doc)), [str(streams[t.stream])], engine=engine, progress=False)).run
        except TefqError as e:
            outcomes[t.id] = Outcome("refused", str(e).splitlines()[0])
            continue
        except Exception as e:  # noqa: BLE001 - an engine's own failure (exit 1) is counted, not raised
            outcomes[t.id] = Outcome("failed", f"{type(e).__name__}: {e}".splitlines()[0])
            continue
        result = run.results[0]
        rows = [cells for _, cells in result.sorted_rows()]
        outcomes[t.id] = Outcome("passed" if verdict(t, tuple(result.columns), rows) else "wrong", "", rows,
                                 tuple(result.columns))
    return outcomes


def _query_at(text: str, line: int) -> int | None:
    """The index of the REGISTER QUERY that holds `line` of the document."""
    starts = [text.count("\n", 0, m.start()) + 1 for m in re.finditer(r"^REGISTER QUERY", text, re.M)]
    return max((i for i, s in enumerate(starts) if s <= line), default=None) if line else None


def same_answer(a: Outcome, b: Outcome, test: Test) -> bool:
    """Two engines' answers to one test are the same: the same columns and rows (blank nodes up
    to renaming; in order under ORDER BY), or both refused."""
    if a.verdict == "refused" or b.verdict == "refused":
        return a.verdict == b.verdict
    ordered = order_keys(test.query, a.names) is not None
    return a.names == b.names and same_bag(a.rows, b.rows, ordered=ordered)


def table(outcomes: dict[str, Outcome], tests: list[Test]) -> str:
    """Per category: passed / wrong / refused, and the totals."""
    counts: dict[str, Counter] = {}
    for t in tests:
        counts.setdefault(t.category, Counter())[outcomes[t.id].verdict] += 1
    total = sum(counts.values(), Counter())
    lines = [f"{'category':34} {'tests':>5} {'passed':>6} {'wrong':>5} {'refused':>7} {'failed':>6}"]
    for cat in sorted(counts) + ["all"]:
        c = total if cat == "all" else counts[cat]
        lines.append(f"{cat:34} {sum(c.values()):5} {c['passed']:6} {c['wrong']:5} {c['refused']:7} {c['failed']:6}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", choices=("oracle", "spark", "both"), default="both")
    ap.add_argument("--small-window", help="TEFQ_SMALL_WINDOW for Spark (0: every window vectorised)")
    ap.add_argument("--show", choices=("wrong", "refused", "failed"), help="list those tests with why")
    ap.add_argument("--only", nargs="*", help="test ids (default: all)")
    ap.add_argument("--progress", action="store_true", help="the engines' progress lines on stderr")
    ap.add_argument("--per-test", action="store_true", help="a run per test, one unnamed stream (tefq before 37)")
    args = ap.parse_args(argv)
    if args.small_window is not None:
        os.environ["TEFQ_SMALL_WINDOW"] = args.small_window
    tests = [t for t in load() if not args.only or t.id in args.only]
    engines = ("oracle", "spark") if args.engine == "both" else (args.engine,)
    results = {}
    with tempfile.TemporaryDirectory(prefix="tefq-w3c-") as d:
        for engine in engines:
            results[engine] = run_each(engine, tests, Path(d)) if args.per_test else \
                run_engine(engine, tests, Path(d), progress=args.progress)
            print(f"--- {engine}")
            print(table(results[engine], tests))
            if args.show:
                for t in tests:
                    o = results[engine][t.id]
                    if o.verdict == args.show or (args.show == "failed" and o.verdict != "passed"):
                        print(f"{o.verdict:8} {t.id}  {o.detail}")
    if len(results) == 2:
        differ = [t.id for t in tests if not same_answer(results["oracle"][t.id], results["spark"][t.id], t)]
        print(f"--- answers that differ between the engines: {len(differ)}")
        for x in differ:
            print("  ", x)
    return 0


if __name__ == "__main__":
    sys.exit(main())
