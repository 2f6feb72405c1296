"""SECRET parameters (report, tick, scope bounds, R2S, empty relations) and system descriptions.

A `Semantics` is what the oracle needs to know about an engine to compute the answer that engine
*should* give (papers 001 §3-4, 004). Built-in descriptions for C-SPARQL, CQELS and SPARQLstream
are CSRBench's (../shared/external/csrbench/*.properties + 001 Table 1); other engines are
described by a file in the same Java-properties form (see docs/windowed-oracle.md).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from tefq.errors import TefqError

R2S = Literal["rstream", "istream", "dstream"]
Tick = Literal["tuple", "time"]


@dataclass(frozen=True)
class Semantics:
    """One engine's operational semantics in SECRET terms.

    Report policies combine as in SECRET: the report instants are the union of those of the
    enabled triggers (window close, content change, periodic); `non_empty` then drops the
    instants at which the active window is empty.
    """

    window_close: bool = True
    content_change: bool = False
    non_empty: bool = False
    periodic_ms: int | None = None
    tick: Tick = "tuple"  # tuple: report after each element; time: after all elements of a ms
    closed_right: bool = False  # scope [o, c] instead of [o, c)
    partial_first: bool = False  # also report windows that opened before t0 (clipped to t0)
    r2s: R2S = "rstream"
    empty_relation: bool = False  # stream out an empty relation when R2S yields nothing
    time_unit_ms: int = 1  # the engine's time resolution: t0-sweep and gracious step

    def with_(self, **changes) -> "Semantics":
        return replace(self, **changes)


#: spec §8's default semantics (what `tefq run --engine oracle` computes)
DEFAULT = Semantics()

#: YABench's oracle conventions (000): inclusive [o, c] scopes, partial first windows reported
YABENCH = Semantics(closed_right=True, partial_first=True, tick="time")


@dataclass(frozen=True)
class System:
    """A named engine: its semantics, and per query its R2S operator and answer file."""

    name: str
    semantics: Semantics
    outputs: dict[str, R2S] = field(default_factory=dict)  # query number -> R2S operator
    answers: dict[str, str] = field(default_factory=dict)  # query number -> answer path

    def semantics_for(self, query_number: str | None) -> Semantics:
        r2s = self.outputs.get(query_number or "")
        return self.semantics.with_(r2s=r2s) if r2s else self.semantics


def _properties(text: str, source: str) -> dict[str, tuple[str, int]]:
    """Java .properties: `key = value`, `\\` continues a line, `#`/`!` comment. Value + line."""
    out: dict[str, tuple[str, int]] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        line = lines[i].strip()
        i += 1
        if not line or line[0] in "#!":
            continue
        while re.search(r"\\\s*$", line) and i < len(lines):
            line = re.sub(r"\\\s*$", " ", line) + lines[i].strip()
            i += 1
        line = re.sub(r"\\\s*$", "", line)
        m = re.match(r"([^=:\s]+)\s*[=:]?\s*(.*)$", line)
        if not m:
            raise TefqError(f"not a `key = value` line: {line!r}", source, start + 1, 1)
        out[m.group(1)] = (m.group(2).strip(), start + 1)
    return out


def read_properties(path: str | Path) -> dict[str, tuple[str, int]]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise TefqError(f"cannot read {p}: {e.strerror}", str(p)) from None
    return _properties(text, str(p))


_BOOL = {"true": True, "false": False, "yes": True, "no": False, "on": True, "off": False}


def system_from_properties(path: str | Path, name: str | None = None) -> System:
    """Read a system description. Keys: CSRBench's `system.policy.windowclose|contentchange|
    nonemptycontent`, `system.output.emptyrelation`, `srb.queryN.output`, `srb.queryN.answer`,
    and tefq's additions `system.policy.periodic` (ms), `system.tick` (tuple|time),
    `system.scope` ([o,c) | [o,c]), `system.partialfirst`, `system.timeunit` (ms), `system.output`
    (default R2S)."""
    src = str(path)
    props = read_properties(path)

    def flag(key: str, default: bool) -> bool:
        if key not in props:
            return default
        v, line = props[key]
        if v.lower() not in _BOOL:
            raise TefqError(f"{key} must be true or false, not {v!r}", src, line, 1)
        return _BOOL[v.lower()]

    def choice(key: str, allowed: tuple[str, ...], default: str) -> str:
        if key not in props:
            return default
        v, line = props[key]
        if v.lower() not in allowed:
            raise TefqError(f"{key} must be one of {', '.join(allowed)}, not {v!r}", src, line, 1)
        return v.lower()

    def number(key: str, default: int | None) -> int | None:
        if key not in props:
            return default
        v, line = props[key]
        if not re.fullmatch(r"\d+", v):
            raise TefqError(f"{key} must be a whole number of milliseconds, not {v!r}", src, line, 1)
        return int(v)

    scope = choice("system.scope", ("[o,c)", "[o,c]"), "[o,c)")
    sem = Semantics(
        window_close=flag("system.policy.windowclose", True),
        content_change=flag("system.policy.contentchange", False),
        non_empty=flag("system.policy.nonemptycontent", False),
        periodic_ms=number("system.policy.periodic", None),
        tick=choice("system.tick", ("tuple", "time"), "time"),  # type: ignore[arg-type]
        closed_right=scope == "[o,c]",
        partial_first=flag("system.partialfirst", False),
        r2s=choice("system.output", ("rstream", "istream", "dstream"), "rstream"),  # type: ignore[arg-type]
        empty_relation=flag("system.output.emptyrelation", False),
        time_unit_ms=number("system.timeunit", 1) or 1,
    )
    if not (sem.window_close or sem.content_change or sem.periodic_ms):
        raise TefqError("the system reports never: enable windowclose, contentchange or periodic", src, 1, 1)
    outputs: dict[str, R2S] = {}
    answers: dict[str, str] = {}
    for key, (v, line) in props.items():
        m = re.fullmatch(r"srb\.query(\w+)\.(output|answer)", key)
        if not m:
            continue
        if m.group(2) == "output":
            if v.lower() not in ("rstream", "istream", "dstream"):
                raise TefqError(f"{key} must be rstream, istream or dstream, not {v!r}", src, line, 1)
            outputs[m.group(1)] = v.lower()  # type: ignore[assignment]
        else:
            answers[m.group(1)] = str((Path(path).parent / v).resolve())
    return System(name or Path(path).stem, sem, outputs, answers)


# The time units of 001 §4 (C-SPARQL: seconds; CQELS, SPARQLstream: hundreds of ms). CSRBench's
# stream elements are graphs, one per timestamp, so "tuple-driven" over graphs is `time` here.
_UNITS = {"csparql": 1000, "cqels": 100, "sparqlstream": 100}


def builtin_system(name: str, csrbench_dir: str | Path) -> System:
    """`csparql`, `cqels` or `sparqlstream`, read from CSRBench's description files."""
    key = name.lower().replace("-", "")
    if key not in _UNITS:
        raise TefqError(f"unknown system {name!r}: use csparql, cqels, sparqlstream or a description file",
                        "--system")
    path = Path(csrbench_dir) / f"{key}.properties"
    sys_ = system_from_properties(path, key)
    return replace(sys_, semantics=sys_.semantics.with_(time_unit_ms=_UNITS[key], tick="time"))


def resolve_system(spec: str, csrbench_dir: str | Path) -> System:
    """A built-in name or a description file."""
    if Path(spec).is_file():
        return system_from_properties(spec)
    return builtin_system(spec, csrbench_dir)
