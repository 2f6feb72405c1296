"""The oracle's own small query description: static SPARQL 1.1 text plus its windows.

Three sources feed it: a bound `WindowedQuery` (tefq's front end), CSRBench's
`srbench-queries.properties` (static SPARQL + size/slide/t0), and C-SPARQL text such as
CSRBench's `csparql_Q*.engine.query` with its config's `${...}` placeholders.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from tefq.errors import TefqError
from tefq.oracle.windowed.secret import read_properties
from tefq.plan.logical import StreamWindow, WindowedQuery


@dataclass(frozen=True)
class OracleQuery:
    name: str
    sparql: str  # static SPARQL 1.1 (may call C-SPARQL's timestamp(?s,?p,?o))
    windows: tuple[StreamWindow, ...]
    form: str = "select"  # select | construct | ask
    registers_stream: bool = False
    select_names: tuple[str, ...] = ()
    t0: int = 0  # the first t0 the query's author suggests (CSRBench's firstt0)
    number: str | None = None  # CSRBench's query number, to look up a system's R2S operator
    source: str = "<query>"
    r2s: str = "rstream"  # the query's own R2S (RSP-QL's REGISTER ISTREAM|DSTREAM), else the system's
    line: int = 0  # where the query starts in its document (evaluation errors name it)
    ordered: bool = False  # ORDER BY: each window's rows are written in its order (QueryResult.window_order)

    @property
    def range_ms(self) -> int:
        return self.windows[0].range_ms

    @property
    def step_ms(self) -> int:
        return self.windows[0].step_ms


def from_windowed(q: WindowedQuery) -> OracleQuery:
    return OracleQuery(q.name, q.sparql, q.windows, q.form, q.registers_stream, q.select_names, r2s=q.r2s,
                       line=q.span.line, ordered=q.ordered)


def csrbench_queries(path: str | Path) -> dict[str, OracleQuery]:
    """All `srb.queryN` of a CSRBench queries file, keyed by N."""
    props = read_properties(path)
    out: dict[str, OracleQuery] = {}
    for key, (text, line) in props.items():
        m = re.fullmatch(r"srb\.query(\w+)\.booleanquery", key)
        if not m:
            continue
        n = m.group(1)

        def num(k: str, default: int | None = None) -> int:
            v = props.get(f"srb.query{n}.window.{k}")
            if v is None:
                if default is not None:
                    return default
                raise TefqError(f"query {n} has no window.{k}", str(path), line, 1)
            if not re.fullmatch(r"\d+", v[0]):
                raise TefqError(f"window.{k} must be milliseconds, not {v[0]!r}", str(path), v[1], 1)
            return int(v[0])

        size, slide = num("size"), num("slide")
        if size <= 0 or slide <= 0:
            raise TefqError(f"query {n}: window size and slide must be positive", str(path), line, 1)
        out[n] = OracleQuery(f"Q{n}", text, (StreamWindow(None, size, slide),), _form(text), number=n,
                             t0=num("firstt0", 0), source=str(path))
    return out


def _form(sparql: str) -> str:
    body = re.sub(r"(?im)^\s*(PREFIX|BASE)\s+[^\n]*", "", sparql)
    m = re.search(r"\b(SELECT|CONSTRUCT|ASK|DESCRIBE)\b", body, re.I)
    return m.group(1).lower() if m else "select"


_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_WINDOW = re.compile(
    r"FROM\s+(NAMED\s+)?STREAM\s*(<[^>]*>)?\s*\[\s*RANGE\s+(\S+?)\s+(?:(STEP|SLIDE)\s+(\S+?)|(TUMBLING))\s*\]",
    re.I)


def duration_ms(text: str, source: str = "<query>", line: int = 0, column: int = 0) -> int:
    """`10s`, `500ms`, `1m`, `1h`, `1d` or an ISO-8601 duration (`PT10S`) in ms."""
    m = re.fullmatch(r"(\d+)\s*(ms|s|m|h|d)", text.strip(), re.I)
    if m:
        return int(m.group(1)) * _UNIT_MS[m.group(2).lower()]
    m = re.fullmatch(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", text.strip(), re.I)
    if m and any(m.groups()):
        d, h, mi, s = m.groups()
        return int((int(d or 0) * 86400 + int(h or 0) * 3600 + int(mi or 0) * 60 + float(s or 0)) * 1000)
    raise TefqError(f"not a duration: {text!r} (use e.g. 10s, 500ms, 1m or PT10S)", source, line, column)


def from_csparql(text: str, source: str = "<query>", variables: dict[str, str] | None = None) -> OracleQuery:
    """A C-SPARQL `REGISTER (QUERY|STREAM) name AS ...` query: placeholders `${X}` are filled from
    `variables`, FROM STREAM clauses become windows and are removed from the static SPARQL."""
    variables = variables or {}

    def fill(m: re.Match) -> str:
        if m.group(1) not in variables:
            line = text.count("\n", 0, m.start()) + 1
            col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
            raise TefqError(f"placeholder ${{{m.group(1)}}} has no value (give it in the config's \"vars\")",
                            source, line, col)
        return variables[m.group(1)]

    text = re.sub(r"\$\{(\w+)\}", fill, text)
    m = re.match(r"(?:\s*#[^\n]*\n)*\s*REGISTER\s+(QUERY|STREAM)\s+(\S+)\s+AS\b", text, re.I)
    name, registers = ("q1", False)
    body = text
    if m:
        name, registers = m.group(2), m.group(1).upper() == "STREAM"
        body = text[m.end():]
    windows: list[StreamWindow] = []
    for m_from in re.finditer(r"FROM\s+(?:NAMED\s+)?STREAM\b", text, re.I):
        if not _WINDOW.match(text, m_from.start()):
            line = text.count("\n", 0, m_from.start()) + 1
            col = m_from.start() - (text.rfind("\n", 0, m_from.start()) + 1) + 1
            raise TefqError("malformed window: expected FROM STREAM <iri> [RANGE d STEP d] or "
                            "[RANGE d TUMBLING] with d like 10s, 500ms or PT10S", source, line, col)

    def win(w: re.Match) -> str:
        pos = len(text) - len(body) + w.start()
        line = text.count("\n", 0, pos) + 1
        col = pos - (text.rfind("\n", 0, pos) + 1) + 1
        rng = duration_ms(w.group(3), source, line, col)
        step = rng if w.group(6) else duration_ms(w.group(5), source, line, col)
        if rng <= 0 or step <= 0:
            raise TefqError("window RANGE and STEP must be positive", source, line, col)
        windows.append(StreamWindow(w.group(2)[1:-1] if w.group(2) else None, rng, step))
        return ""

    # keep line numbers: the header becomes blank lines, so rdflib's errors point into the file
    sparql = "\n" * text.count("\n", 0, len(text) - len(body)) + _WINDOW.sub(win, body)
    if not windows:
        raise TefqError("the query has no FROM STREAM <iri> [RANGE ... STEP ...] window", source, 1, 1)
    return OracleQuery(name, sparql, tuple(windows), _form(sparql), registers, source=source)


def load_query(path: str | Path, config: str | Path | None = None, number: str | None = None) -> OracleQuery:
    """A query file: CSRBench properties (`.properties`, take query `number` or the only one) or
    C-SPARQL text (with `<stem>.config.json` next to `<stem>.engine.query` used for placeholders)."""
    p = Path(path)
    if p.suffix == ".properties":
        qs = csrbench_queries(p)
        if number is None and len(qs) == 1:
            return next(iter(qs.values()))
        if number not in qs:
            raise TefqError(f"choose a query with --query-number ({', '.join(sorted(qs))})", str(p))
        return qs[number]
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise TefqError(f"cannot read {p}: {e.strerror}", str(p)) from None
    if config is None:
        guess = p.with_name(p.name.replace(".engine.query", ".config.json"))
        config = guess if guess != p and guess.exists() else None
    variables: dict[str, str] = {}
    if config is not None:
        try:
            variables = {k: str(v) for k, v in json.loads(Path(config).read_text()).get("vars", {}).items()}
        except (OSError, ValueError) as e:
            raise TefqError(f"cannot read the query config: {e}", str(config)) from None
    q = from_csparql(text, str(p), variables)
    m = re.search(r"Q(\d+)", p.name)
    if m:
        from dataclasses import replace
        q = replace(q, number=m.group(1))
    return q
