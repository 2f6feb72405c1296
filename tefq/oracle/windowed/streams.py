"""Reading a stream for the oracle through tefq's shared readers (CSRBench TriG with hasTimestamp
graphs, YABench `.stream`, TSV/CSV/Parquet/N-Quads ...), in time order."""
from __future__ import annotations

from pathlib import Path

from tefq.errors import TefqError
from tefq.io.readers import read_stream
from tefq.vocabulary import Element


def read_elements(path: str | Path) -> list[Element]:
    """All elements of a stream file or directory, sorted by timestamp (stable: stream order
    within a ms, spec §1)."""
    if not Path(path).exists():
        raise TefqError(f"no such stream file: {path}", str(path))
    return sorted(read_stream(str(path)), key=lambda e: e[0])
