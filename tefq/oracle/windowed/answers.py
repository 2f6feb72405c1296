"""Engine answers as timestamped relations, read from CSRBench's answer format
(`{"relations": [{"timestamp": t, "head": {"vars": [...]}, "results": {"bindings":
[{"timestamp": t, "binding": {var: SPARQL-JSON term}}]}}]}`), from a list of SPARQL 1.1 JSON
results documents with a `"tick"` (tefq's `jsonl` output), from JSON lines of either, or from one
SPARQL JSON document whose first variable is `tick` (tefq's `json` output).

Bindings are compared as CSRBench does: a relation is a *set* of mappings. Numbers compare by
value (engines print 87.66666666666667 as a double or a decimal), other terms exactly.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from tefq.errors import TefqError
from tefq.terms import XSD, literal, split_literal

Binding = tuple[tuple[str, str], ...]  # (variable, comparable term), sorted by variable

_NUMERIC = {XSD + t for t in ("integer", "decimal", "double", "float", "int", "long", "short", "byte",
                              "nonNegativeInteger", "positiveInteger", "negativeInteger",
                              "nonPositiveInteger", "unsignedInt", "unsignedLong")}


def comparable(term: str) -> str:
    """A term's comparison form: numeric literals by value (12 significant digits), others as is."""
    if term.startswith('"'):
        try:
            lex, dt, _ = split_literal(term)
        except ValueError:
            return term
        if dt in _NUMERIC:
            try:
                return f"#num:{float(lex):.12g}"
            except ValueError:
                return term
    return term


def binding(names: Iterable[str], cells: Iterable[str | None]) -> Binding:
    return tuple(sorted((n, comparable(c)) for n, c in zip(names, cells) if c is not None))


@dataclass(frozen=True)
class Relation:
    """One timestamped relation of an output stream; `at` is None when the engine gave no time."""

    at: int | None
    rows: frozenset[Binding]
    window: tuple[int, int] | None = None  # the oracle's scope that produced it
    content: int = 0  # number of elements in that scope
    shown: dict = field(default_factory=dict, compare=False, hash=False)  # Binding -> readable row


def _term(value: dict, where: str) -> str:
    kind = value.get("type")
    v = value.get("value")
    if not isinstance(v, str):
        raise TefqError("a binding without a string \"value\"", where)
    if kind == "uri":
        return f"<{v}>"
    if kind == "bnode":
        return f"_:{v}"
    if kind in ("literal", "typed-literal"):
        return literal(v, value.get("datatype"), value.get("xml:lang"))
    raise TefqError(f"unknown term type {kind!r}", where)


def _relation(doc: dict, where: str) -> Relation:
    ts = doc.get("timestamp", doc.get("tick"))
    if ts is not None and not isinstance(ts, (int, float)):
        raise TefqError(f"timestamp must be a number, not {ts!r}", where)
    raw = doc.get("results", {}).get("bindings", [])
    if not isinstance(raw, list):
        raise TefqError("results.bindings must be a list", where)
    rows = set()
    shown = {}
    for b in raw:
        values = b.get("binding", b) if isinstance(b, dict) else None
        if not isinstance(values, dict):
            raise TefqError("a binding must be an object", where)
        if "binding" not in b:
            values = {k: v for k, v in values.items() if isinstance(v, dict)}
        cells = {k: _term(v, where) for k, v in values.items()}
        key = binding(cells.keys(), cells.values())
        rows.add(key)
        shown[key] = cells
    return Relation(int(ts) if ts is not None else None, frozenset(rows), shown=shown)


def read_answers(path: str | Path) -> list[Relation]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise TefqError(f"cannot read answers: {e.strerror}", str(p)) from None
    try:
        data = json.loads(text)
        docs = data["relations"] if isinstance(data, dict) and "relations" in data else data
    except json.JSONDecodeError as e:
        try:  # JSON lines
            docs = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError:
            raise TefqError(f"not JSON: {e.msg}", str(p), e.lineno, e.colno) from None
    if isinstance(docs, dict):
        docs = _by_tick(docs)
    if not isinstance(docs, list) or not all(isinstance(d, dict) for d in docs):
        raise TefqError("expected {\"relations\": [...]} or a list of SPARQL-JSON results", str(p))
    return [_relation(d, f"{p} (relation {i + 1})") for i, d in enumerate(docs)]


def _by_tick(doc: dict) -> list[dict]:
    """tefq's `--format json` (one SPARQL JSON document, `tick` its first variable) as one
    document per tick; any other single document stays one relation."""
    head = doc.get("head", {}).get("vars", [])
    bindings = doc.get("results", {}).get("bindings")
    if "tick" not in head or "tick" in doc or "timestamp" in doc or not isinstance(bindings, list):
        return [doc]
    ticks: dict[int, list] = {}
    for b in bindings:
        tick = b.get("tick", {}).get("value", "") if isinstance(b, dict) else ""
        if not tick.lstrip("-").isdigit():
            return [doc]  # ISO ticks or no tick: not comparable by time, keep it whole
        ticks.setdefault(int(tick), []).append({k: v for k, v in b.items() if k not in ("tick", "query")})
    vars_ = [v for v in head if v not in ("tick", "query")]
    return [{"tick": t, "head": {"vars": vars_}, "results": {"bindings": rows}} for t, rows in sorted(ticks.items())]
