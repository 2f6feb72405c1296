"""The suite's own order (tests/conftest.py LONGEST_FIRST): every module it names exists, so a
renamed module is taken out of the list rather than silently run last."""
from __future__ import annotations

from tests.conftest import LONGEST_FIRST
from tests.support.paths import ROOT


def test_every_module_run_first_exists() -> None:
    missing = [path for path in LONGEST_FIRST if not (ROOT / path).is_file()]
    assert not missing, f"tests/conftest.py LONGEST_FIRST names modules that are not there: {missing}"
