"""Reading a stream for the oracle: tefq's shared readers when present, else a minimal reader for
the two formats the oracle's fixtures use (CSRBench TriG with hasTimestamp graphs, YABench
`.stream` lines `<s> <p> <o> "ms" .`)."""
from __future__ import annotations

import re
from pathlib import Path

from tefq.errors import TefqError

Element = tuple[int, str, str, str]
HAS_TIMESTAMP = "http://www.streamreasoning.org/schema/benchmark#hasTimestamp"


def read_elements(path: str | Path) -> list[Element]:
    """All elements of a stream file, sorted by timestamp (stable: file order within a ms)."""
    try:
        from tefq.io.readers import read_stream  # the shared reader, once it exists
    except ImportError:
        read_stream = None
    p = Path(path)
    if not p.exists():
        raise TefqError(f"no such stream file: {p}", str(p))
    if read_stream is not None:
        elements = list(read_stream(str(p)))
    elif p.suffix == ".stream":
        elements = _read_yabench(p)
    elif p.suffix == ".trig":
        elements = _read_csrbench_trig(p)
    else:
        raise TefqError(f"cannot read {p.suffix or 'this'} streams yet (use .trig or .stream)", str(p))
    return sorted(elements, key=lambda e: e[0])


_LINE = re.compile(r'^\s*(\S+)\s+(\S+)\s+(.+?)\s+"(-?\d+)"\s*\.\s*$')


def _read_yabench(p: Path) -> list[Element]:
    out: list[Element] = []
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            raise TefqError('expected `<s> <p> <o> "ms" .`', str(p), n, 1, line)
        out.append((int(m.group(4)), m.group(1), m.group(2), m.group(3)))
    return out


def _read_csrbench_trig(p: Path) -> list[Element]:
    from rdflib import Dataset, URIRef

    from tefq.oracle.windowed.r2r import to_nt

    ds = Dataset()
    try:
        ds.parse(str(p), format="trig")
    except Exception as e:
        raise TefqError(f"cannot parse TriG: {e}", str(p)) from None
    stamps = {}
    for s, _, o, _g in ds.quads((None, URIRef(HAS_TIMESTAMP), None, None)):
        stamps[s] = int(o)
    out: list[Element] = []
    for g, ts in stamps.items():
        for s, pr, o in ds.graph(g):
            out.append((ts, to_nt(s), to_nt(pr), to_nt(o)))  # type: ignore[misc]
    return out
