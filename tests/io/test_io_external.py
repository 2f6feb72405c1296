"""Reading the published benchmark inputs in place (../shared/external, never copied)."""
from __future__ import annotations

import glob
import os
import shutil

import pytest
import rdflib

from tefq.io.readers import TIME_PREDICATES, read_stream
from tests.support.paths import EXTERNAL

CSRBENCH = os.path.join(EXTERNAL, "csrbench", "csrbench-dataset.trig")
YABENCH = os.path.join(EXTERNAL, "yabench-windows")
FLOAT = "<http://www.w3.org/2001/XMLSchema#float>"

needs_external = pytest.mark.needs_shared("external")


@needs_external
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # rdflib's own ConjunctiveGraph notice
def test_csrbench_trig() -> None:
    elements = list(read_stream(CSRBENCH))
    assert elements[0][0] == 0 and elements[-1][0] == 33000
    assert sorted({e[0] for e in elements}) == list(range(0, 33001, 1000))  # one graph per second
    assert all(a[0] <= b[0] for a, b in zip(elements, elements[1:]))  # file order is time order
    # Independent count: every quad rdflib sees, minus the time declarations.
    ds = rdflib.Dataset()
    ds.parse(CSRBENCH, format="trig")
    times = {str(p) for p in (t.strip("<>") for t in TIME_PREDICATES)}
    assert len(elements) == sum(1 for _, p, _, _ in ds.quads() if str(p) not in times)
    assert not any(e[2].strip("<>") in times for e in elements)
    assert all(e[1].startswith("<") for e in elements)
    assert ('"54"^^<http://www.w3.org/2001/XMLSchema#double>' in {e[3] for e in elements})  # as written


@needs_external
@pytest.mark.parametrize("case", ["testOnWindowClose", "testOnContentChange"])
def test_yabench_input_stream(case: str, tmp_path) -> None:
    path = os.path.join(YABENCH, case, "input.stream")
    elements = list(read_stream(path))
    with open(path, encoding="utf-8") as f:
        lines = [line.split() for line in f if line.strip()]
    assert len(elements) == len(lines)
    assert [e[0] for e in elements] == [int(parts[-2].strip('"')) for parts in lines]
    floats = [e[3] for e in elements if e[3].endswith(FLOAT)]
    assert floats and all(o.startswith('"') for o in floats)  # 62.0^^<float> -> "62.0"^^<float>
    # Every window file holds elements of the input (same format, other extension).
    for window in glob.glob(os.path.join(YABENCH, case, "*.window")):
        copy = tmp_path / (os.path.basename(window) + ".stream")
        shutil.copy(window, copy)
        assert set(read_stream(str(copy))) <= set(elements), window
